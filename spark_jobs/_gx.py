"""What the lab's three validation jobs share: Great Expectations on Spark, their failure
summaries and their report pages.

``validate_metrics``, ``validate_load`` and ``validate_faults`` each build computed check
columns and a list of expectations (:func:`expectation`, :func:`ordered`); this module runs
them (an ephemeral GX context, each suite validated in two passes: :func:`run_suites`), turns
each failed expectation into a short JSON-able summary (:func:`summarize_failure`), and
writes and prints the result (:func:`write_report`, :func:`print_verdict`; the pages'
frame :func:`html_page`, the page of a validation in parts :func:`parts_page`).
:func:`validate_tables_main` is the whole command line of ``validate_load`` and
``validate_faults``.

Shipped with the jobs as ``_session.py`` is (``kafkalab.spark.submit.spark_py_files()``),
found beside a job run locally. A job imports it as::

    if __package__:  # imported as spark_jobs.<job> (tests, tools)
        from . import _gx
    else:            # run as a script: beside it, or shipped with --py-files
        import _gx

Great Expectations itself is imported inside the functions that use it (seconds of CPU;
:func:`preload_gx` starts it on a thread while the JVM starts): importing this module costs
PySpark only.
"""

from __future__ import annotations

import copy
import html
import json
import logging
import os
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

if __package__:  # imported as spark_jobs._gx (tests, tools)
    from . import _session as shared
else:  # run as a script's module: _session.py sits beside it or is shipped with --py-files
    import _session as shared  # type: ignore[no-redef]

__all__ = [
    "DETAIL_FORMAT",
    "REPORT_CSS",
    "VERDICT_FORMAT",
    "Part",
    "badge",
    "ephemeral_context",
    "expectation",
    "html_page",
    "ordered",
    "parts_page",
    "preload_gx",
    "print_verdict",
    "quiet_gx",
    "run_suite",
    "run_suites",
    "summarize_failure",
    "validate_tables_main",
    "write_report",
]


# --------------------------------------------------------------------------- the context


def quiet_gx() -> None:
    """Silence GX's analytics, INFO logs (stdlib and structlog) and warnings.

    structlog is configured only when nothing configured it before: a job run inside a
    host process that did (an Airflow task running it as a Spark Connect client:
    ``kafkalab.spark.connect``) must not turn the host's own INFO lines off."""
    os.environ["GX_ANALYTICS_ENABLED"] = "false"
    for name in ("great_expectations", "py4j", "posthog"):
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", module="great_expectations")
    try:
        import structlog

        if not structlog.is_configured():
            structlog.configure(
                wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    except ImportError:  # pragma: no cover - structlog comes with GX's dependencies
        pass


def preload_gx() -> threading.Thread:
    """Import Great Expectations on a background thread and return it (started).

    The import takes seconds of CPU in Python; a job's JVM takes seconds to start and its
    first Spark jobs wait on the JVM. A ``main`` calls this before it builds its session so
    the two overlap; the first GX use (:func:`ephemeral_context`) then finds the modules
    imported, or waits for the import to finish (Python's import lock).
    """
    def _import() -> None:
        quiet_gx()
        import great_expectations
        import great_expectations.expectations  # noqa: F401
        from great_expectations.checkpoint import Checkpoint  # noqa: F401

    thread = threading.Thread(target=_import, name="preload-gx", daemon=True)
    thread.start()
    return thread


def ephemeral_context(docs_dir: str | None) -> Any:
    """An ephemeral GX context without progress bars, with an optional Data Docs site."""
    quiet_gx()
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


# --------------------------------------------------------------------------- expectations


def expectation(cls_name: str, check: str, **kwargs: Any) -> Any:
    """The GX expectation ``cls_name`` (``ExpectColumnValuesToBeBetween``) with ``kwargs``;
    ``check`` (the rule in words) is kept in its ``meta`` and names it in the report. An
    expectation that cannot be evaluated fails with the error instead of raising."""
    import great_expectations.expectations as gxe

    cls = getattr(gxe, cls_name)
    return cls(meta={"check": check}, catch_exceptions=True, **kwargs)


def ordered(cols: Sequence[str]) -> Column:
    """True when the non-null values among ``cols`` are non-decreasing (a percentile may be
    null for want of samples or on a censored rank; the others keep their order)."""
    ok = F.lit(True)
    for i, lo in enumerate(cols):
        for hi in cols[i + 1:]:
            ok = ok & (F.col(lo).isNull() | F.col(hi).isNull() | (F.col(lo) <= F.col(hi)))
    return F.coalesce(ok, F.lit(False))


# --------------------------------------------------------------------------- failures


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _example(index: dict[str, Any], column: str | None) -> str:
    """One failing row named by its index columns: its ``cell`` label (every suite but the
    raw samples has one: ``kafka-python/1kb/latency``) or a raw sample row by scenario,
    payload, profile and seq: ``kafka-python/1kb/latency seq 20 (e2e_latency_ms=-3.0)``."""
    if "cell" in index:
        return str(index["cell"])
    name = "/".join(str(index.get(c)) for c in ("scenario", "payload", "profile"))
    if index.get("seq") is not None:
        name += f" seq {index['seq']}"
    if column in index:
        name += f" ({column}={index[column]})"
    return name


def summarize_failure(suite: str, res: Any, n_examples: int) -> dict[str, Any]:
    """One failed expectation as a JSON-able dict with a short human summary; its examples
    name the failing rows (cells, or raw rows by cell and seq) where the suite has index
    columns, else show the unexpected values."""
    cfg = res.expectation_config
    kwargs = dict(cfg.kwargs)
    column = kwargs.get("column")
    check = (cfg.meta or {}).get("check") or cfg.type
    result = dict(res.result or {})
    exc = res.exception_info or {}
    raised = bool(exc.get("raised_exception")) if isinstance(exc, dict) else False
    unexpected = result.get("unexpected_count")
    examples = list(result.get("partial_unexpected_list") or [])[:n_examples]
    indexed = [_example(i, column) for i in result.get("partial_unexpected_index_list") or []
               if isinstance(i, dict)][:n_examples]
    where = f"{column}: " if column and not str(check).startswith(column) else ""
    if raised:
        msg = str(exc.get("exception_message") or "error").strip().splitlines()[0][:200]
        detail = f"could not be evaluated ({msg})"
    elif unexpected is not None:
        total = result.get("element_count")
        detail = f"{unexpected} of {total} rows violate it"
        if indexed or examples:
            detail += f", e.g. {', '.join(indexed or map(str, examples))}"
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
        "unexpected_rows": indexed,
        "observed_value": _jsonable(result.get("observed_value")),
        "raised_exception": raised,
    }


