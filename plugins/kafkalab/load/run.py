"""A load run's life: validate its cells, open (or re-open) its manifest, measure cell by
cell (:func:`kafkalab.load.cell.run_load_cell`), close it from the cells' ``cell.json``.

A load *run* is a manifest (``runs/<run_id>.json``, ``kind: "load"``) plus one directory per
cell under ``load/`` (:mod:`kafkalab.load.files`). The CLI runs it whole
(:func:`execute_load`); Airflow runs the same steps as tasks (``kafkalab.airflow.load_tasks``).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.cluster.broker_config import broker_settings
from kafkalab.cluster.descriptor import ClusterDescriptor, emulator_note, public_view
from kafkalab.config.mapping import check_profile
from kafkalab.config.models import Profile
from kafkalab.errors import ConfigError, RunError
from kafkalab.kinds import LOAD, RunKind, kind_of
from kafkalab.load import files
from kafkalab.load.cell import cell_links, cluster_descriptor, effective_profile, run_load_cell
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
    """A load run once closed: its status and every cell's summary."""

    run_id: str
    status: str
    cells: list[dict[str, Any]] = field(default_factory=list)
    manifest_path: Path | None = None


def cell_profiles(cells: Iterable[LoadCellSpec]) -> list[Profile]:
    """Each cell's effective profile, in order: each read once here, then passed on.

    Raises:
        ConfigError: an unknown or invalid profile.
    """
    return [effective_profile(spec) for spec in cells]


def validate_cells(cells: Iterable[LoadCellSpec], descriptor: ClusterDescriptor | None = None,
                   profiles: list[Profile] | None = None) -> list[Profile]:
    """Refuse bad cells before anything runs: unknown profiles, a profile the cell's client
    or the cluster cannot take (:func:`kafkalab.config.mapping.check_profile`), an rf above
    the brokers, a cell above the client budget. Returns the cells' profiles
    (:func:`cell_profiles`, or ``profiles`` when given).

    Raises:
        ConfigError: one line naming the problem.
    """
    cells = list(cells)
    profiles = profiles if profiles is not None else cell_profiles(cells)
    for spec, prof in zip(cells, profiles, strict=True):
        # properties the cell's client does not know, zstd or a topic config the cluster predates
        check_profile(prof, [spec.client], descriptor)
        if descriptor is not None and descriptor.broker_count is not None \
                and prof.topic.replication_factor > descriptor.broker_count:
            raise ConfigError(f"profile {spec.profile} needs replication factor "
                              f"{prof.topic.replication_factor} but the cluster has "
                              f"{descriptor.broker_count} broker(s)")
        if spec.link_delay_ms is not None and prof.topic.replication_factor < 2:
            raise ConfigError(f"--link-delay-ms delays replication, which profile {spec.profile} "
                              f"(replication factor {prof.topic.replication_factor}) has none of: "
                              "use one with replicas, e.g. --profile durability")
        if spec.client_link_delay_ms is not None and prof.topic.replication_factor < 2:
            raise ConfigError(f"--client-link-delay-ms puts the clients beside a follower, which "
                              f"profile {spec.profile} (replication factor "
                              f"{prof.topic.replication_factor}) has none of: use one with "
                              "replicas, e.g. --profile availability")
        body = load_body(spec.payload, spec.encoding, images_dir())
        check_budget(spec, wire_size_bytes(body))
    return profiles


def start_load_run(req: LoadRequest, progress: Progress = noop) -> dict[str, Any]:
    """Validate every cell, check the cluster and write the manifest (status ``running``).
    Returns ``{"run_id", "run_date", "cells": [spec dicts]}``. An existing run id is re-opened:
    its cells stay, the cells asked for are (re-)measured."""
    from kafkalab.cluster.admin import check_reachable

    profiles = validate_cells(req.cells)  # budget and names first: before any connection
    d = cluster_descriptor(req.descriptor_path)
    validate_cells(req.cells, d, profiles)
    for cell in req.cells:
        cell_links(req.descriptor_path, cell)  # a cell that acts on links needs them
    lab = LabData(req.data_dir)
    lab.refuse_live_owner(req.run_id, req.owner_kind)
    progress(f"checking {d.bootstrap_servers} …")
    check_reachable(d)
    if d.is_emulator:
        progress(f"NOTE: {emulator_note(d)}")
    with lab.starting(req.run_id, req.owner_kind):
        run_id, previous = reopened_run(lab, req.run_id, LOAD, "load")
        specs = [c.model_dump() for c in req.cells]
        manifest = parts_manifest(
            run_id, previous, LOAD, command=req.command,
            workload={"kind": LOAD.name, "name": req.workload_name,
                      "cells": planned_parts(previous, "cells", specs)},
            profiles={c.profile: prof.model_dump()
                      for c, prof in zip(req.cells, profiles, strict=True)},
            scenarios=sorted({c.client for c in req.cells}),
            payloads=sorted({c.payload for c in req.cells}),
            cluster=public_view(d), owner_kind=req.owner_kind, logical_date=req.logical_date,
            broker_settings=broker_settings(d))
        if previous is not None:
            manifest.stale_outputs = sorted(set(previous.get("stale_outputs") or [])
                                            | set(lab.derived_outputs(run_id)))
        manifest.write(lab.root)
    return {"run_id": run_id, "run_date": manifest.run_date, "cells": specs}


