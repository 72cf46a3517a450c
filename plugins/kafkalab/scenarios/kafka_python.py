"""kafka-python producer → broker → consumer, closed loop (seed 000's scenario 2).

The loop is ``overlapped``: send, then poll at once; the broker's ack resolves the send's
future meanwhile, on kafka-python's I/O thread, whose callback only appends ``(seq, ack
time, error)`` to a queue the loop hands to the tracker after the receipt. The message and
the callback are built before ``send_ts_ns`` is read, immediately before ``send()``;
``receive_ts_ns`` is read immediately after ``poll()`` returns.
"""

from __future__ import annotations

import threading
from collections import deque
from functools import partial
from typing import Any

from kafkalab.cluster.descriptor import kafka_python_config
from kafkalab.config.mapping import kafka_python_consumer_config, kafka_python_producer_config
from kafkalab.errors import ClusterError
from kafkalab.progress import Progress
from kafkalab.samples import Sample
from kafkalab.scenarios.base import Cell, Tracker, now_ns, wall_now_ns
from kafkalab.scenarios.kafka_client import (
    ASSIGN_TIMEOUT_S,
    PROBE_SEQ_BASE,
    Acks,
    KafkaClientScenario,
    hand_over,
)


def crc32c_implementation() -> str:
    """What kafka-python uses for CRC-32C: ``crc32c <version> (C)`` or ``pure Python``."""
    from kafka.record import util

    if getattr(util, "crc32c_c", None) is None:
        return "pure Python (the crc32c package is missing)"
    from importlib.metadata import version

    return f"crc32c {version('crc32c')} (C)"


