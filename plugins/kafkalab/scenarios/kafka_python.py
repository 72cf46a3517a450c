"""kafka-python producer → broker → consumer, closed loop (seed 000's scenario 2)."""

from __future__ import annotations

import threading
from typing import Any

from kafkalab.cluster.descriptor import kafka_python_config
from kafkalab.config.mapping import kafka_python_consumer_config, kafka_python_producer_config
from kafkalab.errors import ClusterError
from kafkalab.progress import Progress
from kafkalab.samples import Sample
from kafkalab.scenarios.base import Cell, Tracker, now_ns
from kafkalab.scenarios.kafka_client import (
    ASSIGN_TIMEOUT_S,
    PROBE_SEQ_BASE,
    KafkaClientScenario,
)


class KafkaPythonScenario(KafkaClientScenario, scenario="kafka-python"):
    """The pure-Python client."""

    def client_version(self) -> str:
        import kafka

        return str(kafka.__version__)

    def _base(self, cell: Cell) -> dict[str, Any]:
        assert cell.descriptor is not None
        return kafka_python_config(cell.descriptor)

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
            meta = producer.send(cell.topic, cell.message(PROBE_SEQ_BASE + probe, now_ns())).get(
                timeout=cell.workload.message_timeout_s)
        except Exception as exc:
            raise ClusterError(f"could not produce to {cell.topic}: {exc}") from None
        partition, offset = meta.partition, meta.offset
        tp = TopicPartition(cell.topic, partition)
        assigned_ns: list[int] = []
        t0 = now_ns()
        group = self.probe_group_id(mode)
        consumer = KafkaConsumer(**kafka_python_consumer_config(base, cell.profile, group))
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
                for got_tp, records in batches.items():
                    if got_tp == tp and any(r.offset == offset for r in records):
                        first_ns = now_ns()
        finally:
            consumer.close(autocommit=False)
        return self.first_message_sample(probe, mode, partition, offset, t0, assigned_ns, first_ns)

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
                     progress: Progress) -> list[Sample]:
        consumer = self._ready_consumer(cell, base)
        tracker = Tracker(cell)
        total = cell.total_messages

        def record_batches(batches: dict[Any, list[Any]], recv_ns: int) -> set[int]:
            seen: set[int] = set()
            for got_tp, records in batches.items():
                for r in records:
                    seq = tracker.on_receive(r.value, recv_ns, got_tp.partition, r.offset)
                    if seq is not None:
                        seen.add(seq)
            return seen

        try:
            for seq in range(total):
                send_ns = now_ns()
                tracker.on_send(seq, send_ns)
                try:
                    future = producer.send(cell.topic, cell.message(seq, send_ns))
                except Exception as exc:
                    tracker.on_send_error(seq, f"{type(exc).__name__}: {exc}")
                    continue

                def on_ok(_meta: Any, seq: int = seq) -> None:
                    ts = now_ns()
                    tracker.on_ack(seq, ts)

                def on_err(exc: Any, seq: int = seq) -> None:
                    ts = now_ns()
                    tracker.on_ack(seq, ts, f"{type(exc).__name__}: {exc}")

                future.add_callback(on_ok)
                future.add_errback(on_err)
                deadline = tracker.deadline_ns[seq]
                while True:
                    remaining_ms = (deadline - now_ns()) / 1e6
                    if remaining_ms <= 0:
                        break
                    batches = consumer.poll(timeout_ms=int(min(remaining_ms, 1000)) or 1)
                    if batches and seq in record_batches(batches, now_ns()):
                        break
                if self.progress_due(seq, total):
                    progress(f"{seq + 1}/{total} messages")
            grace_end = self.grace_deadline_ns(cell)
            while now_ns() < grace_end and not tracker.all_received():
                batches = consumer.poll(timeout_ms=200)
                if batches:
                    record_batches(batches, now_ns())
            producer.flush(timeout=10)
        finally:
            consumer.close(autocommit=False)
        return tracker.samples()
