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
import math
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
    "AGGREGATE_SCHEMA",
    "CARRIED_COLUMNS",
    "CELL_KEYS",
    "OPTIONAL_INPUT_COLUMNS",
    "REQUIRED_INPUT_COLUMNS",
    "SCHEMA_VERSION",
    "InputError",
    "extract",
    "load",
    "main",
    "run",
    "transform",
]

SCHEMA_VERSION = 2
"""Version of the aggregates schema (``docs/aggregates-schema.md``)."""

#: One output row per combination of these columns.
CELL_KEYS: tuple[str, ...] = shared.CELL_KEYS
#: Columns constant within a cell, carried into the output (the largest non-null value).
CARRIED_COLUMNS: tuple[str, ...] = (
    "run_date", "workload", "payload_encoding", "payload_bytes", "cluster_flavor",
    "broker_version", "broker_is_emulator", "broker_count", "planned_messages",
    "message_timeout_ms", "loop_mode", "client_settings",
)
#: Sample columns added by samples schema 2, with their Spark types. Files written under
#: schema 1 lack them: they are read as null (the carried value is then null, no probe is cold).
OPTIONAL_INPUT_COLUMNS: dict[str, str] = {
    "broker_count": "int", "planned_messages": "bigint", "message_timeout_ms": "double",
    "loop_mode": "string", "client_settings": "string", "cold_start": "boolean",
}
PERCENTILE_METHOD = "exact nearest-rank"
STATUSES_RECEIVED = ("ok", "late")
"""Statuses of a message that arrived (its latency is measured)."""
STATUSES_CENSORED = ("lost", "error")
"""Statuses of a message sent and never received: censored, "at least the timeout"."""

_COUNTS = ("sent_count", "received_count", "lost_count", "duplicate_count", "late_count",
           "error_count", "warmup_excluded_count")
_CI_COLUMNS = tuple(f"e2e_latency_ms_{name}_ci_{side}" for name in shared.CI_PERCENTILES
                    for side in ("low", "high"))
_STRING_COLUMNS = frozenset({
    *CELL_KEYS, "run_date", "workload", "payload_encoding", "cluster_flavor",
    "broker_version", "loop_mode", "client_settings", "e2e_latency_ms_percentiles_note",
    "percentile_method",
})
_LONG_COLUMNS = frozenset({*_COUNTS, "payload_bytes", "planned_messages",
                           "first_message_lost_count"})

#: Output columns in order (documented in docs/aggregates-schema.md).
AGGREGATE_COLUMNS: tuple[str, ...] = (
    "run_id", "run_date", "scenario", "client", "payload", "profile",
    *CARRIED_COLUMNS[1:],
    *_COUNTS,
    "e2e_latency_ms_mean", *shared.percentile_columns("e2e_latency_ms"), "e2e_latency_ms_max",
    "e2e_latency_ms_percentiles_note", *_CI_COLUMNS, "ci_confidence",
    "publish_latency_ms_mean", *shared.percentile_columns("publish_latency_ms"),
    "publish_latency_ms_max",
    *shared.percentile_columns("round_trip_ms"),
    "measured_span_s", "message_rate_per_s", "message_rate_mb_per_s",
    "first_message_subscribe_ms", "first_message_assign_ms", "first_message_cold_ms",
    "first_message_lost_count", "assign_delay_subscribe_ms",
    "tool_p50_ms", "tool_p99_ms", "tool_p999_ms", "tool_avg_ms",
    "percentile_method", "latency_resolution_ms",
)


def _column_type(name: str) -> str:
    if name in _STRING_COLUMNS:
        return "string"
    if name in _LONG_COLUMNS:
        return "bigint"
    if name == "broker_count":
        return "int"
    if name == "broker_is_emulator":
        return "boolean"
    return "double"


#: Spark DDL type of each output column, in order.
AGGREGATE_SCHEMA: dict[str, str] = {c: _column_type(c) for c in AGGREGATE_COLUMNS}

DEFAULT_CONFIG: dict[str, Any] = {
    # bytes in one "MB" of message_rate_mb_per_s (decimal megabytes)
    "bytes_per_mb": 1_000_000,
}

#: The sample columns :func:`transform` needs (present in every samples schema version).
REQUIRED_INPUT_COLUMNS: tuple[str, ...] = (
    *CELL_KEYS, *(c for c in CARRIED_COLUMNS if c not in OPTIONAL_INPUT_COLUMNS),
    "sample_kind", "is_warmup", "status", "send_ts_ns", "receive_ts_ns", "publish_latency_ms",
    "e2e_latency_ms", "round_trip_ms", "consumer_mode", "assign_delay_ms",
    "first_record_delay_ms", "statistic", "latency_resolution_ms",
)


