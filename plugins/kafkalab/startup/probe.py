"""One start-up probe: new consumers of a case, timed from their construction to their first
record (:func:`run_probe`).

Every mark is a ``time.monotonic_ns()`` reading (CLOCK_MONOTONIC) of the consumer's own thread:

* ``start``: just before the consumer object is made (the interval holds the client's start);
* ``created``: its constructor returned (kafka-python connects to a bootstrap broker here;
  librdkafka connects in the background);
* ``metadata``: the client knew the cluster, its first Metadata response had arrived
  (librdkafka only: the creation of the first broker that response named, dated by that
  broker's ``stateage`` in state ``INIT`` in its statistics, on librdkafka's clock, which is
  CLOCK_MONOTONIC; kafka-python exposes none, and connects inside its constructor). Not the
  first connection's own mark: since librdkafka 2.10 the bootstrap broker that carried it is
  removed as soon as the response names the real ones, ~1-2 ms after it came up, between two
  snapshots; a learned broker then waits in ``INIT`` until it is needed (~50 ms on Kafka
  4.4), long enough for every probe measured so far to show it. The first learned broker's *connection* is no start-up mark: it can come
  after the assignment (KIP-848), and dating by it put the client's start ~50 ms late;
* ``assigned``: the consumer was given a non-empty assignment (its rebalance callback, or the
  ``assign()`` call);
* ``first_record``: its first record was returned to the application.

Statistics are asked every :data:`STATS_INTERVAL_MS` and read after the first record; a
state change is dated ``ts - stateage`` of any later snapshot, so the interval does not limit
the resolution. A probe that sees no record within the timeout is ``timeout``; one that
fails is ``error`` with the client's message: both are rows, never dropped.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab.startup.spec import StartupCase

__all__ = ["STATS_INTERVAL_MS", "ProbeMarks", "cluster_known_ns", "new_group_id", "run_probe"]

STATS_INTERVAL_MS = 10
"""librdkafka's ``statistics.interval.ms`` during a probe."""

POLL_S = 0.1
"""Each poll's timeout while a probe waits, as an application polls: a poll returns as soon
as a record is there, so it does not delay the mark. (kafka-python 3.0 with a 5 ms poll never
finished joining a group on a warm Kafka 4.4 broker with no initial rebalance delay.)"""

STATS_WAIT_S = 0.5
"""After the first record, how long a librdkafka probe waits for one more statistics snapshot
(outside every timed interval)."""

_LOGICAL_BROKERS = ("GroupCoordinator",)


def now_ns() -> int:
    """CLOCK_MONOTONIC in ns: every mark of a probe."""
    return time.monotonic_ns()


@dataclass
class ProbeMarks:
    """What one member of a probe saw, on CLOCK_MONOTONIC (ns; None: not reached or not
    exposed by the client)."""

    member: int
    start_ns: int = 0
    created_ns: int | None = None
    metadata_ns: int | None = None
    assigned_ns: int | None = None
    first_record_ns: int | None = None
    status: str = "ok"
    """``ok``, ``timeout`` (no record within the probe's timeout) or ``error``."""
    error: str | None = None

    def since_start_ms(self, mark_ns: int | None) -> float | None:
        """``mark_ns`` in ms after this member's start (None stays None)."""
        return None if mark_ns is None else (mark_ns - self.start_ns) / 1e6


def cluster_known_ns(snapshots: list[dict[str, Any]]) -> int | None:
    """When the client's first Metadata response arrived (ns), from librdkafka's snapshots:
    the earliest creation of a broker it learned (node id >= 0) seen in state ``INIT``, the
    state a broker is created in and never returns to; None if no snapshot saw one there."""
    known: int | None = None
    for snap in snapshots:
        ts_ns = int(snap.get("ts", 0)) * 1000  # µs
        for name, broker in (snap.get("brokers") or {}).items():
            if (broker.get("state") == "INIT" and int(broker.get("nodeid", -1)) >= 0
                    and name not in _LOGICAL_BROKERS):
                created = ts_ns - int(broker.get("stateage", 0)) * 1000  # µs
                known = created if known is None else min(known, created)
    return known


