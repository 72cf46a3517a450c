"""Unit tests for the trend report (kafkalab.report) on synthetic aggregates in a temp dir."""

from __future__ import annotations

import json
import os
import re
import time
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
from kafkalab.store import LabData

RUN_IDS = [f"2026110{d}T010203Z-aa{d:04d}" for d in range(1, 6)]
PAYLOADS = [("1kb", 1056), ("1mb", 1048608)]
SCENARIOS = [
    ("rest", "requests", "http"),
    ("kafka-python", "kafka-python", "kafka09"),
    ("confluent-kafka", "confluent-kafka", "kafka09"),
    ("confluent-kafka-serial", "confluent-kafka", "kafka09"),
    ("jvm-e2e", "kafka.tools.EndToEndLatency", "kafka09"),
]
LOOP_MODES = {"rest": "request", "kafka-python": "overlapped", "confluent-kafka": "overlapped",
              "confluent-kafka-serial": "serial", "jvm-e2e": "serial"}
HARNESS_SETTINGS = json.dumps({"consumer.fetch.wait.max.ms": "5", "producer.acks": "1",
                               "producer.linger.ms": "1", "harness.loop_mode": "overlapped"},
                              sort_keys=True)  # librdkafka's names, as the scenario records them
TOOL_SETTINGS = json.dumps({"consumer.fetch.max.wait.ms": "0", "producer.acks": "1",
                            "producer.linger.ms": "0", "tool.loop_mode": "serial"},
                           sort_keys=True)


def _row(run_idx: int, scenario: str, client: str, flavor: str, payload: str, nbytes: int,
         *, emulator: bool = False, step: float = 1.0) -> dict[str, Any]:
    """One aggregate row of schema 2 (100 messages: every percentile up to p99 defined)."""
    base = {"rest": 4.0, "kafka-python": 9.0, "confluent-kafka": 6.0,
            "confluent-kafka-serial": 6.5, "jvm-e2e": 5.0}[scenario]
    scale = 1.0 if nbytes < 10_000 else 5.0
    p50 = base * scale * (1 + 0.01 * (run_idx % 3))
    is_tool = scenario == "jvm-e2e"
    kafka_client = scenario in ("kafka-python", "confluent-kafka", "confluent-kafka-serial")
    rest = scenario == "rest"
    mean = None if is_tool else p50 * 1.1 * step
    return {
        "run_id": RUN_IDS[run_idx],
        "run_date": f"2026-11-0{run_idx + 1}",
        "workload": "nightly",
        "scenario": scenario,
        "client": client,
        "payload": payload,
        "payload_bytes": nbytes,
        "payload_encoding": "raw",
        "profile": "latency",
        "cluster_flavor": "external" if emulator else flavor,
        "broker_version": "" if rest else "0.9.0.1",
        "broker_count": None if rest else 1,
        "broker_is_emulator": emulator,
        "planned_messages": 100,
        "message_timeout_ms": 30000.0,
        "loop_mode": LOOP_MODES[scenario],
        "client_settings": TOOL_SETTINGS if is_tool else (
            json.dumps({"http.method": "POST", "http.timeout_s": "30.0"}) if rest
            else HARNESS_SETTINGS),
        "sent_count": 0 if is_tool else 100,
        "received_count": 0 if is_tool else 100,
        "lost_count": 0,
        "error_count": 0,
        "e2e_latency_ms_p50": None if is_tool else p50 * step,
        "e2e_latency_ms_p99": None if is_tool else p50 * 3 * step,
        "e2e_latency_ms_p999": None,
        "e2e_latency_ms_percentiles_note": None if is_tool else "p999: n<1000",
        "e2e_latency_ms_p50_ci_low": None if is_tool else p50 * 0.98 * step,
        "e2e_latency_ms_p50_ci_high": None if is_tool else p50 * 1.02 * step,
        "e2e_latency_ms_p99_ci_low": None if is_tool else p50 * 2.5 * step,
        "e2e_latency_ms_p99_ci_high": None,
        "ci_confidence": 0.95,
        "e2e_latency_ms_mean": mean,
        "publish_latency_ms_p50": p50 / 2 if kafka_client else None,
        "publish_latency_ms_p99": p50 if kafka_client else None,
        "round_trip_ms_p50": p50 * 1.2 if rest else None,
        "message_rate_per_s": None if mean is None else 1000.0 / mean,
        "first_message_subscribe_ms": 300.0 + run_idx if kafka_client else None,
        "first_message_assign_ms": 250.0 + run_idx if kafka_client else None,
        "first_message_cold_ms": 3000.0 if kafka_client and run_idx == 0 else None,
        "first_message_lost_count": 0 if kafka_client else None,
        "tool_p50_ms": 5.0 * scale if is_tool else None,
        "tool_p99_ms": 12.0 * scale if is_tool else None,
        "tool_avg_ms": 5.4321 * scale if is_tool else None,
    }


