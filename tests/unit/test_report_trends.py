"""The trend charts answer "slower since when?": the night measured on the x axis, a panel
per payload size, baseline bands, drift markers, change points, and the per-cell percentile
spectrum from the raw samples (earlier runs of the same series only; Kafka's tool's
figures from the aggregate, below their minimum sample count not drawn); the Data Docs
link."""

from __future__ import annotations

import random
import re
from pathlib import Path

from kafkalab import drift
from kafkalab.report.build import build_report
from kafkalab.report.changepoints import change_points, clear_cache
from kafkalab.report.spectrum import spectrum_of
from kafkalab.report.trends import tool_spectrum, tool_undefined_in_run
from kafkalab.samples import CellContext, Sample, to_rows, write_cell
from kafkalab.store import LabData
from tests.unit.test_report import _row, _write_aggregates, _write_manifest, write_lab_data

NIGHTS = ["20261119", "20261120", "20261121", "20261122"]


def _labels(svg: str) -> list[str]:
    """The x labels of a line chart, in order."""
    return re.findall(r'transform="rotate\(-30 [^"]*"><title>[^<]*</title>([^<]*)</text>', svg)


def _figure(html: str, metric: str, payload: str) -> str:
    m = re.search(rf'<figure data-metric="{metric}" data-payload="{payload}">.*?</figure>', html,
                  flags=re.S)
    assert m, (metric, payload)
    return m.group(0)


def _write_nights(data_dir: Path) -> list[str]:
    """Four nightly runs triggered on one day (11-22) in the order 21, 19, 22, 20; the 20th
    is a manual run whose id carries no night, its manifest's logical_date does."""
    ids = [f"nightly-{d}T000000Z" for d in NIGHTS]
    ids[1] = "nightly-manual-backfill-1a2b3c"
    trigger_hour = {0: 2, 1: 4, 2: 1, 3: 3}
    for i, rid in enumerate(ids):
        rows = []
        for payload, nbytes in (("1kb", 1056), ("1mb", 1048608)):
            r = _row(min(i, 4), "confluent-kafka", "confluent-kafka", "kafka09", payload, nbytes)
            r.update(run_id=rid, run_date="2026-11-22")
            rows.append(r)
        _write_aggregates(data_dir, rid, rows)
        extra = {"logical_date": "2026-11-20T00:00:00+00:00"} if i == 1 else {}
        _write_manifest(data_dir, rid, 1, **extra)
        man = data_dir / "runs" / f"{rid}.json"
        man.write_text(man.read_text().replace("2026-11-01T01:02:03",
                                               f"2026-11-22T0{trigger_hour[i]}:00:00"))
    return ids


def test_x_axis_is_the_night_measured_not_the_trigger_time(tmp_path: Path) -> None:
    ids = _write_nights(tmp_path)
    html = build_report(tmp_path, run_id=ids[3]).read_text()
    fig = _figure(html, "e2e_latency_ms_p50", "1056")
    assert _labels(fig) == ["2026-11-19", "2026-11-20", "2026-11-21", "2026-11-22"]
    assert "night measured" in fig
    # the drift baseline follows the same order: the back-filled 20th is judged on the 19th
    hist = drift.load_history(tmp_path)
    assert drift.run_order(hist) == ids


def test_a_panel_per_payload_size(tmp_path: Path) -> None:
    info = write_lab_data(tmp_path)
    html = build_report(tmp_path, run_id=info["latest"]).read_text()
    trends = html.split('id="trends"')[1].split('id="spectrum"')[0]
    panels = re.findall(r'<div class="payload-panel" data-payload="([^"]+)">', trends)
    assert panels == ["1056", "1048608"]
    for fig in re.findall(r"<figure .*?</figure>", trends, flags=re.S):
        assert ("1kb" in fig) != ("1mb" in fig)  # 1 KB and 10 MB never share an axis
    # p99.9 has no defined value in this data: said, not drawn
    assert "End-to-end latency p99.9: no defined value." in trends


