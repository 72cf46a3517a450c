"""confluent-kafka (librdkafka) producer → broker → consumer, closed loop."""

from __future__ import annotations

import threading
from typing import Any

from kafkalab.cluster.descriptor import librdkafka_config
from kafkalab.config.mapping import confluent_consumer_config, confluent_producer_config
from kafkalab.errors import ClusterError
from kafkalab.progress import Progress
from kafkalab.samples import Sample
from kafkalab.scenarios.base import Cell, Tracker, now_ns
from kafkalab.scenarios.kafka_client import (
    ASSIGN_TIMEOUT_S,
    PROBE_SEQ_BASE,
    KafkaClientScenario,
)


class ConfluentKafkaScenario(KafkaClientScenario, scenario="confluent-kafka"):
    """Seed 000's scenario 3, with librdkafka."""

    def client_version(self) -> str:
        import confluent_kafka

        return f"{confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]})"

    def _base(self, cell: Cell) -> dict[str, Any]:
        assert cell.descriptor is not None
        return librdkafka_config(cell.descriptor)

    def _open_producer(self, cell: Cell, base: dict[str, Any]) -> Any:
        """A producer whose delivery reports a thread serves as soon as they arrive."""
        from confluent_kafka import Producer

        assert cell.topic is not None
        producer = Producer(confluent_producer_config(base, cell.profile))
        self._stop_pump = threading.Event()
        self._pump = threading.Thread(target=_serve_delivery_reports,
                                      args=(producer, self._stop_pump), daemon=True)
        self._pump.start()
        return producer

    def _close_producer(self, producer: Any) -> None:
        self._stop_pump.set()
        self._pump.join(timeout=5)
        producer.flush(10)

    # -- first-message delay (seed 000's ~1.4 s mystery) ---------------------------------

    def _produce_probe(self, cell: Cell, producer: Any, seq: int) -> tuple[int, int]:
        done = threading.Event()
        where: dict[str, Any] = {}

        def on_delivery(err: Any, msg: Any) -> None:
            where.update(err=err, partition=msg.partition(), offset=msg.offset())
            done.set()

        producer.produce(cell.topic, cell.message(seq, now_ns()), on_delivery=on_delivery)
        if not done.wait(cell.workload.message_timeout_s) or where.get("err") is not None:
            raise ClusterError(
                f"could not produce to {cell.topic} on {self._bootstrap(cell)}: "
                f"{where.get('err') or 'no delivery report within the timeout'}"
            )
        return int(where["partition"]), int(where["offset"])

    def _first_message(self, cell: Cell, producer: Any, base: dict[str, Any], mode: str,
                       probe: int) -> Sample:
        """Time from consumer creation to partition assignment and to the first record."""
        from confluent_kafka import Consumer, TopicPartition

        partition, offset = self._produce_probe(cell, producer, PROBE_SEQ_BASE + probe)
        group = self.probe_group_id(mode)
        cfg = confluent_consumer_config(base, cell.profile, group)
        assigned_ns: list[int] = []
        t0 = now_ns()
        consumer = Consumer(cfg)
        try:
            if mode == "subscribe":
                def on_assign(c: Any, parts: list[Any]) -> None:
                    assigned_ns.append(now_ns())
                    for p in parts:
                        p.offset = offset if p.partition == partition else -1
                    c.assign(parts)

                consumer.subscribe([str(cell.topic)], on_assign=on_assign)
            else:
                consumer.assign([TopicPartition(str(cell.topic), partition, offset)])
                assigned_ns.append(now_ns())
            deadline = t0 + int(cell.workload.message_timeout_s * 1e9)
            first_ns = None
            while now_ns() < deadline:
                msg = consumer.poll(0.5)
                if msg is None or msg.error():
                    continue
                if msg.partition() == partition and msg.offset() == offset:
                    first_ns = now_ns()
                    break
        finally:
            consumer.close()
        return self.first_message_sample(probe, mode, partition, offset, t0, assigned_ns, first_ns)

    # -- the measured loop ------------------------------------------------------------

    def _ready_consumer(self, cell: Cell, base: dict[str, Any]) -> Any:
        """A consumer assigned to every partition and positioned at the end."""
        from confluent_kafka import Consumer, TopicPartition

        mode = cell.workload.consumer_mode
        group = self.measuring_group_id(cell)
        consumer = Consumer(confluent_consumer_config(base, cell.profile, group))
        assigned = threading.Event()

        def position_at_end(c: Any, parts: list[Any]) -> None:
            for p in parts:
                _low, high = c.get_watermark_offsets(p, timeout=10)
                p.offset = high
            c.assign(parts)
            assigned.set()

        if mode == "subscribe":
            consumer.subscribe([str(cell.topic)], on_assign=position_at_end)
            deadline = now_ns() + int(ASSIGN_TIMEOUT_S * 1e9)
            while not assigned.is_set() and now_ns() < deadline:
                consumer.poll(0.1)
            if not assigned.is_set():
                consumer.close()
                raise ClusterError(f"consumer got no partitions of {cell.topic} within {ASSIGN_TIMEOUT_S:.0f} s")
        else:
            topic = str(cell.topic)
            # list all topics: asking 0.9 for one topic by name trips a librdkafka parse bug
            meta = consumer.list_topics(timeout=10)
            if topic not in meta.topics:
                consumer.close()
                raise ClusterError(f"topic {topic} does not exist on {self._bootstrap(cell)}")
            parts = [TopicPartition(topic, p) for p in meta.topics[topic].partitions]
            position_at_end(consumer, parts)
        return consumer

    def _closed_loop(self, cell: Cell, producer: Any, base: dict[str, Any],
                     progress: Progress) -> list[Sample]:
        consumer = self._ready_consumer(cell, base)
        tracker = Tracker(cell)

        def on_delivery_for(seq: int) -> Any:
            def on_delivery(err: Any, _msg: Any) -> None:
                ts = now_ns()
                tracker.on_ack(seq, ts, None if err is None else str(err))
            return on_delivery

        total = cell.total_messages
        try:
            for seq in range(total):
                send_ns = now_ns()
                tracker.on_send(seq, send_ns)
                try:
                    producer.produce(cell.topic, cell.message(seq, send_ns),
                                     on_delivery=on_delivery_for(seq))
                except Exception as exc:  # BufferError, KafkaException: recorded, not fatal
                    tracker.on_send_error(seq, f"{type(exc).__name__}: {exc}")
                    continue
                deadline = tracker.deadline_ns[seq]
                while True:
                    remaining_s = (deadline - now_ns()) / 1e9
                    if remaining_s <= 0:
                        break
                    msg = consumer.poll(min(remaining_s, 1.0))
                    if msg is None or msg.error():
                        continue
                    recv_ns = now_ns()
                    got = tracker.on_receive(msg.value(), recv_ns, msg.partition(), msg.offset())
                    if got == seq:
                        break
                if self.progress_due(seq, total):
                    progress(f"{seq + 1}/{total} messages")
            # Late arrivals and duplicates: give stragglers a short grace period.
            grace_end = self.grace_deadline_ns(cell)
            while now_ns() < grace_end and not tracker.all_received():
                msg = consumer.poll(0.2)
                if msg is not None and not msg.error():
                    tracker.on_receive(msg.value(), now_ns(), msg.partition(), msg.offset())
            producer.flush(10)
        finally:
            consumer.close()
        return tracker.samples()

    def _bootstrap(self, cell: Cell) -> str:
        return cell.descriptor.bootstrap_servers if cell.descriptor else "?"


def _serve_delivery_reports(producer: Any, stop: threading.Event) -> None:
    """Serve delivery callbacks as soon as librdkafka has them (poll blocks on its queue)."""
    while not stop.is_set():
        producer.poll(0.05)
