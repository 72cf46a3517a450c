"""Starting Apache Kafka 4.x in KRaft mode: 1..N combined broker+controller nodes, one JVM
each, and their configs.

Every node is a voter of one controller quorum (``controller.quorum.voters``) and a broker;
each has its own log and metadata directory, formatted once with Kafka's own
``kafka.tools.StorageTool format`` (nodes are formatted side by side), and binds
127.0.0.1 only. Files under ``<lab>/cluster/``: ``config/nodeN.properties`` (regenerated on
every start), ``logs/nodeN/stdout.log`` and ``data/nodeN/`` (its ``log.dirs``, with
``__cluster_metadata-0/``), and ``data/kraft-topology.json`` (the node count, ports, Kafka
version and cluster id that made the data: a different one wipes and formats again).

The brokers run Kafka's own defaults except :data:`LAB_OVERRIDES` and what one machine
needs (ports, directories, heap, internal topics' replication factor on fewer than three
nodes); ``docs/clusters.md`` lists them and why.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafkalab import procs
from kafkalab.cluster.descriptor import ClusterDescriptor, jvm_classpath
from kafkalab.cluster.features import MODERN_PROTOCOL
from kafkalab.cluster.flavors.kraft import cds, security
from kafkalab.cluster.flavors.kraft.distribution import ensure_kafka, kafka_version
from kafkalab.cluster.java import ensure_java, properties_text
from kafkalab.cluster.links import start_links
from kafkalab.cluster.links.layout import LinkLayout
from kafkalab.cluster.processes import start_process
from kafkalab.cluster.state import ClusterState, cluster_dir, tls_dir
from kafkalab.cluster.tls import TlsMaterial, ensure_tls
from kafkalab.errors import ClusterError
from kafkalab.paths import lab_dir
from kafkalab.progress import Progress
from kafkalab.store import atomic_write, atomic_write_json, read_json

__all__ = [
    "FLAVOR_NAME",
    "LAB_OVERRIDES",
    "LOG4J2_CONFIG",
    "NODE_JVM_OPTS",
    "descriptor_of",
    "node_data_dir",
    "node_properties",
    "start",
]

FLAVOR_NAME = "kraft"
"""The flavor's name in descriptors and state files."""

BROKER_MESSAGE_MAX_BYTES = 16777216
"""``message.max.bytes`` of the embedded brokers: 16 MiB (seed 000 sends 10 MB images;
Kafka's default is 1 MiB)."""

LAB_OVERRIDES: dict[str, Any] = {
    "message.max.bytes": BROKER_MESSAGE_MAX_BYTES,
    # the lab creates every topic it uses; a mistyped name must fail, not create a topic
    "auto.create.topics.enable": "false",
    # the consumer-group fault experiments use session timeouts down to 1 s (default 6 s),
    # under KIP-848's consumer protocol too, set per group (defaults 45 s and 5 s)
    "group.min.session.timeout.ms": 1000,
    "group.consumer.min.session.timeout.ms": 1000,
    "group.consumer.min.heartbeat.interval.ms": 100,
}
"""Broker settings the lab changes from Kafka's defaults on purpose (besides a node's
identity, listeners, directories and internal topics' replication factor)."""

NODE_JVM_OPTS = [
    "-Xms256m",
    "-Xmx768m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
]
"""Kafka's scripts give a broker ``-Xmx1G -Xms1G``; three nodes on two cores get less (and
G1 with Kafka's own pause target)."""

LOG4J2_CONFIG = Path(__file__).resolve().parent / "log4j2.properties"
"""The nodes' logging: INFO to their ``stdout.log``."""

_FORMAT_TIMEOUT_S = 120


def new_cluster_id() -> str:
    """A KRaft cluster id as Kafka writes one (a random UUID, URL-safe base64, 22 chars).

    Like Kafka's own ``Uuid.randomUuid``, never one that starts with ``-``: the storage
    tool's argument parser would read it as an option (1 id in 64 did, and failed a format).
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def node_data_dir(lab: Path, node_id: int) -> Path:
    """``<lab>/cluster/data/node<id>``: node ``node_id``'s ``log.dirs`` (and metadata log)."""
    return cluster_dir(lab) / "data" / f"node{node_id}"


def descriptor_of(n: int, ports: list[int], home: Path, version: str) -> ClusterDescriptor:
    """The descriptor of an embedded KRaft cluster of ``n`` nodes on ``ports``."""
    return ClusterDescriptor(
        name="embedded",
        flavor=FLAVOR_NAME,
        protocol=MODERN_PROTOCOL,
        version=version,
        is_emulator=False,
        bootstrap_servers=",".join(f"{procs.HOST}:{p}" for p in ports),
        broker_count=n,
        kafka_home=str(home),
    )


LAB_OWNED_SETTINGS = frozenset({
    "process.roles", "node.id", "broker.id", "controller.quorum.voters",
    "controller.quorum.bootstrap.servers", "listeners", "advertised.listeners",
    "controller.listener.names", "inter.broker.listener.name",
    "listener.security.protocol.map", "log.dirs", "log.dir", "metadata.log.dir"})
