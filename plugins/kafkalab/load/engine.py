"""Runs load cells: provision, start the consumer shards, hold the start barrier, produce
on schedule, drain, and write the cell's files and summary.

A load *run* is a manifest (``runs/<run_id>.json``, ``kind: "load"``) plus one directory per
cell under ``load/`` (:mod:`kafkalab.load.files`). Like latency runs, a cell is measured by
one call (:func:`run_load_cell`, an Airflow mapped task), its rows are on disk as they are
measured, and re-running a cell of an existing run replaces exactly that cell.

Where the consumer shards run (``shard_placement``): ``subprocess`` (the default) starts them
as processes of the cell's own process; ``tasks`` starts none and waits at the start barrier
for shards started by someone else (the ``consume_load_shard`` Airflow tasks, which may run on
other workers that share the data directory); the two talk only through the cell directory.

Clocks: every timestamp is CLOCK_MONOTONIC of the producer's host. Shards of the same host
read the same clock, so receive minus send subtracts exactly; a shard on another host maps
its clock through both hosts' wall clocks and the cell is marked ``cross_host_clock``
(:mod:`kafkalab.load.clock`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.cluster.descriptor import (
    ClusterDescriptor,
    emulator_note,
    librdkafka_config,
    load_descriptor,
    public_view,
)
from kafkalab.config import load_profile
from kafkalab.config.mapping import (
    check_profile,
    confluent_consumer_config,
    confluent_producer_config,
    kafka_python_producer_config,
    settings_view,
)
from kafkalab.config.models import Profile
from kafkalab.errors import ClusterError, ConfigError, RunError
from kafkalab.kinds import LOAD, kind_of
from kafkalab.load import clock, files
from kafkalab.load.producer import (
    ConfluentClient,
    KafkaPythonClient,
    ProducerPlan,
    SendLog,
    load_nonce,
    run_open_loop,
)
from kafkalab.load.shard import plan_path, ready_path, result_path, start_path, stop_path
from kafkalab.load.spec import LoadCellSpec, check_budget
from kafkalab.paths import default_descriptor_path, images_dir, plugins_dir
from kafkalab.payloads import load_body, wire_size_bytes
from kafkalab.progress import Progress, noop
from kafkalab.run_ids import new_run_id
from kafkalab.samples import Manifest, environment, runtime_versions, utc_now_iso
from kafkalab.scenarios.base import now_ns, steady_heap
from kafkalab.store import LabData, atomic_write_json, read_json

PRODUCER_ID = 0
"""One producer per cell (the id is in every message, for multi-producer cells later)."""

BARRIER_TIMEOUT_S = 60.0
"""How long the producer waits for every shard to be positioned (plus 0.2 s per consumer)."""

TASKS_BARRIER_TIMEOUT_S = 180.0
"""The same, when the shards are Airflow tasks: they must first be scheduled and queued."""

SHARD_PLACEMENTS = ("subprocess", "tasks")
"""Where a cell's consumer shards run: processes of the cell, or tasks started elsewhere."""

START_MARGIN_NS = 100_000_000
"""t0 is set this far after the barrier, so every shard sees the start before message 0."""

CLIENT_BOUND_CPU_FRAC = 0.8
"""A load-generator process above this share of one core makes the cell ``client_bound``."""


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


def topic_name(spec: LoadCellSpec) -> str:
    """The topic of a load cell: one per profile and partition count (consumers start at the
    log end, so earlier cells' records are never read)."""
    return f"klab-load-{effective_profile(spec).name}-p{spec.partitions}"


def effective_profile(spec: LoadCellSpec) -> Profile:
    """The cell's profile with its acks and max-in-flight overrides applied."""
    prof = load_profile(spec.profile)
    update: dict[str, object] = {"acks": spec.effective_acks(prof.producer.acks)}
    if spec.max_in_flight is not None:
        update["max_in_flight"] = spec.max_in_flight
    return prof.model_copy(update={"producer": prof.producer.model_copy(update=update)})


def _descriptor(path: Path | None) -> ClusterDescriptor:
    return load_descriptor(path or default_descriptor_path())


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
    d = _descriptor(req.descriptor_path)
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


