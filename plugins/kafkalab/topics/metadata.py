"""Topic metadata through the AdminClient (both protocols: Metadata works on Kafka 0.9)."""

from __future__ import annotations

import time
from typing import Any

from kafkalab.cluster.admin import admin_client
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.errors import ClusterError

__all__ = ["partition_details", "topic_metadata", "wait_for_leaders"]


def topic_metadata(admin: Any, name: str, timeout_s: float) -> Any | None:
    """``TopicMetadata`` of ``name``, None when the cluster does not know it.

    Raises:
        ClusterError: no metadata within ``timeout_s``.
    """
    from confluent_kafka import KafkaError, KafkaException

    try:
        # all topics: asking 0.9 for one unknown topic trips librdkafka's Metadata v0 parser
        md = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise ClusterError(f"cannot read metadata from the cluster: {exc.args[0]}") from None
    tm = md.topics.get(name)
    if tm is None:
        return None
    if tm.error is not None and tm.error.code() in (
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_TOPIC,
    ):
        return None
    return tm


def wait_for_leaders(
    descriptor: ClusterDescriptor, name: str, partitions: int, timeout_s: float
) -> None:
    """Wait until metadata shows ``partitions`` partitions of ``name``, each with a leader
    (a producer can start right away).

    Raises:
        ClusterError: not so after ``timeout_s``, saying what was missing.
    """
    admin = admin_client(descriptor)
    deadline = time.monotonic() + timeout_s
    last = "unknown to the cluster"
    while True:
        remaining = deadline - time.monotonic()
        try:
            tm = topic_metadata(admin, name, timeout_s=min(5.0, max(0.5, remaining)))
        except ClusterError as exc:
            tm, last = None, str(exc)
        if tm is not None:
            parts = tm.partitions
            leaderless = [p for p, pm in parts.items() if pm.leader < 0]
            if len(parts) >= partitions and not leaderless:
                return
            last = (
                f"{len(parts)} of {partitions} partitions known, leaderless: {sorted(leaderless)}"
            )
        if remaining <= 0:
            raise ClusterError(
                f"topic {name} on {descriptor.bootstrap_servers} has no leader for every "
                f"partition after {timeout_s:.0f} s ({last})"
            )
        time.sleep(0.1)


def partition_details(tm: Any) -> list[dict[str, Any]]:
    """One row per partition of a ``TopicMetadata``: partition, leader, replicas, isr."""
    return [
        {
            "partition": p,
            "leader": pm.leader,
            "replicas": list(pm.replicas),
            "isr": list(pm.isrs),
        }
        for p, pm in sorted(tm.partitions.items())
    ]
