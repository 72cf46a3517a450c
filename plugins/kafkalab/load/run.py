"""A load run's life: validate its cells, open (or re-open) its manifest, measure cell by
cell (:func:`kafkalab.load.cell.run_load_cell`), close it from the cells' ``cell.json``.

A load *run* is a manifest (``runs/<run_id>.json``, ``kind: "load"``) plus one directory per
cell under ``load/`` (:mod:`kafkalab.load.files`). The CLI runs it whole
(:func:`execute_load`); Airflow runs the same steps as tasks (``kafkalab.airflow.load_tasks``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.cluster.descriptor import ClusterDescriptor, emulator_note, public_view
from kafkalab.config.mapping import check_profile
from kafkalab.errors import ConfigError, RunError
from kafkalab.kinds import LOAD, kind_of
from kafkalab.load import files
from kafkalab.load.cell import cluster_descriptor, effective_profile, run_load_cell
from kafkalab.load.files import CellDoc
from kafkalab.load.spec import LoadCellSpec, check_budget
from kafkalab.paths import images_dir
from kafkalab.payloads import load_body, wire_size_bytes
from kafkalab.progress import Progress, noop
from kafkalab.run_ids import new_run_id
from kafkalab.samples import Manifest, environment, runtime_versions, utc_now_iso
from kafkalab.store import LabData


@dataclass
class LoadRequest:
    """A load run asked for by the CLI, a DAG or maxrate."""

    cells: list[LoadCellSpec]
    data_dir: Path | None = None
    descriptor_path: Path | None = None
    run_id: str | None = None
    command: str = "kafkalab load"
    workload_name: str = "adhoc"
    owner_kind: str = "cli"
    provision: bool = True
    logical_date: str | None = None
    """The DAG run's logical date (ISO 8601 UTC), recorded in the manifest; None from the CLI."""


@dataclass
class LoadResult:
    run_id: str
    status: str
    cells: list[dict[str, Any]] = field(default_factory=list)
    manifest_path: Path | None = None


def validate_cells(cells: Iterable[LoadCellSpec], descriptor: ClusterDescriptor | None = None) -> None:
    """Refuse bad cells before anything runs: unknown profiles, a profile the cell's client
    or the cluster cannot take (:func:`kafkalab.config.mapping.check_profile`), an rf above
    the brokers, a cell above the client budget.

    Raises:
        ConfigError: one line naming the problem.
    """
    for spec in cells:
        prof = effective_profile(spec)
        # properties the cell's client does not know, zstd or a topic config the cluster predates
        check_profile(prof, [spec.client], descriptor)
        if descriptor is not None and descriptor.broker_count is not None \
                and prof.topic.replication_factor > descriptor.broker_count:
            raise ConfigError(f"profile {spec.profile} needs replication factor "
                              f"{prof.topic.replication_factor} but the cluster has "
                              f"{descriptor.broker_count} broker(s)")
        body = load_body(spec.payload, spec.encoding, images_dir())
        check_budget(spec, wire_size_bytes(body))


def start_load_run(req: LoadRequest, progress: Progress = noop) -> dict[str, Any]:
    """Validate every cell, check the cluster and write the manifest (status ``running``).
    Returns ``{"run_id", "run_date", "cells": [spec dicts]}``. An existing run id is re-opened:
    its cells stay, the cells asked for are (re-)measured."""
    from kafkalab.cluster.admin import check_reachable

    validate_cells(req.cells)  # budget and names first: refused before any connection
    d = cluster_descriptor(req.descriptor_path)
    validate_cells(req.cells, d)
    progress(f"checking {d.bootstrap_servers} …")
    check_reachable(d)
    if d.is_emulator:
        progress(f"NOTE: {emulator_note(d)}")
    lab = LabData(req.data_dir)
    run_id = req.run_id or new_run_id()
    previous = lab.manifest(run_id) if req.run_id else None
    if previous is not None and kind_of(previous) is not LOAD:
        raise ConfigError(f"run {run_id} is a {kind_of(previous).name} run; use a new --run-id "
                          "for a load run")
    specs = [c.model_dump() for c in req.cells]
    old_specs = list(((previous or {}).get("workload") or {}).get("cells") or [])
    all_specs = old_specs + [s for s in specs if s not in old_specs]
    manifest = Manifest(
        run_id=run_id, started_at=str((previous or {}).get("started_at") or utc_now_iso()),
        command=req.command,
        workload={"kind": LOAD.name, "name": req.workload_name, "cells": all_specs},
        profiles={p: effective_profile(c).model_dump() for c in req.cells for p in [c.profile]},
        scenarios=sorted({c.client for c in req.cells}),
        payloads=sorted({c.payload for c in req.cells}),
        cluster=public_view(d), versions=runtime_versions(),
        owner=_owner(req.owner_kind), environment=environment(), kind=LOAD.name,
        logical_date=req.logical_date or (previous or {}).get("logical_date"),
    )
    if previous is not None:
        manifest.reopened_at = [*(previous.get("reopened_at") or []), utc_now_iso()]
        manifest.stale_outputs = sorted(set(previous.get("stale_outputs") or [])
                                        | set(lab.derived_outputs(run_id)))
        manifest.cells = list(previous.get("cells") or [])
    manifest.write(lab.root)
    return {"run_id": run_id, "run_date": manifest.run_date, "cells": specs}


def _owner(kind: str) -> dict[str, Any]:
    import socket

    return {"host": socket.gethostname(), "pid": os.getpid(), "kind": kind}


def finish_load_run(data_dir: Path | str | None, run_id: str, error: str | None = None) -> dict[str, Any]:
    """Merge every cell's ``cell.json`` summary into the manifest and close it: ``complete``
    when every planned cell completed, ``failed`` when none did, else ``incomplete``."""
    lab = LabData(data_dir)
    manifest = Manifest.load(lab.root, run_id)
    planned = [LoadCellSpec(**s) for s in (manifest.workload.get("cells") or [])]
    cells = []
    statuses = []
    for spec in planned:
        acks = spec.effective_acks(effective_profile(spec).producer.acks)
        doc = CellDoc.read(files.cell_dir(lab.root, manifest.run_date, run_id, spec.cell_id(acks)))
        if doc is None:
            statuses.append("missing")
            continue
        statuses.append(doc.status)
        cells.append(dict(doc.summary or {"cell_id": doc.cell_id, "status": doc.status}))
    manifest.cells = cells
    manifest.close(statuses, error)
    manifest.write(lab.root)
    return {"run_id": run_id, "status": manifest.status, "cells": cells}


def execute_load(req: LoadRequest, progress: Progress = noop) -> LoadResult:
    """Start a load run, measure every cell, close the run (always, even on Ctrl-C)."""
    started = start_load_run(req, progress)
    run_id = started["run_id"]
    req.run_id = run_id
    summaries: list[dict[str, Any]] = []
    error: str | None = None
    try:
        for spec in req.cells:
            try:
                summaries.append(run_load_cell(req.data_dir, run_id, spec, req.descriptor_path,
                                               progress, provision=req.provision))
            except RunError as exc:
                progress(f"cell failed: {exc}")
                error = str(exc)
    except KeyboardInterrupt:
        error = "interrupted"
        raise
    finally:
        done = finish_load_run(req.data_dir, run_id, error=error if error == "interrupted" else None)
    return LoadResult(run_id=run_id, status=done["status"], cells=done["cells"],
                      manifest_path=LabData(req.data_dir).manifest_path(run_id))
