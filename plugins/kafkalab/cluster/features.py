"""What a Kafka cluster can do: the capabilities the lab asks about, never a flavor's name.

A broker flavor (:mod:`kafkalab.cluster.flavors`) answers :meth:`Flavor.features
<kafkalab.cluster.flavors.base.Flavor.features>` for a descriptor; the rest of the lab asks
that answer ("can topics be created through the Admin API? does it keep record headers?
which class is its EndToEndLatency tool?"), as SQLAlchemy's core asks a dialect
``supports_sequences`` instead of "is this PostgreSQL?".

Most of it follows from the client protocol a descriptor declares (``legacy-0.9``: Kafka
0.9's protocol, ``modern``: brokers that answer ApiVersions) and the broker's version:
:func:`kafka_features` is that rule, written from Kafka's own release notes (each feature
names the KIP and release that brought it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Literal

__all__ = [
    "LEGACY_PROTOCOL",
    "MODERN_PROTOCOL",
    "PROTOCOLS",
    "Features",
    "KafkaTools",
    "kafka_features",
    "parse_version",
]

LEGACY_PROTOCOL = "legacy-0.9"
"""Kafka 0.9's protocol: no ApiVersions request, so clients must be told the version."""

MODERN_PROTOCOL = "modern"
"""Brokers of Kafka 0.10 and later: clients negotiate versions (ApiVersions, KIP-35)."""

PROTOCOLS: tuple[str, ...] = (LEGACY_PROTOCOL, MODERN_PROTOCOL)
"""Every client protocol a cluster descriptor may declare."""

_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)")

TopicAdmin = Literal["zookeeper", "admin-api"]
PartitionSource = Literal["zookeeper", "admin-api"]


@dataclass(frozen=True)
class KafkaTools:
    """The JVM classes of Kafka's own tools in a distribution of one version (``None``: that
    version ships no such tool)."""

    end_to_end_latency: str | None = "kafka.tools.EndToEndLatency"
    """Seed 000's fourth scenario (``jvm-e2e``)."""
    end_to_end_latency_named_args: bool = False
    """EndToEndLatency takes ``--bootstrap-server`` … options (4.2, KIP-1147) rather than
    positional arguments (deprecated from then, gone in 5.0)."""
    producer_performance: str | None = "org.apache.kafka.tools.ProducerPerformance"
    consumer_performance: str | None = "kafka.tools.ConsumerPerformance"
    dump_log_segments: str | None = "kafka.tools.DumpLogSegments"
    """Reads a broker's log segments (the fault checker's lookup of lost messages)."""
    topic_command: str | None = "kafka.admin.TopicCommand"
    """Topic administration through ZooKeeper (``--zookeeper``), where there is no
    CreateTopics API."""

    def end_to_end_latency_args(self, bootstrap: str, topic: str, records: int, acks: str,
                                record_size_bytes: int, command_config: str) -> list[str]:
        """EndToEndLatency's arguments in the style this version takes."""
        if self.end_to_end_latency_named_args:
            return ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records",
                    str(records), "--producer-acks", acks, "--record-size",
                    str(record_size_bytes), "--command-config", command_config]
        return [bootstrap, topic, str(records), acks, str(record_size_bytes), command_config]


