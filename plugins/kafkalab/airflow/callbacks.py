"""DAG callbacks: tell on-call when a DAG run fails.

Cheap to import (the webhook and alert code load inside the callback): safe at DAG-parse time.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kafkalab.airflow.connections import AlertWebhookConnection
from kafkalab.airflow.run_ids import dag_lab_run_id

log = logging.getLogger(__name__)


def _failure_reason(context: Mapping[str, Any]) -> str:
    """What failed, from a callback context: its reason, task and exception."""
    parts = []
    if context.get("reason"):
        parts.append(str(context["reason"]))
    ti = context.get("task_instance") or context.get("ti")
    if ti is not None and getattr(ti, "task_id", None):
        parts.append(f"task {ti.task_id} failed")
    if context.get("exception") is not None:
        exc = context["exception"]
        parts.append(f"{type(exc).__name__}: {exc}")
    return "; ".join(parts) or "the DAG run failed"


def on_failure_alert(context: Mapping[str, Any]) -> None:
    """Airflow ``on_failure_callback``: tell on-call that a run failed. Never raises.

    Posts a ``run_failed`` alert to the ``kafkalab_alert_webhook`` Connection; without it
    only logs.
    """
    try:
        dag_run = context.get("dag_run")
        dag = context.get("dag")
        dag_id = getattr(dag, "dag_id", None) or getattr(dag_run, "dag_id", None)
        airflow_run_id = getattr(dag_run, "run_id", None) or context.get("run_id")
        run_id = dag_lab_run_id(dag_id, str(airflow_run_id)) if airflow_run_id else None
        error = _failure_reason(context)
        hook = AlertWebhookConnection().settings()
        if hook is None:
            log.warning("run %s of %s failed (%s); no alert webhook configured", run_id, dag_id,
                        error)
            return
        from kafkalab.alerts import alert_run_failed

        alert_run_failed(hook.url, dag_id, run_id, error, fmt=hook.fmt,
                         report_url=hook.report_url(run_id) if run_id else None)
        log.info("failure alert for %s of %s sent", run_id, dag_id)
    except Exception as exc:  # a callback must never raise
        log.warning("failure alert not sent: %s: %s", type(exc).__name__, exc)


__all__ = ["on_failure_alert"]
