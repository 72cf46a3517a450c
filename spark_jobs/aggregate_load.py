"""Aggregate one load run (open loop, HYDRA fan-out) into cell, consumer and lag tables.

Extract the run's "load samples" (``docs/metrics-schema.md``: per cell ``sends.parquet``,
``receipts-NNN.parquet``, ``lag-NNN.parquet`` and ``cell.json`` below
``<load>/run_date=<d>/run_id=<id>/cell=<cell_id>/``), transform them by the definitions of
``docs/aggregates-schema.md`` ("Load aggregates": the same as the engine's local summary,
``kafkalab.load.summary.summarize_cell``) and load three Parquet tables::

    <out>/run_id=<id>/load_cells.parquet      one row per cell
    <out>/run_id=<id>/load_consumers.parquet  one row per (cell, consumer)
    <out>/run_id=<id>/load_lag.parquet        one row per (cell, consumer, lag sample)

The three are written into a hidden staging directory first and then swapped in for the
run's directory as a whole: a reader sees the earlier set or the new one, never a mix, and
re-running a run replaces it (other runs are not touched).

Usage::

    spark-submit spark_jobs/aggregate_load.py --load lab-data/load \
        --out lab-data/aggregates/load --run-id ID
    python spark_jobs/aggregate_load.py ...            # builds its own local session

Percentiles are exact nearest-rank (``kafkalab.stats``): each population is gathered per
group with ``sort_array(collect_list(...))`` and indexed at the ranks, lost messages are
censored (+inf: they sort after every received value, so a rank beyond the received values
is "censored"), and a percentile needs ``MIN_SAMPLES`` values. ``cell.json`` files are small
and read on the driver.

Needs PySpark and ``_session.py`` (beside this script, or shipped with ``--py-files``), not
the ``kafkalab`` package. Exit codes: 0 success, 2 bad input (missing path, no cell of the
run, bad arguments).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

if __package__:  # imported as spark_jobs.aggregate_load (tests, tools)
    from . import _gx
    from . import _session as shared
    from . import validate_load as validator
else:  # run as a script: _session.py sits beside it or is shipped with --py-files
    import _gx  # type: ignore[no-redef]
    import _session as shared  # type: ignore[no-redef]
    import validate_load as validator  # type: ignore[no-redef]

__all__ = [
    "CELL_COLUMNS",
    "CELL_SCHEMA",
    "CONSUMER_SCHEMA",
    "LAG_SCHEMA",
    "LOAD_METRICS",
    "LOAD_PERCENTILES",
    "SCHEMA_VERSION",
    "TABLES",
    "LoadRun",
    "extract",
    "host_other_cpu_pct",
    "main",
    "run",
    "transform",
]

SCHEMA_VERSION = 1
"""Version of the load aggregates schema (``docs/aggregates-schema.md``)."""

TABLES: tuple[str, ...] = ("load_cells", "load_consumers", "load_lag")
"""The tables written per run, as ``<out>/run_id=<id>/<table>.parquet``."""

LOAD_PERCENTILES: dict[str, tuple[int, int]] = {
    "p50": (1, 2), "p90": (9, 10), "p99": (99, 100), "p999": (999, 1000)}
"""The percentiles of every load metric, as exact fractions (``kafkalab.stats``); ``max``
comes beside them."""

LOAD_METRICS: tuple[str, ...] = ("e2e", "service_e2e", "publish_delay", "ack_latency")
"""The latency metrics of a cell: columns ``<metric>_<p>_ms`` for ``p`` in
:data:`LOAD_PERCENTILES` and ``max``."""

PERCENTILE_METHOD = "exact nearest-rank"

# --------------------------------------------------------------------------- input schemas
# The columns the job reads, with their types (docs/metrics-schema.md, "Load samples"). Files
# are read with these schemas: a column a file lacks reads as null, extra columns are ignored.

SENDS_INPUT = ("seq bigint, producer_id int, is_warmup boolean, intended_ts_ns bigint, "
               "send_ts_ns bigint, ack_ts_ns bigint, outcome string, error string, "
               "partition int, offset bigint, publish_delay_ms double, ack_latency_ms double")
RECEIPTS_INPUT = ("consumer int, shard int, seq bigint, producer_id int, partition int, "
                  "offset bigint, intended_ts_ns bigint, send_ts_ns bigint, "
                  "receive_ts_ns bigint, e2e_latency_ms double, "
                  "service_e2e_latency_ms double, duplicate boolean, after_stop boolean, "
                  "is_warmup boolean")
LAG_INPUT = ("consumer int, shard int, partition int, sample_ts_ns bigint, elapsed_s double, "
             "log_end_offset bigint, position bigint, lag_msgs bigint, received_msgs bigint, "
             "paused boolean")

# --------------------------------------------------------------------------- output schemas

#: Spec columns of a cell (``kafkalab.load.spec.LoadCellSpec``'s fields) and their types.
SPEC_COLUMNS: dict[str, str] = {
    "client": "string", "payload": "string", "encoding": "string", "profile": "string",
    "acks": "string", "consumers": "int", "rate_msgs_per_s": "double", "duration_s": "double",
    "warmup_s": "double", "partitions": "int", "consumer_mode": "string",
    "consumers_per_shard": "int", "drain_s": "double", "pause_at_s": "double",
    "pause_for_s": "double", "lag_interval_s": "double", "e2e_p99_objective_ms": "double",
    "message_timeout_s": "double", "txn_msgs": "int", "txn_abort_every": "int",
    "link_delay_ms": "double", "client_link_delay_ms": "double", "fetch_from_follower": "boolean",
    "thin_consumer": "int", "thin_link_kbps": "int", "thin_link_delay_ms": "double",
}


def _metric_columns() -> dict[str, str]:
    cols: dict[str, str] = {}
    for metric in LOAD_METRICS:
        for p in (*LOAD_PERCENTILES, "max"):
            cols[f"{metric}_{p}_ms"] = "double"
        for p in LOAD_PERCENTILES:
            cols[f"{metric}_{p}_ms_reason"] = "string"
        if metric == "e2e":
            for p in shared.stats.CI_PERCENTILES:
                cols[f"e2e_{p}_ms_ci_low"] = "double"
                cols[f"e2e_{p}_ms_ci_high"] = "double"
    return cols


#: ``load_cells``: column -> Spark type, in order.
CELL_SCHEMA: dict[str, str] = {
    "run_id": "string", "run_date": "string", "cell_id": "string", "status": "string",
    "error": "string",
    **SPEC_COLUMNS,
    "topic": "string", "cluster_flavor": "string", "broker_version": "string",
    "broker_is_emulator": "boolean", "broker_count": "int", "client_version": "string",
    "payload_bytes": "bigint", "wire_bytes": "bigint",
    "window_s": "double",
    "target_rate_msgs_per_s": "double", "achieved_rate_msgs_per_s": "double",
    "achieved_mb_per_s": "double",
    "intended_msgs": "bigint", "acked_msgs": "bigint", "failed_msgs": "bigint",
    "indeterminate_msgs": "bigint", "unsent_msgs": "bigint", "aborted_msgs": "bigint",
    "sent_msgs": "bigint",
    "expected_msgs": "bigint", "warmup_msgs": "bigint",
    "rx_rate_msgs_per_s_avg": "double", "rx_rate_msgs_per_s_min": "double",
    "missing_msgs": "bigint", "late_msgs": "bigint", "unexpected_msgs": "bigint",
    "loss_pct": "double", "late_pct": "double", "failing_clients": "int", "duplicates": "bigint",
    **_metric_columns(),
    "ci_confidence": "double",
    "lag_peak_msgs": "bigint", "lag_end_msgs": "bigint", "lag_median_msgs": "double",
    "lag_growing": "boolean", "client_backlog_peak_msgs": "bigint",
    "pause_lag_peak_msgs": "bigint", "time_to_drain_s": "double",
    "drain_rate_msgs_per_s": "double",
    "client_bound": "boolean", "max_process_cpu_frac": "double", "broker_cpu_frac": "double",
    "host_cpu_busy_frac": "double", "host_busy": "boolean", "host_other_cpu_pct": "double",
    "saturated": "boolean", "cross_host_clock": "boolean",
    "percentile_method": "string",
}
CELL_COLUMNS: tuple[str, ...] = tuple(CELL_SCHEMA)

HOST_BUSY_FRAC = 0.9
"""``host_busy`` above this share of all the host's CPUs (kafkalab.load.summary.HOST_BUSY_FRAC;
tests/unit/test_lists_in_step.py keeps them equal)."""

#: ``load_consumers``: column -> Spark type, in order.
CONSUMER_SCHEMA: dict[str, str] = {
    "run_id": "string", "run_date": "string", "cell_id": "string", "consumer": "int",
    "shard": "int", "expected_msgs": "bigint", "unique_msgs": "bigint", "duplicates": "bigint",
    "late_msgs": "bigint", "missing_msgs": "bigint", "gaps": "bigint",
    "unexpected_msgs": "bigint", "rx_rate_msgs_per_s": "double", "failing": "boolean",
    "e2e_p50_ms": "double", "e2e_p99_ms": "double", "e2e_max_ms": "double",
    "service_e2e_p99_ms": "double", "lag_peak_msgs": "bigint", "time_to_drain_s": "double",
}

#: ``load_lag``: column -> Spark type, in order.
LAG_SCHEMA: dict[str, str] = {
    "run_id": "string", "run_date": "string", "cell_id": "string", "consumer": "int",
    "shard": "int", "sample_ts_ns": "bigint", "elapsed_s": "double", "lag_msgs": "bigint",
    "partitions_sampled": "int", "received_msgs": "bigint", "acked_msgs": "bigint",
    "client_backlog_msgs": "bigint", "paused": "boolean",
}

_META_SCHEMA = ("cell_id string, _acks string, _rate double, _consumers int, _cps int, "
                "_stop_ns bigint, _measure_start_ns bigint, _pause_start_ns bigint, "
                "_pause_end_ns bigint, _drain_threshold double, _lag_interval_ns bigint")


# --------------------------------------------------------------------------- extract


class LoadRun:
    """One run's load samples: the three row sets (each with a ``cell_id`` column) and the
    cells' ``cell.json`` documents by cell id (each with ``_run_date`` added)."""

    def __init__(self, run_id: str, sends: DataFrame, receipts: DataFrame, lag: DataFrame,
                 cells: dict[str, dict[str, Any]]) -> None:
        self.run_id = run_id
        self.sends = sends
        self.receipts = receipts
        self.lag = lag
        self.cells = cells