def run_load_cell(data_dir: Path | str | None, run_id: str, spec: LoadCellSpec | dict[str, Any],
                  descriptor_path: Path | None = None, progress: Progress = noop,
                  provision: bool = True, *, topic: str | None = None,
                  cell_path: Path | None = None,
                  on_start: Callable[[int], None] | None = None,
                  shard_placement: str = "subprocess",
                  placement_token: str | None = None) -> dict[str, Any]:
    """Measure one load cell of a started run; returns its summary (the ``--json`` object).

    The fault engine (:mod:`kafkalab.faults.engine`) reuses the cell with three hooks:
    ``topic`` (a topic it provisioned itself; default :func:`topic_name`), ``cell_path`` (the
    directory for the cell's files; default the load tree's) and ``on_start`` (called with the
    schedule's ``t0_ns`` right before the first message is due, outside any timed interval).

    ``shard_placement="tasks"`` starts no shard: the cell writes its plan (with
    ``placement_token``, so a shard task can tell this attempt's plan from an older one) and
    waits for shards started elsewhere (:func:`kafkalab.load.shard.main`, e.g. by the
    ``consume_load_shard`` Airflow tasks) at the start barrier, then for their result files.

    The cell's files are written whatever happens: on an error or Ctrl-C the producer's
    log, the shards' rows and a ``cell.json`` with status ``failed``/``interrupted`` stay.

    Raises:
        ConfigError, ClusterError: bad input or an unreachable cluster (nothing measured).
        RunError: the cell failed while measuring (what was measured is kept).
    """
    spec = spec if isinstance(spec, LoadCellSpec) else LoadCellSpec(**spec)
    if shard_placement not in SHARD_PLACEMENTS:
        raise ConfigError(f"shard placement {shard_placement!r}: choose one of "
                          + ", ".join(SHARD_PLACEMENTS))
    external = shard_placement == "tasks"
    lab = LabData(data_dir)
    manifest = Manifest.load(lab.root, run_id)
    d = _descriptor(descriptor_path)
    prof = effective_profile(spec)
    acks = prof.producer.acks
    body = load_body(spec.payload, spec.encoding, images_dir())
    wire = wire_size_bytes(body)
    check_budget(spec, wire)
    topic = topic or topic_name(spec)
    if provision:
        from kafkalab.topics import TopicSpec, provision_topics

        provision_topics(d, [TopicSpec(name=topic, partitions=spec.partitions,
                                       replication_factor=prof.topic.replication_factor,
                                       configs=prof.topic.kafka_configs())])
    cell_id = spec.cell_id(acks)
    cell = cell_path or files.cell_dir(lab.root, manifest.run_date, run_id, cell_id)
    cell.mkdir(parents=True, exist_ok=True)
    for old in [*ready_path.every(cell), *result_path.every(cell), start_path(cell),
                stop_path(cell), plan_path(cell)]:
        old.unlink(missing_ok=True)
    logs = lab.run_work_dir(run_id) / "load" / cell_id
    logs.mkdir(parents=True, exist_ok=True)
    steady_heap()

    nonce = load_nonce(os.urandom(4), PRODUCER_ID)
    public = d.model_copy(update={"secret_env": {}})
    consumer_cfg = confluent_consumer_config(librdkafka_config(public), prof, None)
    fetch_kb = int(consumer_cfg["fetch.max.bytes"]) // 1024
    # N clients per process: a small pre-fetch queue each (queued.min.messages), and a short
    # fetch.queue.backoff.ms. librdkafka's default backoff (1 s) pauses fetching for a whole
    # second whenever a client's queue is above queued.min.messages; one hiccup of the
    # application then locks the consumer into a 1 s fetch cycle (e2e p50 ~0.5-1 s,
    # found by `make bench`, part load).
    consumer_cfg.update({"enable.auto.commit": False, "queued.min.messages": 1000,
                         "queued.max.messages.kbytes": fetch_kb + 1024,
                         "fetch.queue.backoff.ms": 1})
    if spec.client == "confluent-kafka":
        producer_cfg: dict[str, Any] = confluent_producer_config(librdkafka_config(d), prof)
        producer_cfg["message.timeout.ms"] = int(spec.message_timeout_s * 1000)
    else:
        from kafkalab.cluster.descriptor import kafka_python_config

        producer_cfg = kafka_python_producer_config(kafka_python_config(d), prof)
    client_settings = settings_view({"producer": producer_cfg, "consumer": consumer_cfg},
                                    secret_keys=d.secret_env)
    meta: dict[str, Any] = {
        "schema_version": files.LOAD_SCHEMA_VERSION, "cell_id": cell_id, "run_id": run_id,
        "run_date": manifest.run_date, "status": "running", "error": None,
        "spec": spec.model_dump(), "acks": acks, "topic": topic, "partitions": spec.partitions,
        "payload_bytes": wire,
        "cluster": {"flavor": d.flavor, "version": d.version, "is_emulator": d.is_emulator,
                    "broker_count": d.broker_count},
        "client": spec.client, "client_version": _client_version(spec.client),
        "client_settings": client_settings, "t0_ns": None, "measure_start_ns": None,
        "stop_ts_ns": None, "drain_end_ts_ns": None, "pause": None, "processes": [],
        "client_bound": False, "broker_cpu_frac": None, "started_at": utc_now_iso(),
        "shard_placement": shard_placement, "placement_token": placement_token,
        "cross_host_clock": False, "barrier_wait_s": None,
    }
    atomic_write_json(files.cell_json_path(cell), meta)
    barrier_s = (TASKS_BARRIER_TIMEOUT_S if external else BARRIER_TIMEOUT_S) + 0.2 * spec.consumers
    plan = {"spec": spec.model_dump(), "cell_dir": str(cell), "topic": topic,
            "partitions": spec.partitions, "nonce": nonce.hex(), "consumer_config": consumer_cfg,
            "descriptor_path": str(descriptor_path or default_descriptor_path()),
            "barrier_timeout_s": barrier_s, "clock": clock.anchor(),
            "shard_placement": shard_placement, "placement_token": placement_token}
    # cell.json (status running) before the plan: a shard task that finds this attempt's plan
    # also finds its cell running (shard_turn).
    atomic_write_json(plan_path(cell), plan)
    progress(f"{cell_id}: {spec.consumers} consumer(s) in {spec.shards} "
             f"{'shard task(s)' if external else 'process(es)'}, "
             f"{spec.rate_msgs_per_s:g} msg/s × {spec.duration_s:g} s "
             f"(warm-up {spec.warmup_s:g} s), topic {topic}")

    procs: list[subprocess.Popen[bytes]] = []
    log = SendLog(spec.intended_messages, _schedule(spec, 0))
    status, error = "failed", None
    interrupted = False
    try:
        barrier0 = time.monotonic()
        procs = [] if external else _spawn_shards(spec, cell, logs)
        _await_barrier(spec, cell, procs, logs, barrier_s, external)
        meta["barrier_wait_s"] = round(time.monotonic() - barrier0, 3)
        client = (ConfluentClient(producer_cfg, log) if spec.client == "confluent-kafka"
                  else KafkaPythonClient(producer_cfg, log))
        broker_cpu0 = _broker_cpu(d)
        host0 = host_cpu_times()
        cpu0, wall0 = _cpu(), time.monotonic()
        t0 = now_ns() + START_MARGIN_NS
        log.intended_ts_ns[:] = _schedule(spec, t0)
        meta["t0_ns"] = t0
        meta["measure_start_ns"] = int(log.intended_ts_ns[spec.warmup_messages])
        if spec.pause_at_s is not None and spec.pause_for_s is not None:
            ps = t0 + int(spec.pause_at_s * 1e9)
            meta["pause"] = {"start_ns": ps, "end_ns": ps + int(spec.pause_for_s * 1e9)}
        atomic_write_json(start_path(cell), {"t0_ns": t0})
        if on_start is not None:
            on_start(t0)
        plan_p = ProducerPlan(topic=topic, partitions=spec.partitions,
                              rate_msgs_per_s=spec.rate_msgs_per_s, n=spec.intended_messages,
                              warmup_messages=spec.warmup_messages, body=body,
                              base64_body=spec.encoding == "base64", nonce=nonce,
                              send_deadline_s=spec.duration_s + max(2.0, 0.1 * spec.duration_s),
                              message_timeout_s=spec.message_timeout_s)

        def tick(sent: int, t: int) -> None:
            c = log.counts()
            delay_ms = (t - int(log.intended_ts_ns[sent - 1])) / 1e6
            progress(f"  {(t - t0) / 1e9:5.1f} s  sent {sent}/{spec.intended_messages}  "
                     f"acked {c['acked']}  publish delay {delay_ms:.1f} ms")

        try:
            stop_ts = run_open_loop(plan_p, client, log, t0, progress, on_tick=tick)
        except KeyboardInterrupt:
            interrupted = True
            stop_ts = now_ns()
        cpu_s, wall_s = _cpu() - cpu0, time.monotonic() - wall0
        meta["stop_ts_ns"] = stop_ts
        meta["broker_cpu_frac"] = _broker_cpu_frac(broker_cpu0, _broker_cpu(d), wall_s)
        meta["host_cpu_busy_frac"] = host_busy_frac(host0, host_cpu_times())
        meta["host_cpu_count"] = os.cpu_count()
        meta["processes"].append({"role": "producer", "shard": None, "pid": os.getpid(),
                                  "host": _host(), "cpu_s": round(cpu_s, 4),
                                  "wall_s": round(wall_s, 4),
                                  "cpu_frac": round(cpu_s / wall_s, 4) if wall_s > 0 else None})
        targets = _log_end_offsets(d, topic, spec.partitions, consumer_cfg)
        atomic_write_json(stop_path(cell), {"stop_ts_ns": stop_ts, "targets": targets})
        if interrupted:
            raise KeyboardInterrupt
        shard_results = _await_shards(spec, cell, procs, logs, external)
        meta["drain_end_ts_ns"] = now_ns()
        meta["processes"] += [{k: r.get(k) for k in ("role", "shard", "pid", "host", "cpu_s",
                                                      "wall_s", "cpu_frac")}
                              for r in shard_results]
        meta["shards"] = shard_results
        meta["cross_host_clock"] = any((r.get("clock") or {}).get("basis") == clock.WALL_CLOCK
                                       for r in shard_results)
        failed = [r for r in shard_results if r.get("status") != "complete"]
        if failed:
            raise RunError(f"{cell_id}: consumer shard {failed[0].get('shard')} "
                           f"failed: {failed[0].get('error')}")
        status = "complete"
    except KeyboardInterrupt:
        status, error = "interrupted", "interrupted (Ctrl-C): what was measured is kept"
        _stop_shards(cell, procs, meta, spec.shards if external else 0)
        raise
    except (ConfigError, ClusterError, RunError) as exc:
        error = str(exc)
        _stop_shards(cell, procs, meta, spec.shards if external else 0)
        raise
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        _stop_shards(cell, procs, meta, spec.shards if external else 0)
        raise RunError(f"{cell_id}: {error}") from exc
    finally:
        files.write_table(files.sends_path(cell), log.columns(PRODUCER_ID, spec.warmup_messages),
                          files.SENDS_SCHEMA)
        _remove_extra_shard_files(cell, spec.shards)
        meta["status"], meta["error"] = status, error
        meta["client_bound"] = any((p.get("cpu_frac") or 0) > CLIENT_BOUND_CPU_FRAC
                                   for p in meta["processes"])
        meta["ended_at"] = utc_now_iso()
        try:
            from kafkalab.load.summary import summarize_cell

            atomic_write_json(files.cell_json_path(cell), meta)
            meta["summary"] = summarize_cell(cell)
        except Exception as exc:  # a summary that cannot be made must not lose the rows
            meta["summary"] = {"cell_id": cell_id, "status": status,
                               "error": f"summary failed: {type(exc).__name__}: {exc}"}
        atomic_write_json(files.cell_json_path(cell), meta)
    return dict(meta["summary"])


