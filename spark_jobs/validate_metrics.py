"""Validate the raw samples and the aggregates of one run with Great Expectations (1.x, Spark).

Two suites run on Spark DataFrames in an ephemeral GX context:

* ``raw_samples``: schema (columns and Spark types of samples schema 2), non-null columns,
  non-negative latencies, allowed values of ``status``, ``sample_kind``, ``scenario``,
  ``loop_mode`` and friends, and row rules (a received message has its receive time, a lost
  one has none);
* ``aggregates``: each aggregate row beside the facts recounted from its cell's raw rows
  (:func:`cell_facts`): the counts match the raw rows, the cell sent what it planned, every
  received seq lies in the sent range, each seq has exactly one non-duplicate row, every
  duplicate has its original; ordered percentiles and confidence intervals; no loss under a
  durable profile; non-negative counts. These rules are computed boolean ``*_ok`` columns
  that must all be true; a failure names the cells that break it.

Each suite is validated in two passes (:func:`_gx.run_suite`): every expectation's verdict
at once, then the details (examples, failing rows) of the failed ones only; a passing
expectation so runs no Spark job of its own. The verdicts, counts and failure details are
those of a one-pass ``SUMMARY`` validation.

Outputs (``docs/aggregates-schema.md``): ``<out>/<run_id>.json`` (atomic), a self-contained
``<out>/<run_id>.html`` summary and GX Data Docs under ``<out>/docs/``.

Usage::

    spark-submit spark_jobs/validate_metrics.py --samples lab-data/samples \
        --aggregates lab-data/aggregates --run-id ID --out lab-data/validation \
        [--profiles-durable durability,...]

Exit codes: 0 valid, 1 validation failed (one line per failed expectation on stderr),
2 bad input. Needs PySpark, great-expectations, ``_session.py`` and ``_gx.py`` (beside this
script, or shipped with ``--py-files``), not the ``kafkalab`` package.
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import os
import sys
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

if __package__:  # imported as spark_jobs.validate_metrics (tests, tools)
    from . import _gx
    from . import _session as shared
else:  # run as a script: the modules sit beside it or are shipped with --py-files
    import _gx  # type: ignore[no-redef]
    import _session as shared  # type: ignore[no-redef]

__all__ = [
    "AGGREGATE_CHECK_COLUMNS",
    "DEFAULT_CONFIG",
    "cell_facts",
    "durable_list",
    "main",
    "render_html",
    "validate",
    "validate_run",
    "with_aggregate_checks",
]

SCHEMA_VERSION = 2
"""Version of the validation report (``docs/aggregates-schema.md``)."""

CELL_KEYS = shared.CELL_KEYS

#: Raw sample columns and their Spark types (docs/metrics-schema.md, samples schema 2).
SAMPLE_SPARK_TYPES: dict[str, str] = {
    "run_id": "StringType", "run_date": "StringType", "sample_kind": "StringType",
    "scenario": "StringType", "client": "StringType", "client_version": "StringType",
    "profile": "StringType", "workload": "StringType", "payload": "StringType",
    "payload_encoding": "StringType", "payload_bytes": "LongType",
    "cluster_flavor": "StringType", "broker_version": "StringType",
    "broker_is_emulator": "BooleanType", "topic": "StringType", "partition": "IntegerType",
    "offset": "LongType", "seq": "LongType", "is_warmup": "BooleanType",
    "status": "StringType", "error": "StringType", "send_ts_ns": "LongType",
    "ack_ts_ns": "LongType", "receive_ts_ns": "LongType", "publish_latency_ms": "DoubleType",
    "e2e_latency_ms": "DoubleType", "round_trip_ms": "DoubleType",
    "consumer_mode": "StringType", "assign_delay_ms": "DoubleType",
    "first_record_delay_ms": "DoubleType", "statistic": "StringType",
    "latency_resolution_ms": "DoubleType", "wall_ts_ns": "LongType",
    "loop_mode": "StringType", "cold_start": "BooleanType", "planned_messages": "LongType",
    "message_timeout_ms": "DoubleType", "broker_count": "IntegerType",
    "client_settings": "StringType",
}
SAMPLE_NULLABLE: frozenset[str] = frozenset({
    "topic", "partition", "offset", "error", "send_ts_ns", "ack_ts_ns", "receive_ts_ns",
    "publish_latency_ms", "e2e_latency_ms", "round_trip_ms", "consumer_mode",
    "assign_delay_ms", "first_record_delay_ms", "statistic", "wall_ts_ns", "loop_mode",
    "cold_start", "broker_count",
})
SAMPLE_NON_NEGATIVE: tuple[str, ...] = (
    "publish_latency_ms", "e2e_latency_ms", "round_trip_ms", "assign_delay_ms",
    "first_record_delay_ms", "latency_resolution_ms", "payload_bytes", "seq",
    "planned_messages", "message_timeout_ms",
)
#: Allowed values (nulls allowed where the column is nullable). The scenarios are
#: ``kafkalab.catalog.SCENARIOS`` and the loop modes its ``LOOP_MODES``, written
#: here because the job runs without the lab's package; tests/unit/test_lists_in_step.py
#: keeps the copies equal.
SAMPLE_VALUE_SETS: dict[str, list[str]] = {
    "sample_kind": ["message", "first_message", "tool_summary"],
    "scenario": ["rest", "kafka-python", "confluent-kafka", "confluent-kafka-serial",
                 "jvm-e2e"],
    "status": ["ok", "lost", "duplicate", "late", "error"],
    "payload_encoding": ["raw", "base64"],
    "consumer_mode": ["subscribe", "assign"],
    "statistic": ["avg", "p50", "p99", "p99.9"],
    "loop_mode": ["overlapped", "serial", "request"],
}
#: Row rules of the raw samples: (what must hold, column that must be non-null (True) or
#: null (False), Spark SQL condition selecting the rows it applies to).
SAMPLE_ROW_RULES: tuple[tuple[str, str, bool, str], ...] = (
    ("a received message (ok, late, duplicate) has its receive_ts_ns", "receive_ts_ns", True,
     "sample_kind = 'message' AND status IN ('ok', 'late', 'duplicate')"),
    ("a received message (ok, late, duplicate) has its e2e_latency_ms", "e2e_latency_ms", True,
     "sample_kind = 'message' AND status IN ('ok', 'late', 'duplicate')"),
    ("a lost message has no receive_ts_ns", "receive_ts_ns", False,
     "sample_kind = 'message' AND status = 'lost'"),
    ("every message and tool row has its loop_mode", "loop_mode", True,
     "sample_kind IN ('message', 'tool_summary')"),
)
#: Columns that name a raw row in a failure's examples (when the samples have them).
SAMPLE_INDEX_COLUMNS: tuple[str, ...] = ("scenario", "payload", "profile", "seq")

AGGREGATE_COUNT_COLUMNS: tuple[str, ...] = (
    "sent_count", "received_count", "lost_count", "duplicate_count", "late_count",
    "error_count", "warmup_excluded_count",
)
#: Columns whose non-null values must be non-decreasing in each aggregate row.
_E2E_ORDER = (*shared.percentile_columns("e2e_latency_ms"), "e2e_latency_ms_max")
_PUBLISH_ORDER = (*shared.percentile_columns("publish_latency_ms"), "publish_latency_ms_max")
_CI_ORDERS = tuple(
    (f"e2e_latency_ms_{p}_ci_low", f"e2e_latency_ms_{p}", f"e2e_latency_ms_{p}_ci_high")
    for p in shared.stats.CI_PERCENTILES
)
#: The aggregate count and the raw recount each must equal (:func:`cell_facts`).
_RECOUNTS: dict[str, str] = {
    "sent_count": "raw_sent", "received_count": "raw_received", "lost_count": "raw_lost",
    "error_count": "raw_error", "duplicate_count": "raw_duplicate", "late_count": "raw_late",
    "warmup_excluded_count": "raw_warmup",
}


def _order_check(metric: str, columns: Sequence[str]) -> str:
    """``e2e_latency_ms p50 <= p90 <= ... <= max where not null``: an ordering rule in words."""
    steps = " <= ".join(c.removeprefix(f"{metric}_") for c in columns)
    return f"{metric} {steps} (where not null)"


#: Computed boolean columns of the aggregates suite (each must be true on every row).
AGGREGATE_CHECK_COLUMNS: dict[str, str] = {
    "counts_match_raw_ok": "sent/received/lost/error/duplicate/late/warm-up counts equal "
                           "those recounted from the cell's raw rows, and raw non-warm-up "
                           "non-duplicate rows = received + lost + error",
    "planned_messages_ok": "the cell's non-warm-up non-duplicate message rows = "
                           "planned_messages",
    "received_seqs_in_range_ok": "every received seq (ok, late, duplicate) lies in the sent "
                                 "range [0, warm-up + planned_messages)",
    "one_row_per_seq_ok": "every seq from 0 to the cell's largest has exactly one "
                          "non-duplicate message row",
    "duplicates_have_original_ok": "every duplicate's seq has a received (ok/late) original row",
    "e2e_percentiles_ordered_ok": _order_check("e2e_latency_ms", _E2E_ORDER),
    "e2e_ci_brackets_ok": "e2e_latency_ms ci_low <= p50 <= ci_high and ci_low <= p99 <= "
                          "ci_high (where not null)",
    "publish_percentiles_ordered_ok": _order_check("publish_latency_ms", _PUBLISH_ORDER),
    "durability_no_loss_ok": "lost_count = 0 where the profile promises durability",
}

DEFAULT_CONFIG: dict[str, Any] = {
    "run_id": None,               # only used in the report
    "durable_profiles": ["durability"],
    "docs_dir": None,             # Data Docs site directory; None: no Data Docs
    "partial_unexpected_count": 5,
}


def _samples_expectations() -> list[Any]:
    """The expectations of suite ``raw_samples``."""
    exp = _gx.expectation
    exps = [
        exp("ExpectTableRowCountToBeBetween", "at least one sample row", min_value=1),
        exp("ExpectTableColumnsToMatchSet", "columns are exactly the documented ones",
            column_set=list(SAMPLE_SPARK_TYPES), exact_match=True),
    ]
    for col, type_ in SAMPLE_SPARK_TYPES.items():
        exps.append(exp("ExpectColumnValuesToBeOfType", f"{col} is {type_}",
                        column=col, type_=type_))
    for col in SAMPLE_SPARK_TYPES:
        if col not in SAMPLE_NULLABLE:
            exps.append(exp("ExpectColumnValuesToNotBeNull", f"{col} is never null",
                            column=col))
    for col in SAMPLE_NON_NEGATIVE:
        exps.append(exp("ExpectColumnValuesToBeBetween", f"{col} >= 0 where not null",
                        column=col, min_value=0))
    for col, values in SAMPLE_VALUE_SETS.items():
        exps.append(exp("ExpectColumnValuesToBeInSet", f"{col} in {values}",
                        column=col, value_set=values))
    for check, col, present, condition in SAMPLE_ROW_RULES:
        exps.append(exp("ExpectColumnValuesToNotBeNull" if present
                        else "ExpectColumnValuesToBeNull", check, column=col,
                        row_condition=condition, condition_parser="spark"))
    return exps


def _aggregates_expectations() -> list[Any]:
    """The expectations of suite ``aggregates`` (on :func:`with_aggregate_checks`)."""
    exp = _gx.expectation
    exps = [
        exp("ExpectTableRowCountToBeBetween", "at least one aggregate row", min_value=1),
    ]
    for col in AGGREGATE_COUNT_COLUMNS:
        exps.append(exp("ExpectColumnValuesToNotBeNull", f"{col} is never null", column=col))
        exps.append(exp("ExpectColumnValuesToBeBetween", f"{col} >= 0",
                        column=col, min_value=0))
    for col, check in AGGREGATE_CHECK_COLUMNS.items():
        exps.append(exp("ExpectColumnValuesToBeInSet", check, column=col, value_set=[True]))
    return exps


def cell_facts(samples: DataFrame) -> DataFrame:
    """What the raw rows of each cell say, recounted independently of the aggregation: one
    row per cell (:data:`CELL_KEYS`) with

    * ``raw_sent`` (non-warm-up non-duplicate message rows), ``raw_received`` (ok + late),
      ``raw_lost``, ``raw_error``, ``raw_duplicate``, ``raw_late`` (non-warm-up) and
      ``raw_warmup`` (warm-up message rows);
    * ``raw_message_rows``, ``raw_original_rows`` (non-duplicate message rows), ``raw_seqs``
      (distinct message seqs), ``raw_min_seq``,
      ``raw_max_seq``, ``raw_warmup_seqs``; ``raw_planned`` (``planned_messages``, null in
      schema-1 rows);
    * ``raw_seqs_not_one_row`` (seqs with zero or several non-duplicate rows),
      ``raw_orphan_duplicate_seqs`` (duplicates whose seq has no received original),
      ``raw_min_received_seq`` / ``raw_max_received_seq`` (rows ok, late or duplicate).

    Two passes: one per (cell, seq), then one per cell.
    """
    keys = list(CELL_KEYS)
    status = F.col("status")
    dup = status == "duplicate"
    warm = F.col("is_warmup")
    measured = ~warm
    planned = (F.col("planned_messages") if "planned_messages" in samples.columns
               else F.lit(None).cast("long"))
    per_seq = (
        samples.withColumn("_is_msg", F.col("sample_kind") == "message")
        .withColumn("_planned", planned)
        .groupBy(*keys, "_is_msg", "seq").agg(
            F.count(F.lit(1)).alias("_rows"),
            shared.count_if(~dup).alias("_orig"),
            shared.count_if(~dup & status.isin("ok", "late")).alias("_orig_received"),
            shared.count_if(dup).alias("_dups"),
            shared.count_if(status.isin("ok", "late", "duplicate")).alias("_received_rows"),
            shared.count_if(~dup & measured).alias("_sent"),
            shared.count_if(measured & status.isin("ok", "late")).alias("_received"),
            shared.count_if(measured & (status == "lost")).alias("_lost"),
            shared.count_if(measured & (status == "error")).alias("_error"),
            shared.count_if(measured & dup).alias("_duplicate"),
            shared.count_if(measured & (status == "late")).alias("_late"),
            shared.count_if(warm).alias("_warm_rows"),
            shared.count_if(warm & ~dup).alias("_warm_orig"),
            F.max("_planned").alias("_planned"),
        )
    )
    msg = F.col("_is_msg")

    def total(col: str) -> Column:
        return F.coalesce(F.sum(F.when(msg, F.col(col))), F.lit(0)).cast("long")

    return per_seq.groupBy(*keys).agg(
        total("_sent").alias("raw_sent"),
        total("_received").alias("raw_received"),
        total("_lost").alias("raw_lost"),
        total("_error").alias("raw_error"),
        total("_duplicate").alias("raw_duplicate"),
        total("_late").alias("raw_late"),
        total("_warm_rows").alias("raw_warmup"),
        total("_rows").alias("raw_message_rows"),
        total("_orig").alias("raw_original_rows"),
        shared.count_if(msg).alias("raw_seqs"),
        F.min(F.when(msg, F.col("seq"))).alias("raw_min_seq"),
        F.max(F.when(msg, F.col("seq"))).alias("raw_max_seq"),
        shared.count_if(msg & (F.col("_warm_orig") > 0)).alias("raw_warmup_seqs"),
        F.max("_planned").alias("raw_planned"),
        shared.count_if(msg & (F.col("_orig") != 1)).alias("raw_seqs_not_one_row"),
        shared.count_if(msg & (F.col("_dups") > 0) & (F.col("_orig_received") == 0))
        .alias("raw_orphan_duplicate_seqs"),
        F.min(F.when(msg & (F.col("_received_rows") > 0), F.col("seq")))
        .alias("raw_min_received_seq"),
        F.max(F.when(msg & (F.col("_received_rows") > 0), F.col("seq")))
        .alias("raw_max_received_seq"),
    )


def with_aggregate_checks(aggregates: DataFrame, facts: DataFrame,
                          durable_profiles: Sequence[str]) -> DataFrame:
    """The aggregates beside their cells' raw facts (:func:`cell_facts`; a full outer join,
    so a cell on one side only fails), with a ``cell`` label (``scenario/payload/profile``)
    and the boolean ``*_ok`` columns of :data:`AGGREGATE_CHECK_COLUMNS` (never null)."""
    both = (aggregates.withColumn("_has_aggregate", F.lit(True))
            .join(facts.withColumn("_has_samples", F.lit(True)), on=list(CELL_KEYS),
                  how="full_outer"))
    has_msgs = F.coalesce(F.col("raw_message_rows"), F.lit(0)) > 0
    counts = F.col("_has_aggregate") & F.col("_has_samples") & (
        F.col("raw_sent") == F.col("raw_received") + F.col("raw_lost") + F.col("raw_error"))
    for agg_col, raw_col in _RECOUNTS.items():
        counts = counts & (F.col(agg_col) == F.col(raw_col))
    planned = (F.col("raw_planned").isNull() | ~has_msgs
               | (F.col("raw_sent") == F.col("raw_planned")))
    # the sent seqs: warm-up + planned; in schema-1 rows (no plan), one per original row
    bound = F.coalesce(F.col("raw_warmup_seqs") + F.col("raw_planned"),
                       F.col("raw_original_rows"))
    in_range = F.col("raw_min_received_seq").isNull() | (
        (F.col("raw_min_received_seq") >= 0) & (F.col("raw_max_received_seq") < bound))
    one_row = ~has_msgs | (
        (F.col("raw_seqs_not_one_row") == 0) & (F.col("raw_min_seq") == 0)
        & (F.col("raw_max_seq") == F.col("raw_seqs") - 1))
    originals = F.coalesce(F.col("raw_orphan_duplicate_seqs"), F.lit(0)) == 0
    cis = F.lit(True)
    for cols in _CI_ORDERS:
        cis = cis & _gx.ordered(cols)
    durable = (~F.col("profile").isin(list(durable_profiles))
               | (F.coalesce(F.col("lost_count"), F.lit(0)) == 0))
    checks = {
        "counts_match_raw_ok": counts,
        "planned_messages_ok": planned,
        "received_seqs_in_range_ok": in_range,
        "one_row_per_seq_ok": one_row,
        "duplicates_have_original_ok": originals,
        "e2e_percentiles_ordered_ok": _gx.ordered(_E2E_ORDER),
        "e2e_ci_brackets_ok": cis,
        "publish_percentiles_ordered_ok": _gx.ordered(_PUBLISH_ORDER),
        "durability_no_loss_ok": durable,
    }
    out = both.withColumn("cell", F.concat_ws("/", "scenario", "payload", "profile"))
    for name, rule in checks.items():
        out = out.withColumn(name, F.coalesce(rule, F.lit(False)))
    return out


def validate(samples_df: DataFrame, aggregates_df: DataFrame,
             config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run both suites and return the validation report (the JSON document, as a dict).

    ``config`` keys (all optional): ``run_id``, ``durable_profiles`` (default
    ``["durability"]``), ``docs_dir`` (write GX Data Docs there), ``partial_unexpected_count``.
    """
    cfg = {**DEFAULT_CONFIG, **(config or {})}
    docs_dir = cfg["docs_dir"]
    context = _gx.ephemeral_context(docs_dir)
    site_names = ["kafkalab"] if docs_dir else []
    facts = cell_facts(samples_df).cache()
    checked = with_aggregate_checks(aggregates_df, facts, cfg["durable_profiles"]).cache()
    sample_index = [c for c in SAMPLE_INDEX_COLUMNS if c in samples_df.columns]
    if len(sample_index) < len(SAMPLE_INDEX_COLUMNS):
        sample_index = []  # a broken schema: the column checks report it
    parts = [_gx.Part("raw_samples", samples_df, _samples_expectations(), sample_index),
             _gx.Part("aggregates", checked, _aggregates_expectations(), ["cell"])]
    try:
        suites, failed = _gx.run_suites(context, parts, cfg["partial_unexpected_count"],
                                        site_names)
    finally:
        checked.unpersist()
        facts.unpersist()
    docs_index = os.path.join(docs_dir, "index.html") if docs_dir else None
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": cfg["run_id"],
        "validated_at": dt.datetime.now(dt.UTC).isoformat(),
        "success": all(s["success"] for s in suites.values()),
        "durable_profiles": list(cfg["durable_profiles"]),
        "suites": suites,
        "failed_expectations": failed,
        "data_docs_index": docs_index if docs_index and os.path.exists(docs_index) else None,
    }


