"""kafka-python producer → broker → consumer, closed loop (seed 000's scenario 2)."""

from __future__ import annotations

import threading
import uuid
from typing import Any

from kafkalab.cluster.descriptor import kafka_python_config
from kafkalab.config.mapping import kafka_python_consumer_config, kafka_python_producer_config
from kafkalab.errors import ClusterError
from kafkalab.progress import Progress
from kafkalab.samples import Sample
from kafkalab.scenarios.base import Cell, Tracker, ms_between, now_ns
from kafkalab.scenarios.catalog import scenario_spec

_ASSIGN_TIMEOUT_S = 60.0


class KafkaPythonScenario:
    """The pure-Python client."""

    spec = scenario_spec("kafka-python")
    name = spec.name
    client = spec.client

    def client_version(self) -> str:
        import kafka

        return str(kafka.__version__)

    def _base(self, cell: Cell) -> dict[str, Any]:
        assert cell.descriptor is not None
        return kafka_python_config(cell.descriptor)

    def run(self, cell: Cell, progress: Progress) -> list[Sample]:
        from kafka import KafkaProducer

        base = self._base(cell)
        producer = KafkaProducer(**kafka_python_producer_config(base, cell.profile))
        samples: list[Sample] = []
        try:
            for probe in range(cell.workload.first_message_probes):
                for mode in ("subscribe", "assign"):
                    samples.append(self._first_message(cell, producer, base, mode, probe))
            samples.extend(self._closed_loop(cell, producer, base, progress))
        finally:
            producer.close(timeout=10)
        return samples

    def _first_message(self, cell: Cell, producer: Any, base: dict[str, Any], mode: str,
                       probe: int) -> Sample:
        from kafka import KafkaConsumer, TopicPartition
        from kafka.consumer.subscription_state import ConsumerRebalanceListener

        try:
            meta = producer.send(cell.topic, cell.message(1_000_000 + probe, now_ns())).get(
                timeout=cell.workload.message_timeout_s)
        except Exception as exc:
            raise ClusterError(f"could not produce to {cell.topic}: {exc}") from None
        partition, offset = meta.partition, meta.offset
        tp = TopicPartition(cell.topic, partition)
        assigned_ns: list[int] = []
        t0 = now_ns()
        group = f"kafkalab-probe-{uuid.uuid4().hex[:12]}" if mode == "subscribe" else None
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
        return Sample(
            sample_kind="first_message", seq=probe, status="ok" if first_ns else "lost",
            partition=partition, offset=offset, consumer_mode=mode,
            assign_delay_ms=ms_between(t0, assigned_ns[0]) if assigned_ns else None,
            first_record_delay_ms=ms_between(t0, first_ns) if first_ns else None,
        )

    def _ready_consumer(self, cell: Cell, base: dict[str, Any]) -> Any:
        from kafka import KafkaConsumer, TopicPartition
        from kafka.consumer.subscription_state import ConsumerRebalanceListener

        mode = cell.workload.consumer_mode
        group = f"kafkalab-{cell.run_id}-{uuid.uuid4().hex[:8]}" if mode == "subscribe" else None
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
            deadline = now_ns() + int(_ASSIGN_TIMEOUT_S * 1e9)
            while not assigned.is_set() and now_ns() < deadline:
                consumer.poll(timeout_ms=100)
            if not assigned.is_set():
                consumer.close(autocommit=False)
                raise ClusterError(f"consumer got no partitions of {cell.topic} within {_ASSIGN_TIMEOUT_S:.0f} s")
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
        lock = threading.Lock()
        total = cell.total_messages

        def record_batches(batches: dict[Any, list[Any]], recv_ns: int) -> set[int]:
            seen: set[int] = set()
            with lock:
                for got_tp, records in batches.items():
                    for r in records:
                        seq = tracker.on_receive(r.value, recv_ns, got_tp.partition, r.offset)
                        if seq is not None:
                            seen.add(seq)
            return seen

        try:
            for seq in range(total):
                send_ns = now_ns()
                with lock:
                    tracker.on_send(seq, send_ns)
                try:
                    future = producer.send(cell.topic, cell.message(seq, send_ns))
                except Exception as exc:
                    with lock:
                        tracker.on_send_error(seq, f"{type(exc).__name__}: {exc}")
                    continue

                def on_ok(_meta: Any, seq: int = seq) -> None:
                    ts = now_ns()
                    with lock:
                        tracker.on_ack(seq, ts)

                def on_err(exc: Any, seq: int = seq) -> None:
                    ts = now_ns()
                    with lock:
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
                if (seq + 1) % max(1, total // 4) == 0 or seq + 1 == total:
                    progress(f"{seq + 1}/{total} messages")
            grace_end = now_ns() + int(min(2.0, cell.workload.message_timeout_s) * 1e9)
            while now_ns() < grace_end and not tracker.all_received():
                batches = consumer.poll(timeout_ms=200)
                if batches:
                    record_batches(batches, now_ns())
            producer.flush(timeout=10)
        finally:
            consumer.close(autocommit=False)
        with lock:
            return tracker.samples()
