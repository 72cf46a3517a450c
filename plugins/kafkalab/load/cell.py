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

import contextlib
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kafkalab.attempts import attempt_path, recover, replaces, settle
from kafkalab.cluster.descriptor import ClusterDescriptor, librdkafka_config
from kafkalab.cluster.flavors import load_descriptor
from kafkalab.cluster.links import LinkFault, Links, links_for, replication_delay
from kafkalab.cluster.links.layout import CLIENTS, rack_of
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
from kafkalab.load.client_view import LeaderWatch
from kafkalab.load.cpu import CpuUse, cpu_start, cpu_used_since
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
from kafkalab.store import LabData, atomic_write_json, read_json
from kafkalab.yamlio import describe_validation_error

PRODUCER_ID = 0
"""One producer per cell (the id is in every message, for multi-producer cells later)."""

START_MARGIN_NS = 100_000_000
"""t0 is set this far after the barrier, so every shard sees the start before message 0."""

CLIENT_BOUND_CPU_FRAC = 0.8
"""A load-generator process above this share of one core makes the cell ``client_bound``."""


def topic_name(spec: LoadCellSpec, profile: Profile) -> str:
    """The topic of a load cell (``profile``: its effective profile): one per profile and
    partition count (consumers start at the log end, so earlier cells' records are never
    read)."""
    return f"klab-load-{profile.name}-p{spec.partitions}"


def effective_profile(spec: LoadCellSpec) -> Profile:
    """The cell's profile with its acks, max-in-flight and idempotence overrides applied,
    checked again as a profile (idempotence on needs acks=all, retries >= 1 and at most 5
    in flight). A transactional cell (``txn_msgs``) is idempotent and needs acks=all.

    Raises:
        ConfigError: an unknown or invalid profile, or overrides that make it invalid.
    """
    prof = load_profile(spec.profile)
    update: dict[str, object] = {"acks": spec.effective_acks(prof.producer.acks)}
    if spec.max_in_flight is not None:
        update["max_in_flight"] = spec.max_in_flight
    out = prof.model_copy(update={"producer": prof.producer.model_copy(update=update)})
    if spec.txn_msgs is not None and out.producer.acks != "all":
        raise ConfigError(f"profile {spec.profile} with transactions (txn_msgs "
                          f"{spec.txn_msgs}): a transactional producer needs acks=all, not "
                          f"acks={out.producer.acks}")
    idempotence = True if spec.txn_msgs is not None else spec.idempotence
    if idempotence is None:
        return out
    props = {**out.producer_properties,
             "enable.idempotence": "true" if idempotence else "false"}
    what = "transactions" if spec.txn_msgs is not None else (
        f"idempotence {'on' if idempotence else 'off'}")
    try:
        return Profile.model_validate({**out.model_dump(), "producer_properties": props})
    except ValidationError as exc:
        raise ConfigError(f"profile {spec.profile} with {what}: "
                          f"{describe_validation_error(exc)}") from None


def cluster_descriptor(path: Path | None) -> ClusterDescriptor:
    """The cluster at ``path`` (default: the lab's own descriptor)."""
    return load_descriptor(path or default_descriptor_path())


def near_follower(setup: CellSetup, timeout_s: float = 30.0) -> int:
    """The clients' near node of a cell that places them (``client_link_delay_ms``): partition
    0's first in-sync follower, the same for every read while the topic's leadership holds.

    Raises:
        ClusterError: partition 0 had no in-sync follower within ``timeout_s``.
    """
    from kafkalab.cluster.admin import admin_client
    from kafkalab.cluster.partitions import AdminPartitions

    reader = AdminPartitions(admin_client(setup.descriptor, 5.0, quiet=True), 5.0)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            st = reader.partition_state(setup.topic, 0)
        except OSError:
            st = None
        followers = sorted(b for b in (st.isr if st else ()) if st and b != st.leader)
        if st is not None and st.leader >= 0 and followers:
            return followers[0]
        time.sleep(0.2)
    raise ClusterError(f"{setup.cell_id}: partition 0 of {setup.topic} has no in-sync follower "
                       f"to put the clients beside within {timeout_s:g} s")


