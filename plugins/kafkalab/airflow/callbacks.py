"""Callbacks: tell on-call when a DAG run fails, naming the task that failed first and
linking its log in the Airflow UI.

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
characters), ``airflow_run_id`` (the DAG run whose task failed).

Several DAG runs may write one lab run: every run of one night of the nightly re-opens that
night's lab run (:mod:`kafkalab.airflow.run_ids`). The file keeps every DAG run's failures;
a DAG run's alert announces only its own (:func:`first_failure` with its ``airflow_run_id``),
never a failure of an earlier run of the same night.

Cheap to import (the webhook and alert code load inside the callback): safe at DAG-parse time.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC
from typing import TYPE_CHECKING, Any

from kafkalab.airflow.connections import AlertWebhookConnection
from kafkalab.airflow.run_ids import context_lab_run_id

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
    """``(dag_id, lab run id)`` of a callback context: the lab run id the run's tasks use
    (from its logical date, :func:`~kafkalab.airflow.run_ids.context_lab_run_id`); None
    without an Airflow run id."""
    dag_run = context.get("dag_run")
    dag = context.get("dag")
    dag_id = getattr(dag, "dag_id", None) or getattr(dag_run, "dag_id", None)
    return dag_id, context_lab_run_id(context)


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
                  "error": error[:_ERROR_CHARS],
                  "airflow_run_id": _airflow_run_id_of(context)}
        path = failures_path(LabData(), run_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:  # one short line: one append
            f.write(json.dumps(record) + "\n")
    except Exception as exc:  # a callback must never raise
        log.warning("task failure not recorded: %s: %s", type(exc).__name__, exc)


def first_failure(lab: LabData, run_id: str, airflow_run_id: str | None = None,
                  ) -> tuple[dict[str, Any] | None, list[str]]:
    """The earliest recorded task failure of a lab run other than a watcher's, and the task
    ids that failed after it (in order); with ``airflow_run_id``, only the failures of that
    DAG run (a re-opened night's earlier DAG runs failed on their own). ``(None, [])`` when
    nothing was recorded."""
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
        if (isinstance(rec, dict) and rec.get("task_id") not in WATCHER_TASKS
                and (airflow_run_id is None or rec.get("airflow_run_id") == airflow_run_id)):
            records.append(rec)
    if not records:
        return None, []
    records.sort(key=lambda r: str(r.get("failed_at") or ""))
    later = [str(r["task_id"]) for r in records[1:] if r.get("task_id") != records[0].get("task_id")]
    return records[0], list(dict.fromkeys(later))


def _read_first_failure(run_id: str | None, airflow_run_id: str | None = None,
                        ) -> tuple[dict[str, Any] | None, list[str]]:
    """:func:`first_failure` of the lab run ``run_id`` (of the DAG run ``airflow_run_id``,
    when given); ``(None, [])`` when there is none or reading it fails (a failed read must
    not cost the alert)."""
    if not run_id:
        return None, []
    try:
        from kafkalab.store import LabData

        return first_failure(LabData(), run_id, airflow_run_id)
    except Exception:
        return None, []


def _failure_reason(context: Mapping[str, Any], run_id: str | None,
                    first: dict[str, Any] | None = None, later: list[str] | None = None,
                    ) -> str:
    """What failed: the first task failure recorded for the lab run ``run_id`` (the cause;
    read unless given as ``first`` / ``later``), else the callback context's reason, task and
    exception."""
    if first is None:
        first, later = _read_first_failure(run_id, _airflow_run_id_of(context))
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


def task_log_url(dag_id: str, airflow_run_id: str, task_id: str, map_index: int | None = -1,
                 try_number: int | None = None, base_url: str | None = None) -> str:
    """The Airflow UI's page of a task instance's log, as Airflow 3 forms
    ``TaskInstance.log_url``: ``<[api] base_url>/dags/<dag_id>/runs/<run_id>/tasks/<task_id>
    [/mapped/<map_index>][?try_number=<n>]`` (``base_url`` defaults to
    :func:`kafkalab.urls.airflow_base_url`)."""
    from urllib.parse import quote

    from kafkalab.urls import airflow_base_url

    base = (base_url or airflow_base_url()).rstrip("/")
    mapped = f"/mapped/{map_index}" if map_index is not None and map_index >= 0 else ""
    tries = f"?try_number={try_number}" if try_number is not None and try_number > 0 else ""
    return f"{base}/dags/{dag_id}/runs/{quote(airflow_run_id)}/tasks/{task_id}{mapped}{tries}"


def _int_or(value: Any, default: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def failed_task_of(context: Mapping[str, Any], first: Mapping[str, Any] | None
                   ) -> dict[str, Any] | None:
    """The failed task a ``run_failed`` alert names: ``{"task_id", "map_index",
    "try_number", "log_url"}`` of the first recorded failure ``first`` (the cause), else of
    the context's task instance; None when neither names a task.

    ``log_url`` is the context's ``ti.log_url`` when that task instance is the one named,
    else :func:`task_log_url` from the DAG id and the Airflow run id (None without them).
    """
    ti = context.get("task_instance") or context.get("ti")
    source: Mapping[str, Any] | None = first
    if source is None and ti is not None and getattr(ti, "task_id", None):
        source = {"task_id": ti.task_id, "map_index": getattr(ti, "map_index", -1),
                  "try_number": getattr(ti, "try_number", None)}
    if source is None or not source.get("task_id"):
        return None
    task_id = str(source["task_id"])
    map_index = _int_or(source.get("map_index"), -1)
    try_number = _int_or(source.get("try_number"), None)
    log_url: str | None = None
    if (ti is not None and getattr(ti, "task_id", None) == task_id
            and _int_or(getattr(ti, "map_index", -1), -1) == map_index
            and _int_or(getattr(ti, "try_number", None), None) == try_number):
        try:
            log_url = str(ti.log_url) if getattr(ti, "log_url", None) else None
        except Exception:  # a partial task instance: form the link below
            log_url = None
    dag_id, airflow_run_id = _dag_id_of(context), _airflow_run_id_of(context)
    if log_url is None and dag_id and airflow_run_id:
        log_url = task_log_url(dag_id, airflow_run_id, task_id, map_index, try_number)
    return {"task_id": task_id, "map_index": map_index, "try_number": try_number,
            "log_url": log_url}


def _dag_id_of(context: Mapping[str, Any]) -> str | None:
    dag, dag_run = context.get("dag"), context.get("dag_run")
    return getattr(dag, "dag_id", None) or getattr(dag_run, "dag_id", None)


def _airflow_run_id_of(context: Mapping[str, Any]) -> str | None:
    run_id = getattr(context.get("dag_run"), "run_id", None) or context.get("run_id")
    return str(run_id) if run_id else None


def on_failure_alert(context: Mapping[str, Any]) -> None:
    """Airflow ``on_failure_callback``: tell on-call that a run failed. Never raises.

    Sends a ``run_failed`` alert through the ``kafkalab_alert_webhook`` Connection: the DAG,
    the lab and Airflow run ids, the task that failed first (:func:`first_failure`) with its
    map index, try number and log URL (:func:`failed_task_of`), the error, and the link to
    the run's report. Without the Connection it only logs.
    """
    try:
        dag_id, run_id = _run_of(context)
        first, later = _read_first_failure(run_id, _airflow_run_id_of(context))
        error = _failure_reason(context, run_id, first, later)
        hook = AlertWebhookConnection().settings()
        if hook is None:
            log.warning("run %s of %s failed (%s); no alert webhook configured", run_id, dag_id,
                        error)
            return
        from kafkalab.alerts import alert_run_failed

        alert_run_failed(hook, dag_id, run_id, error,
                         report_url=hook.report_url(run_id) if run_id else None,
                         failed_task=failed_task_of(context, first),
                         airflow_run_id=_airflow_run_id_of(context))
        log.info("failure alert for %s of %s sent", run_id, dag_id)
    except Exception as exc:  # a callback must never raise
        log.warning("failure alert not sent: %s: %s", type(exc).__name__, exc)


__all__ = ["FAILURES_FILE", "WATCHER_TASKS", "failed_task_of", "failures_path", "first_failure",
           "on_failure_alert", "record_task_failure", "task_log_url"]