# --------------------------------------------------------------------------- suites


VERDICT_FORMAT: dict[str, Any] = {"result_format": "BOOLEAN_ONLY"}
"""Result format of a suite's first pass: each expectation's verdict and nothing else. GX
then computes the unexpected counts of every column-map expectation together (one Spark
aggregation per row condition) and runs no per-expectation job for examples."""

DETAIL_FORMAT: dict[str, Any] = {"result_format": "SUMMARY"}
"""Result format of the second pass, over the failed expectations only: counts, examples
(``partial_unexpected_list``) and, with index columns, the failing rows by name."""


def _config_id(res: Any) -> str | None:
    """The id of the expectation a validation result is for."""
    cfg = res.expectation_config
    return cfg.id if cfg is not None else None


def run_suite(context: Any, name: str, df: DataFrame, expectations: list[Any],
              site_names: Sequence[str] = (), index_columns: Sequence[str] = ()) -> Any:
    """Validate ``df`` against a new suite and return its ``ExpectationSuiteValidationResult``.

    Two passes over the same (persisted) batch: a Checkpoint computes every expectation's
    verdict (:data:`VERDICT_FORMAT`); then only the failed expectations are validated again
    for their details (:data:`DETAIL_FORMAT`; a failure's examples name their rows by
    ``index_columns``). A passing expectation so costs no Spark job of its own, where a
    one-pass SUMMARY ran two per column-map expectation (its examples and their row
    indices). The verdicts and statistics are those of the first pass; each failed result
    is replaced by its detailed one (same order). With ``site_names`` the merged result is
    stored and rendered into those Data Docs sites (a passing expectation shows its verdict
    without observed values).
    """
    import great_expectations as gx
    from great_expectations.checkpoint import Checkpoint, UpdateDataDocsAction
    from great_expectations.validator.v1_validator import Validator

    source = context.data_sources.add_spark(name=f"{name}_source")
    asset = source.add_dataframe_asset(name=f"{name}_asset")
    batch_def = asset.add_batch_definition_whole_dataframe(f"{name}_batch")
    # one store write for the whole suite (add_expectation re-serializes the suite each
    # time: 2.2 s for the 107 expectations of a run)
    suite = context.suites.add(gx.ExpectationSuite(name=name, expectations=list(expectations)))
    vdef = context.validation_definitions.add(
        gx.ValidationDefinition(name=f"{name}_validation", data=batch_def, suite=suite)
    )
    checkpoint = context.checkpoints.add(
        Checkpoint(name=f"{name}_checkpoint", validation_definitions=[vdef], actions=[],
                   result_format=VERDICT_FORMAT)
    )
    run = checkpoint.run(batch_parameters={"dataframe": df})
    key, result = next(iter(run.run_results.items()))
    by_id = {exp.id: exp for exp in suite.expectations}
    ids = [_config_id(r) for r in result.results]
    failed = [i for i, r in enumerate(result.results) if not r.success]
    if failed:
        copies = [copy.copy(by_id[ids[i]]) for i in failed]
        details_suite = gx.ExpectationSuite(name=f"{name}_details", expectations=copies)
        for exp, i in zip(details_suite.expectations, failed, strict=True):
            exp.id = ids[i]  # the copy's result names the expectation it details
        result_format = dict(DETAIL_FORMAT)
        if index_columns:
            result_format["unexpected_index_column_names"] = list(index_columns)
        details = Validator(batch_definition=batch_def, batch_parameters={"dataframe": df},
                            result_format=result_format
                            ).validate_expectation_suite(details_suite)
        detailed = {_config_id(r): r for r in details.results}
        for i in failed:
            result.results[i] = detailed[ids[i]]
    if site_names:
        context.validation_results_store.set(key, result)
        UpdateDataDocsAction(name="data_docs", site_names=list(site_names)).run(run)
    return result


