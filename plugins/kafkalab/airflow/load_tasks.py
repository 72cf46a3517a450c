"""The Airflow tasks of a load run (open loop, fan-out), as plain importable functions.

The ``load_experiment`` DAG and the nightly's fan-out cell wire these
(:mod:`kafkalab.airflow.chains.load`); each calls the load engine (:mod:`kafkalab.load.run`,
:mod:`kafkalab.load.cell`) and takes and returns JSON-able values. Heavy imports stay inside
the functions: importing this module while a DAG file is parsed reads no file and starts
nothing. The chain (see ``docs/airflow.md``)::

    name_load_run -> start_load_run -> run_load_cell x cells (mapped, pool kafkalab_measure)
      -> finish_load_run (all_done) -> aggregate_load (Spark) -> validate_load (Spark + GX)
      -> check_drift -> publish_report -> verify_load_outcome

Where a cell's consumer shards run is the ``shard_placement`` param:

- ``subprocess`` (default): the engine starts them as processes of the ``run_load_cell`` task,
  on the worker that runs the cell. Works everywhere, ``airflow dags test`` included.
- ``tasks``: each shard is a mapped task of its own, ``consume_load_shard``
  (:class:`kafkalab.airflow.shards.ConsumeLoadShardOperator`, pool ``kafkalab_shards``), so
  on a Celery or Kubernetes deployment the shards of one cell spread over the workers. A
  shard task defers (holding no slot; the triggerer watches the cell's files) until the
  producer of its cell (``run_load_cell``) has written this attempt's plan, then joins the
  start barrier (:func:`kafkalab.load.placement.shard_turn`) and runs the shard.
  The workers must share the data directory (the barrier and the rows are files there).
  Needs a running scheduler: ``airflow dags test`` runs one task at a time, so the producer
  would wait at the barrier alone (it fails after the barrier timeout, saying so).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalab.airflow.connections import ClusterConnection
from kafkalab.airflow.tasks import run_started, verify_outcome
from kafkalab.attempts import attempt_path, final_path
from kafkalab.errors import ConfigError, RunError
from kafkalab.kinds import LOAD
from kafkalab.store import LabData, read_json
from kafkalab.values import jsonable

if TYPE_CHECKING:
    from kafkalab.load.run import LoadRequest
    from kafkalab.load.spec import LoadCellSpec, LoadPlan

log = logging.getLogger(__name__)

CELL_PARAMS: tuple[str, ...] = (
    "duration_s", "warmup_s", "payload", "profile", "client", "partitions", "consumer_mode",
    "pause_at_s", "pause_for_s", "drain_s", "consumers_per_shard", "thin_consumer",
    "thin_link_kbps", "thin_link_delay_ms",
)
"""The form's params that are fields of every cell (:class:`kafkalab.load.spec.LoadCellSpec`);
``consumers`` × ``rates`` × ``acks`` make the grid."""

NIGHTLY_FANOUT: dict[str, Any] = {
    "workload": "nightly-fanout",
}
"""The nightly's fan-out cell: ``include/workloads/nightly-fanout.yaml`` (read by the task)."""

NIGHTLY_FANOUT_PARAM = "fanout_cell"
"""The nightly's param that turns its fan-out cell on (default) or off (``make demo``)."""


def nightly_fanout_on(params: Mapping[str, Any]) -> bool:
    """Whether the nightly's fan-out cell runs: its :data:`NIGHTLY_FANOUT_PARAM` (default on).

    Raises:
        ConfigError: the param is not a boolean.
    """
    from kafkalab.airflow.params import bool_param

    return bool_param(params, NIGHTLY_FANOUT_PARAM, True)


def load_run_started(run_id: str) -> bool:
    """Whether the load run ``run_id`` was started (its manifest exists): a nightly whose
    fan-out cell is turned off, or whose ``start_load_run`` failed, has none."""
    return run_started(run_id)


def _listed(params: Mapping[str, Any], key: str) -> list[Any]:
    value = params.get(key)
    if value is None or value == "":
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


PARAM_OF_FIELD: dict[str, str] = {"rates_msgs_per_s": "rates", "payloads": "payload"}
"""The form param of each :class:`~kafkalab.load.spec.LoadPlan` field whose name differs."""


