"""What the producer's own client believes: the leader of partition 0 as librdkafka's
statistics report it, sampled while a cell runs.

A fault trial asks for it (``LoadCellSpec.watch_leader``): the cluster elects a new leader at
one moment (the lab's timeline sees it), and the producer learns of it later, from a
metadata refresh its errors or timeouts trigger. The gap between the two is the client's own
share of a failover, measured apart from the election.

librdkafka emits its statistics every :data:`STATS_INTERVAL_MS` from the client's poll, so
a change is seen at most one interval (plus the poll's own latency) after the client's
metadata changed. Only confluent-kafka has statistics; kafka-python's producer is not
watched.
"""

from __future__ import annotations

import json

from kafkalab.scenarios.base import now_ns

__all__ = ["STATS_INTERVAL_MS", "LeaderWatch"]

STATS_INTERVAL_MS = 100
"""librdkafka's ``statistics.interval.ms`` while a leader is watched."""


class LeaderWatch:
    """The changes of the client's view of ``topic``'s partition ``partition`` leader:
    ``changes`` holds ``(ts_ns, leader)`` each time the statistics name another leader
    (``-1``: the client knows no leader), the first sample included."""

    def __init__(self, topic: str, partition: int = 0) -> None:
        self.topic = topic
        self.partition = partition
        self.changes: list[tuple[int, int]] = []

    def on_stats(self, raw: str) -> None:
        """librdkafka's ``stats_cb``: one statistics document (JSON text)."""
        ts = now_ns()
        try:
            part = json.loads(raw)["topics"][self.topic]["partitions"][str(self.partition)]
            leader = int(part["leader"])
        except (ValueError, KeyError, TypeError):  # the topic not known to the client yet
            return
        if not self.changes or self.changes[-1][1] != leader:
            self.changes.append((ts, leader))

    def librdkafka_settings(self) -> dict[str, object]:
        """The producer settings that feed :meth:`on_stats`."""
        return {"statistics.interval.ms": STATS_INTERVAL_MS, "stats_cb": self.on_stats}
