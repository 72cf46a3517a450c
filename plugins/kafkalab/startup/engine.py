"""Start-up runs: where a new consumer's first-message delay goes, on real Kafka 4.x (seed 000).

Seed 000 measured ~1.4 s before a new consumer's first record with ``subscribe()`` and asked
which setting causes it. A start-up run (:func:`execute_startup`) measures the parts of that
delay in every case of its :class:`~kafkalab.startup.spec.StartupSpec`:

1. for each broker ``group.initial.rebalance.delay.ms`` asked for (a static setting), and each
   trial, the run's own one-node cluster of the lab's default flavor (KRaft) is started
   fresh, its data wiped, in ``<lab_dir>/startup`` on ports of its own (default
   :data:`DEFAULT_BASE_PORT` and :data:`DEFAULT_CONTROL_PORT`), never the user's cluster;
   the setting in effect is read back through the Admin API;
2. a topic with one partition per member of the largest case gets one record per partition;
3. each *cold* case runs on a cluster whose ``__consumer_offsets`` does not exist yet (checked):
   a fresh cluster per cold probe, while a watcher reads the metadata every
   :data:`WATCH_INTERVAL_S` to date when that topic's partitions are led;
4. the trial's *warm* cases then run on the last of those clusters, in an order that rotates
   with the trial (no case always pays for another's warm-up);
5. every member of every probe is a row of ``probes.parquet`` and ``run.json`` is rewritten
   after each probe (:mod:`kafkalab.startup.files`); the run's manifest (``runs/<id>.json``,
   kind ``startup``) is written at the start, names the cluster once one is up, and is closed
   with one summary per case; the cluster is stopped and wiped at the end, also after an
   error or Ctrl-C, and what was measured is kept.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafkalab.cluster.admin import admin_client
from kafkalab.cluster.broker_config import broker_settings
from kafkalab.cluster.descriptor import (
    ClusterDescriptor,
    kafka_python_config,
    librdkafka_config,
    public_view,
)
from kafkalab.cluster.embedded import cluster_down, cluster_up
from kafkalab.cluster.features import Features
from kafkalab.cluster.flavors import DEFAULT_EMBEDDED, EmbeddedFlavor, embedded_flavor
from kafkalab.errors import ClusterError, ConfigError, RunError
from kafkalab.kinds import STARTUP
from kafkalab.load.run import parts_manifest
from kafkalab.progress import Progress, noop
from kafkalab.run_ids import new_run_id
from kafkalab.startup import files
from kafkalab.startup.probe import ProbeMarks, new_group_id, now_ns, run_probe
from kafkalab.startup.spec import (
    DEFAULT_BASE_PORT,
    DEFAULT_CONTROL_PORT,
    GROUP_PROTOCOLS,
    StartupCase,
    StartupSpec,
)
from kafkalab.startup_figures import (
    KAFKA_DEFAULT_INITIAL_REBALANCE_DELAY_MS,
    answer_lines,
    summarize,
)
from kafkalab.store import LabData, atomic_write_json

__all__ = ["DEFAULT_BASE_PORT", "DEFAULT_CONTROL_PORT", "StartupRequest", "StartupResult",
           "StartupRun", "broker_spec", "execute_startup", "finish_startup", "measure_trial",
           "open_startup", "set_aside_startup", "startup_cluster_lab", "stop_cluster"]

WATCH_INTERVAL_S = 0.01
"""How often a cold probe's watcher reads the metadata for ``__consumer_offsets``."""
TOPIC = "kafkalab-startup"
OFFSETS_TOPIC = "__consumer_offsets"
DELAY_SETTING = "group.initial.rebalance.delay.ms"


def startup_cluster_lab() -> Path:
    """``<lab_dir>/startup``: the start-up runs' own cluster (wiped by every cold probe)."""
    from kafkalab.paths import lab_dir

    return lab_dir() / "startup"