def _schedule(spec: LoadCellSpec, t0: int) -> Any:
    import numpy as np

    return t0 + (np.arange(spec.intended_messages, dtype=np.int64)
                 * spec.interval_ns).astype(np.int64)


def _client_version(client: str) -> str:
    if client == "confluent-kafka":
        import confluent_kafka

        return f"{confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]})"
    from importlib.metadata import version

    return version("kafka-python")


def _host() -> str:
    import socket

    return socket.gethostname()


def _cpu() -> float:
    from kafkalab.load.shard import cpu_seconds

    return cpu_seconds()


def _shard_env() -> dict[str, str]:
    """The environment of a shard process: this one's, with the lab's ``plugins/`` first on
    ``PYTHONPATH`` (``python -m kafkalab.load.shard`` must import the same package)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(plugins_dir()), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _spawn_shards(spec: LoadCellSpec, cell: Path, logs: Path) -> list[subprocess.Popen[bytes]]:
    env = _shard_env()
    procs = []
    for k in range(spec.shards):
        out = open(logs / f"shard-{k:03d}.log", "wb")  # noqa: SIM115 - owned by the child
        procs.append(subprocess.Popen([sys.executable, "-m", "kafkalab.load.shard",
                                       str(plan_path(cell)), str(k)],
                                      stdout=out, stderr=subprocess.STDOUT, env=env))
        out.close()
    return procs


def _shard_failure(cell: Path, k: int, logs: Path) -> str:
    doc = read_json(result_path(cell, k))
    if isinstance(doc, dict) and doc.get("error"):
        return str(doc["error"])
    from kafkalab.procs import last_line

    return last_line(logs / f"shard-{k:03d}.log") or "exited"


def _await_barrier(spec: LoadCellSpec, cell: Path, procs: list[subprocess.Popen[bytes]],
                   logs: Path, timeout_s: float, external: bool = False) -> None:
    """Wait until every shard has positioned all its consumers at the log end.

    A shard that stopped before it was ready fails the cell at once: a process that exited
    (``subprocess``) or a result file written without a ready file (``tasks``).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        missing = [k for k in range(spec.shards) if not ready_path(cell, k).exists()]
        if not missing:
            return
        for k in missing:
            ended = (procs[k].poll() is not None) if not external else result_path(cell, k).exists()
            if ended and not ready_path(cell, k).exists():
                raise RunError(f"consumer shard {k} stopped before it was ready: "
                               f"{_shard_failure(cell, k, logs)}")
        if time.monotonic() > deadline:
            if external:
                raise RunError(
                    f"consumer shard task(s) {', '.join(map(str, missing))} did not join within "
                    f"{timeout_s:.0f} s (start barrier): shard placement 'tasks' needs a running "
                    f"scheduler with {spec.shards + 1} free task slots and room in the shard "
                    f"pool; `airflow dags test` runs one task at a time, use 'subprocess' there")
            raise RunError(f"consumers not positioned within {timeout_s:.0f} s (start barrier)")
        time.sleep(0.02)


