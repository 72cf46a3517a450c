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
stderr), 2 bad input. Needs PySpark, great-expectations, ``_session.py`` and
``validate_metrics.py`` (the GX plumbing; beside this script, or shipped with ``--py-files``).
"""

from __future__ import annotations

import datetime as dt
import html
import os
import sys
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

if __package__:  # imported as spark_jobs.validate_load (tests, tools)
    from . import _session as shared
    from . import validate_metrics as vm
else:  # run as a script: the modules sit beside it or are shipped with --py-files
    import _session as shared  # type: ignore[no-redef]
    import validate_metrics as vm  # type: ignore[no-redef]

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
OUTCOME_COLUMNS = ("acked_msgs", "failed_msgs", "indeterminate_msgs", "unsent_msgs")

#: Computed boolean columns of ``load_cells`` (each must be true on every row).
CELL_CHECKS: dict[str, str] = {
    "outcomes_add_up_ok": "acked + failed + indeterminate + unsent = intended_msgs",
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


def _ordered(cols: Sequence[str]) -> Column:
    return vm._ordered(cols)


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
        cis = cis & _ordered((f"e2e_{p}_ms_ci_low", f"e2e_{p}_ms", f"e2e_{p}_ms_ci_high"))
    checks: dict[str, Column] = {
        "outcomes_add_up_ok": outcomes == F.col("intended_msgs"),
        **{f"{m}_percentiles_ordered_ok": _ordered([f"{m}_{p}_ms" for p in _ORDER])
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
    exps = [vm._exp("ExpectTableRowCountToBeBetween", "at least one cell", min_value=1)]
    for col in CELL_NOT_NULL:
        exps.append(vm._exp("ExpectColumnValuesToNotBeNull", f"{col} is never null",
                            column=col))
    for col, (lo, hi) in CELL_RANGES.items():
        what = f"{col} in [{lo:g}, {hi:g}]" if hi is not None else f"{col} >= {lo:g}"
        exps.append(vm._exp("ExpectColumnValuesToBeBetween", what, column=col,
                            min_value=lo, max_value=hi))
    for col, check in CELL_CHECKS.items():
        exps.append(vm._exp("ExpectColumnValuesToBeInSet", check, column=col,
                            value_set=[True]))
    return exps


def _consumer_expectations() -> list[Any]:
    exps = []
    for col, (lo, hi) in CONSUMER_RANGES.items():
        exps.append(vm._exp("ExpectColumnValuesToBeBetween", f"{col} >= {lo:g}", column=col,
                            min_value=lo, max_value=hi))
    for check, col, most, condition in CONSUMER_CHECKS:
        exps.append(vm._exp("ExpectColumnValuesToBeBetween", check, column=col,
                            max_value=most, row_condition=condition,
                            condition_parser="spark"))
    return exps


def validate(cells: DataFrame, consumers: DataFrame,
             config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run suite ``load`` (two parts: ``load_cells``, ``load_consumers``) and return the
    report. ``config``: ``run_id``, ``partial_unexpected_count`` (default 5)."""
    cfg = {"run_id": None, "partial_unexpected_count": 5, **(config or {})}
    context = vm._context(None)
    checked_cells = with_cell_checks(cells, consumers).cache()
    checked_consumers = with_consumer_checks(consumers, cells).cache()
    suites: dict[str, Any] = {}
    failed: list[dict[str, Any]] = []
    try:
        for name, df, exps in (("load_cells", checked_cells, _cell_expectations()),
                               ("load_consumers", checked_consumers,
                                _consumer_expectations())):
            res = vm._run_suite(context, name, df, exps, [], ["cell"])
            stats = dict(res.statistics)
            suites[name] = {
                "success": bool(res.success),
                "statistics": {
                    "evaluated_expectations": int(stats.get("evaluated_expectations", 0)),
                    "successful_expectations": int(stats.get("successful_expectations", 0)),
                    "unsuccessful_expectations": int(stats.get("unsuccessful_expectations", 0)),
                    "success_percent": stats.get("success_percent"),
                },
            }
            failed.extend(vm._summarize_failure(name, r, cfg["partial_unexpected_count"])
                          for r in res.results if not r.success)
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
    """A small self-contained HTML summary of a load validation report."""
    esc = html.escape
    ok = doc["success"]

    def badge(good: bool) -> str:
        return (f"<span class='badge {'ok' if good else 'fail'}'>"
                f"{'passed' if good else 'failed'}</span>")

    rows = "".join(
        f"<tr><td>{esc(name)}</td><td>{badge(s['success'])}</td>"
        f"<td>{s['statistics']['evaluated_expectations']}</td>"
        f"<td>{s['statistics']['unsuccessful_expectations']}</td></tr>"
        for name, s in doc["suites"].items())
    failures = "".join(
        f"<tr><td>{esc(f['suite'])}</td><td>{esc(f['check'] or '')}</td>"
        f"<td>{esc(', '.join(f['unexpected_rows']))}</td><td>{esc(f['summary'])}</td></tr>"
        for f in doc["failed_expectations"])
    failed_html = (f"<table><tr><th>part</th><th>check</th><th>failing</th><th>summary</th>"
                   f"</tr>{failures}</table>" if failures else "<p>No failed expectations.</p>")
    run = esc(str(doc["run_id"]))
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>Load validation {run}</title><style>{vm._CSS}</style></head><body>"
        f"<h1>Load validation of run <code>{run}</code> {badge(ok)}</h1>"
        f"<p>Validated at {esc(doc['validated_at'])}.</p>"
        "<h2>Parts</h2><table><tr><th>part</th><th>result</th><th>evaluated</th>"
        f"<th>failed</th></tr>{rows}</table><h2>Failed expectations</h2>{failed_html}"
        "</body></html>\n")


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns 0 (valid), 1 (validation failed) or 2 (bad input)."""
    args = shared.job_parser("validate_load", "Validate the load aggregates of a run.", {
        "--aggregates": "load aggregates root", "--run-id": "the run to validate",
        "--out": "output directory"}).parse_args(argv)

    def validate_in(spark: SparkSession) -> int:
        cells = shared.read_run_table(spark, args.aggregates, args.run_id, "load_cells")
        consumers = shared.read_run_table(spark, args.aggregates, args.run_id,
                                          "load_consumers")
        doc = validate(cells, consumers, {"run_id": args.run_id})
        shared.write_json_atomic(os.path.join(args.out, f"{args.run_id}-load.json"), doc)
        shared.write_text_atomic(os.path.join(args.out, f"{args.run_id}-load.html"),
                                 render_html(doc))
        if doc["success"]:
            n = sum(s["statistics"]["evaluated_expectations"] for s in doc["suites"].values())
            print(f"validate_load: run {args.run_id} passed ({n} expectations)")
            return 0
        for failure in doc["failed_expectations"]:
            print(f"FAILED {failure['summary']}", file=sys.stderr)
        print(f"validate_load: run {args.run_id} failed "
              f"({len(doc['failed_expectations'])} expectations)", file=sys.stderr)
        return 1

    # GX is imported while the JVM starts
    return shared.run_job("validate_load", validate_in,
                          inputs={"aggregates": args.aggregates}, warm_up=vm.preload_gx)


if __name__ == "__main__":
    sys.exit(main())
