"""Starting Apache Kafka 0.9.0.1 (JVM): one ZooKeeper and 1..N brokers, and their configs.

Started with ``java -cp <libs>`` directly (the distribution's ``bin/*.sh`` fail on Java 17),
every process bound to 127.0.0.1. Files under ``<lab_dir>/cluster/``: ``config/``
(``zookeeper.properties``, ``serverN.properties``, regenerated on every start), ``logs/``
(``zookeeper/``, ``brokerN/``: ``stdout.log`` plus log4j files) and ``data/``
(``zookeeper``, ``brokerN``, and ``kafka09-topology.json``, the broker count that made them).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from kafkalab import procs
from kafkalab.cluster import zookeeper
from kafkalab.cluster.descriptor import ClusterDescriptor, jvm_classpath
from kafkalab.cluster.features import LEGACY_PROTOCOL
from kafkalab.cluster.flavors.kafka09.distribution import KAFKA_VERSION, ensure_kafka_distribution
from kafkalab.cluster.java import ensure_java, properties_text
from kafkalab.cluster.processes import start_process
from kafkalab.cluster.state import ClusterState, ProcessRecord, cluster_dir
from kafkalab.progress import Progress
from kafkalab.store import atomic_write, atomic_write_json, read_json

__all__ = [
    "BROKER_JVM_OPTS",
    "BROKER_MESSAGE_MAX_BYTES",
    "FLAVOR_NAME",
    "ZK_JVM_OPTS",
    "broker_properties",
    "descriptor_of",
    "start",
    "zookeeper_properties",
]

FLAVOR_NAME = "kafka09"
"""The flavor's name in descriptors and state files."""

BROKER_MESSAGE_MAX_BYTES = 16777216
"""``message.max.bytes`` (and ``replica.fetch.max.bytes``) of the embedded brokers: 16 MiB."""

BROKER_JVM_OPTS = [
    "-Xms256m",
    "-Xmx512m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
]
ZK_JVM_OPTS = ["-Xmx128m", "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true"]


def descriptor_of(n: int, zk_port: int, ports: list[int], home: Path) -> ClusterDescriptor:
    """The descriptor of an embedded Kafka 0.9.0.1 cluster of ``n`` brokers on ``ports``."""
    return ClusterDescriptor(
        name="embedded",
        flavor=FLAVOR_NAME,
        protocol=LEGACY_PROTOCOL,
        version=KAFKA_VERSION,
        is_emulator=False,
        bootstrap_servers=",".join(f"{procs.HOST}:{p}" for p in ports),
        broker_count=n,
        zookeeper=f"{procs.HOST}:{zk_port}",
        kafka_home=str(home),
    )


def zookeeper_properties(data_dir: Path, zk_port: int) -> dict[str, Any]:
    """``zookeeper.properties`` of the embedded ZooKeeper."""
    return {
        "dataDir": data_dir,
        "clientPort": zk_port,
        "clientPortAddress": procs.HOST,
        "maxClientCnxns": 0,
        "tickTime": 2000,
    }


def broker_properties(
    broker_id: int, port: int, zk_port: int, log_dir: Path, n: int
) -> dict[str, Any]:
    """``serverN.properties`` of broker ``broker_id`` in a cluster of ``n`` brokers."""
    return {
        "broker.id": broker_id,
        "listeners": f"PLAINTEXT://{procs.HOST}:{port}",
        # with only advertised.host.name set, 0.9 would advertise port 9092
        "advertised.listeners": f"PLAINTEXT://{procs.HOST}:{port}",
        "advertised.host.name": procs.HOST,
        "advertised.port": port,
        "host.name": procs.HOST,
        "port": port,
        "log.dirs": log_dir,
        "zookeeper.connect": f"{procs.HOST}:{zk_port}",
        "zookeeper.connection.timeout.ms": 10000,
        "message.max.bytes": BROKER_MESSAGE_MAX_BYTES,
        "replica.fetch.max.bytes": BROKER_MESSAGE_MAX_BYTES,
        "socket.request.max.bytes": 104857600,
        "auto.create.topics.enable": "false",
        "delete.topic.enable": "true",
        "offsets.topic.replication.factor": min(3, n),
        "offsets.topic.num.partitions": 1,
        "num.partitions": 1,
        "default.replication.factor": 1,
        "unclean.leader.election.enable": "false",
        "group.min.session.timeout.ms": 1000,
        "controlled.shutdown.enable": "true",
        "controlled.shutdown.retry.backoff.ms": 1000,
        "log.cleaner.dedupe.buffer.size": 16777216,
    }


