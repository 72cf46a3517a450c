"""The canary process: a fixed-schedule producer, a consumer thread, the book and the figures.

**Schedule.** Tick ``k`` is intended at ``t0 + k × interval_ms``; at each tick every
partition gets one record. A late tick (the process stalled, the queue was full) is sent as
soon as possible, never skipped, and every latency is measured from the intended time, so a
stall shows (as in the load engine). Records carry ``(nonce, intended_ns, partition, seq)``
(:data:`VALUE`, then padding to ``record_bytes``); the key is ``(partition, seq)``.

**Threads.** The main thread produces, serves the producer's callbacks (delivery reports and
the statistics that give each partition's leader), feeds the book and writes the figures.
The consumer thread only reads (``assign``, no group: a canary must not measure its own
rebalances) and hands ``(partition, seq, receive_ns)`` over a queue. A third thread re-checks
the topic (a slow or dead cluster never stalls the schedule).

**Stop.** ``duration_s``, SIGTERM or Ctrl-C: no new tick; the producer is flushed (up to
``produce_timeout_ms``) and the consumer given ``consume_deadline_ms`` to read what was
acked; then the book's final verdicts, ``summary.json`` (status ``stopped``) and the last
interval histogram are written. A second signal is ignored while that runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import signal
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafkalab.canary.book import Book
from kafkalab.canary.metrics import Figures, hdr_log_header, open_hdr_log
from kafkalab.canary.spec import CanarySpec
from kafkalab.canary.topic import TopicView, check_topic
from kafkalab.cluster.descriptor import ClusterDescriptor, librdkafka_config
from kafkalab.errors import ClusterError, ConfigError
from kafkalab.progress import Progress, noop
from kafkalab.scenarios.base import now_ns
from kafkalab.store import atomic_write_json

__all__ = ["SUMMARY_SCHEMA", "VALUE", "run_canary"]

VALUE = struct.Struct(">8sqiq")
"""The head of a record's value: run nonce, intended send time (CLOCK_MONOTONIC ns of the
canary's host), partition, seq."""
KEY = struct.Struct(">iq")
"""The record key: ``(partition, seq)``."""

SUMMARY_SCHEMA = "kafkalab.canary.summary/1"
"""``summary.json``'s ``schema`` (docs/canary.md)."""

_MS = 1_000_000


def _iso(ts: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if ts is None else ts, UTC).isoformat()


@dataclass
class _Shared:
    """State shared between the main thread and the helpers."""

    receipts: queue.SimpleQueue[tuple[int, int, int]] = field(default_factory=queue.SimpleQueue)
    assign: queue.SimpleQueue[list[int]] = field(default_factory=queue.SimpleQueue)
    stop: threading.Event = field(default_factory=threading.Event)
    foreign_records: int = 0
    consumer_error: str | None = None
    view: TopicView | None = None
    check_error: str | None = None


