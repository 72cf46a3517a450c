"""Aggregate the raw latency samples of Kafka Latency Lab into one row per cell.

Extract the Hive-partitioned raw samples (``docs/metrics-schema.md``), transform them into
one row per run_id × scenario × client × payload × profile (``docs/aggregates-schema.md``)
and load the result as Parquet under ``<out>/run_id=<id>/``, replacing only the partitions
of the runs being aggregated (dynamic partition overwrite: re-running is idempotent).

Usage::

    spark-submit spark_jobs/aggregate_metrics.py --samples lab-data/samples \
        --out lab-data/aggregates [--run-id ID ...]
    python spark_jobs/aggregate_metrics.py ...        # builds its own local session

``--validate-out DIR`` (with one ``--run-id``) then validates the run in the same Spark
session, exactly as ``validate_metrics.py --out DIR`` would (its report, HTML and Data Docs
under ``DIR``): one JVM start instead of two. The exit code stays the aggregation's; the
validation's verdict is in ``DIR/<run_id>.json`` (the DAG's ``validate_metrics`` task judges
it: param ``spark_jobs``).

Needs PySpark, ``_session.py``, ``_gx.py`` and ``validate_metrics.py`` (beside this script,
or shipped with ``--py-files``), not the ``kafkalab`` package; GX only with
``--validate-out``.
Exit codes: 0 success, 2 bad input (missing path, no rows for the run id, bad arguments).
"""

from __future__ import annotations

import argparse
import bisect
import functools
import itertools
import json
import math
import operator
import re
import sys
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

if __package__:  # imported as spark_jobs.aggregate_metrics (tests, tools)
    from . import _gx
    from . import _session as shared
    from . import validate_metrics as validator
else:  # run as a script: the modules sit beside it or are shipped with --py-files
    import _gx  # type: ignore[no-redef]
    import _session as shared  # type: ignore[no-redef]
    import validate_metrics as validator  # type: ignore[no-redef]

