"""The partition timeline: the leader and ISR of every partition, every 100 ms.

A thread of its own with its own session of the cluster's partition reader
(:meth:`kafkalab.cluster.embedded.EmbeddedCluster.partition_reader`: ZooKeeper on Kafka 0.9,
else the Admin API); a poll that fails (the source busy, a broker frozen) is skipped, never
fatal. Rows follow ``TIMELINE_SCHEMA`` (:mod:`kafkalab.faults.files`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kafkalab.cluster.partitions import PartitionReader
from kafkalab.scenarios.base import now_ns

__all__ = ["POLL_INTERVAL_S", "Monitor", "first_full_isr", "first_new_leader"]

POLL_INTERVAL_S = 0.1


class Monitor:
    """Polls the partitions of ``topic`` until :meth:`stop`."""

    def __init__(self, open_reader: Callable[[], PartitionReader], topic: str,
                 partitions: int) -> None:
        self._open_reader, self._topic, self._partitions = open_reader, topic, partitions
        self.rows: list[dict[str, Any]] = []
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fault-monitor", daemon=True)

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        self._thread.join(10.0)
        return list(self.rows)

    def _run(self) -> None:
        with self._open_reader() as reader:
            while not self._stop.is_set():
                try:
                    alive = ",".join(str(b) for b in reader.broker_ids())
                    ts = now_ns()
                    for p in range(self._partitions):
                        st = reader.partition_state(self._topic, p)
                        isr = list(st.isr) if st else []
                        self.rows.append({
                            "sample_ts_ns": ts, "partition": p,
                            "leader": st.leader if st else -1,
                            "leader_epoch": st.leader_epoch if st else -1,
                            "isr": ",".join(str(b) for b in isr), "isr_size": len(isr),
                            "brokers_alive": alive})
                except (OSError, ConnectionError, ValueError):
                    self.errors += 1
                self._stop.wait(POLL_INTERVAL_S)


def first_new_leader(rows: list[dict[str, Any]], after_ns: int, old_leader: int,
                     partition: int = 0) -> int | None:
    """The first poll at or after ``after_ns`` whose leader of ``partition`` is a broker other
    than ``old_leader`` (None when the leadership never moved)."""
    for r in rows:
        if (r["partition"] == partition and r["sample_ts_ns"] >= after_ns
                and r["leader"] >= 0 and r["leader"] != old_leader):
            return int(r["sample_ts_ns"])
    return None


def first_full_isr(rows: list[dict[str, Any]], after_ns: int, rf: int, partitions: int,
                   not_before_ns: int | None = None) -> int | None:
    """When the ISR was whole again: the first poll where every partition has a leader and
    ``rf`` in-sync replicas, after the first poll since ``after_ns`` (the fault) where it was
    not, and not before ``not_before_ns`` (the heal). None when the ISR never shrank (a fault
    shorter than the brokers noticed) or never grew back.

    The source may still show the old, full ISR for a while after a crash (ZooKeeper until
    the dead broker's session expires), so a full ISR only counts once a shrink was seen.
    """
    by_ts: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        if r["sample_ts_ns"] >= after_ns:
            by_ts.setdefault(int(r["sample_ts_ns"]), []).append(r)
    shrunk = False
    for ts in sorted(by_ts):
        rs = by_ts[ts]
        full = len(rs) == partitions and all(r["leader"] >= 0 and r["isr_size"] >= rf for r in rs)
        if not full:
            shrunk = True
        elif shrunk and (not_before_ns is None or ts >= not_before_ns):
            return ts
    return None