@dataclass(frozen=True)
class StartupRequest:
    """A start-up run to make (``kafkalab startup run``)."""

    spec: StartupSpec = field(default_factory=StartupSpec)
    data_dir: Path | str | None = None
    run_id: str | None = None
    base_port: int = DEFAULT_BASE_PORT
    control_port: int = DEFAULT_CONTROL_PORT
    flavor: str = DEFAULT_EMBEDDED.name
    """The embedded flavor of its cluster (Kafka 0.9.0.1's: the field notes' era, for contrast;
    where the broker lacks a case's feature, the case is listed as unsupported)."""
    cluster_lab: Path | None = None
    """Where its cluster lives (default :func:`startup_cluster_lab`); wiped by every cold
    probe, so never a lab directory holding another cluster."""
    command: str = "kafkalab startup run"
    owner_kind: str = "cli"
    """Who runs it (``cli`` or ``airflow``: the manifest's ``owner.kind``)."""
    logical_date: str | None = None
    """The Airflow logical date of the DAG run that makes it (the manifest's)."""
    supersede: bool = False
    """An existing start-up run of ``run_id`` is measured anew (its earlier measurement set
    aside: :func:`set_aside_startup`) instead of refused: a version matrix run again under
    its id (a night of the nightly run twice: one lab run per night) re-measures every round."""


@dataclass
class StartupResult:
    """What a start-up run left: its id, status, files, per-case figures and answer."""

    run_id: str
    status: str
    """The manifest's: ``complete`` (every probe saw its first record), ``incomplete`` (some
    cases had a probe time out or fail: ``failed_probes``) or ``failed``; what was measured
    is kept whatever the status."""
    run_dir: Path
    cases: list[dict[str, Any]]
    answer: list[str]
    failed_probes: int


def _client_versions(spec: StartupSpec) -> dict[str, str]:
    versions = {}
    if "confluent-kafka" in spec.clients:
        import confluent_kafka

        versions["confluent-kafka"] = (f"{confluent_kafka.version()[0]} (librdkafka "
                                       f"{confluent_kafka.libversion()[0]})")
    if "kafka-python" in spec.clients:
        import kafka

        versions["kafka-python"] = str(kafka.__version__)
    return versions


class _Cluster:
    """The run's cluster for one delay: started fresh, its admin client, its topic."""

    def __init__(self, req: StartupRequest, flavor: EmbeddedFlavor, features: Features,
                 delay_ms: int, progress: Progress) -> None:
        self.lab = req.cluster_lab or startup_cluster_lab()
        self.features = features
        cluster_down(self.lab, wipe_data=True)
        self.descriptor: ClusterDescriptor = cluster_up(
            flavor.name, 1, self.lab, base_port=req.base_port,
            control_port=req.control_port, progress=progress,
            broker_settings=({DELAY_SETTING: str(delay_ms)} if features.initial_rebalance_delay
                             else None))
        self.admin = admin_client(self.descriptor)
        self.delay_ms = self._delay_in_effect()
        if self.delay_ms != delay_ms:
            raise RunError(f"the start-up cluster runs with {DELAY_SETTING}={self.delay_ms}, "
                           f"not the {delay_ms} asked for")

    def _delay_in_effect(self) -> int:
        """The broker's setting read back through the Admin API; 0 for a broker that has no
        such setting (before Kafka 0.11: a new group rebalances at once)."""
        from confluent_kafka.admin import ConfigResource

        if not self.features.initial_rebalance_delay:
            return 0
        res = ConfigResource("BROKER", "0")
        config = self.admin.describe_configs([res])[res].result(timeout=30)
        return int(config[DELAY_SETTING].value)

    def prepare_topic(self, partitions: int) -> None:
        """The topic with one record in each of its ``partitions`` (acks=all), created by
        the lab's topic owner (the Admin API, or ZooKeeper's tool on Kafka 0.9)."""
        from confluent_kafka import Producer

        from kafkalab.topics.api import provision_topics
        from kafkalab.topics.model import TopicSpec

        provision_topics(self.descriptor, [TopicSpec(name=TOPIC, partitions=partitions)])
        producer = Producer({**librdkafka_config(self.descriptor), "acks": "all",
                             "log_level": "3"})
        for p in range(partitions):
            producer.produce(TOPIC, value=b"first", partition=p)
        if producer.flush(30) != 0:
            raise RunError("the start-up topic's records were not acknowledged in 30 s")

    def offsets_topic_led(self) -> bool:
        """``__consumer_offsets`` exists and every partition has a leader (metadata of all
        topics: asking for the topic by name could create it)."""
        meta = self.admin.list_topics(timeout=5)
        topic = meta.topics.get(OFFSETS_TOPIC)
        return bool(topic is not None and topic.error is None and topic.partitions and
                    all(p.leader >= 0 for p in topic.partitions.values()))

    def close(self) -> None:
        """Drop its admin client (before the next cluster stops this one's broker)."""
        del self.admin

    def client_conf(self, client: str) -> dict[str, Any]:
        """The client's settings for this cluster: its defaults, except a session timeout
        above what the broker accepts (librdkafka's 45 s on Kafka 0.9, whose limit is 30 s:
        the JoinGroup would be refused forever), which is lowered to the broker's limit."""
        if client == "confluent-kafka":
            conf = dict(librdkafka_config(self.descriptor))
            conf.setdefault("log_level", "3")  # errors only: not 0.9's deprecation warnings
            limit = self.features.max_session_timeout_ms
            if limit is not None:
                conf.setdefault("session.timeout.ms", str(limit))
            return conf
        return kafka_python_config(self.descriptor)


