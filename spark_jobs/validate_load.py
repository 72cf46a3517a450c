"""Validate one run's load aggregates with Great Expectations (1.x, Spark): suite ``load``.

Reads ``<aggregates>/run_id=<id>/load_cells.parquet`` and ``load_consumers.parquet``
(written by ``spark_jobs/aggregate_load.py``) and checks what can go wrong
(``docs/aggregates-schema.md``, "Load aggregates"):

* ``load_cells`` (one row per cell, failures named by cell id): the four outcomes (acked,
  failed, indeterminate, unsent) add up to ``intended_msgs``; ``loss_pct`` and ``late_pct``
  lie in [0, 100]; ``duplicates`` >= 0; the percentiles of each latency metric are ordered
  (p50 <= p90 <= p99 <= p99.9 <= max, where defined) and the e2e confidence intervals bracket
  their percentile; the cell has one consumer row per consumer;
* ``load_consumers`` (one row per consumer, named ``<cell_id> consumer <k>``): in a cell
  whose status is ``complete`` (fault-free: a pause is not a fault, after the drain nothing
  may be missing) every consumer holds every expected message (``missing_msgs = 0``);
  counts are non-negative.

Output: ``<out>/<run_id>-load.json`` (atomic) and a self-contained ``<out>/<run_id>-load.html``.
No Data Docs: the closed-loop validation owns ``<out>/docs/`` and an ephemeral context would
rebuild its index with the load suites only.

Usage::

    spark-submit spark_jobs/validate_load.py --aggregates lab-data/aggregates/load \
        --run-id ID --out lab-data/validation

Exit codes: 0 valid, 1 validation failed (one ``FAILED`` line per failed expectation on
stderr), 2 bad input. Needs PySpark, great-expectations, ``_session.py`` and ``_gx.py``
(beside this script, or shipped with ``--py-files``).
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

if __package__:  # imported as spark_jobs.validate_load (tests, tools)
    from . import _gx
else:  # run as a script: _gx.py sits beside it or is shipped with --py-files
    import _gx  # type: ignore[no-redef]

__all__ = [
    "CELL_CHECKS",
    "CONSUMER_CHECKS",
    "main",
    "render_html",
    "validate",
    "with_cell_checks",
    "with_consumer_checks",
]

SCHEMA_VERSION = 1
"""Version of the load validation report (``docs/aggregates-schema.md``)."""

SUITE = "load"
LOAD_METRICS = ("e2e", "service_e2e", "publish_delay", "ack_latency")
_ORDER = ("p50", "p90", "p99", "p999", "max")
OUTCOME_COLUMNS = ("acked_msgs", "failed_msgs", "indeterminate_msgs", "unsent_msgs",
                   "aborted_msgs")

#: Computed boolean columns of ``load_cells`` (each must be true on every row).
CELL_CHECKS: dict[str, str] = {
    "outcomes_add_up_ok": "acked + failed + indeterminate + unsent + aborted = intended_msgs",
    **{f"{m}_percentiles_ordered_ok":
       f"{m} p50 <= p90 <= p99 <= p999 <= max (where not null)" for m in LOAD_METRICS},
    "e2e_ci_brackets_ok": "e2e ci_low <= p50 <= ci_high and ci_low <= p99 <= ci_high "
                          "(where not null)",
    "consumer_rows_ok": "one load_consumers row per consumer of the cell",
}
#: Column ranges of ``load_cells``: column -> (min, max or None).
CELL_RANGES: dict[str, tuple[float, float | None]] = {
    "loss_pct": (0.0, 100.0), "late_pct": (0.0, 100.0), "duplicates": (0, None),
    "intended_msgs": (0, None), "expected_msgs": (0, None), "failing_clients": (0, None),
}
CELL_NOT_NULL: tuple[str, ...] = ("cell_id", "status", "intended_msgs", *OUTCOME_COLUMNS,
                                  "expected_msgs", "loss_pct", "duplicates", "consumers")
#: Column ranges of ``load_consumers``.
CONSUMER_RANGES: dict[str, tuple[float, float | None]] = {
    "missing_msgs": (0, None), "duplicates": (0, None), "unique_msgs": (0, None),
    "late_msgs": (0, None), "gaps": (0, None),
}
#: The fault-free rule: (check, column, max, Spark SQL condition of the rows it applies to).
CONSUMER_CHECKS: tuple[tuple[str, str, float, str], ...] = (
    ("in a complete (fault-free) cell every consumer holds every expected message "
     "(missing_msgs = 0)", "missing_msgs", 0, "status = 'complete'"),
)


def with_cell_checks(cells: DataFrame, consumers: DataFrame) -> DataFrame:
    """``load_cells`` with a ``cell`` label and the boolean columns of :data:`CELL_CHECKS`
    (never null)."""
    rows = consumers.groupBy("cell_id").agg(F.count(F.lit(1)).alias("_consumer_rows"))
    out = cells.join(rows, "cell_id", "left").withColumn("cell", F.col("cell_id"))
    outcomes = F.lit(0)
    for c in OUTCOME_COLUMNS:
        outcomes = outcomes + F.col(c)
    cis = F.lit(True)
    for p in ("p50", "p99"):
        cis = cis & _gx.ordered((f"e2e_{p}_ms_ci_low", f"e2e_{p}_ms", f"e2e_{p}_ms_ci_high"))
    checks: dict[str, Column] = {
        "outcomes_add_up_ok": outcomes == F.col("intended_msgs"),
        **{f"{m}_percentiles_ordered_ok": _gx.ordered([f"{m}_{p}_ms" for p in _ORDER])
           for m in LOAD_METRICS},
        "e2e_ci_brackets_ok": cis,
        "consumer_rows_ok": F.coalesce(F.col("_consumer_rows"), F.lit(0)) == F.col("consumers"),
    }
    for name, rule in checks.items():
        out = out.withColumn(name, F.coalesce(rule, F.lit(False)))
    return out


def with_consumer_checks(consumers: DataFrame, cells: DataFrame) -> DataFrame:
    """``load_consumers`` with their cell's ``status`` and a ``cell`` label
    (``<cell_id> consumer <k>``)."""
    return (consumers.join(cells.select("cell_id", "status"), "cell_id", "left")
            .withColumn("cell", F.concat_ws(" consumer ", F.col("cell_id"),
                                            F.col("consumer").cast("string"))))


def _cell_expectations() -> list[Any]:
    """The expectations of part ``load_cells`` (on :func:`with_cell_checks`)."""
    exp = _gx.expectation
    exps = [exp("ExpectTableRowCountToBeBetween", "at least one cell", min_value=1)]
    for col in CELL_NOT_NULL:
        exps.append(exp("ExpectColumnValuesToNotBeNull", f"{col} is never null",
                        column=col))
    for col, (lo, hi) in CELL_RANGES.items():
        what = f"{col} in [{lo:g}, {hi:g}]" if hi is not None else f"{col} >= {lo:g}"
        exps.append(exp("ExpectColumnValuesToBeBetween", what, column=col,
                        min_value=lo, max_value=hi))
    for col, check in CELL_CHECKS.items():
        exps.append(exp("ExpectColumnValuesToBeInSet", check, column=col,
                        value_set=[True]))
    return exps


def _consumer_expectations() -> list[Any]:
    """The expectations of part ``load_consumers`` (on :func:`with_consumer_checks`)."""
    exp = _gx.expectation
    exps = []
    for col, (lo, hi) in CONSUMER_RANGES.items():
        exps.append(exp("ExpectColumnValuesToBeBetween", f"{col} >= {lo:g}", column=col,
                        min_value=lo, max_value=hi))
    for check, col, most, condition in CONSUMER_CHECKS:
        exps.append(exp("ExpectColumnValuesToBeBetween", check, column=col,
                        max_value=most, row_condition=condition,
                        condition_parser="spark"))
    return exps


def validate(cells: DataFrame, consumers: DataFrame,
             config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run suite ``load`` (two parts: ``load_cells``, ``load_consumers``) and return the
    report. ``config``: ``run_id``, ``partial_unexpected_count`` (default 5)."""
    cfg = {"run_id": None, "partial_unexpected_count": 5, **(config or {})}
    context = _gx.ephemeral_context(None)
    checked_cells = with_cell_checks(cells, consumers).cache()
    checked_consumers = with_consumer_checks(consumers, cells).cache()
    parts = [_gx.Part("load_cells", checked_cells, _cell_expectations(), ["cell"]),
             _gx.Part("load_consumers", checked_consumers, _consumer_expectations(), ["cell"])]
    try:
        suites, failed = _gx.run_suites(context, parts, cfg["partial_unexpected_count"])
    finally:
        checked_cells.unpersist()
        checked_consumers.unpersist()
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
    """A small self-contained HTML summary of a load validation report
    (:func:`_gx.parts_page`)."""
    return _gx.parts_page("Load validation", doc)


TABLES: tuple[str, str] = ("load_cells", "load_consumers")
"""The aggregate tables this suite reads."""
SUFFIX = "-load"
"""``validation/<run_id>-load.json``: the result's name."""


def validate_run(spark: SparkSession, aggregates: str, run_id: str, out: str,
                 prog: str = "validate_load") -> int:
    """Validate one run's load tables in ``spark`` and write the result under ``out``;
    returns 0 (valid) or 1 (failed). ``aggregate_load --validate-out`` calls it after
    writing the tables (:func:`_gx.validate_tables_in`)."""
    return _gx.validate_tables_in(spark, validate, render_html, aggregates, run_id, out,
                                  prog=prog, tables=TABLES, suffix=SUFFIX)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns 0 (valid), 1 (validation failed) or 2 (bad input)."""
    return _gx.validate_tables_main(
        argv, validate, render_html, prog="validate_load",
        description="Validate the load aggregates of a run.",
        aggregates_help="load aggregates root", tables=TABLES, suffix=SUFFIX)


if __name__ == "__main__":
    sys.exit(main())
