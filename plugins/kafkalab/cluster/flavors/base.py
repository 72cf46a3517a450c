"""What a broker flavor is: the one class the rest of the lab asks about a kind of cluster.

A *flavor* is a kind of cluster the lab can measure: one the lab starts itself on this
machine (an :class:`EmbeddedFlavor`: its ports, its broker limit, how it starts, when it is
ready, where its brokers keep their logs, where leadership is read) or one a user points
at (a plain :class:`Flavor`: how its descriptor must look). Every flavor answers
:meth:`Flavor.features` — what its clusters can do — so no other module ever compares a
flavor's name: SQLAlchemy's dialects, for Kafka.

Adding a flavor is one module (or package) under ``kafkalab/cluster/flavors/`` with a
subclass of one of these, plus its entry in :data:`kafkalab.cluster.flavors.FLAVORS` and its
tests; ``docs/architecture.md`` has the checklist.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from kafkalab.cluster.admin import admin_client
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.cluster.features import PROTOCOLS, Features, kafka_features, parse_version
from kafkalab.cluster.partitions import AdminPartitions, PartitionReader
from kafkalab.cluster.state import ClusterState, ProcessRecord
from kafkalab.errors import ConfigError
from kafkalab.progress import Progress

__all__ = ["EmbeddedFlavor", "Flavor"]


class Flavor:
    """A kind of cluster: how its descriptor must look and what it can do."""

    name: ClassVar[str]
    """Its name in descriptors (``flavor:``) and on the command line."""
    label: ClassVar[str]
    """How tables and messages name it (``Apache Kafka 0.9.0.1 with ZooKeeper``)."""
    embedded: ClassVar[bool] = False
    """The lab starts it on this machine (``kafkalab cluster up --flavor NAME``)."""
    emulator: ClassVar[bool] = False
    """It is not Apache Kafka: its figures are labelled EMULATOR everywhere."""
    protocols: ClassVar[tuple[str, ...]] = PROTOCOLS
    """The client protocols a descriptor of this flavor may declare."""
    message_max_bytes: ClassVar[int | None] = None
    """The brokers' ``message.max.bytes`` when the lab set it (an embedded cluster); None
    when unknown (a topic without an override then gets Kafka's default)."""

    def check_descriptor(self, d: ClusterDescriptor) -> None:
        """Refuse a descriptor this flavor cannot be (its protocol, its emulator flag).

        Raises:
            ValueError: one line naming the field (a descriptor's validator turns it into
                the file's error).
        """
        if d.protocol not in self.protocols:
            raise ValueError(f"flavor {self.name} needs protocol {' or '.join(self.protocols)}")

    def broker_version(self, d: ClusterDescriptor) -> tuple[int, ...] | None:
        """The brokers' version as numbers; None when unknown (``unknown``, an emulator's)."""
        return parse_version(d.version)

    def features(self, d: ClusterDescriptor) -> Features:
        """What a cluster of this flavor described by ``d`` can do."""
        found = kafka_features(d.protocol, self.broker_version(d))
        return replace(found, emulator=True) if self.emulator or d.is_emulator else found


class EmbeddedFlavor(Flavor, ABC):
    """A flavor the lab starts on this machine, every process bound to 127.0.0.1, recorded in
    the cluster's state file (:mod:`kafkalab.cluster.state`) so that ``down`` stops exactly
    what ``up`` started."""

    embedded = True
    max_brokers: ClassVar[int]
    """At most this many brokers on one machine."""
    default_base_port: ClassVar[int]
    """Port of broker 0 when none is asked for; broker i listens on ``base + i``."""
    default_control_port: ClassVar[int | None] = None
    """Port of its coordination service (ZooKeeper, a controller) when none is asked for;
    None when it has none."""
    control_port_name: ClassVar[str | None] = None
    """What that port serves, for messages (``ZooKeeper``)."""
    fixed_broker_ids: ClassVar[bool] = True
    """Broker i has id i (readiness waits for each id); False when the server picks it."""
    broker_session_timeout_s: ClassVar[float] = 6.0
    """How long a broker may go silent before the cluster takes its leadership away
    (ZooKeeper's session, or KRaft's ``broker.session.timeout.ms``): a frozen leader must
    stay frozen longer than this to become a zombie."""
    stop_together: ClassVar[bool] = False
    """``down`` signals every broker at once rather than one after another (KRaft: each
    broker's controlled shutdown needs the quorum the others are part of)."""
    hosts_faults: ClassVar[bool] = False
    """One JVM per broker with real replication: the fault experiments may break it."""

    @property
    @abstractmethod
    def version(self) -> str:
        """The version of what it runs (its descriptors' ``version``)."""

    def runnable_versions(self) -> tuple[str, ...]:
        """Every version this flavor can start (a version matrix picks among them); one,
        :attr:`version`, unless the flavor's version is a setting."""
        return (self.version,)

    @contextmanager
    def running_version(self, version: str) -> Iterator[None]:
        """Within the block, :attr:`version` (and so what :func:`cluster_up` starts) is
        ``version``.

        Raises:
            ConfigError: a version this flavor cannot run (:meth:`runnable_versions`).
        """
        if version not in self.runnable_versions():
            raise ConfigError(f"{self.label} cannot run version {version} (it runs "
                              f"{', '.join(self.runnable_versions())})")
        yield

    def embedded_features(self) -> Features:
        """What a cluster of this flavor will be able to do, known before it starts (its
        protocol and the version it runs)."""
        return kafka_features(self.protocols[0], parse_version(self.version))

    def install(self, lab: Path, progress: Progress) -> str | None:
        """Fetch and verify what it runs (idempotent; ``make setup`` calls it for every
        embedded flavor); a line saying what is installed where, or None when it needs
        nothing beyond the Python packages."""
        return None

    def check_request(self, brokers: int, base_port: int | None,
                      control_port: int | None, sasl_ssl_port: int | None = None,
                      broker_settings: Mapping[str, str] | None = None,
                      links: bool = False) -> None:
        """Refuse a broker count, ports, a SASL_SSL listener, broker settings or degradable
        links ``cluster up`` cannot honour.

        Raises:
            ConfigError: one line naming the option.
        """
        if not isinstance(brokers, int) or brokers < 1:
            raise ConfigError(f"--brokers must be a positive integer, got {brokers!r}")
        if brokers > self.max_brokers == 1:
            raise ConfigError(f"{self.name} is single-node: use --brokers 1 (replication needs "
                              "a flavor with several brokers)")
        if brokers > self.max_brokers:
            raise ConfigError(f"--brokers: {self.name} runs at most {self.max_brokers} brokers "
                              "on one machine")
        if links and not self.has_links:
            raise ConfigError(f"--links: the {self.name} flavor has no degradable links (the "
                              "kraft flavor has)")
        if links and sasl_ssl_port is not None:
            raise ConfigError("--links and --sasl-ssl-port do not go together (the SASL_SSL "
                              "listener has no proxy)")
        if sasl_ssl_port is not None and self.default_sasl_ssl_port is None:
            raise ConfigError(f"--sasl-ssl: the {self.name} flavor has no SASL_SSL listener "
                              "(the kraft flavor has)")
        for option, port in (("--base-port", base_port), ("--control-port", control_port),
                             ("--sasl-ssl-port", sasl_ssl_port)):
            if port is not None and not (1024 <= int(port) <= 65535 - brokers):
                raise ConfigError(f"{option} {port} is outside 1024..{65535 - brokers}")
        if broker_settings:
            problem = self.broker_setting_problem(dict(broker_settings))
            if problem:
                raise ConfigError(f"--broker-setting: {problem}")

    def broker_setting_problem(self, settings: dict[str, str]) -> str | None:
        """Why the brokers cannot start with ``settings`` (``cluster up --broker-setting``),
        or None. A flavor that takes them overrides this."""
        return f"the {self.name} flavor takes no broker settings (the kraft flavor does)"

    has_links: ClassVar[bool] = False
    """True when ``cluster up --links`` can route its links through degradable proxies
    (:mod:`kafkalab.cluster.links`)."""

    default_sasl_ssl_port: ClassVar[int | None] = None
    """Port of broker 0's SASL_SSL listener (``cluster up --sasl-ssl``); None when the flavor
    cannot start one."""

    @abstractmethod
    def start(self, lab: Path, brokers: int, base_port: int, control_port: int | None,
              state: ClusterState, progress: Progress,
              sasl_ssl_port: int | None = None,
              broker_settings: Mapping[str, str] | None = None,
              links: bool = False) -> ClusterDescriptor:
        """Start the cluster's processes (not waiting until they serve), each recorded in
        ``state`` (and the state file) as soon as it is spawned; the cluster's descriptor.
        ``links``: through degradable proxies (only asked of a flavor that :attr:`has_links`).
        ``sasl_ssl_port``: also a SASL_SSL listener on broker i at ``sasl_ssl_port + i``
        (only asked of a flavor with a :attr:`default_sasl_ssl_port`). ``broker_settings``:
        broker properties that replace Kafka's defaults (only given when
        :meth:`broker_setting_problem` accepted them).

        Raises:
            ClusterError: a port is in use, or a process could not be started.
            ConfigError: what a SASL_SSL listener needs is missing.
        """

    def after_ready(self, lab: Path, state: ClusterState, progress: Progress) -> None:
        """Finish a freshly started cluster once every broker serves (a SASL_SSL listener's
        user and descriptor); nothing by default.

        Raises:
            ClusterError: the brokers refused it.
        """

    @abstractmethod
    def descriptor(self, state: ClusterState) -> ClusterDescriptor:
        """The descriptor of the running cluster ``state`` records."""

    def registration_problem(self, state: ClusterState) -> str | None:
        """What keeps a cluster whose processes listen from serving yet (e.g. brokers not
        registered, no controller elected), or None when nothing does. Polled by
        :func:`kafkalab.cluster.readiness.wait_ready` until it answers None."""
        return None

    def restart_order(self, records: list[ProcessRecord]) -> list[ProcessRecord]:
        """The order dead processes are started again in (coordination service first)."""
        return sorted(records, key=lambda p: 0 if p["role"] != "broker" else 1)

    def before_restart(self, state: ClusterState, record: ProcessRecord,
                       progress: Progress) -> None:
        """Wait until ``record`` may be started again (e.g. its old registration expired)."""

    def after_restart(self, record: ProcessRecord) -> None:
        """Wait until a restarted process serves, when the next one depends on it."""

    def partition_reader(self, state: ClusterState) -> PartitionReader:
        """A new session reading partition leadership and the ISR of the running cluster
        (default: the Admin API's metadata)."""
        return AdminPartitions(admin_client(self.descriptor(state), 2.0, quiet=True))

    @abstractmethod
    def broker_data_dir(self, lab: Path, broker_id: int) -> Path:
        """The folder holding broker ``broker_id``'s log directories (one folder per
        partition replica: ``<topic>-<partition>``)."""

    def status_details(self, state: ClusterState) -> dict[str, Any]:
        """What ``cluster status`` shows of a running cluster beyond its processes (its
        version; a quorum's leader)."""
        return {"kafka_version": state.get("kafka_version") or self.version}

    def controller_leader(self, state: ClusterState) -> tuple[int, int] | None:
        """``(node id, epoch)`` of the node leading its controller quorum; None when it has
        no quorum of its own (a ZooKeeper cluster) or none is elected now."""
        return None

    has_controller_quorum: ClassVar[bool] = False
    """Its controllers form a quorum whose leader a fault can hit (KRaft)."""

    def kafka_home(self, state: ClusterState) -> Path | None:
        """The Kafka distribution it runs (for Kafka's tools); None when it has none."""
        home = state.get("kafka_home")
        return Path(home) if home else None