def _count_if(cond: Column) -> Column:
    return F.sum(F.when(cond, F.lit(1)).otherwise(F.lit(0))).cast("long")


def _sorted_list(cond: Column, col: str) -> Column:
    """The sorted non-null values of ``col`` on the rows where ``cond`` holds (aggregate)."""
    return F.sort_array(F.collect_list(F.when(cond, F.col(col))))


def _median_of(sorted_values: Column) -> Column:
    """Nearest-rank median (rank ``ceil(n/2)``) of a sorted array column; null when empty."""
    return F.get(sorted_values, F.floor((F.size(sorted_values) - 1) / 2).cast("int"))


def _populations() -> dict[str, Column]:
    """Per latency metric, the row's value in that metric's percentile population (null:
    not in it). Population of ``e2e_latency_ms``: non-warm-up messages; received ones
    (ok/late) with their latency, lost and failed ones (lost/error) censored as +inf.
    ``publish_latency_ms`` and ``round_trip_ms``: received messages' values, no censoring
    (as ``kafkalab.summary.summarize_rows``)."""
    measured = (F.col("sample_kind") == "message") & ~F.col("is_warmup")
    received = (measured & F.col("status").isin(*STATUSES_RECEIVED)
                & F.col("e2e_latency_ms").isNotNull())
    censored = measured & F.col("status").isin(*STATUSES_CENSORED)
    return {
        "e2e_latency_ms": F.when(censored, F.lit(float("inf")))
        .when(received, F.col("e2e_latency_ms").cast("double")),
        "publish_latency_ms": F.when(received, F.col("publish_latency_ms").cast("double")),
        "round_trip_ms": F.when(received, F.col("round_trip_ms").cast("double")),
    }


def _cell_figures(samples: DataFrame, cfg: dict[str, Any]) -> DataFrame:
    """Everything of a cell but the percentiles: carried columns, counts, means, maxima,
    span and message rate, first-message and tool figures, and ``_n_<metric>``, the size of
    each percentile population."""
    keys = list(CELL_KEYS)
    kind = F.col("sample_kind")
    status = F.col("status")
    is_msg = kind == F.lit("message")
    measured = is_msg & ~F.col("is_warmup")
    received = measured & status.isin(*STATUSES_RECEIVED)
    sent = measured & status.isin(*STATUSES_RECEIVED, *STATUSES_CENSORED)
    is_first = kind == F.lit("first_message")
    probe_received = is_first & F.col("first_record_delay_ms").isNotNull()
    cold = F.coalesce(F.col("cold_start"), F.lit(False))
    is_tool = kind == F.lit("tool_summary")

    def tool(stat: str) -> Column:
        return F.max(F.when(is_tool & (F.col("statistic") == stat), F.col("e2e_latency_ms")))

    def warm_probe(mode: str) -> Column:
        return probe_received & ~cold & (F.col("consumer_mode") == mode)

    figures = samples.groupBy(*keys).agg(
        *[F.max(c).alias(c) for c in CARRIED_COLUMNS],
        _count_if(sent).alias("sent_count"),
        _count_if(received).alias("received_count"),
        _count_if(measured & (status == "lost")).alias("lost_count"),
        _count_if(measured & (status == "duplicate")).alias("duplicate_count"),
        _count_if(measured & (status == "late")).alias("late_count"),
        _count_if(measured & (status == "error")).alias("error_count"),
        _count_if(is_msg & F.col("is_warmup")).alias("warmup_excluded_count"),
        *[F.count(value).alias(f"_n_{metric}") for metric, value in _populations().items()],
        F.avg(F.when(received, F.col("e2e_latency_ms"))).alias("e2e_latency_ms_mean"),
        F.max(F.when(received, F.col("e2e_latency_ms"))).alias("e2e_latency_ms_max"),
        F.avg(F.when(received, F.col("publish_latency_ms"))).alias("publish_latency_ms_mean"),
        F.max(F.when(received, F.col("publish_latency_ms"))).alias("publish_latency_ms_max"),
        F.min(F.when(sent, F.col("send_ts_ns"))).alias("_first_send_ns"),
        F.max(F.when(received, F.col("receive_ts_ns"))).alias("_last_receive_ns"),
        _sorted_list(warm_probe("subscribe"), "first_record_delay_ms").alias("_fm_subscribe"),
        _sorted_list(warm_probe("assign"), "first_record_delay_ms").alias("_fm_assign"),
        _sorted_list(probe_received & cold, "first_record_delay_ms").alias("_fm_cold"),
        _sorted_list(warm_probe("subscribe"), "assign_delay_ms").alias("_assign_subscribe"),
        _count_if(is_first & F.col("first_record_delay_ms").isNull())
        .alias("first_message_lost_count"),
        tool("p50").alias("tool_p50_ms"),
        tool("p99").alias("tool_p99_ms"),
        tool("p99.9").alias("tool_p999_ms"),
        tool("avg").alias("tool_avg_ms"),
        F.max("latency_resolution_ms").alias("latency_resolution_ms"),
    )
    span_s = (F.col("_last_receive_ns") - F.col("_first_send_ns")) / F.lit(1e9)
    rate = F.when(F.col("received_count") > 0, F.col("received_count") / F.col("measured_span_s"))
    return (
        figures.withColumn("measured_span_s", F.when(span_s > 0, span_s))
        .withColumn("message_rate_per_s", rate)
        .withColumn("message_rate_mb_per_s", F.col("message_rate_per_s")
                    * F.col("payload_bytes") / F.lit(cfg["bytes_per_mb"]))
        .withColumn("first_message_subscribe_ms", _median_of(F.col("_fm_subscribe")))
        .withColumn("first_message_assign_ms", _median_of(F.col("_fm_assign")))
        .withColumn("first_message_cold_ms", _median_of(F.col("_fm_cold")))
        .withColumn("assign_delay_subscribe_ms", _median_of(F.col("_assign_subscribe")))
        .drop("_first_send_ns", "_last_receive_ns", "_fm_subscribe", "_fm_assign", "_fm_cold",
              "_assign_subscribe")
    )


