"""A busy host is not a regression: the host figures of a cell (kafkalab.host), the busy rule
(kafkalab.drift.busy), and how drift, ``kafkalab compare``, the alert body and the report
treat a cell measured on a busy host."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkalab.alerts.bodies import build_generic_body, build_slack_body, busy_cells
from kafkalab.compare import BUSY as BUSY_HOST_VERDICT
from kafkalab.compare import REGRESSED, compare_runs, format_comparison
from kafkalab.drift import DriftConfig, detect_drift, load_history, parse_drift_config
from kafkalab.drift.busy import BUSY_VERDICT, busy_reason, cell_host_frame, host_text
from kafkalab.drift.config import BusyHostRule
from kafkalab.errors import ConfigError
from kafkalab.host import HostSnapshot, HostWindow, host_load, local_ports

pytestmark = pytest.mark.unit

QUIET = {"host_other_cpu_pct": 3.0, "host_cpu_pct": 40.0, "lab_cpu_pct": 37.0,
         "steal_pct": 0.0, "run_queue_avg": 0.5, "host_window_s": 2.0, "cpu_count": 2}
BUSY = {**QUIET, "host_other_cpu_pct": 85.0, "host_cpu_pct": 99.0, "run_queue_avg": 3.5}


# --------------------------------------------------------------------------- the figures


def _snap(t: float, ticks: dict[str, int], lab: dict[tuple[int, float], float],
          running: int | None = 1, steal: bool = True) -> HostSnapshot:
    full = {k: 0 for k in ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")}
    return HostSnapshot(monotonic_s=t, cpu_ticks={**full, **ticks}, steal_reported=steal,
                        procs_running=running, lab_cpu_s=lab)


def test_host_load_splits_the_hosts_cpu_into_the_labs_and_the_others() -> None:
    # 2 cores x 10 s = 2000 ticks at 100 Hz: 1500 busy (user 1200 + system 300), 100 steal;
    # the lab's processes used 5 s of it (500 ticks): others 1000 ticks = 50 %
    start = _snap(0.0, {"user": 1000, "system": 100, "idle": 500}, {(1, 0.0): 2.0}, running=3)
    end = _snap(10.0, {"user": 2200, "system": 400, "idle": 900, "steal": 100},
                {(1, 0.0): 4.0, (7, 5.0): 3.0}, running=5)  # pid 7 started in the window
    load = host_load(start, end, cpu_count=2, ticks_per_s=100)
    assert load is not None
    assert load.host_window_s == 10.0 and load.cpu_count == 2
    assert load.host_cpu_pct == pytest.approx(1500 / 2000 * 100)
    assert load.lab_cpu_pct == pytest.approx(500 / 2000 * 100)
    assert load.host_other_cpu_pct == pytest.approx(1000 / 2000 * 100)
    assert load.steal_pct == pytest.approx(5.0)
    assert load.run_queue_avg == pytest.approx(((3 - 1) + (5 - 1)) / 2)  # the reader left out


def test_host_load_never_counts_more_lab_cpu_than_the_host_used_nor_steal_it_has_not() -> None:
    start = _snap(0.0, {"user": 0, "idle": 0}, {(1, 0.0): 0.0}, running=None, steal=False)
    end = _snap(1.0, {"user": 50, "idle": 150}, {(1, 0.0): 9.0}, running=None, steal=False)
    load = host_load(start, end, cpu_count=2, ticks_per_s=100)
    assert load is not None
    assert load.host_other_cpu_pct == 0.0 and load.lab_cpu_pct == pytest.approx(25.0)
    assert load.steal_pct is None and load.run_queue_avg is None
    assert host_load(end, end, ticks_per_s=100) is None  # no tick passed


def test_local_ports_are_the_bootstrap_servers_on_this_machine() -> None:
    assert local_ports(["127.0.0.1:26092", "localhost:9092", " kafka-1:9092", "[::1]:9093",
                        "10.0.0.5:9094"]) == {26092, 9092, 9093}


def test_a_window_around_cpu_spent_in_this_process_counts_it_as_the_labs() -> None:
    """Real /proc: CPU burnt by this process between the snapshots is the lab's (0.3 s of
    CPU time, however fast the machine), so it is not in host_other_cpu_pct."""
    window = HostWindow.begin([])
    start = time.process_time()
    while time.process_time() - start < 0.3:
        pass
    figures = window.end()
    assert figures is not None
    assert set(figures) == {"host_window_s", "host_cpu_pct", "lab_cpu_pct",
                            "host_other_cpu_pct", "steal_pct", "run_queue_avg", "cpu_count"}
    lab_s = figures["lab_cpu_pct"] / 100 * figures["cpu_count"] * figures["host_window_s"]
    assert lab_s >= 0.2, figures  # tick rounding of two clocks: well under the 0.3 s burnt
    assert 0.0 <= figures["host_other_cpu_pct"] <= figures["host_cpu_pct"] <= 100.0


# --------------------------------------------------------------------------- the rule


def test_the_busy_rule_marks_a_cell_that_reaches_any_set_limit() -> None:
    rule = BusyHostRule()
    assert busy_reason(QUIET, rule) is None
    why = busy_reason(BUSY, rule)
    assert why is not None and "other processes used 85 % of the CPU (limit 30 %)" in why
    assert "steal 12.0 %" in (busy_reason({**QUIET, "steal_pct": 12.0}, rule) or "")
    queue = BusyHostRule(max_run_queue_per_cpu=1.5)
    assert busy_reason({**QUIET, "run_queue_avg": 3.5}, rule) is None  # off by default
    assert "run queue 3.5 on 2 core(s)" in (busy_reason({**QUIET, "run_queue_avg": 3.5}, queue) or "")
    assert busy_reason(BUSY, BusyHostRule(enabled=False)) is None
    assert busy_reason(BUSY, BusyHostRule(max_other_cpu_pct=None)) is None
    assert busy_reason({"host_other_cpu_pct": None}, rule) is None  # no figures: never busy
    assert host_text(BUSY) == "other 85 % CPU, run queue 3.5, steal 0.0 %"


def test_the_busy_rule_is_configured_where_the_drift_rules_are() -> None:
    cfg = parse_drift_config({"busy_host": {"max_other_cpu_pct": 50, "max_steal_pct": None}})
    assert cfg.busy_host.max_other_cpu_pct == 50.0 and cfg.busy_host.max_steal_pct is None
    with pytest.raises(ConfigError, match="busy_host"):
        parse_drift_config({"busy_host": {"max_other_cpu_pct": 150}})
    with pytest.raises(ConfigError, match="busy_host"):
        parse_drift_config({"busy_host": {"max_load": 1}})
    shipped = Path(__file__).resolve().parents[2] / "include" / "drift.yaml"
    from kafkalab.drift import load_drift_config

    assert load_drift_config(shipped).busy_host == BusyHostRule()


# --------------------------------------------------------------------------- drift


def _agg(run_id: str, p50: float, started: str, host: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "run_id": run_id, "run_started_at": pd.Timestamp(started, tz="UTC"),
        "run_state": "complete", "run_validated": True, "run_stale_outputs": "",
        "scenario": "confluent-kafka", "client": "confluent-kafka", "payload": "1kb",
        "payload_encoding": "raw", "payload_bytes": 1024, "profile": "latency",
        "workload": "nightly", "cluster_flavor": "kraft", "broker_version": "4.4.0",
        "broker_count": 1, "planned_messages": 200, "broker_is_emulator": False,
        "e2e_latency_ms_p50": p50,
        **(host or {k: None for k in QUIET}),
    }


def _history(p50s: list[float], hosts: list[dict[str, Any] | None]) -> pd.DataFrame:
    return pd.DataFrame([_agg(f"r{i}", v, f"2026-11-{18 + i}T01:00:00", h)
                         for i, (v, h) in enumerate(zip(p50s, hosts, strict=True))])


def _p50_record(records: pd.DataFrame) -> dict[str, Any]:
    rec = records[records["metric"] == "e2e_latency_ms_p50"]
    assert len(rec) == 1, records
    return dict(rec.iloc[0])


def test_a_night_measured_on_a_busy_host_is_not_judged_and_raises_no_drift() -> None:
    history = _history([1.0, 1.02, 0.98, 1.92], [QUIET, QUIET, QUIET, BUSY])
    rec = _p50_record(detect_drift(history, DriftConfig(), "r3"))
    assert rec["verdict"] == BUSY_VERDICT and not rec["is_drift"]
    assert rec["alert_status"] == "clear"
    assert bool(rec["host_busy"]) and rec["host_other_cpu_pct"] == 85.0
    assert "busy host (other processes used 85 %" in rec["note"]
    assert "would have said drift" in rec["note"]
    # the same night, measured quiet, is a drift: the mark is what spares it
    quiet = _p50_record(detect_drift(_history([1.0, 1.02, 0.98, 1.92], [QUIET] * 4),
                                     DriftConfig(), "r3"))
    assert quiet["verdict"] == "drift" and not bool(quiet["host_busy"])
    # with the rule off, it is judged as before
    off = DriftConfig(busy_host=BusyHostRule(enabled=False))
    assert _p50_record(detect_drift(history, off, "r3"))["verdict"] == "drift"


def test_a_busy_night_is_never_a_baseline() -> None:
    """The seen case the other way round: a busy 1.92 ms night among quiet ~1 ms ones; the
    quiet night after it is judged against the quiet ones only (no "improved")."""
    history = _history([1.0, 1.92, 1.02, 0.98, 0.99], [QUIET, BUSY, QUIET, QUIET, QUIET])
    rec = _p50_record(detect_drift(history, DriftConfig(), "r4"))
    assert rec["verdict"] == "ok" and rec["baseline_runs"] == 3
    assert rec["baseline_value"] == pytest.approx(1.0)
    # only two quiet earlier nights: too few for a verdict, the busy one does not fill in
    short = _history([1.92, 1.02, 0.98, 0.99], [BUSY, QUIET, QUIET, QUIET])
    assert _p50_record(detect_drift(short, DriftConfig(), "r3"))["verdict"] == "insufficient_history"


def test_cells_without_host_figures_are_judged_as_before() -> None:
    history = _history([1.0, 1.02, 0.98, 1.92], [None, None, None, None])
    rec = _p50_record(detect_drift(history, DriftConfig(), "r3"))
    assert rec["verdict"] == "drift" and not bool(rec["host_busy"])
    assert pd.isna(rec["host_other_cpu_pct"])


def test_a_busy_night_neither_counts_towards_a_recovery_nor_breaks_it() -> None:
    from kafkalab.drift.episodes import Step, standing

    steps = [Step("r0", 0, "drift", True), Step("r1", 1, "ok", True),
             Step("r2", 2, BUSY_VERDICT, True), Step("r3", 3, "ok", True)]
    now = standing(steps, recovery_runs=3)
    assert now.alert_status == "alerting" and now.good_runs == 2


# --------------------------------------------------------------------------- history


def _manifest(run_id: str, day: str, host: dict[str, Any] | None) -> dict[str, Any]:
    return {"schema_version": 2, "run_id": run_id, "status": "complete",
            "started_at": f"2026-11-{day}T01:02:03+00:00", "stale_outputs": [],
            "cells": [{"scenario": "confluent-kafka", "payload": "1kb", "profile": "latency",
                       "status": "complete", "rows": 200, "host": host}]}


def write_run(data_dir: Path, run_id: str, p50: float, host: dict[str, Any] | None) -> None:
    """Aggregates (one confluent-kafka 1 KB cell), a complete manifest whose cell carries
    ``host`` and a passed validation."""
    row = {k: v for k, v in _agg(run_id, p50, "2026-11-20", None).items()
           if not k.startswith("run_") and k not in QUIET}
    row.update({"run_date": "2026-11-20", "sent_count": 200, "received_count": 200,
                "lost_count": 0, "e2e_latency_ms_p50_ci_low": p50 * 0.97,
                "e2e_latency_ms_p50_ci_high": p50 * 1.03})
    d = data_dir / "aggregates" / f"run_id={run_id}"
    d.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(pd.DataFrame([row]), preserve_index=False),
                   d / "part-00000.parquet")
    (data_dir / "runs").mkdir(parents=True, exist_ok=True)
    (data_dir / "runs" / f"{run_id}.json").write_text(json.dumps(_manifest(run_id, run_id[6:8], host)))
    (data_dir / "validation").mkdir(parents=True, exist_ok=True)
    (data_dir / "validation" / f"{run_id}.json").write_text(json.dumps({"success": True}))


RUN_A = "20261118T010203Z-aaaaaa"
RUN_B = "20261121T010203Z-bbbbbb"


def test_the_history_carries_each_cells_host_figures_from_its_manifest(tmp_path: Path) -> None:
    write_run(tmp_path, RUN_A, 1.92, BUSY)
    write_run(tmp_path, RUN_B, 0.99, None)  # a cell measured before the figures existed
    history = load_history(tmp_path).set_index("run_id")
    assert history.loc[RUN_A, "host_other_cpu_pct"] == 85.0
    assert history.loc[RUN_A, "run_queue_avg"] == 3.5
    assert pd.isna(history.loc[RUN_B, "host_other_cpu_pct"])
    frame = cell_host_frame({RUN_A: _manifest(RUN_A, "18", BUSY)})
    assert list(frame["host_other_cpu_pct"]) == [85.0]


# --------------------------------------------------------------------------- compare


def test_compare_does_not_call_a_busy_night_improved(tmp_path: Path) -> None:
    """The seen case: 1.92 ms on a busy night, 0.99 ms three nights later."""
    write_run(tmp_path, RUN_A, 1.92, BUSY)
    write_run(tmp_path, RUN_B, 0.99, QUIET)
    c = compare_runs(tmp_path, RUN_A, RUN_B)
    (series,) = c.shared
    assert series.busy_a is not None and series.busy_b is None
    p50 = next(m for m in series.metrics if m.metric == "e2e_latency_ms_p50")
    assert p50.verdict == BUSY_HOST_VERDICT and p50.change_pct == pytest.approx(-48.4, abs=0.1)
    assert p50.note is not None and "A measured on a busy host" in p50.note
    assert "would have said improved" in p50.note
    assert c.judged == 0 and c.regressed == 0 and c.busy == 1 and not c.comparable
    assert c.reason is not None and "busy host" in c.reason
    text = format_comparison(c)
    assert "[busy host: A]" in text and "busy host" in text.splitlines()[-1]
    assert "improved" not in text.replace("would have said improved", "")


def test_compare_judges_two_quiet_nights_as_before(tmp_path: Path) -> None:
    write_run(tmp_path, RUN_A, 0.99, QUIET)
    write_run(tmp_path, RUN_B, 1.92, QUIET)
    c = compare_runs(tmp_path, RUN_A, RUN_B)
    p50 = next(m for m in c.shared[0].metrics if m.metric == "e2e_latency_ms_p50")
    assert p50.verdict == REGRESSED and c.busy == 0 and "busy host" not in format_comparison(c)


# --------------------------------------------------------------------------- alert, report


def test_the_alert_body_names_the_cells_measured_on_a_busy_host() -> None:
    history = _history([1.0, 1.02, 0.98, 1.92], [QUIET, QUIET, QUIET, BUSY])
    recs = detect_drift(history, DriftConfig(), "r3").to_dict(orient="records")
    busy = busy_cells(recs)
    assert len(busy) == 1 and busy[0]["host_other_cpu_pct"] == 85.0
    drift = {**recs[0], "verdict": "drift", "is_drift": True}  # another series that drifted
    generic = build_generic_body(run_id="r3", drifts=[drift], busy_host=busy)
    assert generic["busy_host"][0]["scenario"] == "confluent-kafka"
    slack = build_slack_body(run_id="r3", drifts=[drift], busy_host=busy)
    assert "busy host, not judged: confluent-kafka/confluent-kafka 1kb latency: other " \
           "processes 85.0% CPU" in slack["text"]
    assert any("Measured on a busy host" in str(b) for b in slack["blocks"])
    assert build_generic_body(run_id="r3", drifts=[drift])["busy_host"] == []


def test_the_report_lists_the_cells_measured_on_a_busy_host() -> None:
    from kafkalab.report.checks_section import _busy_host

    history = _history([1.0, 1.02, 0.98, 1.92], [QUIET, QUIET, QUIET, BUSY])
    recs = detect_drift(history, DriftConfig(), "r3").to_dict(orient="records")
    html = _busy_host(recs)
    assert "1 cell(s) measured on a busy host" in html
    assert "other processes used 85 % of the CPU (limit 30 %)" in html
    assert _busy_host([{**r, "verdict": "ok"} for r in recs]) == ""


# --------------------------------------------------------------------------- load cells


def test_a_load_cells_other_cpu_is_the_same_in_the_engine_and_the_spark_job() -> None:
    from kafkalab.load.cpu import other_cpu_pct
    from spark_jobs.aggregate_load import host_other_cpu_pct

    procs = [{"role": "producer", "host": "h1", "cpu_frac": 0.3},
             {"role": "consumer-shard", "host": "h1", "cpu_frac": 0.2},
             {"role": "consumer-shard", "host": "h2", "cpu_frac": 0.9},  # another machine
             {"role": "consumer-shard", "host": None, "cpu_frac": None}]  # no result
    doc = {"host_cpu_busy_frac": 0.95, "host_cpu_count": 2, "broker_cpu_frac": 0.4,
           "processes": procs}
    # 0.95 of 2 cores busy = 1.9 cores; the lab's on h1: 0.3 + 0.2 + 0.4 = 0.9 -> 1.0 other
    assert host_other_cpu_pct(doc) == pytest.approx(50.0)
    engine = other_cpu_pct(0.95, 2, [(p["role"], p["host"], p["cpu_frac"]) for p in procs], 0.4)
    assert engine == host_other_cpu_pct(doc)
    assert host_other_cpu_pct({**doc, "host_cpu_busy_frac": 0.2}) == 0.0  # never below 0
    assert host_other_cpu_pct({**doc, "host_cpu_busy_frac": None}) is None
    assert other_cpu_pct(0.5, None, [], None) is None


def test_a_load_cell_measured_on_a_busy_host_raises_no_drift() -> None:
    from kafkalab.drift.records import LOAD_SERIES_COLUMNS

    def cell(i: int, p99: float, other: float | None) -> dict[str, Any]:
        row: dict[str, Any] = {c: None for c in LOAD_SERIES_COLUMNS}
        row.update(run_id=f"l{i}", run_started_at=pd.Timestamp(f"2026-11-{18 + i}T01:00", tz="UTC"),
                   run_state="complete", run_validated=True, run_stale_outputs="",
                   scenario="load", client="confluent-kafka", payload="1kb", profile="default",
                   acks="1", consumers=5, rate_msgs_per_s=200.0, broker_is_emulator=False,
                   e2e_p99_ms=p99, host_other_cpu_pct=other)
        return row

    history = pd.DataFrame([cell(0, 10.0, 5.0), cell(1, 10.5, 4.0), cell(2, 9.8, 6.0),
                            cell(3, 30.0, 70.0)])
    recs = detect_drift(history, DriftConfig(), "l3", kind="load")
    rec = dict(recs[recs["metric"] == "e2e_p99_ms"].iloc[0])
    assert rec["verdict"] == BUSY_VERDICT and not rec["is_drift"] and bool(rec["host_busy"])
    assert rec["host_other_cpu_pct"] == 70.0 and pd.isna(rec["run_queue_avg"])
    history.loc[3, "host_other_cpu_pct"] = 10.0
    rec = dict(detect_drift(history, DriftConfig(), "l3", kind="load").query(
        "metric == 'e2e_p99_ms'").iloc[0])
    assert rec["verdict"] == "drift"
