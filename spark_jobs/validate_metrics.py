"""Validate the raw samples and the aggregates of one run with Great Expectations (1.x, Spark).

Two suites run on Spark DataFrames in an ephemeral GX context:

* ``raw_samples``: schema (columns and Spark types), non-null columns, non-negative
  latencies, allowed values of ``status``, ``sample_kind``, ``scenario`` and friends;
* ``aggregates``: loss accounting (``received_count = sent_count - lost_count``), ordered
  percentiles (``p50 <= p90 <= p95 <= p99 <= p999 <= max``), no loss under a durable
  profile, non-negative counts. Row-wise rules are computed boolean ``*_ok`` columns that
  must all be true.

Outputs (``docs/aggregates-schema.md``): ``<out>/<run_id>.json`` (atomic), a self-contained
``<out>/<run_id>.html`` summary and GX Data Docs under ``<out>/docs/``.

Usage::

    spark-submit spark_jobs/validate_metrics.py --samples lab-data/samples \
        --aggregates lab-data/aggregates --run-id ID --out lab-data/validation \
        [--profiles-durable durability,...]

Exit codes: 0 valid, 1 validation failed (one line per failed expectation on stderr),
2 bad input. Needs PySpark, great-expectations and ``_session.py`` (beside this script, or
shipped with ``--py-files``), not the ``kafkalab`` package.
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import itertools
import json
import logging
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

if __package__:  # imported as spark_jobs.validate_metrics (tests, tools)
    from . import _session as shared
else:  # run as a script: _session.py sits beside it or is shipped with --py-files
    import _session as shared  # type: ignore[no-redef]

InputError = shared.InputError
"""Raised for bad input (re-exported: callers catch ``validate_metrics.InputError``)."""
write_json_atomic = shared.write_json_atomic
"""The validation report's writer (re-exported from ``_session``)."""

__all__ = [
    "AGGREGATE_CHECK_COLUMNS",
    "DEFAULT_CONFIG",
    "InputError",
    "main",
    "render_html",
    "validate",
    "with_aggregate_checks",
    "write_json_atomic",
]

SCHEMA_VERSION = 1

#: Raw sample columns and their Spark types (docs/metrics-schema.md).
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
    "latency_resolution_ms": "DoubleType",
}
SAMPLE_NULLABLE: frozenset[str] = frozenset({
    "topic", "partition", "offset", "error", "send_ts_ns", "ack_ts_ns", "receive_ts_ns",
    "publish_latency_ms", "e2e_latency_ms", "round_trip_ms", "consumer_mode",
    "assign_delay_ms", "first_record_delay_ms", "statistic",
})
SAMPLE_NON_NEGATIVE: tuple[str, ...] = (
    "publish_latency_ms", "e2e_latency_ms", "round_trip_ms", "assign_delay_ms",
    "first_record_delay_ms", "latency_resolution_ms", "payload_bytes", "seq",
)
SAMPLE_VALUE_SETS: dict[str, list[str]] = {
    "sample_kind": ["message", "first_message", "tool_summary"],
    "scenario": ["rest", "kafka-python", "confluent-kafka", "jvm-e2e"],
    "status": ["ok", "lost", "duplicate", "late", "error"],
    "payload_encoding": ["raw", "base64"],
    "consumer_mode": ["subscribe", "assign"],
    "statistic": ["avg", "p50", "p99", "p99.9"],
}

AGGREGATE_COUNT_COLUMNS: tuple[str, ...] = (
    "sent_count", "received_count", "lost_count", "duplicate_count", "late_count",
    "error_count", "warmup_excluded_count",
)
#: Columns that must be non-decreasing in each aggregate row: percentiles, then the max.
_E2E_ORDER = (*shared.percentile_columns("e2e_latency_ms"), "e2e_latency_ms_max")
_PUBLISH_ORDER = (*shared.percentile_columns("publish_latency_ms"), "publish_latency_ms_max")


def _order_check(metric: str, columns: Sequence[str]) -> str:
    """``e2e_latency_ms p50 <= p90 <= ... <= max (or all null)``: an ordering rule in words."""
    steps = " <= ".join(c.removeprefix(f"{metric}_") for c in columns)
    return f"{metric} {steps} (or all null)"


