"""Unit tests for the trend report (kafkalab.report) on synthetic aggregates in a temp dir."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kafkalab import drift
from kafkalab.cluster.descriptor import EMULATOR_LABEL
from kafkalab.report.build import build_report
from kafkalab.report.charts import nice_ticks
from kafkalab.report.format import fmt_num

RUN_IDS = [f"2026110{d}T010203Z-aa{d:04d}" for d in range(1, 6)]
PAYLOADS = [("1kb", 1056), ("1mb", 1048608)]
SCENARIOS = [
    ("rest", "requests", "http"),
    ("kafka-python", "kafka-python", "kafka09"),
    ("confluent-kafka", "confluent-kafka", "kafka09"),
    ("jvm-e2e", "kafka.tools.EndToEndLatency", "kafka09"),
]


def _row(run_idx: int, scenario: str, client: str, flavor: str, payload: str, nbytes: int,
         *, emulator: bool = False, step: float = 1.0) -> dict[str, Any]:
    base = {"rest": 4.0, "kafka-python": 9.0, "confluent-kafka": 6.0, "jvm-e2e": 5.0}[scenario]
    scale = 1.0 if nbytes < 10_000 else 5.0
    p50 = base * scale * (1 + 0.01 * (run_idx % 3))
    is_tool = scenario == "jvm-e2e"
    kafka_client = scenario in ("kafka-python", "confluent-kafka")
    return {
        "run_id": RUN_IDS[run_idx],
        "run_date": f"2026-11-0{run_idx + 1}",
        "workload": "default",
        "scenario": scenario,
        "client": client,
        "payload": payload,
        "payload_bytes": nbytes,
        "profile": "latency",
        "cluster_flavor": "noida" if emulator else flavor,
        "broker_is_emulator": emulator,
        "sent_count": 100,
        "received_count": 100,
        "lost_count": 0,
        "e2e_latency_ms_p50": None if is_tool else p50 * step,
        "e2e_latency_ms_p99": None if is_tool else p50 * 3 * step,
        "publish_latency_ms_p99": None if is_tool else p50 * 2,
        "throughput_msgs_per_s": 1000.0 / scale,
        "first_message_subscribe_ms": 3000.0 + run_idx if kafka_client else None,
        "first_message_assign_ms": 250.0 + run_idx if kafka_client else None,
        "tool_p50_ms": 5.0 * scale if is_tool else None,
        "tool_p99_ms": 12.0 * scale if is_tool else None,
        "tool_avg_ms": 5.5 * scale if is_tool else None,
    }


def write_lab_data(data_dir: Path, *, with_emulator: bool = True,
                   store_drift: bool = True) -> dict[str, Any]:
    """Write 5 runs of aggregates, manifests and validation results under ``data_dir``.

    The newest run has a +100 % step on confluent-kafka's 1mb latency (a drift) and, when
    ``with_emulator``, extra confluent-kafka rows measured on the noida emulator.
    """
    for i, rid in enumerate(RUN_IDS):
        rows = []
        for scenario, client, flavor in SCENARIOS:
            for payload, nbytes in PAYLOADS:
                step = 2.0 if (i == 4 and scenario == "confluent-kafka" and payload == "1mb") \
                    else 1.0
                rows.append(_row(i, scenario, client, flavor, payload, nbytes, step=step))
        if with_emulator and i == 4:
            rows.append(_row(i, "confluent-kafka", "confluent-kafka", "noida", "1kb", 1056,
                             emulator=True))
        df = pd.DataFrame(rows)
        d = data_dir / "aggregates" / f"run_id={rid}"
        d.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pandas(df.drop(columns=["run_id"]), preserve_index=False),
                       d / "part-00000.parquet")
        (data_dir / "runs").mkdir(parents=True, exist_ok=True)
        (data_dir / "runs" / f"{rid}.json").write_text(json.dumps({
            "schema_version": 1, "run_id": rid, "status": "complete",
            "started_at": f"2026-11-0{i + 1}T01:02:03+00:00",
            "ended_at": f"2026-11-0{i + 1}T01:09:03+00:00",
            "cluster": {"flavor": "kafka09", "version": "0.9.0.1", "is_emulator": False},
        }))
    latest = RUN_IDS[-1]
    vdir = data_dir / "validation"
    vdir.mkdir(parents=True, exist_ok=True)
    (vdir / f"{latest}.json").write_text(json.dumps({
        "success": False,
        "failed": [{"suite": "aggregates", "expectation": "expect_column_values_to_be_between",
                    "summary": "e2e_latency_ms_p99 above 50 ms in 1 row"}],
    }))
    (vdir / f"{latest}.html").write_text("<html><body>docs</body></html>")
    (vdir / f"{RUN_IDS[0]}.json").write_text(json.dumps({"success": True, "failed": []}))
    if store_drift:
        drift.run_drift(data_dir, latest)
    return {"latest": latest, "runs": RUN_IDS}


_EXTERNAL = re.compile(r"""(?:src|href|xlink:href|action)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


def _assert_self_contained(html: str) -> None:
    assert not _EXTERNAL.search(html), _EXTERNAL.search(html)
    assert "http://" not in html and "https://" not in html
    assert "url(" not in html and "@import" not in html


def test_nice_ticks_and_format() -> None:
    t = nice_ticks(0, 37)
    assert t[0] == 0 and t[-1] >= 37 and len(t) <= 8
    assert nice_ticks(5, 5)[-1] > 5
    assert fmt_num(12.5) == "12.50" and fmt_num(1234.4) == "1,234" and fmt_num(None) == "—"


