"""Who leads a partition and which replicas are in sync: one interface, two sources.

The fault experiments watch leadership and the ISR every 100 ms while they break brokers.
Where that is read depends on the cluster (:attr:`kafkalab.cluster.features.Features.
partition_state`), so it is read through :class:`PartitionReader`:

* :class:`ZooKeeperPartitions`: a ZooKeeper-mode Kafka (0.9) keeps each partition's leader
  and ISR in ``/brokers/topics/<topic>/partitions/<p>/state`` (``{"leader": 1,
  "leader_epoch": 3, "isr": [1, 2, 0], ...}``) and the live brokers as children of
  ``/brokers/ids``. The controller writes them there first; clients' metadata lags the ISR
  by up to several seconds in 0.9 (ISR changes are propagated in batches), so ZooKeeper is
  the source of truth.
* :class:`AdminPartitions`: any other cluster answers the Admin API's metadata request with
  each partition's leader and ISR (a KRaft cluster propagates them within the metadata log's
  round trip).

A reader is one session: not thread-safe, one per thread (:func:`open` it per thread).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from kafkalab.cluster.zk_reader import ZkReader

__all__ = ["AdminPartitions", "PartitionReader", "PartitionState", "ZooKeeperPartitions"]


@dataclass(frozen=True)
class PartitionState:
    """One partition as its controller sees it."""

    leader: int
    """The leader's broker id; -1 when it has none."""
    isr: tuple[int, ...]
    """The in-sync replicas' broker ids."""
    leader_epoch: int = -1
    """The leader epoch (ZooKeeper only; -1 where the source does not say)."""


class PartitionReader(Protocol):
    """Reads partition leadership, the ISR and the live brokers of one cluster.

    Every read raises ``OSError`` (or ``ConnectionError``) when the source cannot be
    reached; the next read tries again.
    """

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        """The partition's leader and ISR; None before the topic has the partition."""
        ...

    def broker_ids(self) -> list[int]:
        """The ids of the brokers alive now, sorted."""
        ...

    def topic_gone(self, topic: str) -> bool:
        """True once nothing of a deleted topic is left (a new topic may be created)."""
        ...

    def close(self) -> None:
        """End the session."""
        ...

    def __enter__(self) -> PartitionReader: ...

    def __exit__(self, *exc: object) -> None: ...


class ZooKeeperPartitions:
    """:class:`PartitionReader` of a ZooKeeper-mode Kafka: reads the controller's nodes."""

    def __init__(self, zk_port: int, timeout_s: float = 2.0) -> None:
        self._zk = ZkReader(zk_port, timeout_s=timeout_s)

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        """``/brokers/topics/<topic>/partitions/<partition>/state``."""
        raw = self._zk.get_data(f"/brokers/topics/{topic}/partitions/{partition}/state")
        if not raw:
            return None
        doc = json.loads(raw)
        return PartitionState(leader=int(doc.get("leader", -1)),
                              isr=tuple(int(b) for b in doc.get("isr", [])),
                              leader_epoch=int(doc.get("leader_epoch", -1)))

    def broker_ids(self) -> list[int]:
        """The children of ``/brokers/ids`` (each live broker's ephemeral node)."""
        return sorted(int(c) for c in (self._zk.get_children("/brokers/ids") or [])
                      if c.isdigit())

    def topic_gone(self, topic: str) -> bool:
        """Neither ``/brokers/topics/<topic>`` nor ``/admin/delete_topics/<topic>`` is left:
        Kafka 0.9's TopicCommand fails on every topic while one is half deleted."""
        return (self._zk.get_data(f"/brokers/topics/{topic}") is None
                and self._zk.get_data(f"/admin/delete_topics/{topic}") is None)

    def close(self) -> None:
        """End the ZooKeeper session."""
        self._zk.close()

    def __enter__(self) -> ZooKeeperPartitions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AdminPartitions:
    """:class:`PartitionReader` through the Admin API's metadata (a fresh request a read).

    Args:
        admin: a confluent-kafka ``AdminClient`` (:func:`kafkalab.cluster.admin.admin_client`).
        timeout_s: how long one metadata request may take.
    """

    def __init__(self, admin: Any, timeout_s: float = 2.0) -> None:
        self._admin = admin
        self._timeout_s = timeout_s

    def _metadata(self, topic: str | None = None) -> Any:
        try:
            return self._admin.list_topics(topic=topic, timeout=self._timeout_s)
        except Exception as exc:  # KafkaException: the cluster did not answer in time
            raise ConnectionError(f"metadata request failed: {exc}") from None

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        """The partition's leader and ISR as the metadata response gives them."""
        tm = self._metadata(topic).topics.get(topic)
        if tm is None or tm.error is not None:
            return None
        pm = tm.partitions.get(partition)
        if pm is None:
            return None
        return PartitionState(leader=int(pm.leader), isr=tuple(int(b) for b in pm.isrs))

    def broker_ids(self) -> list[int]:
        """The brokers the metadata response lists."""
        return sorted(int(b) for b in self._metadata().brokers)

    def topic_gone(self, topic: str) -> bool:
        """The metadata response no longer knows the topic."""
        tm = self._metadata(topic).topics.get(topic)
        return tm is None or tm.error is not None

    def close(self) -> None:
        """Nothing to end: the admin client is dropped with the reader."""

    def __enter__(self) -> AdminPartitions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
