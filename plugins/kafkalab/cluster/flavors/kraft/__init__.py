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
| :mod:`~kafkalab.cluster.flavors.kraft.security` | the optional SASL_SSL listener: its settings, SCRAM user and descriptor |
| this module | the flavor: ports and limits, status, where a node keeps its logs |
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafkalab import procs
from kafkalab.cluster.admin import admin_client
from kafkalab.cluster.descriptor import ClusterDescriptor, jvm_classpath, save_descriptor
from kafkalab.cluster.features import MODERN_PROTOCOL
from kafkalab.cluster.flavors.base import EmbeddedFlavor
from kafkalab.cluster.flavors.kraft import cds, launcher, quorum, security
from kafkalab.cluster.flavors.kraft.distribution import (
    DEFAULT_KAFKA_VERSION,
    ensure_kafka,
    kafka_version,
    locked_versions,
    pinned_version,
)
from kafkalab.cluster.java import ensure_java
from kafkalab.cluster.links.layout import LinkLayout
from kafkalab.cluster.links.toxiproxy import TOXIPROXY_VERSION, ensure_toxiproxy
from kafkalab.cluster.state import ClusterState, secure_descriptor_path
from kafkalab.errors import ClusterError
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
    has_links = True
    stop_together = True
    broker_session_timeout_s = 9.0  # broker.session.timeout.ms, Kafka's default
    message_max_bytes = launcher.BROKER_MESSAGE_MAX_BYTES

    @property
    def version(self) -> str:
        """The pinned Kafka release it runs (``$KAFKALAB_KAFKA_VERSION`` or
        :data:`~kafkalab.cluster.flavors.kraft.distribution.DEFAULT_KAFKA_VERSION`)."""
        return kafka_version()

    def runnable_versions(self) -> tuple[str, ...]:
        """Every release with a committed jar list (``jars-<version>.sha256``)."""
        return locked_versions()

    @contextmanager
    def running_version(self, version: str) -> Iterator[None]:
        with pinned_version(version):
            yield

    def install(self, lab: Path, progress: Progress) -> str | None:
        """Kafka's jars under ``<lab home>/kafka4/<version>/libs`` (Maven, sha256-checked):
        the lab home's (:func:`kafkalab.paths.lab_dir`), shared by every cluster lab under it
        whatever ``lab`` is; and the nodes' class-data archive beside them
        (:func:`kafkalab.cluster.flavors.kraft.cds.ensure_archive`, recorded once). Every
        other pinned release is installed too (a version matrix runs them)."""
        home = ensure_kafka(lab_dir(), None, progress)
        java = ensure_java()
        archive = cds.ensure_archive(home, java, jvm_classpath(home), launcher.NODE_JVM_OPTS,
                                     launcher.LOG4J2_CONFIG, progress)
        shared = f", class-data archive {archive.name}" if archive else ""
        # the other pinned releases too, for a version matrix (offline once fetched)
        others = [ensure_kafka(lab_dir(), v, progress).name for v in locked_versions()
                  if v != home.name]
        also = f"; also Kafka {', '.join(others)}" if others else ""
        try:  # only `cluster up --links` needs it: its absence is said, not fatal here
            proxy = f"; Toxiproxy {TOXIPROXY_VERSION} at {ensure_toxiproxy(lab_dir(), progress)}"
        except ClusterError as exc:
            proxy = f"; no Toxiproxy ({exc})"
        return f"Kafka {home.name} (KRaft) at {home}{shared}{also}{proxy}"

    default_sasl_ssl_port = 19792

    def start(self, lab: Path, brokers: int, base_port: int, control_port: int | None,
              state: ClusterState, progress: Progress,
              sasl_ssl_port: int | None = None,
              broker_settings: Mapping[str, str] | None = None,
              links: bool = False) -> ClusterDescriptor:
        """``brokers`` nodes: clients on ``base_port + i`` (SASL_SSL clients on
        ``sasl_ssl_port + i``), the quorum on ``control_port + i``; ``links``: every link
        through a proxy the lab can degrade (:mod:`kafkalab.cluster.links`)."""
        port = self.default_control_port if control_port is None else control_port
        assert port is not None
        if sasl_ssl_port is not None:
            security.read_password()  # before anything starts: one line when unset
        return launcher.start(lab, brokers, base_port, port, state, progress, sasl_ssl_port,
                              broker_settings, links)

    def broker_setting_problem(self, settings: dict[str, str]) -> str | None:
        """Any broker property but those the lab sets for a node's identity, listeners,
        directories and quorum (:data:`~kafkalab.cluster.flavors.kraft.launcher.
        LAB_OWNED_SETTINGS`)."""
        return launcher.broker_setting_problem(settings)

    def after_ready(self, lab: Path, state: ClusterState, progress: Progress) -> None:
        """With a SASL_SSL listener: the SCRAM user gets ``$KAFKALAB_SASL_PASSWORD`` (Admin
        API, PLAINTEXT listener) and its ``external`` descriptor is written."""
        ports = [int(p) for p in state.get("sasl_ssl_ports") or []]
        if not ports:
            return
        security.upsert_user(admin_client(self.descriptor(state), 10.0, quiet=True),
                             security.read_password())
        ca = Path(str(state.get("tls_ca")))
        d = security.secure_descriptor(ports, ca, str(state.get("kafka_version")),
                                       Path(state["kafka_home"]))
        save_descriptor(d, secure_descriptor_path(lab))
        progress(f"SASL_SSL listener{'s' if len(ports) > 1 else ''} {d.bootstrap_servers}: "
                 f"{security.SASL_MECHANISM} user {security.SASL_USER!r} (password from "
                 f"${security.PASSWORD_ENV}), CA {ca}; descriptor: "
                 f"{secure_descriptor_path(lab)}")

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
        wrote them, the SASL_SSL listeners and ``--broker-setting`` properties when it has
        them."""
        found = quorum.leader(self._data_dirs(state))
        secure = [f"{procs.HOST}:{p}" for p in state.get("sasl_ssl_ports") or []]
        links = state.get("links")
        return {"kafka_version": state.get("kafka_version"), "mode": "KRaft",
                "links": None if not links else
                f"{len(LinkLayout.from_state(links).proxies())} proxied links (API "
                f"{procs.HOST}:{links['api_port']})",
                "cluster_id": state.get("cluster_id"),
                "quorum_leader": None if found is None else found.node_id,
                "quorum_epoch": None if found is None else found.epoch,
                "sasl_ssl": ",".join(secure) or None,
                "broker_settings": dict(state.get("broker_settings", {})) or None}

    def _data_dirs(self, state: ClusterState) -> list[Path]:
        lab = Path(state["lab_dir"])
        return [launcher.node_data_dir(lab, int(p["id"])) for p in state["processes"]
                if p["role"] == "broker" and p["id"] is not None]


FLAVOR = KRaft()
"""The registry's entry (:data:`kafkalab.cluster.flavors.FLAVORS`)."""
