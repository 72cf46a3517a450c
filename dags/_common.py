"""Shared wiring of the lab's DAGs (not a DAG file: it defines no DAG).

Both ``latency_experiment`` and ``nightly_latency_regression`` run the same latency chain;
``load_experiment`` runs the load chain; the nightly adds one fan-out load cell. This module
builds them once. Everything here is cheap at parse time: no file, network or database
access; the logic lives in :mod:`kafkalab.airflow.tasks` and
:mod:`kafkalab.airflow.load_tasks` and runs only inside tasks.

Chains and trigger rules (documented in ``docs/airflow.md``)::

    latency: name_run -> check_cluster -> prepare_run -> measure_cell[...] -> close_run (all_done)
      -> aggregate_metrics -> validate_metrics
      -> check_drift (all_done) -> publish_report (all_done) -> send_alerts (all_done)
    load:    name_run -> start_load_run -> run_load_cell[...] -> finish_load_run (all_done)
      -> aggregate_load -> validate_load -> check_drift -> publish_report -> send_alerts
    nightly: the latency chain; after close_run: name_load_run -> start_load_run (skipped
      when the param fanout_cell is false) -> run_load_cell -> finish_load_run (all_done) -> aggregate_load -> validate_load;
      after finish_load_run: name_fault_run -> start_fault_run (skipped when the param
      fault_trial is false) -> run_fault_trial -> finish_fault_run (all_done)
      -> aggregate_faults -> validate_faults; check_drift (latency and load) and
      publish_report / send_alerts / verify_outcome judge every run
    faults:  name_run -> start_fault_run -> run_fault_trial[...] -> finish_fault_run (all_done)
      -> aggregate_faults -> validate_faults -> publish_report -> send_alerts
    every task -> verify_outcome (one_failed: fails the DAG run when anything failed)

The tasks that load the cluster (``prepare_run``, ``measure_cell``, ``start_load_run``,
``run_load_cell``, ``start_fault_run``, ``run_fault_trial``) run in the one-slot pool
``kafkalab_measure`` (:mod:`kafkalab.airflow.pools`), shared by every DAG.
"""

from __future__ import annotations

import time
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, TriggerRule, get_current_context, task

from kafkalab.airflow import fault_tasks, load_tasks, run_ids, tasks
from kafkalab.airflow.pools import MEASURE_POOL, SHARD_POOL
from kafkalab.airflow.shards import ConsumeLoadShardOperator
from kafkalab.errors import RunError
from kafkalab.spark import submit as spark_submit
from kafkalab.store import LabData

SPARK_CONN_ID = "spark_default"

_LAB = LabData()  # $KAFKALAB_DATA_DIR or <root>/lab-data: no I/O
SAMPLES_ASSET = Asset(name="kafkalab_raw_samples", uri=_LAB.samples_dir.as_uri(),
                      group="kafkalab")
AGGREGATES_ASSET = Asset(name="kafkalab_aggregates", uri=_LAB.aggregates_dir.as_uri(),
                         group="kafkalab")
REPORT_ASSET = Asset(name="kafkalab_trend_report", uri=_LAB.reports_dir.as_uri(),
                     group="kafkalab")