class _Watcher:
    """A cold probe's watcher, in its own thread: dates when ``__consumer_offsets`` is led
    (metadata of all topics, which creates nothing), then when the probe's group coordinator
    answers for the group (DescribeGroups without a load-in-progress or not-coordinator
    error). It asks for the group only once the topic is led: the consumer's own
    FindCoordinator is what creates the topic, and the watcher must not do it first."""

    _NOT_READY = ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR",
                  "_TIMED_OUT", "_TRANSPORT")

    def __init__(self, cluster: _Cluster, group: str | None) -> None:
        self.cluster = cluster
        self.group = group
        self.ready_ns: int | None = None
        self.coordinator_ready_ns: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="startup-offsets-watch",
                                         daemon=True)

    def __enter__(self) -> _Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _watch(self) -> None:
        while not self._stop.is_set() and self.ready_ns is None:
            try:
                if self.cluster.offsets_topic_led():
                    self.ready_ns = now_ns()
            except Exception:  # a slow metadata answer: ask again
                pass
            self._stop.wait(WATCH_INTERVAL_S)
        while not self._stop.is_set() and self.group is not None:
            if self._group_answered():
                self.coordinator_ready_ns = now_ns()
                return
            self._stop.wait(WATCH_INTERVAL_S)

    def _group_answered(self) -> bool:
        assert self.group is not None
        try:
            self.cluster.admin.describe_consumer_groups(
                [self.group], request_timeout=5)[self.group].result(timeout=6)
            return True
        except Exception as exc:  # the group's answer: an error until its coordinator is ready
            return not any(code in str(exc) for code in self._NOT_READY)


