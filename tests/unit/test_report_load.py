"""The report's page of a load run (fan-out, latency vs throughput, lag, cells) on load
aggregates written here as the Spark job writes them (``aggregates/load/run_id=<id>/``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kafkalab.cluster.descriptor import EMULATOR_LABEL
from kafkalab.report.build import build_report
from kafkalab.report.format import fmt_num
from kafkalab.report.load_data import knee_index, percentile_reason
from kafkalab.store import LabData, atomic_write_json

LOAD_RUNS = [f"load-2026110{d}T020000Z" for d in range(1, 6)]
CONSUMERS = (1, 5, 10)
RATES = (100.0, 500.0, 1000.0)
ACKS = ("0", "1")
PAUSE_CELL = {"consumers": 5, "rate": 200.0, "acks": "1", "pause_at_s": 4.0, "pause_for_s": 3.0}


def cell_id(consumers: int, rate: float, acks: str, pause: bool = False) -> str:
    tail = ".pause4+3" if pause else ""
    return f"confluent-kafka.1kb.latency.acks-{acks}.c{consumers}.r{rate:g}.p1{tail}"


def _cell(run_id: str, day: int, consumers: int, rate: float, acks: str, *, scale: float,
          emulator: bool, pause: bool = False, loss_pct: float = 0.0) -> dict[str, Any]:
    """One ``load_cells`` row: latency climbs with rate × consumers (a knee at 1,000 msg/s
    with 10 consumers), acks 0 loses a little at the top rate."""
    duration, warmup = (15.0, 2.0) if pause else (10.0, 2.0)
    expected = int(rate * (duration - warmup))
    load = rate * consumers / 1000.0
    p50 = (2.0 + 0.5 * load) * scale
    p99 = (6.0 + 2.0 * load + (40.0 if load >= 10 else 0.0)) * scale
    if pause:
        p99 = 3200.0 * scale
    achieved = rate * (0.96 if load >= 10 else 0.999)
    failing = consumers if loss_pct else 0
    row: dict[str, Any] = {
        "run_id": run_id, "run_date": f"2026-11-0{day}",
        "cell_id": cell_id(consumers, rate, acks, pause), "status": "complete",
        "client": "confluent-kafka", "client_version": "2.16.1", "payload": "1kb",
        "encoding": "raw", "payload_bytes": 1024, "profile": "latency", "acks": acks,
        "partitions": 1, "consumers": consumers, "rate_msgs_per_s": rate,
        "target_rate_msgs_per_s": rate, "duration_s": duration, "warmup_s": warmup,
        "consumer_mode": "assign",
        "pause_at_s": PAUSE_CELL["pause_at_s"] if pause else None,
        "pause_for_s": PAUSE_CELL["pause_for_s"] if pause else None,
        "cluster_flavor": "external" if emulator else "kafka09",
        "broker_version": "0.2.3" if emulator else "0.9.0.1", "broker_count": 1,
        "broker_is_emulator": emulator,
        "achieved_rate_msgs_per_s": achieved, "achieved_mb_per_s": achieved * 1060 / 1e6,
        "intended_msgs": expected, "acked_msgs": expected if acks != "0" else 0,
        "failed_msgs": 0, "indeterminate_msgs": 0, "unsent_msgs": 0,
        "expected_msgs": expected,
        "rx_rate_msgs_per_s_avg": achieved * (1 - loss_pct / 100),
        "rx_rate_msgs_per_s_min": achieved * (1 - 2 * loss_pct / 100) * 0.99,
        "loss_pct": loss_pct, "late_pct": 0.1 if load >= 10 else 0.0,
        "failing_clients": failing, "duplicates": 0,
        "e2e_p50_ms": p50, "e2e_p90_ms": p50 * 1.5, "e2e_p99_ms": p99,
        "e2e_p999_ms": None if expected * consumers < 1000 else p99 * 1.3,
        "e2e_p999_ms_reason": "n<1000" if expected * consumers < 1000 else None,
        "e2e_max_ms": p99 * 2,
        "e2e_p50_ms_ci_low": p50 * 0.97, "e2e_p50_ms_ci_high": p50 * 1.03,
        "e2e_p99_ms_ci_low": p99 * 0.9, "e2e_p99_ms_ci_high": p99 * 1.1,
        "service_e2e_p50_ms": p50 * 0.9, "service_e2e_p90_ms": p50 * 1.2,
        "service_e2e_p99_ms": (6.0 + 2.0 * load) * scale * 0.9,
        "service_e2e_p999_ms": None, "service_e2e_max_ms": p99,
        "publish_delay_p50_ms": 0.05, "publish_delay_p90_ms": 0.1,
        "publish_delay_p99_ms": 2.5 if load >= 10 else 0.3, "publish_delay_p999_ms": None,
        "publish_delay_max_ms": 4.0,
        "ack_latency_p50_ms": None if acks == "0" else p50 / 2,
        "ack_latency_p99_ms": None if acks == "0" else p99 / 2,
        "lag_peak_msgs": int(rate * 3.1) if pause else int(rate * 0.01 * consumers),
        "time_to_drain_s": 1.4 if pause else None,
        "drain_rate_msgs_per_s": rate * 3.1 / 1.4 if pause else None,
        "client_bound": load >= 10, "saturated": load >= 10 and acks == "1",
        "broker_cpu_frac": 0.2,
    }
    return row


def _consumers(cell: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for c in range(int(cell["consumers"])):
        missing = int(cell["expected_msgs"] * cell["loss_pct"] / 100)
        out.append({
            "run_id": cell["run_id"], "cell_id": cell["cell_id"], "consumer": c,
            "unique_msgs": cell["expected_msgs"] - missing, "duplicates": 0, "late_msgs": 0,
            "missing_msgs": missing, "gaps": 1 if missing else 0, "unexpected_msgs": 0,
            "rx_rate_msgs_per_s": cell["rx_rate_msgs_per_s_avg"], "failing": missing > 0,
            "e2e_p50_ms": cell["e2e_p50_ms"], "e2e_p99_ms": cell["e2e_p99_ms"],
            "service_e2e_p99_ms": cell["service_e2e_p99_ms"],
        })
    return out


def _lag(cell: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    rate = float(cell["rate_msgs_per_s"])
    at, for_s = cell["pause_at_s"], cell["pause_for_s"]
    for c in range(int(cell["consumers"])):
        for t in range(int(cell["duration_s"]) + 3):
            paused = at is not None and at <= t < at + for_s
            lag = rate * (t - at) if paused else (
                max(0.0, rate * for_s - (t - at - for_s) * rate * 2.2) if at is not None
                and t >= at + for_s else 2.0 + c)
            out.append({"run_id": cell["run_id"], "cell_id": cell["cell_id"], "consumer": c,
                        "elapsed_s": float(t) + 0.01 * c, "lag_msgs": int(lag),
                        "client_backlog_msgs": int(lag) + 1, "paused": paused})
    return out


def _write_table(lab: LabData, run_id: str, name: str, rows: list[dict[str, Any]]) -> None:
    d = lab.aggregates_dir / "load" / f"run_id={run_id}"
    d.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False),
                   d / f"{name}.parquet")


def write_load_run(data_dir: Path, run_id: str, day: int, *, scale: float = 1.0,
                   emulator: bool = False, validated: bool = True, state: str = "complete",
                   consumers: Iterable[int] = CONSUMERS, rates: Iterable[float] = RATES,
                   acks: Iterable[str] = ACKS, pause: bool = True,
                   loss_at_top: float = 0.5) -> list[dict[str, Any]]:
    """One load run: manifest (kind load), the three aggregate tables, its validation.
    Returns the cell rows."""
    lab = LabData(data_dir)
    cells = []
    for a in acks:
        for c in consumers:
            for r in rates:
                loss = loss_at_top if (a == "0" and r == max(rates) and c > 1) else 0.0
                cells.append(_cell(run_id, day, c, r, a, scale=scale, emulator=emulator,
                                   loss_pct=loss))
    if pause:
        cells.append(_cell(run_id, day, int(PAUSE_CELL["consumers"]), float(PAUSE_CELL["rate"]),
                           str(PAUSE_CELL["acks"]), scale=scale, emulator=emulator, pause=True))
    _write_table(lab, run_id, "load_cells", cells)
    _write_table(lab, run_id, "load_consumers", [r for c in cells for r in _consumers(c)])
    _write_table(lab, run_id, "load_lag", [r for c in cells for r in _lag(c)
                                           if c["pause_at_s"] is not None or c["consumers"] > 5])
    lab.write_manifest({
        "schema_version": 2, "run_id": run_id, "kind": "load", "status": state,
        "started_at": f"2026-11-0{day}T02:00:00+00:00", "ended_at": f"2026-11-0{day}T02:09:00+00:00",
        "cluster": {"flavor": "external" if emulator else "kafka09",
                    "version": "0.2.3" if emulator else "0.9.0.1", "is_emulator": emulator},
        "workload": {"kind": "load", "name": "fanout-small"}, "stale_outputs": [],
        "cells": [{"cell_id": c["cell_id"], "status": "complete"} for c in cells],
    })
    atomic_write_json(lab.validation_path(f"{run_id}-load"),
                      {"run_id": run_id, "suite": "load", "success": validated, "failed": []})
    return cells


def _page(data_dir: Path, run_id: str) -> str:
    return (LabData(data_dir).report_page_dir(run_id) / "index.html").read_text()


def test_knee_is_the_first_rate_above_twice_the_lowest_rates_p99() -> None:
    assert knee_index([100, 500, 1000], [5.0, 9.0, 11.0]) == 2
    assert knee_index([1000, 100, 500], [30.0, 5.0, 9.0]) == 0  # order by rate
    assert knee_index([100, 500], [5.0, 9.9]) is None
    assert knee_index([100, 500, 1000], [None, 5.0, 10.5]) == 2  # lowest defined p99
    assert knee_index([100], [5.0]) is None


def test_undefined_percentile_reasons() -> None:
    assert percentile_reason({"e2e_p999_ms_reason": "n<1000"}, "e2e_p999_ms") == "n<1000"
    assert percentile_reason({"expected_msgs": 40, "consumers": 2}, "e2e_p99_ms") == "n<100"
    assert percentile_reason({"expected_msgs": 400, "consumers": 2}, "e2e_p99_ms") is None


def test_load_run_page_has_seed003_figures_knee_lag_and_cells(tmp_path: Path) -> None:
    run = LOAD_RUNS[0]
    cells = write_load_run(tmp_path, run, 1)
    build_report(tmp_path)
    html = _page(tmp_path, run)
    for section in ("fanout", "throughput", "lag", "cells", "checks"):
        assert f'id="{section}"' in html, section
    # seed 003: rx rate and loss vs consumers, acks 0 and 1 side by side
    for metric in ("rx_rate_msgs_per_s_avg", "loss_pct", "failing_clients"):
        block = html.split(f'data-metric="{metric}"', 1)[1].split("</div>", 1)[0]
        assert 'data-acks="0"' in block and 'data-acks="1"' in block, metric
    assert "1000 msg/s (avg)" in html and "1000 msg/s (min)" in html
    # latency vs throughput: a knee at 1,000 msg/s with 10 consumers, none with 1
    assert "knee 1000 msg/s" in html
    assert "10 consumer(s), acks 1: 1000 msg/s" in html
    assert 'data-knee="no"' in html
    # lag: the pause window shaded on the pause cell's chart
    pause_id = cell_id(5, 200.0, "1", pause=True)
    lag = html.split(f'data-cell="{pause_id}"', 1)[1].split("</figure>", 1)[0]
    assert 'class="span"' in lag and "paused 3 s" in lag
    assert "peak 620 msgs" in lag
    # cells table: JSON keys as headers, flags, undefined percentiles, every cell
    table = html.split('class="load-cells"', 1)[1].split("</table>", 1)[0]
    for key in ("rx_rate_msgs_per_s_avg", "loss_pct", "e2e_p99_ms", "service_e2e_p99_ms",
                "publish_delay_p99_ms", "lag_peak_msgs", "achieved_rate_msgs_per_s"):
        assert f"<th>{key}</th>" in table, key
    assert table.count(" data-cell=") == len(cells)
    assert ">client_bound<" in table and ">saturated<" in table
    assert 'title="undefined: n&lt;1000">n&lt;1000</span>' in table
    # failing clients listed; validation read from validation/<run>-load.json
    assert "Failing clients (missing messages" in html
    assert "All expectations passed." in html
    assert EMULATOR_LABEL not in html


def test_emulator_load_run_is_labelled_everywhere(tmp_path: Path) -> None:
    run = LOAD_RUNS[0]
    write_load_run(tmp_path, run, 1, emulator=True)
    build_report(tmp_path)
    html = _page(tmp_path, run)
    assert html.count('class="emu-badge"') >= 5  # inside every chart
    table = html.split('class="load-cells"', 1)[1].split("</table>", 1)[0]
    assert EMULATOR_LABEL in table.split("</caption>", 1)[0]
    assert "emulator" in html.split("<main>", 1)[1].split("</div>", 1)[0]


def test_index_lists_load_runs_beside_latency_runs(tmp_path: Path) -> None:
    from tests.unit.test_report import write_lab_data

    info = write_lab_data(tmp_path, with_emulator=False)
    newest = "load-20261106T020000Z"  # a DAG run's id carries its night: the 6th, the newest
    write_load_run(tmp_path, newest, 6)
    index = build_report(tmp_path).read_text()
    runs = index.split('class="runs"', 1)[1].split("</table>", 1)[0]
    assert f'href="{newest}/index.html"' in runs
    assert f'href="{info["latest"]}/index.html"' in runs
    assert re.search(r'data-kind="load">.*?<td class="t">load</td>', runs)
    row = runs.split(f'{newest}</a>', 1)[1].split("</tr>", 1)[0]
    assert "<td>19</td>" in row  # 18 sweep cells + the pause cell
    assert '<span class="ok">pass</span>' in row
    # the newest run is the load run: mirrored with its own sections
    assert 'id="fanout"' in index
    # the latency run's page is unchanged by the load run
    assert 'id="latest"' in _page(tmp_path, info["latest"])


def test_load_page_without_aggregates_says_so(tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    lab.write_manifest({"run_id": "load-x", "kind": "load", "status": "failed", "cells": [],
                        "started_at": "2026-11-01T00:00:00+00:00", "stale_outputs": []})
    build_report(tmp_path)
    html = _page(tmp_path, "load-x")
    assert "No load aggregates for this run." in html
    assert "No lag samples for this run." in html
    assert "state-banner" in html  # failed


def test_load_history_stays_out_of_the_latency_history(tmp_path: Path) -> None:
    from kafkalab.drift import load_history
    from tests.unit.test_report import write_lab_data

    write_lab_data(tmp_path, with_emulator=False)
    n = len(load_history(tmp_path))
    write_load_run(tmp_path, LOAD_RUNS[0], 6)
    hist = load_history(tmp_path)
    assert len(hist) == n and "loss_pct" not in hist.columns


def test_spark_style_table_folders_are_read(tmp_path: Path) -> None:
    """A table written by Spark is a folder of part files (with _SUCCESS and .crc files)."""
    run = LOAD_RUNS[0]
    write_load_run(tmp_path, run, 1, pause=False)
    d = LabData(tmp_path).aggregates_dir / "load" / f"run_id={run}"
    for name in ("load_cells", "load_consumers", "load_lag"):
        f = d / f"{name}.parquet"
        table = pq.read_table(f)
        f.unlink()
        f.mkdir()
        pq.write_table(table, f / "part-00000-x.snappy.parquet")
        (f / "_SUCCESS").write_text("")
        (f / ".part-00000-x.snappy.parquet.crc").write_bytes(b"\0")
    build_report(tmp_path)
    html = _page(tmp_path, run)
    assert html.split("class=\"load-cells\"", 1)[1].count(" data-cell=") == 18
    assert json.loads(json.dumps({"ok": True}))["ok"]


def test_a_run_with_link_delays_draws_latency_against_the_delay_per_acks(tmp_path: Path) -> None:
    """``--link-delay-ms`` cells: one chart of publish and e2e latency against the one-way
    delay, a line each per acks; a run without delays has no such section."""
    run = LOAD_RUNS[0]
    write_load_run(tmp_path, run, 1, consumers=[1], rates=[50.0], acks=["all", "1"],
                   pause=False)
    build_report(tmp_path)
    assert 'id="link-delay"' not in _page(tmp_path, run)
    lab = LabData(tmp_path)
    cells = []
    for acks in ("all", "1"):
        for delay in (0.0, 2.0, 50.0):
            c = _cell(run, 1, 1, 50.0, acks, scale=1.0, emulator=False)
            rt = 2 * delay
            c.update(cell_id=f"{c['cell_id']}.link{delay:g}ms", link_delay_ms=delay,
                     ack_latency_p50_ms=(4.0 + rt) if acks == "all" else 1.0,
                     ack_latency_p99_ms=(9.0 + rt) if acks == "all" else 2.0,
                     e2e_p50_ms=4.0 + rt, e2e_p99_ms=9.0 + rt)
            cells.append(c)
    _write_table(lab, run, "load_cells", cells)
    _write_table(lab, run, "load_consumers", [r for c in cells for r in _consumers(c)])
    build_report(tmp_path)
    html = _page(tmp_path, run)
    section = html.split('id="link-delay"', 1)[1].split("</section>", 1)[0]
    assert section.count("<figure") == 1  # one setting, one consumer count, one rate
    for name in ("acks all publish p50", "acks all e2e p99", "acks 1 publish p50",
                 "acks 1 e2e p50"):
        assert name in section, name
    assert "one-way delay (ms)" in section and "high watermark" in section
    # the other figures split by delay and say which
    assert "replication links +50 ms one way" in html


def test_clients_beside_a_follower_are_drawn_against_their_delay_per_read_side(
        tmp_path: Path) -> None:
    run = LOAD_RUNS[0]
    write_load_run(tmp_path, run, 1, consumers=[1], rates=[50.0], acks=["1"], pause=False)
    lab = LabData(tmp_path)
    cells = []
    for follower in (False, True):
        for delay in (0.0, 100.0):
            c = _cell(run, 1, 1, 50.0, "1", scale=1.0, emulator=False)
            c.update(cell_id=f"{c['cell_id']}.near{delay:g}ms" + (".ffollower" if follower else ""),
                     client_link_delay_ms=delay, fetch_from_follower=follower,
                     e2e_p50_ms=(3.0 + delay) if follower else (3.0 + 2 * delay))
            cells.append(c)
    _write_table(lab, run, "load_cells", cells)
    _write_table(lab, run, "load_consumers", [r for c in cells for r in _consumers(c)])
    build_report(tmp_path)
    html = _page(tmp_path, run)
    section = html.split('id="link-delay"', 1)[1].split("</section>", 1)[0]
    assert section.count("<figure") == 1 and 'data-x="client_link_delay_ms"' in section
    assert "acks 1 from follower e2e p50" in section and "acks 1 from leader e2e p50" in section
    assert "KIP-392" in section
    assert "clients beside a follower, +100 ms one way to the other nodes, reading from the follower" in html


def test_a_thin_consumer_is_set_beside_the_worst_of_the_others(tmp_path: Path) -> None:
    run = LOAD_RUNS[0]
    write_load_run(tmp_path, run, 1, consumers=[3], rates=[200.0], acks=["1"], pause=False)
    lab = LabData(tmp_path)
    c = _cell(run, 1, 3, 200.0, "1", scale=1.0, emulator=False)
    c.update(cell_id=f"{c['cell_id']}.thin0-80kBps", thin_consumer=0, thin_link_kbps=80,
             thin_link_delay_ms=None, failing_clients=1)
    rows = _consumers(c)
    rows[0].update(failing=True, missing_msgs=700, rx_rate_msgs_per_s=11.2, e2e_p99_ms=None,
                   lag_peak_msgs=944)
    rows[1].update(lag_peak_msgs=0, e2e_p99_ms=6.4)
    rows[2].update(lag_peak_msgs=2, e2e_p99_ms=5.1)
    _write_table(lab, run, "load_cells", [c])
    _write_table(lab, run, "load_consumers", rows)
    build_report(tmp_path)
    html = _page(tmp_path, run)
    section = html.split('id="thin-pipe"', 1)[1].split("</section>", 1)[0]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", section)
    # cell, link, thin: failing, lag, p99 (censored: undefined), rx; others: failing, worst
    # lag, worst p99, lowest rx
    others_rx = fmt_num(c["rx_rate_msgs_per_s_avg"])  # the others' lowest, not the thin one's
    assert cells[1:] == ["80 KB/s", "FAILING", "944", "—", "11.20", "0 of 2", "2", "6.40",
                         others_rx], cells
    assert "consumer 0 on a thin link (80 KB/s)" in html
    # a run without a thin consumer has no such section
    other = LOAD_RUNS[1]
    write_load_run(tmp_path, other, 2, consumers=[3], rates=[200.0], acks=["1"], pause=False)
    build_report(tmp_path)
    assert 'id="thin-pipe"' not in _page(tmp_path, other)