def extract(spark: SparkSession, load_path: str, run_id: str) -> LoadRun:
    """Read one run's load samples below ``load_path`` (the ``load/`` root).

    Raises :class:`_session.InputError` when the path is missing or holds no cell of the run.
    """
    if shared.local_path_missing(load_path):
        raise shared.InputError(f"load samples path not found: {load_path}")
    docs = shared.read_run_docs(spark, load_path, run_id, "cell", "cell.json")
    if not docs:
        raise shared.InputError(
            f"no load cells (cell.json) for run id {run_id} under {load_path}")

    def rows(file_glob: str, schema: str) -> DataFrame:
        return shared.read_run_rows(spark, load_path, run_id, "cell", file_glob, schema)

    return LoadRun(
        run_id,
        sends=rows("sends.parquet", SENDS_INPUT),
        receipts=rows("receipts-*.parquet", RECEIPTS_INPUT),
        lag=rows("lag-*.parquet", LAG_INPUT),
        cells={cell_id: {**doc, "_run_date": run_date}
               for cell_id, (run_date, doc) in docs.items()},
    )


# --------------------------------------------------------------------------- cell facts


def _acks_of(doc: dict[str, Any]) -> str | None:
    """The cell's effective acks: the spec's, else the summary's, else the producer's
    setting, else the ``acks-<a>`` part of the cell id. ``-1`` is ``all``."""
    spec = doc.get("spec") or {}
    producer = (doc.get("client_settings") or {}).get("producer") or {}
    for value in (spec.get("acks"), doc.get("acks"), (doc.get("summary") or {}).get("acks"),
                  producer.get("acks"), producer.get("request.required.acks")):
        if value is not None:
            text = str(value)
            return "all" if text == "-1" else text
    for part in str(doc.get("cell_id") or "").split("."):
        if part.startswith("acks-"):
            return part.removeprefix("acks-")
    return None