__all__ = [
    "AGGREGATE_COLUMNS",
    "AGGREGATE_SCHEMA",
    "CARRIED_COLUMNS",
    "CELL_KEYS",
    "OPTIONAL_INPUT_COLUMNS",
    "REQUIRED_INPUT_COLUMNS",
    "SCHEMA_VERSION",
    "extract",
    "load",
    "main",
    "run",
    "tool_messages",
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
_CI_COLUMNS = tuple(f"e2e_latency_ms_{name}_ci_{side}"
                    for name in shared.stats.CI_PERCENTILES for side in ("low", "high"))
_STRING_COLUMNS = frozenset({
    *CELL_KEYS, "run_date", "workload", "payload_encoding", "cluster_flavor",
    "broker_version", "loop_mode", "client_settings", "e2e_latency_ms_percentiles_note",
    "tool_percentiles_note", "percentile_method",
})
_LONG_COLUMNS = frozenset({*_COUNTS, "payload_bytes", "planned_messages",
                           "first_message_lost_count", "tool_messages"})

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
    "tool_p50_ms", "tool_p99_ms", "tool_p999_ms", "tool_avg_ms", "tool_messages",
    "tool_percentiles_note",
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


# --------------------------------------------------------------------------- populations

_FIRST_MESSAGE_MEDIANS: dict[str, str] = {
    "_fm_subscribe": "first_message_subscribe_ms",
    "_fm_assign": "first_message_assign_ms",
    "_fm_cold": "first_message_cold_ms",
    "_assign_subscribe": "assign_delay_subscribe_ms",
}
"""Probe populations (see :func:`_populations`) and the output column of each one's median."""


def _populations() -> dict[str, Column]:
    """Every population an order statistic is taken of: per population, the row's value in
    it (null: not in it).

    Latency metrics: ``e2e_latency_ms``: non-warm-up messages; received ones (ok/late) with
    their latency, lost and failed ones (lost/error) censored as +inf.
    ``publish_latency_ms`` and ``round_trip_ms``: received messages' values, no censoring
    (as ``kafkalab.summary.summarize_rows``). First-message probes (their medians only):
    ``_fm_subscribe`` / ``_fm_assign``, the delays of the received warm probes of each
    consumer mode; ``_fm_cold``, of the received cold probe(s); ``_assign_subscribe``, the
    assignment delays of the warm subscribe probes.
    """
    measured = (F.col("sample_kind") == "message") & ~F.col("is_warmup")
    received = (measured & F.col("status").isin(*STATUSES_RECEIVED)
                & F.col("e2e_latency_ms").isNotNull())
    censored = measured & F.col("status").isin(*STATUSES_CENSORED)
    probe = (F.col("sample_kind") == "first_message") & F.col("first_record_delay_ms").isNotNull()
    cold = F.coalesce(F.col("cold_start"), F.lit(False))
    warm_subscribe = probe & ~cold & (F.col("consumer_mode") == "subscribe")
    delay = F.col("first_record_delay_ms").cast("double")
    return {
        "e2e_latency_ms": F.when(censored, F.lit(float("inf")))
        .when(received, F.col("e2e_latency_ms").cast("double")),
        "publish_latency_ms": F.when(received, F.col("publish_latency_ms").cast("double")),
        "round_trip_ms": F.when(received, F.col("round_trip_ms").cast("double")),
        "_fm_subscribe": F.when(warm_subscribe, delay),
        "_fm_assign": F.when(probe & ~cold & (F.col("consumer_mode") == "assign"), delay),
        "_fm_cold": F.when(probe & cold, delay),
        "_assign_subscribe": F.when(warm_subscribe, F.col("assign_delay_ms").cast("double")),
    }


# --------------------------------------------------------------------------- cell figures

_SUMMED = ("sent_count", "received_count", "lost_count", "duplicate_count", "late_count",
           "error_count", "warmup_excluded_count", "first_message_lost_count",
           "_e2e_sum", "_e2e_cnt", "_pub_sum", "_pub_cnt")
_MAXED = ("e2e_latency_ms_max", "publish_latency_ms_max", "_last_receive_ns",
          "tool_p50_ms", "tool_p99_ms", "tool_p999_ms", "tool_avg_ms", "latency_resolution_ms")
_MINNED = ("_first_send_ns",)


def _cell_figures(samples: DataFrame, cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Everything of a cell but its order statistics, one dict per cell: carried columns,
    counts, means, maxima, span and message rate, first-message lost count and tool figures.

    One aggregation over every row, grouped by the cell key *and* the carried columns (a
    cell has one value of each, so the groups are the cells): every aggregate is then a
    fixed-width number and Spark runs its compiled hash aggregation (a string ``max`` or a
    ``collect_list`` would make it interpret every row). The groups are rolled up per cell
    on the driver (largest carried value, sums, maxima, minima), and the derived figures
    (means, span, rates) computed from the sums as Spark's ``avg`` and arithmetic do.
    """
    kind = F.col("sample_kind")
    status = F.col("status")
    is_msg = kind == F.lit("message")
    measured = is_msg & ~F.col("is_warmup")
    received = measured & status.isin(*STATUSES_RECEIVED)
    sent = measured & status.isin(*STATUSES_RECEIVED, *STATUSES_CENSORED)
    is_first = kind == F.lit("first_message")
    is_tool = kind == F.lit("tool_summary")
    e2e = F.col("e2e_latency_ms").cast("double")
    publish = F.col("publish_latency_ms").cast("double")

    def tool(stat: str) -> Column:
        return F.max(F.when(is_tool & (F.col("statistic") == stat), e2e))

    groups = samples.groupBy(*CELL_KEYS, *CARRIED_COLUMNS).agg(
        shared.count_if(sent).alias("sent_count"),
        shared.count_if(received).alias("received_count"),
        shared.count_if(measured & (status == "lost")).alias("lost_count"),
        shared.count_if(measured & (status == "duplicate")).alias("duplicate_count"),
        shared.count_if(measured & (status == "late")).alias("late_count"),
        shared.count_if(measured & (status == "error")).alias("error_count"),
        shared.count_if(is_msg & F.col("is_warmup")).alias("warmup_excluded_count"),
        shared.count_if(is_first & F.col("first_record_delay_ms").isNull())
        .alias("first_message_lost_count"),
        F.sum(F.when(received, e2e)).alias("_e2e_sum"),
        F.count(F.when(received, e2e)).alias("_e2e_cnt"),
        F.max(F.when(received, e2e)).alias("e2e_latency_ms_max"),
        F.sum(F.when(received, publish)).alias("_pub_sum"),
        F.count(F.when(received, publish)).alias("_pub_cnt"),
        F.max(F.when(received, publish)).alias("publish_latency_ms_max"),
        F.min(F.when(sent, F.col("send_ts_ns"))).alias("_first_send_ns"),
        F.max(F.when(received, F.col("receive_ts_ns"))).alias("_last_receive_ns"),
        tool("p50").alias("tool_p50_ms"),
        tool("p99").alias("tool_p99_ms"),
        tool("p99.9").alias("tool_p999_ms"),
        tool("avg").alias("tool_avg_ms"),
        F.max("latency_resolution_ms").alias("latency_resolution_ms"),
    )
    cells: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in groups.collect():
        g = r.asDict()
        cell = cells.setdefault(tuple(g[k] for k in CELL_KEYS), g)
        if cell is g:
            continue
        for c in (*CARRIED_COLUMNS, *_MAXED):
            cell[c] = _greatest(cell[c], g[c])
        for c in _MINNED:
            cell[c] = g[c] if cell[c] is None else cell[c] if g[c] is None else min(cell[c], g[c])
        for c in _SUMMED:
            cell[c] = None if cell[c] is None and g[c] is None else (cell[c] or 0) + (g[c] or 0)
    out = []
    for cell in cells.values():
        cell["e2e_latency_ms_mean"] = (cell["_e2e_sum"] / cell["_e2e_cnt"]
                                       if cell["_e2e_cnt"] else None)
        cell["publish_latency_ms_mean"] = (cell["_pub_sum"] / cell["_pub_cnt"]
                                           if cell["_pub_cnt"] else None)
        first, last = cell["_first_send_ns"], cell["_last_receive_ns"]
        span_s = None if first is None or last is None else (last - first) / 1e9
        cell["measured_span_s"] = span_s if span_s is not None and span_s > 0 else None
        rate = (cell["received_count"] / cell["measured_span_s"]
                if cell["received_count"] > 0 and cell["measured_span_s"] is not None else None)
        cell["message_rate_per_s"] = rate
        cell["message_rate_mb_per_s"] = (
            None if rate is None or cell["payload_bytes"] is None
            else rate * cell["payload_bytes"] / cfg["bytes_per_mb"])
        cell.update(_tool_minimums(cell))
        out.append(cell)
    return out


TOOL_TIMED_MESSAGES_SETTING = "tool.timed_messages"
"""The ``client_settings`` key in which ``jvm-e2e`` records how many messages the tool timed
(warm-up + measured: ``"1002 (the warm-up included: ...)"``)."""

_TOOL_PERCENTILES: tuple[tuple[str, str], ...] = (("p99", "tool_p99_ms"), ("p999", "tool_p999_ms"))
"""The tool's percentiles that have a minimum sample count above 1: (name, column)."""


def tool_messages(client_settings: str | None, planned_messages: int | None) -> int | None:
    """How many messages Kafka's tool timed in a ``jvm-e2e`` cell (its percentiles'
    population): the count its ``client_settings`` record (``tool.timed_messages``), else
    ``planned_messages`` (a lower bound: the warm-up unrecorded), else None (unknown)."""
    if client_settings:
        try:
            settings = json.loads(client_settings)
        except ValueError:
            settings = None
        timed = settings.get(TOOL_TIMED_MESSAGES_SETTING) if isinstance(settings, dict) else None
        found = re.match(r"\s*(\d+)", str(timed)) if timed is not None else None
        if found:
            return int(found.group(1))
    return None if planned_messages is None else int(planned_messages)


def _tool_minimums(cell: dict[str, Any]) -> dict[str, Any]:
    """``tool_messages``, the tool's p99/p99.9 nulled below their minimum sample count
    (:data:`kafkalab.stats.MIN_SAMPLES`: p99 100, p99.9 1,000, as every lab percentile) and
    ``tool_percentiles_note`` saying so (``p99: n<100; p999: n<1000``). A cell without tool
    figures gets nulls; an unknown count leaves the figures as printed."""
    if all(cell[c] is None for c in ("tool_p50_ms", "tool_p99_ms", "tool_p999_ms", "tool_avg_ms")):
        return {"tool_messages": None, "tool_percentiles_note": None}
    n = tool_messages(cell["client_settings"], cell["planned_messages"])
    out: dict[str, Any] = {"tool_messages": n}
    reasons = []
    for name, col in _TOOL_PERCENTILES:
        need = shared.stats.MIN_SAMPLES[name]
        if n is not None and n < need:
            out[col] = None
            reasons.append(f"{name}: n<{need}")
    out["tool_percentiles_note"] = "; ".join(reasons) or None
    return out


def _greatest(a: Any, b: Any) -> Any:
    """Spark's ``max`` of two values: nulls ignored, strings by code point (UTF-8 byte
    order), NaN above every number."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, float) and math.isnan(a):
        return a
    if isinstance(b, float) and math.isnan(b):
        return b
    return max(a, b)


# --------------------------------------------------------------------------- order statistics

_BUCKETS_PER_E_FOLD = 1024
"""Resolution of the histogram: buckets per factor e of a value (each about 0.1 % wide)."""
_NEG_INF_BUCKET = -3_000_000_000
_NEGATIVE_BASE = -2_000_000_000
_ZERO_BUCKET = -1_000_000_000
_INF_BUCKET = 1_000_000_000
_NAN_BUCKET = 1_000_000_001

_Key = tuple[Any, ...]
_Pop = tuple[_Key, str]
"""A population: (cell key, population name)."""
_Wanted = tuple[_Key, str, int]
"""A wanted order statistic: (cell key, population name, 1-based rank)."""


def _bucket(value: Column) -> Column:
    """The histogram bucket of ``value``: a never decreasing function of the value, so every
    value of a bucket sorts before every value of a higher bucket.

    Positive values: ``floor(ln(v) · 1024)`` (Java's log is semi-monotonic, and the product
    and the floor keep the order), about 0.1 % of the value wide. Zero, negative values,
    ±inf and NaN (Spark sorts NaN after +inf) get buckets of their own below and above
    those. Null for a null value."""
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


def _population_rows(samples: DataFrame) -> DataFrame:
    """One row ``(cell key, _m, _v, _b)`` per value of every population of every sample
    row: population code ``_m`` (the position in :func:`_populations`), value, bucket."""
    populations = _populations()
    return (
        samples.select(*CELL_KEYS, F.inline(F.array(*[
            F.struct(F.lit(code).alias("_m"), value.alias("_v"))
            for code, value in enumerate(populations.values())
        ])))
        .where(F.col("_v").isNotNull())
        .withColumn("_b", _bucket(F.col("_v")))
    )


def _histograms(samples: DataFrame) -> dict[_Pop, list[tuple[int, int, float, float]]]:
    """Per population with values, its non-empty buckets ``(bucket, count, min, max)`` in
    bucket order: one compiled hash aggregation over the samples."""
    names = list(_populations())
    hist = (_population_rows(samples)
            .groupBy(*CELL_KEYS, "_m", "_b")
            .agg(F.count(F.lit(1)).alias("_n"), F.min("_v").alias("_lo"),
                 F.max("_v").alias("_hi")))
    out: dict[_Pop, list[tuple[int, int, float, float]]] = {}
    for r in hist.collect():
        out.setdefault((tuple(r[k] for k in CELL_KEYS), names[r["_m"]]), []).append(
            (r["_b"], r["_n"], r["_lo"], r["_hi"]))
    for buckets in out.values():
        buckets.sort(key=lambda b: b[0])
    return out


def _values_at_ranks(samples: DataFrame, wanted: Sequence[_Wanted],
                     hist: dict[_Pop, list[tuple[int, int, float, float]]]
                     ) -> dict[_Wanted, float]:
    """The value at each wanted ``(cell key, population, rank)`` of the sorted populations.

    The cumulative bucket counts tell in which bucket, and at which rank inside it, each
    wanted rank lies. A bucket's first or last rank is its minimum or maximum, and a bucket
    of equal values is answered whole; for the rest, only the values of those buckets are
    gathered and sorted (:func:`_values_in_buckets`)."""
    ends: dict[_Pop, list[int]] = {
        pop: list(itertools.accumulate(n for _, n, _, _ in buckets))
        for pop, buckets in hist.items()}
    values: dict[_Wanted, float] = {}
    pending: dict[tuple[_Key, str, int, int], list[_Wanted]] = {}
    for want in wanted:
        key, name, rank = want
        cumulative = ends.get((key, name), [])
        i = bisect.bisect_left(cumulative, rank)
        if i == len(cumulative):  # beyond the population (never asked: a rank is <= n)
            continue
        bucket, n, lo, hi = hist[(key, name)][i]
        local = rank - (cumulative[i] - n)
        if local == 1 or lo == hi or (math.isnan(lo) and math.isnan(hi)):
            values[want] = lo
        elif local == n:
            values[want] = hi
        else:
            pending.setdefault((key, name, bucket, local), []).append(want)
    if pending:
        for target, value in _values_in_buckets(samples, list(pending)).items():
            for want in pending[target]:
                values[want] = value
    return values


def _values_in_buckets(samples: DataFrame, targets: Sequence[tuple[_Key, str, int, int]]
                       ) -> dict[tuple[_Key, str, int, int], float]:
    """The value at local rank ``r`` of bucket ``b`` of each target ``(cell key, population,
    b, r)``. One pass over the samples keeps only the values of those buckets (a filter on
    the bucket numbers, then on a hash of cell, population and bucket: a few % of the
    values), gathers them per bucket (``sort_array(collect_list(...))``) and picks the ranks
    (``element_at``, a broadcast join with the targets)."""
    spark = samples.sparkSession
    codes = {name: code for code, name in enumerate(_populations())}
    schema = ", ".join([*(f"{k} string" for k in CELL_KEYS), "_m int", "_b long", "_r int"])
    wanted = spark.createDataFrame(
        [(*key, codes[name], bucket, rank) for key, name, bucket, rank in targets], schema)
    group_hash = F.xxhash64(*CELL_KEYS, "_m", "_b")
    hashes = sorted({r[0] for r in wanted.select(group_hash).distinct().collect()})
    by_code: dict[int, set[int]] = {}
    for _, name, bucket, _ in targets:
        by_code.setdefault(codes[name], set()).add(bucket)
    in_buckets = functools.reduce(operator.or_, [
        (F.col("_m") == code) & F.col("_b").isin(sorted(buckets))
        for code, buckets in sorted(by_code.items())])
    gathered = (_population_rows(samples)
                .where(in_buckets)
                .where(group_hash.isin(hashes))
                .groupBy(*CELL_KEYS, "_m", "_b")
                .agg(F.sort_array(F.collect_list("_v")).alias("_vs")))
    picked = gathered.join(F.broadcast(wanted), on=[*CELL_KEYS, "_m", "_b"], how="inner")
    names = list(codes)
    return {(tuple(r[k] for k in CELL_KEYS), names[r["_m"]], r["_b"], r["_r"]): r["_v"]
            for r in picked.select(*CELL_KEYS, "_m", "_b", "_r",
                                   F.element_at("_vs", F.col("_r")).alias("_v")).collect()}


def _ranks_wanted(cell: dict[str, Any]) -> dict[str, dict[str, int | None]]:
    """Per population, the rank each statistic of ``cell`` needs (None: undefined for want
    of samples). Keys: percentile names (``p99``), for ``e2e_latency_ms`` also CI bounds
    (``p50_ci_low``), for a first-message population ``median`` (rank ``ceil(n/2)``)."""
    wanted: dict[str, dict[str, int | None]] = {}
    for metric, percentiles in shared.METRIC_PERCENTILES.items():
        n = int(cell[f"_n_{metric}"])
        ranks: dict[str, int | None] = {
            name: (shared.stats.fraction_rank(n, num, den)
                   if n >= shared.stats.MIN_SAMPLES[name] else None)
            for name, (num, den) in percentiles.items()
        }
        if metric == "e2e_latency_ms":
            for name in shared.stats.CI_PERCENTILES:
                num, den = percentiles[name]
                ranks[f"{name}_ci_low"], ranks[f"{name}_ci_high"] = shared.stats.quantile_ci_ranks(
                    n, num / den, shared.stats.CI_CONFIDENCE)
        wanted[metric] = ranks
    for population in _FIRST_MESSAGE_MEDIANS:
        n = int(cell[f"_n_{population}"])
        wanted[population] = {"median": shared.stats.fraction_rank(n, 1, 2) if n > 0 else None}
    return wanted


def _percentile_columns(cell: dict[str, Any], wanted: dict[str, dict[str, int | None]],
                        values: dict[_Wanted, float]) -> dict[str, Any]:
    """The percentile, CI, note and first-message median columns of one cell from the
    picked values: a rank that lands on a censored value (+inf) gives null (reason
    ``censored``), an undefined rank null (reason ``n<MIN``)."""
    key = tuple(cell[k] for k in CELL_KEYS)
    out: dict[str, Any] = {}
    reasons: list[str] = []
    for metric, ranks in wanted.items():
        for name, rank in ranks.items():
            value = values.get((key, metric, rank)) if rank is not None else None
            if metric in _FIRST_MESSAGE_MEDIANS:
                out[_FIRST_MESSAGE_MEDIANS[metric]] = value
                continue
            if value is not None and math.isinf(value):
                value = None
            out[f"{metric}_{name}"] = value
            if metric != "e2e_latency_ms" or name not in shared.METRIC_PERCENTILES[metric]:
                continue
            if rank is None:
                reasons.append(f"{name}: n<{shared.stats.MIN_SAMPLES[name]}")
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

    Eager, three compiled aggregations over the samples, none of which sorts or shuffles
    the rows: the per-cell figures (:func:`_cell_figures`), a histogram of every population
    per cell (:func:`_histograms`: value buckets about 0.1 % wide), from whose cumulative
    counts the driver finds the bucket of every wanted rank, and one pass that gathers and
    sorts only the values of those buckets (:func:`_values_in_buckets`). Exact, and the
    memory it takes is the histogram plus the values of the wanted buckets, not the rows.
    Returns a small DataFrame with :data:`AGGREGATE_SCHEMA`.
    """
    cfg = {**DEFAULT_CONFIG, **(config or {})}
    missing = [c for c in REQUIRED_INPUT_COLUMNS if c not in samples.columns]
    if missing:
        raise shared.InputError(f"samples lack required columns: {', '.join(missing)}")
    for col, type_ in OPTIONAL_INPUT_COLUMNS.items():  # written before samples schema 2
        if col not in samples.columns:
            samples = samples.withColumn(col, F.lit(None).cast(type_))

    cells = _cell_figures(samples, cfg)
    hist = _histograms(samples)
    for cell in cells:
        key = tuple(cell[k] for k in CELL_KEYS)
        for name in _populations():
            cell[f"_n_{name}"] = sum(n for _, n, _, _ in hist.get((key, name), []))
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
        row["ci_confidence"] = shared.stats.CI_CONFIDENCE
        row["percentile_method"] = PERCENTILE_METHOD
        rows.append(row)
    return shared.driver_frame(samples.sparkSession, rows, AGGREGATE_SCHEMA)


def extract(spark: SparkSession, samples_path: str, run_ids: Sequence[str] = ()) -> DataFrame:
    """Read the raw samples (Hive layout) below ``samples_path``, optionally for some runs
    (then only their folders are read: :func:`_session.run_sample_paths`).

    Partition values are read as strings (no type inference: ``run_date`` stays a string).
    Raises :class:`_session.InputError` when the path is missing or holds no rows for the
    run ids.
    """
    if run_ids:
        df = shared.read_parquet(spark, shared.run_sample_paths(samples_path, run_ids),
                                 "samples", base_path=samples_path)
    else:
        df = shared.read_parquet(spark, samples_path, "samples")
    for col in ("run_id", "run_date"):
        if col not in df.columns:
            raise shared.InputError(
                f"samples at {samples_path} have no {col} column: point --samples at the "
                "samples/ root (run_date=.../run_id=... below it)"
            )
    if run_ids:
        df = df.where(F.col("run_id").isin(list(run_ids)))
    if not df.limit(1).take(1):
        which = f"run id(s) {', '.join(run_ids)}" if run_ids else "any run"
        raise shared.InputError(f"no samples for {which} under {samples_path}")
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
    p = shared.job_parser(
        "aggregate_metrics", "Aggregate raw latency samples into one row per cell (Parquet).",
        {"--samples": "samples root (Hive layout), any Hadoop-compatible URI or local dir",
         "--out": "aggregates root"})
    p.add_argument("--run-id", dest="run_ids", action="append", default=[], nargs="+",
                   metavar="ID", help="run id(s) to aggregate (repeatable); default: all runs")
    p.add_argument("--validate-out", default=None, metavar="DIR",
                   help="then validate the run (one --run-id) in the same Spark session, as "
                   "validate_metrics.py --out DIR does: one JVM start instead of two")
    p.add_argument("--profiles-durable", default="durability",
                   help="with --validate-out: the profiles that promise no loss")
    ns = p.parse_args(argv)
    ns.run_ids = [r for group in ns.run_ids for r in group]
    if ns.validate_out is not None and len(ns.run_ids) != 1:
        p.error("--validate-out needs exactly one --run-id")
    return ns


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the process exit code."""
    args = _parse_args(argv)

    def aggregate(spark: SparkSession) -> int:
        n = run(spark, args.samples, args.out, args.run_ids)
        runs = ", ".join(args.run_ids) if args.run_ids else "all runs"
        print(f"aggregate_metrics: wrote {n} aggregate rows for {runs} to {args.out}")
        if args.validate_out is not None:
            # The aggregation succeeded whatever the validation finds: its verdict is in
            # <validate-out>/<run_id>.json, judged by the validate_metrics task.
            validator.validate_run(spark, args.samples, args.out, args.run_ids[0],
                                   args.validate_out,
                                   validator.durable_list(args.profiles_durable),
                                   prog="aggregate_metrics --validate-out")
        return 0

    return shared.run_job(
        "aggregate_metrics", aggregate, inputs={"samples": args.samples},
        # GX is imported while the JVM starts
        warm_up=_gx.preload_gx if args.validate_out is not None else None)


if __name__ == "__main__":
    sys.exit(main())