def _write_aggregates(data_dir: Path, run_id: str, rows: list[dict[str, Any]]) -> None:
    df = pd.DataFrame(rows)
    d = data_dir / "aggregates" / f"run_id={run_id}"
    d.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(df.drop(columns=["run_id"]), preserve_index=False),
                   d / "part-00000.parquet")


def _write_manifest(data_dir: Path, run_id: str, day: int, **extra: Any) -> None:
    (data_dir / "runs").mkdir(parents=True, exist_ok=True)
    (data_dir / "runs" / f"{run_id}.json").write_text(json.dumps({
        "schema_version": 2, "run_id": run_id, "status": "complete",
        "started_at": f"2026-11-0{day}T01:02:03+00:00",
        "ended_at": f"2026-11-0{day}T01:09:03+00:00",
        "cluster": {"flavor": "kafka09", "version": "0.9.0.1", "is_emulator": False},
        "stale_outputs": [], **extra,
    }))


def write_lab_data(data_dir: Path, *, with_emulator: bool = True,
                   store_drift: bool = True) -> dict[str, Any]:
    """Write 5 runs of schema 2 aggregates, manifests and validation results under ``data_dir``.

    Runs 0-3 are complete and validated (the baseline); the newest run has a +100 % step on
    confluent-kafka's 1mb latency (a drift), a failed validation and, when ``with_emulator``,
    extra confluent-kafka rows measured on the an emulator of yours (external).
    """
    vdir = data_dir / "validation"
    vdir.mkdir(parents=True, exist_ok=True)
    for i, rid in enumerate(RUN_IDS):
        rows = []
        for scenario, client, flavor in SCENARIOS:
            for payload, nbytes in PAYLOADS:
                step = 2.0 if (i == 4 and scenario == "confluent-kafka" and payload == "1mb") \
                    else 1.0
                rows.append(_row(i, scenario, client, flavor, payload, nbytes, step=step))
        if with_emulator and i == 4:
            rows.append(_row(i, "confluent-kafka", "confluent-kafka", "external", "1kb", 1056,
                             emulator=True))
        _write_aggregates(data_dir, rid, rows)
        _write_manifest(data_dir, rid, i + 1)
        if i < 4:
            (vdir / f"{rid}.json").write_text(json.dumps({"success": True, "failed": []}))
    latest = RUN_IDS[-1]
    (vdir / f"{latest}.json").write_text(json.dumps({
        "success": False,
        "failed": [{"suite": "aggregates", "expectation": "expect_column_values_to_be_between",
                    "summary": "e2e_latency_ms_p99 above 50 ms in 1 row"}],
    }))
    (vdir / f"{latest}.html").write_text("<html><body>docs</body></html>")
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
        # per payload panel (1kb, 1mb): p50, p99, message rate, first message (no p99.9
        # defined); + comparison + first-message; no samples, so no spectrum
        assert html.count("<svg") == 10
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
    latest_table = _table(page, "latest")
    assert "60.60" in latest_table and "30.15" in latest_table and "+101.0%" in latest_table
    assert 'class="drift"' in latest_table
    assert "59.39–61.81" in latest_table  # the p50's 95 % interval
    assert "≥ 151.5" in latest_table  # p99's upper end is open below ~370 messages
    # Tool values are shown for jvm-e2e, marked, with the settings it used and no profile.
    assert "25.00†" in latest_table and "EndToEndLatency tool" in page
    tool_rows = [r for r in _rows(latest_table) if ">jvm-e2e<" in r]
    assert len(tool_rows) == 2
    for row in tool_rows:
        assert ">latency<" not in row and "own settings (tool)" in row
        assert "acks=1, linger.ms=0, fetch.max.wait.ms=0" in row
    # REST: no publish latency, its round trip instead; 4*1.2 = 4.85 (run 4: 4.04 * 1.2).
    rest_1kb = next(r for r in _rows(latest_table) if ">rest<" in r and ">1kb<" in r)
    assert ">n/a<" in rest_1kb and "4.85" in rest_1kb
    assert "closed loop (one message in flight), ≈ 1 / mean latency" in page
    # (3) Comparison chart includes the tool's p50 (and mean) and the HTTP bar; the serial
    # harness stands beside the tool.
    comparison = _table(page, "comparison")
    assert "Kafka tool (EndToEndLatency), own settings" in comparison
    assert "HTTP (rest)" in comparison and "(mean 5.4321)" in comparison
    assert comparison.index("confluent-kafka (serial") < comparison.index("Kafka tool")
    assert "Kafka's tool did not apply profile latency" in page
    # (4) First message: subscribe vs assign medians; the cold probe apart (run 0 only).
    assert "subscribe (group)" in page and "assign (manual)" in page
    first = _table(page, "first-message")
    assert "304.0" in first and "254.0" in first and "cold first probe ms" in first
    first0 = _table((tmp_path / "reports" / RUN_IDS[0] / "index.html").read_text(),
                    "first-message")
    assert "3,000" in first0
    # (5) Run state, validation failure, link to its HTML, drift flags table.
    assert "Run state" in page and "No stale outputs." in page
    assert "Validation failed." in page
    assert "expect_column_values_to_be_between" in page
    assert f'href="../../validation/{latest}.html"' in page
    assert f'href="../validation/{latest}.html"' in index
    assert "drift-flags" in page and "e2e_latency_ms_p99" in page
    assert "Computed when this report was built" not in page  # stored records were used


