"""Aggregate the raw latency samples of Kafka Latency Lab into one row per cell.

Extract the Hive-partitioned raw samples (``docs/metrics-schema.md``), transform them into
one row per run_id × scenario × client × payload × profile (``docs/aggregates-schema.md``)
and load the result as Parquet under ``<out>/run_id=<id>/``, replacing only the partitions
of the runs being aggregated (dynamic partition overwrite: re-running is idempotent).

Usage::

    spark-submit spark_jobs/aggregate_metrics.py --samples lab-data/samples \
        --out lab-data/aggregates [--run-id ID ...]
    python spark_jobs/aggregate_metrics.py ...        # builds its own local session

How the exact percentiles are found (linear, memory-bounded, no sketch). A nearest-rank
percentile is one order statistic: the value at rank ``ceil(q·n)`` of a sorted population.
Sorting every population (a window over all rows, or one ``sort_array`` per cell) costs
n log n and, per cell, a sort or an array as large as the cell. Instead, ranks are counted:

1. One aggregation over all rows (:func:`_cell_scan`) gives each cell's counts, sums,
   maxima and carried columns, and the histogram of its ``e2e_latency_ms`` population by
   :func:`_bucket` (``floor(ln(v) · 256)``: buckets 0.4 % of the value wide, monotone in
   the value; +inf, the censored lost/failed messages, is a bucket of its own). Publish
   latency and round trip get their histograms from one more aggregation each
   (:func:`_histograms`). Only numbers are aggregated, so Spark's fast hash aggregation
   runs (no row is shuffled, only one row per cell and bucket).
2. On the driver the cumulative bucket counts place every wanted rank (percentiles and the
   CI order statistics) in a bucket, at a rank inside it. When that is the bucket's first or
   last value, or all its values are equal (+inf), the value is its minimum or maximum.
3. Otherwise only the rows of those few buckets (about 1-3 % of the rows) are ranked with
   ``row_number()`` per cell, metric and bucket (:func:`_rank_within_buckets`), and the
   wanted ranks picked.

Work is linear in the rows (three reads of the samples, sorts only within target buckets);
the driver holds one row per cell and bucket (about 1,800 buckets per factor 1,000 of
value range, whatever the row count) and the picked values; the executors' sort spills to
disk. The values are the population's own (no interpolation), equal to a full sort's.

Needs PySpark and ``_session.py`` (beside this script, or shipped with ``--py-files``), not
the ``kafkalab`` package.
Exit codes: 0 success, 2 bad input (missing path, no rows for the run id, bad arguments).
"""

from __future__ import annotations

import argparse
import bisect
import functools
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


# --------------------------------------------------------------------------- histogram

_BUCKETS_PER_E_FOLD = 256
"""Resolution of the histogram: buckets per factor e of a value (each about 0.4 % wide)."""
_ZERO_BUCKET = -1_000_000
_NEGATIVE_BASE = -2_000_000
_NEG_INF_BUCKET = -3_000_000
_INF_BUCKET = 1_000_000
_NAN_BUCKET = 1_000_001

_Key = tuple[Any, ...]
_Wanted = tuple[_Key, str, int]
"""A wanted order statistic: (cell key, metric, 1-based rank)."""
_Histogram = dict[tuple[_Key, str], list[tuple[int, int, float, float]]]
"""Per (cell key, metric): ``(bucket, count, min, max)`` of each non-empty bucket."""


def _bucket(value: Column) -> Column:
    """The histogram bucket of ``value``: a monotone (never decreasing) function of the
    value, so every value of a bucket sorts before every value of a higher bucket.

    Positive values: ``floor(ln(v) · 256)`` (Java's log is semi-monotonic; the product and
    the floor keep the order), about 0.4 % of the value wide. Zero, negative values, ±inf
    and NaN (Spark sorts NaN after +inf) get buckets of their own below and above those.
    Null for a null value."""
    k = F.lit(float(_BUCKETS_PER_E_FOLD))
    return (
        F.when(F.isnan(value), F.lit(_NAN_BUCKET))
        .when(value == F.lit(float("inf")), F.lit(_INF_BUCKET))
        .when(value == F.lit(float("-inf")), F.lit(_NEG_INF_BUCKET))
        .when(value > 0, F.floor(F.log(value) * k))
        .when(value == 0, F.lit(_ZERO_BUCKET))
        .when(value < 0, F.lit(_NEGATIVE_BASE) - F.floor(F.log(-value) * k))
        .cast("long")
    )


