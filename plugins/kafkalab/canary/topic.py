"""The canary topic: one partition whose preferred leader is each broker.

The lab's topic provisioning (:mod:`kafkalab.topics`) sizes topics by partition count and
lets the cluster place them; the canary needs a placement of its own, a partition *led* by
every broker, so it asks the Admin API directly with explicit replica assignments: partition
``i`` of a new topic has replicas ``brokers[i], brokers[i+1], …`` (its first replica is its
preferred leader). At start, and every ``topic_check_s`` after, a live broker that is the
preferred leader of no partition (a broker added to the cluster, or a topic created before
it) gets a new partition of its own. Partitions are never removed or moved: a dead broker's
partition stays, and its failures are what the canary is for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.errors import ClusterError, ConfigError

__all__ = ["TopicView", "check_topic", "placement"]


@dataclass(frozen=True)
class TopicView:
    """The canary topic as last checked."""

    partitions: int
    brokers: tuple[int, ...]
    """The brokers in the cluster's metadata (live ones)."""
    added: tuple[int, ...] = ()
    """Brokers that got a partition of their own at this check."""
    created: bool = False


def placement(brokers: list[int], firsts: list[int], replication_factor: int) -> list[list[int]]:
    """Replica lists for new partitions whose preferred leaders are ``firsts``: each followed
    by the next brokers in ``brokers``' order (so followers spread too)."""
    order = sorted(brokers)
    out = []
    for first in firsts:
        i = order.index(first)
        out.append([order[(i + k) % len(order)] for k in range(replication_factor)])
    return out


def _result(futures: dict[str, Any], timeout_s: float, what: str) -> None:
    from confluent_kafka import KafkaError, KafkaException

    for fut in futures.values():
        try:
            fut.result(timeout=timeout_s)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if getattr(error, "code", lambda: None)() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            raise ClusterError(f"the canary could not {what}: {exc}") from exc


def check_topic(admin: Any, topic: str, replication_factor: int | None,
                timeout_s: float = 15.0) -> TopicView:
    """Create the canary topic, or give a partition to every live broker that leads none.

    Raises:
        ConfigError: the replication factor exceeds the brokers.
        ClusterError: the cluster refused (authorization, a policy) or did not answer.
    """
    from confluent_kafka.admin import NewPartitions, NewTopic

    md = admin.list_topics(timeout=timeout_s)
    brokers = sorted(md.brokers)
    existing = md.topics.get(topic)
    if existing is None or existing.error is not None:
        rf = replication_factor or min(3, len(brokers))
        if rf > len(brokers):
            raise ConfigError(f"--replication-factor {rf} exceeds the {len(brokers)} brokers "
                              "in the cluster's metadata")
        assignment = placement(brokers, brokers, rf)
        _result(admin.create_topics([NewTopic(topic, len(assignment), replica_assignment=assignment)],
                                    request_timeout=timeout_s), timeout_s, f"create {topic}")
        return TopicView(len(brokers), tuple(brokers), tuple(brokers), created=True)
    parts = existing.partitions
    firsts = {p.replicas[0] for p in parts.values() if p.replicas}
    missing = [b for b in brokers if b not in firsts]
    if not missing:
        return TopicView(len(parts), tuple(brokers))
    rf = len(next(iter(parts.values())).replicas) if parts else 1
    rf = min(rf, len(brokers))
    assignment = placement(brokers, missing, rf)
    _result(admin.create_partitions([NewPartitions(topic, len(parts) + len(missing),
                                                   replica_assignment=assignment)],
                                    request_timeout=timeout_s),
            timeout_s, f"add partitions to {topic} for brokers {missing}")
    return TopicView(len(parts) + len(missing), tuple(brokers), tuple(missing))