class StartupRun:
    """One open run's state: rows so far, its files, its clusters (:func:`open_startup`)."""

    def __init__(self, req: StartupRequest, progress: Progress) -> None:
        self.req = req
        self.flavor = embedded_flavor(req.flavor)
        self.features = self.flavor.embedded_features()
        self.spec = broker_spec(req.spec, self.flavor, self.features)
        self.default_delay_ms = (KAFKA_DEFAULT_INITIAL_REBALANCE_DELAY_MS
                                 if self.features.initial_rebalance_delay else 0)
        self.progress = progress
        self.lab = LabData(req.data_dir)
        previous = self.lab.manifest(req.run_id) if req.run_id is not None else None
        if previous is not None and not (req.supersede and previous.get("kind") == STARTUP.name):
            raise ConfigError(f"run {req.run_id} already exists: a start-up run is measured "
                              "whole, so use a new --run-id (or none)")
        stale = set_aside_startup(self.lab, previous, progress) if previous is not None else []
        self.run_id = req.run_id or new_run_id()
        self.manifest = parts_manifest(
            self.run_id, None, STARTUP, command=req.command,
            workload={"kind": STARTUP.name, "name": STARTUP.name, "spec": asdict(self.spec),
                      "unsupported": self.spec.unsupported(),
                      "broker_default_delay_ms": self.default_delay_ms},
            profiles={}, scenarios=list(self.spec.clients), payloads=[], cluster={},
            owner_kind=req.owner_kind, logical_date=req.logical_date)
        if previous is not None:  # measured anew: say so, and what is stale until recomputed
            self.manifest.reopened_at = [*(previous.get("reopened_at") or []),
                                         datetime.now(UTC).isoformat()]
            self.manifest.stale_outputs = stale
            self.manifest.logical_date = self.manifest.logical_date or previous.get("logical_date")
        self.manifest.write(self.lab.root)
        self.started = datetime.fromisoformat(self.manifest.started_at)
        self.dir = files.run_dir(req.data_dir, self.manifest.run_date, self.run_id)
        self.rows: list[dict[str, Any]] = []
        self.clusters: list[dict[str, Any]] = []
        self.clients = _client_versions(self.spec)
        self.status = "running"
        self.error: str | None = None
        self.trial_errors: list[str] = []
        """Trials a caller measuring trial by trial could not measure (named, in order)."""
        self.probes = 0
        self.stream = files.open_probes(self.dir)

    def probe(self, cluster: _Cluster, case: StartupCase, trial: int) -> None:
        d = cluster.descriptor
        started_at_ns = time.time_ns()
        group = new_group_id(case)
        conf = cluster.client_conf(case.client)
        ready: tuple[int | None, int | None] = (None, None)
        if case.cluster_state == "cold":
            if cluster.offsets_topic_led():
                raise RunError("the start-up cluster already has __consumer_offsets before a "
                               "cold probe")
            with _Watcher(cluster, group) as watcher:
                marks = run_probe(case, TOPIC, conf, self.spec.timeout_s, group)
            ready = (watcher.ready_ns, watcher.coordinator_ready_ns)
        else:
            marks = run_probe(case, TOPIC, conf, self.spec.timeout_s, group)
        for m in marks:
            self._row(case, trial, m, started_at_ns, ready, d)
        self.stream.flush()
        self.probes += 1
        firsts = ", ".join("-" if m.first_record_ns is None else
                           f"{m.since_start_ms(m.first_record_ns):.0f}" for m in marks)
        self.progress(f"{case.key} trial {trial}: first record after {firsts} ms")
        self.write_run_doc()

    def _row(self, case: StartupCase, trial: int, m: ProbeMarks, started_at_ns: int,
             ready: tuple[int | None, int | None], d: ClusterDescriptor) -> None:
        row = {
            "run_id": self.run_id, "probe": self.probes, "trial": trial, "member": m.member,
            "case_key": case.key, "client": case.client,
            "client_version": self.clients.get(case.client, ""), "join": case.join,
            "group_protocol": case.group_protocol, "members": case.members,
            "cluster_state": case.cluster_state,
            "initial_rebalance_delay_ms": case.initial_rebalance_delay_ms,
            "kafka_version": d.version, "broker_flavor": d.flavor, "status": m.status,
            "error": m.error, "started_at_ns": started_at_ns,
            "created_ms": m.since_start_ms(m.created_ns),
            "metadata_ms": m.since_start_ms(m.metadata_ns),
            "assigned_ms": m.since_start_ms(m.assigned_ns),
            "first_record_ms": m.since_start_ms(m.first_record_ns),
            "offsets_topic_ready_ms": m.since_start_ms(ready[0]) if m.start_ns else None,
            "coordinator_ready_ms": m.since_start_ms(ready[1]) if m.start_ns else None,
        }
        self.rows.append(row)
        self.stream.append(row)

    def write_run_doc(self) -> None:
        cases = summarize(self.rows)
        atomic_write_json(self.dir / "run.json", {
            "schema_version": files.STARTUP_SCHEMA_VERSION, "run_id": self.run_id,
            "started_at": self.started.isoformat(), "status": self.status,
            "error": self.error, "command": self.req.command,
            "spec": {**asdict(self.spec)}, "unsupported": self.spec.unsupported(),
            "clients": self.clients, "clusters": self.clusters, "probes": len(self.rows),
            "failed_probes": sum(1 for r in self.rows if r["status"] != "ok"),
            "cases": cases,
            "broker_default_delay_ms": self.default_delay_ms,
            "answer": answer_lines(cases, self.default_delay_ms),
        })