def test_baseline_band_and_drift_marker_on_the_flagged_point(tmp_path: Path) -> None:
    info = write_lab_data(tmp_path)  # the newest run: +100 % on confluent-kafka 1mb
    html = build_report(tmp_path, run_id=info["latest"]).read_text()
    fig = _figure(html, "e2e_latency_ms_p50", "1048608")
    markers = re.findall(r'<circle class="drift-marker" data-run="([^"]+)"', fig)
    assert markers and all(m.startswith(info["latest"]) for m in markers)
    flagged = re.findall(r"<title>drift flagged: ([^|]*) \|", fig)
    assert flagged == ["confluent-kafka 1mb latency"]
    bands = re.findall(r'<rect class="series baseline-band"[^>]*><title>([^<]*)</title>', fig)
    assert any(b.startswith("confluent-kafka 1mb latency: baseline: median 30.15 of 4") for b in
               bands)
    # the 1kb panel: the same series is not flagged
    assert "drift-marker" not in _figure(html, "e2e_latency_ms_p50", "1056")


def test_change_point_found_at_the_injected_step() -> None:
    rng = random.Random(7)
    values: list[float | None] = [10 + rng.gauss(0, 0.3) for _ in range(8)]
    values += [14 + rng.gauss(0, 0.3) for _ in range(6)]
    values[3] = None  # an undefined night is skipped, indexes stay the input's
    cps = change_points(values)
    assert [c.index for c in cps] == [8]
    assert cps[0].change_pct is not None and 35 < cps[0].change_pct < 45
    assert change_points([10 + rng.gauss(0, 0.3) for _ in range(12)]) == []
    assert change_points([10.0, 10.0, 20.0, 20.0]) == []  # too few runs
    # a step on the newest night only is the drift verdict's, not yet a level
    assert change_points([30.0, 30.3, 30.6, 30.0, 60.6]) == []
    # a series seen before is answered from memory, the same answer; a fresh list each time
    again = change_points(values)
    assert again == cps and again is not cps
    clear_cache()
    assert change_points(values) == cps


def test_change_point_drawn_on_the_trend_chart(tmp_path: Path) -> None:
    ids = [f"nightly-202611{d:02d}T000000Z" for d in range(1, 9)]
    for i, rid in enumerate(ids):
        r = _row(0, "confluent-kafka", "confluent-kafka", "kafka09", "1kb", 1056)
        level = 6.0 if i < 4 else 12.0
        r.update(run_id=rid, run_date=f"2026-11-{i + 1:02d}", e2e_latency_ms_p50=level + 0.01 * i)
        _write_aggregates(tmp_path, rid, [r])
        _write_manifest(tmp_path, rid, 1)
    html = build_report(tmp_path, run_id=ids[-1]).read_text()
    fig = _figure(html, "e2e_latency_ms_p50", "1056")
    assert re.findall(r'<g class="mark" data-mark="change-point">.*?<text[^>]*>([^<]*)</text>',
                      fig) == ["change +100 %"]
    assert "Change point: confluent-kafka 1kb latency: 6.01 → 12.05 from 2026-11-05." in fig


def _ctx(run_id: str) -> CellContext:
    return CellContext(
        run_id=run_id, scenario="confluent-kafka", client="confluent-kafka",
        client_version="2.6.1", profile="latency", workload="nightly", payload="1kb",
        payload_encoding="raw", payload_bytes=1056, cluster_flavor="kafka09",
        broker_version="0.9.0.1", broker_is_emulator=False, topic="t", planned_messages=500,
        message_timeout_ms=10_000.0, broker_count=1, client_settings="{}")


