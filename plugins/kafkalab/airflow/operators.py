"""The lab's Airflow operators: spark-submits that know the state of the run they process.

- :class:`LabSparkSubmitOperator`: a latency or load Spark job that recomputes one output of
  a run and then marks it fresh (the run's ``stale_outputs``); with the param
  ``one_spark_session`` the aggregation (latency or load) also validates, and the validation
  task judges that result instead of starting Spark again; optionally *skipped* when the run
  never started.
- :class:`StartedRunSparkSubmitOperator`: a fault or start-up run's Spark job, *skipped*
  when the run never started.

Both run their job through :func:`run_spark_job`: spark-submit, or a Spark Connect server
when the connection is one (``KAFKALAB_SPARK_MASTER=sc://…``).

:func:`lab_spark_task` and :func:`started_run_spark_task` build them with the script, arguments,
py-files, conf and environment of :mod:`kafkalab.spark.submit`, through the ``spark_default``
Connection. Building one reads no file (DAG-parse time); the run's state is read when the
task runs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, NoReturn

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from kafkalab.airflow import load_tasks, tasks
from kafkalab.kinds import RunKind, kind_of_job
from kafkalab.spark import submit as spark_submit

SPARK_CONN_ID = "spark_default"
"""The Connection every lab spark-submit goes through (its master: docs/spark.md)."""


def run_spark_job(op: SparkSubmitOperator, context: Any) -> None:
    """Run ``op``'s job through its connection: spark-submit (the operator's own
    ``execute``, with the cluster's secret as ``--properties-file`` when it has one:
    :func:`kafkalab.spark.submit.auth_properties_file`), or, when the connection is the provider's ``spark_connect`` type
    (``KAFKALAB_SPARK_MASTER=sc://…``), as a client of that Spark Connect server in a Python
    process of its own (:func:`kafkalab.spark.connect.run_job`: no driver JVM to start; its
    output goes to the task log line by line). A non-zero exit fails the task, as a failed
    spark-submit does; so does a server that does not answer (one line)."""
    from airflow.exceptions import AirflowException, AirflowNotFoundException
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

    conn_id = getattr(op, "_conn_id", SPARK_CONN_ID)
    try:
        conn = SparkConnectHook.get_connection(conn_id)
    except AirflowNotFoundException:  # spark-submit has a default for a missing connection
        conn = None
    if conn is None or conn.conn_type != SparkConnectHook.conn_type:
        # the master as SparkSubmitHook makes it from the connection (host, then :port)
        master = None if conn is None else (f"{conn.host}:{conn.port}" if conn.port
                                            else conn.host)
        op.properties_file = op.properties_file or spark_submit.auth_properties_file(master)
        op.conf = spark_submit.with_worker_daemon(op.conf or {}, master)
        SparkSubmitOperator.execute(op, context)
        return
    from kafkalab.spark import connect

    url = SparkConnectHook(conn_id).get_connection_url()
    args = [str(a) for a in op.application_args or []]
    op.log.info("Spark Connect %s: %s %s", url, op.application, " ".join(args))
    started = time.monotonic()
    code = connect.run_job(op.application, args, url, out=op.log.info)
    op.log.info("%s exited %s in %.1f s", Path(op.application).name, code,
                time.monotonic() - started)
    if code != 0:
        raise AirflowException(f"Spark job {Path(op.application).name} through Spark Connect "
                               f"{url} exited with code {code}")


def _skip(message: str) -> NoReturn:
    from airflow.sdk.exceptions import AirflowSkipException

    raise AirflowSkipException(message)


class LabSparkSubmitOperator(SparkSubmitOperator):
    """A spark-submit that recomputes one output of a lab run, then marks it fresh.

    After the job, :func:`kafkalab.airflow.tasks.mark_recomputed` removes ``stale_output``
    from the run's ``stale_outputs``: always when the job succeeded; when it failed, only if
    it rewrote its output first (a validation whose expectations failed is a fresh result).
    ``skip_unstarted``: *skip* when the run was never started (the nightly's fan-out cell
    turned off): there is nothing to aggregate.

    ``one_session`` (``aggregate`` or ``validate``), when the param ``one_spark_session`` is
    on: the aggregation also validates the run in its Spark session (``--validate-out``
    under ``data_dir``, the data directory its arguments name) and returns
    ``{"validated_in_session": true}``; the validation task (``session_task``: the
    aggregation's task id) then judges that result
    (:func:`kafkalab.airflow.tasks.judge_validation`: it fails exactly when the job would
    have) instead of starting Spark again. Without that XCom it runs its own job. Latency
    and load runs (:attr:`kafkalab.kinds.RunKind.validates_in_session`).
    """

    template_fields = (*SparkSubmitOperator.template_fields, "lab_run_id")

    def __init__(self, *, lab_run_id: Any, stale_output: str, data_dir: Path, kind: RunKind,
                 skip_unstarted: bool = False, one_session: str | None = None,
                 session_task: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lab_run_id = lab_run_id
        self.stale_output = stale_output
        self.data_dir = data_dir
        self.kind = kind
        self.skip_unstarted = skip_unstarted
        self.one_session = one_session
        self.session_task = session_task

    def execute(self, context: Any) -> dict[str, Any] | None:  # type: ignore[override]  # an XCom
        """Run the job, then mark its output recomputed (see the class)."""
        run_id = str(self.lab_run_id)
        if self.skip_unstarted and not load_tasks.load_run_started(run_id):
            _skip(f"run {run_id} was not started")
        shared = (self.one_session is not None
                  and tasks.one_spark_session(context.get("params") or {}))
        if shared and self.one_session == "validate":
            upstream = context["ti"].xcom_pull(task_ids=self.session_task)
            if isinstance(upstream, dict) and upstream.get("validated_in_session"):
                # fresh either way (a failed validation is a result), then judged
                tasks.mark_recomputed(run_id, self.stale_output)
                # raises RunError when it failed
                verdict = tasks.judge_validation(run_id, self.kind)
                self.log.info("run %s: validated in %s's Spark session, %s expectations "
                              "passed", run_id, self.session_task, verdict["expectations"])
                return verdict
            self.log.info("%s did not validate run %s: running the job", self.session_task,
                          run_id)
        if shared and self.one_session == "aggregate":
            self.application_args = [*(self.application_args or []),
                                     *spark_submit.one_session_args(self.data_dir)]
        self.conf = spark_submit.runtime_conf(self.conf)
        started_s = time.time()  # compared with file modification times (wall clock)
        succeeded = False
        try:
            run_spark_job(self, context)
            succeeded = True
        finally:
            tasks.mark_recomputed(run_id, self.stale_output,
                                  written_since_s=None if succeeded else started_s)
        if shared and self.one_session == "aggregate":
            return {"validated_in_session": tasks.validation_written_since(run_id, started_s,
                                                                           self.kind)}
        return None


class StartedRunSparkSubmitOperator(SparkSubmitOperator):
    """A spark-submit over one fault or start-up run, *skipped* when that run was never
    started (the nightly's fault trial turned off, or a failed ``start_fault_run`` /
    ``run_startup`` that already fails the DAG run): there is nothing to aggregate or
    validate."""

    template_fields = (*SparkSubmitOperator.template_fields, "lab_run_id")

    def __init__(self, *, lab_run_id: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lab_run_id = lab_run_id

    def execute(self, context: Any) -> None:
        """Skip when the run was never started, else run the job."""
        if not tasks.run_started(str(self.lab_run_id)):
            _skip(f"run {self.lab_run_id} was not started")
        self.conf = spark_submit.runtime_conf(self.conf)
        run_spark_job(self, context)


def _submit_kwargs(job: str, task_id: str, lab_run_id: Any, data_dir: Path) -> dict[str, Any]:
    """What every lab spark-submit task is built with: the job's script and arguments for
    ``lab_run_id`` (an XComArg) under ``data_dir``, the py-files, conf and environment."""
    return {"task_id": task_id, "lab_run_id": lab_run_id, "conn_id": SPARK_CONN_ID,
            "application": spark_submit.spark_application(job),
            "application_args": spark_submit.spark_job_args(job, lab_run_id, data_dir),
            "py_files": spark_submit.spark_py_files(), "conf": spark_submit.spark_conf(),
            "env_vars": spark_submit.spark_env(), "name": f"kafkalab-{task_id.replace('_', '-')}"}


def lab_spark_task(job: str, task_id: str, lab_run_id: Any, data_dir: Path,
                   **kwargs: Any) -> LabSparkSubmitOperator:
    """The Spark job ``job`` (a key of :data:`kafkalab.spark.submit.SPARK_JOBS`) as the task
    ``task_id`` over ``lab_run_id``; it marks its output
    (:data:`~kafkalab.spark.submit.SPARK_JOB_OUTPUTS`) fresh. ``kwargs``: the operator's own
    (``one_session``, ``session_task``, ``skip_unstarted``) and Airflow's (``retries``,
    ``outlets``, ``doc_md``)."""
    return LabSparkSubmitOperator(**_submit_kwargs(job, task_id, lab_run_id, data_dir),
                                  stale_output=spark_submit.SPARK_JOB_OUTPUTS[job],
                                  data_dir=data_dir, kind=kind_of_job(job), **kwargs)


def started_run_spark_task(job: str, lab_run_id: Any, data_dir: Path,
                           validate_in_session: bool = False,
                           **kwargs: Any) -> StartedRunSparkSubmitOperator:
    """``aggregate_faults`` / ``validate_faults`` / ``aggregate_startup`` (task id: the job's
    name) over the run ``lab_run_id``. ``validate_in_session``: the aggregation also validates
    the run in its Spark session (``--validate-out``, a kind that
    :attr:`~kafkalab.kinds.RunKind.validates_in_session`), so no second Spark job is started."""
    submit = _submit_kwargs(job, job, lab_run_id, data_dir)
    if validate_in_session:
        if not kind_of_job(job).validates_in_session or job != kind_of_job(job).aggregate_job:
            raise ValueError(f"{job} cannot validate in its Spark session")
        submit["application_args"] = [*submit["application_args"],
                                      *spark_submit.one_session_args(data_dir)]
    return StartedRunSparkSubmitOperator(**submit, **kwargs)


__all__ = ["SPARK_CONN_ID", "LabSparkSubmitOperator", "StartedRunSparkSubmitOperator",
           "lab_spark_task", "started_run_spark_task"]
