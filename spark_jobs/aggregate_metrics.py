"""Aggregate the raw latency samples of Kafka Latency Lab into one row per cell.

Extract the Hive-partitioned raw samples (``docs/metrics-schema.md``), transform them into
one row per run_id × scenario × client × payload × profile (``docs/aggregates-schema.md``)
and load the result as Parquet under ``<out>/run_id=<id>/``, replacing only the partitions
of the runs being aggregated (dynamic partition overwrite: re-running is idempotent).

Usage::

    spark-submit spark_jobs/aggregate_metrics.py --samples lab-data/samples \
        --out lab-data/aggregates [--run-id ID ...]
    python spark_jobs/aggregate_metrics.py ...        # builds its own local session

Needs PySpark and ``_session.py`` (beside this script, or shipped with ``--py-files``), not
the ``kafkalab`` package.
Exit codes: 0 success, 2 bad input (missing path, no rows for the run id, bad arguments).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

if __package__:  # imported as spark_jobs.aggregate_metrics (tests, tools)
    from . import _session as shared
else:  # run as a script: _session.py sits beside it or is shipped with --py-files
    import _session as shared  # type: ignore[no-redef]

InputError = shared.InputError
"""Raised for bad input (re-exported: callers catch ``aggregate_metrics.InputError``)."""

__all__ = [
    "AGGREGATE_COLUMNS",
    "CARRIED_COLUMNS",
    "CELL_KEYS",
    "REQUIRED_INPUT_COLUMNS",
    "InputError",
    "extract",
    "load",
    "main",
    "run",
    "transform",
]

#: One output row per combination of these columns.
CELL_KEYS: tuple[str, ...] = ("run_id", "scenario", "client", "payload", "profile")
#: Columns constant within a cell, carried into the output.
CARRIED_COLUMNS: tuple[str, ...] = (
    "run_date", "workload", "payload_bytes", "cluster_flavor", "broker_version",
    "broker_is_emulator",
)
PERCENTILE_METHOD = "exact nearest-rank"

#: Output columns in order (documented in docs/aggregates-schema.md).
AGGREGATE_COLUMNS: tuple[str, ...] = (
    "run_id", "run_date", "scenario", "client", "payload", "profile", "workload",
    "payload_bytes", "cluster_flavor", "broker_version", "broker_is_emulator",
    "sent_count", "received_count", "lost_count", "duplicate_count", "late_count",
    "error_count", "warmup_excluded_count",
    "e2e_latency_ms_mean", *shared.percentile_columns("e2e_latency_ms"), "e2e_latency_ms_max",
    "publish_latency_ms_mean", *shared.percentile_columns("publish_latency_ms"),
    "publish_latency_ms_max",
    *shared.percentile_columns("round_trip_ms"),
    "measured_span_s", "throughput_msgs_per_s", "throughput_mb_per_s",
    "first_message_subscribe_ms", "first_message_assign_ms", "assign_delay_subscribe_ms",
    "tool_p50_ms", "tool_p99_ms", "tool_p999_ms", "tool_avg_ms",
    "percentile_method", "latency_resolution_ms",
)

DEFAULT_CONFIG: dict[str, Any] = {
    # bytes in one "MB" of throughput_mb_per_s (decimal megabytes)
    "bytes_per_mb": 1_000_000,
}

#: The sample columns :func:`transform` reads (and needs).
REQUIRED_INPUT_COLUMNS: tuple[str, ...] = (
    *CELL_KEYS, *CARRIED_COLUMNS, "sample_kind", "is_warmup", "status", "send_ts_ns",
    "receive_ts_ns", "publish_latency_ms", "e2e_latency_ms", "round_trip_ms", "consumer_mode",
    "assign_delay_ms", "first_record_delay_ms", "statistic", "latency_resolution_ms",
)


def _count_if(cond: Column) -> Column:
    return F.sum(F.when(cond, F.lit(1)).otherwise(F.lit(0))).cast("long")


def _exact_percentiles(stats: DataFrame, metrics: dict[str, dict[str, tuple[int, int]]]
                       ) -> DataFrame:
    """Exact nearest-rank percentiles per cell of several value columns, in one sort.

    For each column, the value at rank ``ceil(n * q)`` (1-based) of its sorted non-null
    values, with ``q`` an exact fraction so no floating-point rounding can shift a rank. The
    columns are unpivoted into (metric, value) rows so one window (one shuffle, one sort)
    ranks them all. Output columns: ``<column>_<pXX>``.
    """
    keys = list(CELL_KEYS)
    long = stats.select(
        *keys,
        F.explode(F.array(*[
            F.struct(F.lit(col).alias("_m"), F.col(col).cast("double").alias("_v"))
            for col in metrics
        ])).alias("_mv"),
    ).select(*keys, "_mv._m", "_mv._v").where(F.col("_v").isNotNull())
    cell = Window.partitionBy(*keys, "_m")
    ranked = long.withColumn("_n", F.count(F.lit(1)).over(cell)).withColumn(
        "_rn", F.row_number().over(cell.orderBy(F.col("_v").asc()))
    )
    aggs = []
    for col, percentiles in metrics.items():
        for name, (num, den) in percentiles.items():
            rank = F.expr(f"(_n * {num} + {den - 1}) div {den}")
            hit = (F.col("_m") == col) & (F.col("_rn") == rank)
            aggs.append(F.max(F.when(hit, F.col("_v"))).alias(f"{col}_{name}"))
    return ranked.where(F.col("_rn") >= F.expr("(_n + 1) div 2")).groupBy(*keys).agg(*aggs)


def transform(samples: DataFrame, config: dict[str, Any] | None = None) -> DataFrame:
    """Aggregate raw samples into one row per run × scenario × client × payload × profile.

    Statistics use rows with ``sample_kind = 'message'``, ``is_warmup = false`` and
    ``status in ('ok', 'late')``. Counts (non-warm-up message rows): ``sent_count`` =
    ok + late + lost (duplicates are extra receipts and ``error`` rows were never sent),
    ``received_count`` = ok + late, ``lost_count``, ``duplicate_count``, ``late_count``,
    ``error_count``; ``warmup_excluded_count`` = warm-up message rows. Percentiles are exact
    nearest-rank. Columns and units: ``docs/aggregates-schema.md``.
    """
    cfg = {**DEFAULT_CONFIG, **(config or {})}
    missing = [c for c in REQUIRED_INPUT_COLUMNS if c not in samples.columns]
    if missing:
        raise InputError(f"samples lack required columns: {', '.join(missing)}")
    keys = list(CELL_KEYS)

    kind = F.col("sample_kind")
    status = F.col("status")
    is_msg = kind == F.lit("message")
    measured = is_msg & ~F.col("is_warmup")
    is_stat = measured & status.isin("ok", "late")
    is_sent = measured & status.isin("ok", "late", "lost")
    is_first = kind == F.lit("first_message")
    is_tool = kind == F.lit("tool_summary")

    def tool(stat: str) -> Column:
        return F.max(F.when(is_tool & (F.col("statistic") == stat), F.col("e2e_latency_ms")))

    def first(mode: str, col: str) -> Column:
        return F.avg(F.when(is_first & (F.col("consumer_mode") == mode), F.col(col)))

    main = samples.groupBy(*keys).agg(
        *[F.max(c).alias(c) for c in CARRIED_COLUMNS],
        _count_if(is_sent).alias("sent_count"),
        _count_if(is_stat).alias("received_count"),
        _count_if(measured & (status == "lost")).alias("lost_count"),
        _count_if(measured & (status == "duplicate")).alias("duplicate_count"),
        _count_if(measured & (status == "late")).alias("late_count"),
        _count_if(measured & (status == "error")).alias("error_count"),
        _count_if(is_msg & F.col("is_warmup")).alias("warmup_excluded_count"),
        F.avg(F.when(is_stat, F.col("e2e_latency_ms"))).alias("e2e_latency_ms_mean"),
        F.max(F.when(is_stat, F.col("e2e_latency_ms"))).alias("e2e_latency_ms_max"),
        F.avg(F.when(is_stat, F.col("publish_latency_ms"))).alias("publish_latency_ms_mean"),
        F.max(F.when(is_stat, F.col("publish_latency_ms"))).alias("publish_latency_ms_max"),
        F.min(F.when(is_sent, F.col("send_ts_ns"))).alias("_first_send_ns"),
        F.max(F.when(is_stat, F.col("receive_ts_ns"))).alias("_last_receive_ns"),
        first("subscribe", "first_record_delay_ms").alias("first_message_subscribe_ms"),
        first("assign", "first_record_delay_ms").alias("first_message_assign_ms"),
        first("subscribe", "assign_delay_ms").alias("assign_delay_subscribe_ms"),
        tool("p50").alias("tool_p50_ms"),
        tool("p99").alias("tool_p99_ms"),
        tool("p99.9").alias("tool_p999_ms"),
        tool("avg").alias("tool_avg_ms"),
        F.max("latency_resolution_ms").alias("latency_resolution_ms"),
    )

    stats = samples.where(is_stat).select(
        *keys, "e2e_latency_ms", "publish_latency_ms", "round_trip_ms"
    )
    percentiles = _exact_percentiles(stats, shared.METRIC_PERCENTILES)
    result = main.join(percentiles, on=keys, how="left")

    span_s = (F.col("_last_receive_ns") - F.col("_first_send_ns")) / F.lit(1e9)
    span_s = F.when(span_s > 0, span_s)
    result = (
        result.withColumn("measured_span_s", span_s)
        .withColumn(
            "throughput_msgs_per_s",
            F.when(F.col("received_count") > 0, F.col("received_count") / F.col("measured_span_s")),
        )
        .withColumn(
            "throughput_mb_per_s",
            F.col("throughput_msgs_per_s") * F.col("payload_bytes") / F.lit(cfg["bytes_per_mb"]),
        )
        .withColumn("percentile_method", F.lit(PERCENTILE_METHOD))
    )
    double_cols = [c for c in AGGREGATE_COLUMNS if c.endswith(("_ms", "_s", "_per_s"))
                   or "_ms_" in c]
    return result.select(
        *[F.col(c).cast("double").alias(c) if c in double_cols else F.col(c)
          for c in AGGREGATE_COLUMNS]
    )


def extract(spark: SparkSession, samples_path: str, run_ids: Sequence[str] = ()) -> DataFrame:
    """Read the raw samples (Hive layout) below ``samples_path``, optionally for some runs.

    Partition values are read as strings (no type inference: ``run_date`` stays a string).
    Raises :class:`InputError` when the path is missing or holds no rows for the run ids.
    """
    df = shared.read_parquet(spark, samples_path, "samples")
    for col in ("run_id", "run_date"):
        if col not in df.columns:
            raise InputError(
                f"samples at {samples_path} have no {col} column: point --samples at the "
                "samples/ root (run_date=.../run_id=... below it)"
            )
    if run_ids:
        df = df.where(F.col("run_id").isin(list(run_ids)))
    if not df.limit(1).take(1):
        which = f"run id(s) {', '.join(run_ids)}" if run_ids else "any run"
        raise InputError(f"no samples for {which} under {samples_path}")
    return df


def load(aggregates: DataFrame, out_path: str) -> None:
    """Write ``aggregates`` to ``<out_path>/run_id=<id>/`` as Parquet, one file per run.

    Dynamic partition overwrite: the partitions of the runs present in ``aggregates`` are
    replaced, all other runs are left untouched, so re-running a run never duplicates rows.
    """
    spark = aggregates.sparkSession
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    (
        aggregates.repartition("run_id")
        .sortWithinPartitions(*CELL_KEYS)
        .write.mode("overwrite")
        .partitionBy("run_id")
        .parquet(out_path)
    )


def run(spark: SparkSession, samples_path: str, out_path: str,
        run_ids: Sequence[str] = ()) -> int:
    """Extract, transform and load; returns the number of aggregate rows written."""
    aggregates = transform(extract(spark, samples_path, run_ids)).cache()
    try:
        n = aggregates.count()
        load(aggregates, out_path)
    finally:
        aggregates.unpersist()
    return n


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="aggregate_metrics",
        description="Aggregate raw latency samples into one row per cell (Parquet).",
    )
    p.add_argument("--samples", required=True,
                   help="samples root (Hive layout), any Hadoop-compatible URI or local dir")
    p.add_argument("--out", required=True, help="aggregates root")
    p.add_argument("--run-id", dest="run_ids", action="append", default=[], nargs="+",
                   metavar="ID", help="run id(s) to aggregate (repeatable); default: all runs")
    ns = p.parse_args(argv)
    ns.run_ids = [r for group in ns.run_ids for r in group]
    return ns


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the process exit code."""
    args = _parse_args(argv)
    if shared.local_path_missing(args.samples):
        print(f"aggregate_metrics: error: samples path not found: {args.samples}",
              file=sys.stderr)
        return 2
    with shared.job_session("kafkalab-aggregate-metrics") as spark:
        try:
            n = run(spark, args.samples, args.out, args.run_ids)
        except InputError as exc:
            print(f"aggregate_metrics: error: {exc}", file=sys.stderr)
            return 2
    runs = ", ".join(args.run_ids) if args.run_ids else "all runs"
    print(f"aggregate_metrics: wrote {n} aggregate rows for {runs} to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
