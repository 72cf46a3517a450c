"""A run: workload × profiles × payloads × scenarios, measured cell by cell.

Order of work, so that bad input costs nothing and nothing measured is lost:

1. everything is validated before anything is sent (names, rf versus brokers, payload size
   versus ``max.message.bytes``, the broker reachable within ~10 s);
2. topics are provisioned (idempotent);
3. each cell is measured and its rows are streamed to its file as they are measured
   (:class:`kafkalab.samples.CellWriter`); a cell that raises keeps what it measured and
   says why; a failing cell is recorded and the run goes on;
4. the manifest always ends ``complete``, ``incomplete`` (a cell failed or was not
   measured, or the run was interrupted) or ``failed`` (the run itself broke, or no cell
   succeeded); the caller exits non-zero unless it is complete. A run left ``running`` by a
   process that died is reported as *stale* (:meth:`kafkalab.store.LabData.run_state`).

Re-running a run id re-measures only the cells asked for: every other cell's rows stay. A
re-measured cell is written as an attempt that replaces the earlier rows only when it
completes (or the earlier rows did not complete); a failed, skipped or empty re-measurement
leaves the earlier good rows and fragment in place and is recorded in the fragment's
``attempts`` (:mod:`kafkalab.attempts`). The run's aggregates, validation, drift records and report page are marked stale in
the manifest (``stale_outputs``) until they are recomputed.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from kafkalab.attempts import ATTEMPT_PREFIX, attempt_path, recover, replaces, settle
from kafkalab.catalog import needs_kafka, scenario_spec
from kafkalab.cluster.admin import check_reachable
from kafkalab.cluster.broker_config import broker_settings
from kafkalab.cluster.descriptor import ClusterDescriptor, emulator_note, public_view
from kafkalab.config.loader import DEFAULT_WORKLOAD, load_profile, load_workload
from kafkalab.config.mapping import check_profile
from kafkalab.config.models import Profile, Workload
from kafkalab.errors import ClusterError, ConfigError, LabError
from kafkalab.host import HostWindow
from kafkalab.paths import images_dir
from kafkalab.payloads import load_body, payload_names, wire_size_bytes
from kafkalab.progress import Progress, noop
from kafkalab.run_ids import new_run_id
from kafkalab.samples import (
    CellContext,
    CellWriter,
    Manifest,
    environment,
    load_avg,
    read_cell,
    runtime_versions,
    settings_json,
    utc_now_iso,
)
from kafkalab.scenarios import get_scenario
from kafkalab.scenarios.base import Cell, Skipped
from kafkalab.store import LabData
from kafkalab.summary import CellResult, summarize_rows
from kafkalab.values import jsonable

if TYPE_CHECKING:
    from kafkalab.topics import TopicSpec


@dataclass
class RunRequest:
    """What to run; built by the CLI or an Airflow task."""

    workload: Workload
    profiles: list[str]
    payloads: list[str]
    scenarios: list[str]
    data_dir: Path
    descriptor: ClusterDescriptor | None
    run_id: str | None = None
    http_port: int = 0
    provision: bool = True
    command: str = field(default_factory=lambda: shlex.join(["kafkalab", *sys.argv[1:]]))
    owner_kind: str = "cli"
    """Who drives the run: ``cli`` (one process; stale when it is gone) or ``airflow``
    (tasks in several processes; stale when nothing was written for a long time)."""
    logical_date: str | None = None
    """The DAG run's logical date (ISO 8601 UTC), recorded in the manifest; None from the CLI."""
    supersede: bool = False
    """Re-opening a run measured with another workload (or overrides) measures it anew: the
    earlier measurement is set aside (:func:`_supersede`) instead of refused. The nightly's
    DAG runs ask for it: one lab run per night, measured as the night's latest DAG run asks."""


_OVERRIDABLE = ("messages", "warmup_messages", "encoding", "consumer_mode",
                "first_message_probes")
"""Workload keys a run may override from the command line or the trigger form."""