#: Computed boolean columns of the aggregates suite (each must be true on every row).
AGGREGATE_CHECK_COLUMNS: dict[str, str] = {
    "loss_accounting_ok": "received_count = sent_count - lost_count",
    "e2e_percentiles_ordered_ok": _order_check("e2e_latency_ms", _E2E_ORDER),
    "publish_percentiles_ordered_ok": _order_check("publish_latency_ms", _PUBLISH_ORDER),
    "durability_no_loss_ok": "lost_count = 0 where the profile promises durability",
}

DEFAULT_CONFIG: dict[str, Any] = {
    "run_id": None,               # only used in the report
    "durable_profiles": ["durability"],
    "docs_dir": None,             # Data Docs site directory; None: no Data Docs
    "partial_unexpected_count": 5,
}


# --------------------------------------------------------------------------- GX plumbing


def _quiet_gx() -> None:
    """Silence GX's analytics, INFO logs (stdlib and structlog) and warnings."""
    os.environ["GX_ANALYTICS_ENABLED"] = "false"
    for name in ("great_expectations", "py4j", "posthog"):
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", module="great_expectations")
    try:
        import structlog

        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    except ImportError:  # pragma: no cover - structlog comes with GX's dependencies
        pass


def _context(docs_dir: str | None) -> Any:
    """An ephemeral GX context without progress bars, with an optional Data Docs site."""
    _quiet_gx()
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    sites: dict[str, Any] = {}
    if docs_dir:
        sites["kafkalab"] = {
            "class_name": "SiteBuilder",
            "store_backend": {
                "class_name": "TupleFilesystemStoreBackend",
                "base_directory": os.path.abspath(docs_dir),
            },
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        }
    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        data_docs_sites=sites,
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False),
    )
    return gx.get_context(mode="ephemeral", project_config=config)


def _exp(cls_name: str, check: str, **kwargs: Any) -> Any:
    import great_expectations.expectations as gxe

    cls = getattr(gxe, cls_name)
    return cls(meta={"check": check}, catch_exceptions=True, **kwargs)


def _samples_expectations() -> list[Any]:
    exps = [
        _exp("ExpectTableRowCountToBeBetween", "at least one sample row", min_value=1),
        _exp("ExpectTableColumnsToMatchSet", "columns are exactly the documented ones",
             column_set=list(SAMPLE_SPARK_TYPES), exact_match=True),
    ]
    for col, type_ in SAMPLE_SPARK_TYPES.items():
        exps.append(_exp("ExpectColumnValuesToBeOfType", f"{col} is {type_}",
                         column=col, type_=type_))
    for col in SAMPLE_SPARK_TYPES:
        if col not in SAMPLE_NULLABLE:
            exps.append(_exp("ExpectColumnValuesToNotBeNull", f"{col} is never null",
                             column=col))
    for col in SAMPLE_NON_NEGATIVE:
        exps.append(_exp("ExpectColumnValuesToBeBetween", f"{col} >= 0 where not null",
                         column=col, min_value=0))
    for col, values in SAMPLE_VALUE_SETS.items():
        exps.append(_exp("ExpectColumnValuesToBeInSet", f"{col} in {values}",
                         column=col, value_set=values))
    return exps


def _aggregates_expectations() -> list[Any]:
    exps = [
        _exp("ExpectTableRowCountToBeBetween", "at least one aggregate row", min_value=1),
    ]
    for col in AGGREGATE_COUNT_COLUMNS:
        exps.append(_exp("ExpectColumnValuesToNotBeNull", f"{col} is never null", column=col))
        exps.append(_exp("ExpectColumnValuesToBeBetween", f"{col} >= 0",
                         column=col, min_value=0))
    for col, check in AGGREGATE_CHECK_COLUMNS.items():
        exps.append(_exp("ExpectColumnValuesToBeInSet", check, column=col, value_set=[True]))
    return exps


def _ordered(cols: Sequence[str]) -> Column:
    """True when all ``cols`` are null, or none is null and they are non-decreasing."""
    all_null = F.lit(True)
    none_null = F.lit(True)
    for c in cols:
        all_null = all_null & F.col(c).isNull()
        none_null = none_null & F.col(c).isNotNull()
    order = F.lit(True)
    for lo, hi in itertools.pairwise(cols):
        order = order & (F.col(lo) <= F.col(hi))
    return F.coalesce(all_null | (none_null & order), F.lit(False))


