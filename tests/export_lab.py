"""A data directory for the Prometheus export's tests (unit and integration): runs of every
kind, written as the lab writes them, with figures the tests know."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kafkalab import drift

RUNS = [f"2026111{d}T010203Z-cc{d:04d}" for d in range(1, 6)]
LOAD_RUN = "20261116T020000Z-dd0001"
FAULT_RUN = "20261116T030000Z-ee0001"


NIGHTLY: dict[str, Any] = {"owner": {"kind": "airflow"}, "cluster": {"is_emulator": False}}
"""Manifest facts of a run the nightly DAG made on Kafka."""


def ended(i: int) -> str:
    return f"2026-11-1{i + 1}T01:09:03+00:00"


def row(i: int, scenario: str, client: str, p50: float, *, emulator: bool = False,
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


def manifest(data_dir: Path, run_id: str, started: str, ended: str, status: str = "complete",
              **extra: Any) -> None:
    (data_dir / "runs").mkdir(parents=True, exist_ok=True)
    (data_dir / "runs" / f"{run_id}.json").write_text(json.dumps({
        "schema_version": 2, "run_id": run_id, "status": status, "started_at": started,
        "ended_at": ended, "stale_outputs": [], **extra}))


def validation(data_dir: Path, name: str, success: bool) -> None:
    (data_dir / "validation").mkdir(parents=True, exist_ok=True)
    (data_dir / "validation" / f"{name}.json").write_text(json.dumps({"success": success}))


def table(path: Path, rows: list[dict[str, Any]]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False),
                   path / "part-00000.parquet")


def build_export_lab(tmp_path: Path) -> Path:
    """Five latency runs of the nightly DAG (the newest: confluent-kafka twice as slow,
    kafka-python measured 20 messages so its p99 is undefined, an emulator cell, validation
    failed), one load run from the CLI (two cells that differ only in duration), one fault
    run."""
    for i, rid in enumerate(RUNS):
        slow = 2.0 if i == 4 else 1.0
        rows = [row(i, "confluent-kafka", "confluent-kafka", 5.0 * slow),
                row(i, "kafka-python", "kafka-python", 9.0, n=20 if i == 4 else 500,
                     lost=2 if i == 4 else 0)]
        if i == 4:
            rows.append(row(i, "confluent-kafka", "confluent-kafka", 4.0, emulator=True))
        table(tmp_path / "aggregates" / f"run_id={rid}", rows)
        manifest(tmp_path, rid, f"2026-11-1{i + 1}T01:02:03+00:00", ended(i), **NIGHTLY)
        validation(tmp_path, rid, i < 4)
        drift.run_drift(tmp_path, rid)
    # a load run: one cell
    table(tmp_path / "aggregates" / "load" / f"run_id={LOAD_RUN}" / "load_cells.parquet", [{
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
    manifest(tmp_path, LOAD_RUN, "2026-11-16T02:00:00+00:00", "2026-11-16T02:01:00+00:00",
              kind="load")
    validation(tmp_path, f"{LOAD_RUN}-load", True)
    # a fault run: one cell that lost 3 acked messages over 5 trials
    table(tmp_path / "aggregates" / "faults" / f"run_id={FAULT_RUN}" / "fault_cells.parquet", [{
        "run_id": FAULT_RUN, "profile": "availability", "fault": "sigkill-leader", "acks": 1,
        "commit": None, "broker_is_emulator": False, "trials": 5, "trials_complete": 5,
        "trials_with_loss": 2, "acked_lost_sum": 3, "lost_unprocessed_sum": None}])
    manifest(tmp_path, FAULT_RUN, "2026-11-16T03:00:00+00:00", "2026-11-16T03:05:00+00:00",
              status="incomplete", kind="faults", logical_date="2026-11-16T00:00:00+00:00")
    return tmp_path