def load_plan(params: Mapping[str, Any]) -> LoadPlan:
    """The grid DAG params ask for: ``consumers`` × ``rates`` × ``acks`` (empty: the
    profile's) with the :data:`CELL_PARAMS` (null: the cell's defaults).

    Raises:
        ConfigError: no consumers or no rates, or a value of the wrong type, naming the param.
    """
    from pydantic import ValidationError

    from kafkalab.load.spec import LoadPlan
    from kafkalab.yamlio import describe_validation_error

    consumers, rates = _listed(params, "consumers"), _listed(params, "rates")
    if not consumers or not rates:
        raise ConfigError("params consumers and rates: give at least one value each")
    try:
        return LoadPlan(consumers=consumers, rates_msgs_per_s=rates, acks=_listed(params, "acks"),
                        payloads=_listed(params, "payload"),
                        txn_msgs=_listed(params, "txn_msgs"),
                        txn_abort_every=params.get("txn_abort_every"),
                        link_delay_ms=_listed(params, "link_delay_ms"),
                        client_link_delay_ms=_listed(params, "client_link_delay_ms"),
                        fetch_from=_listed(params, "fetch_from"),
                        **{k: params.get(k) for k in CELL_PARAMS if k != "payload"})
    except ValidationError as exc:
        field, _, message = describe_validation_error(exc).partition(": ")
        name = field.split(".")[0]
        raise ConfigError(f"param {PARAM_OF_FIELD.get(name, name)}: {message}") from None


def load_cells(params: Mapping[str, Any]) -> list[LoadCellSpec]:
    """The cells of a load run asked for by DAG params, planned by
    :func:`kafkalab.load.spec.plan_cells` (as ``kafkalab load`` plans them).

    With ``workload`` (a ``kind: load`` workload name, e.g. ``nightly-fanout``) its cells;
    otherwise the grid of :func:`load_plan`.

    Raises:
        ConfigError: naming the param, e.g. ``param rate_msgs_per_s: ... greater than 0``.
    """
    from kafkalab.load.spec import PlanRefused, plan_cells

    if params.get("workload"):
        from kafkalab.load.workloads import load_load_workload

        return load_load_workload(str(params["workload"])).cells()
    try:
        return plan_cells(load_plan(params))
    except PlanRefused as exc:
        err = exc.error.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or "cell"
        cell = exc.cell
        raise ConfigError(f"param {where}: {err.get('msg')} (cell {cell['consumers']} consumers × "
                          f"{cell['rate_msgs_per_s']:g} msg/s, acks {cell['acks']})") from None


def build_load_request(params: Mapping[str, Any], run_id: str, command: str | None = None,
                       logical_date: str | None = None) -> LoadRequest:
    """A :class:`~kafkalab.load.run.LoadRequest` for the cells of ``params`` (owner kind
    ``airflow``), on the cluster of the ``cluster_descriptor`` param or Connection;
    ``logical_date``: the DAG run's (ISO 8601 UTC), recorded in the manifest."""
    from kafkalab.load.run import LoadRequest

    return LoadRequest(
        cells=load_cells(params), data_dir=LabData().root,
        descriptor_path=ClusterConnection().descriptor_path(params.get("cluster_descriptor")),
        run_id=run_id, command=command or f"airflow task (kafkalab.airflow.load_tasks) {run_id}",
        workload_name=str(params.get("workload") or "load_experiment"), owner_kind="airflow",
        logical_date=logical_date)


def cell_label(spec: Mapping[str, Any]) -> str:
    """The readable name of a mapped cell (its ``map_index_template``):
    ``5 consumers × 200 msg/s, acks 1, 1kb``."""
    acks = spec.get("acks")
    rate = float(spec.get("rate_msgs_per_s") or 0)
    return (f"{spec.get('consumers')} consumers × {rate:g} msg/s"
            + (f", acks {acks}" if acks is not None else "") + f", {spec.get('payload')}")


def start_load(params: Mapping[str, Any], run_id: str, command: str | None = None,
               logical_date: str | None = None) -> list[dict[str, Any]]:
    """Validate the cells (budget included), check the cluster, write the manifest
    (``running``, kind ``load``, the DAG run's ``logical_date``). Returns the cells to map:
    ``{"spec": {...}, "label"}``."""
    from kafkalab.load.run import start_load_run

    req = build_load_request(params, run_id, command, logical_date)
    if shard_placement(params) == "tasks":
        from airflow.sdk.configuration import conf

        from kafkalab.airflow.pools import SHARD_POOL_SLOTS

        check_task_slots(req.cells, conf.getint("core", "parallelism"), SHARD_POOL_SLOTS)
    started = start_load_run(req, progress=log.info)
    cells = [{"spec": dict(jsonable(s)), "label": cell_label(s)} for s in started["cells"]]
    log.info("load run %s started: %d cell(s)", run_id, len(cells))
    return cells


