"""The latency chain (``latency_experiment``, and the core of the nightly)::

    name_run -> check_cluster -> prepare_run -> measure_cell x cells (mapped, pool
      kafkalab_measure) -> close_run (all_done) -> aggregate_metrics (Spark)
      -> validate_metrics (Spark + GX) -> check_drift (all_done) -> publish_report (all_done)
      -> send_alerts (all_done);  every task -> verify_outcome (one_failed)

The nightly's runs beside it (:class:`Companions`: its fan-out load run and its fault run)
are judged by the same ``check_drift``, ``publish_report``, ``send_alerts`` and
``verify_outcome``. The task logic is :mod:`kafkalab.airflow.tasks`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from airflow.sdk import TriggerRule, get_current_context, task

from kafkalab.airflow import fault_tasks, load_tasks, tasks, version_tasks
from kafkalab.airflow.chains import parts
from kafkalab.airflow.operators import lab_spark_task
from kafkalab.airflow.pools import MEASURE_POOL
from kafkalab.errors import RunNeverStartedError


def _started(prefix: str | None, started: Callable[[str], bool]) -> str | None:
    """The lab run id of this DAG run's run ``prefix`` when it was started."""
    if not prefix:
        return None
    run_id = parts.current_run_id(prefix)
    return run_id if started(run_id) else None


@dataclass(frozen=True)
class Companions:
    """The runs the nightly measures beside its latency run and judges with it: the fan-out
    load run, the fault run and the version matrix (the prefixes of their lab run ids; None:
    this DAG has none)."""

    fanout_prefix: str | None = None
    fault_prefix: str | None = None
    matrix_prefix: str | None = None

    def fanout_run(self) -> str | None:
        """The fan-out run's lab run id when it was started (None: none, or its cell was
        turned off or failed to start)."""
        return _started(self.fanout_prefix, load_tasks.load_run_started)

    def fault_run(self) -> str | None:
        """The fault run's lab run id when it was started (None: none, or its trial was
        turned off or failed to start)."""
        return _started(self.fault_prefix, fault_tasks.fault_run_started)

    def outcome_checks(self, params: dict[str, Any]) -> list[Callable[[], object]]:
        """The verdicts of the runs that were to run (their switch on), each raising
        :class:`~kafkalab.errors.RunError` naming what is wrong."""
        checks: list[Callable[[], object]] = []
        if self.fanout_prefix and load_tasks.nightly_fanout_on(params):
            fanout = parts.current_run_id(self.fanout_prefix)
            checks.append(lambda: load_tasks.verify_load_outcome(fanout))
        if self.fault_prefix and fault_tasks.nightly_fault_on(params):
            faults = parts.current_run_id(self.fault_prefix)
            checks.append(lambda: fault_tasks.verify_fault_outcome(faults))
        if self.matrix_prefix and version_tasks.nightly_matrix_on(params):
            matrix = parts.current_run_id(self.matrix_prefix)
            checks.append(lambda: version_tasks.verify_matrix_outcome(matrix))
        return checks


@dataclass
class LatencyPart:
    """The tasks of a latency chain that the nightly wires its other runs to."""

    lab_run: Any
    closed: Any
    aggregated: Any
    drift: Any
    report: Any
    watcher: Any


def _measure_tasks(run_prefix: str, assets: parts.LabAssets) -> list[Any]:
    """``name_run -> check_cluster -> prepare_run -> measure_cell[...]``, ``close_run``:
    the tasks, in that order."""

    @task
    def check_cluster() -> dict[str, Any]:
        """Fail early, with a clear message, when the Kafka cluster does not answer."""
        params = parts.context_params()
        return tasks.check_cluster(params.get("cluster_descriptor") or None,
                                   scenarios=tasks.resolve_scenarios(params))

    @task(pool=MEASURE_POOL)  # provisioning topics loads the broker: not while another DAG measures
    def prepare_run(lab_run_id: str) -> list[dict[str, str]]:
        """Validate the matrix, provision topics, start the run; returns the cells to map."""
        return tasks.prepare_run(parts.context_params(), lab_run_id,
                                 command=parts.dag_run_command(), logical_date=parts.logical_date(),
                                 supersede=parts.one_run_per_night())

    # One cell at a time (parallel cells distort latencies); the pool extends it across DAGs.
    @task(pool=MEASURE_POOL, max_active_tis_per_dag=1, map_index_template="{{ cell_label }}")
    def measure_cell(lab_run_id: str, cell: dict[str, str]) -> dict[str, Any]:
        """Measure one scenario x payload x profile cell (named in the grid
        ``confluent-kafka · 1mb · latency``)."""
        from airflow.sdk.exceptions import AirflowSkipException

        ctx = get_current_context()
        ctx["cell_label"] = tasks.cell_label(cell)  # type: ignore[typeddict-unknown-key]
        summary = tasks.measure_cell(dict(ctx["params"]), lab_run_id, cell)
        if summary["status"] == "skipped":
            raise AirflowSkipException(f"cell skipped: {summary.get('reason')}")
        return summary

    @task(trigger_rule=TriggerRule.ALL_DONE, outlets=[assets.samples])
    def close_run(lab_run_id: str) -> dict[str, Any]:
        """Merge the cells' results into the run manifest, even when some cells failed; a run
        that never started (its check_cluster or prepare_run failed) fails without a retry."""
        try:
            return tasks.close_run(lab_run_id)
        except RunNeverStartedError as exc:
            parts.fail_without_retry(exc)

    lab_run: Any = parts.name_run(run_prefix)
    cluster = check_cluster()
    cells = prepare_run(lab_run)
    measured = measure_cell.partial(lab_run_id=lab_run).expand(cell=cells)
    closed = close_run(lab_run)
    lab_run >> cluster >> cells
    measured >> closed
    return [lab_run, cluster, cells, measured, closed]


