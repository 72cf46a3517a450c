"""The version-matrix part and chain (``version_matrix``; the nightly carries the part)::

    name_run -> run_matrix (pool kafkalab_measure, not retried) -> finish_matrix (all_done)
      -> plan_aggregations -> aggregate_version_run (one per run of a version: its load
      run, start-up run and fault run; Spark, + GX in the same session where the kind does)
      -> plan_validations -> validate_version_run (the fault runs' GX suite)
      -> judge_versions (none_failed_min_one_success; fails when a version regressed);
      every task -> verify_outcome

The task logic is :mod:`kafkalab.airflow.version_tasks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow.sdk import TriggerRule, task

from kafkalab.airflow import version_tasks
from kafkalab.airflow.chains import parts
from kafkalab.airflow.operators import SPARK_CONN_ID, StartedRunSparkSubmitOperator
from kafkalab.airflow.pools import MEASURE_POOL
from kafkalab.spark import submit as spark_submit


@dataclass
class MatrixPart:
    """The tasks of a version matrix's measuring, Spark and judging part."""

    started: Any
    finished: Any
    jobs: Any
    aggregated: Any
    checks: Any
    validated: Any
    judged: Any

    @property
    def all(self) -> list[Any]:
        """Every task of the part (the watcher's upstream)."""
        return [self.started, self.finished, self.jobs, self.aggregated, self.checks,
                self.validated, self.judged]


def version_part(matrix_id: Any, assets: parts.LabAssets, nightly: bool = False) -> MatrixPart:
    """``run_matrix -> finish_matrix -> plan_aggregations -> aggregate_version_run[...] ->
    judge_versions`` for the matrix ``matrix_id`` (an XComArg). ``nightly``: the matrix is
    :func:`kafkalab.airflow.version_tasks.nightly_matrix_params` (the fixed workload, the
    param's versions), and ``run_matrix`` is skipped (so is everything up to
    ``judge_versions``) when the param ``version_matrix`` names no version."""

    # Measured whole: a retry would find its run ids taken, and a failed step is a row of
    # the matrix file, judged by verify_outcome.
    @task(pool=MEASURE_POOL, retries=0)
    def run_matrix(matrix_id: str) -> dict[str, Any]:
        """Every version's rounds, alternating, each on a fresh one-broker cluster."""
        params = parts.context_params()
        if nightly:
            if not version_tasks.nightly_matrix_on(params):
                from airflow.sdk.exceptions import AirflowSkipException

                raise AirflowSkipException(f"version matrix turned off (param "
                                           f"{version_tasks.NIGHTLY_MATRIX_PARAM} names no "
                                           "version)")
            params = version_tasks.nightly_matrix_params(params)
        return version_tasks.run_version_matrix(params, matrix_id,
                                                command=parts.dag_run_command(),
                                                logical_date=parts.logical_date())

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def finish_matrix(matrix_id: str) -> dict[str, Any]:
        """The matrix's state, whatever became of it (nothing measures after this)."""
        return version_tasks.finish_matrix(matrix_id)

    @task
    def plan_aggregations(matrix_id: str) -> list[dict[str, Any]]:
        """One Spark job per run of a version that measured a round (none when the matrix
        never started)."""
        return version_tasks.aggregation_jobs(matrix_id)

    @task
    def plan_validations(matrix_id: str) -> list[dict[str, Any]]:
        """The validation job of each run whose aggregation does not validate in its own
        session (the fault runs)."""
        return version_tasks.validation_jobs(matrix_id)

    # none_failed_min_one_success: no validation to run (no fault trials) skips
    # validate_version_run, which must not skip the verdict
    @task(retries=0, trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS)
    def judge_versions(matrix_id: str) -> dict[str, Any]:
        """Every version against the first: the change, its 95 % interval, the drift rule."""
        return version_tasks.judge_versions(matrix_id)

    measured = run_matrix(matrix_id)
    finished = finish_matrix(matrix_id)
    jobs = plan_aggregations(matrix_id)
    aggregated = StartedRunSparkSubmitOperator.partial(
        task_id="aggregate_version_run", conn_id=SPARK_CONN_ID,
        py_files=spark_submit.spark_py_files(), conf=spark_submit.spark_conf(),
        env_vars=spark_submit.spark_env(), name="kafkalab-aggregate-version-run",
        outlets=[assets.aggregates], map_index_template="{{ task.lab_run_id }}",
        doc_md="Spark: one run of a version (its load run -> load_cells, load_consumers, "
        "load_lag; its start-up run -> startup_probes, startup_cases), then, in the same "
        "session, the run kind's Great Expectations suite.").expand_kwargs(jobs)
    checks = plan_validations(matrix_id)
    validated = StartedRunSparkSubmitOperator.partial(
        task_id="validate_version_run", conn_id=SPARK_CONN_ID, retries=0,
        py_files=spark_submit.spark_py_files(), conf=spark_submit.spark_conf(),
        env_vars=spark_submit.spark_env(), name="kafkalab-validate-version-run",
        map_index_template="{{ task.lab_run_id }}",
        doc_md="Spark + Great Expectations: a version's fault run -> the faults suite "
        "(validation/<run_id>-faults.json).").expand_kwargs(checks)
    judged = judge_versions(matrix_id)
    matrix_id >> measured >> finished >> jobs >> aggregated >> checks >> validated >> judged
    return MatrixPart(measured, finished, jobs, aggregated, checks, validated, judged)


def build_version_chain(run_prefix: str) -> None:
    """Create the tasks of one version matrix (the ``version_matrix`` DAG) in the DAG being
    defined."""
    matrix_id: Any = parts.name_run(run_prefix)
    part = version_part(matrix_id, parts.lab_assets())
    [matrix_id, *part.all] >> parts.verify_outcome(
        run_prefix, lambda run_id: [lambda: version_tasks.verify_matrix_outcome(run_id)],
        what="version matrix")


__all__ = ["MatrixPart", "build_version_chain", "version_part"]