def _table(html: str, klass: str) -> str:
    m = re.search(rf'<table class="{klass}">.*?</table>', html, flags=re.S)
    assert m, klass
    return m.group(0)


def _rows(table: str) -> list[str]:
    return re.findall(r"<tr.*?</tr>", table, flags=re.S)


def _svgs(html: str) -> list[str]:
    return re.findall(r"<svg.*?</svg>", html, flags=re.S)


def test_every_rest_beside_kafka_table_and_chart_says_what_each_measures(tmp_path: Path) -> None:
    info = write_lab_data(tmp_path)
    page = build_report(tmp_path, run_id=info["latest"]).read_text()
    line = "HTTP (rest) e2e is one hop: client → server process"
    for section in ("latest", "trends", "comparison"):
        body = page.split(f'id="{section}"')[1].split("</section>")[0]
        assert 'class="measures"' in body and line in body, section
        assert "two hops: producer → broker log append (+ replication when rf &gt; 1)" in body
    # Each chart that plots REST and Kafka together carries the short line in the SVG itself.
    figures = re.findall(r"<figure data-(?:metric|profile)=\"([^\"]+)\".*?</figure>", page,
                         flags=re.S)
    assert set(figures) == {"e2e_latency_ms_p50", "e2e_latency_ms_p99", "message_rate_per_s",
                            "first_message_subscribe_ms", "latency"}
    for name in ("e2e_latency_ms_p50", "e2e_latency_ms_p99", "message_rate_per_s", "latency"):
        fig = page.split(f'="{name}"', 1)[1].split("</figure>")[0]
        svg = fig.split("<svg", 1)[1]
        assert "REST e2e: 1 hop (client → server) · Kafka e2e: 2 hops" in svg, name
    kafka_only = page.split('="first_message_subscribe_ms"', 1)[1].split("</figure>")[0]
    assert "1 hop" not in kafka_only  # no REST line in that chart: no note
    # The first-message chart is Kafka only: no such line.
    fm = page.split('id="first-message"')[1].split("</section>")[0]
    assert 'class="measures"' not in fm and "1 hop" not in fm