def test_full_report(tmp_path: Path) -> None:
    info = write_lab_data(tmp_path)
    latest = info["latest"]
    out = build_report(tmp_path)
    assert out == tmp_path / "reports" / "index.html"
    for rid in info["runs"]:
        assert (tmp_path / "reports" / rid / "index.html").exists()
    index = out.read_text()
    page = (tmp_path / "reports" / latest / "index.html").read_text()
    for html in (index, page):
        _assert_self_contained(html)
        assert html.count("<svg") == 6  # 4 trend charts + comparison + first-message
        for sec in ('id="latest"', 'id="trends"', 'id="comparison"', 'id="first-message"',
                    'id="checks"'):
            assert sec in html
        assert "<polyline" in html and "<rect" in html and "<circle" in html
        assert EMULATOR_LABEL in html
        assert "emu-banner" in html
    # The overview links every run.
    for rid in info["runs"]:
        assert f'href="{rid}/index.html"' in index
    assert 'href="../index.html"' in page

    # (1) Latest run: confluent-kafka 1mb p50 = 6*5*(1+0.01*(4%3)) * 2 = 60.6; baseline is
    # the median of runs 0-3 (30.0, 30.3, 30.6, 30.0) = 30.15; change = +101.0 %.
    assert "60.60" in page and "30.15" in page and "+101.0%" in page
    assert 'class="drift"' in page
    # Tool values are shown for jvm-e2e and marked.
    assert "25.00†" in page and "EndToEndLatency tool" in page
    # (3) Comparison chart includes the tool's p50 and the HTTP bar.
    assert "Kafka tool (EndToEndLatency)" in page and "HTTP (rest)" in page
    # (4) First message: subscribe vs assign.
    assert "subscribe (group)" in page and "assign (manual)" in page
    assert "3,004" in page and "254.0" in page
    # (5) Validation failure, link to its HTML, drift flags table.
    assert "Validation failed." in page
    assert "expect_column_values_to_be_between" in page
    assert f'href="../../validation/{latest}.html"' in page
    assert f'href="../validation/{latest}.html"' in index
    assert "drift-flags" in page and "e2e_latency_ms_p99" in page
    assert "Computed when this report was built" not in page  # stored records were used


def test_emulator_label_on_every_chart_and_table_it_appears_in(tmp_path: Path) -> None:
    info = write_lab_data(tmp_path)
    page = (build_report(tmp_path, run_id=info["latest"])).read_text()
    # Every SVG chart with emulator data carries the label inside the SVG itself.
    svgs = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    emu_svgs = [s for s in svgs if "stroke-dasharray" in s and "emu-badge" in s]
    assert emu_svgs, "no chart labelled"
    for s in svgs:
        if "[EMULATOR" in s:  # a legend entry for emulator data ...
            assert "emu-badge" in s and EMULATOR_LABEL in s  # ... implies the badge
    # The tables where emulator rows appear carry it too.
    latest_table = re.search(r'<table class="latest">.*?</table>', page, flags=re.S)
    assert latest_table and EMULATOR_LABEL in latest_table.group(0)
    comp = re.findall(r'<table class="comparison">.*?</table>', page, flags=re.S)
    assert comp and all(EMULATOR_LABEL in t for t in comp)


def test_no_emulator_no_label(tmp_path: Path) -> None:
    info = write_lab_data(tmp_path, with_emulator=False)
    page = build_report(tmp_path, run_id=info["runs"][2]).read_text()
    assert EMULATOR_LABEL not in page
    # A middle run's trends stop at that run.
    assert info["runs"][3] not in page.split('id="trends"')[1].split('id="comparison"')[0]


def test_drift_computed_when_not_stored(tmp_path: Path) -> None:
    info = write_lab_data(tmp_path, store_drift=False)
    page = build_report(tmp_path, run_id=info["latest"]).read_text()
    assert "Computed when this report was built" in page
    assert "drift-flags" in page


def test_empty_data_dir(tmp_path: Path) -> None:
    out = build_report(tmp_path)
    html = out.read_text()
    assert "No runs yet" in html and "No data yet" in html
    _assert_self_contained(html)
    # An unknown run id still gets a page that says so.
    page = build_report(tmp_path, run_id="nope").read_text()
    assert "No aggregates for this run." in page
    assert "No validation results for this run." in page


def test_manifest_only_and_sparse_columns(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "r1.json").write_text(json.dumps({
        "run_id": "r1", "status": "failed", "started_at": "2026-11-01T00:00:00+00:00",
        "cluster": {"flavor": "noida", "is_emulator": True}}))
    (tmp_path / "runs" / "broken.json").write_text("{")
    d = tmp_path / "aggregates" / "run_id=r2"
    d.mkdir(parents=True)
    pq.write_table(pa.table({"scenario": ["rest"], "payload": ["1kb"],
                             "e2e_latency_ms_p50": [1.5]}), d / "part-0.parquet")
    out = build_report(tmp_path)
    index = out.read_text()
    assert "r1" in index and "r2" in index and EMULATOR_LABEL in index
    r1 = (tmp_path / "reports" / "r1" / "index.html").read_text()
    assert "No aggregates for this run." in r1 and EMULATOR_LABEL in r1
    r2 = (tmp_path / "reports" / "r2" / "index.html").read_text()
    assert "1.50" in r2
    assert not list((tmp_path / "reports").rglob("*.tmp"))


def test_rebuild_replaces(tmp_path: Path) -> None:
    write_lab_data(tmp_path)
    build_report(tmp_path)
    first = sorted(p.relative_to(tmp_path) for p in (tmp_path / "reports").rglob("*"))
    build_report(tmp_path)
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "reports").rglob("*")) == first