def _write_samples(lab: LabData, run_id: str, received: int, lost: int, warmup: int = 10) -> None:
    samples = [Sample(sample_kind="message", seq=i, is_warmup=True,
                      e2e_latency_ms_override=999.0) for i in range(warmup)]
    samples += [Sample(sample_kind="message", seq=warmup + i,
                       e2e_latency_ms_override=1.0 + i / received) for i in range(received)]
    samples += [Sample(sample_kind="message", seq=warmup + received + i, status="lost")
                for i in range(lost)]
    write_cell(lab.cell_file("2026-11-05", run_id, "confluent-kafka", "1kb", "latency"),
               to_rows(_ctx(run_id), samples))


def test_spectrum_omits_percentiles_without_enough_samples(tmp_path: Path) -> None:
    info = write_lab_data(tmp_path, with_emulator=False)
    lab = LabData(tmp_path)
    _write_samples(lab, info["latest"], received=497, lost=3)
    _write_samples(lab, info["runs"][-2], received=1500, lost=0)
    html = build_report(tmp_path, run_id=info["latest"]).read_text()
    spectrum = html.split('id="spectrum"')[1].split("</section>")[0]
    fig = re.search(r'<figure class="spectrum" data-cell="confluent-kafka\|1kb\|latency">.*?'
                    r"</figure>", spectrum, flags=re.S)
    assert fig
    text = fig.group(0)
    assert ("n=500 (497 received, 3 lost, 0 failed; lost and failed count as at least the "
            "timeout); not drawn: p99.9 (n&lt;1,000), p99.99 (n&lt;10,000)") in text
    assert "n=1,500 (1,500 received" in text and "not drawn: p99.99 (n&lt;10,000)" in text
    for tick in ("50 %", "90 %", "99 %", "99.9 %", "99.99 %"):
        assert f">{tick}</text>" in text
    # the earlier run: 4 points (50, 90, 99, 99.9); this run, drawn last: 3
    series = re.findall(r'<g class="series" data-series="s(\d)">(.*?)</g>', text, flags=re.S)
    assert [g.count("<circle") for _, g in series] == [4, 3]


def test_spectrum_counts_lost_messages_as_censored() -> None:
    sp = spectrum_of([1.0] * 90, lost=10)
    assert sp.points == {"p50": 1.0, "p90": 1.0}  # rank 90 of 100 is the last received
    assert sp.omitted == {"p99": "censored", "p99.9": "n<1,000", "p99.99": "n<10,000"}
    sp = spectrum_of([float(i) for i in range(1, 10_001)])
    assert sp.points["p99.99"] == 9999.0 and sp.points["p99.9"] == 9990.0


def test_data_docs_are_linked_for_files_and_for_airflow(tmp_path: Path) -> None:
    info = write_lab_data(tmp_path)
    docs = LabData(tmp_path).validation_docs_dir
    docs.mkdir(parents=True)
    (docs / "index.html").write_text("<html>docs</html>")
    build_report(tmp_path)
    page = (tmp_path / "reports" / info["latest"] / "index.html").read_text()
    index = (tmp_path / "reports" / "index.html").read_text()
    link = ('href="{}" data-served-href="/kafkalab/data-docs/index.html" '
            'data-served-under="/kafkalab/reports/">Great Expectations Data Docs</a>')
    assert link.format("../../validation/docs/index.html") in page
    assert link.format("../validation/docs/index.html") in index


def test_no_data_docs_no_link(tmp_path: Path) -> None:
    info = write_lab_data(tmp_path)
    page = build_report(tmp_path, run_id=info["latest"]).read_text()
    assert "Data Docs</a>" not in page


