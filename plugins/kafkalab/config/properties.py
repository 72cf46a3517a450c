"""Kafka's own property names in a profile: ``producer_properties``, ``consumer_properties``
and ``topic_configs`` (docs/profiles.md).

One table per kind (:data:`PRODUCER_PROPERTIES`, :data:`CONSUMER_PROPERTIES`,
:data:`TOPIC_CONFIGS`) says, for each Java property the lab accepts, its value type and its
name in each client: librdkafka (confluent-kafka) and kafka-python (a ``KafkaProducer`` /
``KafkaConsumer`` keyword argument). ``None`` means the client has no such setting, and a
profile that sets it is refused for that client (:func:`check_clients`). A property that is
one of the profile's knobs (``linger.ms`` is ``producer.linger_ms``) is folded into the knob
(:data:`KNOB_OF`), so each client gets it through the knob's own mapping.

Pure data and pure functions: nothing here reads a file or a socket (kafka-python's codec
check imports ``kafka.codec``, which only looks for installed packages).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from kafkalab.errors import ConfigError

Kind = Literal["int", "float", "bool", "text", "enum"]
Client = Literal["confluent-kafka", "kafka-python"]

CLIENTS: tuple[Client, ...] = ("confluent-kafka", "kafka-python")
"""The client libraries a profile's properties are mapped to."""

CLIENT_OF_SCENARIO: dict[str, Client] = {
    "confluent-kafka": "confluent-kafka",
    "confluent-kafka-serial": "confluent-kafka",
    "kafka-python": "kafka-python",
}
"""The client each Kafka-client scenario measures. ``jvm-e2e`` (Kafka 0.9.0.1's
EndToEndLatency) applies only its own properties file (``mapping.jvm_tool_settings``) and
``rest`` no Kafka client at all: neither takes ``producer_properties``/``consumer_properties``."""


@dataclass(frozen=True)
class KafkaProperty:
    """One Java property the lab maps: its value type and each client's name for it."""

    name: str
    """Kafka's (Java) name, as a profile spells it."""
    kind: Kind
    librdkafka: str | None = None
    """Its name in librdkafka, None when librdkafka has no such property."""
    kafka_python: str | None = None
    """Its ``KafkaProducer``/``KafkaConsumer`` keyword, None when kafka-python has none."""
    choices: tuple[str, ...] = ()
    """The accepted values of an ``enum``."""
    since: tuple[int, ...] = (0,)
    """The first broker version that knows it (checked against the cluster descriptor)."""
    note: str = ""
    """Why a client lacks it, or what to use instead (shown in the refusal)."""

    def client_name(self, client: Client) -> str | None:
        """The property's name in ``client``; None when the client does not know it."""
        return self.librdkafka if client == "confluent-kafka" else self.kafka_python


def _same(name: str, kind: Kind, choices: tuple[str, ...] = (),
          since: tuple[int, ...] = (0,)) -> KafkaProperty:
    """A property both clients know: librdkafka by the same name, kafka-python by the
    snake_case name."""
    return KafkaProperty(name, kind, librdkafka=name, kafka_python=name.replace(".", "_"),
                         choices=choices, since=since)


_COMMON: tuple[KafkaProperty, ...] = (
    _same("client.id", "text"),
    _same("request.timeout.ms", "int"),
    _same("retry.backoff.ms", "int"),
    _same("reconnect.backoff.ms", "int"),
    _same("reconnect.backoff.max.ms", "int"),
    _same("metadata.max.age.ms", "int"),
    _same("connections.max.idle.ms", "int"),
    KafkaProperty("send.buffer.bytes", "int", librdkafka="socket.send.buffer.bytes",
                  kafka_python="send_buffer_bytes"),
    KafkaProperty("receive.buffer.bytes", "int", librdkafka="socket.receive.buffer.bytes",
                  kafka_python="receive_buffer_bytes"),
)

PRODUCER_PROPERTIES: dict[str, KafkaProperty] = {p.name: p for p in (
    KafkaProperty("acks", "enum", librdkafka="acks", kafka_python="acks",
                  choices=("0", "1", "all", "-1")),
    _same("batch.size", "int"),
    _same("linger.ms", "int"),
    _same("compression.type", "enum", choices=("none", "gzip", "snappy", "lz4", "zstd")),
    _same("retries", "int"),
    _same("max.in.flight.requests.per.connection", "int"),
    KafkaProperty("buffer.memory", "int", librdkafka="queue.buffering.max.kbytes",
                  kafka_python=None,
                  note="kafka-python 3 has no buffer_memory; librdkafka gets it in KB as "
                       "queue.buffering.max.kbytes"),
    _same("enable.idempotence", "bool", since=(0, 11)),
    _same("delivery.timeout.ms", "int"),
    KafkaProperty("max.request.size", "int", librdkafka=None, kafka_python="max_request_size",
                  note="librdkafka's message.max.bytes is set from topic.max_message_bytes"),
    KafkaProperty("max.block.ms", "int", librdkafka=None, kafka_python="max_block_ms",
                  note="librdkafka never blocks produce(): it raises BufferError"),
    *_COMMON,
)}
"""The producer properties a profile may set (Java names)."""