def _await_shards(spec: LoadCellSpec, cell: Path, procs: list[subprocess.Popen[bytes]],
                  logs: Path, external: bool = False) -> list[dict[str, Any]]:
    deadline = time.monotonic() + spec.drain_s + 60
    if external:  # shard tasks elsewhere: their result files are all there is
        while time.monotonic() < deadline and not all(
                result_path(cell, k).exists() for k in range(spec.shards)):
            time.sleep(0.05)
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    out = []
    for k in range(spec.shards):
        doc = read_json(result_path(cell, k))
        out.append(doc if isinstance(doc, dict) else
                   {"shard": k, "status": "failed", "error": _shard_failure(cell, k, logs)})
    return out


def _stop_shards(cell: Path, procs: list[subprocess.Popen[bytes]], meta: dict[str, Any],
                 external_shards: int = 0) -> None:
    """Tell running shards to stop (they write their rows and exit), then make sure.

    ``external_shards``: shards started elsewhere (tasks); they are told through the stop
    file and waited for (their result files) up to 25 s; they cannot be killed from here.
    """
    if not procs and not external_shards:
        return
    if not stop_path(cell).exists():
        atomic_write_json(stop_path(cell), {"stop_ts_ns": now_ns(), "targets": {}})
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    if external_shards:
        joined = [k for k in range(external_shards) if ready_path(cell, k).exists()]
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline and not all(result_path(cell, k).exists()
                                                      for k in joined):
            time.sleep(0.05)
    for k in range(max(len(procs), external_shards)):
        doc = read_json(result_path(cell, k))
        if isinstance(doc, dict):
            meta["processes"].append({key: doc.get(key) for key in
                                      ("role", "shard", "pid", "host", "cpu_s", "wall_s", "cpu_frac")})