def build_run_request(
    workload: str = DEFAULT_WORKLOAD,
    *,
    scenarios: Sequence[str] | None = None,
    payloads: Sequence[str] | None = None,
    profiles: Sequence[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    option_names: Mapping[str, str] | None = None,
    data_dir: Path | None = None,
    descriptor_path: str | os.PathLike[str] | None = None,
    run_id: str | None = None,
    command: str | None = None,
    http_port: int = 0,
    provision: bool = True,
) -> RunRequest:
    """The one validated way to build a :class:`RunRequest` (CLI and Airflow tasks alike).

    Args:
        workload: workload name (``include/workloads/<name>.yaml``) or YAML path.
        scenarios, payloads, profiles: the matrix; empty or None means the workload's.
        overrides: values for the workload keys in :data:`_OVERRIDABLE` (``messages``,
            ``warmup_messages``, ``encoding``, ``consumer_mode``, ``first_message_probes``);
            None or ``""`` means the
            workload's. They are validated by the same model as the YAML file.
        option_names: how the caller calls each key in errors (``{"messages": "--messages"}``
            for the CLI; default ``param <key>``).
        data_dir: the lab data directory (default :func:`kafkalab.paths.data_dir`).
        descriptor_path: the cluster descriptor, loaded only when a scenario needs Kafka
            (default :func:`kafkalab.paths.default_descriptor_path`).

    Raises:
        ConfigError: an unknown key, or a value the workload model refuses, named as the
            caller calls it (``--messages must be at least 1, got 0``).
        ClusterError: a Kafka scenario and no readable descriptor.
    """
    from kafkalab.cluster.flavors import load_descriptor
    from kafkalab.paths import data_dir as default_data_dir
    from kafkalab.paths import default_descriptor_path

    w = load_workload(workload)
    names = dict(option_names or {})
    given = {k: v for k, v in (overrides or {}).items() if v is not None and v != ""}
    unknown = sorted(set(given) - set(_OVERRIDABLE))
    if unknown:
        raise ConfigError(f"cannot override workload key {unknown[0]!r} "
                          f"(overridable: {', '.join(_OVERRIDABLE)})")
    if given:
        try:
            w = Workload.model_validate({**w.model_dump(), **given})
        except ValidationError as exc:
            err = exc.errors()[0]
            key = str(err["loc"][0]) if err["loc"] else "?"
            label = names.get(key, f"param {key}")
            ctx = err.get("ctx") or {}
            if err["type"] == "greater_than_equal":
                msg = f"{label} must be at least {ctx.get('ge')}, got {given.get(key)!r}"
            elif err["type"] == "less_than_equal":
                msg = f"{label} must be at most {ctx.get('le')}, got {given.get(key)!r}"
            else:
                msg = f"{label}: {err['msg']} (got {given.get(key)!r})"
            raise ConfigError(msg) from None
    chosen = [str(s) for s in (scenarios or w.scenarios)]
    chosen_payloads = [str(p) for p in (payloads or w.payloads)]
    chosen_profiles = [str(p) for p in (profiles or w.profiles)]
    _check_names(chosen, chosen_payloads, chosen_profiles)  # local, before the cluster's file
    descriptor = None
    if needs_kafka(chosen):
        descriptor = load_descriptor(Path(descriptor_path) if descriptor_path
                                     else default_descriptor_path())
    kwargs: dict[str, Any] = {}
    if command is not None:
        kwargs["command"] = command
    return RunRequest(
        workload=w, profiles=chosen_profiles, payloads=chosen_payloads, scenarios=chosen,
        data_dir=Path(data_dir).absolute() if data_dir is not None else default_data_dir(),
        descriptor=descriptor, run_id=run_id, http_port=http_port, provision=provision,
        **kwargs,
    )


@dataclass
class RunResult:
    run_id: str
    status: str
    manifest_path: Path
    cells: list[CellResult]


def _check_names(scenarios: Sequence[str], payloads: Sequence[str],
                 profiles: Sequence[str]) -> dict[str, Profile]:
    """The scenarios, payloads and profiles exist (local files only); returns the profiles.

    Raises:
        ConfigError: the first unknown name.
    """
    for name in scenarios:
        get_scenario(name)
    known = payload_names()
    for p in payloads:
        if p not in known:
            raise ConfigError(f"unknown payload {p!r} (known: {', '.join(known)})")
    return {name: load_profile(name) for name in profiles}


def validate_request(req: RunRequest) -> dict[str, Profile]:
    """Everything that can be refused before a byte is sent; returns the loaded profiles."""
    w = req.workload
    profiles = _check_names(req.scenarios, req.payloads, req.profiles)
    kafka = needs_kafka(req.scenarios)
    if kafka:
        if req.descriptor is None:
            raise ClusterError("cluster not up: run `kafkalab cluster up` or pass --cluster FILE")
        for prof in profiles.values():
            check_profile(prof, req.scenarios, req.descriptor)
            rf = prof.topic.replication_factor
            if rf > req.descriptor.broker_count:
                raise ConfigError(
                    f"profile {prof.name} asks for replication.factor={rf} but the cluster has "
                    f"{req.descriptor.broker_count} broker(s); start 3 with "
                    "`kafkalab cluster up --brokers 3`"
                )
    images = images_dir()
    for payload in req.payloads:
        size = wire_size_bytes(load_body(payload, w.encoding, images))
        for prof in profiles.values():
            limit = prof.topic.max_message_bytes
            if kafka and size > limit:
                raise ConfigError(
                    f"payload {payload} is {size} bytes on the wire, larger than the topic's "
                    f"max.message.bytes={limit} (profile {prof.name}); raise topic.max_message_bytes"
                )
    return profiles


def topic_specs(workload: Workload, profiles: Iterable[Profile]) -> list[TopicSpec]:
    """The topic of each (workload, profile) pair: the workload's partitions, the profile's
    replication factor and topic configs."""
    from kafkalab.topics import TopicSpec

    return [TopicSpec(name=workload.topic_for(p.name), partitions=workload.partitions,
                      replication_factor=p.topic.replication_factor,
                      configs=p.topic.kafka_configs()) for p in profiles]


def start_run(req: RunRequest, progress: Progress = noop) -> dict[str, Any]:
    """Validate, check the cluster, provision topics and write the manifest with status
    ``running``. Returns ``{"run_id", "run_date", "cells": [...]}`` where each cell is
    ``{"scenario", "payload", "profile"}`` (Airflow maps one task over each).

    With the id of an existing run, the run is *re-opened*: its cells measured before stay
    (rows, fragments), the plan grows by the cells asked for, and the run's derived outputs
    are marked stale. The workload must be the one the run was measured with.

    Raises:
        ConfigError: the run id exists with another workload.
    """
    from kafkalab.topics import describe_topic, provision_topics

    profiles = validate_request(req)
    w = req.workload
    d = req.descriptor
    lab = LabData(req.data_dir)
    for rid in lab.stale_runs():
        progress(f"NOTE: run {rid} is stale: {lab.run_state_reason(rid)}")
    run_id = req.run_id or new_run_id()
    lab.refuse_live_owner(req.run_id, req.owner_kind)  # cheap checks before the cluster's
    if not req.supersede:
        _check_same_workload(lab.manifest(run_id) if req.run_id else None, run_id, w)
    if needs_kafka(req.scenarios) and d is not None:
        progress(f"checking {d.bootstrap_servers} …")
        check_reachable(d)
        if d.is_emulator:
            progress(f"NOTE: {emulator_note(d)}")
        if req.provision:
            for outcome in provision_topics(d, topic_specs(w, profiles.values())):
                progress(f"topic {outcome['topic']}: {outcome['action']}")
        _check_topic_limits(d, w, profiles, req.payloads, describe_topic)

    manifest = Manifest(
        run_id=run_id, started_at=utc_now_iso(), command=req.command,
        workload=w.model_dump(), profiles={k: v.model_dump() for k, v in profiles.items()},
        scenarios=req.scenarios, payloads=req.payloads,
        cluster=public_view(d) if d is not None else {"flavor": "none"},
        versions=runtime_versions(java=any(not scenario_spec(s).per_message for s in req.scenarios)),
        owner=owner(req.owner_kind), environment=environment(),
        logical_date=req.logical_date,
        broker_settings=(broker_settings(d) if d is not None and needs_kafka(req.scenarios)
                         else None),
    )
    with lab.starting(req.run_id, req.owner_kind):  # checked again, now under the run's lock
        previous = lab.manifest(run_id) if req.run_id else None
        if req.supersede and previous is not None and not _same_workload(previous, w):
            previous = _supersede(lab, previous, progress)
        _check_same_workload(previous, run_id, w)
        if previous is not None:
            manifest = _reopen(manifest, previous, lab)
            if manifest.stale_outputs:
                progress(f"run {run_id} re-opened: its {', '.join(manifest.stale_outputs)} are "
                         "stale until recomputed")
        manifest.write(req.data_dir)
    req.run_id = run_id
    cells = [{"scenario": sc, "payload": pl, "profile": pr}
             for pr in req.profiles for pl in req.payloads for sc in req.scenarios]
    return {"run_id": run_id, "run_date": manifest.run_date, "cells": cells}


def _same_workload(previous: Mapping[str, Any], w: Workload) -> bool:
    """Whether a run's manifest ``previous`` was measured with the workload ``w``."""
    return bool(previous.get("workload") == jsonable(w.model_dump()))


def _supersede(lab: LabData, previous: Mapping[str, Any], progress: Progress) -> dict[str, Any]:
    """Set aside a run's measurement made with another workload, so it is measured anew under
    its id (:attr:`RunRequest.supersede`): its samples files are renamed
    ``.superseded-<UTC stamp>-part-….parquet`` (hidden: never read or aggregated; ``make
    clean-data`` removes them) and its cell fragments and manifest are moved to
    ``runs/<run_id>/superseded-<UTC stamp>/``. Returns what the re-opened run keeps of it:
    when it was re-opened before, its logical date and its derived outputs' staleness."""
    import shutil
    import time

    run_id = str(previous["run_id"])
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    kept = lab.run_work_dir(run_id) / f"superseded-{stamp}"
    kept.mkdir(parents=True, exist_ok=True)
    for f in lab.run_sample_files(run_id):
        os.rename(f, f.with_name(f".superseded-{stamp}-{f.name}"))
    if lab.cell_fragments_dir(run_id).is_dir():
        shutil.move(lab.cell_fragments_dir(run_id), kept / "cells")
    shutil.copy2(lab.manifest_path(run_id), kept / "manifest.json")
    progress(f"run {run_id} was measured with workload "
             f"{(previous.get('workload') or {}).get('name')!r} and other settings: it is "
             f"measured anew, its earlier measurement set aside in {kept}")
    return {"run_id": run_id, "workload": None, "reopened_at": previous.get("reopened_at") or [],
            "stale_outputs": previous.get("stale_outputs") or [],
            "logical_date": previous.get("logical_date")}


def _check_same_workload(previous: Mapping[str, Any] | None, run_id: str, w: Workload) -> None:
    """A re-opened run is measured with the workload (and overrides) it was measured with.

    Raises:
        ConfigError: it was not.
    """
    if (previous is not None and previous.get("workload") is not None
            and previous.get("workload") != jsonable(w.model_dump())):
        raise ConfigError(
            f"run {run_id} was measured with workload {previous.get('workload', {}).get('name')!r} "
            "and other settings; re-run its cells with the same workload and overrides, or use a "
            "new --run-id")


def _union(old: Iterable[str], new: Iterable[str]) -> list[str]:
    out = list(old)
    out += [x for x in new if x not in out]
    return out


def _reopen(manifest: Manifest, previous: Mapping[str, Any], lab: LabData) -> Manifest:
    """The manifest of a re-opened run: the earlier start (its rows live under that run
    date), the union of both plans, and every derived output that exists marked stale. A
    superseded measurement (:func:`_supersede`) leaves no start, plan or settings to keep."""
    manifest.started_at = str(previous.get("started_at") or manifest.started_at)
    manifest.scenarios = _union(previous.get("scenarios") or [], manifest.scenarios)
    manifest.payloads = _union(previous.get("payloads") or [], manifest.payloads)
    manifest.profiles = {**(previous.get("profiles") or {}), **manifest.profiles}
    manifest.client_settings = dict(previous.get("client_settings") or {})
    manifest.reopened_at = [*(previous.get("reopened_at") or []), utc_now_iso()]
    manifest.stale_outputs = sorted(set(previous.get("stale_outputs") or [])
                                    | set(lab.derived_outputs(manifest.run_id)))
    manifest.logical_date = manifest.logical_date or previous.get("logical_date")
    return manifest


def owner(kind: str) -> dict[str, Any]:
    """Who drives a run: host, process id and kind (see :attr:`RunRequest.owner_kind`)."""
    import socket

    return {"host": socket.gethostname(), "pid": os.getpid(), "kind": kind}


def measure_cell(req: RunRequest, scenario: str, payload: str, profile: str,
                 progress: Progress = noop) -> CellResult:
    """Measure one cell of a started run. Its rows are streamed to the cell's file while it
    is measured, and a fragment with its outcome and settings is written before this
    returns (so a later failure loses nothing). Re-measuring a cell replaces exactly that
    cell's rows."""
    assert req.run_id, "start_run first"
    manifest = Manifest.load(req.data_dir, req.run_id)
    prof = load_profile(profile)
    body = load_body(payload, req.workload.encoding, images_dir())
    lab = LabData(req.data_dir)
    final = lab.cell_file(manifest.run_date, manifest.run_id, scenario, payload, profile)
    recover(final)
    result, settings, host = _measure(req, manifest, prof, payload, body, scenario,
                                      lab.run_work_dir(req.run_id), attempt_path(final), progress)
    fragment = {"scenario": scenario, "payload": payload, "profile": profile,
                "status": result.status, "rows": result.rows, "reason": result.reason,
                "client_settings": settings, "measured_at": utc_now_iso(), "host": host}
    previous = lab.cell_fragment(req.run_id, scenario, payload, profile)
    earlier_complete = bool(previous and previous.get("status") == "complete" and final.exists())
    replace = replaces(earlier_complete=earlier_complete,
                       attempt_complete=result.status == "complete", attempt_has_data=result.rows > 0)
    kept = settle(final, replace=replace)
    if replace or previous is None:
        fragment["attempts"] = list((previous or {}).get("attempts") or [])
        lab.write_cell_fragment(req.run_id, fragment)
        return result
    attempt = {k: fragment[k] for k in ("status", "rows", "reason", "measured_at")}
    attempt["kept_file"] = kept.name if kept is not None else None
    lab.write_cell_fragment(req.run_id, {**previous, "attempts": [
        *(previous.get("attempts") or []), attempt]})
    note = (f"the earlier {previous.get('status')} measurement ({previous.get('rows')} rows, "
            f"{previous.get('measured_at')}) is kept"
            + (f"; this attempt's {result.rows} rows are in {kept.name}" if kept else ""))
    progress(f"[{scenario} {payload} {profile}] {note}")
    result.reason = f"{result.reason}; {note}" if result.reason else note
    return result


def finish_run(data_dir: Path, run_id: str, error: str | None = None) -> dict[str, Any]:
    """Merge the cells' fragments into the manifest and close it: ``complete`` when every
    planned cell completed or was skipped; ``failed`` when the run itself broke (``error``)
    before any cell completed, or every cell failed; else ``incomplete``."""
    with LabData(data_dir).run_lock(run_id):
        return _finish_run(data_dir, run_id, error)


def _finish_run(data_dir: Path, run_id: str, error: str | None) -> dict[str, Any]:
    manifest = Manifest.load(data_dir, run_id)
    frags = LabData(data_dir).cell_fragments(run_id)
    order = {(sc, pl, pr): i for i, (pr, pl, sc) in enumerate(
        (pr, pl, sc) for pr in manifest.profiles for pl in manifest.payloads for sc in manifest.scenarios)}
    frags.sort(key=lambda f: order.get((f["scenario"], f["payload"], f["profile"]), 1 << 30))
    manifest.client_settings = {**manifest.client_settings, **{
        f"{f['scenario']}/{f['profile']}": f["client_settings"]
        for f in frags if f.get("client_settings")}}
    manifest.cells = [{k: v for k, v in f.items() if k != "client_settings"} for f in frags]
    planned = len(order)
    failed = [f for f in frags if f["status"] == "failed"]
    good = [f for f in frags if f["status"] in ("complete", "skipped")]
    if len(good) == planned and not error:
        manifest.status = "complete"
    elif not good and (error or failed):
        manifest.status = "failed"
    else:
        manifest.status = "incomplete"
    problems = [f"{f['scenario']}/{f['payload']}/{f['profile']}: {f['reason']}" for f in failed]
    if len(frags) < planned:
        problems.append(f"{planned - len(frags)} of {planned} cells were not measured")
    if error:
        problems.insert(0, error)
    manifest.error = "; ".join(problems) or None
    manifest.ended_at = utc_now_iso()
    manifest.environment = {**manifest.environment, "load_avg_end": load_avg()}
    manifest.write(data_dir)
    return asdict(manifest)


def execute(req: RunRequest, progress: Progress) -> RunResult:
    """The CLI's run: start, every cell in order, finish — the manifest is closed whatever
    happens after it was opened (an interrupt, a failed write)."""
    plan = start_run(req, progress)
    run_id = plan["run_id"]
    results: list[CellResult] = []
    error: str | None = None
    interrupted = False
    try:
        for cell in plan["cells"]:
            results.append(measure_cell(req, cell["scenario"], cell["payload"], cell["profile"], progress))
    except KeyboardInterrupt:
        error, interrupted = "interrupted", True
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        finish_run(req.data_dir, run_id, error)
        raise
    manifest = finish_run(req.data_dir, run_id, error)
    if interrupted:
        raise KeyboardInterrupt
    return RunResult(run_id=run_id, status=manifest["status"],
                     manifest_path=LabData(req.data_dir).manifest_path(run_id), cells=results)


def _check_topic_limits(d: ClusterDescriptor, w: Workload, profiles: dict[str, Profile],
                        payloads: list[str], describe: Callable[..., dict[str, Any]]) -> None:
    """Refuse a payload larger than the *existing* topic's max.message.bytes (when known)."""
    images = images_dir()
    for prof in profiles.values():
        topic = w.topic_for(prof.name)
        info = describe(d, topic)
        limit_value = info.get("max_message_bytes") or (info.get("configs") or {}).get("max.message.bytes")
        if not limit_value:
            continue
        limit = int(limit_value)
        for payload in payloads:
            size = wire_size_bytes(load_body(payload, w.encoding, images))
            if size > limit:
                raise ConfigError(
                    f"payload {payload} is {size} bytes on the wire, larger than topic {topic}'s "
                    f"max.message.bytes={limit}"
                )


def cell_workload(req: RunRequest, payload: str) -> Workload:
    """The workload a cell of ``payload`` runs with: the run's, without first-message probes
    when ``first_message_probes_at`` is ``first-payload`` and ``payload`` is not the run's
    first."""
    w = req.workload
    if w.first_message_probes_at == "first-payload" and payload != req.payloads[0]:
        return w.model_copy(update={"first_message_probes": 0})
    return w


def _measure(req: RunRequest, manifest: Manifest, prof: Profile, payload: str, body: bytes,
             scenario_name: str, work_dir: Path, path: Path, progress: Progress
             ) -> tuple[CellResult, dict[str, str], dict[str, Any] | None]:
    """Measure one cell, streaming its rows to ``path`` (the cell's attempt file,
    :func:`kafkalab.attempts.attempt_path`; no file when no row was measured); returns the
    result, the effective client settings the scenario used and how busy the host was
    over the scenario's run (:class:`kafkalab.host.HostWindow`: snapshots just before and
    just after it, nothing inside the timed loop; None when unknown)."""
    d = req.descriptor
    scenario = get_scenario(scenario_name)
    is_kafka = scenario_spec(scenario_name).uses_kafka
    cell = Cell(run_id=manifest.run_id, workload=cell_workload(req, payload), profile=prof,
                payload=payload,
                body=body, topic=req.workload.topic_for(prof.name) if is_kafka else None,
                descriptor=d if is_kafka else None, work_dir=work_dir, http_port=req.http_port)
    label = f"[{scenario_name} {payload} {prof.name}]"

    def cell_progress(msg: str) -> None:
        progress(f"{label} {msg}")

    emulator = bool(d is not None and d.is_emulator and is_kafka)
    settings = {str(k): str(v) for k, v in scenario.client_settings(cell).items()}

    def context() -> CellContext:  # read when the first rows are written (the tool's version is known then)
        return CellContext(
            run_id=manifest.run_id, scenario=scenario_name, client=scenario.client,
            client_version=scenario.client_version(), profile=prof.name,
            workload=req.workload.name, payload=payload, payload_encoding=req.workload.encoding,
            payload_bytes=wire_size_bytes(body),
            cluster_flavor=(d.flavor if (d is not None and is_kafka) else "http"),
            broker_version=(d.version if (d is not None and is_kafka) else "n/a"),
            broker_is_emulator=emulator, topic=cell.topic,
            planned_messages=req.workload.messages,
            message_timeout_ms=req.workload.message_timeout_s * 1000.0,
            broker_count=d.broker_count if (d is not None and is_kafka) else None,
            client_settings=settings_json(settings),
        )

    writer = CellWriter(path, context)
    cell.sink = writer
    cell_progress("start")
    status, reason = "complete", None
    window = HostWindow.begin(d.servers if (d is not None and is_kafka) else ())
    try:
        scenario.run(cell, cell_progress)
    except Skipped as exc:
        status, reason = "skipped", str(exc)
        cell_progress(f"skipped: {reason}")
    except LabError as exc:
        status, reason = "failed", str(exc)
        cell_progress(f"FAILED: {reason}")
    except Exception as exc:  # a client library error: keep the run going, record it
        status, reason = "failed", f"{type(exc).__name__}: {exc}"
        cell_progress(f"FAILED: {reason}")
    host = window.end()
    try:
        for tracker in cell.trackers:  # rows still held (lost, unacked) are written now
            tracker.finish()
        rows = writer.close()
    except OSError as exc:  # the rows could not be written (disk full): the cell failed
        writer.abort()
        rows, status = 0, "failed"
        reason = f"could not write {path.name.removeprefix(ATTEMPT_PREFIX)}: {exc}" + (f" (after: {reason})" if reason else "")
        cell_progress(f"FAILED: {reason}")
    summary = summarize_rows(read_cell(path).to_pylist()) if rows else summarize_rows([])
    if status == "failed" and rows:
        reason = f"{reason} ({rows} rows measured before the failure are kept)"
    if status == "complete":
        bad = summary["lost"] + summary["errors"]
        cell_progress(f"done: {rows} rows" + (f", {bad} lost/failed" if bad else ""))
    return CellResult(scenario=scenario_name, payload=payload, profile=prof.name, status=status,
                      payload_bytes=wire_size_bytes(body), rows=rows, reason=reason,
                      is_emulator=emulator, summary=summary), settings, host
