"""The version-matrix chain (``version_matrix``)::

    name_run -> run_matrix (pool kafkalab_measure, not retried) -> plan_aggregations
      -> aggregate_version_run (one per version, Spark + GX in one session, all_done)
      -> judge_versions (fails when a version regressed);  every task -> verify_outcome

The task logic is :mod:`kafkalab.airflow.version_tasks`.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import TriggerRule, task

from kafkalab.airflow import version_tasks
from kafkalab.airflow.chains import parts
from kafkalab.airflow.operators import SPARK_CONN_ID, StartedRunSparkSubmitOperator
from kafkalab.airflow.pools import MEASURE_POOL
from kafkalab.spark import submit as spark_submit


def build_version_chain(run_prefix: str) -> None:
    """Create the tasks of one version matrix (the ``version_matrix`` DAG) in the DAG being
    defined."""
    assets = parts.lab_assets()

    # Measured whole: a retry would find its run ids taken, and a failed step is a row of
    # the matrix file, judged by verify_outcome.
    @task(pool=MEASURE_POOL, retries=0)
    def run_matrix(matrix_id: str) -> dict[str, Any]:
        """Every version's rounds, alternating, each on a fresh one-broker cluster."""
        return version_tasks.run_version_matrix(parts.context_params(), matrix_id,
                                                command=parts.dag_run_command(),
                                                logical_date=parts.logical_date())

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def plan_aggregations(matrix_id: str) -> list[dict[str, Any]]:
        """One Spark job per version run that measured a round."""
        return version_tasks.aggregation_jobs(matrix_id)

    @task(retries=0)
    def judge_versions(matrix_id: str) -> dict[str, Any]:
        """Every version against the first: the change, its 95 % interval, the drift rule."""
        return version_tasks.judge_versions(matrix_id)

    matrix_id: Any = parts.name_run(run_prefix)
    measured = run_matrix(matrix_id)
    jobs = plan_aggregations(matrix_id)
    aggregated = StartedRunSparkSubmitOperator.partial(
        task_id="aggregate_version_run", conn_id=SPARK_CONN_ID,
        py_files=spark_submit.spark_py_files(), conf=spark_submit.spark_conf(),
        env_vars=spark_submit.spark_env(), name="kafkalab-aggregate-version-run",
        outlets=[assets.aggregates], map_index_template="{{ task.lab_run_id }}",
        doc_md="Spark: one run of a version (its load run -> load_cells, load_consumers, "
        "load_lag; its start-up run -> startup_probes, startup_cases), then, in the same "
        "session, the run kind's Great Expectations suite.").expand_kwargs(jobs)
    judged = judge_versions(matrix_id)
    measured >> jobs >> aggregated >> judged
    [matrix_id, measured, jobs, aggregated, judged] >> parts.verify_outcome(
        run_prefix, lambda run_id: [lambda: version_tasks.verify_matrix_outcome(run_id)],
        what="version matrix")


__all__ = ["build_version_chain"]
