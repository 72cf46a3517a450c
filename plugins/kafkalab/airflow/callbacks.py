"""Callbacks: tell on-call when a DAG run fails, naming the task that failed first.

Airflow calls a DAG's ``on_failure_callback`` with the context of the *last* task that
failed. When a run's broker is down, that is a task downstream of the real failure (a
``close_run`` with nothing to close, or the watcher ``verify_outcome``), not
``check_cluster`` with the ClusterError and the address. So every task also records its own
final failure (:func:`record_task_failure`, the tasks' ``on_failure_callback``) in the lab
run's ``runs/<run_id>/task-failures.jsonl``, and the DAG's callback announces the earliest
(:func:`first_failure`).

``task-failures.jsonl``: one JSON object a line, appended when a task fails for good (not on
a retry): ``task_id``, ``map_index`` (-1 when not mapped), ``try_number``, ``failed_at`` (UTC
ISO 8601, the worker's wall clock), ``error`` (``<ExceptionType>: <message>``, at most 2,000
characters).

Cheap to import (the webhook and alert code load inside the callback): safe at DAG-parse time.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC
from typing import TYPE_CHECKING, Any

from kafkalab.airflow.connections import AlertWebhookConnection
from kafkalab.airflow.run_ids import dag_lab_run_id

if TYPE_CHECKING:
    from pathlib import Path

    from kafkalab.store import LabData

log = logging.getLogger(__name__)

FAILURES_FILE = "task-failures.jsonl"
"""Where a lab run's task failures are recorded, in ``runs/<run_id>/``."""

WATCHER_TASKS = frozenset({"verify_outcome"})
"""Tasks that fail *because* another task failed: never the cause."""

_ERROR_CHARS = 2000


def failures_path(lab: LabData, run_id: str) -> Path:
    """``runs/<run_id>/task-failures.jsonl`` of the lab run ``run_id``."""
    return lab.run_work_dir(run_id) / FAILURES_FILE


def _run_of(context: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """``(dag_id, lab run id)`` of a callback context (the run id is None without an
    Airflow run id)."""
    dag_run = context.get("dag_run")
    dag = context.get("dag")
    dag_id = getattr(dag, "dag_id", None) or getattr(dag_run, "dag_id", None)
    airflow_run_id = getattr(dag_run, "run_id", None) or context.get("run_id")
    return dag_id, dag_lab_run_id(dag_id, str(airflow_run_id)) if airflow_run_id else None


def record_task_failure(context: Mapping[str, Any]) -> None:
    """A task's ``on_failure_callback``: append this failure to the lab run's
    ``task-failures.jsonl``. Never raises (a failed record only logs)."""
    try:
        import json
        from datetime import datetime

        from kafkalab.store import LabData

        _dag_id, run_id = _run_of(context)
        ti = context.get("task_instance") or context.get("ti")
        if run_id is None or ti is None:
            return
        exc = context.get("exception")
        error = f"{type(exc).__name__}: {exc}" if exc is not None else "failed"
        record = {"task_id": getattr(ti, "task_id", None),
                  "map_index": getattr(ti, "map_index", -1),
                  "try_number": getattr(ti, "try_number", None),
                  "failed_at": datetime.now(UTC).isoformat(),
                  "error": error[:_ERROR_CHARS]}
        path = failures_path(LabData(), run_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:  # one short line: one append
            f.write(json.dumps(record) + "\n")
    except Exception as exc:  # a callback must never raise
        log.warning("task failure not recorded: %s: %s", type(exc).__name__, exc)


def first_failure(lab: LabData, run_id: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The earliest recorded task failure of a lab run other than a watcher's, and the task
    ids that failed after it (in order). ``(None, [])`` when nothing was recorded."""
    import json

    records = []
    try:
        lines = failures_path(lab, run_id).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None, []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:  # a torn line: skip it, keep the others
            continue
        if isinstance(rec, dict) and rec.get("task_id") not in WATCHER_TASKS:
            records.append(rec)
    if not records:
        return None, []
    records.sort(key=lambda r: str(r.get("failed_at") or ""))
    later = [str(r["task_id"]) for r in records[1:] if r.get("task_id") != records[0].get("task_id")]
    return records[0], list(dict.fromkeys(later))


def _failure_reason(context: Mapping[str, Any], run_id: str | None) -> str:
    """What failed: the first task failure recorded for the lab run ``run_id`` (the cause),
    else the callback context's reason, task and exception."""
    try:
        from kafkalab.store import LabData

        first, later = first_failure(LabData(), run_id) if run_id else (None, [])
    except Exception:  # reading the record must not cost the alert
        first, later = None, []
    if first is not None:
        where = str(first.get("task_id"))
        map_index = first.get("map_index")
        if isinstance(map_index, int) and map_index >= 0:
            where += f"[{map_index}]"
        out = f"task {where} failed first: {first.get('error')}"
        if later:
            out += "; then " + ", ".join(later)
        return out
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
        dag_id, run_id = _run_of(context)
        error = _failure_reason(context, run_id)
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


__all__ = ["FAILURES_FILE", "WATCHER_TASKS", "failures_path", "first_failure",
           "on_failure_alert", "record_task_failure"]
