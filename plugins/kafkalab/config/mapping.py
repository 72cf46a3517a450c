"""The one place a profile becomes client settings.

Each function takes the cluster's connection settings (from the descriptor: bootstrap
servers, security, and the protocol extras 0.9 needs) and a profile, and returns the
settings for one client: the profile's knobs, the lab's fixed settings, then the
profile's ``producer_properties`` / ``consumer_properties`` by the client's own names (an
explicit property wins; one the client does not know is refused, :func:`check_profile`
before a run). Each ``*_layers`` function also says where every value came from, which
:func:`setting_origins` gives the report. Large payloads need the size limits raised on both sides, so the
topic's ``max.message.bytes`` drives the producer request size and the consumer fetch size.

:func:`settings_view` turns such a configuration into what a run may record (the
``client_settings`` column and the manifest): strings, without secrets.
:func:`jvm_tool_settings` says what Kafka 0.9.0.1's EndToEndLatency actually applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.cluster.flavors import flavor_of
from kafkalab.config.models import Profile
from kafkalab.config.properties import (
    CLIENT_OF_SCENARIO,
    KNOB_OF,
    TABLES,
    Client,
    check_client,
    check_cluster,
    check_codec,
    clients_of,
    python_value,
)
from kafkalab.errors import ConfigError
from kafkalab.redact import looks_secret

_FETCH_HEADROOM_BYTES = 1024 * 1024
"""Room above max.message.bytes for the message-set framing around one record."""


_QUIET_LOG_LEVEL = 3
"""librdkafka syslog level: errors only. 0.9's fallback settings print a deprecation warning
for every client otherwise; real problems surface as errors and delivery failures."""


def _size_limits(profile: Profile) -> tuple[int, int]:
    max_msg = profile.topic.max_message_bytes
    return max_msg, max_msg + _FETCH_HEADROOM_BYTES


Layered = dict[str, tuple[Any, str]]
"""A client configuration before it is flattened: key -> (value, where it came from)."""

LAB = "lab"
"""Origin of a setting the lab fixes for every profile (see the function that sets it)."""
TOOL = "tool (fixed)"
"""Origin of a setting Kafka's EndToEndLatency hard-codes."""
DESCRIPTOR = "cluster descriptor"
"""Origin of the connection settings (bootstrap servers, security, 0.9's protocol extras)."""
CLIENT_DEFAULT = "client default"
"""Shown for a knob the client does not get (its own default applies)."""

_KNOB_PROPERTY: dict[tuple[str, str], tuple[str, str]] = {
    knob: (key, name) for key, names in KNOB_OF.items() for name, knob in names.items()}
"""(section, knob) -> (profile key, Java name) of the property that may set it."""


def knob_origin(profile: Profile, section: str, knob: str, derived: bool = False) -> str:
    """Where a knob's value came from: ``producer_properties linger.ms`` when the profile set
    it through its Kafka name, else ``profile producer.linger_ms``; ``derived`` adds
    `` (derived)`` for a value computed from the knob (a size limit with headroom)."""
    key, name = _KNOB_PROPERTY.get((section, knob), ("", ""))
    props: Mapping[str, str] = getattr(profile, key) if key else {}
    origin = f"{key} {name}" if name in props else f"profile {section}.{knob}"
    return origin + (" (derived)" if derived else "")


def _properties(profile: Profile, key: str, client: Client) -> Layered:
    """The profile's ``key`` mapping that is not folded into a knob, by ``client``'s names
    and typed for it (librdkafka takes text, kafka-python typed values).

    Raises:
        ConfigError: ``client`` does not know one of them (:func:`check_client`).
    """
    props: dict[str, str] = getattr(profile, key)
    check_client(profile.name, key, props, client)
    table = TABLES[key]
    out: Layered = {}
    for name, text in props.items():
        if name in KNOB_OF[key]:
            continue
        prop = table[name]
        client_name = prop.client_name(client)
        assert client_name is not None  # check_client refused the others
        value = text if client == "confluent-kafka" else python_value(prop, text)
        out[client_name] = (value, f"{key} {name}")
    return out