def broker_spec(spec: StartupSpec, flavor: EmbeddedFlavor, features: Features) -> StartupSpec:
    """``spec`` for the broker the run starts: the group protocols it serves (a case it
    cannot serve is listed as unsupported), and a broker without
    ``group.initial.rebalance.delay.ms`` (before Kafka 0.11) measured at its behaviour, 0.

    Raises:
        ConfigError: a delay other than 0 for such a broker, or no case left.
    """
    if not features.initial_rebalance_delay and spec.delays_ms != (0,):
        raise ConfigError(f"startup: Kafka {flavor.version} has no {DELAY_SETTING} (KIP-134, "
                          "Kafka 0.11): its new groups rebalance at once; ask for delay 0 only")
    return replace(spec, broker_protocols=tuple(p for p in GROUP_PROTOCOLS
                                                if p in features.group_protocols),
                   broker=f"Kafka {flavor.version}")


def _rotated(cases: list[StartupCase], trial: int) -> list[StartupCase]:
    k = trial % len(cases) if cases else 0
    return cases[k:] + cases[:k]


def measure_trial(run: StartupRun, delay_ms: int, trial: int) -> None:
    """Trial ``trial`` of every case at broker delay ``delay_ms``: each cold case on a fresh
    cluster, then the warm cases on the last of them (rotated by the trial). The cluster is
    left running (:func:`stop_cluster`, or the next fresh one, stops it)."""
    cluster: _Cluster | None = None
    for case in _rotated(run.spec.cold_cases(delay_ms), trial):
        if cluster is not None:
            cluster.close()
        cluster = _fresh_cluster(run, delay_ms)
        run.probe(cluster, case, trial)
    if cluster is None:
        cluster = _fresh_cluster(run, delay_ms)
    for case in _rotated(run.spec.warm_cases(delay_ms), trial):
        run.probe(cluster, case, trial)
    cluster.close()


def stop_cluster(run: StartupRun) -> None:
    """Stop and wipe the run's cluster (another cluster on its ports may start next)."""
    cluster_down(run.req.cluster_lab or startup_cluster_lab(), wipe_data=True)


def _fresh_cluster(run: StartupRun, delay_ms: int) -> _Cluster:
    cluster = _Cluster(run.req, run.flavor, run.features, delay_ms, run.progress)
    _note_cluster(run, cluster)
    cluster.prepare_topic(run.spec.max_members)
    return cluster


def _note_cluster(run: StartupRun, cluster: _Cluster) -> None:
    """Record a cluster the run measures on (the manifest names the first one and its broker
    settings, read through the Admin API)."""
    d = cluster.descriptor
    entry = {"flavor": d.flavor, "kafka_version": d.version, "brokers": d.broker_count,
             DELAY_SETTING: cluster.delay_ms if run.features.initial_rebalance_delay else None}
    if entry not in run.clusters:
        run.clusters.append(entry)
    if not run.manifest.cluster:
        run.manifest.cluster = public_view(d)
        run.manifest.broker_settings = broker_settings(d)
        run.manifest.write(run.lab.root)


def _close_manifest(run: StartupRun, cases: list[dict[str, Any]]) -> None:
    """The manifest closed with one summary per case: ``complete`` when every probe of every
    case saw its first record (:meth:`kafkalab.samples.Manifest.close`)."""
    run.manifest.cells = cases
    error = (run.error if run.status == "incomplete"  # trials not measured, named
             else None if run.status == "complete" else (run.error or run.status))
    run.manifest.close(["complete" if not c["failed"] else "failed" for c in cases], error)
    run.manifest.write(run.lab.root)