def _add_bucket(hist: _Histogram, pop: tuple[_Key, str], bucket: int, n: int, lo: float,
                hi: float) -> None:
    hist.setdefault(pop, []).append((bucket, n, lo, hi))


def _merged(hist: _Histogram) -> _Histogram:
    """``hist`` with each population's buckets sorted and repeated buckets merged."""
    out: _Histogram = {}
    for pop, buckets in hist.items():
        merged: list[tuple[int, int, float, float]] = []
        for b, n, lo, hi in sorted(buckets, key=lambda x: x[0]):
            if merged and merged[-1][0] == b:
                _, n0, lo0, hi0 = merged[-1]
                merged[-1] = (b, n0 + n, _lower(lo0, lo), _upper(hi0, hi))
            else:
                merged.append((b, n, lo, hi))
        out[pop] = merged
    return out


def _lower(a: float, b: float) -> float:
    """Spark's order: NaN above everything."""
    return b if math.isnan(a) else a if math.isnan(b) else min(a, b)


def _upper(a: float, b: float) -> float:
    return a if math.isnan(a) else b if math.isnan(b) else max(a, b)


def _greatest(a: Any, b: Any) -> Any:
    """Spark's ``max`` of two non-null values (strings by code point, NaN above all)."""
    if isinstance(a, float) and isinstance(b, float):
        return _upper(a, b)
    return max(a, b)


def _histograms(samples: DataFrame, metrics: Sequence[str]) -> _Histogram:
    """The histograms of ``metrics`` (each one aggregation over its population's rows)."""
    keys = list(CELL_KEYS)
    populations = _populations()
    parts = [
        samples.where(populations[m].isNotNull())
        .groupBy(*keys, _bucket(populations[m]).alias("_b"))
        .agg(F.count(F.lit(1)).alias("_n"), F.min(populations[m]).alias("_lo"),
             F.max(populations[m]).alias("_hi"))
        .withColumn("_m", F.lit(m))
        for m in metrics
    ]
    hist: _Histogram = {}
    if not parts:
        return hist
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    for r in union.collect():
        _add_bucket(hist, (tuple(r[k] for k in keys), r["_m"]), r["_b"], r["_n"], r["_lo"],
                    r["_hi"])
    return hist


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _values_at_ranks(samples: DataFrame, wanted: Sequence[_Wanted], hist: _Histogram
                     ) -> dict[_Wanted, float]:
    """The value at each wanted ``(cell key, metric, rank)`` of the sorted populations.

    From the histograms (:func:`_bucket`; merged here), the cumulative counts tell in which
    bucket, and at which rank inside it, each wanted rank lies: the bucket's minimum, its
    maximum or the value of a bucket of equal values is the answer at once; for the rest,
    only the rows of those buckets are ranked (:func:`_rank_within_buckets`).
    """
    hist = _merged(hist)
    cumulative: dict[tuple[_Key, str], list[int]] = {}
    for pop, buckets in hist.items():
        total, ends = 0, []
        for _, n, _, _ in buckets:
            total += n
            ends.append(total)
        cumulative[pop] = ends

    values: dict[_Wanted, float] = {}
    pending: dict[_Target, dict[int, list[_Wanted]]] = {}
    for want in wanted:
        key, metric, rank = want
        ends = cumulative.get((key, metric), [])
        i = bisect.bisect_left(ends, rank)
        if i == len(ends):  # beyond the population: not asked for (a rank is at most n)
            continue
        bucket, n, lo, hi = hist[(key, metric)][i]
        local = rank - (ends[i] - n)
        if local == 1 or _same(lo, hi):
            values[want] = lo
        elif local == n:
            values[want] = hi
        else:
            pending.setdefault((key, metric, bucket), {}).setdefault(local, []).append(want)
    if pending:
        values.update(_rank_within_buckets(samples, pending))
    return values


