"""What every lab DAG declares the same way: its owner, start date, one run at a time, no
catch-up, the retry policy and failure record of its tasks, and the alert on a failed run.

A DAG file passes :func:`dag_args` to Airflow's ``@dag`` with what is its own (schedule,
retry delay, form, tags, documentation). Cheap at DAG-parse time.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from kafkalab.airflow.callbacks import on_failure_alert, record_task_failure

OWNER = "kafkalab"
"""The owner of every task."""

START_DATE = datetime(2026, 1, 1)
"""Every DAG's ``start_date`` (none catches up)."""

TASK_TIMEOUT = timedelta(hours=3)
"""Every task's ``execution_timeout``: the longest cell the params allow (a load cell of
1 h plus its drain, a latency cell of 100,000 round trips) with room to spare; a task that
hangs fails instead of holding the one-slot measuring pool forever."""

DAG_RUN_TIMEOUT = timedelta(hours=24)
"""Every DAG run's ``dagrun_timeout`` (a nightly must end before the next one)."""


def default_args(retries: int = 1, retry_delay: timedelta = timedelta(minutes=1)) -> dict[str, Any]:
    """Owner, retry policy, :data:`TASK_TIMEOUT` and the failure record shared by every task
    of a DAG (a task that fails for good records itself, so the run's failure alert names the
    first cause)."""
    return {"owner": OWNER, "retries": retries, "retry_delay": retry_delay,
            "execution_timeout": TASK_TIMEOUT, "on_failure_callback": record_task_failure}


def dag_args(*, schedule: str | None, retry_delay: timedelta, params: dict[str, Any],
             tags: list[str], doc_md: str) -> dict[str, Any]:
    """The ``@dag`` arguments of a lab DAG: ``schedule`` (None: triggered by hand), one run
    at a time (ended after :data:`DAG_RUN_TIMEOUT`), no catch-up, tasks retried once after
    ``retry_delay`` and timed out after :data:`TASK_TIMEOUT`, a failed run announced
    (``run_failed`` alert, :func:`kafkalab.airflow.callbacks.on_failure_alert`), and the DAG's
    own form (``params``), ``tags`` and ``doc_md``."""
    return {"schedule": schedule, "start_date": START_DATE, "catchup": False,
            "max_active_runs": 1, "dagrun_timeout": DAG_RUN_TIMEOUT,
            "default_args": default_args(retries=1, retry_delay=retry_delay),
            "on_failure_callback": on_failure_alert, "params": params, "tags": tags,
            "doc_md": doc_md}


__all__ = ["DAG_RUN_TIMEOUT", "OWNER", "START_DATE", "TASK_TIMEOUT", "dag_args",
           "default_args"]