CONSUMER_PROPERTIES: dict[str, KafkaProperty] = {p.name: p for p in (
    _same("fetch.min.bytes", "int"),
    KafkaProperty("fetch.max.wait.ms", "int", librdkafka="fetch.wait.max.ms",
                  kafka_python="fetch_max_wait_ms"),
    _same("fetch.max.bytes", "int", since=(0, 10, 1)),
    _same("max.partition.fetch.bytes", "int"),
    _same("enable.auto.commit", "bool"),
    _same("auto.commit.interval.ms", "int"),
    _same("session.timeout.ms", "int"),
    _same("heartbeat.interval.ms", "int"),
    _same("max.poll.interval.ms", "int", since=(0, 10, 1)),
    KafkaProperty("max.poll.records", "int", librdkafka=None, kafka_python="max_poll_records",
                  note="librdkafka 2.16 accepts the name, but confluent-kafka's "
                       "Consumer.poll() returns one message: it would change nothing"),
    _same("isolation.level", "enum", choices=("read_uncommitted", "read_committed"),
          since=(0, 11)),
    _same("check.crcs", "bool"),
    _same("client.rack", "text", since=(2, 4)),
    _same("allow.auto.create.topics", "bool"),
    KafkaProperty("exclude.internal.topics", "bool", librdkafka=None,
                  kafka_python="exclude_internal_topics"),
    *_COMMON,
)}
"""The consumer properties a profile may set (Java names)."""


def _topic(name: str, kind: Kind, since: tuple[int, ...] = (0,),
           choices: tuple[str, ...] = ()) -> KafkaProperty:
    return KafkaProperty(name, kind, choices=choices, since=since)


TOPIC_CONFIGS: dict[str, KafkaProperty] = {p.name: p for p in (
    _topic("cleanup.policy", "enum", choices=("delete", "compact", "compact,delete",
                                              "delete,compact")),
    _topic("compression.type", "enum", since=(0, 9),
           choices=("uncompressed", "gzip", "snappy", "lz4", "zstd", "producer")),
    _topic("delete.retention.ms", "int"),
    _topic("file.delete.delay.ms", "int"),
    _topic("flush.messages", "int"),
    _topic("flush.ms", "int"),
    _topic("index.interval.bytes", "int"),
    _topic("max.message.bytes", "int"),
    _topic("message.timestamp.type", "enum", since=(0, 10),
           choices=("CreateTime", "LogAppendTime")),
    _topic("message.timestamp.difference.max.ms", "int", since=(0, 10)),
    _topic("min.cleanable.dirty.ratio", "float"),
    _topic("min.compaction.lag.ms", "int", since=(0, 10, 1)),
    _topic("max.compaction.lag.ms", "int", since=(2, 3)),
    _topic("min.insync.replicas", "int"),
    _topic("preallocate", "bool", since=(0, 9)),
    _topic("retention.bytes", "int"),
    _topic("retention.ms", "int"),
    _topic("segment.bytes", "int"),
    _topic("segment.index.bytes", "int"),
    _topic("segment.jitter.ms", "int"),
    _topic("segment.ms", "int"),
    _topic("unclean.leader.election.enable", "bool"),
    _topic("message.downconversion.enable", "bool", since=(2, 0)),
)}
"""The topic-level configs a profile may set (Kafka's names)."""

TABLES: dict[str, dict[str, KafkaProperty]] = {
    "producer_properties": PRODUCER_PROPERTIES,
    "consumer_properties": CONSUMER_PROPERTIES,
    "topic_configs": TOPIC_CONFIGS,
}
"""Each profile key and the table its names are checked against."""

KNOB_OF: dict[str, dict[str, tuple[str, str]]] = {
    "producer_properties": {
        "batch.size": ("producer", "batch_size_bytes"),
        "linger.ms": ("producer", "linger_ms"),
        "compression.type": ("producer", "compression"),
        "acks": ("producer", "acks"),
        "retries": ("producer", "retries"),
        "max.in.flight.requests.per.connection": ("producer", "max_in_flight"),
        "buffer.memory": ("producer", "buffer_memory_bytes"),
    },
    "consumer_properties": {
        "fetch.min.bytes": ("consumer", "fetch_min_bytes"),
        "fetch.max.wait.ms": ("consumer", "fetch_max_wait_ms"),
        "enable.auto.commit": ("consumer", "enable_auto_commit"),
        "session.timeout.ms": ("consumer", "session_timeout_ms"),
    },
    "topic_configs": {
        "min.insync.replicas": ("topic", "min_insync_replicas"),
        "unclean.leader.election.enable": ("topic", "unclean_leader_election_enable"),
        "max.message.bytes": ("topic", "max_message_bytes"),
    },
}
"""Properties that are also profile knobs: profile key -> Java name -> (section, knob)."""

