"""Provision, describe and delete topics on any lab cluster (idempotent provisioning).

One provisioning algorithm over a :class:`~kafkalab.topics.model.TopicBackend`, chosen by
what the cluster can do (:attr:`kafkalab.cluster.features.Features.topic_admin`):
:class:`~kafkalab.topics.legacy.LegacyTopics` where topics are administered through
ZooKeeper (Kafka 0.9), :class:`~kafkalab.topics.modern.ModernTopics` through the Admin API.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from kafkalab.cluster.admin import admin_client
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.cluster.flavors import flavor_of
from kafkalab.config.properties import check_topic_configs
from kafkalab.errors import ClusterError, ConfigError
from kafkalab.progress import Progress, noop
from kafkalab.topics.legacy import LegacyTopics
from kafkalab.topics.metadata import partition_details, topic_metadata, wait_for_leaders
from kafkalab.topics.model import ExistingTopic, TopicBackend, TopicSpec
from kafkalab.topics.modern import ModernTopics

__all__ = [
    "LEGACY_DEFAULT_MESSAGE_MAX_BYTES",
    "delete_topics",
    "describe_topic",
    "provision_topics",
]

LEGACY_DEFAULT_MESSAGE_MAX_BYTES = 1000012
"""Kafka 0.9's default ``message.max.bytes`` (a topic without an override on a broker the lab
did not configure)."""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _check_specs(descriptor: ClusterDescriptor, specs: list[TopicSpec]) -> None:
    seen: set[str] = set()
    for s in specs:
        if s.name in seen:
            raise ConfigError(f"topic {s.name!r} is listed twice")
        seen.add(s.name)
        if s.replication_factor > descriptor.broker_count:
            raise ConfigError(
                f"profile asks for replication.factor={s.replication_factor} (topic {s.name}) "
                f"but the cluster has {_plural(descriptor.broker_count, 'broker')}"
            )
        check_topic_configs(s.name, s.configs, flavor_of(descriptor).broker_version(descriptor))


def _refuse_shrink_or_rf(descriptor: ClusterDescriptor, s: TopicSpec, cur: ExistingTopic) -> None:
    if cur.partitions > s.partitions:
        raise ConfigError(
            f"topic {s.name} on {descriptor.bootstrap_servers} has {cur.partitions} partitions "
            f"but the profile asks for {s.partitions}: Kafka cannot reduce partitions; delete "
            "the topic or use another name"
        )
    if cur.replication_factor != s.replication_factor:
        raise ConfigError(
            f"topic {s.name} on {descriptor.bootstrap_servers} has "
            f"replication.factor={cur.replication_factor} but the profile asks for "
            f"{s.replication_factor}: it cannot be changed in place; delete the topic or use "
            "another name"
        )


def _through_zookeeper(descriptor: ClusterDescriptor) -> bool:
    """Whether the cluster's topics are administered through ZooKeeper (no CreateTopics)."""
    return flavor_of(descriptor).features(descriptor).topic_admin == "zookeeper"


def _backend(descriptor: ClusterDescriptor, timeout_s: float) -> TopicBackend:
    if _through_zookeeper(descriptor):
        return LegacyTopics(descriptor, timeout_s)
    return ModernTopics(descriptor, timeout_s)


def _provision_one(
    descriptor: ClusterDescriptor,
    backend: TopicBackend,
    s: TopicSpec,
    timeout_s: float,
    progress: Progress,
) -> dict[str, Any]:
    """Create ``s`` or bring the existing topic in line; its outcome row (leaders not yet
    waited for)."""
    cur = backend.current(s.name)
    if cur is None:
        progress(f"creating topic {s.name} ({s.partitions} partitions, rf={s.replication_factor})")
        if backend.create(s):
            return {
                "topic": s.name,
                "action": "created",
                "detail": f"partitions={s.partitions} replication_factor={s.replication_factor}"
                + "".join(f" {k}={v}" for k, v in s.configs.items()),
            }
        # created concurrently by someone else: compare it with the spec
        wait_for_leaders(descriptor, s.name, 1, timeout_s)
        cur = backend.current(s.name)
        if cur is None:
            raise ClusterError(f"topic {s.name} was reported to exist but metadata lacks it")
    _refuse_shrink_or_rf(descriptor, s, cur)
    changes = []
    if s.configs:
        have = backend.configs(s.name)
        differing = {k: v for k, v in s.configs.items() if have.get(k) != v}
        if differing:
            progress(f"altering configs of topic {s.name}: {differing}")
            backend.alter_configs(s.name, differing)
            changes += [f"{k}: {have.get(k)} -> {v}" for k, v in differing.items()]
    if s.partitions > cur.partitions:
        progress(f"adding partitions to {s.name}: {cur.partitions} -> {s.partitions}")
        backend.add_partitions(s.name, s.partitions)
        changes.append(f"partitions: {cur.partitions} -> {s.partitions}")
    return {
        "topic": s.name,
        "action": "altered" if changes else "exists",
        "detail": "; ".join(changes) if changes else "matches the spec",
    }


