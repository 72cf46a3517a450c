"""The alert entry points: a run's drifts and recoveries (de-duplicated), a failed run, a
fault run's failed validation (``critical`` when durability broke).

Each takes the typed alert Connection (:class:`kafkalab.alerts.webhook.AlertWebhook`:
which hook, which body format) and delivers through :func:`kafkalab.alerts.delivery.send_alert`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafkalab.alerts.bodies import HIGHEST_SEVERITY, Severity, build_body, busy_cells
from kafkalab.alerts.delivery import scrub_secrets, send_alert
from kafkalab.alerts.plan import plan_alerts
from kafkalab.alerts.state import load_state, save_state, state_path
from kafkalab.drift import load_drift_config_or_default, read_drift
from kafkalab.kinds import FAULTS
from kafkalab.store import LabData, locked

if TYPE_CHECKING:
    from kafkalab.alerts.webhook import AlertWebhook
    from kafkalab.drift.config import DriftConfig

log = logging.getLogger(__name__)


def with_rule_thresholds(recs: list[dict[str, Any]], config: DriftConfig) -> list[dict[str, Any]]:
    """``recs`` with ``k_mad`` (the drift rule's threshold of each record's metric, from
    ``config``; None for a metric the config no longer has), from which the bodies derive
    the baseline's MAD band."""
    out = []
    for rec in recs:
        try:
            k_mad: float | None = config.rule(str(rec.get("metric"))).k_mad
        except KeyError:
            k_mad = None
        out.append({**rec, "k_mad": k_mad})
    return out


def alert_on_drift(
    data_dir: str | os.PathLike[str],
    run_id: str,
    webhook: AlertWebhook | None,
    report_url: str | None = None,
    *,
    dag_id: str | None = None,
    worsen_margin_pct: float | None = None,
    timeout_s: float = 10,
) -> dict[str, Any]:
    """Announce a run's new drifts and recoveries once, then update the state.

    Reads ``<data_dir>/drift/run_id=<run_id>/drift.parquet``; when nothing needs saying no
    request is made. The state is written only after a successful delivery, so a failed
    delivery is retried by the next call. Without a webhook nothing is sent nor recorded.
    ``worsen_margin_pct`` defaults to ``alerts.worsen_margin_pct`` of the drift config; each
    series carries its rule's ``k_mad`` (:func:`with_rule_thresholds`). The body format is
    the webhook's (``webhook.fmt``); ``report_url`` is the link to the run's report
    (:meth:`~kafkalab.alerts.webhook.AlertWebhook.report_url`).

    Returns:
        ``{"run_id", "sent", "drifts", "recoveries", "suppressed", "reason"}``.

    Raises:
        AlertError: delivery failed (message without the URL).
    """
    summary: dict[str, Any] = {
        "run_id": run_id, "sent": False, "drifts": 0, "recoveries": 0, "suppressed": 0,
        "reason": None,
    }
    records = read_drift(data_dir, run_id)
    if records is None:
        summary["reason"] = "no drift records for this run"
        return summary
    config = load_drift_config_or_default()
    if worsen_margin_pct is None:
        worsen_margin_pct = config.alerts.worsen_margin_pct
    with locked(state_path(data_dir)):  # two notifiers never announce one drift twice
        state = load_state(data_dir)
        to_alert, recoveries, new_state = plan_alerts(records, state, worsen_margin_pct)
        n_drift = int(records["is_drift"].fillna(False).astype(bool).sum()) if len(records) else 0
        summary.update(
            drifts=len(to_alert), recoveries=len(recoveries), suppressed=n_drift - len(to_alert)
        )
        if not to_alert and not recoveries:
            summary["reason"] = "nothing new to announce"
            return summary
        if webhook is None or not webhook.url:
            summary["reason"] = "no webhook configured"
            log.info("drift alert for %s not sent: no webhook configured", run_id)
            return summary
        body = build_body(
            webhook.fmt, run_id=run_id, dag_id=dag_id, report_url=report_url,
            drifts=with_rule_thresholds(to_alert, config),
            recoveries=with_rule_thresholds(recoveries, config),
            busy_host=busy_cells(records.to_dict(orient="records")),
        )
        send_alert(webhook, body, timeout_s=timeout_s)
        save_state(data_dir, new_state)
        summary["sent"] = True
        return summary


def alert_run_failed(
    webhook: AlertWebhook,
    dag_id: str | None,
    run_id: str | None,
    error: str,
    report_url: str | None = None,
    timeout_s: float = 10,
    severity: Severity | None = None,
    *,
    failed_task: Mapping[str, Any] | None = None,
    airflow_run_id: str | None = None,
) -> dict[str, Any]:
    """Announce a failed run (e.g. from an Airflow ``on_failure_callback``); returns the body.

    ``failed_task``: the task that failed first, ``{"task_id", "map_index", "try_number",
    "log_url"}`` (the log's page in the Airflow UI); ``airflow_run_id``: the DAG run's
    Airflow run id (``run_id`` is the lab's). The error text is cut to 1500 characters and
    scrubbed of the webhook's secrets. ``severity`` defaults to ``error``
    (:data:`kafkalab.alerts.bodies.DEFAULT_SEVERITY`).

    Raises:
        AlertError: delivery failed (message without the URL).
    """
    err = scrub_secrets(str(error), webhook)
    body = build_body(webhook.fmt, run_id=run_id, dag_id=dag_id, report_url=report_url,
                      error=err, severity=severity, failed_task=failed_task,
                      airflow_run_id=airflow_run_id)
    send_alert(webhook, body, timeout_s=timeout_s)
    return body


