"""Validate one start-up run's aggregates with Great Expectations (1.x, Spark): suite
``startup``.

Reads ``<aggregates>/run_id=<id>/startup_probes.parquet`` and ``startup_cases.parquet``
(written by ``spark_jobs/aggregate_startup.py``) and checks (docs/aggregates-schema.md,
"Start-up aggregates"):

* ``startup_probes`` (failures named by ``<case_key>#<probe>.<member>``): at least one probe;
  ``status`` is ``ok``, ``timeout`` or ``error``; an ok probe has its first record; every
  probe's marks are in order (created >= 0, created <= assigned <= first record, the offsets
  topic led before its coordinator answered); the parts are non-negative (a part below zero
  would be a clock or a bookkeeping error);
* ``startup_cases`` (failures named by the case key): failed <= probes, each figure's ``n``
  <= probes - failed, each median between its min and max, no probe with its marks out of
  order, and the cluster's initial rebalance delay as the case asked.

Output: ``<out>/<run_id>-startup.json`` (atomic) and ``<out>/<run_id>-startup.html``, with the
keys of the other suites (``suite``, ``run_id``, ``success``, ``suites``,
``failed_expectations``).

Usage::

    spark-submit spark_jobs/validate_startup.py --aggregates lab-data/aggregates/startup \
        --run-id ID --out lab-data/validation

Exit codes: 0 valid, 1 validation failed, 2 bad input. Needs PySpark, great-expectations,
``_session.py`` and ``_gx.py`` (beside this script, or shipped with ``--py-files``).
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

if __package__:  # imported as spark_jobs.validate_startup (tests, tools)
    from . import _gx
else:  # run as a script: _gx.py sits beside it or is shipped with --py-files
    import _gx  # type: ignore[no-redef]

__all__ = ["CASE_CHECKS", "SUFFIX", "TABLES", "main", "render_html", "validate",
           "validate_run", "with_case_checks", "with_probe_checks"]

SCHEMA_VERSION = 1
SUITE = "startup"
TABLES: tuple[str, str] = ("startup_probes", "startup_cases")
"""The aggregate tables this suite reads."""
SUFFIX = "-startup"
"""``validation/<run_id>-startup.json``: the result's name."""

STATUSES = ["ok", "timeout", "error"]
PARTS = ("client_start_ms", "join_ms", "fetch_ms")
FIGURES = ("first_record_ms", "client_start_ms", "join_ms", "fetch_ms",
           "offsets_topic_ready_ms", "coordinator_ready_ms")
CASE_CHECKS: dict[str, str] = {
    "counts_ok": "failed <= probes and each figure's n <= probes - failed",
    "medians_ok": "each figure's median lies between its min and its max",
    "marks_ok": "no probe of the case has its marks out of order",
}
"""The computed boolean columns of ``startup_cases`` and the rule each states."""


def with_probe_checks(probes: DataFrame) -> DataFrame:
    """``startup_probes`` with a ``cell`` label (``<case_key>#<probe>.<member>``)."""
    return probes.withColumn("cell", F.concat_ws("", "case_key", F.lit("#"), "probe",
                                                  F.lit("."), "member"))


def with_case_checks(cases: DataFrame) -> DataFrame:
    """``startup_cases`` with a ``cell`` label (the case key) and the boolean columns of
    :data:`CASE_CHECKS` (never null)."""
    good = F.col("probes") - F.col("failed")
    counts: Column = (F.col("failed") >= 0) & (F.col("failed") <= F.col("probes"))
    medians: Column = F.lit(True)
    for fig in FIGURES:
        counts = counts & (F.col(f"{fig}_n") <= good)
        medians = medians & _gx.ordered((f"{fig}_min", fig, f"{fig}_max"))
    return (cases.withColumn("cell", F.col("case_key"))
            .withColumn("counts_ok", F.coalesce(counts, F.lit(False)))
            .withColumn("medians_ok", F.coalesce(medians, F.lit(False)))
            .withColumn("marks_ok", F.coalesce(F.col("marks_out_of_order") == 0, F.lit(False))))


def _probe_expectations() -> list[Any]:
    exp = _gx.expectation
    exps = [exp("ExpectTableRowCountToBeBetween", "at least one probe", min_value=1),
            exp("ExpectColumnValuesToBeInSet", f"status in {STATUSES}", column="status",
                value_set=STATUSES),
            exp("ExpectColumnValuesToNotBeNull", "an ok probe has its first record",
                column="first_record_ms", row_condition="status = 'ok'",
                condition_parser="spark"),
            exp("ExpectColumnValuesToBeInSet", "every probe's marks are in order",
                column="marks_in_order", value_set=[True])]
    for part in PARTS:
        exps.append(exp("ExpectColumnValuesToBeBetween", f"{part} >= 0", column=part,
                        min_value=0))
    return exps


def _case_expectations() -> list[Any]:
    exp = _gx.expectation
    exps = [exp("ExpectTableRowCountToBeBetween", "at least one case", min_value=1)]
    for col, check in CASE_CHECKS.items():
        exps.append(exp("ExpectColumnValuesToBeInSet", check, column=col, value_set=[True]))
    return exps


def validate(probes: DataFrame, cases: DataFrame,
             config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run suite ``startup`` (two parts: ``startup_probes``, ``startup_cases``) and return the
    report. ``config``: ``run_id``, ``partial_unexpected_count`` (default 5)."""
    cfg = {"run_id": None, "partial_unexpected_count": 5, **(config or {})}
    context = _gx.ephemeral_context(None)
    checked_probes = with_probe_checks(probes).cache()
    checked_cases = with_case_checks(cases).cache()
    parts = [_gx.Part("startup_probes", checked_probes, _probe_expectations(), ["cell"]),
             _gx.Part("startup_cases", checked_cases, _case_expectations(), ["cell"])]
    try:
        suites, failed = _gx.run_suites(context, parts, cfg["partial_unexpected_count"])
    finally:
        checked_probes.unpersist()
        checked_cases.unpersist()
    return {
        "schema_version": SCHEMA_VERSION,
        "suite": SUITE,
        "run_id": cfg["run_id"],
        "validated_at": dt.datetime.now(dt.UTC).isoformat(),
        "success": all(s["success"] for s in suites.values()),
        "suites": suites,
        "failed_expectations": failed,
    }


def render_html(doc: dict[str, Any]) -> str:
    """A small self-contained HTML summary of a start-up validation (:func:`_gx.parts_page`)."""
    return _gx.parts_page("Start-up validation", doc)


def validate_run(spark: SparkSession, aggregates: str, run_id: str, out: str,
                 prog: str = "validate_startup") -> int:
    """Validate one run's start-up tables in ``spark`` and write the result under ``out``;
    returns 0 (valid) or 1 (failed). ``aggregate_startup --validate-out`` calls it after
    writing the tables (:func:`_gx.validate_tables_in`)."""
    return _gx.validate_tables_in(spark, validate, render_html, aggregates, run_id, out,
                                  prog=prog, tables=TABLES, suffix=SUFFIX)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns 0 (valid), 1 (validation failed) or 2 (bad input)."""
    return _gx.validate_tables_main(
        argv, validate, render_html, prog="validate_startup",
        description="Validate the start-up aggregates of a run.",
        aggregates_help="start-up aggregates root", tables=TABLES, suffix=SUFFIX)


if __name__ == "__main__":
    sys.exit(main())