def _write_run(data_dir: Path, idx: int, rows: list[dict[str, Any]], **manifest: Any) -> str:
    rid = RUN_IDS[idx]
    if rows:
        _write_aggregates(data_dir, rid, rows)
    _write_manifest(data_dir, rid, idx + 1, **manifest)
    return rid


def test_undefined_percentiles_show_their_reason_and_are_never_plotted(tmp_path: Path) -> None:
    rows = []
    for i in range(3):
        few = _row(i, "kafka-python", "kafka-python", "kafka09", "1kb", 1056)
        if i == 2:  # the newest run measured 20 messages: p99 undefined
            few.update(sent_count=20, received_count=20, planned_messages=20,
                       e2e_latency_ms_p99=None, e2e_latency_ms_p99_ci_low=None,
                       e2e_latency_ms_percentiles_note="p99: n<100; p999: n<1000")
        lossy = _row(i, "confluent-kafka", "confluent-kafka", "kafka09", "1kb", 1056)
        if i == 2:  # more than half of the messages lost: even p50 is censored
            lossy.update(received_count=40, lost_count=60, e2e_latency_ms_p50=None,
                         e2e_latency_ms_p99=None, e2e_latency_ms_p50_ci_low=None,
                         e2e_latency_ms_p50_ci_high=None,
                         e2e_latency_ms_percentiles_note="p50: censored; p99: censored")
        rest = _row(i, "rest", "requests", "http", "1kb", 1056)
        rows.append([few, lossy, rest])
    for i, r in enumerate(rows):
        _write_run(tmp_path, i, r)
    page = build_report(tmp_path, run_id=RUN_IDS[2]).read_text()
    table = _table(page, "latest")
    few_row = next(r for r in _rows(table) if ">kafka-python<" in r)
    assert 'class="undef"' in few_row and ">n&lt;100<" in few_row and ">20<" in few_row
    lossy_row = next(r for r in _rows(table) if ">confluent-kafka<" in r)
    assert lossy_row.count(">censored<") == 2 and ">60<" in lossy_row
    # The p99 chart has no point of the newest run for those two cells, and says why.
    trends = page.split('id="trends"')[1].split("</section>")[0]
    p99 = trends.split('data-metric="e2e_latency_ms_p99"')[1].split("</figure>")[0]
    points = re.findall(r"<circle[^>]*><title>(.*?)</title>", p99)
    assert any(t.startswith("kafka-python 1kb latency") for t in points)  # the older runs
    assert not [t for t in points if RUN_IDS[2] in t and not t.startswith("rest/")]
    assert "p99 undefined in 2 cell(s) of this run (censored: 1, n&lt;100: 1): not plotted." in p99
    # The comparison shows the reason instead of a bar.
    assert ">censored<" in _table(page, "comparison")


