"""The canary's accounting: what became of every record, by the lab's definitions.

Pure: no I/O and no clock of its own (every call passes CLOCK_MONOTONIC ns), so the rules
are unit-tested exactly. The engine tells the book what happened (:meth:`Book.sent`,
:meth:`~Book.acked`, :meth:`~Book.failed`, :meth:`~Book.received`,
:meth:`~Book.leader_seen`) and calls :meth:`Book.tick`; the book tells its :class:`Sink`
each verdict once, attributed to the partition and to the broker that led it when the record
was sent (the producer's own view; ``-1`` when it knew none).

The rules (docs/canary.md, "What a record becomes"):

* **produce**: every record sent is an attempt; it is good when acked within
  ``produce_timeout_ms`` of its *intended* time. librdkafka fails a record
  ``message.timeout.ms`` (the same setting) after the ``produce()`` call, which is later than
  the intended time when the canary itself sent late (its process or host stalled), so the
  book holds the deadline from the intended time: a record acked later is not good and is
  counted ``acked_late``. An acked record is due for consumption whenever it was acked.
* **consume**: every acked record is due at ``intended + consume_deadline_ms``; it is good
  when read by then. One not read by then is *overdue*: read later it is **late**, not read by
  ``intended + lost_after_s`` it is **lost** (and forgotten).
* **latency**: the first read of an acked record files ``receive − intended`` (ms), once
  ``settle_ms`` have passed after the read. It is *across a leader change* when the
  producer saw its partition's leader change between ``intended − stats_interval`` and
  ``receive + stats_interval`` (the view is sampled every ``stats_interval``): such
  measurements are filed apart, so a leadership move does not read as a latency incident.
* **duplicated**: a record read again; **received unacked**: a record read whose send was
  reported failed (the broker wrote it after all); **unknown**: a record of this canary that
  the book no longer (or never) held.
* **unresolved** at :meth:`Book.close`: records whose verdict was still open (counted, never
  guessed).
* **warm-up**: records intended before ``warmup_until_ns`` are tracked (a read of one is no
  ``unknown``) but given no verdict; :attr:`Book.warmup_records` counts them.

Memory is bounded: a record is forgotten at ``intended + lost_after_s``, so the book holds
at most ``partitions × lost_after_s / interval`` records.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["Book", "Sink"]

_SENT, _ACKED, _FAILED = 0, 1, 2
_MS = 1_000_000


class Sink(Protocol):
    """Where the book's verdicts go (the metrics; a list in the tests)."""

    def produced(self, broker: int, partition: int, acked: bool) -> None:
        """A send ended: ``acked`` within the produce deadline, or not (failed, or acked
        late)."""

    def consumed(self, broker: int, partition: int, in_time: bool) -> None:
        """An acked record's consume deadline passed: read by then or not."""

    def latency(self, broker: int, partition: int, e2e_latency_ms: float,
                leader_change: bool) -> None:
        """A read record's e2e latency from its intended send time."""

    def anomaly(self, broker: int, partition: int, kind: str) -> None:
        """``acked_late``, ``late``, ``lost``, ``duplicated``, ``received_unacked`` or
        ``unknown``."""


@dataclass
class _Record:
    partition: int
    leader: int
    intended_ns: int
    state: int = _SENT
    receive_ns: int = -1
    overdue: bool = False
    judged: bool = False
    filed: bool = False
    warmup: bool = False


