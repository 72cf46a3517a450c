"""The load chain (``load_experiment``) and the load part the nightly's fan-out cell reuses::

    name_run -> start_load_run -> run_load_cell x cells (mapped, pool kafkalab_measure)
      [-> plan_shards -> consume_load_shard x shards (shard placement "tasks")]
      -> finish_load_run (all_done) -> aggregate_load (Spark) -> validate_load (Spark + GX)
      -> check_drift -> publish_report -> send_alerts;  every task -> verify_outcome

The task logic is :mod:`kafkalab.airflow.load_tasks`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from airflow.sdk import TriggerRule, get_current_context, task

from kafkalab.airflow import load_tasks, tasks
from kafkalab.airflow.chains import parts
from kafkalab.airflow.operators import lab_spark_task
from kafkalab.airflow.pools import MEASURE_POOL, SHARD_POOL
from kafkalab.airflow.shards import ConsumeLoadShardOperator


@dataclass
class LoadPart:
    """The tasks of a load run's measuring and Spark part."""

    started: Any
    measured: Any
    finished: Any
    aggregated: Any
    validated: Any
    shards: list[Any] = field(default_factory=list)

    @property
    def all(self) -> list[Any]:
        """Every task of the part (the watcher's upstream)."""
        return [self.started, self.measured, self.finished, self.aggregated, self.validated,
                *self.shards]


def load_part(load_run_id: Any, assets: parts.LabAssets,
              fixed_params: dict[str, Any] | None = None, shard_tasks: bool = False,
              nightly: bool = False) -> LoadPart:
    """``start_load_run -> run_load_cell[...] -> finish_load_run -> aggregate_load ->
    validate_load`` for the load run ``load_run_id`` (an XComArg). ``fixed_params``: params
    used instead of the form's (the nightly's fan-out workload). ``shard_tasks``: add
    ``plan_shards -> consume_load_shard[...]``, the consumer shards as mapped tasks of their
    own when the param ``shard_placement`` is ``tasks`` (skipped otherwise). ``nightly``:
    ``start_load_run`` is skipped (so is everything up to ``validate_load``) when the param
    ``fanout_cell`` is false."""

    def params() -> dict[str, Any]:
        if fixed_params is not None:
            descriptor = parts.context_params().get("cluster_descriptor")
            return {**fixed_params, "cluster_descriptor": descriptor}
        return parts.context_params()

    @task(pool=MEASURE_POOL)  # checks the cluster: not while another DAG measures
    def start_load_run(lab_run_id: str) -> list[dict[str, Any]]:
        """Validate the cells (client budget included), check the cluster, start the run."""
        if nightly:
            parts.skip_when_off(load_tasks.nightly_fanout_on, load_tasks.NIGHTLY_FANOUT_PARAM,
                          "fan-out cell")
        return load_tasks.start_load(params(), lab_run_id, command=parts.dag_run_command(),
                                     logical_date=parts.logical_date())

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
    aggregated = lab_spark_task("aggregate_load", "aggregate_load", load_run_id, assets.data_dir,
                                outlets=[assets.aggregates], skip_unstarted=nightly,
                                one_session="aggregate",
                                doc_md="Spark: the load run's samples -> load_cells, "
                                "load_consumers, load_lag (aggregates/load/run_id=<id>/).")
    validated = lab_spark_task("validate_load", "validate_load", load_run_id, assets.data_dir,
                               retries=0, one_session="validate", session_task="aggregate_load",
                               doc_md="Spark + Great Expectations, suite load: outcomes add up; "
                               "every consumer of a fault-free cell holds every expected "
                               "message. Result: validation/<run_id>-load.json.")
    load_run_id >> started
    measured >> finished >> aggregated >> validated
    return LoadPart(started, measured, finished, aggregated, validated, shards)


def build_load_chain(run_prefix: str) -> None:
    """Create the tasks of one load run (the ``load_experiment`` DAG) in the DAG being
    defined: the cells of the form's grid, each a mapped task."""
    assets = parts.lab_assets()

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def check_drift(lab_run_id: str) -> dict[str, Any]:
        """Compare each load cell with its baseline; writes the drift records."""
        return tasks.check_drift(lab_run_id)

    @task(trigger_rule=TriggerRule.ALL_DONE, outlets=[assets.report])
    def publish_report(lab_run_id: str) -> str:
        """Rebuild the trend report with this load run's page."""
        return tasks.publish_report(lab_run_id)

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def send_alerts(lab_run_id: str) -> dict[str, Any]:
        """Announce new drifts and recoveries on the kafkalab_alert_webhook connection."""
        return tasks.send_alerts(lab_run_id, dag_id=get_current_context()["dag"].dag_id)

    lab_run: Any = parts.name_run(run_prefix)
    part = load_part(lab_run, assets, shard_tasks=True)
    drift = check_drift(lab_run)
    report = publish_report(lab_run)
    alerts = send_alerts(lab_run)
    part.validated >> drift >> report >> alerts
    [lab_run, *part.all, drift, report, alerts] >> parts.verify_outcome(
        run_prefix, lambda run_id: [lambda: load_tasks.verify_load_outcome(run_id)],
        what="load run")


__all__ = ["LoadPart", "build_load_chain", "load_part"]