def _num(value: Any) -> float | None:
    return None if value is None else float(value)


def host_other_cpu_pct(doc: dict[str, Any]) -> float | None:
    """The share of the host's CPUs busy with work other than the lab's while the cell ran,
    percent of all cores (the busy-host rule's figure): ``host_cpu_busy_frac`` less the
    CPU fractions of the ``processes`` on the producer's host and ``broker_cpu_frac``, over
    ``host_cpu_count``; never below 0; None when the host's figures are unknown. The same
    as ``kafkalab.load.cpu.other_cpu_pct`` (a unit test keeps them equal)."""
    busy, cpus = _num(doc.get("host_cpu_busy_frac")), _num(doc.get("host_cpu_count"))
    if busy is None or not cpus:
        return None
    procs = doc.get("processes") or []
    here = next((p.get("host") for p in procs if p.get("role") == "producer"), None)
    lab_cores = (sum(_num(p.get("cpu_frac")) or 0.0 for p in procs if p.get("host") == here)
                 + (_num(doc.get("broker_cpu_frac")) or 0.0))
    return round(max(0.0, busy - lab_cores / cpus) * 100.0, 3)


def _meta(cell_id: str, doc: dict[str, Any]) -> dict[str, Any]:
    """The per-cell constants the row computations need (one row of ``_META_SCHEMA``)."""
    spec = doc.get("spec") or {}
    rate = _num(spec.get("rate_msgs_per_s")) or 0.0
    lag_interval = _num(spec.get("lag_interval_s")) or 0.0
    pause = doc.get("pause") or {}
    return {
        "cell_id": cell_id, "_acks": _acks_of(doc), "_rate": rate,
        "_consumers": int(spec.get("consumers") or 0),
        "_cps": int(spec.get("consumers_per_shard") or 0) or None,
        "_stop_ns": doc.get("stop_ts_ns"), "_measure_start_ns": doc.get("measure_start_ns"),
        "_pause_start_ns": pause.get("start_ns"), "_pause_end_ns": pause.get("end_ns"),
        "_drain_threshold": max(1.0, rate * lag_interval),
        "_lag_interval_ns": int(lag_interval * 1e9),
    }


def _sorted_list(cond: Column, value: Column) -> Column:
    """The ascending list of ``value`` over the rows where ``cond`` holds (nulls left out)."""
    return F.sort_array(F.collect_list(F.when(cond, value)))


def _pick(values: Column, rank: int | None) -> Column:
    """The value at 1-based ``rank`` of an ascending list of received values whose population
    continues with censored (+inf) values: null when the rank is undefined or censored."""
    if rank is None:
        return F.lit(None).cast("double")
    return F.when(F.size(values) >= rank, F.try_element_at(values, F.lit(rank))).cast("double")


def _percentiles(values: Column, n: int, prefix: str, reasons: bool = True,
                 ci: bool = False) -> list[tuple[str, Column]]:
    """``(name, expression)`` of ``<prefix>_<p>_ms`` (and ``_reason``, ``max``, CIs) of one
    population of ``n`` values whose received part is the ascending list ``values`` (the
    rest censored), as ``kafkalab.stats.summarize`` computes them."""
    out: list[tuple[str, Column]] = []
    for name, (num, den) in LOAD_PERCENTILES.items():
        defined = n >= shared.stats.MIN_SAMPLES[name] and n > 0
        rank = shared.stats.fraction_rank(n, num, den) if defined else None
        out.append((f"{prefix}_{name}_ms", _pick(values, rank)))
        if reasons:
            if rank is None:
                reason: Column = F.lit(f"n<{shared.stats.MIN_SAMPLES[name]}")
            else:
                reason = F.when(F.size(values) < rank, F.lit("censored"))
            out.append((f"{prefix}_{name}_ms_reason", reason.cast("string")))
    out.append((f"{prefix}_max_ms", F.try_element_at(values, F.lit(-1)).cast("double") if n > 0
                else F.lit(None).cast("double")))
    if ci:
        for name in shared.stats.CI_PERCENTILES:
            num, den = LOAD_PERCENTILES[name]
            lo, hi = shared.stats.quantile_ci_ranks(n, num / den, shared.stats.CI_CONFIDENCE)
            out.append((f"{prefix}_{name}_ms_ci_low", _pick(values, lo)))
            out.append((f"{prefix}_{name}_ms_ci_high", _pick(values, hi)))
    return out


def _by_cell(per_cell: dict[str, list[tuple[str, Column]]]) -> list[Column]:
    """One column per name of the per-cell lists (same names in every cell) whose value in
    each cell's rows is that cell's expression."""
    names = [name for name, _ in next(iter(per_cell.values()), [])]
    out = []
    for i, name in enumerate(names):
        expr: Column | None = None
        for cell_id, cols in per_cell.items():
            cond = F.col("cell_id") == cell_id
            expr = F.when(cond, cols[i][1]) if expr is None else expr.when(cond, cols[i][1])
        out.append((expr if expr is not None else F.lit(None)).alias(name))
    return out


# --------------------------------------------------------------------------- transform


