"""The start-up chain (``startup_experiment``)::

    name_run -> run_startup (pool kafkalab_measure, not retried)
      -> aggregate_startup (Spark + GX in one session, all_done) -> validate_startup (its verdict)
      -> publish_report (all_done);  every task -> verify_outcome

The task logic is :mod:`kafkalab.airflow.startup_tasks`.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import TriggerRule, task

from kafkalab.airflow import startup_tasks, tasks
from kafkalab.airflow.chains import parts
from kafkalab.airflow.operators import started_run_spark_task
from kafkalab.airflow.pools import MEASURE_POOL


def _skip_unless_started(run_id: str) -> None:
    if not tasks.run_started(run_id):
        from airflow.sdk.exceptions import AirflowSkipException

        raise AirflowSkipException(f"start-up run {run_id} was not started")


def build_startup_chain(run_prefix: str) -> None:
    """Create the tasks of one start-up run (the ``startup_experiment`` DAG) in the DAG being
    defined."""
    assets = parts.lab_assets()

    # Measured whole: a retry would find its run id taken (the engine refuses it), and a
    # probe that timed out is a row of the run, judged by verify_outcome.
    @task(pool=MEASURE_POOL, retries=0)
    def run_startup(lab_run_id: str) -> dict[str, Any]:
        """Start the start-up cluster(s), time every case's new consumers, stop and wipe."""
        return startup_tasks.run_startup(parts.context_params(), lab_run_id,
                                         command=parts.dag_run_command(),
                                         logical_date=parts.logical_date())

    @task(retries=0)
    def validate_startup(lab_run_id: str) -> dict[str, Any]:
        """The verdict of the Great Expectations suite ``startup`` that aggregate_startup ran
        in its Spark session (validation/<run_id>-startup.json)."""
        _skip_unless_started(lab_run_id)
        return startup_tasks.judge_startup_validation(lab_run_id)

    @task(trigger_rule=TriggerRule.ALL_DONE, outlets=[assets.report])
    def publish_report(lab_run_id: str) -> str:
        """Rebuild the trend report with this start-up run's page (its answer, its cases)."""
        _skip_unless_started(lab_run_id)
        return tasks.publish_report(lab_run_id)

    lab_run: Any = parts.name_run(run_prefix)
    measured = run_startup(lab_run)
    aggregated = started_run_spark_task(
        "aggregate_startup", lab_run, assets.data_dir, validate_in_session=True,
        trigger_rule=TriggerRule.ALL_DONE, outlets=[assets.aggregates],
        doc_md="Spark: the run's probes -> startup_probes, startup_cases "
        "(aggregates/startup/run_id=<id>/), then, in the same session, the Great Expectations "
        "suite startup -> validation/<run_id>-startup.json. Runs when some probes failed (what "
        "was measured is kept); skipped when the run was never started.")
    validated = validate_startup(lab_run)
    report = publish_report(lab_run)
    measured >> aggregated >> validated >> report
    [lab_run, measured, aggregated, validated, report] >> parts.verify_outcome(
        run_prefix, lambda run_id: [lambda: startup_tasks.verify_startup_outcome(run_id)],
        what="start-up run")


__all__ = ["build_startup_chain"]
