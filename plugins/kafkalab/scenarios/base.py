"""The scenario interface: one cell (scenario × payload × profile) in, rows out to its sink.

All Kafka scenarios measure the same way, so their figures compare:

* **closed loop**, as Kafka's EndToEndLatency tool does: message *i+1* is sent only after
  message *i* was received (or timed out). One message in flight means no queueing inside
  the harness, so the figure is the path's latency, not the harness's backlog;
* the consumer is assigned and positioned *before* the first send, so the consumer-group
  start-up (seed 000's ~1.4 s) is measured separately, by the first-message probes, and
  never leaks into the per-message latencies;
* the first ``warmup_messages`` are recorded with ``is_warmup = true``;
* a message not received within ``message_timeout_s`` is recorded ``lost``; if it shows up
  later it becomes ``late`` (latency kept); a second receipt is a ``duplicate`` row.

**Clocks.** Every interval is measured on CLOCK_MONOTONIC (:func:`now_ns`, an alias of
:func:`time.monotonic_ns`): a wall-clock step (NTP, a manual change) cannot stretch or
shrink it. On Linux CLOCK_MONOTONIC is one clock for every process of the host, so the
producer, the consumer and the HTTP server of the ``rest`` scenario (another process) stamp
times that may be subtracted from each other; it is *not* comparable across hosts. The wall
clock (:func:`wall_now_ns`, CLOCK_REALTIME) is kept only as a label (``wall_ts_ns``: when a
message was sent) and is never subtracted.

**What is timed.** A message is built (:meth:`Cell.message`: stamp header + a copy of the
body) and everything the scenario needs to send it (its delivery callback) is prepared
*before* the send time is read; ``send_ts_ns`` is read immediately before ``produce()`` /
``send()`` / ``post()``. Book-keeping (:class:`Tracker`) happens after the send call returns
(while the message is in flight) or after the receipt is stamped, never between the clock
read and the call.

**The heap.** A message is a fresh object (its header differs), so a 1 MB payload means a
megabyte allocated and freed per message, by the harness and by the client's copy in
``produce()``. glibc returns such memory to the kernel and faults it back in — inside the
next timed ``produce()`` — which cost the harness 13–20 % of its p50 at 1 MB against a
loop that re-sends one object. :func:`steady_heap` (called by every harness scenario before
it measures) fixes glibc's mmap and trim thresholds for the process so the memory stays
mapped; ``client_settings`` records it as ``harness.heap``.

**Rows are streamed.** A scenario writes every row to ``cell.sink`` (a
:class:`~kafkalab.samples.SampleSink`; the runner's writes a Parquet file as rows arrive):
first-message rows as they are measured, message rows through the :class:`Tracker` as soon
as they are final. The runner calls :meth:`Tracker.finish` on every tracker of the cell
(``cell.trackers``) after ``run`` returns *or raises*, so rows still held (lost, unacked)
are written even when a cell fails half-way.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from kafkalab.catalog import ScenarioSpec, scenario_spec
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.config.models import Profile, Workload
from kafkalab.payloads import read_stamp, stamp
from kafkalab.progress import Progress
from kafkalab.samples import ListSink, Sample, SampleSink

now_ns = time.monotonic_ns
"""The lab's interval clock: CLOCK_MONOTONIC in integer ns (``time.monotonic_ns`` itself, so
reading it costs no extra Python call). Shared by every process of a Linux host."""

wall_now_ns = time.time_ns
"""CLOCK_REALTIME in integer ns: only for labels (``wall_ts_ns``), never for intervals."""


MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
"""glibc ``M_MMAP_THRESHOLD`` set by :func:`steady_heap` (its maximum on 64-bit): blocks up to
32 MiB (a 10 MB image in base64 is 13.6 MB) come from the heap, not a fresh mmap each."""
TRIM_THRESHOLD_BYTES = 256 * 1024 * 1024
"""glibc ``M_TRIM_THRESHOLD`` set by :func:`steady_heap`: up to 256 MiB of free heap is kept
mapped instead of being returned to the kernel after every message."""
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_heap_steady: bool | None = None


def steady_heap() -> bool:
    """Fix glibc's malloc thresholds for this process (see "The heap" above); True when they
    are in force. Idempotent; a no-op (False) where the C library has no ``mallopt`` (macOS)
    or refuses the values (musl)."""
    global _heap_steady
    if _heap_steady is None:
        try:
            import ctypes

            mallopt = ctypes.CDLL(None).mallopt
            mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
            _heap_steady = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
                                and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
        except (OSError, AttributeError):
            _heap_steady = False
    return _heap_steady


def heap_setting() -> str:
    """The ``harness.heap`` client setting: what :func:`steady_heap` sets."""
    return (f"glibc mallopt M_MMAP_THRESHOLD={MMAP_THRESHOLD_BYTES}, "
            f"M_TRIM_THRESHOLD={TRIM_THRESHOLD_BYTES} (where the C library has mallopt)")


@dataclass
class Cell:
    """Everything one scenario needs to measure one payload under one profile, and where its
    rows go (``sink``)."""

    run_id: str
    workload: Workload
    profile: Profile
    payload: str
    body: bytes
    topic: str | None
    descriptor: ClusterDescriptor | None
    work_dir: Path
    http_port: int = 0
    nonce: bytes = field(default_factory=lambda: os.urandom(8))
    sink: SampleSink = field(default_factory=ListSink)
    """Where every row of the cell goes (the runner sets its file writer)."""
    trackers: list[Tracker] = field(default_factory=list)
    """Every :class:`Tracker` made for this cell (each registers itself); the runner calls
    their :meth:`~Tracker.finish` after ``run``."""

    @property
    def base64_body(self) -> bool:
        return self.workload.encoding == "base64"

    @property
    def total_messages(self) -> int:
        return self.workload.warmup_messages + self.workload.messages

    def message(self, seq: int, intended_ts_ns: int = 0) -> bytes:
        """The bytes of message ``seq`` (stamp header v2 + body): build it before reading the
        send time."""
        return stamp(self.body, seq, self.nonce, self.base64_body, intended_ts_ns)


class Skipped(Exception):
    """The scenario cannot run on this cluster; the reason is recorded, not an error."""


class Scenario(Protocol):
    """One way of moving a payload from a sender to a receiver."""

    @property
    def name(self) -> str:
        """The scenario's name (its catalog entry)."""
        ...

    @property
    def client(self) -> str:
        """The client library or tool it measures."""
        ...

    @property
    def loop_mode(self) -> str | None:
        """How its loop orders a message's steps (the ``loop_mode`` column)."""
        ...

    def client_version(self) -> str:
        """The client library's or tool's version."""
        ...

    def client_settings(self, cell: Cell) -> dict[str, str]:
        """The effective settings the scenario applies for ``cell`` (client configuration
        and measurement settings), as strings; never a secret. Needs no connection."""
        ...

    def run(self, cell: Cell, progress: Progress) -> None:
        """Measure the cell, writing every row to ``cell.sink``. Raise Skipped when it
        cannot run here."""
        ...