LAB_OWNED: dict[str, str] = {
    "bootstrap.servers": "the cluster descriptor's bootstrap_servers",
    "group.id": "the lab (each probe and the measuring consumer get their own group)",
    "auto.offset.reset": "the lab (latest: the consumer is positioned before the first send)",
    "key.serializer": "the lab (bytes)", "value.serializer": "the lab (bytes)",
    "key.deserializer": "the lab (bytes)", "value.deserializer": "the lab (bytes)",
    "transactional.id": "the lab (a transactional cell's producer gets one of its own: txn_msgs)",
}
"""Java names a profile may not set, and who sets them instead."""

_DESCRIPTOR_PREFIXES = ("security.", "sasl.", "ssl.")


def value_text(value: object) -> str:
    """A YAML scalar as Kafka's property text (``True`` -> ``"true"``, ``5`` -> ``"5"``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _check_value(prop: KafkaProperty, text: str) -> str | None:
    """Why ``text`` is not a valid value of ``prop``; None when it is."""
    if prop.kind == "int" and not re.fullmatch(r"-?\d+", text):
        return f"expected an integer, got {text!r}"
    if prop.kind == "float":
        try:
            float(text)
        except ValueError:
            return f"expected a number, got {text!r}"
    if prop.kind == "bool" and text not in ("true", "false"):
        return f"expected true or false, got {text!r}"
    if prop.kind == "enum" and text not in prop.choices:
        return f"expected one of {', '.join(prop.choices)}, got {text!r}"
    if prop.kind == "text" and not text.strip():
        return "expected a non-empty value"
    return None


def validate_properties(key: str, raw: object) -> dict[str, str]:
    """Check one of a profile's property mappings (``key``: ``producer_properties``,
    ``consumer_properties`` or ``topic_configs``); the values as text.

    Raises:
        ValueError: not a mapping, an unknown or lab-owned name, a value of the wrong type
            (pydantic turns it into the loader's ``ConfigError``).
    """
    table = TABLES[key]
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"expected a mapping of Kafka property names to values, "
                         f"got {type(raw).__name__}")
    out: dict[str, str] = {}
    for name, value in raw.items():
        name = str(name)
        if name in LAB_OWNED:
            raise ValueError(f"{name!r} is set by {LAB_OWNED[name]}")
        if key != "topic_configs" and name.startswith(_DESCRIPTOR_PREFIXES):
            raise ValueError(f"{name!r} belongs in the cluster descriptor (client_properties "
                             "or secret_env), not in a profile")
        prop = table.get(name)
        if prop is None:
            raise ValueError(f"{name!r} is not a {_noun(key)} the lab maps "
                             f"(known: {', '.join(sorted(table))})")
        if isinstance(value, Mapping | list | tuple) or value is None:
            raise ValueError(f"{name!r}: expected a single value, got {type(value).__name__}")
        text = value_text(value)
        problem = _check_value(prop, text)
        if problem:
            raise ValueError(f"{name!r}: {problem}")
        out[name] = text
    return out


def _noun(key: str) -> str:
    return {"producer_properties": "producer property", "consumer_properties":
            "consumer property", "topic_configs": "topic config"}[key]


def python_value(prop: KafkaProperty, text: str) -> object:
    """A property's text as the typed value kafka-python expects (librdkafka takes text)."""
    if prop.kind == "int":
        return int(text)
    if prop.kind == "float":
        return float(text)
    if prop.kind == "bool":
        return text == "true"
    return text


# ----------------------------------------------------------------- per client, per cluster


def unsupported(props: Mapping[str, str], table: Mapping[str, KafkaProperty],
                client: Client) -> list[str]:
    """The names in ``props`` that ``client`` does not know, in the profile's order."""
    return [n for n in props if n in table and table[n].client_name(client) is None]


def known_to(table: Mapping[str, KafkaProperty], client: Client) -> list[str]:
    """The Java names of ``table`` that ``client`` knows, sorted."""
    return sorted(n for n, p in table.items() if p.client_name(client) is not None)


def check_client(profile_name: str, key: str, props: Mapping[str, str], client: Client) -> None:
    """Refuse ``props`` (one of a profile's property mappings) when ``client`` does not know
    one of them.

    Raises:
        ConfigError: ``profile NAME: KEY: 'PROP' is not supported by CLIENT (known: ...)``.
    """
    table = TABLES[key]
    missing = unsupported(props, table, client)
    if missing:
        prop = table[missing[0]]
        why = f"; {prop.note}" if prop.note else ""
        raise ConfigError(f"profile {profile_name}: {key}: {missing[0]!r} is not supported by "
                          f"{client}{why} (known: {', '.join(known_to(table, client))})")


def clients_of(scenarios: Iterable[str]) -> list[Client]:
    """The client libraries ``scenarios`` measure, each once, in :data:`CLIENTS` order."""
    used = {CLIENT_OF_SCENARIO[s] for s in scenarios if s in CLIENT_OF_SCENARIO}
    return [c for c in CLIENTS if c in used]


def _dotted(v: tuple[int, ...]) -> str:
    return ".".join(str(x) for x in v)


ZSTD_SINCE = (2, 1)
"""zstd needs brokers of Kafka 2.1 or later (produce request v7, KIP-110)."""


def _too_new(table: Mapping[str, KafkaProperty], name: str, value: str,
             have: tuple[int, ...]) -> str | None:
    """Why the broker (version ``have``) cannot take ``name=value``; None when it can."""
    if name == "compression.type" and value == "zstd" and have < ZSTD_SINCE:
        return f"compression.type=zstd needs Kafka {_dotted(ZSTD_SINCE)} or later"
    since = table[name].since if name in table else (0,)
    if have < since:
        return f"{name!r} needs Kafka {_dotted(since)} or later"
    return None


def check_cluster(profile_name: str, compression: str, props: Mapping[str, Mapping[str, str]],
                  have: tuple[int, ...] | None) -> None:
    """Refuse what the cluster's Kafka version does not know: zstd before 2.1 (as the
    producer's compression or the topic's ``compression.type``), and properties or topic
    configs newer than the broker. An unknown version (None: an emulator) is not refused.

    ``props``: profile key (``producer_properties``, ...) -> its mapping. ``have``: the
    brokers' version as numbers (its flavor's
    :meth:`~kafkalab.cluster.flavors.base.Flavor.broker_version`).

    Raises:
        ConfigError: one line naming the profile, the setting and the version.
    """
    if have is None:
        return
    if compression == "zstd" and have < ZSTD_SINCE:
        raise ConfigError(f"profile {profile_name}: compression zstd needs Kafka "
                          f"{_dotted(ZSTD_SINCE)} or later (produce API v7); the cluster is "
                          f"Kafka {_dotted(have)}")
    for key, values in props.items():
        for name, value in values.items():
            problem = _too_new(TABLES[key], name, value, have)
            if problem:
                raise ConfigError(f"profile {profile_name}: {key}: {problem}; the cluster is "
                                  f"Kafka {_dotted(have)}")


def check_topic_configs(topic: str, configs: Mapping[str, str],
                        have: tuple[int, ...] | None) -> None:
    """Refuse topic configs the cluster's Kafka version does not know (zstd before 2.1,
    ``message.timestamp.type`` before 0.10, ...), before a topic is created or altered.

    Raises:
        ConfigError: ``topic NAME: compression.type=zstd needs Kafka 2.1 or later; ...``.
    """
    if have is None:
        return
    for name, value in configs.items():
        problem = _too_new(TOPIC_CONFIGS, name, value, have)
        if problem:
            raise ConfigError(f"topic {topic}: {problem}; the cluster is Kafka {_dotted(have)}")


def check_codec(profile_name: str, compression: str, client: Client) -> None:
    """Refuse a compression codec the client cannot use here (kafka-python needs an
    optional package for snappy, lz4 and zstd), before any client is built.

    Raises:
        ConfigError: the codec's package is not installed.
    """
    if client != "kafka-python" or compression in ("none", "gzip"):
        return
    from kafka import codec

    present = {"snappy": codec.has_snappy, "lz4": codec.has_lz4, "zstd": codec.has_zstd}
    package = {"snappy": "python-snappy (or cramjam)", "lz4": "lz4", "zstd": "zstandard"}
    if compression in present and not present[compression]():
        raise ConfigError(f"profile {profile_name}: compression {compression} needs the "
                          f"{package[compression]} package for kafka-python, which is not "
                          "installed")


__all__ = [
    "CLIENTS", "CLIENT_OF_SCENARIO", "CONSUMER_PROPERTIES", "KNOB_OF", "LAB_OWNED",
    "PRODUCER_PROPERTIES", "TABLES", "TOPIC_CONFIGS", "ZSTD_SINCE", "Client", "KafkaProperty",
    "check_client", "check_cluster", "check_codec", "check_topic_configs", "clients_of", "known_to",
    "python_value", "unsupported", "validate_properties", "value_text",
]