class Part(NamedTuple):
    """One suite of a validation: its name (``raw_samples``, ``load_cells``), the DataFrame it
    checks (with its computed check columns), its expectations and the columns that name a
    failing row in the report (``cell``; none: the unexpected values are shown)."""

    name: str
    df: DataFrame
    expectations: list[Any]
    index_columns: Sequence[str] = ()


def run_suites(context: Any, parts: Sequence[Part], n_examples: int,
               site_names: Sequence[str] = ()) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Validate each part in order (:func:`run_suite`) and return the report's ``suites``
    (name -> ``success`` and ``statistics``) and ``failed_expectations``
    (:func:`summarize_failure`, at most ``n_examples`` examples each)."""
    suites: dict[str, Any] = {}
    failed: list[dict[str, Any]] = []
    for part in parts:
        res = run_suite(context, part.name, part.df, part.expectations, site_names,
                        part.index_columns)
        stats = dict(res.statistics)
        suites[part.name] = {
            "success": bool(res.success),
            "statistics": {
                "evaluated_expectations": int(stats.get("evaluated_expectations", 0)),
                "successful_expectations": int(stats.get("successful_expectations", 0)),
                "unsuccessful_expectations": int(stats.get("unsuccessful_expectations", 0)),
                "success_percent": stats.get("success_percent"),
            },
        }
        failed.extend(summarize_failure(part.name, r, n_examples)
                      for r in res.results if not r.success)
    return suites, failed


# --------------------------------------------------------------------------- report pages


REPORT_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1d1d1f}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:1.6rem}
.badge{display:inline-block;padding:.15rem .6rem;border-radius:.8rem;color:#fff;font-weight:600}
.ok{background:#1a7f37}.fail{background:#cf222e}
table{border-collapse:collapse;margin-top:.5rem;font-size:.9rem}
th,td{border:1px solid #d0d7de;padding:.3rem .6rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}code{font-size:.85rem}
""".strip()
"""The style of every validation page (inline: a page reads the same offline)."""


def badge(good: bool) -> str:
    """``passed`` on green or ``failed`` on red."""
    return (f"<span class='badge {'ok' if good else 'fail'}'>"
            f"{'passed' if good else 'failed'}</span>")


def html_page(title: str, body: str) -> str:
    """A self-contained HTML page (:data:`REPORT_CSS` inline, no URL) titled ``title`` (text,
    escaped here) around ``body`` (HTML)."""
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{REPORT_CSS}</style></head><body>"
            f"{body}</body></html>\n")


def parts_page(title: str, doc: dict[str, Any], extra: str = "") -> str:
    """The page of a validation report in parts (``validate_load``, ``validate_faults``):
    ``<title> of run <id>`` with its verdict, when it was validated, ``extra`` (HTML), each
    part's verdict and counts, and every failed expectation with the rows it names."""
    esc = html.escape
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
    return html_page(
        f"{title} {doc['run_id']}",
        f"<h1>{title} of run <code>{esc(str(doc['run_id']))}</code> {badge(doc['success'])}"
        f"</h1><p>Validated at {esc(doc['validated_at'])}.</p>{extra}"
        "<h2>Parts</h2><table><tr><th>part</th><th>result</th><th>evaluated</th>"
        f"<th>failed</th></tr>{rows}</table><h2>Failed expectations</h2>{failed_html}")