_Target = tuple[_Key, str, int]
"""A bucket to rank inside: (cell key, metric, bucket)."""


def _rank_within_buckets(samples: DataFrame,
                         pending: dict[_Target, dict[int, list[_Wanted]]]
                         ) -> dict[_Wanted, float]:
    """The values at the wanted ranks inside the buckets of ``pending`` (each with the
    wanted ranks inside it). Per metric, the rows whose bucket number is one of the wanted
    ones (a filter) and whose cell wants that bucket (a broadcast semi join) are kept: a few
    % of the rows. They are ranked with ``row_number()`` per cell, metric and bucket (a
    sort that spills to disk, never a whole cell in memory) and the wanted ranks picked (a
    broadcast join)."""
    keys = list(CELL_KEYS)
    spark = samples.sparkSession
    populations = _populations()
    schema = ", ".join([*(f"{k} string" for k in keys), "_m string", "_b long", "_rank int"])
    targets = spark.createDataFrame(
        [(*key, m, b, local) for (key, m, b), ranks in pending.items() for local in ranks],
        schema)
    parts = []
    for metric in sorted({m for _, m, _ in pending}):
        buckets = sorted({b for _, m, b in pending if m == metric})
        value = populations[metric]
        wanted_buckets = F.broadcast(targets.where(F.col("_m") == metric)
                                     .select(*keys, "_b").distinct())
        parts.append(
            samples.select(*keys, value.alias("_v"), _bucket(value).alias("_b"))
            .where(F.col("_b").isin(buckets))
            .join(wanted_buckets, on=[*keys, "_b"], how="left_semi")
            .withColumn("_m", F.lit(metric)))
    rows = functools.reduce(DataFrame.unionByName, parts)
    in_bucket = Window.partitionBy(*keys, "_m", "_b").orderBy(F.col("_v").asc())
    picked = (rows.withColumn("_rank", F.row_number().over(in_bucket))
              .join(F.broadcast(targets), on=[*keys, "_m", "_b", "_rank"], how="inner"))
    out: dict[_Wanted, float] = {}
    for r in picked.select(*keys, "_m", "_b", "_rank", "_v").collect():
        for want in pending[(tuple(r[k] for k in keys), r["_m"], r["_b"])][r["_rank"]]:
            out[want] = r["_v"]
    return out


# --------------------------------------------------------------------------- cell figures

_SUMMED = ("sent_count", "received_count", "lost_count", "duplicate_count", "late_count",
           "error_count", "warmup_excluded_count", "_n_e2e_latency_ms",
           "_n_publish_latency_ms", "_n_round_trip_ms", "_e2e_sum", "_e2e_cnt", "_pub_sum",
           "_pub_cnt")
_MAXED = ("e2e_latency_ms_max", "publish_latency_ms_max", "_last_receive_ns",
          "tool_p50_ms", "tool_p99_ms", "tool_p999_ms", "tool_avg_ms", "latency_resolution_ms")


