"""``kafkalab export prometheus``: the text file, parsed back with prometheus_client's parser."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kafkalab import drift
from kafkalab.export.prometheus import default_textfile_path, render, write_textfile

REPO = Path(__file__).resolve().parents[2]
RUNS = [f"2026111{d}T010203Z-cc{d:04d}" for d in range(1, 6)]
LOAD_RUN = "20261116T020000Z-dd0001"
FAULT_RUN = "20261116T030000Z-ee0001"


NIGHTLY: dict[str, Any] = {"owner": {"kind": "airflow"}, "cluster": {"is_emulator": False}}
"""Manifest facts of a run the nightly DAG made on Kafka."""


def _ended(i: int) -> str:
    return f"2026-11-1{i + 1}T01:09:03+00:00"


def _row(i: int, scenario: str, client: str, p50: float, *, emulator: bool = False,
         n: int = 500, lost: int = 0) -> dict[str, Any]:
    return {
        "run_date": f"2026-11-1{i + 1}", "workload": "nightly", "scenario": scenario,
        "client": client, "payload": "1kb", "payload_bytes": 1056, "payload_encoding": "raw",
        "profile": "latency", "cluster_flavor": "external" if emulator else "kafka09",
        "broker_version": "0.9.0.1", "broker_count": 1, "broker_is_emulator": emulator,
        "planned_messages": n, "sent_count": n, "received_count": n - lost, "lost_count": lost,
        "e2e_latency_ms_p50": p50, "e2e_latency_ms_p99": 3 * p50 if n >= 100 else None,
        "e2e_latency_ms_percentiles_note": None if n >= 100 else "p99: n<100",
        "e2e_latency_ms_p50_ci_low": p50 * 0.98, "e2e_latency_ms_p50_ci_high": p50 * 1.02,
        "e2e_latency_ms_p99_ci_low": 2.9 * p50 if n >= 100 else None,
        "e2e_latency_ms_p99_ci_high": 3.1 * p50 if n >= 100 else None,
        "tool_p50_ms": None, "tool_p99_ms": None,
    }


def _manifest(data_dir: Path, run_id: str, started: str, ended: str, status: str = "complete",
              **extra: Any) -> None:
    (data_dir / "runs").mkdir(parents=True, exist_ok=True)
    (data_dir / "runs" / f"{run_id}.json").write_text(json.dumps({
        "schema_version": 2, "run_id": run_id, "status": status, "started_at": started,
        "ended_at": ended, "stale_outputs": [], **extra}))


def _validation(data_dir: Path, name: str, success: bool) -> None:
    (data_dir / "validation").mkdir(parents=True, exist_ok=True)
    (data_dir / "validation" / f"{name}.json").write_text(json.dumps({"success": success}))


def _table(path: Path, rows: list[dict[str, Any]]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False),
                   path / "part-00000.parquet")


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    """Five latency runs of the nightly DAG (the newest: confluent-kafka twice as slow,
    kafka-python measured 20 messages so its p99 is undefined, an emulator cell, validation
    failed), one load run from the CLI (two cells that differ only in duration), one fault
    run."""
    for i, rid in enumerate(RUNS):
        slow = 2.0 if i == 4 else 1.0
        rows = [_row(i, "confluent-kafka", "confluent-kafka", 5.0 * slow),
                _row(i, "kafka-python", "kafka-python", 9.0, n=20 if i == 4 else 500,
                     lost=2 if i == 4 else 0)]
        if i == 4:
            rows.append(_row(i, "confluent-kafka", "confluent-kafka", 4.0, emulator=True))
        _table(tmp_path / "aggregates" / f"run_id={rid}", rows)
        _manifest(tmp_path, rid, f"2026-11-1{i + 1}T01:02:03+00:00", _ended(i), **NIGHTLY)
        _validation(tmp_path, rid, i < 4)
        drift.run_drift(tmp_path, rid)
    # a load run: one cell
    _table(tmp_path / "aggregates" / "load" / f"run_id={LOAD_RUN}" / "load_cells.parquet", [{
        "run_id": LOAD_RUN, "run_date": "2026-11-16", "cell_id": "c1", "client": "confluent-kafka",
        "payload": "1kb", "encoding": "raw", "profile": "default", "acks": "1", "consumers": 5,
        "rate_msgs_per_s": 500.0, "partitions": 1, "consumer_mode": "assign",
        "duration_s": 10.0, "cluster_flavor": "kafka09", "broker_version": "0.9.0.1",
        "broker_count": 1, "broker_is_emulator": False, "e2e_p50_ms": 2.5, "e2e_p99_ms": None,
        "e2e_p99_ms_reason": "censored", "achieved_rate_msgs_per_s": 499.0, "loss_pct": 1.5,
        "missing_msgs": 30}, {
        "run_id": LOAD_RUN, "run_date": "2026-11-16", "cell_id": "c2", "client": "confluent-kafka",
        "payload": "1kb", "encoding": "raw", "profile": "default", "acks": "1", "consumers": 5,
        "rate_msgs_per_s": 500.0, "partitions": 1, "consumer_mode": "assign",
        "duration_s": 30.0, "cluster_flavor": "kafka09", "broker_version": "0.9.0.1",
        "broker_count": 1, "broker_is_emulator": False, "e2e_p50_ms": 3.5, "e2e_p99_ms": None,
        "e2e_p99_ms_reason": "censored", "achieved_rate_msgs_per_s": 498.0, "loss_pct": 0.0,
        "missing_msgs": 0}])
    _manifest(tmp_path, LOAD_RUN, "2026-11-16T02:00:00+00:00", "2026-11-16T02:01:00+00:00",
              kind="load")
    _validation(tmp_path, f"{LOAD_RUN}-load", True)
    # a fault run: one cell that lost 3 acked messages over 5 trials
    _table(tmp_path / "aggregates" / "faults" / f"run_id={FAULT_RUN}" / "fault_cells.parquet", [{
        "run_id": FAULT_RUN, "profile": "availability", "fault": "sigkill-leader", "acks": 1,
        "commit": None, "broker_is_emulator": False, "trials": 5, "trials_complete": 5,
        "trials_with_loss": 2, "acked_lost_sum": 3, "lost_unprocessed_sum": None}])
    _manifest(tmp_path, FAULT_RUN, "2026-11-16T03:00:00+00:00", "2026-11-16T03:05:00+00:00",
              status="incomplete", kind="faults", logical_date="2026-11-16T00:00:00+00:00")
    return tmp_path


def _samples(text: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge", family.name
        out.setdefault(family.name, []).extend(family.samples)
    return out


def _value(samples: list[Any], **labels: str) -> float | None:
    hits = [s.value for s in samples if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(hits) <= 1, (labels, hits)
    return hits[0] if hits else None


def _ts(iso: str) -> float:
    return pd.Timestamp(iso).timestamp()


def test_the_file_parses_back_with_the_latest_figures(lab: Path) -> None:
    path = write_textfile(lab)
    assert path == default_textfile_path(lab) == lab / "metrics" / "kafkalab.prom"
    s = _samples(path.read_text())
    nightly = {"kind": "latency", "emulator": "false", "source": "dag"}
    # the newest latency run failed validation: the last success is the run before it
    assert _value(s["kafkalab_last_success_timestamp_seconds"], **nightly) == _ts(_ended(3))
    assert _value(s["kafkalab_last_run_success"], **nightly) == 0.0
    assert _value(s["kafkalab_last_run_timestamp_seconds"], **nightly) == _ts(
        "2026-11-15T01:02:03+00:00")
    # the load run came from the CLI (no owner, no logical date), the fault run from a DAG
    assert _value(s["kafkalab_last_success_timestamp_seconds"], kind="load", source="cli",
                  emulator="false") == _ts("2026-11-16T02:01:00+00:00")
    assert _value(s["kafkalab_last_success_timestamp_seconds"], kind="faults") is None
    assert _value(s["kafkalab_last_run_success"], kind="faults", source="dag") == 0.0

    ck = {"scenario": "confluent-kafka", "payload": "1kb", "profile": "latency",
          "emulator": "false"}
    assert _value(s["kafkalab_latency_p50_ms"], **ck) == 10.0
    assert _value(s["kafkalab_latency_p99_ms"], **ck) == 30.0
    emu = {**ck, "emulator": "true"}
    assert _value(s["kafkalab_latency_p50_ms"], **emu) == 4.0
    assert _value(s["kafkalab_latency_p50_ms"], **emu) is not None
    assert [x.labels["cluster_flavor"] for x in s["kafkalab_latency_p50_ms"]
            if x.labels["emulator"] == "true"] == ["external"]
    # every series names the broker version it was measured on
    assert {x.labels["broker_version"] for x in s["kafkalab_latency_p50_ms"]} == {"0.9.0.1"}
    # kafka-python planned 500 messages for four nights, then 20: two series (the drift key
    # has the count), the 20-message run does not overwrite the 500-message series
    kp_key = "kafka-python|kafka-python|1kb|raw|1056|latency|nightly|kafka09|0.9.0.1|1|"
    assert sorted(x.labels["series"] for x in s["kafkalab_latency_p50_ms"]
                  if x.labels["scenario"] == "kafka-python") == [kp_key + "20", kp_key + "500"]
    kp = {"series": kp_key + "20", "emulator": "false"}
    # 20 messages: p99 undefined, so omitted (not 0); p50 and the loss are there
    assert _value(s["kafkalab_latency_p50_ms"], **kp) == 9.0
    assert _value(s["kafkalab_latency_p99_ms"], **kp) is None
    assert _value(s["kafkalab_messages_lost"], **kp) == 2.0
    assert _value(s["kafkalab_messages_sent"], **kp) == 20.0
    assert _value(s["kafkalab_series_run_timestamp_seconds"], **kp) == _ts(
        "2026-11-15T01:02:03+00:00")
    kp500 = {"series": kp_key + "500", "emulator": "false"}
    assert _value(s["kafkalab_latency_p99_ms"], **kp500) == 27.0
    assert _value(s["kafkalab_messages_sent"], **kp500) == 500.0
    assert _value(s["kafkalab_series_run_timestamp_seconds"], **kp500) == _ts(
        "2026-11-14T01:02:03+00:00")

    # drift: confluent-kafka's p50 doubled after 4 good runs
    assert _value(s["kafkalab_drift_active"], metric="e2e_latency_ms_p50", **ck) == 1.0
    assert _value(s["kafkalab_drift_change_ratio"], metric="e2e_latency_ms_p50",
                  **ck) == pytest.approx(1.0)
    # kafka-python: 500 then 20 planned messages, two series (the drift key has the count)
    assert [x.value for x in s["kafkalab_drift_active"]
            if x.labels["scenario"] == "kafka-python"
            and x.labels["metric"] == "e2e_latency_ms_p50"] == [0.0, 0.0]
    series = {x.labels["series"] for x in s["kafkalab_drift_active"] if x.value == 1.0}
    assert all(k.startswith("confluent-kafka|") and "|kafka09|" in k for k in series), series
    # a latency series' key is its drift series' key without the metric
    ck_series = [x.labels["series"] for x in s["kafkalab_latency_p50_ms"]
                 if all(x.labels[k] == v for k, v in ck.items())]
    assert [k + "|e2e_latency_ms_p50" for k in ck_series] == [
        x.labels["series"] for x in s["kafkalab_drift_active"]
        if x.labels["metric"] == "e2e_latency_ms_p50"
        and all(x.labels[k] == v for k, v in ck.items())]

    # the load cells: two series that differ only in duration (part of the load drift key)
    # a plain producer's cell: the pause and the transaction parts empty
    load_key = "load|confluent-kafka|1kb|raw||default|1|5|500|1|assign|{}|||||kafka09|0.9.0.1|1"
    assert sorted(x.labels["series"] for x in s["kafkalab_load_latency_p50_ms"]) == [
        load_key.format(10), load_key.format(30)]
    assert _value(s["kafkalab_load_latency_p50_ms"], series=load_key.format(30)) == 3.5
    assert {x.labels["broker_version"] for x in s["kafkalab_load_latency_p50_ms"]} == {"0.9.0.1"}
    # the 10 s cell: p99 censored (omitted), loss as a ratio
    load = {"client": "confluent-kafka", "acks": "1", "series": load_key.format(10)}
    assert _value(s["kafkalab_load_latency_p50_ms"], **load) == 2.5
    assert "kafkalab_load_latency_p99_ms" not in s or not s["kafkalab_load_latency_p99_ms"]
    assert _value(s["kafkalab_load_loss_ratio"], **load) == pytest.approx(0.015)
    assert _value(s["kafkalab_load_messages_missing"], **load) == 30.0
    # the fault cell
    fault = {"profile": "availability", "fault": "sigkill-leader", "acks": "1", "commit": ""}
    assert _value(s["kafkalab_fault_acked_lost_messages"], **fault) == 3.0
    assert _value(s["kafkalab_fault_trials_with_loss"], **fault) == 2.0
    assert _value(s["kafkalab_fault_unprocessed_messages"], **fault) is None


def test_an_emulator_run_or_a_cli_run_does_not_reset_the_last_good_nightly(lab: Path) -> None:
    # after the nightly's failed run, two runs that passed: one on the emulator (from a DAG),
    # one from the CLI on Kafka
    emu_run, cli_run = "20261116T050000Z-ff0001", "20261116T060000Z-ff0002"
    _manifest(lab, emu_run, "2026-11-16T05:00:00+00:00", "2026-11-16T05:01:00+00:00",
              owner={"kind": "airflow"}, cluster={"is_emulator": True})
    _manifest(lab, cli_run, "2026-11-16T06:00:00+00:00", "2026-11-16T06:01:00+00:00",
              owner={"kind": "cli"}, cluster={"is_emulator": False})
    for rid in (emu_run, cli_run):
        _validation(lab, rid, True)
    s = _samples(render(lab).decode())
    nightly = {"kind": "latency", "emulator": "false", "source": "dag"}
    assert _value(s["kafkalab_last_success_timestamp_seconds"], **nightly) == _ts(_ended(3))
    assert _value(s["kafkalab_last_run_success"], **nightly) == 0.0
    assert _value(s["kafkalab_last_success_timestamp_seconds"], kind="latency", emulator="true",
                  source="dag") == _ts("2026-11-16T05:01:00+00:00")
    assert _value(s["kafkalab_last_run_success"], kind="latency", emulator="false",
                  source="cli") == 1.0
    assert {x.labels["source"] for x in s["kafkalab_last_run_success"]} == {"dag", "cli"}


def test_a_back_filled_night_does_not_become_the_latest_figure(lab: Path) -> None:
    # started after every other run, but it measured the night of the 12th
    late, late_fault = "nightly-20261112T000000Z-bf", "nightly-20261112T000000Z-bf-faults"
    _table(lab / "aggregates" / f"run_id={late}",
           [_row(1, "confluent-kafka", "confluent-kafka", 50.0)])
    _manifest(lab, late, "2026-11-20T01:00:00+00:00", "2026-11-20T01:09:00+00:00",
              logical_date="2026-11-12T00:00:00+00:00", **NIGHTLY)
    _validation(lab, late, True)
    _table(lab / "aggregates" / "faults" / f"run_id={late_fault}" / "fault_cells.parquet", [{
        "run_id": late_fault, "profile": "availability", "fault": "sigkill-leader", "acks": 1,
        "commit": None, "broker_is_emulator": False, "trials": 5, "trials_complete": 5,
        "trials_with_loss": 0, "acked_lost_sum": 0, "lost_unprocessed_sum": None}])
    _manifest(lab, late_fault, "2026-11-20T02:00:00+00:00", "2026-11-20T02:05:00+00:00",
              kind="faults", logical_date="2026-11-12T00:00:00+00:00", **NIGHTLY)
    s = _samples(render(lab).decode())
    ck = {"scenario": "confluent-kafka", "emulator": "false"}
    assert _value(s["kafkalab_latency_p50_ms"], **ck) == 10.0  # the night of the 15th
    assert _value(s["kafkalab_series_run_timestamp_seconds"], **ck) == _ts(
        "2026-11-15T01:02:03+00:00")
    fault = {"profile": "availability", "fault": "sigkill-leader"}
    assert _value(s["kafkalab_fault_acked_lost_messages"], **fault) == 3.0  # the 16th's


def test_run_kind_and_source_follow_the_manifest() -> None:
    from kafkalab.export.prometheus import run_is_emulator, run_source
    from kafkalab.kinds import kind_name as run_kind

    assert run_kind({"kind": "faults"}) == "faults"
    assert run_kind({"kind": "load"}) == run_kind({"workload": {"kind": "load"}}) == "load"
    assert run_kind({"kind": "latency"}) == run_kind(None) == "latency"
    assert run_source({"owner": {"kind": "airflow"}}) == "dag"
    assert run_source({"owner": {"kind": "cli"}, "logical_date": "2026-11-18T00:00:00+00:00"}) \
        == "dag"
    assert run_source({"owner": {"kind": "cli"}, "logical_date": None}) == run_source(None) \
        == "cli"
    assert run_is_emulator({"cluster": {"is_emulator": True}})
    assert not run_is_emulator({"cluster": {"flavor": "none"}}) and not run_is_emulator(None)


def test_an_empty_data_dir_gives_a_valid_file_without_samples(tmp_path: Path) -> None:
    s = _samples(render(tmp_path).decode())
    assert "kafkalab_latency_p50_ms" in {f.name for f in
                                         text_string_to_metric_families(render(tmp_path).decode())}
    assert all(not v for v in s.values())


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalab.cli", *args], capture_output=True,
                          text=True, cwd=REPO, env=dict(os.environ), timeout=120, check=False)


def test_cli_writes_where_told_and_refuses_a_name_the_collector_ignores(lab: Path) -> None:
    out = lab / "textfile" / "lab.prom"
    proc = _cli("export", "prometheus", "--data-dir", str(lab), "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["path"] == str(out) and doc["samples"]["kafkalab_drift_active"] > 0
    assert _samples(out.read_text())["kafkalab_latency_p50_ms"]
    assert [p.name for p in out.parent.iterdir()] == ["lab.prom"]  # no temporary file left
    plain = _cli("export", "prometheus", "--data-dir", str(lab))
    assert plain.returncode == 0 and str(lab / "metrics" / "kafkalab.prom") in plain.stdout
    bad = _cli("export", "prometheus", "--data-dir", str(lab), "--out", str(lab / "x.txt"))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "must end in .prom" in bad.stderr and not (lab / "x.txt").exists()


def test_the_file_is_readable_by_node_exporter_another_user(lab: Path) -> None:
    path = write_textfile(lab)
    assert path.stat().st_mode & 0o777 == 0o644
    path.chmod(0o600)
    assert write_textfile(lab).stat().st_mode & 0o777 == 0o644  # rewritten: readable again


@pytest.mark.parametrize("out", ["/proc/kl.prom", "/proc/no-such-dir/kl.prom",
                                 "/dev/null/kl.prom"])
def test_cli_an_unwritable_out_is_one_line_and_exit_2(lab: Path, out: str) -> None:
    proc = _cli("export", "prometheus", "--data-dir", str(lab), "--out", out)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert f"--out {out}: cannot write: " in proc.stderr


def test_cli_an_out_in_a_missing_folder_creates_it_like_the_default(lab: Path) -> None:
    out = lab / "new" / "deeper" / "lab.prom"
    proc = _cli("export", "prometheus", "--data-dir", str(lab), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert _samples(out.read_text())["kafkalab_latency_p50_ms"]
    assert out.stat().st_mode & 0o777 == 0o644


def test_the_grafana_dashboard_queries_only_exported_metrics_and_labels(lab: Path) -> None:
    import re

    from kafkalab.paths import include_dir

    dash = json.loads((include_dir() / "grafana" / "kafkalab.json").read_text())
    families = {f.name: f for f in text_string_to_metric_families(render(lab).decode())}
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    exprs += [v["definition"] for v in dash["templating"]["list"] if v["type"] == "query"]
    used = {m for e in exprs for m in re.findall(r"kafkalab_[a-z0-9_]+", e)}
    assert used and used <= set(families), used - set(families)
    for e in exprs:  # every label a selector names is one of its metric's labels
        for metric, selector in re.findall(r"(kafkalab_[a-z0-9_]+)\{([^}]*)\}", e):
            labels = set(re.findall(r"(\w+)\s*=~?", selector))
            have = {k for s in families[metric].samples for k in s.labels}
            assert not families[metric].samples or labels <= have, (metric, labels - have)
    assert len({p["id"] for p in dash["panels"]}) == len(dash["panels"])
    targets = [t for p in dash["panels"] for t in p["targets"]]
    # the nightly's health: only DAG runs on Kafka (an emulator or CLI run resets nothing)
    for t in targets:
        if re.search(r"kafkalab_last_(success|run)_", t["expr"]):
            assert 'emulator="false"' in t["expr"] and 'source="dag"' in t["expr"], t["expr"]
    # a line per series: its legend names the series key, so two series never share a name
    for t in targets:
        if re.match(r"kafkalab_(latency|load_latency|load_loss|messages)_", t["expr"]):
            assert "{{series}}" in t["legendFormat"], t
