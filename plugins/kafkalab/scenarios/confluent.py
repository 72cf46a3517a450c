"""confluent-kafka (librdkafka) producer → broker → consumer, closed loop, in two orders.

* ``confluent-kafka`` (``loop_mode = overlapped``): send, then poll the consumer at once; the
  broker's ack arrives meanwhile and a helper thread stamps it the moment librdkafka has it
  (``publish_latency_ms``).
* ``confluent-kafka-serial`` (``loop_mode = serial``): send, wait for the ack (the loop's own
  thread serves the delivery report), *then* poll — the order of Kafka's EndToEndLatency
  tool (``send().get()``, then ``poll()``), so the two can be compared like for like. One
  difference remains: librdkafka fetches in its own threads, so the consumer's fetch may
  overlap the ack wait, where the Java consumer of 0.9 only fetches inside ``poll()``.

Both are one loop (:meth:`ConfluentKafkaScenario._closed_loop`); the serial scenario is the
same class with the other catalog entry. What is timed: the message and its delivery
callback are built first, ``send_ts_ns`` is read immediately before ``produce()`` and
``receive_ts_ns`` immediately after ``poll()`` returns the record; the delivery callback
only appends ``(seq, ack time, error)`` to a queue that the loop hands to the tracker after
the receipt, outside the interval.
"""

from __future__ import annotations

import threading
from collections import deque
from functools import partial
from typing import Any

from kafkalab.cluster.descriptor import librdkafka_config
from kafkalab.config.mapping import confluent_consumer_config, confluent_producer_config
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


class ConfluentKafkaScenario(KafkaClientScenario, scenario="confluent-kafka"):
    """Seed 000's scenario 3, with librdkafka (overlapped loop)."""

    def client_version(self) -> str:
        import confluent_kafka

        return f"{confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]})"

    def _base(self, cell: Cell, secrets: bool = True) -> dict[str, Any]:
        return librdkafka_config(self.descriptor(cell, secrets))

    def _configs(self, cell: Cell, base: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {"producer": confluent_producer_config(base, cell.profile),
                "consumer": confluent_consumer_config(base, cell.profile,
                                                      self.settings_group_id(cell))}

    def _open_producer(self, cell: Cell, base: dict[str, Any]) -> Any:
        """The producer; in the overlapped loop a thread serves its delivery reports as soon
        as they arrive (the serial loop serves them itself)."""
        from confluent_kafka import Producer

        assert cell.topic is not None
        producer = Producer(confluent_producer_config(base, cell.profile))
        self._stop_pump = threading.Event()
        self._pump: threading.Thread | None = None
        if self.loop_mode != "serial":
            self._pump = threading.Thread(target=_serve_delivery_reports,
                                          args=(producer, self._stop_pump), daemon=True)
            self._pump.start()
        return producer

    def _close_producer(self, producer: Any) -> None:
        self._stop_pump.set()
        if self._pump is not None:
            self._pump.join(timeout=5)
        producer.flush(10)

    # -- first-message delay (seed 000's ~1.4 s mystery) ---------------------------------

    def _produce_probe(self, cell: Cell, producer: Any, seq: int) -> tuple[int, int]:
        """Produce probe record ``seq`` and wait for its ack; its (partition, offset)."""
        done = threading.Event()
        where: dict[str, Any] = {}

        def on_delivery(err: Any, msg: Any) -> None:
            where.update(err=err, partition=msg.partition(), offset=msg.offset())
            done.set()

        producer.produce(cell.topic, cell.message(seq), on_delivery=on_delivery)
        if self._pump is None:  # nobody else serves delivery reports
            producer.flush(cell.workload.message_timeout_s)
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
        wall_ns = wall_now_ns()
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
                got_ns = now_ns()
                if msg is None or msg.error():
                    continue
                if msg.partition() == partition and msg.offset() == offset:
                    first_ns = got_ns
                    break
        finally:
            consumer.close()
        return self.first_message_sample(probe, mode, partition, offset, t0, assigned_ns,
                                         first_ns, wall_ns)

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
                     progress: Progress) -> None:
        """Send every message, one at a time, and wait for it (overlapped or serial)."""
        consumer = self._ready_consumer(cell, base)
        tracker = Tracker(cell, loop_mode=self.loop_mode)
        serial = self.loop_mode == "serial"
        acks: Acks = deque()
        topic = str(cell.topic)
        total = cell.total_messages
        produce = producer.produce
        try:
            for seq in range(total):
                # Everything the send needs exists before the clock is read.
                value = cell.message(seq)
                on_delivery = partial(_record_ack, acks, seq)
                wall_ns = wall_now_ns()
                send_ns = now_ns()
                try:
                    produce(topic, value, on_delivery=on_delivery)
                except Exception as exc:  # BufferError, KafkaException: recorded, not fatal
                    tracker.on_send(seq, send_ns, wall_ns)
                    tracker.on_send_error(seq, f"{type(exc).__name__}: {exc}")
                    continue
                tracker.on_send(seq, send_ns, wall_ns)  # the message is in flight meanwhile
                deadline_ns = send_ns + tracker.timeout_ns
                if serial:
                    _await_ack(producer, acks, seq, deadline_ns)
                _await_record(consumer, tracker, acks, seq, deadline_ns)
                hand_over(acks, tracker)
                if self.progress_due(seq, total):
                    progress(f"{seq + 1}/{total} messages")
            # Late arrivals and duplicates: give stragglers a short grace period.
            grace_end = self.grace_deadline_ns(cell)
            while now_ns() < grace_end and not tracker.all_received():
                msg = consumer.poll(0.2)
                recv_ns = now_ns()
                if msg is not None and not msg.error():
                    tracker.on_receive(msg.value(), recv_ns, msg.partition(), msg.offset())
            producer.flush(10)
        finally:
            try:
                consumer.close()
            finally:
                hand_over(acks, tracker)
                tracker.finish()

    def _bootstrap(self, cell: Cell) -> str:
        return cell.descriptor.bootstrap_servers if cell.descriptor else "?"


