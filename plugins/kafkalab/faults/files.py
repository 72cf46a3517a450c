"""The fault samples on disk (schema: docs/metrics-schema.md, "Fault samples").

One directory per trial, ``faults/run_date=<d>/run_id=<id>/trial=<trial_id>/``, holding the
load cell's files (``sends.parquet``, ``receipts-000.parquet``, ``lag-000.parquet``,
``cell.json``: :mod:`kafkalab.load.files`) and

* ``timeline.parquet``: the partition's leader and ISR (from ZooKeeper on Kafka 0.9, else
  the Admin API), every poll;
* ``verdicts.parquet``: one row per intended message, what the re-read found;
* ``trial.json``: the trial's spec, target, event times and summary.

A consumer-fault trial (``kill-consumer``, ``leave-consumer``) also writes

* ``processed.parquet``: one row per record a group member processed (a copy per time);
* ``deliveries.parquet``: one row per intended message, what the group did with it;
* ``commits.parquet``: one row per (commit, partition) a member logged;
* ``assignments.parquet``: the members' assignments, revocations and lifecycle events;
* ``group_lag.parquet``: the group's committed offset and the log end per partition, every
  0.5 s;
* ``group/``: the members' raw logs and plan (kept for inspection, not read by Spark).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from kafkalab.kinds import FAULTS
from kafkalab.load.files import CellFile
from kafkalab.store import LabData

__all__ = ["ASSIGNMENTS_SCHEMA", "COMMITS_SCHEMA", "DELIVERIES", "DELIVERIES_SCHEMA",
           "FAULT_SCHEMA_VERSION", "GROUP_LAG_SCHEMA", "PROCESSED_SCHEMA", "TIMELINE_SCHEMA",
           "VERDICTS", "VERDICTS_SCHEMA", "assignments_path", "commits_path", "deliveries_path",
           "faults_root", "group_lag_path", "processed_path", "timeline_path", "trial_dir",
           "trial_json_path", "verdicts_path"]

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
    ("uncommitted_read_count", pa.int32()),
])

VERDICTS = ("ok", "acked_lost", "failed_but_present", "indeterminate_present", "unseen",
            "aborted", "aborted_visible")
"""Every intended message gets exactly one (docs/metrics-schema.md); the last two only in a
transactional trial."""

PROCESSED_SCHEMA = pa.schema([
    ("member", pa.int32()),
    ("incarnation", pa.int32()),
    ("seq", pa.int64()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("receive_ts_ns", pa.int64()),
    ("processed_ts_ns", pa.int64()),
])

DELIVERIES_SCHEMA = pa.schema([
    ("seq", pa.int64()),
    ("is_warmup", pa.bool_()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("in_topic", pa.int32()),
    ("processed_count", pa.int32()),
    ("first_member", pa.int32()),
    ("first_processed_ts_ns", pa.int64()),
    ("delivery", pa.string()),
])

DELIVERIES = ("once", "duplicated", "lost", "not_in_topic", "processed_not_in_topic")
"""What the group did with each intended message (docs/metrics-schema.md): processed exactly
once; more than once; never though the topic holds it; neither (the producer never wrote
it); processed though the re-read did not find it (the check disagrees with itself)."""

COMMITS_SCHEMA = pa.schema([
    ("member", pa.int32()),
    ("incarnation", pa.int32()),
    ("commit_ts_ns", pa.int64()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("ok", pa.bool_()),
    ("error", pa.string()),
    ("source", pa.string()),
])

ASSIGNMENTS_SCHEMA = pa.schema([
    ("member", pa.int32()),
    ("incarnation", pa.int32()),
    ("event_ts_ns", pa.int64()),
    ("event", pa.string()),
    ("partitions", pa.string()),
])

GROUP_LAG_SCHEMA = pa.schema([
    ("sample_ts_ns", pa.int64()),
    ("elapsed_s", pa.float64()),
    ("partition", pa.int32()),
    ("committed_offset", pa.int64()),
    ("log_end_offset", pa.int64()),
    ("lag_msgs", pa.int64()),
])


def numpy_type(schema: pa.Schema, name: str) -> str:
    """The numpy dtype of an integer column of ``schema`` (for empty arrays)."""
    return "int32" if schema.field(name).type == pa.int32() else "int64"


timeline_path = CellFile("timeline.parquet")
verdicts_path = CellFile("verdicts.parquet")
trial_json_path = CellFile("trial.json")
processed_path = CellFile("processed.parquet")
deliveries_path = CellFile("deliveries.parquet")
commits_path = CellFile("commits.parquet")
assignments_path = CellFile("assignments.parquet")
group_lag_path = CellFile("group_lag.parquet")


def group_paths(trial: Path) -> tuple[Path, ...]:
    """A consumer-fault trial's own tables (a re-run of the trial replaces all of them)."""
    return (processed_path(trial), deliveries_path(trial), commits_path(trial),
            assignments_path(trial), group_lag_path(trial))


def faults_root(data_root: Path) -> Path:
    """``<data>/faults`` (:meth:`kafkalab.store.LabData.measured_dir`)."""
    return LabData(data_root).measured_dir(FAULTS)


def trial_dir(data_root: Path, run_date: str, run_id: str, trial_id: str) -> Path:
    """``<data>/faults/run_date=<d>/run_id=<id>/trial=<trial_id>``."""
    return (faults_root(data_root) / f"run_date={run_date}" / f"run_id={run_id}"
            / f"trial={trial_id}")