# --------------------------------------------------------------------------- fault runs

FAULT_SUITE = "faults"
"""The suite of ``spark_jobs/validate_faults.py`` (``validation/<run_id>-faults.json``)."""
DURABLE_PROFILE = "durability"


def durability_broken(doc: Mapping[str, Any]) -> bool:
    """Whether a fault validation report says acked messages were lost under the durability
    profile: its ``durability.success`` is false, or (a report without that block) a failed
    expectation on ``acked_lost`` names the durability profile."""
    dur = doc.get("durability")
    if isinstance(dur, Mapping) and "success" in dur:
        return not bool(dur["success"])
    return any(f.get("column") == "acked_lost" and DURABLE_PROFILE in str(f.get("check") or "")
               for f in doc.get("failed_expectations") or [])


def validation_severity(doc: Mapping[str, Any]) -> Severity | None:
    """The severity of a fault validation report's alert: None when it passed,
    :data:`~kafkalab.alerts.bodies.HIGHEST_SEVERITY` (``critical``) when durability broke
    (:func:`durability_broken`), else ``error``."""
    if doc.get("success"):
        return None
    return HIGHEST_SEVERITY if durability_broken(doc) else "error"


def fault_validation_fields(doc: Mapping[str, Any], report_path: str | None = None
                            ) -> dict[str, Any]:
    """The ``validation`` an alert body carries for a failed fault validation report:
    ``suite``, ``report_path``, ``failed_checks`` (the failures' summaries), ``durability``."""
    dur = doc.get("durability")
    if not isinstance(dur, Mapping) and durability_broken(doc):
        dur = {"success": False, "acked_lost": None, "trials": []}
    checks = [str(f.get("summary") or f.get("check"))
              for f in doc.get("failed_expectations") or []]
    if doc.get("unreadable"):
        checks.append("the validation report is unreadable")
    return {"suite": doc.get("suite") or FAULT_SUITE, "report_path": report_path,
            "failed_checks": checks, "durability": dur}


def alert_on_fault_validation(
    data_dir: str | os.PathLike[str],
    run_id: str,
    webhook: AlertWebhook | None,
    report_url: str | None = None,
    *,
    dag_id: str | None = None,
    timeout_s: float = 10,
) -> dict[str, Any]:
    """Announce a fault run's failed validation (``validation/<run_id>-faults.json``).

    A passed validation, or none yet, sends nothing. A failed one is announced as kind
    ``validation_failed``: severity ``critical`` (the highest, :func:`validation_severity`)
    when acked messages were lost under the durability profile, the trials and their losses
    listed; else ``error``, with the failed checks. Not de-duplicated: call it once per run.
    Without a webhook nothing is sent (a broken durability promise is logged at CRITICAL).

    Returns:
        ``{"run_id", "sent", "severity", "reason", "failed_checks", "acked_lost"}``.

    Raises:
        AlertError: delivery failed (message without the URL).
    """
    summary: dict[str, Any] = {"run_id": run_id, "sent": False, "severity": None,
                               "reason": None, "failed_checks": 0, "acked_lost": 0}
    lab = LabData(data_dir)
    path = lab.validation_path(run_id, FAULTS)
    doc = lab.validation(run_id, FAULTS)
    if doc is None:
        summary["reason"] = "no fault validation result for this run"
        return summary
    severity = validation_severity(doc)
    if severity is None:
        summary["reason"] = "validation passed"
        return summary
    validation = fault_validation_fields(doc, str(path))
    dur = validation.get("durability") or {}
    summary.update(severity=severity, failed_checks=len(validation["failed_checks"]),
                   acked_lost=int(dur.get("acked_lost") or 0))
    if severity == HIGHEST_SEVERITY:
        log.critical("fault run %s: durability broken: %s acked message(s) lost under the "
                     "durability profile (%s)", run_id, summary["acked_lost"], path)
    if webhook is None or not webhook.url:
        summary["reason"] = "no webhook configured"
        log.info("fault validation alert for %s not sent: no webhook configured", run_id)
        return summary
    body = build_body(webhook.fmt, run_id=run_id, dag_id=dag_id, report_url=report_url,
                      validation=validation, severity=severity)
    send_alert(webhook, body, timeout_s=timeout_s)
    summary["sent"] = True
    return summary


__all__ = ["alert_on_drift", "alert_on_fault_validation", "alert_run_failed",
           "durability_broken", "fault_validation_fields",
           "validation_severity", "with_rule_thresholds"]