def shard_turn(cell: Path, shard: int, token: str) -> str:
    """Whether shard ``shard`` of the cell in ``cell`` (placement ``tasks``) should join now.

    Returns:
        ``"join"``: this attempt's plan (its ``placement_token`` is ``token``) is up, the cell
        is running and waits at the start barrier, and this shard has not joined yet;
        ``"wait"``: no plan of this attempt yet (an earlier cell is still measuring);
        ``"done"``: this shard already joined this attempt and wrote its result;
        ``"ended"``: this attempt's cell ended (or passed its barrier) without this shard.
    """
    plan = read_json(plan_path(cell))
    meta = read_json(files.cell_json_path(cell))
    if not isinstance(plan, dict) or plan.get("placement_token") != token \
            or not isinstance(meta, dict) or meta.get("placement_token") != token:
        return "wait"
    if ready_path(cell, shard).exists():
        return "done" if result_path(cell, shard).exists() else "ended"
    if meta.get("status") != "running" or start_path(cell).exists() \
            or result_path(cell, shard).exists():
        return "ended"
    return "join"


def run_shard_process(cell: Path, shard: int, progress: Progress = noop) -> dict[str, Any]:
    """Run shard ``shard`` of the cell in ``cell`` as a child process
    (``python -m kafkalab.load.shard``) until it ends; its output goes to ``progress`` line by
    line. Returns its result file (``status`` ``complete``, ``failed`` or ``interrupted``)."""
    env = _shard_env()
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab.load.shard", str(plan_path(cell)),
                             str(shard)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            progress(line.rstrip())
        proc.wait()
    except BaseException:
        proc.send_signal(signal.SIGINT)  # the shard writes its rows and its result, then exits
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    doc = read_json(result_path(cell, shard))
    if isinstance(doc, dict):
        return doc
    return {"shard": shard, "status": "failed",
            "error": f"the shard process exited with code {proc.returncode} and no result"}