@contextlib.contextmanager
def clients_beside(links: Links, setup: CellSetup, one_way_ms: float,
                   progress: Progress) -> Iterator[None]:
    """The clients' links to every node but their near follower delayed ``one_way_ms`` while
    the block runs (nothing added for 0); taken off afterwards, whatever happens."""
    near = near_follower(setup)
    far = tuple(n for n in range(links.layout.nodes) if n != near)
    fault = LinkFault("delay", far, (CLIENTS,), ("client",), one_way_ms)
    try:
        if one_way_ms > 0:
            links.apply(fault)
        progress(f"  links: clients beside node {near} ({rack_of(near)}); their links to "
                 f"node(s) {','.join(map(str, far))} +{one_way_ms:g} ms one way")
        yield
    finally:
        if one_way_ms > 0:
            links.remove(fault)


def cell_links(path: Path | None, spec: LoadCellSpec) -> Links | None:
    """The degradable links of the embedded cluster at ``path`` (default: the lab's own) a
    cell acts on (a link delay, a client link delay or a thin consumer); None for a cell
    that leaves the links alone.

    Raises:
        ConfigError: the cell needs links and that cluster was not started with ``--links``,
            or it needs followers and the cluster has one node.
    """
    followers = spec.link_delay_ms is not None or spec.client_link_delay_ms is not None
    if not followers and spec.thin_consumer is None:
        return None
    links = links_for(path or default_descriptor_path())
    if links is None:
        raise ConfigError("--link-delay-ms, --client-link-delay-ms and --thin-consumer need the "
                          "lab's embedded cluster started with degradable links: kafkalab "
                          "cluster up --brokers 3 --links")
    if followers and links.layout.nodes < 2:
        raise ConfigError("--link-delay-ms, --client-link-delay-ms: a one-node cluster has no "
                          "followers (kafkalab cluster up --brokers 3 --links)")
    return links


@contextlib.contextmanager
def thin_link(links: Links, spec: LoadCellSpec, progress: Progress) -> Iterator[None]:
    """The thin consumer's own links (the ``solo`` plane, to every node) limited to
    ``thin_link_kbps`` and delayed ``thin_link_delay_ms`` while the block runs; taken off
    afterwards, whatever happens."""
    every = tuple(range(links.layout.nodes))
    faults = []
    if spec.thin_link_kbps is not None:
        faults.append(LinkFault("limit", every, (CLIENTS,), ("solo",),
                                rate_kbps=spec.thin_link_kbps))
    if spec.thin_link_delay_ms is not None:
        faults.append(LinkFault("delay", every, (CLIENTS,), ("solo",), spec.thin_link_delay_ms))
    stale = links.clear(("solo",))  # nothing but this cell's own toxics on its links
    if stale:
        progress(f"  links: removed what an earlier cell left on the solo plane: {', '.join(stale)}")
    try:
        for fault in faults:
            links.apply(fault)
        progress(f"  links: consumer {spec.thin_consumer} on a link of its own"
                 + "".join(f"; {f.describe()}" for f in faults))
        yield
    finally:
        for fault in faults:
            links.remove(fault)


