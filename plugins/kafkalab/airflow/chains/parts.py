"""What every chain of tasks is built from: the lab's assets, what a task reads from its
context (params, the lab run id, the logical date, the command it records), the
``name_run`` task, the skip of a nightly part that is turned off, and the watcher's verdict.

Building reads no file: the data directory is resolved from the environment
(:class:`kafkalab.store.LabData`), once per DAG definition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from airflow.sdk import Asset, TriggerRule, get_current_context, task

from kafkalab.airflow import run_ids
from kafkalab.airflow.params import refuse_undeclared
from kafkalab.errors import ConfigError, LabError, RunError
from kafkalab.store import LabData


@dataclass(frozen=True)
class LabAssets:
    """The data directory the DAG was defined with and its assets: the raw samples, the
    aggregates and the trend report (the outlets of ``close_run``, the aggregations and
    ``publish_report``)."""

    data_dir: Path
    samples: Asset
    aggregates: Asset
    report: Asset


def lab_assets() -> LabAssets:
    """The assets of the data directory (``$KAFKALAB_DATA_DIR`` or ``<root>/lab-data``); no
    I/O."""
    lab = LabData()
    return LabAssets(
        data_dir=lab.root,
        samples=Asset(name="kafkalab_raw_samples", uri=lab.samples_dir.as_uri(), group="kafkalab"),
        aggregates=Asset(name="kafkalab_aggregates", uri=lab.aggregates_dir.as_uri(),
                         group="kafkalab"),
        report=Asset(name="kafkalab_trend_report", uri=lab.reports_dir.as_uri(), group="kafkalab"))


def context_params() -> dict[str, Any]:
    """The running DAG run's params (its form with the trigger's conf).

    Raises:
        AirflowFailException: the trigger's conf holds a key the DAG does not declare
            (:func:`kafkalab.airflow.params.refuse_undeclared`): no retry.
    """
    ctx = get_current_context()
    params = dict(ctx["params"])
    dag = ctx.get("dag")
    if dag is not None:
        try:
            refuse_undeclared(params, dag.params.keys(), dag.dag_id)
        except ConfigError as exc:
            fail_without_retry(exc)
    return params


def fail_without_retry(exc: LabError) -> NoReturn:
    """Fail the running task for good, with ``exc``'s one line: a failure no retry can
    change (a trigger's conf the DAG refuses, a run that was never started), where a retry
    would only hold the DAG run for its ``retry_delay``."""
    from airflow.sdk.exceptions import AirflowFailException

    raise AirflowFailException(f"{type(exc).__name__}: {exc}") from exc


def current_run_id(prefix: str) -> str:
    """The lab run id (``prefix``) of the running DAG run: from its logical date
    (:func:`kafkalab.airflow.run_ids.context_lab_run_id`)."""
    run_id = run_ids.context_lab_run_id(get_current_context(), prefix)
    if run_id is None:  # every task context has a dag_run
        raise RunError("no DAG run in the task's context")
    return run_id


def one_run_per_night() -> bool:
    """Whether the running DAG run is one of a night's (a run of the nightly with a logical
    date, :data:`kafkalab.airflow.run_ids.ONE_RUN_PER_NIGHT`): its lab runs are the night's,
    re-opened by every DAG run of that night."""
    ctx = get_current_context()
    dag = ctx.get("dag")
    return (run_ids.one_run_per_night(getattr(dag, "dag_id", None))
            and run_ids.logical_date_of(ctx) is not None)


def logical_date() -> str | None:
    """The running DAG run's logical date (else ``run_after``), ISO 8601 UTC."""
    return run_ids.logical_date_iso(get_current_context())


def dag_run_command() -> str:
    """What a run's manifest records as its command: ``airflow dag <dag_id> run <run_id>``."""
    ctx = get_current_context()
    return f"airflow dag {ctx['dag'].dag_id} run {ctx['dag_run'].run_id}"


def name_run(prefix: str, task_id: str = "name_run",
             doc_md: str = "The lab's path-safe run id of this DAG run, from its logical date.") -> Any:
    """The task ``task_id`` that names the lab run (``<prefix>-<time>``) of this DAG run; its
    XComArg (each task given it receives the run id at run time)."""

    @task(task_id=task_id, doc_md=doc_md)
    def name() -> str:
        return current_run_id(prefix)

    return name()


def skip_when_off(switch: Callable[[Mapping[str, Any]], bool], param: str, what: str) -> None:
    """Skip the running task (and so what depends on it) when the nightly's boolean
    ``param`` turns ``what`` off.

    Raises:
        AirflowSkipException: ``<what> turned off (param <param> is false)``.
    """
    if not switch(context_params()):
        from airflow.sdk.exceptions import AirflowSkipException

        raise AirflowSkipException(f"{what} turned off (param {param} is false)")


def fail_with_problems(checks: Sequence[Callable[[], object]], otherwise: str) -> NoReturn:
    """Fail the watcher task (``verify_outcome``) naming every run's problem: each check reads
    a run's files and raises :class:`~kafkalab.errors.RunError` naming what is wrong; when
    none does, ``otherwise`` (an upstream task failed without a trace in the files).

    Raises:
        RunError: always.
    """
    problems = []
    for check in checks:  # every run's problem is named, not only the first one's
        try:
            check()
        except RunError as exc:
            problems.append(str(exc))
    raise RunError("; ".join(problems) or otherwise)


def verify_outcome(run_prefix: str, checks: Callable[[str], Sequence[Callable[[], object]]],
                   what: str = "run") -> Any:
    """The watcher task ``verify_outcome`` (``one_failed``, never retried): it runs only when
    a task failed, and fails naming the problems ``checks(<lab run id>)`` find in the runs'
    files (:func:`fail_with_problems`; none: ``<what> <id>: an upstream task failed``), so
    the DAG run is marked failed."""

    @task(trigger_rule=TriggerRule.ONE_FAILED, retries=0, task_id="verify_outcome",
          doc_md="Runs only when a task failed, and fails so the DAG run is marked failed.")
    def watch() -> None:
        run_id = current_run_id(run_prefix)
        fail_with_problems(checks(run_id),
                           f"{what} {run_id}: an upstream task failed (see the grid)")

    return watch()


__all__ = [
    "LabAssets",
    "context_params",
    "current_run_id",
    "dag_run_command",
    "fail_with_problems",
    "lab_assets",
    "logical_date",
    "name_run",
    "one_run_per_night",
    "skip_when_off",
]