def shard_placement(params: Mapping[str, Any]) -> str:
    """The ``shard_placement`` param (default ``subprocess``), checked.

    Raises:
        ConfigError: not one of :data:`kafkalab.load.placement.SHARD_PLACEMENTS`.
    """
    from kafkalab.load.placement import SHARD_PLACEMENTS

    value = str(params.get("shard_placement") or "subprocess")
    if value not in SHARD_PLACEMENTS:
        raise ConfigError(f"param shard_placement: {value!r} is not one of "
                          + ", ".join(SHARD_PLACEMENTS))
    return value


def check_task_slots(cells: list[LoadCellSpec], parallelism: int, pool_slots: int) -> None:
    """With shard placement ``tasks`` a cell's producer and all its shard tasks run at once:
    refuse a cell that needs more than the executor or the shard pool can give.

    Raises:
        ConfigError: one line naming the cell, what it needs and the setting to raise.
    """
    for spec in cells:
        if spec.shards > pool_slots:
            raise ConfigError(
                f"cell {spec.consumers} consumers needs {spec.shards} shard tasks at once but "
                f"the pool kafkalab_shards has {pool_slots} slots: raise consumers_per_shard "
                f"or the pool's slots")
        if spec.shards + 1 > parallelism:
            raise ConfigError(
                f"cell {spec.consumers} consumers needs {spec.shards + 1} tasks at once (its "
                f"producer and {spec.shards} shard tasks) but [core] parallelism is "
                f"{parallelism}: raise consumers_per_shard or AIRFLOW__CORE__PARALLELISM")