class _Cells:
    """The run's cells as every step sees them: ``meta`` (one broadcast row of
    ``_META_SCHEMA`` per cell), the cell ids in order and each cell's number of consumers."""

    def __init__(self, spark: SparkSession, docs: dict[str, dict[str, Any]]) -> None:
        rows = [_meta(cell_id, doc) for cell_id, doc in sorted(docs.items())]
        self.meta = F.broadcast(spark.createDataFrame(rows, _META_SCHEMA))
        self.ids: list[str] = [m["cell_id"] for m in rows]
        self.consumers: dict[str, int] = {m["cell_id"]: int(m["_consumers"]) for m in rows}


_ZERO_COUNTS: dict[str, Any] = {
    "intended_msgs": 0, "acked_msgs": 0, "failed_msgs": 0, "indeterminate_msgs": 0,
    "unsent_msgs": 0, "aborted_msgs": 0, "sent_msgs": 0, "expected_msgs": 0, "warmup_msgs": 0, "_n_publish": 0,
    "_n_ack": 0, "_first_intended_ns": None, "_last_send_ns": None}
"""The send counts of a cell without a send row."""


def _send_flags() -> tuple[Column, Column, Column, Column]:
    """``(window, sent, acked, expected)`` of a row of :func:`_windowed_sends`: measured
    (not warm-up); sent in the window; acked in the window; in the expected set E (every
    sent message under acks=0, else every acked one)."""
    window = F.col("_window")
    sent = window & F.col("send_ts_ns").isNotNull()
    acked = window & (F.col("outcome") == "acked")
    return window, sent, acked, F.when(F.col("_acks") == "0", sent).otherwise(acked)


def _windowed_sends(sends: DataFrame, cells: _Cells) -> DataFrame:
    """The run's send rows with their cell's constants and ``_window`` (not warm-up)."""
    return (sends.where(F.col("cell_id").isin(cells.ids)).join(cells.meta, "cell_id")
            .withColumn("_window", ~F.coalesce(F.col("is_warmup"), F.lit(False))))


def _send_figures(sends: DataFrame) -> DataFrame:
    """One row per cell of :func:`_windowed_sends`: the producer's counts, the population
    sizes and sorted lists of publish delay and ack latency, the first intended and last
    send time."""
    window, sent, acked, expected = _send_flags()
    count_if = shared.count_if
    return sends.groupBy("cell_id").agg(
        count_if(window).alias("intended_msgs"),
        count_if(acked).alias("acked_msgs"),
        count_if(window & (F.col("outcome") == "failed")).alias("failed_msgs"),
        count_if(window & (F.col("outcome") == "indeterminate")).alias("indeterminate_msgs"),
        count_if(window & (F.col("outcome") == "unsent")).alias("unsent_msgs"),
        count_if(window & (F.col("outcome") == "aborted")).alias("aborted_msgs"),
        count_if(sent).alias("sent_msgs"),
        count_if(expected).alias("expected_msgs"),
        count_if(~window).alias("warmup_msgs"),
        count_if(sent & F.col("publish_delay_ms").isNotNull()).alias("_n_publish"),
        count_if(acked & F.col("ack_latency_ms").isNotNull()).alias("_n_ack"),
        F.min(F.when(window, F.col("intended_ts_ns"))).alias("_first_intended_ns"),
        F.max(F.when(sent, F.col("send_ts_ns"))).alias("_last_send_ns"),
        _sorted_list(sent, F.col("publish_delay_ms")).alias("_publish"),
        _sorted_list(acked, F.col("ack_latency_ms")).alias("_ack"),
    )


def _send_counts(send_figures: DataFrame, cells: _Cells) -> dict[str, dict[str, Any]]:
    """The counts of :func:`_send_figures` by cell id, on the driver (one small action);
    a cell without sends gets zeros."""
    counts = {r["cell_id"]: r.asDict()
              for r in send_figures.drop("_publish", "_ack").collect()}
    for cell_id in cells.ids:
        counts.setdefault(cell_id, {"cell_id": cell_id, **_ZERO_COUNTS})
    return counts


def _expected_set(sends: DataFrame) -> DataFrame:
    """The expected set E of each cell, numbered ``_e_idx`` from 0 in (producer, seq) order,
    with its ack time and ``_in_e`` (true)."""
    expected = _send_flags()[3]
    e_order = Window.partitionBy("cell_id").orderBy("producer_id", "seq")
    return (sends.where(expected)
            .select("cell_id", "producer_id", "seq", F.col("ack_ts_ns").alias("_ack_ts_ns"),
                    (F.row_number().over(e_order) - 1).alias("_e_idx"),
                    F.lit(True).alias("_in_e")))


def _measured_receipts(receipts: DataFrame, cells: _Cells, exp_set: DataFrame) -> DataFrame:
    """The run's non-warm-up receipts joined once with E: ``_in_e`` (an expected message),
    ``_first`` (not a duplicate), ``_after_stop`` (received after the producers stopped),
    ``_e_idx``."""
    return (receipts.where(F.col("cell_id").isin(cells.ids))
            .where(~F.coalesce(F.col("is_warmup"), F.lit(False)))
            .join(cells.meta.select("cell_id", "_stop_ns"), "cell_id")
            .join(exp_set.drop("_ack_ts_ns"), ["cell_id", "producer_id", "seq"], "left")
            .withColumn("_in_e", F.coalesce(F.col("_in_e"), F.lit(False)))
            .withColumn("_first", ~F.coalesce(F.col("duplicate"), F.lit(False)))
            .withColumn("_after_stop", F.coalesce(
                F.col("after_stop"), F.col("receive_ts_ns") > F.col("_stop_ns"), F.lit(False))))


def _first_of_e() -> Column:
    """A receipt of :func:`_measured_receipts` that is an expected message's first."""
    return F.col("_first") & F.col("_in_e")


