"""The Airflow tasks of a load run (open loop, fan-out), as plain importable functions.

The ``load_experiment`` DAG and the nightly's fan-out cell wire these (``dags/_common.py``);
each calls the load engine (:mod:`kafkalab.load.engine`) and takes and returns JSON-able
values. Heavy imports stay inside the functions: importing this module while a DAG file is
parsed reads no file and starts nothing. The chain (see ``docs/airflow.md``)::

    name_load_run -> start_load_run -> run_load_cell x cells (mapped, pool kafkalab_measure)
      -> finish_load_run (all_done) -> aggregate_load (Spark) -> validate_load (Spark + GX)
      -> check_drift -> publish_report -> verify_load_outcome

Inside a cell the engine starts its consumer shards as subprocesses of the ``run_load_cell``
task (the start barrier is between those processes and the producer): the shards of one cell
always run on the worker that runs the cell.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalab.airflow.connections import ClusterConnection
from kafkalab.errors import ConfigError, RunError
from kafkalab.store import LabData
from kafkalab.values import jsonable

if TYPE_CHECKING:
    from kafkalab.load.engine import LoadRequest
    from kafkalab.load.spec import LoadCellSpec

log = logging.getLogger(__name__)

CELL_PARAMS: tuple[str, ...] = (
    "duration_s", "warmup_s", "payload", "profile", "client", "partitions", "consumer_mode",
    "pause_at_s", "pause_for_s", "drain_s", "consumers_per_shard",
)
"""The form's params that are fields of every cell (:class:`kafkalab.load.spec.LoadCellSpec`);
``consumers`` × ``rates`` × ``acks`` make the grid."""

NIGHTLY_FANOUT: dict[str, Any] = {
    "workload": "nightly-fanout",
}
"""The nightly's fan-out cell: ``include/workloads/nightly-fanout.yaml`` (read by the task)."""


def _listed(params: Mapping[str, Any], key: str) -> list[Any]:
    value = params.get(key)
    if value is None or value == "":
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def load_cells(params: Mapping[str, Any]) -> list[LoadCellSpec]:
    """The cells of a load run asked for by DAG params.

    With ``workload`` (a ``kind: load`` workload name, e.g. ``nightly-fanout``) its cells;
    otherwise the grid ``consumers`` × ``rates`` × ``acks`` (acks empty: the profile's) with
    the :data:`CELL_PARAMS` (null: the engine's defaults). Validated by the engine's model.

    Raises:
        ConfigError: naming the param, e.g. ``param rates: ... greater than 0``.
    """
    from pydantic import ValidationError

    from kafkalab.load.spec import LoadCellSpec

    if params.get("workload"):
        from kafkalab.load.workloads import load_load_workload

        return load_load_workload(str(params["workload"])).cells()
    consumers, rates = _listed(params, "consumers"), _listed(params, "rates")
    if not consumers or not rates:
        raise ConfigError("params consumers and rates: give at least one value each")
    acks = _listed(params, "acks") or [None]
    fixed = {k: params[k] for k in CELL_PARAMS if params.get(k) is not None}
    cells = []
    for a in acks:
        for c in consumers:
            for r in rates:
                try:
                    cells.append(LoadCellSpec(consumers=c, rate_msgs_per_s=r, acks=a, **fixed))
                except ValidationError as exc:
                    err = exc.errors()[0]
                    where = ".".join(str(x) for x in err.get("loc", ())) or "cell"
                    raise ConfigError(f"param {where}: {err.get('msg')} (cell {c} consumers × "
                                      f"{r} msg/s, acks {a})") from None
    return cells


def build_load_request(params: Mapping[str, Any], run_id: str,
                       command: str | None = None) -> LoadRequest:
    """A :class:`~kafkalab.load.engine.LoadRequest` for the cells of ``params`` (owner kind
    ``airflow``), on the cluster of the ``cluster_descriptor`` param or Connection."""
    from kafkalab.load.engine import LoadRequest

    return LoadRequest(
        cells=load_cells(params), data_dir=LabData().root,
        descriptor_path=ClusterConnection().descriptor_path(params.get("cluster_descriptor")),
        run_id=run_id, command=command or f"airflow task (kafkalab.airflow.load_tasks) {run_id}",
        workload_name=str(params.get("workload") or "load_experiment"), owner_kind="airflow")


