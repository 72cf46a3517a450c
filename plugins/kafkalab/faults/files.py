"""The fault samples on disk (schema: docs/metrics-schema.md, "Fault samples").

One directory per trial, ``faults/run_date=<d>/run_id=<id>/trial=<trial_id>/``, holding the
load cell's files (``sends.parquet``, ``receipts-000.parquet``, ``lag-000.parquet``,
``cell.json``: :mod:`kafkalab.load.files`) and

* ``timeline.parquet``: the partition's leader and ISR from ZooKeeper, every poll;
* ``verdicts.parquet``: one row per intended message, what the re-read found;
* ``trial.json``: the trial's spec, target, event times and summary.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

__all__ = ["FAULT_SCHEMA_VERSION", "TIMELINE_SCHEMA", "VERDICTS", "VERDICTS_SCHEMA",
           "faults_root", "timeline_path", "trial_dir", "trial_json_path", "verdicts_path"]

FAULT_SCHEMA_VERSION = 1

TIMELINE_SCHEMA = pa.schema([
    ("sample_ts_ns", pa.int64()),
    ("elapsed_s", pa.float64()),
    ("partition", pa.int32()),
    ("leader", pa.int32()),
    ("leader_epoch", pa.int32()),
    ("isr", pa.string()),
    ("isr_size", pa.int32()),
    ("brokers_alive", pa.string()),
])

VERDICTS_SCHEMA = pa.schema([
    ("seq", pa.int64()),
    ("is_warmup", pa.bool_()),
    ("outcome", pa.string()),
    ("partition", pa.int32()),
    ("acked_offset", pa.int64()),
    ("read_count", pa.int32()),
    ("first_read_offset", pa.int64()),
    ("reordered", pa.bool_()),
    ("verdict", pa.string()),
    ("in_broker_logs", pa.string()),
])

VERDICTS = ("ok", "acked_lost", "failed_but_present", "indeterminate_present", "unseen")
"""Every intended message gets exactly one (docs/metrics-schema.md)."""


def faults_root(data_root: Path) -> Path:
    """``<data>/faults``."""
    return data_root / "faults"


def trial_dir(data_root: Path, run_date: str, run_id: str, trial_id: str) -> Path:
    """``<data>/faults/run_date=<d>/run_id=<id>/trial=<trial_id>``."""
    return (faults_root(data_root) / f"run_date={run_date}" / f"run_id={run_id}"
            / f"trial={trial_id}")


def timeline_path(trial: Path) -> Path:
    return trial / "timeline.parquet"


def verdicts_path(trial: Path) -> Path:
    return trial / "verdicts.parquet"


def trial_json_path(trial: Path) -> Path:
    return trial / "trial.json"