# --------------------------------------------------------------------------- outputs


def render_html(doc: dict[str, Any]) -> str:
    """A small self-contained HTML summary of a validation report (inline CSS, no URLs)."""
    esc = html.escape
    rows = "".join(
        f"<tr><td>{esc(name)}</td><td>{_gx.badge(s['success'])}</td>"
        f"<td>{s['statistics']['evaluated_expectations']}</td>"
        f"<td>{s['statistics']['successful_expectations']}</td>"
        f"<td>{s['statistics']['unsuccessful_expectations']}</td></tr>"
        for name, s in doc["suites"].items()
    )
    if doc["failed_expectations"]:
        failures = "<table><tr><th>suite</th><th>expectation</th><th>column</th>" \
                   "<th>summary</th></tr>" + "".join(
            f"<tr><td>{esc(f['suite'])}</td><td><code>{esc(f['expectation_type'])}</code></td>"
            f"<td>{esc(str(f['column'] or ''))}</td><td>{esc(f['summary'])}</td></tr>"
            for f in doc["failed_expectations"]
        ) + "</table>"
    else:
        failures = "<p>No failed expectations.</p>"
    docs = ("<p>Full Great Expectations Data Docs: <code>docs/index.html</code> "
            "(unstyled offline).</p>") if doc.get("data_docs_index") else ""
    return _gx.html_page(
        f"Validation {doc['run_id']}",
        f"<h1>Validation of run <code>{esc(str(doc['run_id']))}</code> "
        f"{_gx.badge(doc['success'])}</h1>"
        f"<p>Validated at {esc(doc['validated_at'])}; durable profiles: "
        f"{esc(', '.join(doc['durable_profiles']))}.</p>"
        "<h2>Suites</h2><table><tr><th>suite</th><th>result</th><th>evaluated</th>"
        f"<th>passed</th><th>failed</th></tr>{rows}</table>"
        f"<h2>Failed expectations</h2>{failures}{docs}")