class LabSparkSubmitOperator(SparkSubmitOperator):
    """A spark-submit that recomputes one output of a lab run, then marks it fresh.

    After the job, :func:`kafkalab.airflow.tasks.mark_recomputed` removes ``stale_output``
    from the run's ``stale_outputs``: always when the job succeeded; when it failed, only if
    it rewrote its output first (a validation whose expectations failed is a fresh result).
    ``skip_unstarted``: *skip* when the run was never started (the nightly's fan-out cell
    turned off): there is nothing to aggregate.

    ``one_session`` (``aggregate`` or ``validate``), when the param ``one_spark_session`` is
    on: the aggregation also validates the run in its Spark session (``--validate-out``) and
    returns ``{"validated_in_session": true}``; the validation task then judges that result
    (:func:`kafkalab.airflow.tasks.judge_validation`: it fails exactly when the job would
    have) instead of starting Spark again. Without that XCom it runs its own job.
    """

    template_fields = (*SparkSubmitOperator.template_fields, "lab_run_id")

    def __init__(self, *, lab_run_id: Any, stale_output: str, skip_unstarted: bool = False,
                 one_session: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lab_run_id = lab_run_id
        self.stale_output = stale_output
        self.skip_unstarted = skip_unstarted
        self.one_session = one_session

    def execute(self, context: Any) -> dict[str, Any] | None:  # type: ignore[override]  # an XCom
        """Run the job, then mark its output recomputed (see the class)."""
        run_id = str(self.lab_run_id)
        if self.skip_unstarted and not load_tasks.load_run_started(run_id):
            from airflow.sdk.exceptions import AirflowSkipException

            raise AirflowSkipException(f"run {run_id} was not started")
        shared = (self.one_session is not None
                  and tasks.one_spark_session(context.get("params") or {}))
        if shared and self.one_session == "validate":
            upstream = context["ti"].xcom_pull(task_ids="aggregate_metrics")
            if isinstance(upstream, dict) and upstream.get("validated_in_session"):
                # fresh either way (a failed validation is a result), then judged
                tasks.mark_recomputed(run_id, self.stale_output)
                verdict = tasks.judge_validation(run_id)  # raises RunError when it failed
                self.log.info("run %s: validated in aggregate_metrics's Spark session, %s "
                              "expectations passed", run_id, verdict["expectations"])
                return verdict
            self.log.info("aggregate_metrics did not validate run %s: running the job", run_id)
        if shared and self.one_session == "aggregate":
            self.application_args = [*(self.application_args or []),
                                     *spark_submit.one_session_args(_LAB.root)]
        self.conf = spark_submit.runtime_conf(self.conf)
        started_s = time.time()  # compared with file modification times (wall clock)
        succeeded = False
        try:
            super().execute(context)
            succeeded = True
        finally:
            tasks.mark_recomputed(run_id, self.stale_output,
                                  written_since_s=None if succeeded else started_s)
        if shared and self.one_session == "aggregate":
            return {"validated_in_session": tasks.validation_written_since(run_id, started_s)}
        return None


class FaultSparkSubmitOperator(SparkSubmitOperator):
    """A spark-submit over one fault run, *skipped* when that run was never started (the
    nightly's fault trial turned off, or a failed ``start_fault_run`` that already fails the
    DAG run): there is nothing to aggregate or validate."""

    template_fields = (*SparkSubmitOperator.template_fields, "lab_run_id")

    def __init__(self, *, lab_run_id: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lab_run_id = lab_run_id

    def execute(self, context: Any) -> None:
        """Skip when the run was never started, else run the job."""
        if not fault_tasks.fault_run_started(str(self.lab_run_id)):
            from airflow.sdk.exceptions import AirflowSkipException

            raise AirflowSkipException(f"fault run {self.lab_run_id} was not started")
        self.conf = spark_submit.runtime_conf(self.conf)
        super().execute(context)


def _fault_spark_task(job: str, lab_run_id: Any, **kwargs: Any) -> FaultSparkSubmitOperator:
    """``aggregate_faults`` / ``validate_faults`` as a spark-submit through ``spark_default``."""
    return FaultSparkSubmitOperator(
        task_id=job,
        lab_run_id=lab_run_id,
        conn_id=SPARK_CONN_ID,
        application=spark_submit.spark_application(job),
        application_args=spark_submit.spark_job_args(job, lab_run_id, _LAB.root),
        py_files=spark_submit.spark_py_files(),
        conf=spark_submit.spark_conf(),
        env_vars=spark_submit.spark_env(),
        name=f"kafkalab-{job.replace('_', '-')}",
        **kwargs,
    )


def _spark_task(job: str, lab_run_id: Any, **kwargs: Any) -> LabSparkSubmitOperator:
    """``<job>_metrics`` (``aggregate_load`` / ``validate_load`` for a load job) as a
    spark-submit through the ``spark_default`` connection."""
    return LabSparkSubmitOperator(
        task_id=job if job.endswith("_load") else f"{job}_metrics",
        lab_run_id=lab_run_id,
        stale_output=spark_submit.SPARK_JOB_OUTPUTS[job],
        one_session=job if job in ("aggregate", "validate") else None,
        conn_id=SPARK_CONN_ID,
        application=spark_submit.spark_application(job),
        application_args=spark_submit.spark_job_args(job, lab_run_id, _LAB.root),
        py_files=spark_submit.spark_py_files(),
        conf=spark_submit.spark_conf(),
        env_vars=spark_submit.spark_env(),
        name=f"kafkalab-{job.replace('_', '-')}" + ("" if job.endswith("_load") else "-metrics"),
        **kwargs,
    )


def _context_params() -> dict[str, Any]:
    return dict(get_current_context()["params"])


def _lab_run_id(prefix: str) -> str:
    """The lab run id (``prefix``) of the running DAG run: from its logical date
    (:func:`kafkalab.airflow.run_ids.context_lab_run_id`)."""
    run_id = run_ids.context_lab_run_id(get_current_context(), prefix)
    if run_id is None:  # every task context has a dag_run
        raise RunError("no DAG run in the task's context")
    return run_id


def _logical_date() -> str | None:
    """The running DAG run's logical date (else ``run_after``), ISO 8601 UTC."""
    return run_ids.logical_date_iso(get_current_context())


def build_latency_chain(run_prefix: str, fanout_prefix: str | None = None,
                        fault_prefix: str | None = None, export_metrics: bool = False) -> None:
    """Create the tasks of one latency run in the DAG being defined.

    Args:
        run_prefix: prefix of the lab run ids (``nightly`` -> ``nightly-20261121T000000Z``).
        fanout_prefix: when given (the nightly), one fan-out load run (the cell of
            ``include/workloads/nightly-fanout.yaml``) is measured after the latency cells as
            a run of its own (``<fanout_prefix>-<time>``), aggregated and validated beside
            them; drift, report, alerts and the outcome cover both runs.
        fault_prefix: when given (the nightly, after the fan-out run), one fault trial
            (:data:`kafkalab.airflow.fault_tasks.NIGHTLY_FAULT`) as a fault run of its own
            (``<fault_prefix>-<time>``), unless the param ``fault_trial`` is false; its
            report, alerts and outcome join the nightly's.
        export_metrics: when true (the nightly), ``export_metrics`` writes the Prometheus
            text file after the report, whatever the run's outcome
            (:func:`kafkalab.airflow.tasks.export_metrics`).
    """

    @task
    def name_run() -> str:
        """The lab's path-safe run id of this DAG run, from its logical date."""
        return _lab_run_id(run_prefix)

    @task
    def check_cluster() -> dict[str, Any]:
        """Fail early, with a clear message, when the Kafka cluster does not answer."""
        params = _context_params()
        return tasks.check_cluster(params.get("cluster_descriptor") or None,
                                   scenarios=tasks.resolve_scenarios(params))

    @task(pool=MEASURE_POOL)  # provisioning topics loads the broker: not while another DAG measures
    def prepare_run(lab_run_id: str) -> list[dict[str, str]]:
        """Validate the matrix, provision topics, start the run; returns the cells to map."""
        ctx = get_current_context()
        command = f"airflow dag {ctx['dag'].dag_id} run {ctx['dag_run'].run_id}"
        return tasks.prepare_run(dict(ctx["params"]), lab_run_id, command=command,
                                 logical_date=_logical_date())

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

    @task(trigger_rule=TriggerRule.ALL_DONE, outlets=[SAMPLES_ASSET])
    def close_run(lab_run_id: str) -> dict[str, Any]:
        """Merge the cells' results into the run manifest, even when some cells failed."""
        return tasks.close_run(lab_run_id)

    def fanout_run() -> str | None:
        """The lab run id of the fan-out load run, when it was started (None: this DAG has
        none, or its fan-out cell was turned off or failed to start)."""
        if not fanout_prefix:
            return None
        run_id = _lab_run_id(fanout_prefix)
        return run_id if load_tasks.load_run_started(run_id) else None

    def fault_run() -> str | None:
        """The lab run id of the fault run, when it was started (None: this DAG has none,
        or its fault trial was turned off or failed to start)."""
        if not fault_prefix:
            return None
        run_id = _lab_run_id(fault_prefix)
        return run_id if fault_tasks.fault_run_started(run_id) else None

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def check_drift(lab_run_id: str) -> dict[str, Any]:
        """Compare this run (and the fan-out run) with its baseline; writes drift records."""
        out = tasks.check_drift(lab_run_id)
        if (load_run := fanout_run()) is not None:
            out["load"] = tasks.check_drift(load_run)
        return out

    @task(trigger_rule=TriggerRule.ALL_DONE, outlets=[REPORT_ASSET])
    def publish_report(lab_run_id: str) -> str:
        """Rebuild the trend report; it shows validation results and drift flags."""
        if (load_run := fanout_run()) is not None:
            tasks.publish_report(load_run)
        if (faults_run := fault_run()) is not None:
            tasks.publish_report(faults_run)
        return tasks.publish_report(lab_run_id)

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def send_alerts(lab_run_id: str) -> dict[str, Any]:
        """Announce new drifts and recoveries on the kafkalab_alert_webhook connection."""
        dag_id = get_current_context()["dag"].dag_id
        out = tasks.send_alerts(lab_run_id, dag_id=dag_id)
        if (load_run := fanout_run()) is not None:
            out["load"] = tasks.send_alerts(load_run, dag_id=dag_id)
        if (faults_run := fault_run()) is not None:
            out["faults"] = fault_tasks.send_fault_alerts(faults_run, dag_id=dag_id)
        return out

    @task(trigger_rule=TriggerRule.ALL_DONE, task_id="export_metrics")
    def export_metrics_task() -> dict[str, Any]:
        """Write the Prometheus text file (latest p50/p99 per series, drift state, losses,
        the last successful run's time) for node_exporter's textfile collector."""
        return tasks.export_metrics()

    @task(trigger_rule=TriggerRule.ONE_FAILED, retries=0)
    def verify_outcome() -> None:
        """Runs only when a task failed, and fails so the DAG run is marked failed."""
        run_id = _lab_run_id(run_prefix)
        checks: list[Any] = [lambda: tasks.verify_outcome(run_id)]
        if fanout_prefix and load_tasks.nightly_fanout_on(_context_params()):
            load_run = _lab_run_id(fanout_prefix)
            checks.append(lambda: load_tasks.verify_load_outcome(load_run))
        if fault_prefix and fault_tasks.nightly_fault_on(_context_params()):
            faults_run = _lab_run_id(fault_prefix)
            checks.append(lambda: fault_tasks.verify_fault_outcome(faults_run))
        problems = []
        for check in checks:  # every run's problem is named, not only the first one's
            try:
                check()
            except RunError as exc:
                problems.append(str(exc))
        raise RunError("; ".join(problems)
                       or f"run {run_id}: an upstream task failed (see the grid)")

    # an XComArg: each task receives the str it resolves to at run time
    lab_run_id: Any = name_run()
    cluster = check_cluster()
    cells = prepare_run(lab_run_id)
    measured = measure_cell.partial(lab_run_id=lab_run_id).expand(cell=cells)
    closed = close_run(lab_run_id)
    aggregate = _spark_task(
        "aggregate", lab_run_id, outlets=[AGGREGATES_ASSET],
        doc_md="Spark: raw samples of the run -> one aggregate row per cell (Parquet).",
    )
    validate = _spark_task(
        "validate", lab_run_id,
        retries=0,  # a failed expectation is deterministic: retrying only costs time
        doc_md="Spark + Great Expectations: fails (exit 1) when an expectation fails; the "
        "result is validation/<run_id>.json, shown in the report.",
    )
    drift = check_drift(lab_run_id)
    report = publish_report(lab_run_id)
    alerts = send_alerts(lab_run_id)

    lab_run_id >> cluster >> cells
    measured >> closed >> aggregate >> validate >> drift >> report >> alerts
    watcher = verify_outcome()
    [lab_run_id, cluster, cells, measured, closed, aggregate, validate, drift, report, alerts] >> watcher
    if export_metrics:
        exported = export_metrics_task()
        report >> exported >> watcher
    if fanout_prefix:
        @task
        def name_load_run() -> str:
            """The lab run id of the nightly's fan-out load run."""
            return _lab_run_id(fanout_prefix)

        load_run_id: Any = name_load_run()
        params = {"workload": load_tasks.NIGHTLY_FANOUT["workload"]}
        load_part = _load_tasks(load_run_id, params, nightly=True)
        closed >> load_run_id
        load_part.finished >> aggregate  # Spark never runs while a cell measures
        load_part.validated >> drift
        [load_run_id, *load_part.all] >> watcher
        if fault_prefix:
            @task
            def name_fault_run() -> str:
                """The lab run id of the nightly's fault run."""
                return _lab_run_id(fault_prefix)

            fault_run_id: Any = name_fault_run()
            fault_part = _fault_tasks(fault_run_id, nightly=True)
            load_part.finished >> fault_run_id  # after the fan-out cell
            # no Spark job while the fault trial measures
            fault_part.finished >> [aggregate, load_part.aggregated]
            fault_part.validated >> drift
            [fault_run_id, *fault_part.all] >> watcher


class _LoadPart:
    """The tasks of a load run's measuring and Spark part."""

    def __init__(self, started: Any, measured: Any, finished: Any, aggregated: Any,
                 validated: Any, shards: list[Any] | None = None) -> None:
        self.started, self.measured, self.finished = started, measured, finished
        self.aggregated, self.validated = aggregated, validated
        self.all = [started, measured, finished, aggregated, validated, *(shards or [])]


def _load_tasks(load_run_id: Any, fixed_params: dict[str, Any] | None = None,
                shard_tasks: bool = False, nightly: bool = False) -> _LoadPart:
    """``start_load_run -> run_load_cell[...] -> finish_load_run -> aggregate_load ->
    validate_load`` for the load run ``load_run_id`` (an XComArg). ``fixed_params``: params
    used instead of the form's (the nightly's fan-out workload). ``shard_tasks``: add
    ``plan_shards -> consume_load_shard[...]``, the consumer shards as mapped tasks of their
    own when the param ``shard_placement`` is ``tasks`` (skipped otherwise). ``nightly``:
    ``start_load_run`` is skipped (so is everything up to ``validate_load``) when the param
    ``fanout_cell`` is false."""

    def params() -> dict[str, Any]:
        if fixed_params is not None:
            return {**fixed_params,
                    "cluster_descriptor": _context_params().get("cluster_descriptor")}
        return _context_params()

    @task(pool=MEASURE_POOL)  # checks the cluster: not while another DAG measures
    def start_load_run(lab_run_id: str) -> list[dict[str, Any]]:
        """Validate the cells (client budget included), check the cluster, start the run."""
        ctx = get_current_context()
        if nightly and not load_tasks.nightly_fanout_on(dict(ctx["params"])):
            from airflow.sdk.exceptions import AirflowSkipException

            raise AirflowSkipException(f"fan-out cell turned off (param "
                                       f"{load_tasks.NIGHTLY_FANOUT_PARAM} is false)")
        command = f"airflow dag {ctx['dag'].dag_id} run {ctx['dag_run'].run_id}"
        return load_tasks.start_load(params(), lab_run_id, command=command,
                                     logical_date=_logical_date())

    # One cell at a time across every DAG (the pool); its consumer shards are subprocesses,
    # or the consume_load_shard tasks (shard placement "tasks").
    @task(pool=MEASURE_POOL, max_active_tis_per_dag=1, map_index_template="{{ cell_label }}")
    def run_load_cell(lab_run_id: str, cell: dict[str, Any]) -> dict[str, Any]:
        """Measure one load cell: a fixed-rate producer fanning out to N consumers."""
        ctx = get_current_context()
        ctx["cell_label"] = cell.get("label")  # type: ignore[typeddict-unknown-key]
        return load_tasks.measure_load_cell(params(), lab_run_id, cell,
                                            token=ctx["dag_run"].run_id)

    @task
    def plan_shards(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One consumer shard task per shard of every cell (none unless the param
        shard_placement is "tasks")."""
        return load_tasks.shard_slots(params(), cells)

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def finish_load_run(lab_run_id: str) -> dict[str, Any]:
        """Close the load run, even when some cells failed."""
        return load_tasks.close_load(lab_run_id)

    started: Any = start_load_run(load_run_id)
    measured = run_load_cell.partial(lab_run_id=load_run_id).expand(cell=started)
    shards: list[Any] = []
    if shard_tasks:
        slots: Any = plan_shards(started)
        # Beside the cell's producer (which holds the measuring pool's slot): a pool of its
        # own. A shard of a later cell defers (no worker slot) until its cell starts.
        consume = ConsumeLoadShardOperator.partial(
            task_id="consume_load_shard", lab_run_id=load_run_id, pool=SHARD_POOL, retries=0,
            map_index_template="{{ shard_label }}",
            doc_md="One consumer shard of a cell (shard placement tasks): defers until the "
            "cell's producer writes its plan, joins the start barrier, consumes, drains.",
        ).expand(slot=slots)
        shards = [slots, consume]
    finished = finish_load_run(load_run_id)
    aggregated = _spark_task("aggregate_load", load_run_id, outlets=[AGGREGATES_ASSET],
                             skip_unstarted=nightly,
                             doc_md="Spark: the load run's samples -> load_cells, "
                             "load_consumers, load_lag (aggregates/load/run_id=<id>/).")
    validated = _spark_task("validate_load", load_run_id, retries=0,
                            doc_md="Spark + Great Expectations, suite load: outcomes add up; "
                            "every consumer of a fault-free cell holds every expected "
                            "message. Result: validation/<run_id>-load.json.")
    load_run_id >> started
    measured >> finished >> aggregated >> validated
    return _LoadPart(started, measured, finished, aggregated, validated, shards)


def build_load_chain(run_prefix: str) -> None:
    """Create the tasks of one load run (the ``load_experiment`` DAG) in the DAG being
    defined: the cells of the form's grid, each a mapped task."""

    @task
    def name_run() -> str:
        """The lab's path-safe run id of this DAG run, from its logical date."""
        return _lab_run_id(run_prefix)

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def check_drift(lab_run_id: str) -> dict[str, Any]:
        """Compare each load cell with its baseline; writes the drift records."""
        return tasks.check_drift(lab_run_id)

    @task(trigger_rule=TriggerRule.ALL_DONE, outlets=[REPORT_ASSET])
    def publish_report(lab_run_id: str) -> str:
        """Rebuild the trend report with this load run's page."""
        return tasks.publish_report(lab_run_id)

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def send_alerts(lab_run_id: str) -> dict[str, Any]:
        """Announce new drifts and recoveries on the kafkalab_alert_webhook connection."""
        return tasks.send_alerts(lab_run_id, dag_id=get_current_context()["dag"].dag_id)

    @task(trigger_rule=TriggerRule.ONE_FAILED, retries=0)
    def verify_outcome() -> None:
        """Runs only when a task failed, and fails so the DAG run is marked failed."""
        run_id = _lab_run_id(run_prefix)
        load_tasks.verify_load_outcome(run_id)
        raise RunError(f"load run {run_id}: an upstream task failed (see the grid)")

    lab_run_id: Any = name_run()
    part = _load_tasks(lab_run_id, shard_tasks=True)
    drift = check_drift(lab_run_id)
    report = publish_report(lab_run_id)
    alerts = send_alerts(lab_run_id)
    part.validated >> drift >> report >> alerts
    [lab_run_id, *part.all, drift, report, alerts] >> verify_outcome()


class _FaultPart:
    """The tasks of a fault run's measuring and Spark part."""

    def __init__(self, started: Any, measured: Any, finished: Any, aggregated: Any,
                 validated: Any) -> None:
        self.started, self.measured, self.finished = started, measured, finished
        self.aggregated, self.validated = aggregated, validated
        self.all = [started, measured, finished, aggregated, validated]


def _fault_tasks(fault_run_id: Any, nightly: bool = False) -> _FaultPart:
    """``start_fault_run -> run_fault_trial[...] -> finish_fault_run -> aggregate_faults ->
    validate_faults`` for the fault run ``fault_run_id`` (an XComArg). ``nightly``: the
    trials are :data:`kafkalab.airflow.fault_tasks.NIGHTLY_FAULT`, not the form's, and
    ``start_fault_run`` is skipped (so is everything up to ``validate_faults``) when the
    param ``fault_trial`` is false."""

    def params() -> dict[str, Any]:
        return dict(fault_tasks.NIGHTLY_FAULT) if nightly else _context_params()

    @task(pool=MEASURE_POOL)  # starts the fault cluster: not while another DAG measures
    def start_fault_run(lab_run_id: str) -> list[dict[str, Any]]:
        """Validate the trials, start (or reuse) the 3-broker fault cluster, start the run."""
        ctx = get_current_context()
        if nightly and not fault_tasks.nightly_fault_on(dict(ctx["params"])):
            from airflow.sdk.exceptions import AirflowSkipException

            raise AirflowSkipException(f"fault trial turned off (param "
                                       f"{fault_tasks.NIGHTLY_FAULT_PARAM} is false)")
        command = f"airflow dag {ctx['dag'].dag_id} run {ctx['dag_run'].run_id}"
        return fault_tasks.start_faults(params(), lab_run_id, command=command,
                                        logical_date=_logical_date())

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
    aggregated = _fault_spark_task(
        "aggregate_faults", fault_run_id, outlets=[AGGREGATES_ASSET],
        doc_md="Spark: the fault run's trials -> fault_trials, fault_cells, fault_timeline "
        "(aggregates/faults/run_id=<id>/). Skipped when the run was never started.")
    validated = _fault_spark_task(
        "validate_faults", fault_run_id, retries=0,
        doc_md="Spark + Great Expectations, suite faults: counts add up; under the durability "
        "profile no acked message is lost (a failure names the trial). Result: "
        "validation/<run_id>-faults.json. Skipped when the run was never started.")
    fault_run_id >> started
    measured >> finished >> aggregated >> validated
    return _FaultPart(started, measured, finished, aggregated, validated)


def _skip_unless_started(lab_run_id: str) -> None:
    if not fault_tasks.fault_run_started(lab_run_id):
        from airflow.sdk.exceptions import AirflowSkipException

        raise AirflowSkipException(f"fault run {lab_run_id} was not started")


def build_fault_chain(run_prefix: str) -> None:
    """Create the tasks of one fault run (the ``resilience_experiment`` DAG) in the DAG being
    defined: the trials of the form, each a mapped task."""

    @task
    def name_run() -> str:
        """The lab's path-safe run id of this DAG run, from its logical date."""
        return _lab_run_id(run_prefix)

    @task(trigger_rule=TriggerRule.ALL_DONE, outlets=[REPORT_ASSET])
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

    @task(trigger_rule=TriggerRule.ONE_FAILED, retries=0)
    def verify_outcome() -> None:
        """Runs only when a task failed, and fails so the DAG run is marked failed."""
        run_id = _lab_run_id(run_prefix)
        fault_tasks.verify_fault_outcome(run_id)
        raise RunError(f"fault run {run_id}: an upstream task failed (see the grid)")

    lab_run_id: Any = name_run()
    part = _fault_tasks(lab_run_id)
    report = publish_report(lab_run_id)
    alerts = send_alerts(lab_run_id)
    part.validated >> report >> alerts
    [lab_run_id, *part.all, report, alerts] >> verify_outcome()