def _cell_scan(samples: DataFrame) -> tuple[list[dict[str, Any]], _Histogram]:
    """One aggregation over every row: per cell, the carried columns, counts, sums, maxima,
    span ends, tool figures and ``_n_<metric>`` (each population's size), and the
    ``e2e_latency_ms`` histogram.

    It groups by the cell key, the carried columns and the e2e bucket (a few hundred groups
    per cell), so every aggregate is a fixed-width number (Spark's fast hash aggregation;
    a string ``max`` would sort all rows); the groups are rolled up per cell on the driver.
    """
    keys = list(CELL_KEYS)
    kind = F.col("sample_kind")
    status = F.col("status")
    is_msg = kind == F.lit("message")
    measured = is_msg & ~F.col("is_warmup")
    received = measured & status.isin(*STATUSES_RECEIVED)
    sent = measured & status.isin(*STATUSES_RECEIVED, *STATUSES_CENSORED)
    is_tool = kind == F.lit("tool_summary")
    populations = _populations()
    e2e_pop = populations["e2e_latency_ms"]

    def tool(stat: str) -> Column:
        return F.max(F.when(is_tool & (F.col("statistic") == stat), F.col("e2e_latency_ms")))

    e2e_r = F.when(received, F.col("e2e_latency_ms"))
    pub_r = F.when(received, F.col("publish_latency_ms"))
    groups = samples.groupBy(*keys, *CARRIED_COLUMNS, _bucket(e2e_pop).alias("_b")).agg(
        _count_if(sent).alias("sent_count"),
        _count_if(received).alias("received_count"),
        _count_if(measured & (status == "lost")).alias("lost_count"),
        _count_if(measured & (status == "duplicate")).alias("duplicate_count"),
        _count_if(measured & (status == "late")).alias("late_count"),
        _count_if(measured & (status == "error")).alias("error_count"),
        _count_if(is_msg & F.col("is_warmup")).alias("warmup_excluded_count"),
        *[F.count(value).alias(f"_n_{metric}") for metric, value in populations.items()],
        F.min(e2e_pop).alias("_lo"), F.max(e2e_pop).alias("_hi"),
        F.sum(e2e_r).alias("_e2e_sum"), F.count(e2e_r).alias("_e2e_cnt"),
        F.max(e2e_r).alias("e2e_latency_ms_max"),
        F.sum(pub_r).alias("_pub_sum"), F.count(pub_r).alias("_pub_cnt"),
        F.max(pub_r).alias("publish_latency_ms_max"),
        F.min(F.when(sent, F.col("send_ts_ns"))).alias("_first_send_ns"),
        F.max(F.when(received, F.col("receive_ts_ns"))).alias("_last_receive_ns"),
        tool("p50").alias("tool_p50_ms"),
        tool("p99").alias("tool_p99_ms"),
        tool("p99.9").alias("tool_p999_ms"),
        tool("avg").alias("tool_avg_ms"),
        F.max("latency_resolution_ms").alias("latency_resolution_ms"),
    ).collect()

    cells: dict[_Key, dict[str, Any]] = {}
    hist: _Histogram = {}
    for g in groups:
        r = g.asDict()
        key = tuple(r[k] for k in keys)
        cell = cells.get(key)
        if cell is None:
            cell = cells[key] = {k: r[k] for k in keys}
            cell.update(dict.fromkeys((*CARRIED_COLUMNS, *_MAXED, "_first_send_ns")))
            cell.update(dict.fromkeys(_SUMMED, 0))
        for c in (*CARRIED_COLUMNS, *_MAXED):
            if r[c] is not None:
                cell[c] = r[c] if cell[c] is None else _greatest(cell[c], r[c])
        if r["_first_send_ns"] is not None and (cell["_first_send_ns"] is None
                                                or r["_first_send_ns"] < cell["_first_send_ns"]):
            cell["_first_send_ns"] = r["_first_send_ns"]
        for c in _SUMMED:
            cell[c] += r[c] or 0
        if r["_b"] is not None:
            _add_bucket(hist, (key, "e2e_latency_ms"), r["_b"], r["_n_e2e_latency_ms"],
                        r["_lo"], r["_hi"])
    return list(cells.values()), hist