def _rank(n: int, num: int, den: int) -> int:
    """``ceil(n · num / den)`` in integers (at least 1): ``kafkalab.stats.fraction_rank``."""
    return max(1, (n * num + den - 1) // den)


def _ranks_wanted(cell: dict[str, Any]) -> dict[str, dict[str, int | None]]:
    """Per metric, the rank each statistic of ``cell`` needs (None: undefined for want of
    samples). Keys: percentile names (``p99``) and, for ``e2e_latency_ms``, CI bounds
    (``p50_ci_low``)."""
    wanted: dict[str, dict[str, int | None]] = {}
    for metric, percentiles in shared.METRIC_PERCENTILES.items():
        n = int(cell[f"_n_{metric}"])
        ranks: dict[str, int | None] = {
            name: _rank(n, num, den) if n >= shared.MIN_SAMPLES[name] else None
            for name, (num, den) in percentiles.items()
        }
        if metric == "e2e_latency_ms":
            for name in shared.CI_PERCENTILES:
                num, den = percentiles[name]
                ranks[f"{name}_ci_low"], ranks[f"{name}_ci_high"] = shared.quantile_ci_ranks(
                    n, num / den, shared.CI_CONFIDENCE)
        wanted[metric] = ranks
    return wanted


def _values_at_ranks(samples: DataFrame, wanted: list[tuple[tuple[Any, ...], str, int]]
                     ) -> dict[tuple[tuple[Any, ...], str, int], float]:
    """The value at each wanted ``(cell key, metric, rank)`` of the sorted populations.

    One ranking pass: the populations of every metric are unpivoted into (metric, value)
    rows, ranked with ``row_number()`` in one window per cell and metric (one shuffle, one
    sort), and joined with the (broadcast) wanted ranks.
    """
    if not wanted:
        return {}
    spark = samples.sparkSession
    keys = list(CELL_KEYS)
    populations = _populations()
    rank_schema = ", ".join([*(f"{k} string" for k in keys), "_m string", "_rank int"])
    ranks = spark.createDataFrame([(*cell, metric, rank) for cell, metric, rank in wanted],
                                  rank_schema)
    long = samples.select(
        *keys,
        F.explode(F.array(*[
            F.struct(F.lit(metric).alias("_m"), value.alias("_v"))
            for metric, value in populations.items()
        ])).alias("_mv"),
    ).select(*keys, "_mv._m", "_mv._v").where(F.col("_v").isNotNull())
    cell = Window.partitionBy(*keys, "_m").orderBy(F.col("_v").asc())
    ranked = long.withColumn("_rank", F.row_number().over(cell))
    picked = ranked.join(F.broadcast(ranks), on=[*keys, "_m", "_rank"], how="inner")
    return {(tuple(r[k] for k in keys), r["_m"], r["_rank"]): r["_v"]
            for r in picked.select(*keys, "_m", "_rank", "_v").collect()}


def _percentile_columns(cell: dict[str, Any], wanted: dict[str, dict[str, int | None]],
                        values: dict[tuple[tuple[Any, ...], str, int], float]
                        ) -> dict[str, Any]:
    """The percentile, CI and note columns of one cell from the picked values: a rank that
    lands on a censored value (+inf) gives null (reason ``censored``), an undefined rank
    null (reason ``n<MIN``)."""
    key = tuple(cell[k] for k in CELL_KEYS)
    out: dict[str, Any] = {}
    reasons: list[str] = []
    for metric, ranks in wanted.items():
        for name, rank in ranks.items():
            value = values.get((key, metric, rank)) if rank is not None else None
            if value is not None and math.isinf(value):
                value = None
            out[f"{metric}_{name}"] = value
            if metric != "e2e_latency_ms" or name not in shared.METRIC_PERCENTILES[metric]:
                continue
            if rank is None:
                reasons.append(f"{name}: n<{shared.MIN_SAMPLES[name]}")
            elif value is None:
                reasons.append(f"{name}: censored")
    if int(cell["_n_e2e_latency_ms"]) == 0:
        out["e2e_latency_ms_percentiles_note"] = "no messages"
    else:
        out["e2e_latency_ms_percentiles_note"] = "; ".join(reasons) or None
    return out


def transform(samples: DataFrame, config: dict[str, Any] | None = None) -> DataFrame:
    """Aggregate raw samples into one row per run × scenario × client × payload × profile.

    Counts are over non-warm-up ``message`` rows: ``sent_count`` = ok + late + lost + error
    (an ``error`` row is a message sent-and-failed), ``received_count`` = ok + late,
    ``lost_count``, ``error_count``, ``duplicate_count``, ``late_count``;
    ``warmup_excluded_count`` = warm-up message rows. ``e2e_latency_ms`` percentiles are
    exact nearest-rank over the sent messages, lost and failed ones censored (+inf: "at
    least the timeout"); a percentile is null below its minimum sample count or on a
    censored rank, with the reason in ``e2e_latency_ms_percentiles_note``; p50 and p99 get
    95 % order-statistic confidence intervals. Mean and max are over received messages.
    Columns, units and rules: ``docs/aggregates-schema.md``.

    Eager: the per-cell figures are computed and collected first (one row per cell), the
    ranks each cell needs are worked out on the driver, and one ranking pass over the
    samples picks the values at those ranks. Returns a small DataFrame with
    :data:`AGGREGATE_SCHEMA`.
    """
    cfg = {**DEFAULT_CONFIG, **(config or {})}
    missing = [c for c in REQUIRED_INPUT_COLUMNS if c not in samples.columns]
    if missing:
        raise InputError(f"samples lack required columns: {', '.join(missing)}")
    for col, type_ in OPTIONAL_INPUT_COLUMNS.items():  # written before samples schema 2
        if col not in samples.columns:
            samples = samples.withColumn(col, F.lit(None).cast(type_))

    cells = [r.asDict() for r in _cell_figures(samples, cfg).collect()]
    wanted = {tuple(c[k] for k in CELL_KEYS): _ranks_wanted(c) for c in cells}
    values = _values_at_ranks(samples, sorted({
        (key, metric, rank)
        for key, per_metric in wanted.items()
        for metric, ranks in per_metric.items()
        for rank in ranks.values() if rank is not None
    }))
    rows = []
    for cell in cells:
        row = {**cell, **_percentile_columns(cell, wanted[tuple(cell[k] for k in CELL_KEYS)],
                                             values)}
        row["ci_confidence"] = shared.CI_CONFIDENCE
        row["percentile_method"] = PERCENTILE_METHOD
        rows.append(tuple(_typed(row[c], AGGREGATE_SCHEMA[c]) for c in AGGREGATE_COLUMNS))
    schema = ", ".join(f"{c} {t}" for c, t in AGGREGATE_SCHEMA.items())
    return samples.sparkSession.createDataFrame(rows, schema)


def _typed(value: Any, type_: str) -> Any:
    """``value`` as the Python type of its Spark column (a long count in a double column
    would be refused)."""
    if value is None:
        return None
    if type_ == "double":
        return float(value)
    if type_ in ("bigint", "int"):
        return int(value)
    return value


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
