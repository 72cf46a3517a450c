"""The two alert entry points: a run's drifts and recoveries (de-duplicated), a failed run."""

from __future__ import annotations

import logging
import os
from typing import Any

from kafkalab.alerts.bodies import AlertFormat, build_body
from kafkalab.alerts.delivery import send_alert
from kafkalab.alerts.plan import plan_alerts
from kafkalab.alerts.secrets import scrub_url
from kafkalab.alerts.state import load_state, save_state
from kafkalab.drift import load_drift_config_or_default, read_drift

log = logging.getLogger(__name__)


def alert_on_drift(
    data_dir: str | os.PathLike[str],
    run_id: str,
    webhook_url: str | None,
    fmt: AlertFormat = "slack",
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
    ``worsen_margin_pct`` defaults to ``alerts.worsen_margin_pct`` of the drift config.

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
    if worsen_margin_pct is None:
        worsen_margin_pct = load_drift_config_or_default().alerts.worsen_margin_pct
    state = load_state(data_dir)
    to_alert, recoveries, new_state = plan_alerts(records, state, worsen_margin_pct)
    n_drift = int(records["is_drift"].fillna(False).astype(bool).sum()) if len(records) else 0
    summary.update(
        drifts=len(to_alert), recoveries=len(recoveries), suppressed=n_drift - len(to_alert)
    )
    if not to_alert and not recoveries:
        summary["reason"] = "nothing new to announce"
        return summary
    if not webhook_url:
        summary["reason"] = "no webhook configured"
        log.info("drift alert for %s not sent: no webhook configured", run_id)
        return summary
    body = build_body(
        fmt, run_id=run_id, dag_id=dag_id, report_url=report_url, drifts=to_alert,
        recoveries=recoveries,
    )
    send_alert(webhook_url, body, timeout_s=timeout_s)
    save_state(data_dir, new_state)
    summary["sent"] = True
    return summary


def alert_run_failed(
    webhook_url: str,
    dag_id: str | None,
    run_id: str | None,
    error: str,
    fmt: AlertFormat = "slack",
    report_url: str | None = None,
    timeout_s: float = 10,
) -> dict[str, Any]:
    """Announce a failed run (e.g. from an Airflow ``on_failure_callback``); returns the body.

    The error text is cut to 1500 characters and scrubbed of the webhook URL.
    """
    err = scrub_url(str(error), webhook_url)
    body = build_body(fmt, run_id=run_id, dag_id=dag_id, report_url=report_url, error=err)
    send_alert(webhook_url, body, timeout_s=timeout_s)
    return body


__all__ = ["alert_on_drift", "alert_run_failed"]
