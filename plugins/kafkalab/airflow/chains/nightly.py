"""The nightly's composition (``nightly_latency_regression``): the latency chain, then its
fan-out load run and its fault run, judged with it::

    the latency chain (kafkalab.airflow.chains.latency); publish_report -> export_metrics
    close_run -> name_load_run -> start_load_run (skipped when the param fanout_cell is
      false) -> run_load_cell -> finish_load_run (all_done) -> aggregate_load -> validate_load
    finish_load_run -> name_fault_run -> start_fault_run (skipped when the param fault_trial
      is false) -> run_fault_trial -> finish_fault_run (all_done) -> aggregate_faults
      -> validate_faults
    finish_fault_run -> name_matrix_run -> run_matrix (skipped unless the param
      version_matrix names versions) -> finish_matrix (all_done) -> plan_aggregations
      -> aggregate_version_run (mapped) -> judge_versions (fails when a version regressed)
    no Spark job while a load cell, the fault trial or the matrix measures; check_drift
    (latency and load), publish_report, send_alerts and verify_outcome judge every run
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import TriggerRule, task

from kafkalab.airflow import tasks
from kafkalab.airflow.chains import parts
from kafkalab.airflow.chains.faults import fault_part
from kafkalab.airflow.chains.latency import Companions, build_latency_chain
from kafkalab.airflow.chains.load import load_part
from kafkalab.airflow.chains.versions import version_part
from kafkalab.airflow.load_tasks import NIGHTLY_FANOUT


def build_nightly_chain(run_prefix: str, fanout_prefix: str, fault_prefix: str,
                        matrix_prefix: str) -> None:
    """Create the nightly's tasks in the DAG being defined.

    Args:
        run_prefix: prefix of the latency run's lab run ids (``nightly-<time>``).
        fanout_prefix: of the fan-out load run (the cell of
            ``include/workloads/nightly-fanout.yaml``), measured after the latency cells as a
            run of its own, aggregated and validated beside them.
        fault_prefix: of the fault run (one trial of
            :data:`kafkalab.airflow.fault_tasks.NIGHTLY_FAULT`), after the fan-out run.
        matrix_prefix: of the version matrix (:data:`kafkalab.airflow.version_tasks.
            NIGHTLY_MATRIX` on the versions of the param ``version_matrix``), last.
    """
    assets = parts.lab_assets()
    latency = build_latency_chain(run_prefix, Companions(fanout_prefix, fault_prefix,
                                                         matrix_prefix))

    @task(trigger_rule=TriggerRule.ALL_DONE, task_id="export_metrics")
    def export_metrics() -> dict[str, Any]:
        """Write the Prometheus text file (latest p50/p99 per series, drift state, losses,
        the last successful run's time) for node_exporter's textfile collector."""
        return tasks.export_metrics()

    latency.report >> export_metrics() >> latency.watcher

    load_run: Any = parts.name_run(fanout_prefix, task_id="name_load_run",
                             doc_md="The lab run id of the nightly's fan-out load run.")
    load = load_part(load_run, assets, fixed_params={"workload": NIGHTLY_FANOUT["workload"]},
                     nightly=True)
    latency.closed >> load_run
    load.finished >> latency.aggregated  # Spark never runs while a cell measures
    load.validated >> latency.drift
    [load_run, *load.all] >> latency.watcher

    fault_run: Any = parts.name_run(fault_prefix, task_id="name_fault_run",
                              doc_md="The lab run id of the nightly's fault run.")
    faults = fault_part(fault_run, assets, nightly=True)
    load.finished >> fault_run  # after the fan-out cell
    faults.finished >> [latency.aggregated, load.aggregated]  # no Spark job while it measures
    faults.validated >> latency.drift
    [fault_run, *faults.all] >> latency.watcher

    matrix_run: Any = parts.name_run(matrix_prefix, task_id="name_matrix_run",
                               doc_md="The matrix id of the nightly's version matrix.")
    matrix = version_part(matrix_run, assets, nightly=True)
    faults.finished >> matrix_run  # after the fault trial
    # no Spark job while the matrix measures
    matrix.finished >> [latency.aggregated, load.aggregated, faults.aggregated]
    [matrix_run, *matrix.all] >> latency.watcher


__all__ = ["build_nightly_chain"]