class ConfluentKafkaSerialScenario(ConfluentKafkaScenario, scenario="confluent-kafka-serial"):
    """The same loop in EndToEndLatency's order: wait for the ack, then poll."""


def _record_ack(acks: Acks, seq: int, err: Any, _msg: Any) -> None:
    """Delivery callback of message ``seq`` (bound with :func:`functools.partial` before the
    send): the ack time first, then one append — nothing else on librdkafka's callback."""
    ack_ns = now_ns()
    acks.append((seq, ack_ns, None if err is None else str(err)))


def _await_ack(producer: Any, acks: Acks, seq: int, deadline_ns: int) -> None:
    """Serial loop: serve delivery reports on this thread until ``seq``'s is in (or the
    deadline passes)."""
    while not any(a[0] == seq for a in acks):
        remaining_s = (deadline_ns - now_ns()) / 1e9
        if remaining_s <= 0:
            return
        producer.poll(min(remaining_s, 1.0))


def _await_record(consumer: Any, tracker: Tracker, acks: Acks, seq: int,
                  deadline_ns: int) -> None:
    """Poll until message ``seq`` is received, its delivery failed, or the deadline passes;
    every record that comes meanwhile (late ones, strangers) is recorded."""
    poll = consumer.poll
    while True:
        remaining_s = (deadline_ns - now_ns()) / 1e9
        if remaining_s <= 0:
            return
        msg = poll(min(remaining_s, 1.0))
        recv_ns = now_ns()
        if msg is None:
            hand_over(acks, tracker)
            if tracker.failed(seq):  # the delivery failed: it will not come
                return
            continue
        if msg.error():
            continue
        if tracker.on_receive(msg.value(), recv_ns, msg.partition(), msg.offset()) == seq:
            return


def _serve_delivery_reports(producer: Any, stop: threading.Event) -> None:
    """Serve delivery callbacks as soon as librdkafka has them (poll blocks on its queue)."""
    while not stop.is_set():
        producer.poll(0.05)