def _judge_tasks(run_prefix: str, assets: parts.LabAssets, companions: Companions,
                 lab_run: Any) -> list[Any]:
    """``check_drift``, ``publish_report``, ``send_alerts`` (each ``all_done``) and the
    watcher ``verify_outcome`` (``one_failed``), over the latency run and its companions."""

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def check_drift(lab_run_id: str) -> dict[str, Any]:
        """Compare this run (and the fan-out run) with its baseline; writes drift records."""
        out = tasks.check_drift(lab_run_id)
        if (load_run := companions.fanout_run()) is not None:
            out["load"] = tasks.check_drift(load_run)
        return out

    @task(trigger_rule=TriggerRule.ALL_DONE, outlets=[assets.report])
    def publish_report(lab_run_id: str) -> str:
        """Rebuild the trend report; it shows validation results and drift flags."""
        if (load_run := companions.fanout_run()) is not None:
            tasks.publish_report(load_run)
        if (faults_run := companions.fault_run()) is not None:
            tasks.publish_report(faults_run)
        return tasks.publish_report(lab_run_id)

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def send_alerts(lab_run_id: str) -> dict[str, Any]:
        """Announce new drifts and recoveries on the kafkalab_alert_webhook connection."""
        dag_id = get_current_context()["dag"].dag_id
        out = tasks.send_alerts(lab_run_id, dag_id=dag_id)
        if (load_run := companions.fanout_run()) is not None:
            out["load"] = tasks.send_alerts(load_run, dag_id=dag_id)
        if (faults_run := companions.fault_run()) is not None:
            out["faults"] = fault_tasks.send_fault_alerts(faults_run, dag_id=dag_id)
        return out

    def checks(run_id: str) -> list[Callable[[], object]]:
        return [lambda: tasks.verify_outcome(run_id),
                *companions.outcome_checks(parts.context_params())]

    drift = check_drift(lab_run)
    report = publish_report(lab_run)
    alerts = send_alerts(lab_run)
    return [drift, report, alerts, parts.verify_outcome(run_prefix, checks)]


def build_latency_chain(run_prefix: str, companions: Companions | None = None) -> LatencyPart:
    """Create the tasks of one latency run in the DAG being defined.

    Args:
        run_prefix: prefix of the lab run ids (``nightly`` -> ``nightly-20261121T000000Z``).
        companions: the nightly's fan-out and fault runs, judged with this one (their tasks
            are the nightly's, :func:`kafkalab.airflow.chains.nightly.build_nightly_chain`).
    """
    assets = parts.lab_assets()
    lab_run, cluster, cells, measured, closed = _measure_tasks(run_prefix, assets)
    aggregated = lab_spark_task(
        "aggregate", "aggregate_metrics", lab_run, assets.data_dir, one_session="aggregate",
        outlets=[assets.aggregates],
        doc_md="Spark: raw samples of the run -> one aggregate row per cell (Parquet).",
    )
    validated = lab_spark_task(
        "validate", "validate_metrics", lab_run, assets.data_dir, one_session="validate",
        session_task="aggregate_metrics",
        retries=0,  # a failed expectation is deterministic: retrying only costs time
        doc_md="Spark + Great Expectations: fails (exit 1) when an expectation fails; the "
        "result is validation/<run_id>.json, shown in the report.",
    )
    drift, report, alerts, watcher = _judge_tasks(run_prefix, assets, companions or Companions(),
                                                  lab_run)
    closed >> aggregated >> validated >> drift >> report >> alerts
    [lab_run, cluster, cells, measured, closed, aggregated, validated, drift, report,
     alerts] >> watcher
    return LatencyPart(lab_run, closed, aggregated, drift, report, watcher)


__all__ = ["Companions", "LatencyPart", "build_latency_chain"]