def shard_slots(params: Mapping[str, Any],
                cells: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The consumer shard tasks of a started load run (shard placement ``tasks``): one per
    shard of every cell, in cell order, ``{"cell_id", "spec", "shard", "label"}``. Empty with
    placement ``subprocess`` (the mapped task is then skipped)."""
    if shard_placement(params) != "tasks":
        return []
    from kafkalab.load.cell import effective_profile
    from kafkalab.load.spec import LoadCellSpec

    out = []
    for cell in cells:
        spec = LoadCellSpec(**dict(cell["spec"]))
        cell_id = spec.cell_id(effective_profile(spec).producer.acks)
        for k in range(spec.shards):
            out.append({"cell_id": cell_id, "spec": dict(cell["spec"]), "shard": k,
                        "label": f"{cell.get('label')} · shard {k + 1}/{spec.shards}"})
    return out


def shard_state(run_id: str, slot: Mapping[str, Any], token: str,
                data_dir: Path | str | None = None) -> tuple[str, Path | None]:
    """Where the shard of ``slot`` stands: ``(state, cell_dir)``.

    ``state`` is :func:`kafkalab.load.placement.shard_turn`'s (``wait``, ``join``, ``done``,
    ``ended``), or ``closed`` when the run is no longer running and this attempt's plan of
    the cell never came up. No run manifest yet: ``wait``. Reads three small files; cheap
    enough for a trigger to call every second.
    """
    from kafkalab.load import files
    from kafkalab.load.placement import shard_turn
    from kafkalab.samples import Manifest

    lab = LabData(data_dir)
    if not lab.manifest_path(run_id).is_file():
        return "wait", None
    manifest = Manifest.load(lab.root, run_id)
    final = files.cell_dir(lab.root, manifest.run_date, run_id, str(slot["cell_id"]))
    cell = attempt_path(final)  # where a cell is measured (kafkalab.attempts)
    turn = shard_turn(cell, int(slot["shard"]), token)
    if turn == "wait":  # this attempt may have ended and taken the cell's place already
        settled = shard_turn(final, int(slot["shard"]), token)
        if settled != "wait":
            return settled, final
    if turn == "wait" and manifest.status != "running":
        return "closed", cell
    return turn, cell


def consume_load_shard(run_id: str, slot: Mapping[str, Any], token: str) -> dict[str, Any] | None:
    """Run a consumer shard task once: ``None`` while its cell has not started (the task then
    defers to :class:`kafkalab.airflow.shards.ShardTurnTrigger`, holding no slot); else it
    runs the shard to its end and returns the shard's result.

    ``token`` is the Airflow DAG run id, which the cell's producer writes into its plan
    (``placement_token``), so a plan of another run of the same lab run id is never joined.

    Raises:
        AirflowSkipException: the cell ended without this shard (its producer failed first;
            the cell's own task says why), or the run closed before the cell started.
        RunError: the shard failed (its rows are kept; the cell fails too).
    """
    from airflow.sdk.exceptions import AirflowSkipException

    from kafkalab.load.placement import run_shard_process
    from kafkalab.load.shard import result_path

    k = int(slot["shard"])
    state, cell = shard_state(run_id, slot, token)
    if state == "wait":
        return None
    if state == "closed":
        raise AirflowSkipException(f"load run {run_id} closed: cell {slot['cell_id']} never "
                                   f"started this shard")
    if state == "ended":
        raise AirflowSkipException(f"cell {slot['cell_id']} ended before shard {k} joined; "
                                   "see its run_load_cell task")
    assert cell is not None
    if state == "done":
        doc = read_json(result_path(cell, k))
        result = dict(doc) if isinstance(doc, dict) else {"status": "failed"}
    else:
        log.info("joining cell %s as shard %d", slot["cell_id"], k)
        result = run_shard_process(cell, k, progress=log.info, settled=final_path(cell))
    log.info("shard %d of %s: %s, unique %s", k, slot["cell_id"], result.get("status"),
             result.get("unique"))
    if result.get("status") != "complete":
        raise RunError(f"shard {k} of cell {slot['cell_id']} {result.get('status')}: "
                       f"{result.get('error')}")
    return dict(jsonable(result))


def measure_load_cell(params: Mapping[str, Any], run_id: str,
                      cell: Mapping[str, Any], token: str | None = None) -> dict[str, Any]:
    """Measure one cell of a started load run. Returns the cell's JSON summary.

    Its consumer shards are subprocesses of this task, or (``shard_placement`` ``tasks``)
    the ``consume_load_shard`` tasks, which join through the plan marked with ``token``.

    Raises:
        RunError: the cell failed (what it measured is kept; the run will be incomplete).
    """
    from kafkalab.load.cell import run_load_cell

    descriptor = ClusterConnection().descriptor_path(params.get("cluster_descriptor"))
    summary = run_load_cell(LabData().root, run_id, dict(cell["spec"]), descriptor,
                            progress=log.info, shard_placement=shard_placement(params),
                            placement_token=token)
    out = dict(jsonable(summary))
    log.info("cell %s: %s, achieved %s msg/s, rx avg %s, loss %s %%, e2e p99 %s ms",
             out.get("cell_id"), out.get("status"), out.get("achieved_rate_msgs_per_s"),
             out.get("rx_rate_msgs_per_s_avg"), out.get("loss_pct"), out.get("e2e_p99_ms"))
    if out.get("status") not in (None, "complete"):
        raise RunError(f"cell {out.get('cell_id')} {out.get('status')}: {out.get('error')}")
    return out


def close_load(run_id: str) -> dict[str, Any]:
    """Merge the cells' summaries into the manifest: complete, incomplete or failed.

    Returns ``{"run_id", "status", "cells"}``; ``status: "not started"`` (nothing raised)
    when the run was never started, so that the tasks after it are not held up by a load
    run that a failed ``start_load_run`` already reports.
    """
    from kafkalab.load.run import finish_load_run

    lab = LabData()
    if not lab.manifest_path(run_id).is_file():
        log.warning("load run %s was never started: nothing to close", run_id)
        return {"run_id": run_id, "status": "not started", "cells": []}
    done = finish_load_run(lab.root, run_id)
    log.info("load run %s: %s", run_id, done.get("status"))
    return dict(jsonable(done))


def verify_load_outcome(run_id: str) -> dict[str, Any]:
    """A load run's verdict from its files: manifest complete and the load validation passed
    (:func:`kafkalab.airflow.tasks.verify_outcome` of kind ``load``).

    Raises:
        RunError: naming what is wrong.
    """
    return verify_outcome(run_id, LOAD, what="load run")


__all__ = [
    "CELL_PARAMS",
    "NIGHTLY_FANOUT",
    "NIGHTLY_FANOUT_PARAM",
    "PARAM_OF_FIELD",
    "build_load_request",
    "cell_label",
    "close_load",
    "load_cells",
    "load_plan",
    "load_run_started",
    "measure_load_cell",
    "nightly_fanout_on",
    "start_load",
    "verify_load_outcome",
]