class KafkaPythonScenario(KafkaClientScenario, scenario="kafka-python"):
    """The pure-Python client."""

    def client_version(self) -> str:
        import kafka

        return str(kafka.__version__)

    def _base(self, cell: Cell, secrets: bool = True) -> dict[str, Any]:
        return kafka_python_config(self.descriptor(cell, secrets))

    def client_settings(self, cell: Cell) -> dict[str, str]:
        """The shared settings plus ``harness.crc32c``: how kafka-python computes the
        CRC-32C of Kafka 0.11+ record batches (in C, or its far slower pure-Python
        fallback), which shapes its large-message latencies."""
        out = super().client_settings(cell)
        out["harness.crc32c"] = crc32c_implementation()
        return out

    def _configs(self, cell: Cell, base: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {"producer": kafka_python_producer_config(base, cell.profile),
                "consumer": kafka_python_consumer_config(base, cell.profile,
                                                         self.settings_group_id(cell))}

    def _open_producer(self, cell: Cell, base: dict[str, Any]) -> Any:
        from kafka import KafkaProducer

        return KafkaProducer(**kafka_python_producer_config(base, cell.profile))

    def _close_producer(self, producer: Any) -> None:
        producer.close(timeout=10)

    def _first_message(self, cell: Cell, producer: Any, base: dict[str, Any], mode: str,
                       probe: int) -> Sample:
        from kafka import KafkaConsumer, TopicPartition
        from kafka.consumer.subscription_state import ConsumerRebalanceListener

        try:
            meta = producer.send(cell.topic, cell.message(PROBE_SEQ_BASE + probe)).get(
                timeout=cell.workload.message_timeout_s)
        except Exception as exc:
            raise ClusterError(f"could not produce to {cell.topic}: {exc}") from None
        partition, offset = meta.partition, meta.offset
        tp = TopicPartition(cell.topic, partition)
        assigned_ns: list[int] = []
        group = self.probe_group_id(mode)
        cfg = kafka_python_consumer_config(base, cell.profile, group)
        wall_ns = wall_now_ns()
        t0 = now_ns()
        consumer = KafkaConsumer(**cfg)
        try:
            if mode == "subscribe":
                class _Listener(ConsumerRebalanceListener):
                    def on_partitions_revoked(self, revoked: Any) -> None:
                        pass

                    def on_partitions_assigned(self, assigned: Any) -> None:
                        assigned_ns.append(now_ns())
                        if tp in assigned:
                            consumer.seek(tp, offset)

                consumer.subscribe([cell.topic], listener=_Listener())
            else:
                consumer.assign([tp])
                consumer.seek(tp, offset)
                assigned_ns.append(now_ns())
            deadline = t0 + int(cell.workload.message_timeout_s * 1e9)
            first_ns = None
            while first_ns is None and now_ns() < deadline:
                batches = consumer.poll(timeout_ms=500)
                got_ns = now_ns()
                for got_tp, records in batches.items():
                    if got_tp == tp and any(r.offset == offset for r in records):
                        first_ns = got_ns
        finally:
            consumer.close(autocommit=False)
        return self.first_message_sample(probe, mode, partition, offset, t0, assigned_ns,
                                         first_ns, wall_ns)

    def _ready_consumer(self, cell: Cell, base: dict[str, Any]) -> Any:
        from kafka import KafkaConsumer, TopicPartition
        from kafka.consumer.subscription_state import ConsumerRebalanceListener

        mode = cell.workload.consumer_mode
        group = self.measuring_group_id(cell)
        consumer = KafkaConsumer(**kafka_python_consumer_config(base, cell.profile, group))
        if mode == "subscribe":
            assigned = threading.Event()
            got: list[Any] = []

            class _Listener(ConsumerRebalanceListener):
                def on_partitions_revoked(self, revoked: Any) -> None:
                    pass

                def on_partitions_assigned(self, parts: Any) -> None:
                    # kafka-python 3 runs this on its IO thread: no blocking calls here.
                    if parts:
                        got.extend(parts)
                        assigned.set()

            consumer.subscribe([cell.topic], listener=_Listener())
            deadline = now_ns() + int(ASSIGN_TIMEOUT_S * 1e9)
            while not assigned.is_set() and now_ns() < deadline:
                consumer.poll(timeout_ms=100)
            if not assigned.is_set():
                consumer.close(autocommit=False)
                raise ClusterError(f"consumer got no partitions of {cell.topic} within {ASSIGN_TIMEOUT_S:.0f} s")
            consumer.seek_to_end(*got)
            for p in got:
                consumer.position(p)  # resolve the end offset now, before the first send
        else:
            parts = [TopicPartition(cell.topic, p) for p in sorted(consumer.partitions_for_topic(cell.topic) or [])]
            if not parts:
                consumer.close(autocommit=False)
                raise ClusterError(f"topic {cell.topic} has no partitions visible to the consumer")
            consumer.assign(parts)
            consumer.seek_to_end(*parts)
            for p in parts:
                consumer.position(p)
        return consumer

    def _closed_loop(self, cell: Cell, producer: Any, base: dict[str, Any],
                     progress: Progress) -> None:
        """Send every message, one at a time, and poll until it is back."""
        consumer = self._ready_consumer(cell, base)
        tracker = Tracker(cell, loop_mode=self.loop_mode)
        acks: Acks = deque()
        topic = cell.topic
        total = cell.total_messages
        send = producer.send
        try:
            for seq in range(total):
                # Everything the send needs exists before the clock is read.
                value = cell.message(seq)
                on_done = partial(_record_outcome, acks, seq)
                wall_ns = wall_now_ns()
                send_ns = now_ns()
                try:
                    future = send(topic, value)
                except Exception as exc:
                    tracker.on_send(seq, send_ns, wall_ns)
                    tracker.on_send_error(seq, f"{type(exc).__name__}: {exc}")
                    continue
                future.add_both(on_done)
                tracker.on_send(seq, send_ns, wall_ns)  # the message is in flight meanwhile
                deadline_ns = send_ns + tracker.timeout_ns
                while True:
                    remaining_ms = (deadline_ns - now_ns()) / 1e6
                    if remaining_ms <= 0:
                        break
                    batches = consumer.poll(timeout_ms=int(min(remaining_ms, 1000)) or 1)
                    recv_ns = now_ns()
                    if batches and seq in _record_batches(tracker, batches, recv_ns):
                        break
                    hand_over(acks, tracker)
                    if tracker.failed(seq):  # the delivery failed: it will not come
                        break
                hand_over(acks, tracker)
                if self.progress_due(seq, total):
                    progress(f"{seq + 1}/{total} messages")
            grace_end = self.grace_deadline_ns(cell)
            while now_ns() < grace_end and not tracker.all_received():
                batches = consumer.poll(timeout_ms=200)
                if batches:
                    _record_batches(tracker, batches, now_ns())
            producer.flush(timeout=10)
        finally:
            try:
                consumer.close(autocommit=False)
            finally:
                hand_over(acks, tracker)
                tracker.finish()


def _record_outcome(acks: Acks, seq: int, outcome: Any) -> None:
    """The send future's callback and errback for message ``seq`` (bound before the send):
    the ack time first, then one append."""
    ack_ns = now_ns()
    error = f"{type(outcome).__name__}: {outcome}" if isinstance(outcome, BaseException) else None
    acks.append((seq, ack_ns, error))


def _record_batches(tracker: Tracker, batches: dict[Any, list[Any]], recv_ns: int) -> set[int]:
    """Record every record of one ``poll()``; the seqs of this cell's records."""
    seen: set[int] = set()
    for got_tp, records in batches.items():
        for r in records:
            seq = tracker.on_receive(r.value, recv_ns, got_tp.partition, r.offset)
            if seq is not None:
                seen.add(seq)
    return seen