@dataclass
class Book:
    """The records in flight and their verdicts (see the module's rules)."""

    sink: Sink
    produce_timeout_ms: int
    consume_deadline_ms: int
    lost_after_ms: int
    settle_ms: int
    stats_interval_ms: int
    warmup_until_ns: int = 0
    warmup_records: int = 0
    _records: OrderedDict[tuple[int, int], _Record] = field(default_factory=OrderedDict)
    _due: dict[int, deque[int]] = field(default_factory=dict)
    """Per partition, the seqs not yet judged for consumption (in send order)."""
    _settling: dict[int, deque[int]] = field(default_factory=dict)
    """Per partition, the seqs read and not yet filed (in read order)."""
    _leaders: dict[int, int] = field(default_factory=dict)
    _changes: dict[int, deque[int]] = field(default_factory=dict)
    leader_changes: dict[int, int] = field(default_factory=dict)
    """Per partition, the leader changes the producer saw (its first view not counted)."""

    def sent(self, partition: int, seq: int, intended_ns: int) -> None:
        """Record ``seq`` of ``partition`` (intended at ``intended_ns``) was handed to the
        producer; it is attributed to the partition's leader as the producer knows it."""
        rec = _Record(partition, self._leaders.get(partition, -1), intended_ns)
        self._records[(partition, seq)] = rec
        if intended_ns < self.warmup_until_ns:
            rec.warmup = True
            self.warmup_records += 1
            return
        self._due.setdefault(partition, deque()).append(seq)

    def acked(self, partition: int, seq: int, ack_ns: int) -> None:
        """The broker acknowledged the record (its delivery report was served at ``ack_ns``)."""
        self._ended(partition, seq, _ACKED, ack_ns)

    def failed(self, partition: int, seq: int) -> None:
        """The producer reported the send failed (an error or its timeout)."""
        self._ended(partition, seq, _FAILED, -1)

    def _ended(self, partition: int, seq: int, state: int, ack_ns: int) -> None:
        rec = self._records.get((partition, seq))
        if rec is None or rec.state != _SENT:
            return
        rec.state = state
        if rec.warmup:
            return
        in_time = state == _ACKED and ack_ns - rec.intended_ns <= self.produce_timeout_ms * _MS
        self.sink.produced(rec.leader, partition, in_time)
        if state == _ACKED and not in_time:
            self.sink.anomaly(rec.leader, partition, "acked_late")
        if state == _FAILED and rec.receive_ns >= 0:
            self.sink.anomaly(rec.leader, partition, "received_unacked")

    def received(self, partition: int, seq: int, receive_ns: int) -> None:
        """The consumer read the record at ``receive_ns``."""
        rec = self._records.get((partition, seq))
        if rec is None:
            self.sink.anomaly(self._leaders.get(partition, -1), partition, "unknown")
            return
        if rec.receive_ns >= 0:
            if not rec.warmup:
                self.sink.anomaly(rec.leader, partition, "duplicated")
            return
        rec.receive_ns = receive_ns
        if rec.warmup:
            return
        if rec.state == _FAILED:
            self.sink.anomaly(rec.leader, partition, "received_unacked")
        if rec.overdue:
            self.sink.anomaly(rec.leader, partition, "late")
        self._settling.setdefault(partition, deque()).append(seq)

    def leader_seen(self, partition: int, leader: int, ts_ns: int) -> None:
        """The producer's view of ``partition``'s leader at ``ts_ns`` (a sample)."""
        before = self._leaders.get(partition)
        if before == leader:
            return
        self._leaders[partition] = leader
        if before is not None:
            self._changes.setdefault(partition, deque()).append(ts_ns)
            self.leader_changes[partition] = self.leader_changes.get(partition, 0) + 1

    def leader(self, partition: int) -> int:
        """The partition's leader as the producer last saw it (-1: unknown)."""
        return self._leaders.get(partition, -1)

    def _across_change(self, rec: _Record) -> bool:
        margin = self.stats_interval_ms * _MS
        return any(rec.intended_ns - margin <= ts <= rec.receive_ns + margin
                   for ts in self._changes.get(rec.partition, ()))

    def tick(self, now_ns: int) -> None:
        """Give every verdict that is due at ``now_ns``; forget what is past ``lost_after``."""
        for partition, seqs in self._due.items():
            self._judge_consume(partition, seqs, now_ns)
        for partition, seqs in self._settling.items():
            self._file_latency(partition, seqs, now_ns)
        self._forget(now_ns)

    def _judge_consume(self, partition: int, seqs: deque[int], now_ns: int) -> None:
        deadline = self.consume_deadline_ms * _MS
        while seqs:
            rec = self._records.get((partition, seqs[0]))
            if rec is None or rec.state == _FAILED:
                seqs.popleft()
                continue
            if rec.intended_ns + deadline > now_ns or rec.state == _SENT:
                return  # not due yet, or its send has no outcome yet (in order: the rest wait)
            seqs.popleft()
            in_time = 0 <= rec.receive_ns <= rec.intended_ns + deadline
            rec.judged = True
            rec.overdue = not in_time and rec.receive_ns < 0  # read later: late then
            self.sink.consumed(rec.leader, rec.partition, in_time)
            if not in_time and rec.receive_ns >= 0:  # read after its deadline, before this
                self.sink.anomaly(rec.leader, rec.partition, "late")

    def _file_latency(self, partition: int, seqs: deque[int], now_ns: int) -> None:
        settle = self.settle_ms * _MS
        while seqs:
            rec = self._records.get((partition, seqs[0]))
            if rec is None or rec.state == _FAILED:
                seqs.popleft()
                continue
            if rec.receive_ns + settle > now_ns or rec.state == _SENT:
                return
            seqs.popleft()
            rec.filed = True
            self.sink.latency(rec.leader, rec.partition, (rec.receive_ns - rec.intended_ns) / _MS,
                              self._across_change(rec))

    def _forget(self, now_ns: int) -> None:
        horizon = now_ns - self.lost_after_ms * _MS
        while self._records:
            rec = next(iter(self._records.values()))
            if rec.intended_ns > horizon:
                break
            self._records.popitem(last=False)
            if rec.state == _ACKED and rec.receive_ns < 0 and not rec.warmup:
                self.sink.anomaly(rec.leader, rec.partition, "lost")
        for changes in self._changes.values():
            while changes and changes[0] < horizon:
                changes.popleft()

    def close_ready(self) -> bool:
        """Every record sent has its outcome and every acked one was read: nothing more can
        arrive that the final verdicts would wait for."""
        return all(rec.state == _FAILED or (rec.state == _ACKED and rec.receive_ns >= 0)
                   for rec in self._records.values())

    def close(self, now_ns: int) -> dict[int, int]:
        """The final verdicts at ``now_ns``: a :meth:`tick`, then every record whose verdict
        is already certain gets it early (read in time before its deadline passed; read and
        not yet settled: filed with the leader changes seen so far). Returns, per broker, the
        records whose verdict was still open (sent without an outcome; acked and neither
        read nor past its deadline; overdue and neither read nor lost): counted apart, never
        guessed."""
        self.tick(now_ns)
        deadline = self.consume_deadline_ms * _MS
        open_by_broker: dict[int, int] = {}
        for rec in self._records.values():
            if rec.state == _FAILED or rec.warmup:
                continue
            if rec.state == _ACKED and not rec.judged and 0 <= rec.receive_ns <= (
                    rec.intended_ns + deadline):
                rec.judged = True
                self.sink.consumed(rec.leader, rec.partition, True)
            if rec.state == _ACKED and rec.receive_ns >= 0 and not rec.filed:
                rec.filed = True
                self.sink.latency(rec.leader, rec.partition,
                                  (rec.receive_ns - rec.intended_ns) / _MS, self._across_change(rec))
            if rec.state == _SENT or rec.receive_ns < 0:
                open_by_broker[rec.leader] = open_by_broker.get(rec.leader, 0) + 1
        self._due.clear()
        self._settling.clear()
        return open_by_broker

    @property
    def held(self) -> int:
        """How many records the book holds now (bounded by ``lost_after``)."""
        return len(self._records)