def cell_label(spec: Mapping[str, Any]) -> str:
    """The readable name of a mapped cell (its ``map_index_template``):
    ``5 consumers × 200 msg/s, acks 1, 1kb``."""
    acks = spec.get("acks")
    rate = float(spec.get("rate_msgs_per_s") or 0)
    return (f"{spec.get('consumers')} consumers × {rate:g} msg/s"
            + (f", acks {acks}" if acks is not None else "") + f", {spec.get('payload')}")


def start_load(params: Mapping[str, Any], run_id: str,
               command: str | None = None) -> list[dict[str, Any]]:
    """Validate the cells (budget included), check the cluster, write the manifest
    (``running``, kind ``load``). Returns the cells to map: ``{"spec": {...}, "label"}``."""
    from kafkalab.load.engine import start_load_run

    req = build_load_request(params, run_id, command)
    started = start_load_run(req, progress=log.info)
    cells = [{"spec": dict(jsonable(s)), "label": cell_label(s)} for s in started["cells"]]
    log.info("load run %s started: %d cell(s)", run_id, len(cells))
    return cells


def measure_load_cell(params: Mapping[str, Any], run_id: str,
                      cell: Mapping[str, Any]) -> dict[str, Any]:
    """Measure one cell of a started load run (its consumer shards are subprocesses of this
    task). Returns the cell's JSON summary.

    Raises:
        RunError: the cell failed (what it measured is kept; the run will be incomplete).
    """
    from kafkalab.load.engine import run_load_cell

    descriptor = ClusterConnection().descriptor_path(params.get("cluster_descriptor"))
    summary = run_load_cell(LabData().root, run_id, dict(cell["spec"]), descriptor,
                            progress=log.info)
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
    from kafkalab.load.engine import finish_load_run

    lab = LabData()
    if not lab.manifest_path(run_id).is_file():
        log.warning("load run %s was never started: nothing to close", run_id)
        return {"run_id": run_id, "status": "not started", "cells": []}
    done = finish_load_run(lab.root, run_id)
    log.info("load run %s: %s", run_id, done.get("status"))
    return dict(jsonable(done))


def verify_load_outcome(run_id: str) -> dict[str, Any]:
    """A load run's verdict from its files: manifest complete and the load validation passed.

    Raises:
        RunError: naming what is wrong.
    """
    from kafkalab.drift.load import load_validation, load_validation_path

    lab = LabData()
    problems: list[str] = []
    manifest = lab.manifest(run_id)
    status = None if manifest is None else manifest.get("status")
    if manifest is None:
        problems.append("no run manifest")
    elif status != "complete":
        problems.append(f"run is {status}")
    validation = load_validation(lab, run_id)
    if validation is None:
        problems.append("no validation result")
    elif not validation.get("success"):
        problems.append(f"validation failed (see {load_validation_path(lab, run_id)})")
    if problems:
        raise RunError(f"load run {run_id}: " + "; ".join(problems))
    return {"run_id": run_id, "status": status, "validation_success": True}


def load_output_files(lab: LabData, run_id: str, output: str) -> list[Path]:
    """The files holding a load run's ``aggregates`` or ``validation`` (those that exist)."""
    from kafkalab.drift.load import load_run_dir, load_validation_path

    if output == "aggregates":
        d = load_run_dir(lab, run_id)
        return sorted(p for p in d.rglob("*.parquet") if p.is_file()) if d.is_dir() else []
    if output == "validation":
        return [p for p in (load_validation_path(lab, run_id),) if p.is_file()]
    return []


__all__ = [
    "CELL_PARAMS",
    "NIGHTLY_FANOUT",
    "build_load_request",
    "cell_label",
    "close_load",
    "load_cells",
    "load_output_files",
    "measure_load_cell",
    "start_load",
    "verify_load_outcome",
]