def _wipe_if_topology_changed(data: Path, n: int, progress: Progress) -> None:
    """ZooKeeper and broker data made by another broker count cannot be reused: wipe them."""
    marker = data / "kafka09-topology.json"
    try:
        old = read_json(marker)
    except (OSError, ValueError):
        old = None
    if isinstance(old, dict) and old.get("brokers") != n:
        progress(
            f"previous {FLAVOR_NAME} data was made by {old.get('brokers')} broker(s), not {n}: "
            "wiping ZooKeeper and broker data"
        )
        shutil.rmtree(data / "zookeeper", ignore_errors=True)
        for d in data.glob("broker*"):
            shutil.rmtree(d, ignore_errors=True)
    atomic_write_json(marker, {"brokers": n})


def start(
    lab: Path,
    n: int,
    zk_port: int,
    base_port: int,
    state: ClusterState,
    progress: Progress,
) -> ClusterDescriptor:
    """Start ZooKeeper, wait until it answers, then start ``n`` brokers (not waiting for them).

    Every process is recorded in ``state`` (and the state file) as soon as it is spawned.

    Raises:
        ClusterError: a port is in use, ZooKeeper does not come up, or a dead broker's old
            registration does not expire.
    """
    home = ensure_kafka_distribution(lab, progress)
    java = ensure_java()
    cp = jvm_classpath(home)
    ports = [base_port + i for i in range(n)]
    procs.check_ports_free([zk_port, *ports])
    base = cluster_dir(lab)
    config, logs, data = base / "config", base / "logs", base / "data"
    for d in (config, logs, data):
        d.mkdir(parents=True, exist_ok=True)
    _wipe_if_topology_changed(data, n, progress)
    log4j = home / "config" / "log4j.properties"
    descriptor = descriptor_of(n, zk_port, ports, home)
    state.update(
        {
            "flavor": FLAVOR_NAME,
            "brokers": n,
            "kafka_home": str(home),
            "zookeeper_port": zk_port,
            "broker_ports": ports,
        }
    )

    def start_jvm(role: str, proc_id: int | None, port: int, name: str,
                  props: dict[str, Any], opts: list[str], main: str) -> ProcessRecord:
        """Write ``<config>/<name>.properties``, then start ``main`` on it, logging to
        ``<logs>/<role dir>``; the properties file's path marks the process as ours."""
        conf = config / f"{name}.properties"
        logs_dir = logs / (role if proc_id is None else f"{role}{proc_id}")
        logs_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(conf, properties_text(props, "embedded lab cluster"))
        cmd = [java, *opts, f"-Dlog4j.configuration=file:{log4j}",
               f"-Dkafka.logs.dir={logs_dir}", "-cp", cp, main, str(conf)]
        return start_process(lab, state, role=role, proc_id=proc_id, port=port,
                             marker=str(conf), config=str(conf), cmd=cmd, logs_dir=logs_dir)

    progress(f"starting ZooKeeper on {procs.HOST}:{zk_port}")
    zk_proc = start_jvm("zookeeper", None, zk_port, "zookeeper",
                        zookeeper_properties(data / "zookeeper", zk_port), ZK_JVM_OPTS,
                        "org.apache.zookeeper.server.quorum.QuorumPeerMain")
    zookeeper.wait_serving(zk_proc)

    # after a crash, ZooKeeper restores the dead brokers' sessions until they time out
    zookeeper.wait_broker_ids_free(zk_port, set(range(n)), progress)

    for i, port in enumerate(ports):
        progress(f"starting broker {i} on {procs.HOST}:{port}")
        start_jvm("broker", i, port, f"server{i}",
                  broker_properties(i, port, zk_port, data / f"broker{i}", n), BROKER_JVM_OPTS,
                  "kafka.Kafka")
    return descriptor