@dataclass(frozen=True)
class CellSetup:
    """Everything one cell needs, decided before it touches the cluster or the disk
    (:func:`plan_cell`)."""

    spec: LoadCellSpec
    run_id: str
    run_date: str
    descriptor: ClusterDescriptor
    descriptor_path: Path
    """The descriptor's file (the shards read its secrets there; the plan holds none)."""
    profile: Profile
    """:func:`effective_profile`."""
    body: bytes
    """The payload's body."""
    wire_bytes: int
    """One message on the wire (body + stamp header)."""
    topic: str
    cell_id: str
    cell: Path
    """The directory of the cell's files while it is measured: the attempt directory of
    :attr:`final` (:func:`kafkalab.attempts.attempt_path`), or the fault engine's own."""
    final: Path | None
    """Where the cell's files land when the attempt is settled (:func:`settle_cell`); None
    when the caller owns the directory (the fault engine's ``cell_path``)."""
    logs: Path
    """The directory of the shard processes' logs (the run's work directory)."""
    placement: str
    """:data:`kafkalab.load.placement.SHARD_PLACEMENTS`."""
    placement_token: str | None

    @property
    def external(self) -> bool:
        """The shards are started by someone else (placement ``tasks``)."""
        return self.placement == "tasks"

    @property
    def barrier_timeout_s(self) -> float:
        """How long the producer waits at the start barrier."""
        base = TASKS_BARRIER_TIMEOUT_S if self.external else BARRIER_TIMEOUT_S
        return base + 0.2 * self.spec.consumers


@dataclass(frozen=True)
class CellClients:
    """The cell's client settings and nonce (:func:`cell_clients`)."""

    nonce: bytes
    """The producer's nonce, in every message (a shard ignores records without it)."""
    consumer_config: dict[str, Any]
    """librdkafka settings of the shards' consumers, without secrets."""
    producer_config: dict[str, Any]
    """The producer's settings for its client library (secrets resolved)."""


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
    lab = LabData(data_dir)
    run_date = Manifest.load(lab.root, run_id).run_date
    setup = plan_cell(lab, run_id, run_date, spec, descriptor_path, topic=topic,
                      cell_path=cell_path, placement=shard_placement,
                      placement_token=placement_token)
    linked = cell_links(descriptor_path, spec)
    if provision:
        provision_topic(setup)
    prepare_cell_dir(setup)
    steady_heap()
    clients = cell_clients(setup)
    if spec.fetch_from_follower:
        clients.consumer_config["client.rack"] = rack_of(near_follower(setup))
    meta = new_cell_doc(setup, clients)
    meta.write(setup.cell)
    # cell.json (status running) before the plan: a shard task that finds this attempt's plan
    # also finds its cell running (shard_turn).
    solo = linked.layout.solo_bootstrap() if linked is not None and \
        spec.thin_consumer is not None else None
    atomic_write_json(plan_path(setup.cell), shard_plan(setup, clients, solo))
    progress(f"{setup.cell_id}: {spec.consumers} consumer(s) in {spec.shards} "
             f"{'shard task(s)' if setup.external else 'process(es)'}, "
             f"{spec.rate_msgs_per_s:g} msg/s × {spec.duration_s:g} s "
             f"(warm-up {spec.warmup_s:g} s), topic {setup.topic}")
    with contextlib.ExitStack() as links:
        if linked is not None and spec.link_delay_ms is not None:
            links.enter_context(replication_delay(linked, spec.link_delay_ms, progress))
        if linked is not None and spec.client_link_delay_ms is not None:
            links.enter_context(clients_beside(linked, setup, spec.client_link_delay_ms,
                                               progress))
        if linked is not None and spec.thin_consumer is not None:
            links.enter_context(thin_link(linked, spec, progress))
        return _CellRun(setup, clients, meta).measure(progress, on_start)


def plan_cell(lab: LabData, run_id: str, run_date: str, spec: LoadCellSpec,
              descriptor_path: Path | None, *, topic: str | None, cell_path: Path | None,
              placement: str, placement_token: str | None) -> CellSetup:
    """Decide the cell: its cluster, profile, payload, topic and directories.

    Raises:
        ConfigError: the cell is above the client budget (or its profile or payload is bad).
    """
    d = cluster_descriptor(descriptor_path)
    prof = effective_profile(spec)
    body = load_body(spec.payload, spec.encoding, images_dir())
    wire = wire_size_bytes(body)
    check_budget(spec, wire)
    cell_id = spec.cell_id(prof.producer.acks)
    final: Path | None = None
    if cell_path is None:
        final = files.cell_dir(lab.root, run_date, run_id, cell_id)
        cell_path = attempt_path(final)
    return CellSetup(
        spec=spec, run_id=run_id, run_date=run_date, descriptor=d,
        descriptor_path=descriptor_path or default_descriptor_path(), profile=prof, body=body,
        wire_bytes=wire, topic=topic or topic_name(spec, prof), cell_id=cell_id,
        cell=cell_path, final=final,
        logs=lab.run_work_dir(run_id) / "load" / cell_id, placement=placement,
        placement_token=placement_token)