def flatten(base: Mapping[str, Any], layered: Layered) -> dict[str, Any]:
    """``base`` (the descriptor's connection settings) overridden by ``layered``'s values."""
    cfg: dict[str, Any] = dict(base)
    cfg.update({k: v for k, (v, _) in layered.items()})
    return cfg


def confluent_producer_layers(profile: Profile) -> Layered:
    """librdkafka producer settings for ``profile`` with their origins (no connection
    settings): the knobs, the lab's fixed settings, then ``producer_properties`` on top."""
    p = profile.producer
    max_msg, _ = _size_limits(profile)

    def k(knob: str) -> str:
        return knob_origin(profile, "producer", knob)

    return {
        "batch.size": (max(p.batch_size_bytes, 1), k("batch_size_bytes")),
        "linger.ms": (p.linger_ms, k("linger_ms")),
        "compression.type": (p.compression, k("compression")),
        "acks": ("-1" if p.acks == "all" else p.acks, k("acks")),
        "retries": (p.retries, k("retries")),
        "max.in.flight.requests.per.connection": (p.max_in_flight, k("max_in_flight")),
        "queue.buffering.max.kbytes": (max(p.buffer_memory_bytes // 1024, 1),
                                       k("buffer_memory_bytes")),
        "message.max.bytes": (max_msg + _FETCH_HEADROOM_BYTES,
                              knob_origin(profile, "topic", "max_message_bytes", True)),
        "enable.idempotence": (False, LAB),
        "log_level": (_QUIET_LOG_LEVEL, LAB),
        **_properties(profile, "producer_properties", "confluent-kafka"),
    }


def confluent_producer_config(base: dict[str, str], profile: Profile) -> dict[str, Any]:
    """librdkafka producer settings for ``profile`` on top of the cluster's ``base``.

    Raises:
        ConfigError: a ``producer_properties`` name librdkafka does not know.
    """
    return flatten(base, confluent_producer_layers(profile))


def confluent_consumer_layers(profile: Profile, group_id: str | None) -> Layered:
    """librdkafka consumer settings with their origins (see
    :func:`confluent_consumer_config`)."""
    c = profile.consumer
    _, fetch = _size_limits(profile)

    def k(knob: str) -> str:
        return knob_origin(profile, "consumer", knob)

    size = knob_origin(profile, "topic", "max_message_bytes", True)
    return {
        "group.id": (group_id or "kafkalab-assign", LAB),
        "fetch.min.bytes": (c.fetch_min_bytes, k("fetch_min_bytes")),
        "fetch.wait.max.ms": (c.fetch_max_wait_ms, k("fetch_max_wait_ms")),
        "enable.auto.commit": (c.enable_auto_commit, k("enable_auto_commit")),
        "session.timeout.ms": (c.session_timeout_ms, k("session_timeout_ms")),
        "auto.offset.reset": ("latest", LAB),
        "max.partition.fetch.bytes": (fetch, size),
        "fetch.max.bytes": (fetch, size),
        "receive.message.max.bytes": (fetch + 2 * _FETCH_HEADROOM_BYTES, size),
        "enable.partition.eof": (False, LAB),
        "log_level": (_QUIET_LOG_LEVEL, LAB),
        **_properties(profile, "consumer_properties", "confluent-kafka"),
    }


def confluent_consumer_config(
    base: dict[str, str], profile: Profile, group_id: str | None
) -> dict[str, Any]:
    """librdkafka consumer settings; ``group_id=None`` is for assign mode (a throwaway id
    is still required by the client, but no group is joined when only ``assign`` is used).

    Raises:
        ConfigError: a ``consumer_properties`` name librdkafka does not know.
    """
    return flatten(base, confluent_consumer_layers(profile, group_id))


def kafka_python_producer_layers(profile: Profile) -> Layered:
    """``KafkaProducer`` keyword arguments with their origins (see
    :func:`kafka_python_producer_config`)."""
    p = profile.producer
    max_msg, _ = _size_limits(profile)

    def k(knob: str) -> str:
        return knob_origin(profile, "producer", knob)

    return {
        "batch_size": (p.batch_size_bytes, k("batch_size_bytes")),
        "linger_ms": (p.linger_ms, k("linger_ms")),
        "compression_type": (None if p.compression == "none" else p.compression,
                             k("compression")),
        "acks": ("all" if p.acks == "all" else int(p.acks), k("acks")),
        "retries": (p.retries, k("retries")),
        "max_in_flight_requests_per_connection": (p.max_in_flight, k("max_in_flight")),
        "max_request_size": (max_msg + _FETCH_HEADROOM_BYTES,
                             knob_origin(profile, "topic", "max_message_bytes", True)),
        # the lab's, as for librdkafka: kafka-python 3 turns idempotence on by itself when acks
        # is all (KIP-679), so the two clients would measure different producers side by side
        "enable_idempotence": (False, LAB),
        **_properties(profile, "producer_properties", "kafka-python"),
    }


def kafka_python_producer_config(base: dict[str, Any], profile: Profile) -> dict[str, Any]:
    """kafka-python ``KafkaProducer`` keyword arguments (kafka-python 3 has no buffer_memory:
    the profile's buffer size applies to librdkafka only).

    Raises:
        ConfigError: a ``producer_properties`` name kafka-python does not know.
    """
    return flatten(base, kafka_python_producer_layers(profile))


def kafka_python_consumer_layers(profile: Profile, group_id: str | None) -> Layered:
    """``KafkaConsumer`` keyword arguments with their origins (see
    :func:`kafka_python_consumer_config`)."""
    c = profile.consumer
    _, fetch = _size_limits(profile)

    def k(knob: str) -> str:
        return knob_origin(profile, "consumer", knob)

    size = knob_origin(profile, "topic", "max_message_bytes", True)
    out: Layered = {
        "group_id": (group_id, LAB),
        "fetch_min_bytes": (c.fetch_min_bytes, k("fetch_min_bytes")),
        "fetch_max_wait_ms": (c.fetch_max_wait_ms, k("fetch_max_wait_ms")),
        "enable_auto_commit": (c.enable_auto_commit if group_id else False,
                               k("enable_auto_commit") if group_id else LAB),
        "session_timeout_ms": (c.session_timeout_ms, k("session_timeout_ms")),
        "auto_offset_reset": ("latest", LAB),
        "max_partition_fetch_bytes": (fetch, size),
        "fetch_max_bytes": (fetch * 2, size),
        "receive_buffer_bytes": (4 * 1024 * 1024, LAB),
    }
    if c.session_timeout_ms <= 10000:
        out["heartbeat_interval_ms"] = (max(c.session_timeout_ms // 3, 100),
                                        k("session_timeout_ms") + " (derived)")
    out.update(_properties(profile, "consumer_properties", "kafka-python"))
    return out


def kafka_python_consumer_config(
    base: dict[str, Any], profile: Profile, group_id: str | None
) -> dict[str, Any]:
    """kafka-python ``KafkaConsumer`` keyword arguments (``group_id=None``: no group).

    Raises:
        ConfigError: a ``consumer_properties`` name kafka-python does not know.
    """
    return flatten(base, kafka_python_consumer_layers(profile, group_id))


def check_profile(profile: Profile, scenarios: Iterable[str],
                  descriptor: ClusterDescriptor | None = None) -> None:
    """Refuse, before a run starts, what the run's clients or cluster cannot take: a
    property one of the scenarios' clients does not know, a compression codec kafka-python
    cannot load here, zstd (or a property, a topic config) the cluster's Kafka version
    predates, zstd with Kafka 0.9.0.1's EndToEndLatency tool.

    Raises:
        ConfigError: one line naming the profile and the setting.
    """
    names = list(scenarios)
    for client in clients_of(names):
        for key in ("producer_properties", "consumer_properties"):
            check_client(profile.name, key, getattr(profile, key), client)
        check_codec(profile.name, profile.producer.compression, client)
    if "jvm-e2e" in names and profile.producer.compression == "zstd":
        raise ConfigError(f"profile {profile.name}: compression zstd is not known to Kafka "
                          "0.9.0.1's EndToEndLatency tool (scenario jvm-e2e)")
    if descriptor is not None:
        check_cluster(profile.name, profile.producer.compression,
                      {key: getattr(profile, key) for key in TABLES},
                      flavor_of(descriptor).broker_version(descriptor))


def jvm_tool_properties(profile: Profile) -> dict[str, str]:
    """Properties for Kafka's EndToEndLatency tool (one file is read by both its producer and
    its consumer; the tool itself forces linger.ms=0 and fetch.max.wait.ms=0)."""
    _, fetch = _size_limits(profile)
    return {
        "max.request.size": str(fetch),
        "buffer.memory": str(max(profile.producer.buffer_memory_bytes, 2 * fetch)),
        "max.partition.fetch.bytes": str(fetch),
        "compression.type": profile.producer.compression,
        "retries": str(profile.producer.retries),
    }


_JVM_PRODUCER_FILE_KEYS = ("max.request.size", "buffer.memory", "compression.type", "retries")
"""Keys of :func:`jvm_tool_properties` that 0.9.0.1's ProducerConfig knows."""
_JVM_CONSUMER_FILE_KEYS = ("max.partition.fetch.bytes",)
"""Keys of :func:`jvm_tool_properties` that 0.9.0.1's ConsumerConfig knows (each client
ignores, with a warning, the keys it does not know)."""


def jvm_tool_settings(profile: Profile, acks: str, bootstrap_servers: str) -> dict[str, str]:
    """What Kafka 0.9.0.1's ``kafka.tools.EndToEndLatency`` actually applies, as
    ``producer.<key>`` / ``consumer.<key>``.

    The tool loads its properties file (:func:`jvm_tool_properties`) *twice*, once as the
    producer's and once as the consumer's properties, then overrides: the producer gets
    ``bootstrap.servers``, ``linger.ms=0``, ``block.on.buffer.full=true`` and ``acks`` (its
    argument: ``1`` or ``all``); the consumer gets ``bootstrap.servers``, a fresh
    ``group.id`` (``test-group-<epoch ms>``), ``enable.auto.commit=false``,
    ``auto.offset.reset=latest`` and ``fetch.max.wait.ms=0``. Every other setting is the Java
    client's default — the profile's linger, batch, fetch.min.bytes and fetch wait are *not*
    applied. (Byte-array serializers are set on both sides; not listed.)
    """
    file = jvm_tool_properties(profile)
    producer = {k: file[k] for k in _JVM_PRODUCER_FILE_KEYS if k in file}
    producer.update({"bootstrap.servers": bootstrap_servers, "linger.ms": "0",
                     "block.on.buffer.full": "true", "acks": acks})
    consumer = {k: file[k] for k in _JVM_CONSUMER_FILE_KEYS if k in file}
    consumer.update({"bootstrap.servers": bootstrap_servers,
                     "group.id": "test-group-<epoch ms>", "enable.auto.commit": "false",
                     "auto.offset.reset": "latest", "fetch.max.wait.ms": "0"})
    return {**{f"producer.{k}": v for k, v in producer.items()},
            **{f"consumer.{k}": v for k, v in consumer.items()}}


def setting_text(value: Any) -> str:
    """A setting as text, the way Kafka properties spell it: ``true``/``false``, a list as
    ``a,b``, a version tuple as ``0.9``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return ".".join(str(v) for v in value)
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def settings_view(configs: Mapping[str, Mapping[str, Any]],
                  secret_keys: Iterable[str] = ()) -> dict[str, str]:
    """``{"producer": {...}, "consumer": {...}}`` as one flat ``{"producer.<key>": text}``
    mapping, without secrets: keys in ``secret_keys`` (the descriptor's ``secret_env``) or
    that :func:`looks_secret`, and ``None`` values (the client's default applies)."""
    hidden = {k.lower() for k in secret_keys}
    out: dict[str, str] = {}
    for role, cfg in configs.items():
        for key, value in cfg.items():
            if value is None or key.lower() in hidden or looks_secret(key):
                continue
            out[f"{role}.{key}"] = setting_text(value)
    return out


# ----------------------------------------------------------------- where each value came from

_JVM_ORIGINS: dict[str, tuple[str, str] | str] = {
    "producer.max.request.size": ("topic", "max_message_bytes"),
    "producer.buffer.memory": ("producer", "buffer_memory_bytes"),
    "producer.compression.type": ("producer", "compression"),
    "producer.retries": ("producer", "retries"),
    "producer.acks": ("producer", "acks"),
    "producer.bootstrap.servers": DESCRIPTOR,
    "consumer.max.partition.fetch.bytes": ("topic", "max_message_bytes"),
    "consumer.bootstrap.servers": DESCRIPTOR,
}
"""Origins of :func:`jvm_tool_settings`' keys; every other key is the tool's own
(:data:`TOOL`)."""

_JVM_NOT_APPLIED: dict[tuple[str, str], str] = {
    ("producer", "linger_ms"): "the tool forces linger.ms=0",
    ("producer", "batch_size_bytes"): "the tool's producer keeps its default",
    ("producer", "max_in_flight"): "the tool's producer keeps its default",
    ("consumer", "fetch_min_bytes"): "the tool's consumer keeps its default",
    ("consumer", "fetch_max_wait_ms"): "the tool forces fetch.max.wait.ms=0",
    ("consumer", "enable_auto_commit"): "the tool forces enable.auto.commit=false",
    ("consumer", "session_timeout_ms"): "the tool's consumer keeps its default",
}


def _client_of(scenario: str) -> Client | None:
    return CLIENT_OF_SCENARIO.get(scenario)


def setting_origins(scenario: str, profile: Profile) -> dict[str, str]:
    """Where each of a scenario's recorded settings (``producer.<key>``, ``consumer.<key>``,
    as :func:`settings_view` flattens them) came from: ``profile producer.linger_ms``,
    ``producer_properties linger.ms``, ``lab``, ``tool (fixed)``; a key not listed came from
    the cluster descriptor (:data:`DESCRIPTOR`). Empty for a scenario without a Kafka client.

    Raises:
        ConfigError: a property the scenario's client does not know.
    """
    client = _client_of(scenario)
    layers: dict[str, Layered] = {}
    if client == "confluent-kafka":
        layers = {"producer": confluent_producer_layers(profile),
                  "consumer": confluent_consumer_layers(profile, "g")}
    elif client == "kafka-python":
        layers = {"producer": kafka_python_producer_layers(profile),
                  "consumer": kafka_python_consumer_layers(profile, "g")}
    elif scenario == "jvm-e2e":
        out: dict[str, str] = {}
        for key in jvm_tool_settings(profile, profile.producer.acks, "?"):
            origin = _JVM_ORIGINS.get(key, TOOL)
            out[key] = origin if isinstance(origin, str) else knob_origin(
                profile, *origin, derived=origin == ("topic", "max_message_bytes"))
        return out
    return {f"{role}.{key}": origin for role, layered in layers.items()
            for key, (_, origin) in layered.items()}


def unapplied_settings(scenario: str, profile: Profile) -> dict[str, str]:
    """The profile's settings a scenario's client does *not* get (its own default applies):
    ``{"producer.buffer_memory_bytes": why, "producer_properties linger.ms": why, ...}``."""
    client = _client_of(scenario)
    out: dict[str, str] = {}
    if client == "kafka-python":
        out["profile producer.buffer_memory_bytes"] = "kafka-python 3 has no buffer_memory"
    elif scenario == "jvm-e2e":
        for (section, knob), why in _JVM_NOT_APPLIED.items():
            out[knob_origin(profile, section, knob)] = why
        for key in ("producer_properties", "consumer_properties"):
            for name in getattr(profile, key):
                if (key, name) not in set(_KNOB_PROPERTY.values()):
                    out[f"{key} {name}"] = ("the tool reads only the lab's properties file "
                                            "(size limits, compression, retries)")
    return out
