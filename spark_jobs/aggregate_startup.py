"""Aggregate one start-up run (``kafkalab startup run``) into two tables (Parquet).

Reads ``<startup>/run_date=*/run_id=<id>/probes.parquet`` (docs/first-message.md, "Files")
and writes ``<out>/run_id=<id>/`` (docs/aggregates-schema.md, "Start-up aggregates"):

* ``startup_probes``: one row per probed consumer, its marks and the parts of its first
  record's delay (``client_start_ms``, ``join_ms``, ``fetch_ms``: each a difference of two of
  its own marks, adding up to ``first_record_ms``) and ``marks_in_order`` (its marks never go
  back in time);
* ``startup_cases``: one row per case: ``probes``, ``failed`` (timed out or failed: kept out of
  every median), ``marks_out_of_order``, and per figure (:data:`FIGURES`) the nearest-rank
  median, min, max and ``n`` of the members that reached it, as ``kafkalab.startup_figures``
  gives them.

Usage::

    spark-submit spark_jobs/aggregate_startup.py --startup lab-data/startup \
        --out lab-data/aggregates/startup --run-id ID [--validate-out lab-data/validation]

Exit codes: 0 success, 2 bad input (missing path, no probes for the run id). Needs PySpark and
``_session.py`` (beside this script, or shipped with ``--py-files``).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

if __package__:  # imported as spark_jobs.aggregate_startup (tests, tools)
    from . import _gx
    from . import _session as shared
    from . import validate_startup as validator
else:  # run as a script: the modules sit beside it or are shipped with --py-files
    import _gx  # type: ignore[no-redef]
    import _session as shared  # type: ignore[no-redef]
    import validate_startup as validator  # type: ignore[no-redef]

__all__ = ["CASE_KEYS", "FIGURES", "PROBES_INPUT", "TABLES", "extract", "main", "run",
           "transform", "with_parts"]

TABLES = ("startup_probes", "startup_cases")

PROBES_INPUT = (
    "run_id string, probe int, trial int, member int, case_key string, client string, "
    "client_version string, join string, group_protocol string, members int, "
    "cluster_state string, initial_rebalance_delay_ms int, kafka_version string, "
    "broker_flavor string, status string, error string, created_ms double, "
    "metadata_ms double, assigned_ms double, first_record_ms double, "
    "offsets_topic_ready_ms double, coordinator_ready_ms double")
"""The columns of ``probes.parquet`` this job reads (schema version 2)."""

CASE_KEYS = ("case_key", "client", "join", "group_protocol", "members", "cluster_state",
             "initial_rebalance_delay_ms", "kafka_version", "broker_flavor")
"""What names a case (one row of ``startup_cases``)."""

FIGURES = ("first_record_ms", "client_start_ms", "join_ms", "fetch_ms",
           "offsets_topic_ready_ms", "coordinator_ready_ms")
"""The figures of a case (``kafkalab.startup_figures.FIGURES``, kept in step by a test)."""


def extract(spark: SparkSession, startup_path: str, run_id: str) -> DataFrame:
    """The run's probe rows.

    Raises:
        shared.InputError: the run left no ``probes.parquet`` (or no row).
    """
    from pyspark.errors import AnalysisException

    path = f"{startup_path.rstrip('/')}/run_date=*/run_id={run_id}/probes.parquet"
    missing = shared.InputError(f"no start-up probes for run id {run_id} under {startup_path}")
    try:
        probes = spark.read.schema(PROBES_INPUT).parquet(path)
        probes.columns  # noqa: B018  # Spark Connect reads lazily: a missing file must fail here
    except AnalysisException:
        raise missing from None
    probes = probes.where(F.col("run_id") == run_id)
    if probes.limit(1).count() == 0:
        raise missing
    return probes


def _minus(end: Column, begin: Column) -> Column:
    return F.when(end.isNotNull() & begin.isNotNull(), end - begin)


def with_parts(probes: DataFrame) -> DataFrame:
    """The probes with their parts and ``marks_in_order`` (see the module docstring)."""
    ready = F.when(F.col("client") == "confluent-kafka", F.col("metadata_ms")).otherwise(
        F.col("created_ms"))
    subscribe = F.col("join") == "subscribe"
    marks = [F.col(c) for c in ("created_ms", "assigned_ms", "first_record_ms")]
    in_order = F.lit(True)
    for earlier, later in itertools.pairwise(marks):
        in_order = in_order & F.coalesce(earlier <= later, F.lit(True))
    cold = (F.col("offsets_topic_ready_ms") <= F.col("coordinator_ready_ms"))
    return (probes
            .withColumn("client_start_ms", ready)
            .withColumn("join_ms", F.when(subscribe, _minus(F.col("assigned_ms"), ready)))
            .withColumn("fetch_ms", _minus(F.col("first_record_ms"),
                                           F.when(subscribe, F.col("assigned_ms")).otherwise(ready)))
            .withColumn("marks_in_order",
                        in_order & (F.col("created_ms") >= 0) & F.coalesce(cold, F.lit(True))))


def _median(col: str) -> Column:
    """The nearest-rank median of the ok rows' non-null ``col`` (null when none)."""
    ordered = F.sort_array(F.collect_list(F.when(F.col("status") == "ok", F.col(col))))
    n = F.size(ordered)
    return F.when(n > 0, F.element_at(ordered, F.ceil(n * F.lit(0.5)).cast("int")))


def transform(probes: DataFrame) -> tuple[DataFrame, DataFrame]:
    """``(startup_probes, startup_cases)`` of one run's probes."""
    parts = with_parts(probes)
    ok = F.col("status") == "ok"
    aggs: list[Column] = [F.count(F.lit(1)).alias("probes"),
                          shared.count_if(~ok).alias("failed"),
                          shared.count_if(~F.col("marks_in_order")).alias("marks_out_of_order"),
                          F.min("probe").alias("first_probe")]
    for fig in FIGURES:
        value = F.when(ok, F.col(fig))
        aggs += [_median(fig).alias(fig), F.min(value).alias(f"{fig}_min"),
                 F.max(value).alias(f"{fig}_max"), F.count(value).alias(f"{fig}_n")]
    cases = (parts.groupBy("run_id", *CASE_KEYS).agg(*aggs)
             .orderBy("first_probe").drop("first_probe"))
    return parts, cases


def run(spark: SparkSession, startup_path: str, out_path: str, run_id: str) -> dict[str, int]:
    """Extract, transform and load one run; returns the rows written per table (swapped in
    as a set: :func:`_session.swap_in_run_tables`)."""
    tables = transform(extract(spark, startup_path, run_id))
    return shared.write_run_tables(dict(zip(TABLES, tables, strict=True)), out_path, run_id)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the process exit code."""
    return shared.run_tables_main(
        argv, run, prog="aggregate_startup",
        description="Aggregate one start-up run into probe and case tables (Parquet).",
        source=("--startup", "start-up probes",
                "start-up probes root (<data>/startup), a local dir or Hadoop URI"),
        out_help="start-up aggregates root; the run goes to <out>/run_id=<id>/",
        validate=lambda spark, out, run_id, validate_out: validator.validate_run(
            spark, out, run_id, validate_out, prog="aggregate_startup --validate-out"),
        warm_up=_gx.preload_gx)


if __name__ == "__main__":
    sys.exit(main())