def _probe_figures(samples: DataFrame) -> dict[_Key, dict[str, Any]]:
    """Per cell with ``first_message`` rows: the first-message medians and lost count (an
    aggregation over those few rows only)."""
    keys = list(CELL_KEYS)
    probe_received = F.col("first_record_delay_ms").isNotNull()
    cold = F.coalesce(F.col("cold_start"), F.lit(False))

    def warm_probe(mode: str) -> Column:
        return probe_received & ~cold & (F.col("consumer_mode") == mode)

    probes = (
        samples.where(F.col("sample_kind") == F.lit("first_message")).groupBy(*keys).agg(
            _sorted_list(warm_probe("subscribe"), "first_record_delay_ms").alias("_fm_sub"),
            _sorted_list(warm_probe("assign"), "first_record_delay_ms").alias("_fm_assign"),
            _sorted_list(probe_received & cold, "first_record_delay_ms").alias("_fm_cold"),
            _sorted_list(warm_probe("subscribe"), "assign_delay_ms").alias("_assign_sub"),
            _count_if(~probe_received).alias("first_message_lost_count"))
        .select(*keys,
                _median_of(F.col("_fm_sub")).alias("first_message_subscribe_ms"),
                _median_of(F.col("_fm_assign")).alias("first_message_assign_ms"),
                _median_of(F.col("_fm_cold")).alias("first_message_cold_ms"),
                "first_message_lost_count",
                _median_of(F.col("_assign_sub")).alias("assign_delay_subscribe_ms"))
    )
    return {tuple(r[k] for k in keys): r.asDict() for r in probes.collect()}


_PROBE_COLUMNS = ("first_message_subscribe_ms", "first_message_assign_ms",
                  "first_message_cold_ms", "first_message_lost_count",
                  "assign_delay_subscribe_ms")


def _finish_cell(cell: dict[str, Any], probes: dict[str, Any] | None,
                 cfg: dict[str, Any]) -> dict[str, Any]:
    """The derived columns of a rolled-up cell: means, span, message rates, probes."""
    cell["e2e_latency_ms_mean"] = (cell["_e2e_sum"] / cell["_e2e_cnt"]
                                   if cell["_e2e_cnt"] else None)
    cell["publish_latency_ms_mean"] = (cell["_pub_sum"] / cell["_pub_cnt"]
                                       if cell["_pub_cnt"] else None)
    span_s = None
    if cell["_last_receive_ns"] is not None and cell["_first_send_ns"] is not None:
        span_s = (cell["_last_receive_ns"] - cell["_first_send_ns"]) / 1e9
    cell["measured_span_s"] = span_s if span_s is not None and span_s > 0 else None
    rate = None
    if cell["received_count"] > 0 and cell["measured_span_s"] is not None:
        rate = cell["received_count"] / cell["measured_span_s"]
    cell["message_rate_per_s"] = rate
    cell["message_rate_mb_per_s"] = (
        rate * cell["payload_bytes"] / cfg["bytes_per_mb"]
        if rate is not None and cell["payload_bytes"] is not None else None)
    for c in _PROBE_COLUMNS:
        cell[c] = probes.get(c) if probes else None
    cell["first_message_lost_count"] = cell["first_message_lost_count"] or 0
    return cell


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

    Eager: the per-cell figures and the histograms are computed and collected first, the
    ranks each cell needs are worked out on the driver and placed in buckets, and the rows
    of the few buckets that hold a wanted rank inside are ranked (module docstring).
    Returns a small DataFrame with :data:`AGGREGATE_SCHEMA`.
    """
    cfg = {**DEFAULT_CONFIG, **(config or {})}
    missing = [c for c in REQUIRED_INPUT_COLUMNS if c not in samples.columns]
    if missing:
        raise InputError(f"samples lack required columns: {', '.join(missing)}")
    for col, type_ in OPTIONAL_INPUT_COLUMNS.items():  # written before samples schema 2
        if col not in samples.columns:
            samples = samples.withColumn(col, F.lit(None).cast(type_))

    cells, hist = _cell_scan(samples)
    probes = _probe_figures(samples)
    cells = [_finish_cell(c, probes.get(tuple(c[k] for k in CELL_KEYS)), cfg) for c in cells]
    other = [m for m in shared.METRIC_PERCENTILES
             if m != "e2e_latency_ms" and any(c[f"_n_{m}"] for c in cells)]
    hist.update(_histograms(samples, other))
    wanted = {tuple(c[k] for k in CELL_KEYS): _ranks_wanted(c) for c in cells}
    values = _values_at_ranks(samples, sorted({
        (key, metric, rank)
        for key, per_metric in wanted.items()
        for metric, ranks in per_metric.items()
        for rank in ranks.values() if rank is not None
    }), hist)
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