def with_aggregate_checks(aggregates: DataFrame, durable_profiles: Sequence[str]) -> DataFrame:
    """Add the boolean ``*_ok`` columns of :data:`AGGREGATE_CHECK_COLUMNS` (never null)."""
    loss = F.col("received_count") == F.col("sent_count") - F.col("lost_count")
    durable = ~F.col("profile").isin(list(durable_profiles)) | (F.col("lost_count") == 0)
    return (
        aggregates.withColumn("loss_accounting_ok", F.coalesce(loss, F.lit(False)))
        .withColumn("e2e_percentiles_ordered_ok", _ordered(_E2E_ORDER))
        .withColumn("publish_percentiles_ordered_ok", _ordered(_PUBLISH_ORDER))
        .withColumn("durability_no_loss_ok", F.coalesce(durable, F.lit(False)))
    )


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _summarize_failure(suite: str, res: Any, n_examples: int) -> dict[str, Any]:
    """One failed expectation as a JSON-able dict with a short human summary."""
    cfg = res.expectation_config
    kwargs = dict(cfg.kwargs)
    column = kwargs.get("column")
    check = (cfg.meta or {}).get("check") or cfg.type
    result = dict(res.result or {})
    exc = res.exception_info or {}
    raised = bool(exc.get("raised_exception")) if isinstance(exc, dict) else False
    unexpected = result.get("unexpected_count")
    examples = list(result.get("partial_unexpected_list") or [])[:n_examples]
    where = f"{column}: " if column and not str(check).startswith(column) else ""
    if raised:
        msg = str(exc.get("exception_message") or "error").strip().splitlines()[0][:200]
        detail = f"could not be evaluated ({msg})"
    elif unexpected is not None:
        total = result.get("element_count")
        detail = f"{unexpected} of {total} rows violate it"
        if examples:
            detail += f", e.g. {', '.join(map(str, examples))}"
    else:
        detail = f"observed {result.get('observed_value')!r}"
    return {
        "suite": suite,
        "expectation_type": cfg.type,
        "column": column,
        "check": check,
        "summary": f"{suite}: {where}{check}: {detail}",
        "unexpected_count": unexpected,
        "partial_unexpected_list": _jsonable(examples),
        "observed_value": _jsonable(result.get("observed_value")),
        "raised_exception": raised,
    }


def _run_suite(context: Any, name: str, df: DataFrame, expectations: list[Any],
               site_names: list[str]) -> Any:
    """Validate ``df`` against a new suite through a Checkpoint (updates Data Docs)."""
    import great_expectations as gx
    from great_expectations.checkpoint import Checkpoint, UpdateDataDocsAction

    source = context.data_sources.add_spark(name=f"{name}_source")
    asset = source.add_dataframe_asset(name=f"{name}_asset")
    batch_def = asset.add_batch_definition_whole_dataframe(f"{name}_batch")
    suite = context.suites.add(gx.ExpectationSuite(name=name))
    for exp in expectations:
        suite.add_expectation(exp)
    vdef = context.validation_definitions.add(
        gx.ValidationDefinition(name=f"{name}_validation", data=batch_def, suite=suite)
    )
    actions: list[Any] = (
        [UpdateDataDocsAction(name="data_docs", site_names=site_names)] if site_names else [])
    checkpoint = context.checkpoints.add(
        Checkpoint(name=f"{name}_checkpoint", validation_definitions=[vdef], actions=actions,
                   result_format={"result_format": "SUMMARY"})
    )
    result = checkpoint.run(batch_parameters={"dataframe": df})
    return next(iter(result.run_results.values()))


