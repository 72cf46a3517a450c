"""The fault chain (``resilience_experiment``) and the fault part the nightly's fault trial
reuses::

    name_run -> start_fault_run -> run_fault_trial x trials (mapped, pool kafkalab_measure)
      -> finish_fault_run (all_done) -> aggregate_faults (Spark) -> validate_faults (Spark + GX)
      -> publish_report -> send_alerts;  every task -> verify_outcome

The task logic is :mod:`kafkalab.airflow.fault_tasks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow.sdk import TriggerRule, get_current_context, task

from kafkalab.airflow import fault_tasks, tasks
from kafkalab.airflow.chains import parts
from kafkalab.airflow.operators import started_run_spark_task
from kafkalab.airflow.pools import MEASURE_POOL


@dataclass
class FaultPart:
    """The tasks of a fault run's measuring and Spark part."""

    started: Any
    measured: Any
    finished: Any
    aggregated: Any
    validated: Any

    @property
    def all(self) -> list[Any]:
        """Every task of the part (the watcher's upstream)."""
        return [self.started, self.measured, self.finished, self.aggregated, self.validated]


def fault_part(fault_run_id: Any, assets: parts.LabAssets, nightly: bool = False) -> FaultPart:
    """``start_fault_run -> run_fault_trial[...] -> finish_fault_run -> aggregate_faults ->
    validate_faults`` for the fault run ``fault_run_id`` (an XComArg). ``nightly``: the
    trials are :data:`kafkalab.airflow.fault_tasks.NIGHTLY_FAULT`, not the form's, and
    ``start_fault_run`` is skipped (so is everything up to ``validate_faults``) when the
    param ``fault_trial`` is false."""

    @task(pool=MEASURE_POOL)  # starts the fault cluster: not while another DAG measures
    def start_fault_run(lab_run_id: str) -> list[dict[str, Any]]:
        """Validate the trials, start (or reuse) the 3-broker fault cluster, start the run."""
        if nightly:
            parts.skip_when_off(fault_tasks.nightly_fault_on, fault_tasks.NIGHTLY_FAULT_PARAM,
                          "fault trial")
        params = dict(fault_tasks.NIGHTLY_FAULT) if nightly else parts.context_params()
        return fault_tasks.start_faults(params, lab_run_id, command=parts.dag_run_command(),
                                        logical_date=parts.logical_date())

    # One trial at a time across every DAG (the pool): a fault trial loads the whole host.
    @task(pool=MEASURE_POOL, max_active_tis_per_dag=1, map_index_template="{{ trial_label }}")
    def run_fault_trial(lab_run_id: str, trial: dict[str, Any]) -> dict[str, Any]:
        """One trial: fixed-rate load, the fault, the heal, the re-read and the checker."""
        get_current_context()["trial_label"] = trial.get("label")  # type: ignore[typeddict-unknown-key]
        return fault_tasks.run_trial(lab_run_id, trial)

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def finish_fault_run(lab_run_id: str) -> dict[str, Any]:
        """Close the fault run, even when some trials failed."""
        return fault_tasks.close_faults(lab_run_id)

    started = start_fault_run(fault_run_id)
    measured = run_fault_trial.partial(lab_run_id=fault_run_id).expand(trial=started)
    finished = finish_fault_run(fault_run_id)
    aggregated = started_run_spark_task(
        "aggregate_faults", fault_run_id, assets.data_dir, outlets=[assets.aggregates],
        doc_md="Spark: the fault run's trials -> fault_trials, fault_cells, fault_timeline "
        "(aggregates/faults/run_id=<id>/). Skipped when the run was never started.")
    validated = started_run_spark_task(
        "validate_faults", fault_run_id, assets.data_dir, retries=0,
        doc_md="Spark + Great Expectations, suite faults: counts add up; under the durability "
        "profile no acked message is lost (a failure names the trial). Result: "
        "validation/<run_id>-faults.json. Skipped when the run was never started.")
    fault_run_id >> started
    measured >> finished >> aggregated >> validated
    return FaultPart(started, measured, finished, aggregated, validated)


def _skip_unless_started(run_id: str) -> None:
    if not fault_tasks.fault_run_started(run_id):
        from airflow.sdk.exceptions import AirflowSkipException

        raise AirflowSkipException(f"fault run {run_id} was not started")


def build_fault_chain(run_prefix: str) -> None:
    """Create the tasks of one fault run (the ``resilience_experiment`` DAG) in the DAG being
    defined: the trials of the form, each a mapped task."""
    assets = parts.lab_assets()

    @task(trigger_rule=TriggerRule.ALL_DONE, outlets=[assets.report])
    def publish_report(lab_run_id: str) -> str:
        """Rebuild the trend report with this fault run's page (skipped when the run never
        started: the failed ``start_fault_run`` says why)."""
        _skip_unless_started(lab_run_id)
        return tasks.publish_report(lab_run_id)

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def send_alerts(lab_run_id: str) -> dict[str, Any]:
        """Announce a failed fault validation (acked messages lost under the durability
        profile) on the kafkalab_alert_webhook connection."""
        _skip_unless_started(lab_run_id)
        return fault_tasks.send_fault_alerts(lab_run_id,
                                             dag_id=get_current_context()["dag"].dag_id)

    lab_run: Any = parts.name_run(run_prefix)
    part = fault_part(lab_run, assets)
    report = publish_report(lab_run)
    alerts = send_alerts(lab_run)
    part.validated >> report >> alerts
    [lab_run, *part.all, report, alerts] >> parts.verify_outcome(
        run_prefix, lambda run_id: [lambda: fault_tasks.verify_fault_outcome(run_id)],
        what="fault run")


__all__ = ["FaultPart", "build_fault_chain", "fault_part"]