def _receipt_figures(receipts: DataFrame) -> DataFrame:
    """One row per (cell, consumer) that received anything: its counts and the sorted
    latencies and E indices of its first receipts of E."""
    first_e = _first_of_e()
    count_if = shared.count_if
    return receipts.groupBy("cell_id", "consumer").agg(
        F.max("shard").alias("_rx_shard"),
        count_if(first_e).alias("unique_msgs"),
        count_if(F.col("duplicate")).alias("duplicates"),
        count_if(first_e & F.col("_after_stop")).alias("late_msgs"),
        count_if(F.col("_first") & ~F.col("_in_e")).alias("unexpected_msgs"),
        count_if(F.col("_first") & (F.col("receive_ts_ns") <= F.col("_stop_ns")))
        .alias("_rx_before_stop"),
        _sorted_list(first_e, F.col("e2e_latency_ms")).alias("_e2e"),
        _sorted_list(first_e, F.col("service_e2e_latency_ms")).alias("_service"),
        _sorted_list(first_e, F.col("_e_idx")).alias("_idx"),
    )


def _lag_samples(lag: DataFrame, cells: _Cells) -> DataFrame:
    """One row per (cell, consumer, sample time): the partitions' lag summed, how many were
    sampled, the consumer's received count and whether it was paused."""
    return (lag.where(F.col("cell_id").isin(cells.ids))
            .groupBy("cell_id", "consumer", "sample_ts_ns").agg(
                F.max("shard").alias("shard"),
                F.max("elapsed_s").alias("elapsed_s"),
                F.sum("lag_msgs").alias("lag_msgs"),
                F.count(F.lit(1)).cast("int").alias("partitions_sampled"),
                F.max("received_msgs").alias("received_msgs"),
                F.max(F.col("paused").cast("int")).cast("boolean").alias("paused")))


def _running_count(events: DataFrame, marks: DataFrame, keys: Sequence[str],
                   name: str) -> DataFrame:
    """At each mark (a lag sample time ``_ts``), how many ``events`` (their ``_ts``) of the
    same ``keys`` happened at or before it, as column ``name`` (an event sorts before a
    sample at the same time)."""
    return (events.select(*keys, "_ts", F.lit(0).alias("_is_sample"), F.lit(1).alias("_w"))
            .unionByName(marks.select(*keys, "_ts", F.lit(1).alias("_is_sample"),
                                      F.lit(0).alias("_w")))
            .withColumn(name, F.sum("_w").over(
                Window.partitionBy(*keys).orderBy("_ts", "_is_sample")
                .rowsBetween(Window.unboundedPreceding, Window.currentRow)))
            .where(F.col("_is_sample") == 1)
            .select(*keys, F.col("_ts").alias("sample_ts_ns"), name))


def _lag_rows(samples: DataFrame, exp_set: DataFrame, receipts: DataFrame) -> DataFrame:
    """:func:`_lag_samples` with ``acked_msgs`` (E acked by the sample time, per cell) and
    ``client_backlog_msgs`` (those minus the consumer's first receipts of E by then)."""
    marks = samples.select("cell_id", "consumer", F.col("sample_ts_ns").alias("_ts"))
    acked_at = _running_count(
        exp_set.where(F.col("_ack_ts_ns").isNotNull())
        .select("cell_id", F.col("_ack_ts_ns").alias("_ts")),
        marks.select("cell_id", "_ts").distinct(), ["cell_id"], "acked_msgs")
    received_at = _running_count(
        receipts.where(_first_of_e())
        .select("cell_id", "consumer", F.col("receive_ts_ns").alias("_ts")),
        marks, ["cell_id", "consumer"], "_received_e")
    return (samples.join(acked_at, ["cell_id", "sample_ts_ns"], "left")
            .join(received_at, ["cell_id", "consumer", "sample_ts_ns"], "left")
            .withColumn("acked_msgs", F.coalesce("acked_msgs", F.lit(0)).cast("long"))
            .withColumn("client_backlog_msgs",
                        (F.col("acked_msgs") - F.coalesce("_received_e", F.lit(0)))
                        .cast("long")))


def _in_window() -> Column:
    """A lag sample taken in the measured window (from the measure start to the stop)."""
    return F.col("sample_ts_ns").between(F.col("_measure_start_ns"), F.col("_stop_ns"))


def _lag_figures(lag_joined: DataFrame) -> DataFrame:
    """One row per (cell, consumer) with lag samples (rows of :func:`_lag_rows` with their
    cell's constants and ``_total``, the lag with an unknown partition as 0): peak lag, peak
    during the pause (to one interval after it; null when no sample of the consumer fell in
    the pause's last interval, as ``kafkalab.load.summary.pause_sampled`` rules), the first
    sample after the pause with lag <= the drain threshold and the time to it, the lag at
    its last sample of the window, the peak client backlog."""
    ts = F.col("sample_ts_ns")
    in_pause = ts.between(F.col("_pause_start_ns"),
                          F.col("_pause_end_ns") + F.col("_lag_interval_ns"))
    in_last = ts.between(F.greatest(F.col("_pause_start_ns"),
                                    F.col("_pause_end_ns") - F.col("_lag_interval_ns")),
                         F.col("_pause_end_ns"))
    drained = (ts > F.col("_pause_end_ns")) & (F.col("_total") <= F.col("_drain_threshold"))
    return (lag_joined.groupBy("cell_id", "consumer").agg(
        F.max("shard").alias("_lag_shard"),
        F.max("lag_msgs").alias("lag_peak_msgs"),
        F.max("_total").alias("_peak0"),
        F.max(F.when(in_pause, F.col("_total"))).alias("_pause_peak"),
        F.min(F.when(drained, ts)).alias("_drained_ns"),
        F.max_by(F.col("_total"), F.when(_in_window(), ts)).alias("_end_lag"),
        F.max("client_backlog_msgs").alias("_backlog_peak"),
        F.first("_pause_end_ns").alias("_pause_end"),
        F.max(F.when(in_last, F.lit(True))).alias("_pause_seen"))
        .withColumn("_pause_peak", F.when(F.col("_pause_seen"), F.col("_pause_peak")))
        .drop("_pause_seen")
        .withColumn("time_to_drain_s",
                    (F.col("_drained_ns") - F.col("_pause_end")) / F.lit(1e9)))