def finish_load_run(data_dir: Path | str | None, run_id: str, error: str | None = None) -> dict[str, Any]:
    """Merge every cell's ``cell.json`` summary into the manifest and close it: ``complete``
    when every planned cell completed, ``failed`` when none did, else ``incomplete``."""
    lab = LabData(data_dir)
    with lab.run_lock(run_id):
        manifest = Manifest.load(lab.root, run_id)
        planned = [LoadCellSpec(**s) for s in (manifest.workload.get("cells") or [])]
        cells = close_run(lab, manifest, (_cell_part(lab.root, manifest.run_date, run_id, spec)
                                          for spec in planned), error)
    return {"run_id": run_id, "status": manifest.status, "cells": cells}


def execute_load(req: LoadRequest, progress: Progress = noop) -> LoadResult:
    """Start a load run, measure every cell, close the run (always, even on Ctrl-C)."""
    started = start_load_run(req, progress)
    run_id = started["run_id"]
    req.run_id = run_id
    error: str | None = None
    try:
        for spec in req.cells:
            try:
                run_load_cell(req.data_dir, run_id, spec, req.descriptor_path, progress,
                              provision=req.provision)
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


def _cell_part(data_root: Path, run_date: str, run_id: str,
               spec: LoadCellSpec) -> tuple[str, dict[str, Any]] | None:
    """A planned cell's status and summary from its ``cell.json`` (None: it has none)."""
    acks = spec.effective_acks(effective_profile(spec).producer.acks)
    doc = CellDoc.read(files.cell_dir(data_root, run_date, run_id, spec.cell_id(acks)))
    if doc is None:
        return None
    return doc.status, dict(doc.summary or {"cell_id": doc.cell_id, "status": doc.status})


# -- a run made of parts: load cells here, fault trials in kafkalab.faults.engine -------------


def reopened_run(lab: LabData, run_id: str | None, kind: RunKind,
                 noun: str) -> tuple[str, dict[str, Any] | None]:
    """The run id a run of parts writes (``run_id``, else a new one) and the manifest of the
    run it re-opens (None: a new run).

    Raises:
        ConfigError: ``run_id`` is a run of another kind (``noun`` names this kind's runs).
    """
    rid = run_id or new_run_id()
    previous = lab.manifest(rid) if run_id else None
    if previous is not None and kind_of(previous) is not kind:
        raise ConfigError(f"run {rid} is a {kind_of(previous).name} run; use a new --run-id "
                          f"for a {noun} run")
    return rid, previous


def planned_parts(previous: dict[str, Any] | None, key: str,
                  specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The parts a (re-opened) run plans: the earlier manifest's ``workload[key]``, then
    those of ``specs`` it does not hold yet."""
    old = list(((previous or {}).get("workload") or {}).get(key) or [])
    return old + [s for s in specs if s not in old]


def parts_manifest(run_id: str, previous: dict[str, Any] | None, kind: RunKind, *,
                   command: str, workload: dict[str, Any], profiles: dict[str, Any],
                   scenarios: list[str], payloads: list[str], cluster: dict[str, Any],
                   owner_kind: str, logical_date: str | None,
                   broker_settings: dict[str, Any] | None = None) -> Manifest:
    """The manifest (status ``running``) of a run of parts that starts or is re-opened: a
    re-opened run keeps its start time, logical date and parts' summaries, and records when
    it was re-opened."""
    manifest = Manifest(
        run_id=run_id, started_at=str((previous or {}).get("started_at") or utc_now_iso()),
        command=command, workload=workload, profiles=profiles, scenarios=scenarios,
        payloads=payloads, cluster=cluster, versions=runtime_versions(),
        owner={"host": socket.gethostname(), "pid": os.getpid(), "kind": owner_kind},
        environment=environment(), kind=kind.name,
        logical_date=logical_date or (previous or {}).get("logical_date"),
        broker_settings=broker_settings,
    )
    if previous is not None:
        manifest.reopened_at = [*(previous.get("reopened_at") or []), utc_now_iso()]
        manifest.cells = list(previous.get("cells") or [])
    return manifest


def close_run(lab: LabData, manifest: Manifest,
              parts: Iterable[tuple[str, dict[str, Any]] | None],
              error: str | None) -> list[dict[str, Any]]:
    """Close a run of parts from each planned part's ``(status, summary)`` (None: the part
    left nothing): the manifest lists the summaries and is ``complete``, ``incomplete`` or
    ``failed`` (:meth:`Manifest.close`), written. Returns the summaries."""
    statuses: list[str] = []
    summaries: list[dict[str, Any]] = []
    for part in parts:
        if part is None:
            statuses.append("missing")
            continue
        statuses.append(part[0])
        summaries.append(part[1])
    manifest.cells = summaries
    manifest.close(statuses, error)
    manifest.write(lab.root)
    return summaries
