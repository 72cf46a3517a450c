"""A start-up run's report page in headless Chromium: the answer and the cases' table visible,
each figure's n, min and max on hover, no console error, nothing fetched from the network.

The run's ``startup_cases`` table is written from the engine's own summary of known probes
(the Spark job gives the same figures: ``tests/spark/test_startup_jobs.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkalab.kinds import STARTUP
from kafkalab.report.build import build_report
from kafkalab.startup_figures import summarize
from kafkalab.store import LabData
from tests.browser.test_report_chromium import _open
from tests.browser.test_report_chromium import browser as browser  # the module's Chromium
from tests.spark.test_startup_jobs import ROWS, RUN

pytestmark = pytest.mark.browser


def test_the_start_up_page_shows_the_answer_and_every_case(browser: Any, tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    lab.write_manifest({"run_id": RUN, "kind": STARTUP.name, "status": "complete",
                        "started_at": "2026-11-28T12:00:00+00:00", "command": "kafkalab startup run",
                        "cluster": {"flavor": "kraft", "version": "4.4.0"}})
    cases = summarize(ROWS)
    out = lab.run_aggregates_dir(RUN, STARTUP) / "startup_cases.parquet"
    out.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"run_id": RUN, **c} for c in cases]),
                   out / "part-0.parquet")
    index = build_report(tmp_path)
    page, errors, remote = _open(browser, index.parent / RUN / "index.html")
    try:
        section = page.locator("section#startup")
        assert section.is_visible()
        assert section.locator("ul.answer li").count() == 2  # one line per client
        assert page.get_by_text("confluent-kafka: cold cluster: 5.20 s").first.is_visible()
        rows = page.locator("table.startup tbody tr")
        assert rows.count() == len(cases) == 3
        first = rows.nth(0).locator("td").nth(8)  # the cold case's first record
        assert first.inner_text() == "5,200" and first.get_attribute("title") == "n=1, 5,200–5,200"
        assert page.locator("section#checks").is_visible()
    finally:
        page.close()
    assert errors == [], errors
    assert remote == [], remote