# --------------------------------------------------------------------------- CLI


def _read_run(spark: SparkSession, path: str, run_id: str, what: str,
              partition: str | None = None) -> DataFrame:
    """One run's rows under ``path``. ``partition`` (``run_id=<id>``): read only that folder
    (the aggregates root also holds ``load/``, whose layout Spark cannot merge with it);
    without it ``path`` is the samples root and only the run's folders are read."""
    if shared.local_path_missing(path):
        raise shared.InputError(f"{what} path not found: {path}")
    if partition is not None:
        part_path = os.path.join(path, partition)
        if shared.local_path_missing(part_path):
            raise shared.InputError(f"no {what} for run id {run_id} under {path}")
        df = shared.read_parquet(spark, part_path, what, base_path=path)
    else:  # the samples: only the run's folders (run_date=*/run_id=<id>)
        df = shared.read_parquet(spark, shared.run_sample_paths(path, [run_id], what), what,
                                 base_path=path)
    if "run_id" not in df.columns:
        raise shared.InputError(f"{what} at {path} have no run_id partition column")
    df = df.where(F.col("run_id") == run_id)
    if not df.limit(1).take(1):
        raise shared.InputError(f"no {what} for run id {run_id} under {path}")
    return df


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = shared.job_parser("validate_metrics", "Validate raw samples and aggregates of a run.",
                          {"--samples": "samples root (Hive layout)",
                           "--aggregates": "aggregates root",
                           "--run-id": "the run to validate", "--out": "output directory"})
    p.add_argument("--profiles-durable", default="durability",
                   help="comma-separated profiles that promise no loss (default: durability)")
    return p.parse_args(argv)


