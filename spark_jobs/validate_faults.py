"""Validate one run's fault aggregates with Great Expectations (1.x, Spark): suite ``faults``.

Reads ``<aggregates>/run_id=<id>/fault_trials.parquet`` and ``fault_cells.parquet``
(written by ``spark_jobs/aggregate_faults.py``) and checks (``docs/aggregates-schema.md``,
"Fault aggregates"):

* ``fault_trials`` (one row per trial, failures named by trial id): the producer's outcomes
  add up (acked + failed + indeterminate + unsent = intended); the verdicts add up (ok +
  acked_lost + failed_but_present + indeterminate_present + unseen = intended; ok +
  acked_lost = acked; read back = ok + failed_but_present + indeterminate_present; the lost
  found in a log plus those absent from every log <= acked_lost); counts are non-negative; a
  complete trial has its counts; and **under the durability profile no acked message is lost
  (acked_lost = 0)** — :data:`DURABILITY_CHECK`; a consumer-fault trial's counts are
  non-negative, **with commit after (at-least-once) every message the topic holds was
  processed (lost_unprocessed = 0)** — :data:`AT_LEAST_ONCE_CHECK` — and every consumer
  trial's processed records are all in the re-read (reread_agrees) —
  :data:`REREAD_CHECK`;
* ``fault_cells`` (one row per profile × fault × acks × commit): trials_with_loss <=
  trials_complete <= trials; each median <= its max.

Output: ``<out>/<run_id>-faults.json`` (atomic) and ``<out>/<run_id>-faults.html``. Besides
the load suite's keys the JSON has ``durability``: ``{"check", "success", "acked_lost",
"trials": [{"trial_id", "fault", "acks", "acked_lost", "acked_lost_in_broker_logs",
"acked_lost_absent_from_logs"}]}`` — the durability trials that lost acked messages; the
alerts (``kafkalab.alerts.alert_on_fault_validation``) give a failing durability check the
highest severity.

Usage::

    spark-submit spark_jobs/validate_faults.py --aggregates lab-data/aggregates/faults \
        --run-id ID --out lab-data/validation

Exit codes: 0 valid, 1 validation failed (one ``FAILED`` line per failed expectation on
stderr), 2 bad input. Needs PySpark, great-expectations, ``_session.py`` and ``_gx.py``
(beside this script, or shipped with ``--py-files``).
"""

from __future__ import annotations

import datetime as dt
import html
import sys
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

if __package__:  # imported as spark_jobs.validate_faults (tests, tools)
    from . import _gx
else:  # run as a script: _gx.py sits beside it or is shipped with --py-files
    import _gx  # type: ignore[no-redef]

__all__ = [
    "AT_LEAST_ONCE_CHECK",
    "CELL_CHECKS",
    "DURABILITY_CHECK",
    "DURABLE_PROFILE",
    "REREAD_CHECK",
    "TRIAL_CHECKS",
    "main",
    "render_html",
    "validate",
    "with_cell_checks",
    "with_trial_checks",
]

SCHEMA_VERSION = 1
"""Version of the fault validation report (``docs/aggregates-schema.md``)."""

SUITE = "faults"
DURABLE_PROFILE = "durability"
DURABILITY_CHECK = "profile durability: no acked message is lost (acked_lost = 0)"
"""The check whose failure is a broken durability promise (the highest alert severity)."""

COUNT_COLUMNS: tuple[str, ...] = (
    "intended_msgs", "acked_msgs", "failed_msgs", "indeterminate_msgs", "unsent_msgs",
    "read_back_msgs", "ok_msgs", "acked_lost", "acked_lost_in_broker_logs",
    "acked_lost_absent_from_logs", "failed_but_present", "indeterminate_present", "unseen",
    "duplicates", "reordered", "aborted_msgs", "aborted_visible",
)
STATUSES = ["complete", "failed", "interrupted"]
CONSUMER_COUNT_COLUMNS: tuple[str, ...] = (
    "processed_records", "processed_unique", "redelivered", "lost_unprocessed",
    "processed_not_in_topic",
)
"""A consumer-fault trial's counts (null for a broker-fault trial)."""
AT_LEAST_ONCE_COMMIT = "after"
AT_LEAST_ONCE_CHECK = ("commit after (at-least-once): every message the topic holds was "
                       "processed (lost_unprocessed = 0)")
"""Committing after processing may process a record twice but never skip one."""
REREAD_CHECK = ("a consumer trial's processed records are all in the re-read "
                "(reread_agrees; a complete trial must have it)")