def test_at_most_twelve_series_a_chart(tmp_path: Path) -> None:
    rid = "nightly-20261101T000000Z"
    rows = []
    for k in range(14):
        r = _row(0, "confluent-kafka", "confluent-kafka", "kafka09", "1kb", 1056)
        r.update(run_id=rid, profile=f"p{k:02d}")
        rows.append(r)
    _write_aggregates(tmp_path, rid, rows)
    _write_manifest(tmp_path, rid, 1)
    html = build_report(tmp_path, run_id=rid).read_text()
    figs = re.findall(r'<figure data-metric="e2e_latency_ms_p50" data-payload="1056">.*?'
                      r"</figure>", html, flags=re.S)
    assert len(figs) == 2
    assert "series 1–12 of 14" in figs[0] and "series 13–14 of 14" in figs[1]
    assert [f.count('<g class="series"') for f in figs] == [12, 2]


# --------------------------------------------------------------- Kafka's tool: its minimums

TOOL_RUNS = ["nightly-20261103T000000Z", "nightly-20261104T000000Z"]


def _tool_lab(data_dir: Path) -> None:
    """Two runs: a harness cell and a jvm-e2e cell; the newest run's tool timed 20 messages,
    so its aggregate holds no p99/p99.9 (``tool_percentiles_note``); its raw tool_summary
    rows still hold the printed 9 and 11 ms."""
    lab = LabData(data_dir)
    for i, rid in enumerate(TOOL_RUNS):
        harness = _row(i, "confluent-kafka", "confluent-kafka", "kafka09", "1kb", 1056)
        tool = _row(i, "jvm-e2e", "kafka.tools.EndToEndLatency", "kafka09", "1kb", 1056)
        few = i == 1
        tool.update(tool_p999_ms=None if few else 20.0, tool_messages=20 if few else 1002,
                    tool_p99_ms=None if few else 12.0,
                    tool_percentiles_note="p99: n<100; p999: n<1000" if few else None,
                    planned_messages=18 if few else 1000)
        harness.update(tool_messages=None, tool_percentiles_note=None, tool_p999_ms=None)
        for r in (harness, tool):
            r.update(run_id=rid, run_date="2026-11-05")
        _write_aggregates(data_dir, rid, [harness, tool])
        _write_manifest(data_dir, rid, i + 3)
        ctx = CellContext(
            run_id=rid, scenario="jvm-e2e", client="kafka.tools.EndToEndLatency",
            client_version="0.9.0.1", profile="latency", workload="nightly", payload="1kb",
            payload_encoding="raw", payload_bytes=1056, cluster_flavor="kafka09",
            broker_version="0.9.0.1", broker_is_emulator=False, topic="t",
            planned_messages=18 if few else 1000, message_timeout_ms=10_000.0, broker_count=1,
            client_settings="{}")
        printed = {"avg": 5.4, "p50": 5.0, "p99": 9.0, "p99.9": 11.0}
        write_cell(lab.cell_file("2026-11-05", rid, "jvm-e2e", "1kb", "latency"),
                   to_rows(ctx, [Sample(sample_kind="tool_summary", seq=0, statistic=k,
                                        e2e_latency_ms_override=v, latency_resolution_ms=1.0,
                                        loop_mode="serial") for k, v in printed.items()]))