# --------------------------------------------------------------------------- a job's end


def write_report(out: str, stem: str, doc: dict[str, Any], page: str) -> None:
    """Write a validation report: ``<out>/<stem>.json`` (``doc``) and ``<out>/<stem>.html``
    (``page``), each atomically (:func:`_session.write_json_atomic`)."""
    shared.write_json_atomic(os.path.join(out, f"{stem}.json"), doc)
    shared.write_text_atomic(os.path.join(out, f"{stem}.html"), page)


def print_verdict(prog: str, run_id: str, doc: dict[str, Any], alarm: str | None = None
                  ) -> int:
    """Print a validation's verdict and return its exit code: ``<prog>: run <id> passed (<n>
    expectations)`` and 0, or one ``FAILED <summary>`` line per failed expectation on stderr,
    then ``alarm`` (a line of its own, when given), then ``<prog>: run <id> failed (<n>
    expectations)``, and 1."""
    if doc["success"]:
        n = sum(s["statistics"]["evaluated_expectations"] for s in doc["suites"].values())
        print(f"{prog}: run {run_id} passed ({n} expectations)")
        return 0
    for failure in doc["failed_expectations"]:
        print(f"FAILED {failure['summary']}", file=sys.stderr)
    if alarm:
        print(alarm, file=sys.stderr)
    print(f"{prog}: run {run_id} failed ({len(doc['failed_expectations'])} expectations)",
          file=sys.stderr)
    return 1


def validate_tables_main(
        argv: Sequence[str] | None,
        validate: Callable[[DataFrame, DataFrame, dict[str, Any]], dict[str, Any]],
        render_html: Callable[[dict[str, Any]], str], *, prog: str, description: str,
        aggregates_help: str, tables: tuple[str, str], suffix: str,
        alarm: Callable[[dict[str, Any]], str | None] | None = None) -> int:
    """The command line of a validation of two of a run's aggregate tables (``validate_load``,
    ``validate_faults``): ``--aggregates ROOT --run-id ID --out DIR``.

    Reads ``<aggregates>/run_id=<id>/<table>.parquet`` of both ``tables``, runs
    ``validate(first, second, {"run_id": id})`` in the job's session (GX imported while the
    JVM starts), writes ``<out>/<id><suffix>.json`` and ``.html`` (``render_html``) and
    prints the verdict (``alarm(doc)``: a line said on failure, or None). Returns 0 (valid),
    1 (validation failed) or 2 (bad input).
    """
    args = shared.job_parser(prog, description, {
        "--aggregates": aggregates_help, "--run-id": "the run to validate",
        "--out": "output directory"}).parse_args(argv)

    def validate_in(spark: SparkSession) -> int:
        return validate_tables_in(spark, validate, render_html, args.aggregates, args.run_id,
                                  args.out, prog=prog, tables=tables, suffix=suffix,
                                  alarm=alarm)

    return shared.run_job(prog, validate_in, inputs={"aggregates": args.aggregates},
                          warm_up=preload_gx)


def validate_tables_in(
        spark: SparkSession,
        validate: Callable[[DataFrame, DataFrame, dict[str, Any]], dict[str, Any]],
        render_html: Callable[[dict[str, Any]], str], aggregates: str, run_id: str, out: str,
        *, prog: str, tables: tuple[str, str], suffix: str,
        alarm: Callable[[dict[str, Any]], str | None] | None = None) -> int:
    """In ``spark``: read both of a run's ``tables`` under ``aggregates``, validate them, write
    ``<out>/<run_id><suffix>.json`` and ``.html`` and print the verdict; returns 0 (valid) or
    1 (failed). What :func:`validate_tables_main` runs, and what an aggregation job runs after
    its tables with ``--validate-out`` (:func:`_session.run_tables_main`).

    Raises:
        _session.InputError: a table is missing or unreadable.
    """
    first, second = (shared.read_run_table(spark, aggregates, run_id, table)
                     for table in tables)
    doc = validate(first, second, {"run_id": run_id})
    write_report(out, f"{run_id}{suffix}", doc, render_html(doc))
    return print_verdict(prog, run_id, doc, alarm(doc) if alarm else None)