def _lag_cells(lag_figures: DataFrame, lag_joined: DataFrame) -> dict[str, dict[str, Any]]:
    """The lag figures of each cell on the driver (one small action): the peaks over its
    consumers, the latest drain (and how many consumers never drained), the end lag, the
    peak client backlog (at least 0) and the median total lag over the window's samples."""
    per_cell = lag_figures.groupBy("cell_id").agg(
        F.max("_peak0").alias("lag_peak_msgs"),
        F.max("_pause_peak").alias("pause_lag_peak_msgs"),
        F.max("_drained_ns").alias("_drained_ns"),
        shared.count_if(F.col("_drained_ns").isNull()).alias("_not_drained"),
        F.max("_end_lag").alias("lag_end_msgs"),
        F.greatest(F.max("_backlog_peak"), F.lit(0)).alias("client_backlog_peak_msgs"))
    medians = lag_joined.where(_in_window()).groupBy("cell_id").agg(
        F.percentile(F.col("_total"), F.lit(0.5)).alias("lag_median_msgs"))
    return {r["cell_id"]: r.asDict()
            for r in per_cell.join(medians, "cell_id", "left").collect()}


def _consumer_figures(cells: _Cells, receipt_figures: DataFrame, lag_figures: DataFrame,
                      counts: dict[str, dict[str, Any]]) -> DataFrame:
    """Every consumer of every cell, with or without receipts or lag samples: its receipt
    and lag figures (an empty list / 0 where it has none), its shard, the cell's expected
    count, ``missing_msgs``, ``failing``, ``gaps`` and ``rx_rate_msgs_per_s``."""
    spark = receipt_figures.sparkSession
    grid = (cells.meta.select("cell_id", F.explode(F.sequence(F.lit(0), F.col("_consumers") - 1))
                              .alias("consumer")).where(F.col("consumer").isNotNull()))
    n_expected = spark.createDataFrame(
        [(cid, int(c["expected_msgs"])) for cid, c in counts.items()],
        "cell_id string, expected_msgs bigint")
    shard_formula = F.floor(F.col("consumer") / F.ceil(
        F.col("_consumers") / F.ceil(F.col("_consumers") / F.col("_cps"))))
    empty_d = F.array().cast("array<double>")
    window_s = (F.col("_stop_ns") - F.col("_measure_start_ns")) / F.lit(1e9)
    return (
        grid.join(receipt_figures, ["cell_id", "consumer"], "full_outer")
        .join(lag_figures, ["cell_id", "consumer"], "left")
        .join(cells.meta, "cell_id").join(F.broadcast(n_expected), "cell_id")
        .select("*", F.coalesce("_rx_shard", "_lag_shard", shard_formula).cast("int")
                .alias("shard"))
        .fillna(0, ["unique_msgs", "duplicates", "late_msgs", "unexpected_msgs",
                    "_rx_before_stop"])
        .withColumn("_e2e", F.coalesce("_e2e", empty_d))
        .withColumn("_service", F.coalesce("_service", empty_d))
        .withColumn("_idx", F.coalesce("_idx", F.array().cast("array<bigint>")))
        .withColumn("missing_msgs", F.col("expected_msgs") - F.col("unique_msgs"))
        .withColumn("failing", F.col("missing_msgs") > 0)
        .withColumn("gaps", _gaps(F.col("_idx"), F.col("expected_msgs")))
        .withColumn("rx_rate_msgs_per_s", F.when(
            F.col("_stop_ns") > F.col("_measure_start_ns"),
            F.col("_rx_before_stop") / window_s)))


_CONSUMER_PERCENTILES = ("e2e_p50_ms", "e2e_p99_ms", "e2e_max_ms", "service_e2e_p99_ms")
"""The percentiles of each ``load_consumers`` row."""


def _consumer_percentiles(consumers: DataFrame, cells: _Cells,
                          counts: dict[str, dict[str, Any]]) -> DataFrame:
    """:func:`_consumer_figures` with :data:`_CONSUMER_PERCENTILES`: each consumer's
    population is its cell's E (the missing ones censored)."""
    per_cell: dict[str, list[tuple[str, Column]]] = {}
    for cell_id in cells.ids:
        n = int(counts[cell_id]["expected_msgs"])
        cols = [*_percentiles(F.col("_e2e"), n, "e2e", reasons=False),
                *_percentiles(F.col("_service"), n, "service_e2e", reasons=False)]
        per_cell[cell_id] = [(name, c) for name, c in cols if name in _CONSUMER_PERCENTILES]
    return consumers.select("*", *_by_cell(per_cell))


def _run_table(df: DataFrame, run_id: str, run_dates: DataFrame, schema: dict[str, str],
               order: Sequence[str]) -> DataFrame:
    """``df`` as a table of ``schema``: the run id, its cell's run date, then its own columns
    cast to their types, ordered by ``order``."""
    return (df.join(F.broadcast(run_dates), "cell_id")
            .select(F.lit(run_id).alias("run_id"), F.col("_run_date").alias("run_date"),
                    *[F.col(c).cast(t).alias(c) for c, t in schema.items()
                      if c not in ("run_id", "run_date")])
            .orderBy(*order))