def cell_clients(setup: CellSetup) -> CellClients:
    """A new nonce, the shards' consumer settings (without secrets) and the producer's
    settings (secrets resolved from the environment)."""
    spec, d, prof = setup.spec, setup.descriptor, setup.profile
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
    if spec.txn_msgs is not None:
        consumer_cfg["isolation.level"] = "read_committed"
    txn_id = transactional_id(setup.cell_id, nonce)
    if spec.client == "confluent-kafka":
        producer_cfg: dict[str, Any] = confluent_producer_config(librdkafka_config(d), prof)
        producer_cfg["message.timeout.ms"] = int(spec.message_timeout_s * 1000)
        if spec.txn_msgs is not None:
            producer_cfg["transactional.id"] = txn_id
    else:
        from kafkalab.cluster.descriptor import kafka_python_config

        producer_cfg = kafka_python_producer_config(kafka_python_config(d), prof)
        if spec.txn_msgs is not None:
            producer_cfg["transactional_id"] = txn_id
    return CellClients(nonce=nonce, consumer_config=consumer_cfg, producer_config=producer_cfg)


def transactional_id(cell_id: str, nonce: bytes) -> str:
    """A transactional cell's ``transactional.id``: the cell and this attempt's nonce, so no
    two producers (another cell, a re-run) ever share one and fence each other."""
    return f"kafkalab-{cell_id}-{nonce.hex()}"


def provision_topic(setup: CellSetup) -> None:
    """Create the cell's topic with its profile's partitions, replication and configs
    (idempotent)."""
    from kafkalab.topics import TopicSpec, provision_topics

    topic = setup.profile.topic
    provision_topics(setup.descriptor, [TopicSpec(name=setup.topic,
                                                  partitions=setup.spec.partitions,
                                                  replication_factor=topic.replication_factor,
                                                  configs=topic.kafka_configs())])


def prepare_cell_dir(setup: CellSetup) -> None:
    """Make the cell's directories: a fresh attempt directory (a crashed attempt is set
    aside, :func:`kafkalab.attempts.recover`; the earlier measurement stays until
    :func:`settle_cell`), or the caller's directory without an earlier attempt's coordination
    files (a re-run must not meet its shards' old ready or result files)."""
    cell = setup.cell
    if setup.final is not None:
        setup.final.parent.mkdir(parents=True, exist_ok=True)
        recover(setup.final)
    cell.mkdir(parents=True, exist_ok=True)
    for old in [*ready_path.every(cell), *result_path.every(cell), start_path(cell),
                stop_path(cell), plan_path(cell)]:
        old.unlink(missing_ok=True)
    setup.logs.mkdir(parents=True, exist_ok=True)


def new_cell_doc(setup: CellSetup, clients: CellClients) -> CellDoc:
    """``cell.json`` of a cell that starts (status ``running``, no clock read yet)."""
    spec, d = setup.spec, setup.descriptor
    client_settings = settings_view({"producer": clients.producer_config,
                                     "consumer": clients.consumer_config},
                                    secret_keys=d.secret_env)
    return CellDoc(
        schema_version=files.LOAD_SCHEMA_VERSION, cell_id=setup.cell_id, run_id=setup.run_id,
        run_date=setup.run_date, status="running", error=None,
        spec=spec, acks=setup.profile.producer.acks, topic=setup.topic,
        partitions=spec.partitions, payload_bytes=setup.wire_bytes,
        cluster=CellCluster(flavor=d.flavor, version=d.version, is_emulator=d.is_emulator,
                            broker_count=d.broker_count),
        client=spec.client, client_version=_client_version(spec.client),
        client_settings=client_settings, t0_ns=None, measure_start_ns=None,
        stop_ts_ns=None, drain_end_ts_ns=None, pause=None, processes=[],
        client_bound=False, broker_cpu_frac=None, started_at=utc_now_iso(),
        shard_placement=setup.placement, placement_token=setup.placement_token,
        cross_host_clock=False, barrier_wait_s=None,
    )