def provision_topics(
    descriptor: ClusterDescriptor,
    specs: Iterable[TopicSpec],
    timeout_s: float = 30,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Make the topics match ``specs``. Returns [{topic, action: created|exists|altered, detail}].

    After each topic is created or changed, waits until metadata shows a leader for every
    partition, so a producer can start right away.

    Raises ConfigError (before sending anything) when a spec asks for more replicas than
    the cluster has brokers, and when an existing topic has more partitions or another
    replication factor than asked (Kafka cannot change those in place).
    """
    progress = progress or noop
    spec_list = list(specs)
    _check_specs(descriptor, spec_list)
    if not spec_list:
        return []
    backend = _backend(descriptor, timeout_s)
    results = []
    for s in spec_list:
        results.append(_provision_one(descriptor, backend, s, timeout_s, progress))
        wait_for_leaders(descriptor, s.name, s.partitions, timeout_s)
    return results


def _embedded_message_max_bytes(descriptor: ClusterDescriptor) -> int | None:
    """``message.max.bytes`` of a cluster the lab started and configured (its flavor's);
    None for any other cluster."""
    flavor = flavor_of(descriptor)
    return flavor.message_max_bytes if flavor.embedded and descriptor.name == "embedded" else None


def _legacy_configs(descriptor: ClusterDescriptor, name: str, timeout_s: float) -> dict[str, Any]:
    """The ``configs`` part of :func:`describe_topic` on Kafka 0.9 (overrides only)."""
    configs: dict[str, str] | None = None
    if descriptor.zookeeper and descriptor.kafka_home:
        configs = LegacyTopics(descriptor, timeout_s).overrides(name)
    out: dict[str, Any] = {
        "configs": configs,
        "configs_scope": "topic overrides" if configs is not None else "unknown",
    }
    if configs and "max.message.bytes" in configs:
        out["max_message_bytes"] = int(configs["max.message.bytes"])
        out["max_message_bytes_source"] = "topic"
    elif (embedded_max := _embedded_message_max_bytes(descriptor)) is not None:
        out["max_message_bytes"] = embedded_max
        out["max_message_bytes_source"] = "embedded broker message.max.bytes"
    else:
        out["max_message_bytes"] = LEGACY_DEFAULT_MESSAGE_MAX_BYTES
        out["max_message_bytes_source"] = "assumed Kafka 0.9 default message.max.bytes"
    return out


def _modern_configs(descriptor: ClusterDescriptor, name: str, timeout_s: float) -> dict[str, Any]:
    """The ``configs`` part of :func:`describe_topic` on a modern cluster (effective values)."""
    entries = ModernTopics(descriptor, timeout_s).config_entries(name)
    configs = {k: e.value for k, e in entries.items() if e.value is not None}
    mmb = configs.get("max.message.bytes")
    return {
        "configs": configs,
        "configs_scope": "effective",
        "max_message_bytes": int(mmb) if mmb and mmb.isdigit() else None,
        "max_message_bytes_source": "topic (effective)" if mmb else None,
    }


def describe_topic(
    descriptor: ClusterDescriptor, name: str, timeout_s: float = 30
) -> dict[str, Any]:
    """Partitions, replication factor, configs and the effective max message size of a topic.

    ``configs``: on modern clusters every effective config; on 0.9 only the topic's
    overrides (from ZooKeeper; ``None`` when no kafka_home/zookeeper is known).
    ``max_message_bytes``: the topic's max.message.bytes (0.9 without override: the
    broker's message.max.bytes — 16777216 on the embedded cluster, else Kafka's default).

    Raises:
        ClusterError: the topic does not exist, or the cluster cannot be reached.
    """
    tm = topic_metadata(admin_client(descriptor), name, timeout_s)
    if tm is None:
        raise ClusterError(f"topic {name} does not exist on {descriptor.bootstrap_servers}")
    details = partition_details(tm)
    out: dict[str, Any] = {
        "topic": name,
        "partitions": len(details),
        "replication_factor": len(details[0]["replicas"]) if details else 0,
        "partition_details": details,
    }
    if _through_zookeeper(descriptor):
        out.update(_legacy_configs(descriptor, name, timeout_s))
    else:
        out.update(_modern_configs(descriptor, name, timeout_s))
    return out


def delete_topics(
    descriptor: ClusterDescriptor, names: Iterable[str], timeout_s: float = 30
) -> list[dict[str, Any]]:
    """Delete topics (missing ones are reported as ``absent``). Waits until metadata drops them."""
    admin = admin_client(descriptor)
    backend = _backend(descriptor, timeout_s)
    results = []
    for name in list(names):
        if topic_metadata(admin, name, timeout_s) is None:
            results.append({"topic": name, "action": "absent"})
            continue
        backend.delete(name)
        deadline = time.monotonic() + timeout_s
        while topic_metadata(admin, name, timeout_s=5) is not None:
            if time.monotonic() > deadline:
                raise ClusterError(f"topic {name} still exists {timeout_s:.0f} s after deletion")
            time.sleep(0.2)
        results.append({"topic": name, "action": "deleted"})
    return results