def test_tool_percentiles_below_their_minimum_are_not_drawn_and_say_why(tmp_path: Path) -> None:
    _tool_lab(tmp_path)
    html = build_report(tmp_path, run_id=TOOL_RUNS[1]).read_text()
    p99 = _figure(html, "e2e_latency_ms_p99", "1056")
    assert ("Kafka&#x27;s tool † p99 undefined in 1 cell(s) of this run (n&lt;100: it timed 20 "
            "messages; a percentile needs p99 ≥ 100, p99.9 ≥ 1,000 samples): not plotted."
            ) in p99
    # the tool's line has the earlier run's 12 ms and a gap for this run: one point
    tool_line = re.search(r'<g class="series"[^>]*>(?:(?!</g>).)*† tool.*?</g>', p99, flags=re.S)
    assert tool_line and tool_line.group(0).count("<circle") == 1
    p999 = _figure(html, "e2e_latency_ms_p999", "1056")  # the earlier run's 20 ms drawn
    assert "p99.9 undefined in 1 cell(s) of this run (n&lt;1,000: it timed 20 messages" in p999
    # the spectrum takes the tool's figures from the aggregate, not the raw rows (9, 11 ms)
    spectrum = html.split('id="spectrum"')[1].split("</section>")[0]
    fig = re.search(r'<figure class="spectrum" data-cell="jvm-e2e\|1kb\|latency">.*?</figure>',
                    spectrum, flags=re.S)
    assert fig
    text = fig.group(0)
    assert "not drawn: p99 (n&lt;100 timed messages), p99.9 (n&lt;1,000 timed messages)" in text
    # this run's tool: its p50 only (the earlier run planned 1,000 messages: another series)
    series = re.findall(r'<g class="series" data-series="s\d">(.*?)</g>', text, flags=re.S)
    assert [g.count("<circle") for g in series] == [1]
    assert ">9.00<" not in text and ">11.00<" not in text
    # the latest table: the tool's p99 cell says why, n is the messages it timed
    latest = html.split('id="latest"')[1].split("</section>")[0]
    row = next(r for r in latest.split("<tr") if "jvm-e2e" in r)
    assert 'title="undefined: n&lt;100">n&lt;100</span>†' in row and "<td>20</td>" in row


def test_tool_spectrum_reads_the_aggregate() -> None:
    import pandas as pd

    rows = pd.DataFrame([{"scenario": "jvm-e2e", "tool_p50_ms": 2.0, "tool_p99_ms": 7.0,
                          "tool_p999_ms": None, "tool_percentiles_note": "p999: n<1000"}])
    assert tool_spectrum(rows) == ({"p50": 2.0, "p99": 7.0}, {"p99.9": "n<1,000"})
    rows.loc[0, "scenario"] = "confluent-kafka"
    assert tool_spectrum(rows) == ({}, {})
    assert tool_undefined_in_run(rows, "tool_p999_ms") == ""


# --------------------------------------------------------------- spectrum: same series only


def _spectrum_history(data_dir: Path) -> list[str]:
    """Four runs of confluent-kafka/1kb/latency: the nightly workload (runs 0 and 3), a seed
    workload of other planned messages (run 1) and the nightly workload on 3 brokers (run 2)."""
    lab = LabData(data_dir)
    ids = [f"nightly-2026110{d}T000000Z" for d in range(1, 5)]
    facts = [("nightly", 500, 1), ("seed000", 2000, 1), ("nightly", 500, 3), ("nightly", 500, 1)]
    for i, (rid, (workload, planned, brokers)) in enumerate(zip(ids, facts, strict=True)):
        r = _row(min(i, 4), "confluent-kafka", "confluent-kafka", "kafka09", "1kb", 1056)
        r.update(run_id=rid, run_date="2026-11-05", workload=workload,
                 planned_messages=planned, broker_count=brokers)
        _write_aggregates(data_dir, rid, [r])
        _write_manifest(data_dir, rid, i + 1)
        _write_samples(lab, rid, received=200 + 100 * i, lost=0)
    return ids


def test_spectrum_overlays_only_earlier_runs_of_the_same_series(tmp_path: Path) -> None:
    ids = _spectrum_history(tmp_path)
    html = build_report(tmp_path, run_id=ids[3]).read_text()
    spectrum = html.split('id="spectrum"')[1].split("</section>")[0]
    fig = re.search(r'<figure class="spectrum" data-cell="confluent-kafka\|1kb\|latency">.*?'
                    r"</figure>", spectrum, flags=re.S)
    assert fig
    text = fig.group(0)
    # this run (500 messages) and run 0 (200): the seed workload (300) and 3 brokers (400) not
    assert "n=500 (" in text and "n=200 (" in text
    assert "n=300 (" not in text and "n=400 (" not in text
    assert len(re.findall(r'<g class="series" data-series="s\d">', text)) == 2
    assert "earlier runs of the same series only" in spectrum