def validate(samples_df: DataFrame, aggregates_df: DataFrame,
             config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run both suites and return the validation report (the JSON document, as a dict).

    ``config`` keys (all optional): ``run_id``, ``durable_profiles`` (default
    ``["durability"]``), ``docs_dir`` (write GX Data Docs there), ``partial_unexpected_count``.
    """
    cfg = {**DEFAULT_CONFIG, **(config or {})}
    docs_dir = cfg["docs_dir"]
    context = _context(docs_dir)
    site_names = ["kafkalab"] if docs_dir else []
    checked = with_aggregate_checks(aggregates_df, cfg["durable_profiles"])
    suites: dict[str, Any] = {}
    failed: list[dict[str, Any]] = []
    for name, df, exps in (
        ("raw_samples", samples_df, _samples_expectations()),
        ("aggregates", checked, _aggregates_expectations()),
    ):
        res = _run_suite(context, name, df, exps, site_names)
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
        failed.extend(
            _summarize_failure(name, r, cfg["partial_unexpected_count"])
            for r in res.results if not r.success
        )
    index = os.path.join(docs_dir, "index.html") if docs_dir else None
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": cfg["run_id"],
        "validated_at": dt.datetime.now(dt.UTC).isoformat(),
        "success": all(s["success"] for s in suites.values()),
        "durable_profiles": list(cfg["durable_profiles"]),
        "suites": suites,
        "failed_expectations": failed,
        "data_docs_index": index if index and os.path.exists(index) else None,
    }


# --------------------------------------------------------------------------- outputs


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1d1d1f}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:1.6rem}
.badge{display:inline-block;padding:.15rem .6rem;border-radius:.8rem;color:#fff;font-weight:600}
.ok{background:#1a7f37}.fail{background:#cf222e}
table{border-collapse:collapse;margin-top:.5rem;font-size:.9rem}
th,td{border:1px solid #d0d7de;padding:.3rem .6rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}code{font-size:.85rem}
""".strip()


def render_html(doc: dict[str, Any]) -> str:
    """A small self-contained HTML summary of a validation report (inline CSS, no URLs)."""
    esc = html.escape
    ok = doc["success"]
    rows = "".join(
        f"<tr><td>{esc(name)}</td><td><span class='badge {'ok' if s['success'] else 'fail'}'>"
        f"{'passed' if s['success'] else 'failed'}</span></td>"
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
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>Validation {esc(str(doc['run_id']))}</title><style>{_CSS}</style></head><body>"
        f"<h1>Validation of run <code>{esc(str(doc['run_id']))}</code> "
        f"<span class='badge {'ok' if ok else 'fail'}'>{'passed' if ok else 'failed'}</span></h1>"
        f"<p>Validated at {esc(doc['validated_at'])}; durable profiles: "
        f"{esc(', '.join(doc['durable_profiles']))}.</p>"
        "<h2>Suites</h2><table><tr><th>suite</th><th>result</th><th>evaluated</th>"
        f"<th>passed</th><th>failed</th></tr>{rows}</table>"
        f"<h2>Failed expectations</h2>{failures}{docs}</body></html>\n"
    )


# --------------------------------------------------------------------------- CLI


def _read_run(spark: SparkSession, path: str, run_id: str, what: str) -> DataFrame:
    if shared.local_path_missing(path):
        raise InputError(f"{what} path not found: {path}")
    df = shared.read_parquet(spark, path, what)
    if "run_id" not in df.columns:
        raise InputError(f"{what} at {path} have no run_id partition column")
    df = df.where(F.col("run_id") == run_id)
    if not df.limit(1).take(1):
        raise InputError(f"no {what} for run id {run_id} under {path}")
    return df


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="validate_metrics",
                                description="Validate raw samples and aggregates of a run.")
    p.add_argument("--samples", required=True, help="samples root (Hive layout)")
    p.add_argument("--aggregates", required=True, help="aggregates root")
    p.add_argument("--run-id", required=True, help="the run to validate")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--profiles-durable", default="durability",
                   help="comma-separated profiles that promise no loss (default: durability)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns 0 (valid), 1 (validation failed) or 2 (bad input)."""
    args = _parse_args(argv)
    durable = [p.strip() for p in args.profiles_durable.split(",") if p.strip()]
    with shared.job_session("kafkalab-validate-metrics") as spark:
        try:
            samples = _read_run(spark, args.samples, args.run_id, "samples")
            aggregates = _read_run(spark, args.aggregates, args.run_id, "aggregates")
            doc = validate(samples, aggregates, {
                "run_id": args.run_id, "durable_profiles": durable,
                "docs_dir": os.path.join(args.out, "docs"),
            })
        except InputError as exc:
            print(f"validate_metrics: error: {exc}", file=sys.stderr)
            return 2
    if doc["data_docs_index"]:
        doc["data_docs_index"] = "docs/index.html"
    write_json_atomic(os.path.join(args.out, f"{args.run_id}.json"), doc)
    shared.write_text_atomic(os.path.join(args.out, f"{args.run_id}.html"), render_html(doc))
    if doc["success"]:
        n = sum(s["statistics"]["evaluated_expectations"] for s in doc["suites"].values())
        print(f"validate_metrics: run {args.run_id} passed ({n} expectations)")
        return 0
    for failure in doc["failed_expectations"]:
        print(f"FAILED {failure['summary']}", file=sys.stderr)
    print(f"validate_metrics: run {args.run_id} failed "
          f"({len(doc['failed_expectations'])} expectations)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