def validate_run(spark: SparkSession, samples_path: str, aggregates_path: str, run_id: str,
                 out: str, durable_profiles: Sequence[str], prog: str = "validate_metrics") -> int:
    """Validate run ``run_id`` in ``spark`` and write its report under ``out``; prints one
    line (and one per failed expectation on stderr) prefixed with ``prog``. Returns 0
    (valid), 1 (validation failed) or 2 (bad input: nothing written)."""
    try:
        samples = _read_run(spark, samples_path, run_id, "samples")
        aggregates = _read_run(spark, aggregates_path, run_id, "aggregates",
                               partition=f"run_id={run_id}")
        doc = validate(samples, aggregates, {
            "run_id": run_id, "durable_profiles": list(durable_profiles),
            "docs_dir": os.path.join(out, "docs"),
        })
    except shared.InputError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    if doc["data_docs_index"]:
        doc["data_docs_index"] = "docs/index.html"
    _gx.write_report(out, run_id, doc, render_html(doc))
    return _gx.print_verdict(prog, run_id, doc)


def durable_list(text: str) -> list[str]:
    """``--profiles-durable`` as a list (comma-separated, blanks dropped)."""
    return [p.strip() for p in text.split(",") if p.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns 0 (valid), 1 (validation failed) or 2 (bad input)."""
    args = _parse_args(argv)

    def validate_in(spark: SparkSession) -> int:
        return validate_run(spark, args.samples, args.aggregates, args.run_id, args.out,
                            durable_list(args.profiles_durable))

    # a missing input path is refused before the JVM starts; GX is imported while it starts
    return shared.run_job("validate_metrics", validate_in,
                          inputs={"samples": args.samples, "aggregates": args.aggregates},
                          warm_up=_gx.preload_gx)


if __name__ == "__main__":
    sys.exit(main())