def _confluent_member(conf: Mapping[str, Any], topic: str, case: StartupCase, group: str | None,
                      marks: ProbeMarks, timeout_s: float) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    raw: list[str] = []
    settings = {**conf, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                "statistics.interval.ms": STATS_INTERVAL_MS, "stats_cb": raw.append,
                # a consumer without a group still needs a group.id in confluent-kafka; it
                # never joins it (assign() and no commit)
                "group.id": group or f"kafkalab-startup-unused-{uuid.uuid4().hex[:8]}"}
    if case.join == "subscribe":
        settings["group.protocol"] = case.group_protocol
    marks.start_ns = now_ns()
    consumer = Consumer(settings)
    marks.created_ns = now_ns()
    try:
        if case.join == "subscribe":
            def on_assign(_c: Any, parts: list[Any]) -> None:
                if parts and marks.assigned_ns is None:
                    marks.assigned_ns = now_ns()

            consumer.subscribe([topic], on_assign=on_assign)
        else:
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            marks.assigned_ns = now_ns()
        deadline = marks.start_ns + int(timeout_s * 1e9)
        last_error: str | None = None
        while now_ns() < deadline:
            msg = consumer.poll(POLL_S)
            if msg is not None and msg.error() is None:
                marks.first_record_ns = now_ns()
                break
            if msg is not None:  # the client's error events: the timeout's likely cause
                last_error = str(msg.error())
        if marks.first_record_ns is None:
            marks.status = "timeout"
            marks.error = last_error
        seen = len(raw)
        wait_until = time.monotonic() + STATS_WAIT_S
        while len(raw) == seen and time.monotonic() < wait_until:
            consumer.poll(POLL_S)
        known = cluster_known_ns([json.loads(s) for s in raw])
        # a sampled date that lands outside [created, first record] cannot be placed (seen
        # once in CI under load: ~1 ms after a 5.6 ms first record): null, never a wrong date
        last = marks.first_record_ns
        placed = known is not None and known >= (marks.created_ns or 0) and (
            last is None or known <= last)
        marks.metadata_ns = known if placed else None
    finally:
        consumer.close()


def _kafka_python_member(conf: Mapping[str, Any], topic: str, case: StartupCase,
                         group: str | None, marks: ProbeMarks, timeout_s: float) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            pass

        def on_partitions_assigned(self, assigned: Any) -> None:
            if assigned and marks.assigned_ns is None:
                marks.assigned_ns = now_ns()

    marks.start_ns = now_ns()
    consumer = KafkaConsumer(group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, **conf)
    marks.created_ns = now_ns()
    try:
        if case.join == "subscribe":
            consumer.subscribe([topic], listener=Listener())
        else:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            marks.assigned_ns = now_ns()
        deadline = marks.start_ns + int(timeout_s * 1e9)
        while now_ns() < deadline:
            got = consumer.poll(timeout_ms=int(POLL_S * 1000), max_records=1)
            if any(got.values()):
                marks.first_record_ns = now_ns()
                break
        if marks.first_record_ns is None:
            marks.status = "timeout"
    finally:
        consumer.close()


_MEMBERS: dict[str, Callable[..., None]] = {
    "confluent-kafka": _confluent_member,
    "kafka-python": _kafka_python_member,
}


def new_group_id(case: StartupCase) -> str | None:
    """A new consumer group for a ``subscribe`` case (None for ``assign``)."""
    return f"kafkalab-startup-{uuid.uuid4().hex[:12]}" if case.join == "subscribe" else None


def run_probe(case: StartupCase, topic: str, client_conf: Mapping[str, Any],
              timeout_s: float, group: str | None) -> list[ProbeMarks]:
    """Start ``case.members`` consumers of ``case`` at once (one thread each, released
    together) and return each one's marks, in member order.

    ``client_conf``: the client's connection settings (librdkafka properties for
    confluent-kafka, keyword arguments for kafka-python). A ``subscribe`` case's members share
    the new group ``group`` (:func:`new_group_id`). A member that raises is an ``error`` row
    with the message.
    """
    member_fn = _MEMBERS[case.client]
    marks = [ProbeMarks(member=i) for i in range(case.members)]
    gate = threading.Barrier(case.members)

    def member(m: ProbeMarks) -> None:
        try:
            gate.wait()
            member_fn(client_conf, topic, case, group, m, timeout_s)
        except Exception as exc:  # the row records it
            m.status = "error"
            m.error = f"{type(exc).__name__}: {exc}"[:500]

    threads = [threading.Thread(target=member, args=(m,), name=f"startup-member-{m.member}",
                                daemon=True) for m in marks]
    warnings = _ClientWarnings(case.client)
    with warnings:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout_s + 30.0)
    for t, m in zip(threads, marks, strict=True):
        if t.is_alive():
            m.status, m.error = "error", "the member did not finish (client hung)"
        elif m.status == "timeout" and m.error is None and warnings.seen:
            m.error = f"{case.client} logged during the probe: {warnings.text()}"[:500]
    return marks


class _ClientWarnings(logging.Handler):
    """The warnings kafka-python logs during a probe (its logger ``kafka``): a timed-out
    member's row gives them as its likely cause (kafka-python reports no error to the
    application while it fails to join). Any member's: a log record does not say which
    consumer logged it. librdkafka's errors come through ``poll`` instead."""

    def __init__(self, client: str) -> None:
        super().__init__(logging.WARNING)
        self.logger = logging.getLogger("kafka") if client == "kafka-python" else None
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message not in self.seen:
            self.seen.append(message)

    def text(self) -> str:
        """The distinct messages, in the order first logged."""
        return "; ".join(self.seen)

    def __enter__(self) -> _ClientWarnings:
        if self.logger is not None:
            self.logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.logger is not None:
            self.logger.removeHandler(self)
