"""The scenario interface: one cell (scenario × payload × profile) in, samples out.

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
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.config.models import Profile, Workload
from kafkalab.payloads import read_stamp, stamp
from kafkalab.progress import Progress
from kafkalab.samples import Sample
from kafkalab.scenarios.catalog import ScenarioSpec, scenario_spec


@dataclass
class Cell:
    """Everything one scenario needs to measure one payload under one profile."""

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

    @property
    def base64_body(self) -> bool:
        return self.workload.encoding == "base64"

    @property
    def total_messages(self) -> int:
        return self.workload.warmup_messages + self.workload.messages

    def message(self, seq: int, send_ts_ns: int) -> bytes:
        return stamp(self.body, seq, send_ts_ns, self.nonce, self.base64_body)


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

    def client_version(self) -> str:
        """The client library's or tool's version."""
        ...

    def run(self, cell: Cell, progress: Progress) -> list[Sample]:
        """Measure the cell. Raise Skipped when it cannot run here."""
        ...


class CatalogScenario:
    """Base of the implementations: ``class X(CatalogScenario, scenario="rest")`` takes its
    ``name`` and ``client`` from the scenario's :class:`~kafkalab.scenarios.catalog.ScenarioSpec`."""

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


class Tracker:
    """Book-keeping of a closed loop: which seq was sent when, what came back, and how.

    The consumer side calls :meth:`on_receive` for every record, the producer side
    :meth:`on_ack` (often from a client library's thread); :meth:`samples` turns it into
    rows, losing nothing. Every method is thread-safe.
    """

    def __init__(self, cell: Cell) -> None:
        self._lock = threading.Lock()
        self.cell = cell
        self.sent: dict[int, Sample] = {}
        self.extra: list[Sample] = []
        self.deadline_ns: dict[int, int] = {}
        self.foreign_records = 0

    def on_send(self, seq: int, send_ts_ns: int) -> None:
        """Message ``seq`` is being sent at ``send_ts_ns`` (``lost`` until received)."""
        with self._lock:
            self.sent[seq] = Sample(
                sample_kind="message", seq=seq,
                is_warmup=seq < self.cell.workload.warmup_messages,
                status="lost", send_ts_ns=send_ts_ns,
            )
            self.deadline_ns[seq] = send_ts_ns + int(self.cell.workload.message_timeout_s * 1e9)

    def on_send_error(self, seq: int, error: str) -> None:
        """The client refused to send ``seq``."""
        with self._lock:
            s = self.sent[seq]
            s.status, s.error = "error", error

    def on_ack(self, seq: int, ack_ts_ns: int, error: str | None = None) -> None:
        """The broker acknowledged ``seq`` (or the delivery failed with ``error``)."""
        with self._lock:
            s = self.sent.get(seq)
            if s is None:
                return
            if error is not None:
                s.status, s.error = "error", error
            else:
                s.ack_ts_ns = ack_ts_ns

    def on_receive(self, value: bytes | None, receive_ts_ns: int, partition: int | None,
                   offset: int | None) -> int | None:
        """Record one received record; returns its seq if it is one of this cell's."""
        with self._lock:
            return self._receive(value, receive_ts_ns, partition, offset)

    def _receive(self, value: bytes | None, receive_ts_ns: int, partition: int | None,
                 offset: int | None) -> int | None:
        parsed = read_stamp(value)
        if parsed is None or parsed[2] != self.cell.nonce:
            self.foreign_records += 1
            return None
        seq = parsed[0]
        s = self.sent.get(seq)
        if s is None:
            self.foreign_records += 1
            return None
        if s.receive_ts_ns is None:
            s.receive_ts_ns, s.partition, s.offset = receive_ts_ns, partition, offset
            if s.status != "error":
                s.status = "ok" if receive_ts_ns <= self.deadline_ns[seq] else "late"
        else:
            self.extra.append(
                Sample(sample_kind="message", seq=seq, is_warmup=s.is_warmup, status="duplicate",
                       partition=partition, offset=offset, send_ts_ns=s.send_ts_ns,
                       receive_ts_ns=receive_ts_ns)
            )
        return seq

    def received(self, seq: int) -> bool:
        """True once ``seq`` was received."""
        with self._lock:
            return self.sent[seq].receive_ts_ns is not None

    def all_received(self) -> bool:
        """True when every sent message was received or failed."""
        with self._lock:
            return all(s.receive_ts_ns is not None or s.status == "error"
                       for s in self.sent.values())

    def samples(self) -> list[Sample]:
        """Every row: one per sent message in seq order, then the duplicates."""
        with self._lock:
            return [self.sent[k] for k in sorted(self.sent)] + self.extra


def now_ns() -> int:
    """The lab's one clock: CLOCK_REALTIME in integer ns (see docs/metrics-schema.md)."""
    return time.time_ns()


def ms_between(start_ns: int, end_ns: int) -> float:
    return (end_ns - start_ns) / 1e6