@dataclass(frozen=True)
class Features:
    """What one cluster can do, as the lab's code asks it."""

    protocol: str
    """The client protocol: :data:`LEGACY_PROTOCOL` or :data:`MODERN_PROTOCOL`."""
    version: tuple[int, ...] | None
    """The broker's version as numbers; None when unknown (an emulator, ``unknown``): then
    nothing is refused for being too new for it."""
    topic_admin: TopicAdmin
    """How topics are created, altered and deleted: ``zookeeper`` (Kafka's TopicCommand with
    ``--zookeeper``: 0.9 has no CreateTopics API) or ``admin-api`` (KIP-4, 0.10.1)."""
    partition_state: PartitionSource
    """Where a partition's leader and in-sync replicas are read for the fault timeline:
    ``zookeeper`` (0.9's controller writes them there; client metadata lags by seconds) or
    ``admin-api`` (metadata / DescribeTopics)."""
    record_headers: bool
    """Records carry headers (KIP-82, 0.11)."""
    record_timestamps: bool
    """Records carry a timestamp (KIP-32, 0.10)."""
    idempotence: bool
    """The idempotent producer (KIP-98, 0.11)."""
    transactions: bool
    """Transactions (KIP-98, 0.11)."""
    group_protocols: tuple[str, ...]
    """Consumer-group protocols it serves: ``classic``; and ``consumer`` (KIP-848, 4.0)."""
    zstd: bool
    """zstd compression (KIP-110, 2.1)."""
    initial_rebalance_delay: bool = True
    """The broker's ``group.initial.rebalance.delay.ms`` (KIP-134, 0.11): a new classic group
    waits it before its first rebalance. Before it, a new group rebalances at once."""
    describe_configs: bool = True
    """Broker settings can be read through the Admin API (DescribeConfigs, KIP-133, 0.11)."""
    max_session_timeout_ms: int | None = None
    """The broker's default ``group.max.session.timeout.ms`` when a client's default session
    timeout exceeds it (Kafka 0.9: 30000, below librdkafka 2.x's 45000, so a librdkafka
    consumer left at its defaults is refused at JoinGroup); None when no client default does."""
    record_crc_in_log: bool = False
    """Each record in the log carries its own CRC (message formats v0/v1, before 0.11's
    record batches of KIP-98, whose CRC covers a whole batch): the fault checker can then
    find a lost message in a broker's log by its CRC with DumpLogSegments."""
    librdkafka_defaults: dict[str, str] = field(default_factory=dict)
    """Client properties confluent-kafka needs to talk to it at all (0.9: no version
    request, the version given)."""
    kafka_python_api_version: tuple[int, ...] | None = None
    """kafka-python's ``api_version`` it needs (0.9: ``(0, 9)``; None: negotiated)."""
    tools: KafkaTools = field(default_factory=KafkaTools)
    """Its distribution's tools (classes by version)."""
    emulator: bool = False
    """It is not Apache Kafka (its latencies say nothing about Kafka)."""

    def at_least(self, *version: int) -> bool:
        """Whether the broker is at least ``version`` (an unknown version is not)."""
        return self.version is not None and self.version >= version


def parse_version(text: str) -> tuple[int, ...] | None:
    """A version's numbers (``"3.8.0"`` -> ``(3, 8, 0)``, ``"v4.1"`` -> ``(4, 1)``); None
    when the text does not start with one (``unknown``, ``redpanda 24.1``)."""
    m = _VERSION.match(text.strip())
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def _tools(version: tuple[int, ...] | None) -> KafkaTools:
    """The tool classes of a distribution of ``version`` (Scala tools moved to
    ``org.apache.kafka.tools`` in 4.0; DumpLogSegments in 4.3; TopicCommand's ``--zookeeper``
    went with ZooKeeper)."""
    if version is None or version < (4,):
        return KafkaTools()
    return KafkaTools(
        end_to_end_latency="org.apache.kafka.tools.EndToEndLatency",
        end_to_end_latency_named_args=version >= (4, 2),
        consumer_performance="org.apache.kafka.tools.ConsumerPerformance",
        dump_log_segments=("org.apache.kafka.tools.DumpLogSegments" if version >= (4, 3)
                           else "kafka.tools.DumpLogSegments"),
        topic_command=None)


def kafka_features(protocol: str, version: tuple[int, ...] | None) -> Features:
    """What Apache Kafka of ``version`` offers a client speaking ``protocol``.

    ``legacy-0.9`` is Kafka 0.9 whatever the version says: ZooKeeper topic admin, no
    headers, timestamps, idempotence or transactions, the classic group protocol. On a
    ``modern`` cluster each feature needs the release that brought it; an unknown version
    is assumed to have them (the client finds out), except the new group protocol.
    """
    if protocol == LEGACY_PROTOCOL:
        return Features(
            protocol=protocol, version=(0, 9, 0, 1) if version is None else version,
            topic_admin="zookeeper", partition_state="zookeeper", record_headers=False,
            record_timestamps=False, idempotence=False, transactions=False,
            group_protocols=("classic",), zstd=False, record_crc_in_log=True,
            initial_rebalance_delay=False, describe_configs=False,
            max_session_timeout_ms=30000,
            librdkafka_defaults={"api.version.request": "false",
                                 "broker.version.fallback": "0.9.0.1"},
            kafka_python_api_version=(0, 9), tools=_tools((0, 9)))
    base = Features(protocol=protocol, version=version, topic_admin="admin-api",
                    partition_state="admin-api", record_headers=True, record_timestamps=True,
                    idempotence=True, transactions=True, group_protocols=("classic",),
                    zstd=True, tools=_tools(version))
    if version is None:
        return base
    return replace(
        base,
        topic_admin="admin-api" if version >= (0, 10, 1) else "zookeeper",
        record_timestamps=version >= (0, 10),
        record_headers=version >= (0, 11), idempotence=version >= (0, 11),
        record_crc_in_log=version < (0, 11),
        transactions=version >= (0, 11), zstd=version >= (2, 1),
        initial_rebalance_delay=version >= (0, 11), describe_configs=version >= (0, 11),
        group_protocols=("classic", "consumer") if version >= (4,) else ("classic",))
