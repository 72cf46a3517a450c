"""Aggregate one fault run (broker and consumer faults) into four tables.

Extract the run's "fault samples" (``docs/metrics-schema.md``, "Fault samples": per trial
``verdicts.parquet``, ``sends.parquet``, ``receipts-NNN.parquet`` and ``trial.json`` below
``<faults>/run_date=<d>/run_id=<id>/trial=<trial_id>/``; a consumer-fault trial also
``processed.parquet``, ``deliveries.parquet`` and ``group_lag.parquet``), transform them by
the definitions of ``docs/aggregates-schema.md`` ("Fault aggregates") and load::

    <out>/run_id=<id>/fault_trials.parquet    one row per trial
    <out>/run_id=<id>/fault_cells.parquet     one row per (profile, fault, acks, commit,
                                              static membership, rebalance protocol, client,
                                              max in flight, idempotence)
    <out>/run_id=<id>/fault_timeline.parquet  one row per (trial, 100 ms bin of elapsed time)
    <out>/run_id=<id>/group_lag.parquet       one row per (trial, offset sample, partition)
                                              of the consumer-fault trials (else no rows)

The checker's counts are recomputed from ``verdicts.parquet`` (one row per intended message,
warm-up included), and a consumer trial's ``redelivered`` / ``lost_unprocessed`` from
``processed.parquet`` / ``deliveries.parquet``, never copied from the engine's summary; the
availability and rebalance figures (unavailable_ms, rebalance_pause_ms, ...) come from
``trial.json``'s summary, the event times from its ``events``. A run without consumer trials
has none of the consumer files: they read as absent (those columns null, no group_lag
rows). Written into a hidden staging directory and swapped in for the run's directory as a
whole, as the load aggregates are (:func:`_session.swap_in_run_tables`).

Usage::

    spark-submit spark_jobs/aggregate_faults.py --faults lab-data/faults \
        --out lab-data/aggregates/faults --run-id ID
    python spark_jobs/aggregate_faults.py ...            # builds its own local session

Needs PySpark and ``_session.py`` (beside this script, or shipped with ``--py-files``), not
the ``kafkalab`` package. Exit codes: 0 success, 2 bad input (missing
path, no trial of the run, bad arguments).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

if __package__:  # imported as spark_jobs.aggregate_faults (tests, tools)
    from . import _session as shared
else:  # run as a script: _session.py sits beside it or is shipped with --py-files
    import _session as shared  # type: ignore[no-redef]

__all__ = [
    "CELL_SCHEMA",
    "CONSUMER_COUNT_COLUMNS",
    "COUNT_COLUMNS",
    "GROUP_LAG_SCHEMA",
    "SCHEMA_VERSION",
    "TABLES",
    "TIMELINE_SCHEMA",
    "TRIAL_SCHEMA",
    "FaultRun",
    "extract",
    "main",
    "run",
    "transform",
]

SCHEMA_VERSION = 1
"""Version of the fault aggregates schema (``docs/aggregates-schema.md``)."""

TABLES: tuple[str, ...] = ("fault_trials", "fault_cells", "fault_timeline", "group_lag")
"""The tables written per run, as ``<out>/run_id=<id>/<table>.parquet``."""

BIN_S = 0.1
"""Width of a ``fault_timeline`` bin (seconds of elapsed time since the trial's t0)."""

VERDICTS = ("ok", "acked_lost", "failed_but_present", "indeterminate_present", "unseen")
"""Every intended message gets exactly one of these verdicts."""

# --------------------------------------------------------------------------- input schemas
# The columns read, with their types (the contract's "Raw files"); a missing column reads
# as null, extra columns are ignored.

VERDICTS_INPUT = ("seq bigint, is_warmup boolean, outcome string, partition int, "
                  "acked_offset bigint, read_count int, first_read_offset bigint, "
                  "reordered boolean, verdict string, in_broker_logs string, "
                  "uncommitted_read_count int")
SENDS_INPUT = "seq bigint, send_ts_ns bigint, ack_ts_ns bigint, outcome string"
RECEIPTS_INPUT = "consumer int, seq bigint, receive_ts_ns bigint, duplicate boolean"
PROCESSED_INPUT = "member int, incarnation int, seq bigint, partition int, offset bigint"
DELIVERIES_INPUT = "seq bigint, delivery string"
GROUP_LAG_INPUT = ("sample_ts_ns bigint, elapsed_s double, partition int, "
                   "committed_offset bigint, log_end_offset bigint, lag_msgs bigint")

# --------------------------------------------------------------------------- output schemas

#: The checker's counts of a trial, recomputed from ``verdicts.parquet``.
COUNT_COLUMNS: tuple[str, ...] = (
    "intended_msgs", "acked_msgs", "failed_msgs", "indeterminate_msgs", "unsent_msgs",
    "read_back_msgs", "ok_msgs", "acked_lost", "acked_lost_in_broker_logs",
    "acked_lost_absent_from_logs", "failed_but_present", "indeterminate_present", "unseen",
    "duplicates", "reordered", "aborted_msgs", "aborted_visible", "aborted_read_uncommitted",
)

#: Availability figures copied from ``trial.json``'s summary: column -> type.
AVAILABILITY_COLUMNS: dict[str, str] = {
    "unavailable_ms": "double", "consumer_gap_ms": "double", "leader_elected_ms": "double",
    "isr_full_ms": "double", "controller_elected_ms": "double", "lag_recovered_ms": "double",
    "old_leader_stepped_down_ms": "double", "producer_saw_new_leader_ms": "double",
    "heal_to_first_ack_ms": "double",
    "heal_to_first_receipt_ms": "double", "recovered": "boolean",
    "acks_after_fault": "bigint", "errors_by_type": "string",
}

#: ``events`` of ``trial.json`` -> the column of its time in seconds since ``t0_ns``.
EVENT_COLUMNS: dict[str, str] = {
    "fault_ts_ns": "fault_elapsed_s", "heal_ts_ns": "heal_elapsed_s",
    "leader_elected_ts_ns": "leader_elected_elapsed_s", "isr_full_ts_ns": "isr_full_elapsed_s",
    "rejoin_ts_ns": "rejoin_elapsed_s", "victim_end_ts_ns": "victim_end_elapsed_s",
    "controller_elected_ts_ns": "controller_elected_elapsed_s",
    "old_leader_stepped_down_ts_ns": "old_leader_stepped_down_elapsed_s",
    "producer_saw_new_leader_ts_ns": "producer_saw_new_leader_elapsed_s",
}

CONSUMER_FAULTS: tuple[str, ...] = ("kill-consumer", "leave-consumer", "cut-consumer")
"""The faults of a consumer group (``kafkalab.faults.spec.CONSUMER_FAULTS``)."""
DEFAULT_COMMIT = "after"
"""A consumer fault's commit strategy when its spec leaves it null."""

#: A consumer trial's group settings (``trial.json``'s summary, else its ``group``, else its
#: spec): column -> type. Null for a broker-fault trial.
GROUP_COLUMNS: dict[str, str] = {
    "commit": "string", "consumers": "int", "session_timeout_ms": "int",
    "heartbeat_interval_ms": "int", "auto_commit_interval_ms": "int", "batch_msgs": "int",
    "rejoin_after_s": "double", "static_membership": "boolean", "rebalance": "string",
    "fault_offset_ms": "double", "cut_s": "double",
}

#: A consumer trial's counts, recomputed from ``processed.parquet`` (records) and
#: ``deliveries.parquet`` (intended messages).
CONSUMER_COUNT_COLUMNS: tuple[str, ...] = (
    "processed_records", "processed_unique", "redelivered", "lost_unprocessed",
    "processed_not_in_topic",
)

#: A consumer trial's figures copied from ``trial.json``'s summary: column -> type.
REBALANCE_COLUMNS: dict[str, str] = {
    "rebalance_pause_ms": "double", "successor_assigned_ms": "double",
    "survivors_pause_ms": "double", "rejoin_pause_ms": "double",
    "expected_redelivered": "bigint", "expected_lost": "bigint", "offsets_explain": "boolean",
    "moved_partitions": "string", "drained": "boolean", "group_protocol": "string",
}

#: ``fault_trials``: column -> Spark type, in order.
TRIAL_SCHEMA: dict[str, str] = {
    "run_id": "string", "run_date": "string", "trial_id": "string", "profile": "string",
    "fault": "string", "acks": "string", "trial": "int", "status": "string", "error": "string",
    "rate_msgs_per_s": "double", "duration_s": "double", "warmup_s": "double",
    "fault_at_s": "double", "down_s": "double", "payload": "string", "partitions": "int",
    "client": "string", "max_in_flight": "int", "idempotence": "boolean",
    "txn_msgs": "int", "txn_abort_every": "int", "txn_committed_unacked": "bigint",
    "topic": "string",
    "target_broker": "int", "target_role": "string", "target_led_quorum": "boolean",
    "broker_version": "string", "broker_is_emulator": "boolean",
    **dict.fromkeys(COUNT_COLUMNS, "bigint"),
    **AVAILABILITY_COLUMNS,
    **dict.fromkeys(EVENT_COLUMNS.values(), "double"),
    "verdict": "string",
    **GROUP_COLUMNS,
    **dict.fromkeys(CONSUMER_COUNT_COLUMNS, "bigint"),
    **REBALANCE_COLUMNS,
    "reread_agrees": "boolean",
}

CELL_KEYS: tuple[str, ...] = ("profile", "fault", "acks", "commit", "static_membership",
                               "rebalance", "client", "max_in_flight", "idempotence",
                               "txn_msgs")
"""The columns that name a ``fault_cells`` row."""

#: Per-cell figures: the ``fault_trials`` column -> its statistics (over complete trials).
CELL_FIGURES: dict[str, tuple[str, ...]] = {
    "acked_lost": ("sum", "median", "max"), "duplicates": ("median", "max"),
    "reordered": ("median", "max"),
    "unavailable_ms": ("median", "max"), "leader_elected_ms": ("median", "max"),
    "isr_full_ms": ("median", "max"), "consumer_gap_ms": ("median", "max"),
    "controller_elected_ms": ("median", "max"),
    "producer_saw_new_leader_ms": ("median", "max"),
    "heal_to_first_ack_ms": ("median", "max"), "heal_to_first_receipt_ms": ("median", "max"),
    "redelivered": ("sum", "median", "max"), "lost_unprocessed": ("sum", "median", "max"),
    "rebalance_pause_ms": ("median", "max"),
    "aborted_msgs": ("sum",), "aborted_visible": ("sum", "max"),
    "aborted_read_uncommitted": ("sum",),
}

#: ``fault_cells``: column -> Spark type, in order.
CELL_SCHEMA: dict[str, str] = {
    "run_id": "string", "run_date": "string", "profile": "string", "fault": "string",
    "acks": "string", "commit": "string", "static_membership": "boolean", "rebalance": "string",
    "client": "string",
    "max_in_flight": "int",
    "idempotence": "boolean", "txn_msgs": "int", "broker_is_emulator": "boolean",
    "trials": "int",
    "trials_complete": "int", "trials_with_loss": "int",
    **{f"{col}_{stat}": ("bigint" if stat == "sum" else "double")
       for col, stats in CELL_FIGURES.items() for stat in stats},
}

#: ``fault_timeline``: column -> Spark type, in order.
TIMELINE_SCHEMA: dict[str, str] = {
    "run_id": "string", "trial_id": "string", "bin_start_s": "double",
    "acks_per_s": "double", "rx_per_s": "double", "sent_per_s": "double",
}

#: ``group_lag``: column -> Spark type, in order.
GROUP_LAG_SCHEMA: dict[str, str] = {
    "run_id": "string", "trial_id": "string", "sample_ts_ns": "bigint", "elapsed_s": "double",
    "partition": "int", "committed_offset": "bigint", "log_end_offset": "bigint",
    "lag_msgs": "bigint",
}


# --------------------------------------------------------------------------- extract


class FaultRun:
    """One run's fault samples: the verdict, send and receipt rows and the consumer trials'
    processed, delivery and group-lag rows (each with a ``trial_id`` column; empty when no
    trial has the file) and each trial's ``trial.json`` (``_run_date`` and ``_cell``, its
    ``cell.json`` or ``{}``, added) by trial id."""

    def __init__(self, run_id: str, verdicts: DataFrame, sends: DataFrame,
                 receipts: DataFrame, trials: dict[str, dict[str, Any]],
                 processed: DataFrame | None = None, deliveries: DataFrame | None = None,
                 group_lag: DataFrame | None = None) -> None:
        spark = verdicts.sparkSession
        self.run_id = run_id
        self.verdicts = verdicts
        self.sends = sends
        self.receipts = receipts
        self.trials = trials
        self.processed = (processed if processed is not None else
                          spark.createDataFrame([], f"{PROCESSED_INPUT}, trial_id string"))
        self.deliveries = (deliveries if deliveries is not None else
                           spark.createDataFrame([], f"{DELIVERIES_INPUT}, trial_id string"))
        self.group_lag = (group_lag if group_lag is not None else
                          spark.createDataFrame([], f"{GROUP_LAG_INPUT}, trial_id string"))


def extract(spark: SparkSession, faults_path: str, run_id: str) -> FaultRun:
    """Read one run's fault samples below ``faults_path`` (the ``faults/`` root).

    Raises :class:`_session.InputError` when the path is missing or holds no trial of the run.
    """
    if shared.local_path_missing(faults_path):
        raise shared.InputError(f"fault samples path not found: {faults_path}")
    found = shared.read_run_docs(spark, faults_path, run_id, "trial", "trial.json")
    if not found:
        raise shared.InputError(f"no fault trials (trial.json) for run id {run_id} under "
                                f"{faults_path}")
    cells = shared.read_run_docs(spark, faults_path, run_id, "trial", "cell.json")
    trials = {tid: {**doc, "_run_date": date, "_cell": cells.get(tid, ("", {}))[1]}
              for tid, (date, doc) in found.items()}

    def rows(file_glob: str, schema: str) -> DataFrame:
        return shared.read_run_rows(spark, faults_path, run_id, "trial", file_glob, schema)

    return FaultRun(
        run_id,
        verdicts=rows("verdicts.parquet", VERDICTS_INPUT),
        sends=rows("sends.parquet", SENDS_INPUT),
        receipts=rows("receipts-*.parquet", RECEIPTS_INPUT),
        trials=trials,
        processed=rows("processed.parquet", PROCESSED_INPUT),
        deliveries=rows("deliveries.parquet", DELIVERIES_INPUT),
        group_lag=rows("group_lag.parquet", GROUP_LAG_INPUT),
    )


# --------------------------------------------------------------------------- transform


def verdict_counts(verdicts: DataFrame) -> DataFrame:
    """The :data:`COUNT_COLUMNS` per ``trial_id`` (``docs/aggregates-schema.md``)."""
    lost = F.col("verdict") == "acked_lost"
    read = F.coalesce(F.col("read_count"), F.lit(0))
    return verdicts.groupBy("trial_id").agg(
        F.count(F.lit(1)).alias("intended_msgs"),
        *[shared.count_if(F.col("outcome") == o).alias(f"{o}_msgs")
          for o in ("acked", "failed", "indeterminate", "unsent")],
        shared.count_if(read > 0).alias("read_back_msgs"),
        shared.count_if(F.col("verdict") == "ok").alias("ok_msgs"),
        shared.count_if(lost).alias("acked_lost"),
        shared.count_if(lost & (F.length("in_broker_logs") > 0))
        .alias("acked_lost_in_broker_logs"),
        shared.count_if(lost & (F.col("in_broker_logs") == ""))
        .alias("acked_lost_absent_from_logs"),
        *[shared.count_if(F.col("verdict") == v).alias(v)
          for v in ("failed_but_present", "indeterminate_present", "unseen")],
        F.sum(F.when(read > 0, read - 1).otherwise(0)).cast("long").alias("duplicates"),
        shared.count_if(F.col("reordered")).alias("reordered"),
        shared.count_if(F.col("outcome") == "aborted").alias("aborted_msgs"),
        shared.count_if(F.col("verdict") == "aborted_visible").alias("aborted_visible"),
        # null unless the trial re-read read_uncommitted too (a transactional trial)
        F.when(F.count("uncommitted_read_count") > 0,
               shared.count_if((F.col("outcome") == "aborted")
                               & (F.col("uncommitted_read_count") > 0)))
        .alias("aborted_read_uncommitted"),
    )


def consumer_counts(processed: DataFrame, deliveries: DataFrame) -> DataFrame:
    """The :data:`CONSUMER_COUNT_COLUMNS` per ``trial_id`` (``docs/aggregates-schema.md``):
    processed rows, distinct ``(partition, offset)`` among them, the rows beyond the first of
    each (``redelivered``); intended messages the topic holds that no member processed
    (``lost_unprocessed``) and those processed though the re-read did not find them. A
    trial with only one of the two files gets nulls for the other's counts."""
    recs = processed.groupBy("trial_id").agg(
        F.count(F.lit(1)).cast("long").alias("processed_records"),
        F.count_distinct("partition", "offset").cast("long").alias("processed_unique"))
    recs = recs.withColumn("redelivered",
                           F.col("processed_records") - F.col("processed_unique"))
    msgs = deliveries.groupBy("trial_id").agg(
        shared.count_if(F.col("delivery") == "lost").alias("lost_unprocessed"),
        shared.count_if(F.col("delivery") == "processed_not_in_topic")
        .alias("processed_not_in_topic"))
    return recs.join(msgs, "trial_id", "full")


def _elapsed_s(ts: Any, t0: Any) -> float | None:
    if ts is None or t0 is None:
        return None
    return (int(ts) - int(t0)) / 1e9


def _t0_of(doc: dict[str, Any]) -> int | None:
    t0 = (doc.get("events") or {}).get("t0_ns")
    if t0 is None:
        t0 = doc["_cell"].get("t0_ns")
    return None if t0 is None else int(t0)


def _trial_verdict(status: Any, counts: dict[str, Any] | None, recovered: Any) -> str | None:
    """The engine's verdict when the summary lacks it: failed, loss, not recovered, ok."""
    if status != "complete":
        return "failed"
    if counts is None:
        return None
    if counts.get("acked_lost"):
        return "loss"
    if recovered is False:
        return "not recovered"
    return "aborted visible" if counts.get("aborted_visible") else "ok"


def _group_row(doc: dict[str, Any], group_counts: dict[str, Any] | None) -> dict[str, Any]:
    """The consumer columns of a ``fault_trials`` row (all null for a broker-fault trial:
    one whose summary, ``group`` and spec name no commit strategy; a consumer fault whose
    spec leaves it null, e.g. a trial that failed before its group started, commits
    ``after``)."""
    spec = doc.get("spec") or {}
    summary = doc.get("summary") or {}
    group = doc.get("group") or {}

    def pick(key: str) -> Any:
        for source in (summary, group, spec):
            if source.get(key) is not None:
                return source[key]
        return None

    cols = (*GROUP_COLUMNS, *CONSUMER_COUNT_COLUMNS, *REBALANCE_COLUMNS, "reread_agrees")
    commit = pick("commit")
    if commit is None and pick("fault") in CONSUMER_FAULTS:
        commit = DEFAULT_COMMIT  # the spec's null commit of a consumer fault
    if commit is None:
        return dict.fromkeys(cols)
    row: dict[str, Any] = {col: pick(col) for col in GROUP_COLUMNS}
    row["commit"] = commit
    if row["commit"] != "auto":  # the spec's default interval applies to auto only
        row["auto_commit_interval_ms"] = summary.get("auto_commit_interval_ms")
    for col in CONSUMER_COUNT_COLUMNS:
        row[col] = None if group_counts is None else group_counts.get(col)
    for col in REBALANCE_COLUMNS:
        row[col] = summary.get(col)
    moved = summary.get("moved_partitions")
    row["moved_partitions"] = (",".join(str(p) for p in moved) if isinstance(moved, list)
                               else moved)
    agrees = summary.get("reread_agrees")
    recount = row["processed_not_in_topic"]
    row["reread_agrees"] = (None if agrees is None and recount is None
                            else agrees is not False and not recount)
    return row


def _trial_row(run_id: str, trial_id: str, doc: dict[str, Any],
               counts: dict[str, Any] | None,
               group_counts: dict[str, Any] | None = None) -> dict[str, Any]:
    """One ``fault_trials`` row from ``trial.json``, the trial's verdict counts and (a
    consumer trial) its processed / delivery counts."""
    spec = doc.get("spec") or {}
    summary = doc.get("summary") or {}
    cluster = doc.get("cluster") or doc["_cell"].get("cluster") or {}
    target = doc.get("target") or {}
    events = doc.get("events") or {}

    def pick(key: str, *more: Any) -> Any:
        for value in (spec.get(key), summary.get(key), *more):
            if value is not None:
                return value
        return None

    row: dict[str, Any] = {
        "run_id": run_id, "run_date": doc.get("run_date") or doc["_run_date"],
        "trial_id": trial_id, "status": doc.get("status") or summary.get("status"),
        "error": doc.get("error") or summary.get("error"),
        "profile": pick("profile"), "fault": pick("fault"),
        "acks": next((str(v) for v in (doc.get("acks"), summary.get("acks"), spec.get("acks"))
                      if v is not None), None),
        "trial": pick("trial"), "rate_msgs_per_s": pick("rate_msgs_per_s"),
        "duration_s": pick("duration_s"), "warmup_s": pick("warmup_s"),
        "fault_at_s": pick("fault_at_s"), "down_s": summary.get("down_s", spec.get("down_s")),
        "payload": pick("payload"), "partitions": pick("partitions"), "client": pick("client"),
        "max_in_flight": summary.get("max_in_flight"),
        "idempotence": summary.get("idempotence"),
        "txn_msgs": pick("txn_msgs"), "txn_abort_every": pick("txn_abort_every"),
        "txn_committed_unacked": summary.get("txn_committed_unacked"),
        "topic": doc.get("topic"),
        "target_broker": target.get("broker", summary.get("target_broker")),
        "target_role": target.get("role") or summary.get("target_role"),
        "target_led_quorum": target.get("led_quorum", summary.get("target_led_quorum")),
        "broker_version": cluster.get("version"),
        "broker_is_emulator": cluster.get("is_emulator", summary.get("is_emulator")),
    }
    for col in COUNT_COLUMNS:
        row[col] = None if counts is None else counts.get(col)
    for col in AVAILABILITY_COLUMNS:
        row[col] = summary.get(col)
    errors = summary.get("errors_by_type")
    row["errors_by_type"] = (json.dumps(errors, sort_keys=True) if isinstance(errors, dict)
                             else errors)
    t0 = _t0_of(doc)
    for key, col in EVENT_COLUMNS.items():
        row[col] = _elapsed_s(events.get(key), t0)
    row["verdict"] = summary.get("verdict") or _trial_verdict(row["status"], counts,
                                                              row["recovered"])
    row.update(_group_row(doc, group_counts))
    return row


def _cells(trials: DataFrame) -> DataFrame:
    """``fault_cells`` from ``fault_trials``: one row per (profile, fault, acks, commit,
    static membership, rebalance protocol, client, max in flight, idempotence; the commit, the
    membership and the protocol null for broker faults (the protocol also where a trial left
    the clients' default, eager); max in flight and
    idempotence as the trial's producer ran: null for a consumer fault's trial and for
    trials measured before 2026-11-29, which did not record them); the figures are over the complete trials (exact
    medians: the mean of the middle two when even)."""
    complete = F.col("status") == "complete"
    aggs: list[Column] = [
        F.min("run_date").alias("run_date"),
        F.bool_or(F.coalesce(F.col("broker_is_emulator"), F.lit(False)))
        .alias("broker_is_emulator"),
        F.count(F.lit(1)).cast("int").alias("trials"),
        shared.count_if(complete).cast("int").alias("trials_complete"),
        shared.count_if(complete & (F.col("acked_lost") > 0)).cast("int").alias("trials_with_loss"),
    ]
    for col, stats in CELL_FIGURES.items():
        value = F.when(complete, F.col(col))
        for stat in stats:
            if stat == "sum":
                agg = F.sum(value)
            elif stat == "median":
                agg = F.percentile(value, F.lit(0.5))
            else:
                agg = F.max(value)
            aggs.append(agg.alias(f"{col}_{stat}"))
    out = trials.groupBy("run_id", *CELL_KEYS).agg(*aggs)
    return (out.select(*[F.col(c).cast(t).alias(c) for c, t in CELL_SCHEMA.items()])
            .orderBy(*CELL_KEYS))


def _timeline(data: FaultRun, spark: SparkSession) -> DataFrame:
    """``fault_timeline``: per trial and 100 ms bin of elapsed time (from 0 to the last bin
    holding an event, empty bins as 0), acks, first receipts and sends per second."""
    t0s = spark.createDataFrame(
        [(tid, _t0_of(doc)) for tid, doc in data.trials.items() if _t0_of(doc) is not None],
        "trial_id string, _t0 bigint")
    sends = data.sends
    events = (
        sends.where(F.col("send_ts_ns").isNotNull())
        .select("trial_id", F.col("send_ts_ns").alias("_ts"), F.lit("sent").alias("_kind"))
        .unionByName(sends.where((F.col("outcome") == "acked") & F.col("ack_ts_ns").isNotNull())
                     .select("trial_id", F.col("ack_ts_ns").alias("_ts"),
                             F.lit("acks").alias("_kind")))
        .unionByName(data.receipts
                     .where(~F.coalesce(F.col("duplicate"), F.lit(False))
                            & F.col("receive_ts_ns").isNotNull())
                     .select("trial_id", F.col("receive_ts_ns").alias("_ts"),
                             F.lit("rx").alias("_kind")))
    )
    binned = (events.join(F.broadcast(t0s), "trial_id")
              .where(F.col("_ts") >= F.col("_t0"))
              .withColumn("_bin", F.floor((F.col("_ts") - F.col("_t0"))
                                          / F.lit(int(BIN_S * 1e9))).cast("long")))
    per_bin = binned.groupBy("trial_id", "_bin").agg(
        *[shared.count_if(F.col("_kind") == k).alias(f"_{k}") for k in ("acks", "rx", "sent")])
    grid = (per_bin.groupBy("trial_id").agg(F.max("_bin").alias("_last"))
            .select("trial_id", F.explode(F.sequence(F.lit(0).cast("long"), F.col("_last")))
                    .alias("_bin")))
    per_s = 1.0 / BIN_S
    return (grid.join(per_bin, ["trial_id", "_bin"], "left")
            .fillna(0, ["_acks", "_rx", "_sent"])
            .select(F.lit(data.run_id).alias("run_id"), "trial_id",
                    (F.col("_bin") / F.lit(round(per_s))).cast("double").alias("bin_start_s"),
                    *[(F.col(f"_{k}") * F.lit(per_s)).cast("double").alias(f"{k}_per_s")
                      for k in ("acks", "rx", "sent")])
            .orderBy("trial_id", "bin_start_s"))


def _group_lag(data: FaultRun, spark: SparkSession) -> DataFrame:
    """``group_lag``: the consumer trials' offset samples, one row per (trial, sample,
    partition); ``elapsed_s`` from the trial's t0 (the file's own when t0 is unknown)."""
    t0s = spark.createDataFrame(
        [(tid, _t0_of(doc)) for tid, doc in data.trials.items()], "trial_id string, _t0 bigint")
    elapsed = F.coalesce((F.col("sample_ts_ns") - F.col("_t0")) / F.lit(1e9), F.col("elapsed_s"))
    return (data.group_lag.join(F.broadcast(t0s), "trial_id", "left")
            .withColumn("elapsed_s", elapsed)
            .withColumn("run_id", F.lit(data.run_id))
            .select(*[F.col(c).cast(t).alias(c) for c, t in GROUP_LAG_SCHEMA.items()])
            .orderBy("trial_id", "sample_ts_ns", "partition"))


def transform(data: FaultRun) -> tuple[DataFrame, DataFrame, DataFrame, DataFrame]:
    """``(fault_trials, fault_cells, fault_timeline, group_lag)`` of one run (two Spark
    actions here: the verdict counts and the consumer counts, collected to the driver; the
    rest is lazy)."""
    spark = data.verdicts.sparkSession
    counts = {r["trial_id"]: r.asDict() for r in verdict_counts(data.verdicts).collect()}
    group_counts = {r["trial_id"]: r.asDict()
                    for r in consumer_counts(data.processed, data.deliveries).collect()}
    rows = [_trial_row(data.run_id, tid, doc, counts.get(tid), group_counts.get(tid))
            for tid, doc in sorted(data.trials.items())]
    trials = shared.driver_frame(spark, rows, TRIAL_SCHEMA)
    return trials, _cells(trials), _timeline(data, spark), _group_lag(data, spark)


# --------------------------------------------------------------------------- load


def run(spark: SparkSession, faults_path: str, out_path: str, run_id: str) -> dict[str, int]:
    """Extract, transform and load one run; returns the rows written per table. The tables
    are swapped in for the run's directory as a set (:func:`_session.swap_in_run_tables`)."""
    tables = transform(extract(spark, faults_path, run_id))
    return shared.write_run_tables(dict(zip(TABLES, tables, strict=True)), out_path, run_id)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the process exit code."""
    return shared.run_tables_main(
        argv, run, prog="aggregate_faults",
        description="Aggregate one fault run into trial, cell, timeline and group-lag tables "
                    "(Parquet).",
        source=("--faults", "fault samples",
                "fault samples root (<data>/faults), a local dir or Hadoop URI"),
        out_help="fault aggregates root; the run goes to <out>/run_id=<id>/")


if __name__ == "__main__":
    sys.exit(main())