class _Writer:
    """The canary's files, written off the sending thread: an fsync (``atomic_write_json``)
    can take tens of milliseconds, and a tick it delayed would be measured as the cluster's
    latency. Jobs run in order; the first write error is kept (``error``)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], Any] | None] = queue.SimpleQueue()
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name="canary-writer", daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], Any]) -> None:
        self._jobs.put(job)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job()
            except OSError as exc:
                self.error = self.error or str(exc)

    def close(self) -> None:
        """Run what was submitted, then stop."""
        self._jobs.put(None)
        self._thread.join(timeout=60)


def _consume(consumer: Any, topic: str, nonce: bytes, shared: _Shared) -> None:
    """The consumer thread: read, stamp the receive time, hand over."""
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    while not shared.stop.is_set():
        with contextlib.suppress(queue.Empty):
            while True:
                new = shared.assign.get_nowait()
                consumer.incremental_assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                                             for p in new])
        msg = consumer.poll(0.1)
        if msg is None:
            continue
        ts = now_ns()
        if msg.error():
            shared.consumer_error = str(msg.error())
            continue
        value = msg.value() or b""
        if len(value) < VALUE.size:
            shared.foreign_records += 1
            continue
        got_nonce, _intended, partition, seq = VALUE.unpack_from(value)
        if got_nonce != nonce:
            shared.foreign_records += 1
            continue
        shared.receipts.put((partition, seq, ts))


def _checker(admin: Any, producer: Any, spec: CanarySpec, shared: _Shared) -> None:
    """The topic-check thread: every ``topic_check_s``, give new brokers a partition."""
    while not shared.stop.wait(spec.topic_check_s):
        try:
            view = check_topic(admin, spec.topic, spec.replication_factor)
            if view.added:
                producer.list_topics(spec.topic, timeout=10)  # the producer learns them
            shared.view, shared.check_error = view, None
        except Exception as exc:  # a check that fails is retried, and said
            shared.check_error = str(exc)


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[list[str]]:
    """SIGTERM and SIGINT set ``stop`` (the main thread only); yields the signals seen."""
    seen: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def handler(signum: int, _frame: object) -> None:
        seen.append(signal.Signals(signum).name)
        stop.set()

    before = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield seen
    finally:
        for s, h in before.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)


class _Leaders:
    """The producer's statistics callback: each partition's leader into the book."""

    def __init__(self, topic: str, book: Book, figures: Figures) -> None:
        self.topic, self.book, self.figures = topic, book, figures

    def __call__(self, raw: str) -> None:
        ts = now_ns()
        try:
            doc = json.loads(raw)
            parts = doc["topics"][self.topic]["partitions"]
        except (ValueError, KeyError, TypeError):
            return
        for key, part in parts.items():
            p = int(key)
            if p < 0:
                continue
            before = self.book.leader_changes.get(p, 0)
            self.book.leader_seen(p, int(part.get("leader", -1)), ts)
            if self.book.leader_changes.get(p, 0) != before:
                self.figures.leader_changed(p)


def _clients(d: ClusterDescriptor, spec: CanarySpec, nonce: bytes,
             stats_cb: Callable[[str], None],
             on_delivery: Callable[[Any, Any], None]) -> tuple[Any, Any]:
    from confluent_kafka import Consumer, Producer

    base = dict(librdkafka_config(d))
    base.setdefault("log_level", "3")
    producer = Producer({**base, "acks": spec.acks, "enable.idempotence": spec.acks == "all",
                         "linger.ms": 0, "message.timeout.ms": spec.produce_timeout_ms,
                         "statistics.interval.ms": spec.stats_interval_ms,
                         "stats_cb": stats_cb, "on_delivery": on_delivery})
    consumer = Consumer({**base, "group.id": f"kafkalab-canary-{nonce.hex()}",
                         "enable.auto.commit": False, "enable.partition.eof": False,
                         "fetch.wait.max.ms": 100})
    return producer, consumer


def _start_positions(consumer: Any, topic: str, partitions: int) -> None:
    """Assign every partition at its current end (records sent after this are all read)."""
    from confluent_kafka import KafkaException, TopicPartition

    tps = []
    for p in range(partitions):
        try:
            _low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)
        except KafkaException as exc:
            raise ClusterError(f"the canary could not read partition {p}'s end offset: "
                               f"{exc}") from exc
        tps.append(TopicPartition(topic, p, high))
    consumer.assign(tps)


def run_canary(spec: CanarySpec, d: ClusterDescriptor, progress: Progress = noop,
               registry: Any | None = None) -> dict[str, Any]:
    """Run the canary until ``spec.duration_s`` or a signal; returns the final summary
    (also in ``<out_dir>/summary.json``).

    Raises:
        ConfigError: a broker without the Admin API (before Kafka 0.10.1), a metrics port in
            use.
        ClusterError: the cluster cannot be reached or refuses the topic.
    """
    from kafkalab.cluster.admin import admin_client, check_reachable

    if d.protocol != "modern":
        raise ConfigError(f"the canary needs the Admin API and record headers (Kafka 0.11 or "
                          f"later); {d.name} speaks {d.protocol}")
    check_reachable(d)
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    admin = admin_client(d)
    view = check_topic(admin, spec.topic, spec.replication_factor)
    progress(f"canary topic {spec.topic}: {view.partitions} partitions, brokers "
             f"{list(view.brokers)}" + (" (created)" if view.created else "") + (
                 f" (a partition added for brokers {list(view.added)})"
                 if view.added and not view.created else ""))
    server = _serve_metrics(spec, registry)
    try:
        return _Run(spec, d, admin, view, registry, progress).run()
    finally:
        if server is not None:
            server.shutdown()


def _serve_metrics(spec: CanarySpec, registry: Any | None) -> Any:
    if registry is None or spec.metrics_port == 0:
        return None
    from prometheus_client import start_http_server

    try:
        server, _thread = start_http_server(spec.metrics_port, spec.metrics_address,
                                            registry=registry)
    except OSError as exc:
        raise ConfigError(f"--metrics-port {spec.metrics_port} on {spec.metrics_address}: "
                          f"{exc.strerror or exc}") from exc
    return server


class _Run:
    """One canary run (see the module docstring)."""

    def __init__(self, spec: CanarySpec, d: ClusterDescriptor, admin: Any, view: TopicView,
                 registry: Any | None, progress: Progress) -> None:
        self.spec, self.d, self.admin, self.progress = spec, d, admin, progress
        self.nonce = os.urandom(8)
        self.figures = Figures(registry)
        self.book = Book(self.figures, spec.produce_timeout_ms, spec.consume_deadline_ms,
                         int(spec.lost_after_s * 1000), spec.settle_ms, spec.stats_interval_ms)
        self.leaders = _Leaders(spec.topic, self.book, self.figures)
        self.shared = _Shared(view=view)
        self.partitions = view.partitions
        self.seqs: dict[int, int] = {}
        self.sent = 0
        self.started_at = _iso()
        self.hdr = open_hdr_log(spec.out_dir / "latency.hlog") if spec.hdr_log else None
        self.padding = b"\0" * max(0, spec.record_bytes - VALUE.size)
        self.hdr_mark = time.time()
        self.writer = _Writer()

    def _on_delivery(self, err: Any, msg: Any) -> None:
        partition, seq = KEY.unpack(msg.key())
        if err is None:
            self.book.acked(partition, seq, now_ns())
        else:
            self.book.failed(partition, seq)

    def run(self) -> dict[str, Any]:
        spec = self.spec
        producer, consumer = _clients(self.d, spec, self.nonce, self.leaders, self._on_delivery)
        producer.list_topics(spec.topic, timeout=15)  # metadata before the first tick
        _start_positions(consumer, spec.topic, self.partitions)
        threads = [threading.Thread(target=_consume, name="canary-consumer", daemon=True,
                                    args=(consumer, spec.topic, self.nonce, self.shared)),
                   threading.Thread(target=_checker, name="canary-topic-check", daemon=True,
                                    args=(self.admin, producer, spec, self.shared))]
        for t in threads:
            t.start()
        stop_reason = "duration"
        with _stop_on_signals(self.shared.stop) as seen:  # a second signal changes nothing
            try:
                if self.hdr is not None:
                    hdr_log_header(self.hdr, time.time(), f"kafkalab canary {spec.topic} on "
                                   f"{self.d.flavor} {self.d.version}; e2e latency in microseconds")
                self._loop(producer)
                if seen:
                    stop_reason = "signal " + seen[0]
                self.progress("canary stopping: flushing what was sent")
                producer.flush(spec.produce_timeout_ms / 1000)
                self._drain(spec.consume_deadline_ms * _MS)
            finally:
                self.shared.stop.set()
                for t in threads:
                    t.join(timeout=5)
                with contextlib.suppress(Exception):
                    consumer.close()
            unresolved = self.book.close(now_ns())
            self.writer.close()  # the running summaries and intervals first, in order
            summary = self._write_summary("stopped", unresolved, stop_reason, now=True)
            if self.hdr is not None:
                self.hdr.write(self._interval_text(self.hdr_mark, time.time()))
                self.hdr.close()
        return summary

    def _loop(self, producer: Any) -> None:
        spec = self.spec
        interval_ns = spec.interval_ms * _MS
        t0 = now_ns() + interval_ns
        self.book.warmup_until_ns = t0 + int(spec.warmup_s * 1e9)
        end = t0 + int(spec.duration_s * 1e9) if spec.duration_s else None
        tick, next_report = 0, t0 + int(spec.report_interval_s * 1e9)
        report_start = self.hdr_mark = time.time()
        while not self.shared.stop.is_set():
            intended = t0 + tick * interval_ns
            if end is not None and intended >= end:
                break
            now = now_ns()
            if now < intended:
                producer.poll(min(0.05, (intended - now) / 1e9))
                self._absorb(now_ns())
                continue
            self._send_tick(producer, intended)
            tick += 1
            self._absorb(now_ns())
            if now >= next_report:
                report_end = time.time()
                self._report(report_start, report_end)
                report_start, next_report = report_end, now + int(spec.report_interval_s * 1e9)

    def _send_tick(self, producer: Any, intended: int) -> None:
        from confluent_kafka import KafkaException

        view = self.shared.view
        if view is not None and view.partitions > self.partitions:
            new = list(range(self.partitions, view.partitions))
            self.shared.assign.put(new)
            self.partitions = view.partitions
            self.progress(f"canary: partitions {new} added for brokers {list(view.added)}")
        for p in range(self.partitions):
            seq = self.seqs.get(p, 0)
            self.seqs[p] = seq + 1
            self.book.sent(p, seq, intended)
            self.sent += 1
            value = VALUE.pack(self.nonce, intended, p, seq) + self.padding
            try:
                producer.produce(self.spec.topic, value=value, key=KEY.pack(p, seq), partition=p)
            except (BufferError, KafkaException):  # the queue full, a partition unknown yet:
                self.book.failed(p, seq)  # a refused send is a failed one, never a gap

    def _absorb(self, now: int) -> None:
        with contextlib.suppress(queue.Empty):
            while True:
                self.book.received(*self.shared.receipts.get_nowait())
        self.book.tick(now)

    def _drain(self, budget_ns: int) -> None:
        end = now_ns() + budget_ns
        while now_ns() < end:
            time.sleep(0.05)
            self._absorb(now_ns())
            if self.book.close_ready():
                return

    def _report(self, start_s: float, end_s: float) -> None:
        view = self.shared.view
        brokers = list(view.brokers) if view else []
        leading = {self.book.leader(p) for p in range(self.partitions)}
        self.figures.set_gauges(partitions=self.partitions, brokers=len(brokers),
                                brokers_leading_none=sum(b not in leading for b in brokers),
                                held_records=self.book.held)
        if self.hdr is not None:
            text, hdr = self._interval_text(start_s, end_s), self.hdr
            self.writer.submit(lambda: (hdr.write(text), hdr.flush()))
            self.hdr_mark = end_s
        self._write_summary("running", {}, None)

    def _interval_text(self, start_s: float, end_s: float) -> str:
        """The interval's histogram lines (and new histograms for the next one)."""
        buf = io.StringIO()
        self.figures.write_interval(buf, start_s, end_s)
        return buf.getvalue()

    def _write_summary(self, status: str, unresolved: dict[int, int],
                       stop_reason: str | None, *, now: bool = False) -> dict[str, Any]:
        """Build ``summary.json`` here and write it: by the writer thread, or at once
        (``now``: the final one, whose error must not pass unseen)."""
        spec, d = self.spec, self.d
        doc = {
            "schema": SUMMARY_SCHEMA, "status": status, "started_at": self.started_at,
            "updated_at": _iso(), "stop_reason": stop_reason,
            "cluster": {"name": d.name, "flavor": d.flavor, "version": d.version,
                        "is_emulator": d.is_emulator},
            "settings": json.loads(spec.model_dump_json()),
            "topic": {"name": spec.topic, "partitions": self.partitions,
                      "brokers": list(self.shared.view.brokers) if self.shared.view else []},
            "records_sent": self.sent, "warmup_records": self.book.warmup_records,
            "held_records": self.book.held,
            "foreign_records": self.shared.foreign_records,
            "topic_check_error": self.shared.check_error,
            "consumer_error": self.shared.consumer_error,
            "write_error": self.writer.error,
            "leader_changes": {str(p): n for p, n in sorted(self.book.leader_changes.items())},
            "brokers": self.figures.broker_summary(unresolved),
            "partitions": self.figures.partition_summary(),
        }
        path = Path(spec.out_dir) / "summary.json"
        if now:
            atomic_write_json(path, doc)
        else:
            self.writer.submit(lambda: atomic_write_json(path, doc))
        return doc