#: Columns of newer aggregates, added as null when an older ``fault_trials`` lacks them.
OPTIONAL_TRIAL_COLUMNS: dict[str, str] = {
    "commit": "string", "reread_agrees": "boolean", "txn_msgs": "int",
    "aborted_msgs": "bigint", "aborted_visible": "bigint", "txn_committed_unacked": "bigint",
    **dict.fromkeys(CONSUMER_COUNT_COLUMNS, "bigint"),
}

#: Computed boolean columns of ``fault_trials`` (true on every row; a trial without counts
#: passes them: "a complete trial has its counts" is checked on its own).
TRIAL_CHECKS: dict[str, str] = {
    "outcomes_add_up_ok": "acked + failed + indeterminate + unsent + aborted = intended_msgs",
    "verdicts_add_up_ok": "ok + acked_lost + failed_but_present + indeterminate_present + "
                          "unseen + aborted (both aborted verdicts) = intended_msgs",
    "acked_split_ok": "ok + acked_lost = acked_msgs",
    "read_back_ok": "read_back = ok + failed_but_present + indeterminate_present + "
                    "aborted_visible",
    "no_aborted_visible_ok": "transactions: no record of an aborted transaction is visible to "
                             "a read_committed reader (aborted_visible = 0)",
    "txn_commits_complete_ok": "transactions: a committed transaction holds every record sent "
                               "in it (txn_committed_unacked = 0: the producer was never told "
                               "a commit succeeded while one of its records had failed)",
    "lost_in_logs_ok": "acked_lost_in_broker_logs + acked_lost_absent_from_logs <= acked_lost",
}
TRIAL_NOT_NULL: tuple[str, ...] = ("trial_id", "profile", "fault", "acks", "status")
COMPLETE_HAS_COUNTS = "a complete trial has its counts (verdicts.parquet was read)"

CELL_FIGURES: tuple[str, ...] = ("acked_lost", "duplicates", "reordered", "unavailable_ms",
                                 "leader_elected_ms", "isr_full_ms", "consumer_gap_ms",
                                 "redelivered", "lost_unprocessed", "rebalance_pause_ms",
                                 "controller_elected_ms")
#: Computed boolean columns of ``fault_cells``.
CELL_CHECKS: dict[str, str] = {
    "trial_counts_ok": "trials_with_loss <= trials_complete <= trials",
    "medians_below_max_ok": "every <figure>_median <= <figure>_max (where not null)",
}


def _sum(cols: Sequence[str]) -> Column:
    total = F.lit(0)
    for c in cols:
        total = total + F.col(c)
    return total


def _with_columns(df: DataFrame, columns: dict[str, str]) -> DataFrame:
    """``df`` with each of ``columns`` it lacks added as null (an older table)."""
    for col, type_ in columns.items():
        if col not in df.columns:
            df = df.withColumn(col, F.lit(None).cast(type_))
    return df


def with_trial_checks(trials: DataFrame) -> DataFrame:
    """``fault_trials`` with a ``cell`` label (the trial id), the boolean columns of
    :data:`TRIAL_CHECKS` (never null: a trial without counts passes them) and
    ``reread_ok`` (:data:`REREAD_CHECK`: true for a broker-fault trial; a consumer trial's
    ``reread_agrees``, a complete one's missing value false)."""
    out = _with_columns(trials, OPTIONAL_TRIAL_COLUMNS).withColumn("cell", F.col("trial_id"))
    out = out.withColumn(
        "reread_ok", F.when(F.col("commit").isNull(), F.lit(True))
        .when(F.col("reread_agrees").isNotNull(), F.col("reread_agrees"))
        .otherwise(F.coalesce(F.col("status") != "complete", F.lit(False))))
    aborted = F.coalesce(F.col("aborted_msgs"), F.lit(0))
    visible = F.coalesce(F.col("aborted_visible"), F.lit(0))
    checks: dict[str, Column] = {
        "outcomes_add_up_ok": _sum(("acked_msgs", "failed_msgs", "indeterminate_msgs",
                                    "unsent_msgs")) + aborted == F.col("intended_msgs"),
        "verdicts_add_up_ok": _sum(("ok_msgs", "acked_lost", "failed_but_present",
                                    "indeterminate_present", "unseen")) + aborted
        == F.col("intended_msgs"),
        "acked_split_ok": _sum(("ok_msgs", "acked_lost")) == F.col("acked_msgs"),
        "read_back_ok": _sum(("ok_msgs", "failed_but_present", "indeterminate_present"))
        + visible == F.col("read_back_msgs"),
        "no_aborted_visible_ok": visible == 0,
        "txn_commits_complete_ok": F.coalesce(F.col("txn_committed_unacked"), F.lit(0)) == 0,
        "lost_in_logs_ok": _sum(("acked_lost_in_broker_logs", "acked_lost_absent_from_logs"))
        <= F.col("acked_lost"),
    }
    for name, rule in checks.items():
        out = out.withColumn(name, F.when(F.col("intended_msgs").isNull(), F.lit(True))
                             .otherwise(F.coalesce(rule, F.lit(False))))
    return out