def set_aside_startup(lab: LabData, previous: dict[str, Any], progress: Progress = noop
                      ) -> list[str]:
    """Set aside an earlier start-up run that is measured anew under its id
    (:attr:`StartupRequest.supersede`): its files' folder
    ``startup/run_date=<d>/run_id=<id>/`` is renamed ``.superseded-<UTC stamp>-run_id=<id>``
    (hidden: no reader globs it, Spark skips it) and its manifest is copied to
    ``runs/<id>/superseded-<UTC stamp>/manifest.json``. Returns its derived outputs that
    exist (stale until the new measurement's are computed)."""
    import glob
    import os
    import shutil

    run_id = str(previous["run_id"])
    stale = lab.derived_outputs(run_id, STARTUP)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    kept = lab.run_work_dir(run_id) / f"superseded-{stamp}"
    kept.mkdir(parents=True, exist_ok=True)
    for folder in lab.measured_dir(STARTUP).glob(f"run_date=*/run_id={glob.escape(run_id)}"):
        os.rename(folder, folder.with_name(f".superseded-{stamp}-{folder.name}"))
    shutil.copy2(lab.manifest_path(run_id), kept / "manifest.json")
    progress(f"start-up run {run_id} is measured anew: its earlier measurement is set aside "
             f"in {kept}")
    return stale


def open_startup(req: StartupRequest, progress: Progress = noop) -> StartupRun:
    """A start-up run opened (its manifest and files started), to be measured trial by trial
    (:func:`measure_trial`) and closed (:func:`finish_startup`): the version matrix measures
    its versions' runs so, a round at a time; :func:`execute_startup` measures one whole.

    Raises:
        ConfigError: a run id already taken, or a case the broker cannot serve at all.
    """
    run = StartupRun(req, progress)
    progress(f"start-up run {run.run_id}: {run.spec.probe_count()} probe(s); files in {run.dir}")
    for item in run.spec.unsupported():
        progress(f"not measured: {item['client']} with group.protocol={item['group_protocol']}: "
                 f"{item['reason']}")
    return run


def finish_startup(run: StartupRun, exc: BaseException | None = None) -> StartupResult:
    """Close ``run``: ``exc`` is what stopped it (None: it ended). Its status: ``complete``
    when every planned probe saw its first record, ``incomplete`` when a probe timed out or
    failed or a trial could not be measured (:attr:`StartupRun.trial_errors`, then the
    manifest's error), ``interrupted`` on Ctrl-C, ``failed`` otherwise. The files are
    written and the cluster is stopped and wiped; what was measured is kept."""
    if isinstance(exc, KeyboardInterrupt):
        run.status = "interrupted"
    elif isinstance(exc, (ClusterError, RunError)):
        run.status, run.error = "failed", str(exc)
    elif exc is not None:
        run.status, run.error = "failed", f"{type(exc).__name__}: {exc}"
    else:  # as the manifest will say: every probe saw its first record, or some did not
        run.status = ("complete" if all(r["status"] == "ok" for r in run.rows)
                      and not run.trial_errors else "incomplete")
        run.error = "; ".join(run.trial_errors) or None
    try:
        run.stream.close()
        run.write_run_doc()
        _close_manifest(run, summarize(run.rows))
    finally:
        stop_cluster(run)
    cases = summarize(run.rows)
    return StartupResult(run.run_id, run.manifest.status, run.dir, cases,
                         answer_lines(cases, run.default_delay_ms),
                         sum(1 for r in run.rows if r["status"] != "ok"))


def execute_startup(req: StartupRequest, progress: Progress = noop) -> StartupResult:
    """Measure every case of ``req.spec`` (see the module docstring); the result and the
    run's files.

    Raises:
        ClusterError: the run's cluster cannot start (its ports taken, no Java, ...).
        RunError: the cluster does not behave as the run needs.
        KeyboardInterrupt: after the files are written (status ``interrupted``).
    """
    run = open_startup(req, progress)
    try:
        for delay in run.spec.delays_ms:
            for trial in range(run.spec.trials):
                measure_trial(run, delay, trial)
    except BaseException as exc:
        finish_startup(run, exc)
        raise
    return finish_startup(run)