def shard_plan(setup: CellSetup, clients: CellClients,
               solo_bootstrap: str | None = None) -> dict[str, Any]:
    """The plan the shards read (``.plan.json``; :mod:`kafkalab.load.shard`);
    ``solo_bootstrap``: the thin consumer's own ``bootstrap.servers`` (the ``solo`` plane)."""
    spec = setup.spec
    return {"spec": spec.model_dump(), "cell_dir": str(setup.cell), "topic": setup.topic,
            "partitions": spec.partitions, "nonce": clients.nonce.hex(),
            "consumer_config": clients.consumer_config, "solo_bootstrap": solo_bootstrap,
            "descriptor_path": str(setup.descriptor_path),
            "barrier_timeout_s": setup.barrier_timeout_s, "clock": clock.anchor(),
            "shard_placement": setup.placement, "placement_token": setup.placement_token}


class _CellRun:
    """One measurement of a planned cell: its shards, its producer's log and its
    ``cell.json`` as the cell goes (:meth:`measure`)."""

    def __init__(self, setup: CellSetup, clients: CellClients, meta: CellDoc) -> None:
        self.setup = setup
        self.clients = clients
        self.spec = setup.spec
        self.meta = meta
        self.procs: list[subprocess.Popen[bytes]] = []
        self.log = SendLog(self.spec.intended_messages, _schedule(self.spec, 0),
                           transactional=self.spec.txn_msgs is not None)

    def measure(self, progress: Progress, on_start: Callable[[int], None] | None) -> dict[str, Any]:
        """Barrier, produce, drain; on any end, the cell's files and summary. Returns the
        summary.

        Raises:
            ConfigError, ClusterError, RunError: as :func:`run_load_cell` says.
            KeyboardInterrupt: Ctrl-C (the cell is ``interrupted``, its files written).
        """
        status: CellStatus = "failed"
        error: str | None = None
        try:
            self.join_shards()
            stop_ts, interrupted = self.produce(progress, on_start)
            self.announce_stop(stop_ts)
            if interrupted:
                raise KeyboardInterrupt
            self.collect_shards()
            status = "complete"
        except KeyboardInterrupt:
            status, error = "interrupted", "interrupted (Ctrl-C): what was measured is kept"
            self.stop_shards()
            raise
        except (ConfigError, ClusterError, RunError) as exc:
            error = str(exc)
            self.stop_shards()
            raise
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            self.stop_shards()
            raise RunError(f"{self.setup.cell_id}: {error}") from exc
        finally:
            summary = self.close(status, error, progress)
        return summary

    def join_shards(self) -> None:
        """Start the shards (placement ``subprocess``) and wait until every one is ready."""
        setup = self.setup
        barrier0 = time.monotonic()
        self.procs = [] if setup.external else spawn_shards(self.spec, setup.cell, setup.logs)
        await_barrier(self.spec, setup.cell, self.procs, setup.logs, setup.barrier_timeout_s,
                      setup.external)
        self.meta.barrier_wait_s = round(time.monotonic() - barrier0, 3)

    def produce(self, progress: Progress,
                on_start: Callable[[int], None] | None) -> tuple[int, bool]:
        """Fix t0, tell the shards, run the open-loop producer and record its CPU; returns
        ``(stop_ts_ns, interrupted)`` (Ctrl-C stops the sending, the stop is still told)."""
        setup, spec, log, config = self.setup, self.spec, self.log, self.clients.producer_config
        watch = (LeaderWatch(setup.topic) if spec.watch_leader
                 and spec.client == "confluent-kafka" else None)
        client = (ConfluentClient(config, log, watch) if spec.client == "confluent-kafka"
                  else KafkaPythonClient(config, log))
        if spec.txn_msgs is not None:  # before the schedule: its time is no record's
            try:
                client.init_transactions(spec.message_timeout_s)
            except Exception as exc:
                client.close()
                raise ClusterError(f"{setup.cell_id}: the transactional producer could not "
                                   f"start (init_transactions): {exc}") from None
        cpu0 = cpu_start(setup.descriptor)
        t0 = self.start_schedule()
        if on_start is not None:
            on_start(t0)
        plan = ProducerPlan(topic=setup.topic, partitions=spec.partitions,
                            rate_msgs_per_s=spec.rate_msgs_per_s, n=spec.intended_messages,
                            warmup_messages=spec.warmup_messages, body=setup.body,
                            base64_body=spec.encoding == "base64", nonce=self.clients.nonce,
                            send_deadline_s=spec.duration_s + max(2.0, 0.1 * spec.duration_s),
                            message_timeout_s=spec.message_timeout_s,
                            seq_header=spec.seq_header, txn_msgs=spec.txn_msgs,
                            txn_abort_every=spec.txn_abort_every)

        def tick(sent: int, t: int) -> None:
            c = log.counts()
            delay_ms = (t - int(log.intended_ts_ns[sent - 1])) / 1e6
            progress(f"  {(t - t0) / 1e9:5.1f} s  sent {sent}/{spec.intended_messages}  "
                     f"acked {c['acked']}  publish delay {delay_ms:.1f} ms")

        interrupted = False
        try:
            stop_ts = run_open_loop(plan, client, log, t0, progress, on_tick=tick)
        except KeyboardInterrupt:
            interrupted = True
            stop_ts = now_ns()
        self.record_producer_cpu(stop_ts, cpu_used_since(cpu0, setup.descriptor))
        if watch is not None:
            self.meta.producer_leader_view = [[ts, leader] for ts, leader in watch.changes]
        return stop_ts, interrupted

    def start_schedule(self) -> int:
        """t0 (now + :data:`START_MARGIN_NS`), the schedule from it, and ``.start.json``."""
        spec, meta = self.spec, self.meta
        t0 = now_ns() + START_MARGIN_NS
        self.log.intended_ts_ns[:] = _schedule(spec, t0)
        meta.t0_ns = t0
        meta.measure_start_ns = int(self.log.intended_ts_ns[spec.warmup_messages])
        if spec.pause_at_s is not None and spec.pause_for_s is not None:
            ps = t0 + int(spec.pause_at_s * 1e9)
            meta.pause = PauseWindow(start_ns=ps, end_ns=ps + int(spec.pause_for_s * 1e9))
        atomic_write_json(start_path(self.setup.cell), {"t0_ns": t0})
        return t0

    def record_producer_cpu(self, stop_ts: int, use: CpuUse) -> None:
        """The producer's stop, its CPU, the brokers' and the host's."""
        meta = self.meta
        meta.stop_ts_ns = stop_ts
        meta.broker_cpu_frac = use.broker_cpu_frac
        meta.host_cpu_busy_frac = use.host_cpu_busy_frac
        meta.host_cpu_count = os.cpu_count()
        cpu_s, wall_s = use.process_cpu_s, use.wall_s
        meta.processes.append(ProcessCpu(role="producer", shard=None, pid=os.getpid(),
                                         host=_host(), cpu_s=round(cpu_s, 4),
                                         wall_s=round(wall_s, 4),
                                         cpu_frac=round(cpu_s / wall_s, 4) if wall_s > 0 else None))

    def announce_stop(self, stop_ts: int) -> None:
        """``.stop.json``: the producer stopped, and the offsets to drain to: per partition
        the high watermark now or one past the last offset the producer was acknowledged,
        whichever is further. With acks=1 a record is acknowledged by the leader before the
        followers have it, so the high watermark (which a consumer reads up to) can still be
        short of it: drained only to the watermark, the consumers stopped before it and the
        cell counted acknowledged records as missing (seen with a replication link delayed
        50 ms: the last 3 of 250)."""
        setup = self.setup
        targets = _log_end_offsets(setup.descriptor, setup.topic, self.spec.partitions,
                                   self.clients.consumer_config)
        for part, end in self.log.acked_log_ends().items():
            targets[str(part)] = max(targets.get(str(part), 0), end)
        atomic_write_json(stop_path(setup.cell), {"stop_ts_ns": stop_ts, "targets": targets})

    def collect_shards(self) -> None:
        """Wait for the shards' results and record them.

        Raises:
            RunError: a shard did not complete.
        """
        meta = self.meta
        shard_results = await_shards(self.spec, self.setup.cell, self.procs, self.setup.logs,
                                     self.setup.external)
        meta.drain_end_ts_ns = now_ns()
        meta.processes += [ProcessCpu.of_result(r) for r in shard_results]
        meta.shards = shard_results
        meta.cross_host_clock = any((r.get("clock") or {}).get("basis") == clock.WALL_CLOCK
                                    for r in shard_results)
        failed = [r for r in shard_results if r.get("status") != "complete"]
        if failed:
            raise RunError(f"{self.setup.cell_id}: consumer shard {failed[0].get('shard')} "
                           f"failed: {failed[0].get('error')}")

    def stop_shards(self) -> None:
        """Stop the shards still running after a failure; record the CPU of those that
        wrote a result."""
        external = self.spec.shards if self.setup.external else 0
        self.meta.processes += stop_shards(self.setup.cell, self.procs, external)

    def close(self, status: CellStatus, error: str | None,
              progress: Progress = noop) -> dict[str, Any]:
        """Write the producer's log, drop an earlier run's extra shard files, write
        ``cell.json`` twice: ended, then with its summary (a summary that cannot be made
        leaves the rows and says why), and settle the attempt (:func:`settle_cell`). Returns
        the summary."""
        setup, meta = self.setup, self.meta
        files.write_table(files.sends_path(setup.cell),
                          self.log.columns(PRODUCER_ID, self.spec.warmup_messages),
                          files.SENDS_SCHEMA)
        remove_extra_shard_files(setup.cell, self.spec.shards)
        meta.status, meta.error = status, error
        meta.client_bound = any((p.cpu_frac or 0) > CLIENT_BOUND_CPU_FRAC
                                for p in meta.processes)
        meta.ended_at = utc_now_iso()
        try:
            from kafkalab.load.summary import summarize_cell

            meta.write(setup.cell)
            summary = summarize_cell(setup.cell)
        except Exception as exc:  # a summary that cannot be made must not lose the rows
            summary = {"cell_id": setup.cell_id, "status": status,
                       "error": f"summary failed: {type(exc).__name__}: {exc}"}
        meta.summary = summary
        meta.write(setup.cell)
        kept = settle_cell(setup, status)
        if kept is not None:
            progress(f"{setup.cell_id}: this attempt ended {status}; the earlier complete cell "
                     f"is kept, this attempt's files are in {kept.name}")
        return dict(summary)


def settle_cell(setup: CellSetup, status: str) -> Path | None:
    """The attempt takes the cell's place (``cell=<id>/``) unless an earlier complete cell
    would be lost (:mod:`kafkalab.attempts`); returns where a kept failed attempt went."""
    if setup.final is None:
        return None
    earlier = read_json(files.cell_json_path(setup.final)) if setup.final.is_dir() else None
    earlier_complete = isinstance(earlier, dict) and earlier.get("status") == "complete"
    return settle(setup.final, replace=replaces(earlier_complete=earlier_complete,
                                                attempt_complete=status == "complete",
                                                attempt_has_data=True))


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