def with_cell_checks(cells: DataFrame) -> DataFrame:
    """``fault_cells`` with a ``cell`` label (``profile/fault/acks-<a>``, plus
    ``/commit-<c>`` (and ``/static``, ``/<rebalance>``) for a consumer fault, ``/<client>``, ``/mif<n>``,
    ``/idem-on|off`` and ``/txn<n>`` where known) and the boolean columns of :data:`CELL_CHECKS`."""
    cells = _with_columns(cells, {"commit": "string", "static_membership": "boolean",
                                  "rebalance": "string",
                                  "client": "string", "max_in_flight": "int",
                                  "idempotence": "boolean", "txn_msgs": "int", **{
        f"{fig}_{stat}": "double" for fig in CELL_FIGURES for stat in ("median", "max")}})
    idem = F.when(F.col("idempotence"), F.lit("idem-on")).when(~F.col("idempotence"),
                                                                 F.lit("idem-off"))
    out = cells.withColumn("cell", F.concat_ws("/", "profile", "fault",
                                               F.concat(F.lit("acks-"), F.col("acks")),
                                               F.concat(F.lit("commit-"), F.col("commit")),
                                               F.when(F.col("static_membership"),
                                                      F.lit("static")),
                                               "rebalance", "client",
                                               F.concat(F.lit("mif"), F.col("max_in_flight")),
                                               idem, F.concat(F.lit("txn"), F.col("txn_msgs"))))
    counts = ((F.col("trials_with_loss") <= F.col("trials_complete"))
              & (F.col("trials_complete") <= F.col("trials")))
    medians = F.lit(True)
    for fig in CELL_FIGURES:
        medians = medians & _gx.ordered((f"{fig}_median", f"{fig}_max"))
    out = out.withColumn("trial_counts_ok", F.coalesce(counts, F.lit(False)))
    return out.withColumn("medians_below_max_ok", F.coalesce(medians, F.lit(False)))


def _trial_expectations() -> list[Any]:
    """The expectations of part ``fault_trials`` (on :func:`with_trial_checks`)."""
    exp = _gx.expectation
    exps = [exp("ExpectTableRowCountToBeBetween", "at least one trial", min_value=1)]
    for col in TRIAL_NOT_NULL:
        exps.append(exp("ExpectColumnValuesToNotBeNull", f"{col} is never null",
                        column=col))
    exps.append(exp("ExpectColumnValuesToBeInSet", f"status in {STATUSES}",
                    column="status", value_set=STATUSES))
    exps.append(exp("ExpectColumnValuesToNotBeNull", COMPLETE_HAS_COUNTS,
                    column="intended_msgs", row_condition="status = 'complete'",
                    condition_parser="spark"))
    for col in COUNT_COLUMNS:
        exps.append(exp("ExpectColumnValuesToBeBetween", f"{col} >= 0", column=col,
                        min_value=0))
    for col, check in TRIAL_CHECKS.items():
        exps.append(exp("ExpectColumnValuesToBeInSet", check, column=col,
                        value_set=[True]))
    exps.append(exp("ExpectColumnValuesToBeBetween", DURABILITY_CHECK,
                    column="acked_lost", max_value=0,
                    row_condition=f"profile = '{DURABLE_PROFILE}'",
                    condition_parser="spark"))
    for col in CONSUMER_COUNT_COLUMNS:
        exps.append(exp("ExpectColumnValuesToBeBetween", f"{col} >= 0", column=col,
                        min_value=0))
    exps.append(exp("ExpectColumnValuesToBeBetween", AT_LEAST_ONCE_CHECK,
                    column="lost_unprocessed", max_value=0,
                    row_condition=f"`commit` = '{AT_LEAST_ONCE_COMMIT}'",
                    condition_parser="spark"))
    exps.append(exp("ExpectColumnValuesToBeInSet", REREAD_CHECK, column="reread_ok",
                    value_set=[True]))
    return exps