"""Broker properties ``cluster up --broker-setting`` may not change: a node's identity, its
listeners, directories and quorum are the lab's (its ports, its folders, its state file)."""

_SETTING_KEY = re.compile(r"^[a-z][a-z0-9]*([._-][a-z0-9]+)*$")


def broker_setting_problem(settings: Mapping[str, str]) -> str | None:
    """Why ``settings`` cannot be given to the nodes, or None: a key that is not a property
    name, one the lab owns (:data:`LAB_OWNED_SETTINGS`, the SASL_SSL listener's ``listener.
    name.*``), or a value with a line break."""
    for key, value in settings.items():
        if not _SETTING_KEY.match(key):
            return f"{key[:60]!r} is not a broker property name"
        if key in LAB_OWNED_SETTINGS or key.startswith("listener.name."):
            return f"{key} is set by the lab (node identity, listeners, directories, quorum)"
        if "\n" in value or "\r" in value:
            return f"the value of {key} has a line break"
    return None


def node_properties(node_id: int, port: int, controller_ports: list[int],
                    log_dir: Path, sasl_ssl: tuple[int, TlsMaterial] | None = None,
                    broker_settings: Mapping[str, str] | None = None,
                    links: LinkLayout | None = None) -> dict[str, Any]:
    """``nodeN.properties`` of node ``node_id`` in a quorum on ``controller_ports``; with
    ``sasl_ssl`` = ``(port, TLS material)`` also a SASL_SSL listener on that port
    (:mod:`~kafkalab.cluster.flavors.kraft.security`); with ``links``, a listener per plane,
    every peer reached through its proxy (:meth:`~kafkalab.cluster.links.layout.LinkLayout.
    node_listeners`); ``broker_settings`` (``cluster up --broker-setting``) last, over
    Kafka's defaults and the lab's overrides."""
    n = len(controller_ports)
    voters = ",".join(f"{i}@{procs.HOST}:{c}" for i, c in enumerate(controller_ports))
    client = f"PLAINTEXT://{procs.HOST}:{port}"
    protocols = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    secured: dict[str, Any] = {}
    if sasl_ssl is not None:
        client += f",{security.LISTENER}://{procs.HOST}:{sasl_ssl[0]}"
        protocols += f",{security.LISTENER}:{security.LISTENER}"
        secured = security.listener_properties(sasl_ssl[1])
    listeners: dict[str, Any] = {
        "controller.quorum.voters": voters,
        "listeners": f"{client},CONTROLLER://{procs.HOST}:{controller_ports[node_id]}",
        "advertised.listeners": client,
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": protocols,
    } if links is None else links.node_listeners(node_id)
    return {
        "process.roles": "broker,controller",
        "node.id": node_id,
        "controller.listener.names": "CONTROLLER",
        **listeners,
        **secured,
        "log.dirs": log_dir,
        # internal topics: Kafka's defaults (3, min ISR 2) where there are three nodes
        "offsets.topic.replication.factor": min(3, n),
        "transaction.state.log.replication.factor": min(3, n),
        "transaction.state.log.min.isr": min(2, n),
        "share.coordinator.state.topic.replication.factor": min(3, n),
        "share.coordinator.state.topic.min.isr": min(2, n),
        **LAB_OVERRIDES,
        **(broker_settings or {}),
    }


def _topology(lab: Path, n: int, ports: list[int], controller_ports: list[int],
              version: str, progress: Progress, links: bool = False) -> str:
    """The cluster id of the data under ``<lab>/cluster/data``; data made by another node
    count, other ports, another Kafka version or with(out) links is wiped first (and a new id
    drawn)."""
    data = cluster_dir(lab) / "data"
    marker = data / "kraft-topology.json"
    want = {"nodes": n, "broker_ports": ports, "controller_ports": controller_ports,
            "kafka_version": version, "links": links}
    try:
        old = read_json(marker)
    except (OSError, ValueError):
        old = None
    if isinstance(old, dict) and old.get("cluster_id") and \
            {k: old.get(k, False if k == "links" else None) for k in want} == want:
        return str(old["cluster_id"])
    if any(data.glob("node*")):
        progress("previous KRaft data was made by another topology or Kafka version: wiping it")
        for d in data.glob("node*"):
            shutil.rmtree(d, ignore_errors=True)
    cluster_id = new_cluster_id()
    data.mkdir(parents=True, exist_ok=True)
    atomic_write_json(marker, {**want, "cluster_id": cluster_id})
    return cluster_id