def _pooled_figures(consumers: DataFrame, send_figures: DataFrame, cells: _Cells,
                    counts: dict[str, dict[str, Any]]
                    ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The figures of each cell pooled over its consumers, on the driver (one action): rx
    rates, missing, late, unexpected, duplicates, failing clients, and the percentiles of
    the pooled e2e and service e2e (population E × consumers) and of the producer's publish
    delay and ack latency. Returns them by cell id and the percentile columns' names."""
    pooled = consumers.groupBy("cell_id").agg(
        F.count(F.lit(1)).alias("_n_consumers"),
        F.avg("rx_rate_msgs_per_s").alias("rx_rate_msgs_per_s_avg"),
        F.min("rx_rate_msgs_per_s").alias("rx_rate_msgs_per_s_min"),
        F.sum("missing_msgs").alias("missing_msgs"),
        F.sum("late_msgs").alias("late_msgs"),
        F.sum("unexpected_msgs").alias("unexpected_msgs"),
        F.sum("duplicates").alias("duplicates"),
        shared.count_if(F.col("failing")).alias("failing_clients"),
        F.sort_array(F.flatten(F.collect_list("_e2e"))).alias("_e2e"),
        F.sort_array(F.flatten(F.collect_list("_service"))).alias("_service"),
    )
    per_cell: dict[str, list[tuple[str, Column]]] = {}
    for cell_id in cells.ids:
        c = counts[cell_id]
        n_pool = int(c["expected_msgs"]) * cells.consumers[cell_id]
        per_cell[cell_id] = [
            *_percentiles(F.col("_e2e"), n_pool, "e2e", ci=True),
            *_percentiles(F.col("_service"), n_pool, "service_e2e"),
            *_percentiles(F.col("_publish"), int(c["_n_publish"]), "publish_delay"),
            *_percentiles(F.col("_ack"), int(c["_n_ack"]), "ack_latency")]
    names = [name for name, _ in next(iter(per_cell.values()))]
    picked = (pooled.join(send_figures.select("cell_id", "_publish", "_ack"), "cell_id", "left")
              .select("cell_id", "rx_rate_msgs_per_s_avg", "rx_rate_msgs_per_s_min",
                      "missing_msgs", "late_msgs", "unexpected_msgs", "duplicates",
                      "failing_clients", "_n_consumers", *_by_cell(per_cell)))
    return {r["cell_id"]: r.asDict() for r in picked.collect()}, names


def transform(data: LoadRun) -> tuple[DataFrame, DataFrame, DataFrame]:
    """The run's ``(load_cells, load_consumers, load_lag)`` DataFrames
    (:data:`CELL_SCHEMA`, :data:`CONSUMER_SCHEMA`, :data:`LAG_SCHEMA`).

    Eager where it is cheap: the sends are counted per cell first (one small pass,
    collected: :func:`_send_counts`) so that every rank (nearest-rank percentiles, CI order
    statistics) is known on the driver; the receipts are then joined once with the expected
    set (:func:`_measured_receipts`) and grouped per consumer (:func:`_receipt_figures`:
    sorted latency lists, counts, gaps); the lag samples get the backlog
    (:func:`_lag_rows`) and the lag figures (:func:`_lag_figures`, :func:`_lag_cells`); the
    consumer rows (:func:`_consumer_figures`) give the cell figures
    (:func:`_pooled_figures`), and each cell's row is put together on the driver
    (:func:`_cell_row`). Definitions: ``docs/aggregates-schema.md``, "Load aggregates".
    """
    spark = data.sends.sparkSession
    cells = _Cells(spark, data.cells)
    sends = _windowed_sends(data.sends, cells)
    send_figures = _send_figures(sends).cache()
    counts = _send_counts(send_figures, cells)
    exp_set = _expected_set(sends)
    receipts = _measured_receipts(data.receipts, cells, exp_set)
    lag_rows = _lag_rows(_lag_samples(data.lag, cells).cache(), exp_set, receipts)
    lag_joined = (lag_rows.join(cells.meta, "cell_id")
                  .withColumn("_total", F.coalesce(F.col("lag_msgs"), F.lit(0))).cache())
    lag_figures = _lag_figures(lag_joined)
    lag_cells = _lag_cells(lag_figures, lag_joined)
    lag_figures = lag_figures.drop("_peak0", "_pause_peak", "_drained_ns", "_end_lag",
                                   "_backlog_peak", "_pause_end")
    consumers = _consumer_figures(cells, _receipt_figures(receipts), lag_figures,
                                  counts).cache()
    run_dates = spark.createDataFrame(
        [(cid, str(doc.get("_run_date"))) for cid, doc in data.cells.items()],
        "cell_id string, _run_date string")
    load_consumers = _run_table(_consumer_percentiles(consumers, cells, counts), data.run_id,
                                run_dates, CONSUMER_SCHEMA, ("cell_id", "consumer"))
    load_lag = _run_table(lag_rows, data.run_id, run_dates, LAG_SCHEMA,
                          ("cell_id", "consumer", "sample_ts_ns"))
    figures, metric_names = _pooled_figures(consumers, send_figures, cells, counts)
    send_figures.unpersist()
    lag_joined.unpersist()
    rows = [_cell_row(data.run_id, cid, data.cells[cid], counts[cid],
                      {**figures.get(cid, {}), **lag_cells.get(cid, {})}, metric_names)
            for cid in cells.ids]
    return shared.driver_frame(spark, rows, CELL_SCHEMA), load_consumers, load_lag


def _gaps(idx: Column, n: Column) -> Column:
    """Maximal runs of E indices (0..n-1) absent from the ascending list ``idx``."""
    size = F.size(idx)
    inner = F.size(F.filter(
        F.zip_with(F.slice(idx, 2, F.greatest(size - 1, F.lit(0))),
                   F.slice(idx, 1, F.greatest(size - 1, F.lit(0))),
                   lambda hi, lo: hi - lo > 1),
        lambda gap: gap))
    head = F.when(F.try_element_at(idx, F.lit(1)) > 0, 1).otherwise(0)
    tail = F.when(F.try_element_at(idx, F.lit(-1)) < n - 1, 1).otherwise(0)
    return (F.when(n <= 0, F.lit(0)).when(size == 0, F.lit(1))
            .otherwise(inner + head + tail).cast("long"))


def _cell_row(run_id: str, cell_id: str, doc: dict[str, Any], counts: dict[str, Any],
              fig: dict[str, Any], metric_names: Sequence[str]) -> dict[str, Any]:
    """One ``load_cells`` row from the cell's ``cell.json``, its send counts and its pooled
    figures (:func:`transform`)."""
    spec = doc.get("spec") or {}
    summary = doc.get("summary") or {}
    cluster = doc.get("cluster") or {}
    consumers = int(spec.get("consumers") or 0)
    rate = _num(spec.get("rate_msgs_per_s"))
    row: dict[str, Any] = {c: spec.get(c) for c in SPEC_COLUMNS}
    row["acks"] = _acks_of(doc)
    # a cell measured before the setting existed read from the leader
    row["fetch_from_follower"] = bool(spec.get("fetch_from_follower") or False)
    row["partitions"] = doc.get("partitions") or spec.get("partitions")
    # the engine's cell.json ``payload_bytes`` is the bytes on the wire (body + header)
    payload_bytes = doc.get("payload_bytes", summary.get("payload_bytes"))
    wire = doc.get("wire_bytes", payload_bytes)
    row.update(
        run_id=run_id, run_date=doc.get("_run_date"), cell_id=cell_id,
        status=doc.get("status"), error=doc.get("error"), topic=doc.get("topic"),
        cluster_flavor=cluster.get("flavor"), broker_version=cluster.get("version"),
        broker_is_emulator=cluster.get("is_emulator"), broker_count=cluster.get("broker_count"),
        client_version=doc.get("client_version"), payload_bytes=payload_bytes, wire_bytes=wire,
        target_rate_msgs_per_s=rate, client_bound=bool(doc.get("client_bound")),
        broker_cpu_frac=doc.get("broker_cpu_frac"),
        host_cpu_busy_frac=doc.get("host_cpu_busy_frac"),
        host_busy=bool((doc.get("host_cpu_busy_frac") or 0.0) > HOST_BUSY_FRAC),
        host_other_cpu_pct=host_other_cpu_pct(doc),
        cross_host_clock=bool(doc.get("cross_host_clock")),
        max_process_cpu_frac=max((p.get("cpu_frac") or 0.0 for p in doc.get("processes") or []),
                                 default=None),
        window_s=(float(spec["duration_s"]) - float(spec["warmup_s"])
                  if spec.get("duration_s") is not None and spec.get("warmup_s") is not None
                  else None),
        ci_confidence=shared.stats.CI_CONFIDENCE, percentile_method=PERCENTILE_METHOD,
    )
    for key in ("intended_msgs", "acked_msgs", "failed_msgs", "indeterminate_msgs",
                "unsent_msgs", "aborted_msgs", "sent_msgs", "expected_msgs", "warmup_msgs"):
        row[key] = counts[key]
    sent = int(counts["sent_msgs"])
    if sent and rate and counts["_last_send_ns"] is not None:
        span_s = (counts["_last_send_ns"] - counts["_first_intended_ns"]) / 1e9 + 1.0 / rate
        row["achieved_rate_msgs_per_s"] = sent / span_s
    else:
        row["achieved_rate_msgs_per_s"] = 0.0
    row["achieved_mb_per_s"] = (row["achieved_rate_msgs_per_s"] * wire / 1e6
                                if wire is not None else None)
    for key in ("rx_rate_msgs_per_s_avg", "rx_rate_msgs_per_s_min", "lag_peak_msgs",
                "lag_end_msgs", "lag_median_msgs", "client_backlog_peak_msgs", *metric_names):
        row[key] = fig.get(key)
    for key in ("missing_msgs", "late_msgs", "unexpected_msgs", "duplicates",
                "failing_clients"):
        row[key] = fig.get(key) or 0
    denominator = int(counts["expected_msgs"]) * consumers
    row["loss_pct"] = 100.0 * row["missing_msgs"] / denominator if denominator else 0.0
    row["late_pct"] = 100.0 * row["late_msgs"] / denominator if denominator else 0.0
    spec_interval = _num(spec.get("lag_interval_s")) or 0.0
    end_lag, median = fig.get("lag_end_msgs"), fig.get("lag_median_msgs")
    row["lag_growing"] = (end_lag > max((rate or 0.0) * spec_interval, 2 * median)
                          if end_lag is not None and median is not None else None)
    pause = doc.get("pause") or {}
    peak = fig.get("pause_lag_peak_msgs") if pause else None
    row["pause_lag_peak_msgs"] = peak
    row["time_to_drain_s"] = row["drain_rate_msgs_per_s"] = None
    if peak and fig.get("_drained_ns") is not None and not fig.get("_not_drained"):
        ttd = (fig["_drained_ns"] - pause["end_ns"]) / 1e9
        row["time_to_drain_s"] = ttd
        row["drain_rate_msgs_per_s"] = peak / ttd if ttd > 0 else None
    publish = fig.get("publish_delay_p99_ms")
    if publish is None:
        publish = fig.get("publish_delay_max_ms")
    row["saturated"] = bool(publish is not None and rate and publish > 1000.0 / rate)
    return row


# --------------------------------------------------------------------------- load


def run(spark: SparkSession, load_path: str, out_path: str, run_id: str) -> dict[str, int]:
    """Extract, transform and load one run; returns the rows written per table. The tables
    are swapped in for the run's directory as a set (:func:`_session.swap_in_run_tables`)."""
    tables = transform(extract(spark, load_path, run_id))
    return shared.write_run_tables(dict(zip(TABLES, tables, strict=True)), out_path, run_id)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the process exit code."""
    return shared.run_tables_main(
        argv, run, prog="aggregate_load",
        description="Aggregate one load run into cell, consumer and lag tables (Parquet).",
        source=("--load", "load samples",
                "load samples root (<data>/load), a local dir or Hadoop URI"),
        out_help="load aggregates root; the run goes to <out>/run_id=<id>/",
        # the aggregation succeeded whatever the validation finds: its verdict is in
        # <validate-out>/<run_id>-load.json, judged by the validate_load task
        validate=lambda spark, out, run_id, validate_out: validator.validate_run(
            spark, out, run_id, validate_out, prog="aggregate_load --validate-out"),
        warm_up=_gx.preload_gx)


if __name__ == "__main__":
    sys.exit(main())