def _cell_expectations() -> list[Any]:
    """The expectations of part ``fault_cells`` (on :func:`with_cell_checks`)."""
    exp = _gx.expectation
    exps = [exp("ExpectTableRowCountToBeBetween", "at least one cell", min_value=1),
            exp("ExpectColumnValuesToBeBetween", "acked_lost_sum >= 0",
                column="acked_lost_sum", min_value=0)]
    for col, check in CELL_CHECKS.items():
        exps.append(exp("ExpectColumnValuesToBeInSet", check, column=col,
                        value_set=[True]))
    return exps


def durability_losses(trials: DataFrame) -> list[dict[str, Any]]:
    """The trials of the durability profile that lost acked messages (one small action)."""
    cols = ("trial_id", "fault", "acks", "status", "acked_lost", "acked_lost_in_broker_logs",
            "acked_lost_absent_from_logs")
    rows = (trials.where((F.col("profile") == DURABLE_PROFILE) & (F.col("acked_lost") > 0))
            .select(*cols).orderBy("trial_id").collect())
    return [{c: r[c] for c in cols} for r in rows]


def validate(trials: DataFrame, cells: DataFrame,
             config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run suite ``faults`` (two parts: ``fault_trials``, ``fault_cells``) and return the
    report. ``config``: ``run_id``, ``partial_unexpected_count`` (default 5)."""
    cfg = {"run_id": None, "partial_unexpected_count": 5, **(config or {})}
    context = _gx.ephemeral_context(None)
    checked_trials = with_trial_checks(trials).cache()
    checked_cells = with_cell_checks(cells).cache()
    parts = [_gx.Part("fault_trials", checked_trials, _trial_expectations(), ["cell"]),
             _gx.Part("fault_cells", checked_cells, _cell_expectations(), ["cell"])]
    try:
        suites, failed = _gx.run_suites(context, parts, cfg["partial_unexpected_count"])
        losses = durability_losses(checked_trials)
    finally:
        checked_trials.unpersist()
        checked_cells.unpersist()
    durability_failed = any(f["check"] == DURABILITY_CHECK for f in failed)
    return {
        "schema_version": SCHEMA_VERSION,
        "suite": SUITE,
        "run_id": cfg["run_id"],
        "validated_at": dt.datetime.now(dt.UTC).isoformat(),
        "success": all(s["success"] for s in suites.values()),
        "suites": suites,
        "failed_expectations": failed,
        "durability": {
            "check": DURABILITY_CHECK,
            "success": not losses and not durability_failed,
            "acked_lost": sum(int(x["acked_lost"]) for x in losses),
            "trials": losses,
        },
    }


def render_html(doc: dict[str, Any]) -> str:
    """A small self-contained HTML summary of a fault validation report (the durability
    verdict first: :func:`_gx.parts_page`)."""
    esc = html.escape
    dur = doc["durability"]
    if dur["success"]:
        dur_html = f"<p>{_gx.badge(True)} {esc(dur['check'])}.</p>"
    else:
        lost = "".join(
            f"<tr><td>{esc(str(t['trial_id']))}</td><td>{t['acked_lost']}</td>"
            f"<td>{t['acked_lost_in_broker_logs']}</td>"
            f"<td>{t['acked_lost_absent_from_logs']}</td></tr>" for t in dur["trials"])
        dur_html = (f"<p>{_gx.badge(False)} <strong>Durability broken:</strong> "
                    f"{dur['acked_lost']} acked message(s) lost under the durability profile."
                    "</p><table><tr><th>trial</th><th>acked lost</th><th>still in a broker "
                    f"log</th><th>in no log</th></tr>{lost}</table>")
    return _gx.parts_page("Fault validation", doc, f"<h2>Durability</h2>{dur_html}")


def durability_alarm(doc: dict[str, Any]) -> str | None:
    """The line a failed validation says when durability is broken (None when it is not):
    how many acked messages the durability profile lost, and in which trials."""
    dur = doc["durability"]
    if dur["success"]:
        return None
    return (f"validate_faults: DURABILITY BROKEN: {dur['acked_lost']} acked message(s) lost "
            "under the durability profile in " + ", ".join(t["trial_id"] for t in dur["trials"]))


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns 0 (valid), 1 (validation failed) or 2 (bad input)."""
    return _gx.validate_tables_main(
        argv, validate, render_html, prog="validate_faults",
        description="Validate the fault aggregates of a run.",
        aggregates_help="fault aggregates root", tables=("fault_trials", "fault_cells"),
        suffix="-faults", alarm=durability_alarm)


if __name__ == "__main__":
    sys.exit(main())