def _format(java: str, cp: str, cluster_id: str, confs: dict[int, Path], lab: Path,
            progress: Progress, shared: list[str]) -> None:
    """Format every node whose directory has no ``meta.properties`` yet, side by side
    (``shared``: the class-data archive's JVM options, :func:`kafkalab.cluster.flavors.kraft.
    cds.jvm_options`).

    Raises:
        ClusterError: a format failed (its last line).
    """
    todo = {i: c for i, c in confs.items() if not (node_data_dir(lab, i) / "meta.properties").is_file()}
    if not todo:
        return
    progress(f"formatting {len(todo)} KRaft node director{'y' if len(todo) == 1 else 'ies'}")
    running = {
        i: subprocess.Popen(
            [java, "-Xmx256m", *shared, f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}", "-cp", cp,
             "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c", str(conf)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i, conf in todo.items()}
    for i, proc in running.items():
        try:
            out, _ = proc.communicate(timeout=_FORMAT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise ClusterError(f"formatting node {i} took over {_FORMAT_TIMEOUT_S} s") from None
        if proc.returncode != 0:
            lines = [ln for ln in out.splitlines() if ln.strip()]
            raise ClusterError(f"formatting node {i}'s directory {node_data_dir(lab, i)} failed: "
                               f"{lines[-1] if lines else 'no output'}")


def start(lab: Path, n: int, base_port: int, control_port: int, state: ClusterState,
          progress: Progress, sasl_ssl_port: int | None = None,
          broker_settings: Mapping[str, str] | None = None,
          links: bool = False) -> ClusterDescriptor:
    """Format (when new) and start ``n`` combined nodes (not waiting for them to serve):
    node i serves clients on ``base_port + i`` (and SASL_SSL clients on ``sasl_ssl_port +
    i`` when given) and the quorum on ``control_port + i``. With ``links``, every client,
    replication and controller link goes through a proxy the lab can degrade, started first
    (:mod:`kafkalab.cluster.links`; its ports in :mod:`~kafkalab.cluster.links.layout`).

    Every process is recorded in ``state`` (and the state file) as soon as it is spawned.

    Raises:
        ConfigError: ``$KAFKALAB_KAFKA_VERSION`` names a version that is not pinned.
        ClusterError: a port is in use, the installation is missing or broken, Java is too
            old, or a format failed.
    """
    version = kafka_version()
    # the jars are the lab home's, shared by every cluster lab under it (<lab>/faults too)
    home = ensure_kafka(lab_dir(), version, progress)
    java = ensure_java()
    cp = jvm_classpath(home)
    ports = [base_port + i for i in range(n)]
    controller_ports = [control_port + i for i in range(n)]
    secure_ports = [] if sasl_ssl_port is None else \
        security.check_ports(sasl_ssl_port, n, [*ports, *controller_ports])
    layout = LinkLayout(n, base_port, control_port) if links else None
    if layout is None:
        procs.check_ports_free([*ports, *controller_ports, *secure_ports])
    else:
        for host, taken in layout.host_ports().items():
            procs.check_ports_free(taken, host)
    tls = ensure_tls(tls_dir(lab), procs.HOST) if secure_ports else None
    base = cluster_dir(lab)
    config, logs = base / "config", base / "logs"
    for d in (config, logs):
        d.mkdir(parents=True, exist_ok=True)
    cluster_id = _topology(lab, n, ports, controller_ports, version, progress, links)
    confs: dict[int, Path] = {}
    for i, port in enumerate(ports):
        conf = config / f"node{i}.properties"
        secured = None if tls is None else (secure_ports[i], tls)
        atomic_write(conf, properties_text(node_properties(i, port, controller_ports,
                                                           node_data_dir(lab, i), secured,
                                                           broker_settings, layout),
                                           "embedded KRaft cluster"))
        confs[i] = conf
    shared = cds.jvm_options(home, java, cp)
    _format(java, cp, cluster_id, confs, lab, progress, shared)
    state.update({"flavor": FLAVOR_NAME, "brokers": n, "kafka_home": str(home),
                  "kafka_version": version, "cluster_id": cluster_id, "broker_ports": ports,
                  "controller_ports": controller_ports})
    if broker_settings:
        state["broker_settings"] = dict(broker_settings)
    if secure_ports:
        state["sasl_ssl_ports"] = secure_ports
        state["tls_ca"] = str(tls.ca_path) if tls else None
    resolve = [[] for _ in ports] if layout is None else \
        [[opt] for opt in start_links(lab, layout, state, lab_dir(), progress)]
    for i, port in enumerate(ports):
        logs_dir = logs / f"node{i}"
        logs_dir.mkdir(parents=True, exist_ok=True)
        progress(f"starting KRaft node {i} (broker {procs.HOST}:{port}, controller "
                 f"{procs.HOST}:{controller_ports[i]})")
        cmd = [java, *NODE_JVM_OPTS, *resolve[i], *shared,
               f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}",
               f"-Dkafka.logs.dir={logs_dir}", "-cp", cp, "kafka.Kafka", str(confs[i])]
        start_process(lab, state, role="broker", proc_id=i, port=port, marker=str(confs[i]),
                      config=str(confs[i]), cmd=cmd, logs_dir=logs_dir,
                      bound_port=None if layout is None else layout.listener_port("client", i))
    return descriptor_of(n, ports, home, version)
