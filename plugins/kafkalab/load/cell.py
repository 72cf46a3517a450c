"""One load cell: provision, start the consumer shards, hold the start barrier, produce on
schedule, drain, and write the cell's files and summary (:func:`run_load_cell`).

A cell is measured by one call (an Airflow mapped task, a step of ``kafkalab load`` or
``kafkalab maxrate``, a fault trial's load), its rows are on disk as they are measured, and
re-running a cell of an existing run replaces exactly that cell. Its consumer shards run
where ``shard_placement`` says (:mod:`kafkalab.load.placement`).

Clocks: every timestamp is CLOCK_MONOTONIC of the producer's host. Shards of the same host
read the same clock, so receive minus send subtracts exactly; a shard on another host maps
its clock through both hosts' wall clocks and the cell is marked ``cross_host_clock``
(:mod:`kafkalab.load.clock`).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafkalab.cluster.descriptor import ClusterDescriptor, librdkafka_config, load_descriptor
from kafkalab.config import load_profile
from kafkalab.config.mapping import (
    confluent_consumer_config,
    confluent_producer_config,
    kafka_python_producer_config,
    settings_view,
)
from kafkalab.config.models import Profile
from kafkalab.errors import ClusterError, ConfigError, RunError
from kafkalab.load import clock, files
from kafkalab.load.cpu import (
    broker_cpu_frac,
    broker_cpu_seconds,
    cpu_seconds,
    host_busy_frac,
    host_cpu_times,
)
from kafkalab.load.files import CellCluster, CellDoc, CellStatus, PauseWindow, ProcessCpu
from kafkalab.load.placement import (
    BARRIER_TIMEOUT_S,
    SHARD_PLACEMENTS,
    TASKS_BARRIER_TIMEOUT_S,
    await_barrier,
    await_shards,
    remove_extra_shard_files,
    spawn_shards,
    stop_shards,
)
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
from kafkalab.paths import default_descriptor_path, images_dir
from kafkalab.payloads import load_body, wire_size_bytes
from kafkalab.progress import Progress, noop
from kafkalab.samples import Manifest, utc_now_iso
from kafkalab.scenarios.base import now_ns, steady_heap
from kafkalab.store import LabData, atomic_write_json

PRODUCER_ID = 0
"""One producer per cell (the id is in every message, for multi-producer cells later)."""


START_MARGIN_NS = 100_000_000
"""t0 is set this far after the barrier, so every shard sees the start before message 0."""


CLIENT_BOUND_CPU_FRAC = 0.8
"""A load-generator process above this share of one core makes the cell ``client_bound``."""


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


def cluster_descriptor(path: Path | None) -> ClusterDescriptor:
    """The cluster at ``path`` (default: the lab's own descriptor)."""
    return load_descriptor(path or default_descriptor_path())


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
    d = cluster_descriptor(descriptor_path)
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
    meta = CellDoc(
        schema_version=files.LOAD_SCHEMA_VERSION, cell_id=cell_id, run_id=run_id,
        run_date=manifest.run_date, status="running", error=None,
        spec=spec, acks=acks, topic=topic, partitions=spec.partitions,
        payload_bytes=wire,
        cluster=CellCluster(flavor=d.flavor, version=d.version, is_emulator=d.is_emulator,
                            broker_count=d.broker_count),
        client=spec.client, client_version=_client_version(spec.client),
        client_settings=client_settings, t0_ns=None, measure_start_ns=None,
        stop_ts_ns=None, drain_end_ts_ns=None, pause=None, processes=[],
        client_bound=False, broker_cpu_frac=None, started_at=utc_now_iso(),
        shard_placement=shard_placement, placement_token=placement_token,
        cross_host_clock=False, barrier_wait_s=None,
    )
    meta.write(cell)
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
    status: CellStatus = "failed"
    error: str | None = None
    interrupted = False
    try:
        barrier0 = time.monotonic()
        procs = [] if external else spawn_shards(spec, cell, logs)
        await_barrier(spec, cell, procs, logs, barrier_s, external)
        meta.barrier_wait_s = round(time.monotonic() - barrier0, 3)
        client = (ConfluentClient(producer_cfg, log) if spec.client == "confluent-kafka"
                  else KafkaPythonClient(producer_cfg, log))
        broker_cpu0 = broker_cpu_seconds(d)
        host0 = host_cpu_times()
        cpu0, wall0 = cpu_seconds(), time.monotonic()
        t0 = now_ns() + START_MARGIN_NS
        log.intended_ts_ns[:] = _schedule(spec, t0)
        meta.t0_ns = t0
        meta.measure_start_ns = int(log.intended_ts_ns[spec.warmup_messages])
        if spec.pause_at_s is not None and spec.pause_for_s is not None:
            ps = t0 + int(spec.pause_at_s * 1e9)
            meta.pause = PauseWindow(start_ns=ps, end_ns=ps + int(spec.pause_for_s * 1e9))
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
        cpu_s, wall_s = cpu_seconds() - cpu0, time.monotonic() - wall0
        meta.stop_ts_ns = stop_ts
        meta.broker_cpu_frac = broker_cpu_frac(broker_cpu0, broker_cpu_seconds(d), wall_s)
        meta.host_cpu_busy_frac = host_busy_frac(host0, host_cpu_times())
        meta.host_cpu_count = os.cpu_count()
        meta.processes.append(ProcessCpu(role="producer", shard=None, pid=os.getpid(),
                                         host=_host(), cpu_s=round(cpu_s, 4),
                                         wall_s=round(wall_s, 4),
                                         cpu_frac=round(cpu_s / wall_s, 4) if wall_s > 0 else None))
        targets = _log_end_offsets(d, topic, spec.partitions, consumer_cfg)
        atomic_write_json(stop_path(cell), {"stop_ts_ns": stop_ts, "targets": targets})
        if interrupted:
            raise KeyboardInterrupt
        shard_results = await_shards(spec, cell, procs, logs, external)
        meta.drain_end_ts_ns = now_ns()
        meta.processes += [ProcessCpu.of_result(r) for r in shard_results]
        meta.shards = shard_results
        meta.cross_host_clock = any((r.get("clock") or {}).get("basis") == clock.WALL_CLOCK
                                       for r in shard_results)
        failed = [r for r in shard_results if r.get("status") != "complete"]
        if failed:
            raise RunError(f"{cell_id}: consumer shard {failed[0].get('shard')} "
                           f"failed: {failed[0].get('error')}")
        status = "complete"
    except KeyboardInterrupt:
        status, error = "interrupted", "interrupted (Ctrl-C): what was measured is kept"
        meta.processes += stop_shards(cell, procs, spec.shards if external else 0)
        raise
    except (ConfigError, ClusterError, RunError) as exc:
        error = str(exc)
        meta.processes += stop_shards(cell, procs, spec.shards if external else 0)
        raise
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        meta.processes += stop_shards(cell, procs, spec.shards if external else 0)
        raise RunError(f"{cell_id}: {error}") from exc
    finally:
        files.write_table(files.sends_path(cell), log.columns(PRODUCER_ID, spec.warmup_messages),
                          files.SENDS_SCHEMA)
        remove_extra_shard_files(cell, spec.shards)
        meta.status, meta.error = status, error
        meta.client_bound = any((p.cpu_frac or 0) > CLIENT_BOUND_CPU_FRAC
                                for p in meta.processes)
        meta.ended_at = utc_now_iso()
        try:
            from kafkalab.load.summary import summarize_cell

            meta.write(cell)
            summary = summarize_cell(cell)
        except Exception as exc:  # a summary that cannot be made must not lose the rows
            summary = {"cell_id": cell_id, "status": status,
                       "error": f"summary failed: {type(exc).__name__}: {exc}"}
        meta.summary = summary
        meta.write(cell)
    return dict(summary)


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
