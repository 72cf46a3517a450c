"""The broker settings in effect on a cluster, read through the Admin API (DescribeConfigs,
KIP-133, Kafka 0.11): what every run's manifest records beside its clients' settings.

Recorded: every setting whose value does not come from Kafka's own default (set in the
broker's properties file, or dynamically), plus :data:`WATCHED` whatever their source —
the ones that change what the lab measures. A sensitive value (a password) is never read
into the record. A cluster whose protocol has no DescribeConfigs (Kafka 0.9) records None.
"""

from __future__ import annotations

from typing import Any

from kafkalab.cluster.admin import admin_client
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.cluster.features import kafka_features, parse_version

__all__ = ["WATCHED", "broker_settings"]

WATCHED: tuple[str, ...] = (
    "message.max.bytes", "min.insync.replicas", "default.replication.factor",
    "unclean.leader.election.enable", "replica.lag.time.max.ms", "replica.fetch.wait.max.ms",
    "num.replica.fetchers", "num.network.threads", "num.io.threads",
    "log.flush.interval.messages", "log.flush.interval.ms", "compression.type",
    "group.initial.rebalance.delay.ms", "group.min.session.timeout.ms",
    "group.coordinator.rebalance.protocols", "group.consumer.session.timeout.ms",
    "group.consumer.heartbeat.interval.ms", "group.consumer.min.session.timeout.ms",
    "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor", "auto.create.topics.enable",
)
"""Broker settings recorded even at Kafka's default: they shape latency, durability or a
consumer group's start."""


def broker_settings(d: ClusterDescriptor, timeout_s: float = 10.0) -> dict[str, Any] | None:
    """``{"broker_id": N, "settings": {name: value}, "sources": {name: source}}`` of the
    first broker the cluster's metadata lists; None when the broker cannot tell (before Kafka
    0.11: no DescribeConfigs), or when the cluster does not answer (the run goes on: the settings are context, not a measurement).
    """
    if not kafka_features(d.protocol, parse_version(d.version)).describe_configs:
        return None
    from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

    try:
        admin = admin_client(d, timeout_s, quiet=True)
        brokers = sorted(admin.list_topics(timeout=timeout_s).brokers)
        if not brokers:
            return None
        resource = ConfigResource(ResourceType.BROKER, str(brokers[0]))
        entries = admin.describe_configs([resource])[resource].result(timeout=timeout_s)
    except Exception:  # KafkaException, a timeout: say nothing rather than something wrong
        return None
    settings: dict[str, str] = {}
    sources: dict[str, str] = {}
    for name, entry in sorted(entries.items()):
        if entry.is_sensitive or entry.value is None:
            continue
        if entry.source == ConfigSource.DEFAULT_CONFIG.value and name not in WATCHED:
            continue
        settings[name] = str(entry.value)
        sources[name] = ConfigSource(entry.source).name.lower()
    return {"broker_id": brokers[0], "settings": settings, "sources": sources}
