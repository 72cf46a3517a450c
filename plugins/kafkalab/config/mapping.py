"""The one place a profile becomes client settings.

Each function takes the cluster's connection settings (from the descriptor: bootstrap
servers, security, and the protocol extras 0.9 needs) and a profile, and returns the
settings for one client. Large payloads need the size limits raised on both sides, so the
topic's ``max.message.bytes`` drives the producer request size and the consumer fetch size.

:func:`settings_view` turns such a configuration into what a run may record (the
``client_settings`` column and the manifest): strings, without secrets.
:func:`jvm_tool_settings` says what Kafka 0.9.0.1's EndToEndLatency actually applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkalab.cluster.descriptor import SECRET_PROPERTIES
from kafkalab.config.models import Profile

_FETCH_HEADROOM_BYTES = 1024 * 1024
"""Room above max.message.bytes for the message-set framing around one record."""


_QUIET_LOG_LEVEL = 3
"""librdkafka syslog level: errors only. 0.9's fallback settings print a deprecation warning
for every client otherwise; real problems surface as errors and delivery failures."""


def _size_limits(profile: Profile) -> tuple[int, int]:
    max_msg = profile.topic.max_message_bytes
    return max_msg, max_msg + _FETCH_HEADROOM_BYTES


def confluent_producer_config(base: dict[str, str], profile: Profile) -> dict[str, Any]:
    """librdkafka producer settings for ``profile`` on top of the cluster's ``base``."""
    p = profile.producer
    max_msg, _ = _size_limits(profile)
    cfg: dict[str, Any] = dict(base)
    cfg.update(
        {
            "batch.size": max(p.batch_size_bytes, 1),
            "linger.ms": p.linger_ms,
            "compression.type": p.compression,
            "acks": "-1" if p.acks == "all" else p.acks,
            "retries": p.retries,
            "max.in.flight.requests.per.connection": p.max_in_flight,
            "queue.buffering.max.kbytes": max(p.buffer_memory_bytes // 1024, 1),
            "message.max.bytes": max_msg + _FETCH_HEADROOM_BYTES,
            "enable.idempotence": False,
            "log_level": _QUIET_LOG_LEVEL,
        }
    )
    return cfg


def confluent_consumer_config(
    base: dict[str, str], profile: Profile, group_id: str | None
) -> dict[str, Any]:
    """librdkafka consumer settings; ``group_id=None`` is for assign mode (a throwaway id
    is still required by the client, but no group is joined when only ``assign`` is used)."""
    c = profile.consumer
    _, fetch = _size_limits(profile)
    cfg: dict[str, Any] = dict(base)
    cfg.update(
        {
            "group.id": group_id or "kafkalab-assign",
            "fetch.min.bytes": c.fetch_min_bytes,
            "fetch.wait.max.ms": c.fetch_max_wait_ms,
            "enable.auto.commit": c.enable_auto_commit,
            "session.timeout.ms": c.session_timeout_ms,
            "auto.offset.reset": "latest",
            "max.partition.fetch.bytes": fetch,
            "fetch.max.bytes": fetch,
            "receive.message.max.bytes": fetch + 2 * _FETCH_HEADROOM_BYTES,
            "enable.partition.eof": False,
            "log_level": _QUIET_LOG_LEVEL,
        }
    )
    return cfg


def kafka_python_producer_config(base: dict[str, Any], profile: Profile) -> dict[str, Any]:
    """kafka-python ``KafkaProducer`` keyword arguments (kafka-python 3 has no buffer_memory:
    the profile's buffer size applies to librdkafka only)."""
    p = profile.producer
    max_msg, _ = _size_limits(profile)
    cfg = dict(base)
    cfg.update(
        {
            "batch_size": p.batch_size_bytes,
            "linger_ms": p.linger_ms,
            "compression_type": None if p.compression == "none" else p.compression,
            "acks": "all" if p.acks == "all" else int(p.acks),
            "retries": p.retries,
            "max_in_flight_requests_per_connection": p.max_in_flight,
            "max_request_size": max_msg + _FETCH_HEADROOM_BYTES,
        }
    )
    return cfg


def kafka_python_consumer_config(
    base: dict[str, Any], profile: Profile, group_id: str | None
) -> dict[str, Any]:
    """kafka-python ``KafkaConsumer`` keyword arguments (``group_id=None``: no group)."""
    c = profile.consumer
    _, fetch = _size_limits(profile)
    cfg = dict(base)
    cfg.update(
        {
            "group_id": group_id,
            "fetch_min_bytes": c.fetch_min_bytes,
            "fetch_max_wait_ms": c.fetch_max_wait_ms,
            "enable_auto_commit": c.enable_auto_commit if group_id else False,
            "session_timeout_ms": c.session_timeout_ms,
            "auto_offset_reset": "latest",
            "max_partition_fetch_bytes": fetch,
            "fetch_max_bytes": fetch * 2,
            "receive_buffer_bytes": 4 * 1024 * 1024,
        }
    )
    if c.session_timeout_ms <= 10000:
        cfg["heartbeat_interval_ms"] = max(c.session_timeout_ms // 3, 100)
    return cfg


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


def looks_secret(key: str) -> bool:
    """True for a setting whose value must never be recorded (a password, a secret, a
    private key), in librdkafka or kafka-python spelling."""
    k = key.lower()
    return (k in SECRET_PROPERTIES or "password" in k or "secret" in k or "jaas" in k
            or k in {"ssl.key.pem", "ssl_key", "sasl_oauth_token_provider"})


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