def test_aggregates_of_schema_1_are_read_honestly(tmp_path: Path) -> None:
    """Old runs (no planned_messages, throughput_* columns, p99 of 20 messages) still show."""
    old = {"run_id": RUN_IDS[0], "run_date": "2026-11-01", "workload": "default",
           "scenario": "confluent-kafka", "client": "confluent-kafka", "payload": "1kb",
           "payload_bytes": 1056, "profile": "latency", "cluster_flavor": "kafka09",
           "broker_is_emulator": False, "sent_count": 20, "received_count": 20,
           "lost_count": 0, "e2e_latency_ms_p50": 5.5, "e2e_latency_ms_p99": 9.75,
           "throughput_msgs_per_s": 150.0, "first_message_subscribe_ms": 3100.0}
    tool = {**old, "scenario": "jvm-e2e", "client": "kafka.tools.EndToEndLatency",
            "sent_count": 0, "received_count": 0, "e2e_latency_ms_p50": None,
            "e2e_latency_ms_p99": None, "tool_p50_ms": 5.0, "tool_p99_ms": 9.0}
    _write_run(tmp_path, 0, [old, tool])
    page = build_report(tmp_path, run_id=RUN_IDS[0]).read_text()
    table = _table(page, "latest")
    ck = next(r for r in _rows(table) if ">confluent-kafka<" in r)
    assert "5.50" in ck and ">n&lt;100<" in ck and "9.75" not in ck
    assert "150.0" in ck  # throughput read as the message rate it was
    tool_row = next(r for r in _rows(table) if ">jvm-e2e<" in r)
    assert "linger.ms=0, fetch.max.wait.ms=0" in tool_row and "own settings (tool)" in tool_row
    trends = page.split('id="trends"')[1].split("</section>")[0]
    # p99: only Kafka's tool's own figure is defined; the client's n<100 is not plotted
    p99 = trends.split('data-metric="e2e_latency_ms_p99"')[1].split("</figure>")[0]
    assert "jvm-e2e" in p99 and "† tool" in p99 and "confluent-kafka 1kb" not in p99
    assert "p99 undefined in 1 cell(s) of this run (n&lt;100: 1): not plotted." in p99
    assert "End-to-end latency p99.9: no defined value." in trends
    assert 'data-metric="message_rate_per_s"' in trends


def test_a_runs_state_and_stale_outputs_are_shown(tmp_path: Path) -> None:
    rows = [_row(0, "confluent-kafka", "confluent-kafka", "kafka09", "1kb", 1056)]
    rerun = _write_run(tmp_path, 0, rows, stale_outputs=["aggregates", "drift", "report"])
    crashed = _write_run(tmp_path, 1, [], status="running",
                         owner={"host": "elsewhere", "pid": 1, "kind": "cli"})
    lab_state = LabData(tmp_path)
    old = time.time() - 7 * 3600  # nothing written for 7 h: no live owner
    for path in (lab_state.manifest_path(crashed),):
        os.utime(path, (old, old))
    out = build_report(tmp_path, run_id=rerun)
    page = out.read_text()
    banner = page.split('<div class="state-banner">')[1].split("</div>")[0]
    assert "Stale outputs: <strong>aggregates, drift records</strong>" in banner
    assert "report" not in banner  # this page was just rebuilt
    index = (tmp_path / "reports" / "index.html").read_text()
    runs = _table(index, "runs")
    crashed_row = next(r for r in _rows(runs) if crashed in r)
    assert ">stale<" in crashed_row and "nothing was written for 7.0 h" in crashed_row
    rerun_row = next(r for r in _rows(runs) if rerun in r)
    assert "aggregates, drift records" in rerun_row and "report page" not in rerun_row
    crashed_page = build_report(tmp_path, run_id=crashed).read_text()
    assert "This run is <strong>stale</strong>" in crashed_page


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
        "cluster": {"flavor": "external", "is_emulator": True}}))
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


def test_drift_computed_by_the_report_keeps_flagged_runs_out_of_the_baseline(
        tmp_path: Path) -> None:
    """Without stored records for a run, the report judges it as the drift task would: an
    earlier run whose stored records flag the series is not part of its baseline."""
    vdir = tmp_path / "validation"
    vdir.mkdir()
    for i in range(5):
        step = 3.0 if i == 3 else 1.0  # run 3 is a spike
        rid = _write_run(tmp_path, i, [_row(i, "confluent-kafka", "confluent-kafka", "kafka09",
                                            "1mb", 1048608, step=step)])
        (vdir / f"{rid}.json").write_text(json.dumps({"success": True, "failed": []}))
        if i == 3:
            records, _ = drift.run_drift(tmp_path, rid)  # stored: run 3 is flagged
            assert records["is_drift"].any()
    page = build_report(tmp_path, run_id=RUN_IDS[4]).read_text()
    assert "Computed when this report was built" in page
    row = _rows(_table(page, "latest"))[1]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    runs_in_baseline = cells[16]
    assert runs_in_baseline == "3"  # runs 0-2; the flagged run 3 is left out