class CatalogScenario:
    """Base of the implementations: ``class X(CatalogScenario, scenario="rest")`` takes its
    ``name``, ``client`` and ``loop_mode`` from the scenario's
    :class:`~kafkalab.catalog.ScenarioSpec`."""

    spec: ClassVar[ScenarioSpec]

    def __init_subclass__(cls, scenario: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if scenario:
            cls.spec = scenario_spec(scenario)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def client(self) -> str:
        return self.spec.client

    @property
    def loop_mode(self) -> str | None:
        """``overlapped``, ``serial`` or ``request`` (the ``loop_mode`` column)."""
        return self.spec.loop_mode


class Tracker:
    """Book-keeping of a closed loop: which seq was sent when, what came back, and how; each
    message's row goes to ``cell.sink`` as soon as it is final.

    A row is *final* — and written at once — when the message was received and its ack is in
    (acked, ack failed, or ``expects_ack=False``), when it failed (:meth:`on_send_error`, or a
    failed ack), and for every duplicate receipt. A message not yet received is held: it may
    still arrive late. :meth:`finish` writes everything still held (``lost``, or received
    without an ack) and makes later events no-ops; it is idempotent.

    Memory is bounded by the messages in flight: a written row is dropped, only its seq and
    send time are kept (to recognise duplicates). :meth:`samples` returns every row written
    when the sink is a :class:`~kafkalab.samples.ListSink` (tests). Every method is
    thread-safe; rows are written under the tracker's lock, so the sink sees one writer at a
    time.
    """

    def __init__(self, cell: Cell, *, expects_ack: bool = True,
                 loop_mode: str | None = None) -> None:
        """``expects_ack=False``: there is no broker ack (``rest``): a receipt is final.
        ``loop_mode`` is written on every message row. Registers itself in
        ``cell.trackers``."""
        self._lock = threading.Lock()
        self.cell = cell
        self.sink = cell.sink
        self.expects_ack = expects_ack
        self.loop_mode = loop_mode
        self.timeout_ns = int(cell.workload.message_timeout_s * 1e9)
        """A message not received within this long after its send is ``lost``."""
        self.warmup_messages = cell.workload.warmup_messages
        self.foreign_records = 0
        """Records received that are not this cell's (another nonce, or not stamped)."""
        self.received_after_error = 0
        """Receipts of messages whose row was already written as ``error``."""
        self.status_counts: Counter[str] = Counter()
        """Rows written so far, by status."""
        self._open: dict[int, Sample] = {}
        self._acked: set[int] = set()
        self._done: dict[int, tuple[int | None, bool]] = {}  # seq -> (send_ts_ns, received)
        self._early_acks: dict[int, tuple[int, str | None]] = {}
        self._kept: list[Sample] | None = [] if isinstance(cell.sink, ListSink) else None
        self._finished = False
        cell.trackers.append(self)

    # -- events ------------------------------------------------------------------------

    def on_send(self, seq: int, send_ts_ns: int, wall_ts_ns: int | None = None) -> None:
        """Message ``seq`` was sent at ``send_ts_ns`` (``lost`` until received).

        Call it right after the send call returns (the send time was read before it); an
        ack that arrived in between is applied here.

        Raises:
            ValueError: ``seq`` was already sent.
        """
        with self._lock:
            if self._finished:
                return
            if seq in self._open or seq in self._done:
                raise ValueError(f"message {seq} was already sent")
            self._open[seq] = Sample(
                sample_kind="message", seq=seq, is_warmup=seq < self.warmup_messages,
                status="lost", send_ts_ns=send_ts_ns, wall_ts_ns=wall_ts_ns,
                loop_mode=self.loop_mode,
            )
            early = self._early_acks.pop(seq, None)
            if early is not None:
                self._ack(seq, *early)

    def on_send_error(self, seq: int, error: str) -> None:
        """The client refused to send ``seq`` (after :meth:`on_send`): an ``error`` row."""
        with self._lock:
            row = self._open.get(seq)
            if row is None:
                return
            row.status, row.error = "error", error
            self._write_final(seq)

    def on_ack(self, seq: int, ack_ts_ns: int, error: str | None = None) -> None:
        """The broker acknowledged ``seq`` at ``ack_ts_ns`` (or the delivery failed with
        ``error``: an ``error`` row, written at once)."""
        with self._lock:
            if self._finished:
                return
            if seq not in self._open:
                if seq not in self._done:  # the ack overtook on_send
                    self._early_acks[seq] = (ack_ts_ns, error)
                return
            self._ack(seq, ack_ts_ns, error)

    def on_receive(self, value: bytes | None, receive_ts_ns: int, partition: int | None,
                   offset: int | None) -> int | None:
        """Record one received record; returns its seq if it is one of this cell's."""
        parsed = read_stamp(value)
        if parsed is None or parsed[2] != self.cell.nonce:
            with self._lock:
                self.foreign_records += 1
            return None
        return self.on_receipt(parsed[0], receive_ts_ns, partition, offset)

    def on_receipt(self, seq: int, receive_ts_ns: int, partition: int | None = None,
                   offset: int | None = None, round_trip_ms: float | None = None) -> int | None:
        """Message ``seq`` arrived at ``receive_ts_ns`` (the receiver's monotonic clock);
        ``round_trip_ms``: the sender's whole request, when there is one (``rest``).
        Returns ``seq``, or None when it was never sent by this tracker."""
        with self._lock:
            if self._finished:
                return None
            row = self._open.get(seq)
            if row is None:
                done = self._done.get(seq)
                if done is None:
                    self.foreign_records += 1
                    return None
                send_ts_ns, received = done
                if received:
                    self._write_duplicate(seq, send_ts_ns, receive_ts_ns, partition, offset)
                else:
                    self.received_after_error += 1
                return seq
            if row.receive_ts_ns is not None:
                self._write_duplicate(seq, row.send_ts_ns, receive_ts_ns, partition, offset)
                return seq
            row.receive_ts_ns, row.partition, row.offset = receive_ts_ns, partition, offset
            if round_trip_ms is not None:
                row.round_trip_ms = round_trip_ms
            if row.status != "error":
                on_time = row.send_ts_ns is None or receive_ts_ns - row.send_ts_ns <= self.timeout_ns
                row.status = "ok" if on_time else "late"
            if not self.expects_ack or seq in self._acked:
                self._write_final(seq)
            return seq

    # -- questions ---------------------------------------------------------------------

    def received(self, seq: int) -> bool:
        """True once ``seq`` was received."""
        with self._lock:
            row = self._open.get(seq)
            if row is not None:
                return row.receive_ts_ns is not None
            done = self._done.get(seq)
            return done is not None and done[1]

    def failed(self, seq: int) -> bool:
        """True when ``seq``'s send or delivery failed (its row is an ``error``)."""
        with self._lock:
            row = self._open.get(seq)
            if row is not None:
                return row.status == "error"
            done = self._done.get(seq)
            return done is not None and not done[1]

    def all_received(self) -> bool:
        """True when every sent message was received or failed."""
        with self._lock:
            return all(r.receive_ts_ns is not None or r.status == "error"
                       for r in self._open.values())

    # -- the end -----------------------------------------------------------------------

    def finish(self) -> None:
        """Write every row still held (in seq order): ``lost`` ones, and received ones whose
        ack never came. Later events are ignored. Idempotent."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
            for seq in sorted(self._open):
                self._write_final(seq)
            self._early_acks.clear()

    def samples(self) -> list[Sample]:
        """Every row this tracker wrote, in the order written, then those it still holds
        (seq order). Needs a :class:`~kafkalab.samples.ListSink` (for tests).

        Raises:
            RuntimeError: the sink is not a ListSink (rows are not kept in memory).
        """
        with self._lock:
            if self._kept is None:
                raise RuntimeError("Tracker.samples() needs a ListSink: rows are streamed")
            return [*self._kept, *(self._open[k] for k in sorted(self._open))]

    # -- inside the lock -----------------------------------------------------------------

    def _ack(self, seq: int, ack_ts_ns: int, error: str | None) -> None:
        row = self._open[seq]
        self._acked.add(seq)
        if error is not None:
            row.status, row.error = "error", error
            self._write_final(seq)
            return
        row.ack_ts_ns = ack_ts_ns
        if row.receive_ts_ns is not None:
            self._write_final(seq)

    def _write_final(self, seq: int) -> None:
        row = self._open.pop(seq)
        self._acked.discard(seq)
        self._done[seq] = (row.send_ts_ns, row.receive_ts_ns is not None)
        self._write(row)

    def _write_duplicate(self, seq: int, send_ts_ns: int | None, receive_ts_ns: int,
                         partition: int | None, offset: int | None) -> None:
        self._write(Sample(
            sample_kind="message", seq=seq, is_warmup=seq < self.warmup_messages,
            status="duplicate", partition=partition, offset=offset, send_ts_ns=send_ts_ns,
            receive_ts_ns=receive_ts_ns, loop_mode=self.loop_mode,
        ))

    def _write(self, row: Sample) -> None:
        self.sink.write(row)
        self.status_counts[row.status] += 1
        if self._kept is not None:
            self._kept.append(row)


def ms_between(start_ns: int, end_ns: int) -> float:
    """Milliseconds from ``start_ns`` to ``end_ns`` (both :func:`now_ns` readings)."""
    return (end_ns - start_ns) / 1e6
