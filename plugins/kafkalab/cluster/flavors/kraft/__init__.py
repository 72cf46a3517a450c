"""Flavor ``kraft``: real Apache Kafka 4.x in KRaft mode (no ZooKeeper), the lab's default.

What platform teams run today: the broker and Kafka's own tools from Maven Central, one
JVM per node (a fault kills a process), every node a broker and a voter of the controller
quorum, modern clients negotiating versions (headers, timestamps, idempotence,
transactions, the ``consumer`` group protocol of KIP-848). Its pieces:

| module | role |
|---|---|
| :mod:`~kafkalab.cluster.flavors.kraft.distribution` | the jars, from Maven Central through the committed ``pom.xml``, checked against ``jars-<version>.sha256`` |
| :mod:`~kafkalab.cluster.flavors.kraft.launcher` | the nodes' configs, formatting their directories, starting them |
| :mod:`~kafkalab.cluster.flavors.kraft.quorum` | the controller quorum's leader, read from the nodes' ``quorum-state`` files |
| this module | the flavor: ports and limits, status, where a node keeps its logs |
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.cluster.features import MODERN_PROTOCOL
from kafkalab.cluster.flavors.base import EmbeddedFlavor
from kafkalab.cluster.flavors.kraft import launcher, quorum
from kafkalab.cluster.flavors.kraft.distribution import (
    DEFAULT_KAFKA_VERSION,
    ensure_kafka,
    kafka_version,
)
from kafkalab.cluster.state import ClusterState
from kafkalab.paths import lab_dir
from kafkalab.progress import Progress

__all__ = ["FLAVOR", "KRaft"]


class KRaft(EmbeddedFlavor):
    """Apache Kafka 4.x, KRaft: 1..5 combined broker+controller nodes on 127.0.0.1."""

    name = launcher.FLAVOR_NAME
    label = "Apache Kafka 4.x (KRaft)"
    protocols = (MODERN_PROTOCOL,)
    max_brokers = 5
    default_base_port = 19292
    default_control_port = 19592
    control_port_name = "KRaft controller"
    fixed_broker_ids = True
    hosts_faults = True
    stop_together = True
    broker_session_timeout_s = 9.0  # broker.session.timeout.ms, Kafka's default
    message_max_bytes = launcher.BROKER_MESSAGE_MAX_BYTES

    @property
    def version(self) -> str:
        """The pinned Kafka release it runs (``$KAFKALAB_KAFKA_VERSION`` or
        :data:`~kafkalab.cluster.flavors.kraft.distribution.DEFAULT_KAFKA_VERSION`)."""
        return kafka_version()

    def install(self, lab: Path, progress: Progress) -> str | None:
        """Kafka's jars under ``<lab home>/kafka4/<version>/libs`` (Maven, sha256-checked):
        the lab home's (:func:`kafkalab.paths.lab_dir`), shared by every cluster lab under it
        whatever ``lab`` is."""
        home = ensure_kafka(lab_dir(), None, progress)
        return f"Kafka {home.name} (KRaft) at {home}"

    def start(self, lab: Path, brokers: int, base_port: int, control_port: int | None,
              state: ClusterState, progress: Progress) -> ClusterDescriptor:
        """``brokers`` nodes: clients on ``base_port + i``, the quorum on
        ``control_port + i``."""
        port = self.default_control_port if control_port is None else control_port
        assert port is not None
        return launcher.start(lab, brokers, base_port, port, state, progress)

    def descriptor(self, state: ClusterState) -> ClusterDescriptor:
        return launcher.descriptor_of(
            int(state["brokers"]), [int(p) for p in state["broker_ports"]],
            Path(state["kafka_home"]), str(state.get("kafka_version") or DEFAULT_KAFKA_VERSION))

    def registration_problem(self, state: ClusterState) -> str | None:
        """No quorum leader elected yet (brokers' registration is seen in the metadata)."""
        return None if quorum.leader(self._data_dirs(state)) is not None \
            else "no KRaft controller quorum leader elected"

    def broker_data_dir(self, lab: Path, broker_id: int) -> Path:
        """``<lab>/cluster/data/node<id>`` (its ``log.dirs``)."""
        return launcher.node_data_dir(lab, broker_id)

    has_controller_quorum = True

    def controller_leader(self, state: ClusterState) -> tuple[int, int] | None:
        """The quorum's leader and epoch as the nodes' ``quorum-state`` files say."""
        found = quorum.leader(self._data_dirs(state))
        return None if found is None else (found.node_id, found.epoch)

    def status_details(self, state: ClusterState) -> dict[str, Any]:
        """The Kafka version, ``KRaft``, the quorum's leader and epoch as the nodes last
        wrote them."""
        found = quorum.leader(self._data_dirs(state))
        return {"kafka_version": state.get("kafka_version"), "mode": "KRaft",
                "cluster_id": state.get("cluster_id"),
                "quorum_leader": None if found is None else found.node_id,
                "quorum_epoch": None if found is None else found.epoch}

    def _data_dirs(self, state: ClusterState) -> list[Path]:
        lab = Path(state["lab_dir"])
        return [launcher.node_data_dir(lab, int(p["id"])) for p in state["processes"]
                if p["role"] == "broker" and p["id"] is not None]


FLAVOR = KRaft()
"""The registry's entry (:data:`kafkalab.cluster.flavors.FLAVORS`)."""