def _remove_extra_shard_files(cell: Path, shards: int) -> None:
    """A re-run with fewer shards must not leave the earlier run's extra files behind."""
    for kind in (files.receipts_path, files.lag_path):
        for f in kind.every(cell):
            k = kind.shard_of(f)
            if k is not None and k >= shards:
                f.unlink(missing_ok=True)


def _log_end_offsets(d: ClusterDescriptor, topic: str, partitions: int,
                     consumer_cfg: dict[str, Any]) -> dict[str, int]:
    """Each partition's high watermark now: where the consumers must get to when draining."""
    from confluent_kafka import Consumer, TopicPartition

    cfg = {k: v for k, v in consumer_cfg.items()}
    cfg.update(librdkafka_config(d))
    cfg["group.id"] = "kafkalab-load-watermarks"
    c = Consumer(cfg)
    try:
        out = {}
        for p in range(partitions):
            try:
                _lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
            except Exception:
                continue  # unknown: the shards drain for drain_s
            out[str(p)] = int(hi)
        return out
    finally:
        c.close()


def _broker_cpu(d: ClusterDescriptor) -> dict[int, float] | None:
    """CPU seconds of the brokers that run on this host (by pid, found by listening port);
    None for a remote cluster."""
    from kafkalab.procs import pid_listening_on

    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for server in d.servers:
        host, _, port = server.rpartition(":")
        if host not in ("127.0.0.1", "localhost") or not port.isdigit():
            continue
        pid = pid_listening_on(int(port))
        if pid is None:
            continue
        try:
            fields_ = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            out[pid] = (int(fields_[11]) + int(fields_[12])) / tick
        except (OSError, ValueError, IndexError):
            continue
    return out or None


def host_cpu_times() -> tuple[int, int] | None:
    """``(busy, total)`` jiffies of every CPU of this host (``/proc/stat``), or None."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    values = [int(v) for v in first[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return sum(values) - idle, sum(values)


def host_busy_frac(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """Share of the host's CPU capacity that was busy between two readings (1.0: every core
    busy): whoever used it — the clients, the brokers, or anything else on the machine."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return round((after[0] - before[0]) / (after[1] - before[1]), 4)


def _broker_cpu_frac(before: dict[int, float] | None, after: dict[int, float] | None,
                     wall_s: float) -> float | None:
    if not before or not after or wall_s <= 0:
        return None
    used = sum(after[p] - before[p] for p in before if p in after)
    return round(used / wall_s, 4)


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
        doc = read_json(files.cell_json_path(files.cell_dir(lab.root, manifest.run_date, run_id,
                                                            spec.cell_id(acks))))
        if not isinstance(doc, dict):
            statuses.append("missing")
            continue
        statuses.append(str(doc.get("status")))
        cells.append(dict(doc.get("summary") or {"cell_id": doc.get("cell_id"),
                                                 "status": doc.get("status")}))
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
