"""Bench part (f) ``load``: the load engine's instrument is not the bottleneck.

Everything runs on an embedded cluster of the default flavor (Apache Kafka 4.x KRaft, one node) that this part
starts in its own lab folder (``<lab_dir>/bench-load``) on its own ports
(:data:`BENCH_ZK_PORT`, :data:`BENCH_BROKER_PORT`: no test or other bench part uses them)
and stops, data wiped, at the end. The message is the lab's 1 KB raw body plus the lab's
32-byte stamp (1,056 bytes on the wire); the producer settings are the ``throughput``
profile's batch with acks=1, linger 5 ms and no compression (:func:`bench_profile`).

(a) producer maximum rate, alternating rounds of
    * a bare confluent-kafka loop: ``produce()`` one fixed message as fast as it goes,
      ``poll(0)`` on ``BufferError``, ``flush()`` at the end, acks counted by a delivery
      callback; rate = acked / (first produce → flush returned);
    * Kafka's own ``org.apache.kafka.tools.ProducerPerformance`` (0.9.0.1, same settings
      under their Java names, ``--throughput -1``); its final line is parsed. Its window
      starts before its first send, inside a fresh JVM (no JIT warm-up);
    * the load engine's producer at its maximum rate (:func:`harness_produce`: its open
      loop with a schedule no producer can keep, so it sends back to back).
    Goal: harness ≥ :data:`HARNESS_OVER_BARE_GOAL` × the bare loop.
(b) consumer throughput on a topic pre-filled with the same messages, alternating rounds of
    * a bare confluent-kafka loop: assign every partition at offset 0, ``consume(
      num_messages=…)`` batches until every record has been read; rate = records / (assign →
      last batch);
    * ``kafka.tools.ConsumerPerformance --new-consumer`` (its window starts after
      ``subscribe``: the group join and the first fetch are inside it).
    The engine's consumer shard loop has no catch-up mode (its consumers start at the log
    end, behind the start barrier): its live throughput is the one-consumer point of (c).
(c) fan-out: one producer → N consumers in one process at the rates of
    :data:`FANOUT_POINTS`; deliveries per second per client core = records received by all
    N / CPU seconds of the consumer process (all its threads, librdkafka's included) over
    the window. Bare: one thread per consumer receiving as the engine's shard loop does
    (:data:`FANOUT_POLL_S`) but only counting, the profile's consumer settings as they are,
    a paced Python producer; harness: one engine cell (:func:`harness_fanout`, the consumers in the
    engine's shard process, Σ its ``cpu_s`` from ``cell.json``).

Every figure also carries the client's CPU seconds and the broker's (from ``/proc``), so
what ran out is visible. Two cores carry client, broker and (for the JVM tool) a JVM at
once: read the ratios from one run, not the absolute rates.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.cluster.descriptor import ClusterDescriptor, jvm_classpath, librdkafka_config
from kafkalab.cluster.flavors import DEFAULT_EMBEDDED
from kafkalab.config import load_profile
from kafkalab.config.mapping import confluent_consumer_config, confluent_producer_config
from kafkalab.config.models import Profile
from kafkalab.errors import LabError, RunError
from kafkalab.paths import images_dir, project_root
from kafkalab.payloads import load_body, stamp, wire_size_bytes

__all__ = [
    "BENCH_BROKER_PORT",
    "BENCH_ZK_PORT",
    "FANOUT_POINTS",
    "HARNESS_OVER_BARE_GOAL",
    "LoadBenchConfig",
    "bench_load",
    "bench_profile",
    "load_ratios",
    "parse_consumer_performance",
    "parse_producer_performance",
    "print_load",
]

BENCH_ZK_PORT = 25781
BENCH_BROKER_PORT = 31792
"""This part's own cluster ports (tests use 12181/19092 by default, 22181-24181 and
29092-29792, the e2e tests 32381/30392)."""
PAYLOAD, ENCODING = "1kb", "raw"
PROFILE = "throughput"
LINGER_MS = 5
ACKS = "1"
COMPRESSION = "none"
PARTITIONS = 1
FANOUT_PROFILE = "default"
"""Consumer settings of the fan-out consumers (fetch.min.bytes 1, fetch wait 500 ms)."""
FANOUT_POINTS: tuple[tuple[int, float], ...] = ((1, 2000), (5, 2000), (10, 2000), (1, 20000))
"""(consumers, msg/s) of the fan-out cells: N = 1, 5, 10 at 2,000 msg/s (20,000 deliveries/s
at N = 10: within the engine's client budget on two cores), and one consumer at 20,000 msg/s
(the consumer's live throughput; the shard loop only tails from the log end)."""
FANOUT_DURATION_S = 8.0
HARNESS_OVER_BARE_GOAL = 0.8
STALLED_E2E_P50_MS = 100.0
"""A harness fan-out cell with e2e p50 above this (at rates far below the consumer's
capacity) did not keep up live: its deliveries-per-core figure is not comparable."""
"""Goal: the harness's producer rate at least this fraction of the bare loop's."""
JVM_OPTS = ["-Xmx512m", "-Duser.language=en", "-Duser.country=US"]
"""The JVM tools print with the default locale: pin it so numbers use a decimal point."""
TOOL_TIMEOUT_S = 180.0
UNREACHABLE_RATE_MSGS_PER_S = 1e9
"""The harness producer's schedule rate in (a): far above any reachable, so it sends back to back."""
HARNESS_MESSAGE_TIMEOUT_S = 30.0
HARNESS_WARMUP_S = 2.0
"""Warm-up of each harness fan-out cell (the engine's; excluded from its summary, not from
the deliveries counted here)."""
CONSUME_BATCH = 10_000
FANOUT_BATCH = 500
FANOUT_POLL_S = 0.05
"""The bare fan-out consumers receive as the engine's shard loop does (``consume(500, 0)``,
else ``poll(0.05)``) with the profile's settings as they are, and do nothing per record but
count it."""


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class LoadBenchConfig:
    """Sizes of the load part (defaults keep it under ~3 minutes on two cores)."""

    messages: int = 300_000
    rounds: int = 3
    fanout_points: tuple[tuple[int, float], ...] = FANOUT_POINTS
    fanout_duration_s: float = FANOUT_DURATION_S


# --------------------------------------------------------------------------- settings


def bench_profile() -> Profile:
    """The ``throughput`` profile with acks=1, linger 5 ms and no compression."""
    base = load_profile(PROFILE)
    producer = base.producer.model_copy(
        update={"acks": ACKS, "linger_ms": LINGER_MS, "compression": COMPRESSION})
    return base.model_copy(update={"producer": producer})


def jvm_producer_props(bootstrap_servers: str, profile: Profile) -> list[str]:
    """The bare loop's producer settings under the Java producer's names (``k=v``)."""
    p = profile.producer
    return [f"bootstrap.servers={bootstrap_servers}", f"acks={'all' if p.acks == 'all' else p.acks}",
            f"linger.ms={p.linger_ms}", f"batch.size={p.batch_size_bytes}",
            f"compression.type={p.compression}", f"retries={p.retries}",
            f"max.in.flight.requests.per.connection={p.max_in_flight}",
            f"buffer.memory={p.buffer_memory_bytes}"]


def bench_message() -> bytes:
    """The one message every producer here sends: the 1 KB raw body with the lab's stamp."""
    body = load_body(PAYLOAD, ENCODING, images_dir())
    return stamp(body, 0, b"benchld0", False)


# --------------------------------------------------------------------------- tool output

_FLOAT = r"([0-9]+(?:\.[0-9]+)?)"
_PP_LINE = re.compile(
    r"(\d+) records sent, " + _FLOAT + r" records/sec \(" + _FLOAT + r" MB/sec\), "
    + _FLOAT + r" ms avg latency, " + _FLOAT + r" ms max latency, (\d+) ms 50th, (\d+) ms 95th, "
    r"(\d+) ms 99th, (\d+) ms 99\.9th")
_CP_HEADER = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"
_CP_KEYS = ("start_time", "end_time", "data_mb", "mb_per_s", "records", "records_per_s")
_CP_FETCH_KEYS = ("rebalance_time_ms", "fetch_time_ms", "fetch_mb_per_s", "fetch_records_per_s")
"""The columns Kafka 1.0 and later add to the result line (KAFKA-5211)."""


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[-lines:]) or "(nothing)"


def parse_producer_performance(text: str) -> dict[str, float]:
    """ProducerPerformance's final summary line (0.9.0.1) as numbers.

    Keys: records, records_per_s, mb_per_s (its MB is 2^20 bytes), avg_latency_ms,
    max_latency_ms, p50_ms, p95_ms, p99_ms, p999_ms (whole ms). Interim lines (``… records
    sent, … records/sec …, … ms avg latency, … max latency.`` every 5 s) are skipped.

    Raises:
        RunError: no summary line (quoting the end of the output).
    """
    found = _PP_LINE.findall(text)
    if not found:
        raise RunError(f"ProducerPerformance printed no summary; its output ends with: {_tail(text)}")
    keys = ("records", "records_per_s", "mb_per_s", "avg_latency_ms", "max_latency_ms",
            "p50_ms", "p95_ms", "p99_ms", "p999_ms")
    return {k: float(v) for k, v in zip(keys, found[-1], strict=True)}


def parse_consumer_performance(text: str) -> dict[str, Any]:
    """ConsumerPerformance's result line (0.9.0.1, without ``--show-detailed-stats``).

    The line after the header ``start.time, end.time, data.consumed.in.MB, MB.sec,
    data.consumed.in.nMsg, nMsg.sec``; returns start_time and end_time (text, as printed),
    data_mb (2^20 bytes), mb_per_s, records (int), records_per_s and window_s (records /
    records_per_s, None for 0).

    Raises:
        RunError: no header or no result line after it.
    """
    lines = [ln.strip() for ln in text.splitlines()]
    try:
        at = next(i for i, ln in enumerate(lines) if ln.startswith(_CP_HEADER))
        row = lines[at + 1]
    except (StopIteration, IndexError):
        raise RunError("ConsumerPerformance printed no result; its output ends with: "
                       f"{_tail(text)}") from None
    parts = [p.strip() for p in row.split(",")]
    if len(parts) == len(_CP_KEYS) + len(_CP_FETCH_KEYS):  # Kafka 1.0+: the fetch window too
        try:
            fetch = {k: float(v) for k, v in zip(_CP_FETCH_KEYS, parts[len(_CP_KEYS):],
                                                  strict=True)}
        except ValueError:
            raise RunError(f"ConsumerPerformance result line not understood: {row!r}") from None
        parts = parts[:len(_CP_KEYS)]
    else:
        fetch = {}
    if len(parts) != len(_CP_KEYS):
        raise RunError(f"ConsumerPerformance result line not understood: {row!r}")
    try:
        out: dict[str, Any] = {"start_time": parts[0], "end_time": parts[1],
                               "data_mb": float(parts[2]), "mb_per_s": float(parts[3]),
                               "records": int(parts[4]), "records_per_s": float(parts[5])}
    except ValueError:
        raise RunError(f"ConsumerPerformance result line not understood: {row!r}") from None
    out["window_s"] = out["records"] / out["records_per_s"] if out["records_per_s"] else None
    if fetch:
        # the tool's own split: its whole window holds the group's join (rebalance.time.ms,
        # with the broker's group.initial.rebalance.delay.ms), the fetch window does not
        out.update(fetch)
        out["whole_window_records_per_s"] = out["records_per_s"]
        out["records_per_s"] = fetch["fetch_records_per_s"]
        out["window_s"] = fetch["fetch_time_ms"] / 1000 if fetch["fetch_time_ms"] else None
    return out


# --------------------------------------------------------------------------- cpu


def _proc_cpu_s(pid: int | None) -> float | None:
    """CPU seconds (user + system) of ``pid`` from ``/proc``, None when unreadable."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@dataclass
class _Meter:
    """Wall, own-process CPU and broker CPU between ``start`` and ``stop``."""

    broker_pid: int | None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    broker_cpu_s: float | None = None

    @contextmanager
    def measure(self, children: bool = False) -> Iterator[_Meter]:
        read = _children_cpu_s if children else time.process_time
        b0, c0, t0 = _proc_cpu_s(self.broker_pid), read(), time.perf_counter()
        try:
            yield self
        finally:
            self.wall_s = time.perf_counter() - t0
            self.cpu_s = read() - c0
            b1 = _proc_cpu_s(self.broker_pid)
            self.broker_cpu_s = b1 - b0 if b0 is not None and b1 is not None else None

    def figures(self) -> dict[str, Any]:
        w = self.wall_s or float("nan")
        return {"wall_s": round(self.wall_s, 4), "client_cpu_s": round(self.cpu_s, 3),
                "client_cpu_frac": round(self.cpu_s / w, 3),
                "broker_cpu_s": None if self.broker_cpu_s is None else round(self.broker_cpu_s, 3),
                "broker_cpu_frac": (None if self.broker_cpu_s is None
                                    else round(self.broker_cpu_s / w, 3))}


# --------------------------------------------------------------------------- (a) producers


def bare_produce(descriptor: ClusterDescriptor, topic: str, value: bytes, messages: int,
                 broker_pid: int | None) -> dict[str, Any]:
    """The bare confluent-kafka produce loop: ``messages`` × ``value`` as fast as it goes."""
    from confluent_kafka import Producer

    acked = failed = 0

    def on_delivery(err: Any, _msg: Any) -> None:
        nonlocal acked, failed
        if err is None:
            acked += 1
        else:
            failed += 1

    cfg = confluent_producer_config(librdkafka_config(descriptor), bench_profile())
    cfg["on_delivery"] = on_delivery
    producer = Producer(cfg)
    producer.list_topics(topic=None, timeout=10)  # connected before the clock starts
    meter = _Meter(broker_pid)
    produce, poll = producer.produce, producer.poll
    with meter.measure():
        for _ in range(messages):
            while True:
                try:
                    produce(topic, value)
                    break
                except BufferError:
                    poll(0)
        left = producer.flush(120)
    rate = acked / meter.wall_s if meter.wall_s else None
    return {"side": "bare", "messages": messages, "acked": acked, "failed": failed,
            "unacked": left, "msgs_per_s": rate, **_mb(rate, len(value)), **meter.figures()}


def _mb(rate: float | None, wire_bytes: int) -> dict[str, Any]:
    return {"mb_per_s": None if rate is None else rate * wire_bytes / 1e6}


def _java(descriptor: ClusterDescriptor) -> tuple[str, str]:
    from kafkalab.cluster.java import ensure_java

    if not descriptor.kafka_home:
        raise RunError("the bench cluster's descriptor has no kafka_home")
    return ensure_java(), jvm_classpath(descriptor.kafka_home)


def _run_tool(name: str, cmd: list[str], log: Path, meter: _Meter) -> str:
    """Run a JVM tool (timed by ``meter``, its CPU as the children's), keep its output in
    ``log`` and return its stdout."""
    with meter.measure(children=True):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RunError(f"{name} did not finish within {TOOL_TIMEOUT_S:.0f} s") from None
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(" ".join(cmd) + "\n" + proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise RunError(f"{name} exited {proc.returncode}: {_tail(proc.stdout + proc.stderr)}")
    return proc.stdout


def tool_produce(descriptor: ClusterDescriptor, topic: str, wire_bytes: int, messages: int,
                 broker_pid: int | None, log: Path) -> dict[str, Any]:
    """Kafka's ProducerPerformance, unthrottled, with the bare loop's settings."""
    java, cp = _java(descriptor)
    cmd = [java, *JVM_OPTS, "-cp", cp, "org.apache.kafka.tools.ProducerPerformance",
           "--topic", topic, "--num-records", str(messages), "--record-size", str(wire_bytes),
           "--throughput", "-1", "--producer-props",
           *jvm_producer_props(descriptor.bootstrap_servers, bench_profile())]
    meter = _Meter(broker_pid)
    parsed = parse_producer_performance(_run_tool("ProducerPerformance", cmd, log, meter))
    rate = parsed["records_per_s"]
    return {"side": "tool", "messages": messages, "msgs_per_s": rate, **_mb(rate, wire_bytes),
            "tool": parsed, **meter.figures(),
            "note": "wall and client CPU include the JVM's start; the rate is the tool's own"}


def harness_produce(descriptor: ClusterDescriptor, topic: str, messages: int,
                    broker_pid: int | None) -> dict[str, Any]:
    """The load engine's producer (:func:`kafkalab.load.producer.run_open_loop` with its
    ``ConfluentClient`` and ``SendLog``) at its maximum rate.

    The schedule's rate is :data:`UNREACHABLE_RATE_MSGS_PER_S`: every message is overdue at
    once, so the loop sends back to back and does all its per-message work (stamp with seq
    and intended time, clock read, key packing, a per-message delivery callback recording
    four outcomes). Rate = acked / (first send → last ack, the engine's own timestamps).
    Settings as the engine builds them for a cell: the bench profile plus its
    ``message.timeout.ms``.
    """
    import numpy as np

    from kafkalab.load.producer import (
        ConfluentClient,
        ProducerPlan,
        SendLog,
        load_nonce,
        run_open_loop,
    )
    from kafkalab.scenarios.base import now_ns

    body = load_body(PAYLOAD, ENCODING, images_dir())
    cfg = confluent_producer_config(librdkafka_config(descriptor), bench_profile())
    cfg["message.timeout.ms"] = int(HARNESS_MESSAGE_TIMEOUT_S * 1000)
    log = SendLog(messages, np.zeros(messages, dtype=np.int64))
    client = ConfluentClient(cfg, log)
    plan = ProducerPlan(topic=topic, partitions=PARTITIONS,
                        rate_msgs_per_s=UNREACHABLE_RATE_MSGS_PER_S, n=messages,
                        warmup_messages=0, body=body, base64_body=ENCODING == "base64",
                        nonce=load_nonce(os.urandom(4), 0), send_deadline_s=120.0,
                        message_timeout_s=HARNESS_MESSAGE_TIMEOUT_S)
    meter = _Meter(broker_pid)
    with meter.measure():
        run_open_loop(plan, client, log, now_ns())
    counts = log.counts()
    sent = log.send_ts_ns[log.send_ts_ns >= 0]
    acked_ts = log.ack_ts_ns[log.ack_ts_ns >= 0]
    window_s = (int(acked_ts.max()) - int(sent.min())) / 1e9 if len(sent) and len(acked_ts) else 0.0
    rate = counts["acked"] / window_s if window_s > 0 else None
    return {"side": "harness", "messages": messages, **counts, "msgs_per_s": rate,
            **_mb(rate, wire_size_bytes(body)), "window_s": round(window_s, 4),
            **meter.figures(),
            "note": "kafkalab.load.producer.run_open_loop at an unreachable rate (back to "
                    "back); wall and client CPU include connecting"}


def _pending(side: str, reason: str) -> dict[str, Any]:
    return {"side": side, "status": "pending", "reason": reason, "msgs_per_s": None}


# --------------------------------------------------------------------------- (b) consumers


def _prefill(descriptor: ClusterDescriptor, topic: str, value: bytes, messages: int) -> int:
    """Write ``messages`` × ``value`` to ``topic`` (untimed); the number acked."""
    got = bare_produce(descriptor, topic, value, messages, None)
    if got["acked"] != messages:
        raise RunError(f"pre-filling {topic}: {got['acked']} of {messages} acked")
    return int(got["acked"])


def bare_consume(descriptor: ClusterDescriptor, topic: str, messages: int, wire_bytes: int,
                 broker_pid: int | None) -> dict[str, Any]:
    """The bare confluent-kafka consume loop over the pre-filled ``topic`` from offset 0."""
    from confluent_kafka import Consumer, TopicPartition

    cfg = confluent_consumer_config(librdkafka_config(descriptor), bench_profile(), None)
    consumer = Consumer(cfg)
    try:
        meta = consumer.list_topics(timeout=10)
        parts = [TopicPartition(topic, p, 0) for p in meta.topics[topic].partitions]
        meter = _Meter(broker_pid)
        received = errors = 0
        deadline = time.monotonic() + 120
        consume = consumer.consume
        with meter.measure():
            consumer.assign(parts)
            while received < messages and time.monotonic() < deadline:
                for m in consume(num_messages=CONSUME_BATCH, timeout=1.0):
                    if m.error() is None:
                        received += 1
                    else:
                        errors += 1
    finally:
        consumer.close()
    rate = received / meter.wall_s if meter.wall_s else None
    return {"side": "bare", "messages": messages, "received": received, "errors": errors,
            "msgs_per_s": rate, **_mb(rate, wire_bytes), **meter.figures()}


def tool_consume(descriptor: ClusterDescriptor, topic: str, messages: int, wire_bytes: int,
                 broker_pid: int | None, log: Path) -> dict[str, Any]:
    """Kafka's ConsumerPerformance (a fresh group) from the start: 0.9's with the new
    consumer, 4.x's with ``--bootstrap-server`` (its rate then over its fetch window, without
    the group's join)."""
    from kafkalab.cluster.flavors import flavor_of

    java, cp = _java(descriptor)
    tools = flavor_of(descriptor).features(descriptor)
    group = f"bench-load-{os.getpid()}-{time.time_ns()}"
    if tools.at_least(1):
        cmd = [java, *JVM_OPTS, "-cp", cp, str(tools.tools.consumer_performance),
               "--bootstrap-server", descriptor.bootstrap_servers, "--topic", topic,
               "--messages", str(messages), "--group", group]
    else:
        cmd = [java, *JVM_OPTS, "-cp", cp, "kafka.tools.ConsumerPerformance", "--new-consumer",
               "--broker-list", descriptor.bootstrap_servers, "--topic", topic,
               "--messages", str(messages), "--group", group]
    meter = _Meter(broker_pid)
    parsed = parse_consumer_performance(_run_tool("ConsumerPerformance", cmd, log, meter))
    rate = parsed["records_per_s"]
    return {"side": "tool", "messages": messages, "received": parsed["records"],
            "msgs_per_s": rate, **_mb(rate, wire_bytes), "tool": parsed, **meter.figures(),
            "note": ("its fetch window (Kafka 1.0+: the group's join left out, reported as "
                     "rebalance_time_ms)" if "fetch_time_ms" in parsed else
                     "its window starts after subscribe (group join and first fetch inside)")
                    + "; wall and client CPU include the JVM's start"}


# --------------------------------------------------------------------------- (c) fan-out


def fanout_consumers_main(argv: Sequence[str]) -> int:
    """Child process of the bare fan-out: N consumers, one thread each, in this process.

    ``argv``: one JSON object {config, topic, consumers, expected, deadline_s}. Prints
    ``READY`` once every consumer is assigned at the end of the log, then one JSON line:
    received (all consumers), per_consumer, cpu_s and wall_s from READY until every
    consumer has its ``expected`` records (or the deadline).
    """
    from confluent_kafka import Consumer, TopicPartition

    args = json.loads(argv[0])
    topic, n, expected = args["topic"], int(args["consumers"]), int(args["expected"])
    consumers = []
    for i in range(n):
        c = Consumer({**args["config"], "group.id": f"bench-fanout-{i}"})
        meta = c.list_topics(timeout=10)
        parts = []
        for p in meta.topics[topic].partitions:
            tp = TopicPartition(topic, p)
            _low, tp.offset = c.get_watermark_offsets(tp, timeout=10)
            parts.append(tp)
        c.assign(parts)
        consumers.append(c)
    counts = [0] * n
    print("READY", flush=True)
    c0, t0 = time.process_time(), time.perf_counter()
    deadline = time.monotonic() + float(args["deadline_s"])

    def run(i: int) -> None:
        consume, poll = consumers[i].consume, consumers[i].poll
        while counts[i] < expected and time.monotonic() < deadline:
            msgs = consume(FANOUT_BATCH, 0)  # the engine's receive pattern, nothing else:
            if not msgs:  # what is queued, else block in poll() until one record arrives
                one = poll(FANOUT_POLL_S)
                if one is not None:
                    msgs = [one, *consume(FANOUT_BATCH - 1, 0)]
            counts[i] += sum(1 for m in msgs if m.error() is None)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cpu_s, wall_s = time.process_time() - c0, time.perf_counter() - t0
    for c in consumers:
        c.close()
    print(json.dumps({"received": sum(counts), "per_consumer": counts, "cpu_s": cpu_s,
                      "wall_s": wall_s}), flush=True)
    return 0


def _paced_produce(descriptor: ClusterDescriptor, topic: str, value: bytes, rate: float,
                   messages: int) -> dict[str, Any]:
    """Produce ``messages`` at ``rate`` msg/s on a fixed schedule; achieved rate and acks."""
    from confluent_kafka import Producer

    acked = 0

    def on_delivery(err: Any, _msg: Any) -> None:
        nonlocal acked
        acked += err is None

    cfg = confluent_producer_config(librdkafka_config(descriptor), load_profile(FANOUT_PROFILE))
    cfg["on_delivery"] = on_delivery
    producer = Producer(cfg)
    producer.list_topics(timeout=10)
    t0 = time.perf_counter()
    for i in range(messages):
        delay = t0 + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        producer.produce(topic, value)
        producer.poll(0)
    sent_s = time.perf_counter() - t0
    producer.flush(30)
    return {"acked": acked, "achieved_rate_msgs_per_s": messages / sent_s if sent_s else None}


def bare_fanout(descriptor: ClusterDescriptor, topic: str, value: bytes, consumers: int,
                rate: float, duration_s: float, broker_pid: int | None) -> dict[str, Any]:
    """One producer at ``rate`` for ``duration_s`` → ``consumers`` consumers in one child
    process; deliveries per client CPU second."""
    messages = int(rate * duration_s)
    cfg = confluent_consumer_config(librdkafka_config(descriptor), load_profile(FANOUT_PROFILE), None)
    arg = json.dumps({"config": cfg, "topic": topic, "consumers": consumers,
                      "expected": messages, "deadline_s": duration_s + 30})
    child = subprocess.Popen([sys.executable, "-m", "tools.bench.load", "fanout-consumers", arg],
                             stdout=subprocess.PIPE, text=True, cwd=project_root())
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != "READY":
            raise RunError(f"fan-out consumers (N={consumers}) did not get ready")
        b0 = _proc_cpu_s(broker_pid)
        sent = _paced_produce(descriptor, topic, value, rate, messages)
        line = child.stdout.readline()
        b1 = _proc_cpu_s(broker_pid)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    if not line.strip():
        raise RunError(f"fan-out consumers (N={consumers}) printed no result")
    got = json.loads(line)
    return {"side": "bare", **fanout_figures(consumers, rate, messages, got["received"],
                                             got["cpu_s"], got["wall_s"]),
            "acked": sent["acked"], "achieved_rate_msgs_per_s": sent["achieved_rate_msgs_per_s"],
            "broker_cpu_s": None if b0 is None or b1 is None else round(b1 - b0, 3)}


def fanout_figures(consumers: int, rate: float, messages: int, received: int, cpu_s: float,
                   wall_s: float) -> dict[str, Any]:
    """Deliveries per client core second of a fan-out cell, and what it is made of."""
    return {"consumers": consumers, "rate_msgs_per_s": rate, "messages": messages,
            "expected_deliveries": messages * consumers, "received": received,
            "consumer_cpu_s": round(cpu_s, 3), "wall_s": round(wall_s, 3),
            "consumer_cpu_frac": round(cpu_s / wall_s, 3) if wall_s else None,
            "deliveries_per_s": received / wall_s if wall_s else None,
            "deliveries_per_core_s": received / cpu_s if cpu_s > 0 else None}


@dataclass
class HarnessRun:
    """The load run (kafkalab.load.run) the harness fan-out cells belong to."""

    data_dir: Path
    descriptor_path: Path
    run_id: str = ""
    run_date: str = ""


def harness_cell_spec(consumers: int, rate: float, duration_s: float) -> Any:
    """The engine's cell for one fan-out point: :data:`FANOUT_PROFILE`, 1 KB raw, one
    partition, ``duration_s`` measured after :data:`HARNESS_WARMUP_S` of warm-up."""
    from kafkalab.load.spec import LoadCellSpec

    return LoadCellSpec(client="confluent-kafka", payload=PAYLOAD, encoding=ENCODING,
                        profile=FANOUT_PROFILE, consumers=consumers, rate_msgs_per_s=rate,
                        duration_s=HARNESS_WARMUP_S + duration_s, warmup_s=HARNESS_WARMUP_S,
                        partitions=PARTITIONS)


def start_harness_run(run: HarnessRun, specs: Sequence[Any]) -> None:
    """Open the load run for ``specs`` (its manifest under ``run.data_dir``)."""
    from kafkalab.load.run import LoadRequest, start_load_run

    started = start_load_run(LoadRequest(
        cells=list(specs), data_dir=run.data_dir, descriptor_path=run.descriptor_path,
        command="make bench (load)", workload_name="bench-load", owner_kind="bench"))
    run.run_id, run.run_date = started["run_id"], started["run_date"]


def harness_fanout(run: HarnessRun, spec: Any, broker_pid: int | None) -> dict[str, Any]:
    """One engine cell (:func:`kafkalab.load.cell.run_load_cell`): deliveries per client
    core = receipts received by the producer's stop / Σ ``cpu_s`` of the consumer shards
    (their measuring span: start barrier → producer stopped, as in ``cell.json``)."""
    import pyarrow.parquet as pq

    from kafkalab.load import files
    from kafkalab.load.cell import run_load_cell
    from kafkalab.store import read_json

    b0 = _proc_cpu_s(broker_pid)
    summary = run_load_cell(run.data_dir, run.run_id, spec, run.descriptor_path,
                            progress=lambda m: None)
    b1 = _proc_cpu_s(broker_pid)
    cell = files.cell_dir(run.data_dir, run.run_date, run.run_id, str(summary["cell_id"]))
    meta = read_json(files.cell_json_path(cell))
    if not isinstance(meta, dict):
        raise RunError(f"{summary['cell_id']}: no cell.json")
    stop = int(meta["stop_ts_ns"])
    received = 0
    for f in sorted(cell.glob("receipts-*.parquet")):
        ts = pq.read_table(f, columns=["receive_ts_ns"]).column(0).to_numpy()
        received += int((ts <= stop).sum())
    shards = [p for p in meta.get("processes", []) if p.get("role") == "consumer-shard"]
    cpu_s = sum(float(p.get("cpu_s") or 0.0) for p in shards)
    wall_s = max((float(p.get("wall_s") or 0.0) for p in shards), default=0.0)
    messages = int(meta.get("spec", {}).get("rate_msgs_per_s", 0) * spec.duration_s)
    return {"side": "harness", **fanout_figures(spec.consumers, spec.rate_msgs_per_s, messages,
                                                 received, cpu_s, wall_s),
            "cell_id": summary["cell_id"], "status": None if meta.get("status") == "complete"
            else meta.get("status"),
            "error": meta.get("error"), "shards": len(shards),
            "acked": summary.get("acked_msgs"),
            "achieved_rate_msgs_per_s": summary.get("achieved_rate_msgs_per_s"),
            "loss_pct": summary.get("loss_pct"), "client_bound": summary.get("client_bound"),
            **{k: summary.get(k) for k in ("rx_rate_msgs_per_s_avg", "e2e_p50_ms", "e2e_p99_ms",
                                           "service_e2e_p50_ms", "lag_peak_msgs", "late_pct")},
            "broker_cpu_s": None if b0 is None or b1 is None else round(b1 - b0, 3),
            "note": "counted: receipts with receive_ts ≤ the producer's stop (warm-up included); "
                    "cpu: the shards' measuring span"}


# --------------------------------------------------------------------------- ratios


def _median(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def load_ratios(result: dict[str, Any]) -> dict[str, Any]:
    """The verdicts of a load result: median rates per side and their ratios.

    ``result`` holds ``producer`` and ``consumer`` lists of rounds (each a list of side
    dicts with ``side`` and ``msgs_per_s``) and ``fanout`` rows (``side``, ``consumers``,
    ``rate_msgs_per_s``, ``deliveries_per_core_s``; one ratio per (consumers, rate)).
    A harness cell whose e2e p50 exceeds :data:`STALLED_E2E_P50_MS` is ``harness_stalled``:
    its consumers received in late, large batches, so its per-core figure flatters it. Sides missing or pending give None ratios, and then the
    goal's verdict is None (unknown), never False.
    """
    out: dict[str, Any] = {}
    for part in ("producer", "consumer"):
        by: dict[str, list[float | None]] = {}
        for rnd in result.get(part, []):
            for s in rnd:
                by.setdefault(s["side"], []).append(s.get("msgs_per_s"))
        med = {side: _median(v) for side, v in by.items()}
        out[part] = {
            "median_msgs_per_s": med,
            "harness_over_bare": _ratio(med.get("harness"), med.get("bare")),
            "tool_over_bare": _ratio(med.get("tool"), med.get("bare")),
            "bare_over_tool": _ratio(med.get("bare"), med.get("tool")),
        }
    h = out["producer"]["harness_over_bare"]
    out["producer"]["goal_harness_at_least_0_8x_bare"] = None if h is None else h >= HARNESS_OVER_BARE_GOAL
    fan: dict[tuple[int, float], dict[str, Any]] = {}
    for r in result.get("fanout", []):
        if "consumers" in r and "rate_msgs_per_s" in r:
            fan.setdefault((int(r["consumers"]), float(r["rate_msgs_per_s"])), {})[r["side"]] = r
    rows = []
    for (n, rate), v in sorted(fan.items()):
        bare, harness = v.get("bare", {}), v.get("harness", {})
        p50 = harness.get("e2e_p50_ms")
        rows.append({"consumers": n, "rate_msgs_per_s": rate,
                     "bare_deliveries_per_core_s": bare.get("deliveries_per_core_s"),
                     "harness_deliveries_per_core_s": harness.get("deliveries_per_core_s"),
                     "harness_over_bare": _ratio(harness.get("deliveries_per_core_s"),
                                                 bare.get("deliveries_per_core_s")),
                     "harness_e2e_p50_ms": p50,
                     "harness_stalled": None if p50 is None else p50 > STALLED_E2E_P50_MS})
    out["fanout"] = rows
    return out


# --------------------------------------------------------------------------- the part


def _bench_lab() -> Path:
    """This part's lab folder, with the Kafka 0.9 tarball copied from the lab's downloads
    (Kafka 4.x's jars are the lab home's, shared).

    On tmpfs (``/dev/shm``) when there is one: the part writes ~2 GB of log segments, and
    on a disk the kernel's dirty-page writeback stalled the broker by different amounts in
    different rounds (both client and broker CPU well under one core, rates halving from
    round 1 to round 3); elsewhere ``<lab_dir>/bench-load``.
    """
    from kafkalab.cluster.flavors.kafka09.distribution import NPM_TARBALL
    from kafkalab.paths import lab_dir

    shm = Path("/dev/shm")
    lab = (shm / f"kafkalab-bench-load-{os.getuid()}" if shm.is_dir() and os.access(shm, os.W_OK)
           else lab_dir() / "bench-load")
    dl = lab / "downloads"
    dl.mkdir(parents=True, exist_ok=True)
    src = lab_dir() / "downloads" / NPM_TARBALL
    if not (dl / NPM_TARBALL).exists() and src.is_file():
        shutil.copy2(src, dl / NPM_TARBALL)
    return lab


def _broker_pid(lab: Path) -> int | None:
    from kafkalab.cluster import cluster_status

    for p in cluster_status(lab).get("processes", []):
        if p["role"] == "broker" and p.get("alive"):
            return int(p["pid"])
    return None


def _alternating(sides: Sequence[str], rounds: int) -> Iterator[tuple[int, list[str]]]:
    """Round r runs ``sides`` forwards on even r, backwards on odd r (noise falls on all)."""
    for r in range(rounds):
        yield r, list(sides) if r % 2 == 0 else list(reversed(sides))


def _rounds(sides: dict[str, Callable[[int], dict[str, Any]]], rounds: int,
            label: str) -> list[list[dict[str, Any]]]:
    out = []
    for r, order in _alternating(list(sides), rounds):
        got = []
        for side in order:
            try:
                row = sides[side](r)
            except LabError as exc:
                row = {"side": side, "status": "failed", "error": str(exc), "msgs_per_s": None}
            row["round"] = r
            row["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
            got.append(row)
            rate = row.get("msgs_per_s")
            _progress(f"load {label} round {r + 1}/{rounds} {side}: "
                      + (f"{rate:,.0f} msg/s" if rate else row.get("status", "-")))
        out.append(got)
    return out


def bench_load(work: Path, config: LoadBenchConfig | None = None) -> dict[str, Any]:
    """Parts (a)-(c) of the load bench on this part's own cluster (started and stopped)."""
    from kafkalab.cluster import cluster_down, cluster_up
    from kafkalab.topics import TopicSpec, provision_topics

    cfg = config or LoadBenchConfig()
    value = bench_message()
    wire = len(value)
    lab = _bench_lab()
    load_avg_start = os.getloadavg()
    t0 = time.perf_counter()
    d = cluster_up(DEFAULT_EMBEDDED.name, 1, lab_dir=lab, base_port=BENCH_BROKER_PORT,
                   control_port=BENCH_ZK_PORT, progress=_progress)
    try:
        broker = _broker_pid(lab)
        profile = bench_profile()
        topics = {"produce": "bench-load-produce", "consume": "bench-load-consume",
                  "fanout": "bench-load-fanout"}
        provision_topics(d, [TopicSpec(name=t, partitions=PARTITIONS) for t in topics.values()])
        producer = _rounds({
            "bare": lambda r: bare_produce(d, topics["produce"], value, cfg.messages, broker),
            "tool": lambda r: tool_produce(d, topics["produce"], wire, cfg.messages, broker,
                                           work / f"producer-performance-{r}.log"),
            "harness": lambda r: harness_produce(d, topics["produce"], cfg.messages, broker),
        }, cfg.rounds, "producer")
        _prefill(d, topics["consume"], value, cfg.messages)
        consumer = _rounds({
            "bare": lambda r: bare_consume(d, topics["consume"], cfg.messages, wire, broker),
            "tool": lambda r: tool_consume(d, topics["consume"], cfg.messages, wire, broker,
                                           work / f"consumer-performance-{r}.log"),
        }, cfg.rounds, "consumer")
        run = HarnessRun(data_dir=work / "lab-data", descriptor_path=lab / "cluster.yaml")
        specs = {pt: harness_cell_spec(pt[0], pt[1], cfg.fanout_duration_s)
                 for pt in cfg.fanout_points}
        fanout = []
        try:
            start_harness_run(run, list(specs.values()))
        except LabError as exc:
            fanout.append({"side": "harness", "status": "failed", "error": f"load run: {exc}"})
        for (n, rate), spec in specs.items():
            for side in ("bare", "harness"):
                try:
                    if side == "bare":
                        row = bare_fanout(d, topics["fanout"], value, n, rate,
                                          cfg.fanout_duration_s, broker)
                    elif run.run_id:
                        row = harness_fanout(run, spec, broker)
                    else:
                        continue
                except LabError as exc:
                    row = {"side": side, "status": "failed", "error": str(exc)}
                row.update(consumers=n, rate_msgs_per_s=rate,
                           load_avg_1m_after=round(os.getloadavg()[0], 2))
                fanout.append(row)
                per_core = row.get("deliveries_per_core_s")
                _progress(f"load fan-out N={n} at {rate:g} msg/s {side}: "
                          + (f"{per_core:,.0f} deliveries per core second" if per_core
                             else str(row.get("status") or "-")))
        if run.run_id:
            from kafkalab.load.run import finish_load_run

            finish_load_run(run.data_dir, run.run_id)
    finally:
        cluster_down(lab, wipe_data=True, progress=_progress)
    result: dict[str, Any] = {
        "cluster": {"flavor": d.flavor, "version": d.version, "brokers": d.broker_count,
                    "bootstrap_servers": d.bootstrap_servers, "zookeeper": d.zookeeper},
        "settings": {"payload": PAYLOAD, "encoding": ENCODING, "wire_bytes": wire,
                     "profile": f"{PROFILE} with acks={ACKS}, linger.ms={LINGER_MS}, "
                                f"compression={COMPRESSION}",
                     "producer": {k: profile.producer.model_dump()[k]
                                  for k in ("acks", "linger_ms", "batch_size_bytes", "compression",
                                            "max_in_flight", "buffer_memory_bytes")},
                     "partitions": PARTITIONS, "messages": cfg.messages, "rounds": cfg.rounds,
                     "fanout_profile": FANOUT_PROFILE,
                     "fanout_points": [list(pt) for pt in cfg.fanout_points],
                     "fanout_duration_s": cfg.fanout_duration_s, "cpu_count": os.cpu_count()},
        "harness_load_run": {"data_dir": str(run.data_dir), "run_id": run.run_id or None},
        "load_avg_start": [round(v, 2) for v in load_avg_start],
        "load_avg_end": [round(v, 2) for v in os.getloadavg()],
        "producer": producer, "consumer": consumer, "fanout": fanout,
    }
    result["ratios"] = load_ratios(result)
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    return result


def _f(v: Any, fmt: str = ",.0f") -> str:
    return format(v, fmt) if isinstance(v, (int, float)) else "-"


def print_load(res: dict[str, Any]) -> None:
    """Print the load part."""
    s = res["settings"]
    print(f"\n(f) load: is the instrument the bottleneck? ({s['wire_bytes']} B messages, "
          f"{s['profile']}, {s['partitions']} partition, kafka {res['cluster']['version']}, "
          f"{s['rounds']} alternating rounds, medians; {s['cpu_count']} cores shared by all)")
    print(f"  load average (1/5/15 min) at start {res['load_avg_start']}, at end {res['load_avg_end']}"
          f" (above {s['cpu_count']}: other work shared the cores, and the rates with it)")
    rat = res["ratios"]
    for part in ("producer", "consumer"):
        r = rat[part]
        med = r["median_msgs_per_s"]
        sides = [side for side in ("bare", "tool", "harness") if side in med]
        print(f"  {part}: " + "  ".join(f"{side} {_f(med.get(side))} msg/s" for side in sides))
        print("    " + "  ".join(f"{k.replace('_over_', '/')} = {_f(r[k], '.3f')}"
                                 for k in ("harness_over_bare", "tool_over_bare", "bare_over_tool")
                                 if r[k] is not None))
        for rnd in res[part]:
            for row in rnd:
                print(f"    round {row['round'] + 1} {row['side']:<8} {_f(row.get('msgs_per_s')):>9} msg/s"
                      f"  client cpu {_f(row.get('client_cpu_frac'), '.2f')}"
                      f"  broker cpu {_f(row.get('broker_cpu_frac'), '.2f')}"
                      + (f"  ({row.get('status')}: {row.get('reason') or row.get('error')})"
                         if row.get("status") else ""))
    g = rat["producer"]["goal_harness_at_least_0_8x_bare"]
    print(f"  goal harness ≥ {HARNESS_OVER_BARE_GOAL} × bare producer: "
          f"{'unknown (no harness figure)' if g is None else ('met' if g else 'NOT met')}")
    print("  consumer: the engine's shard loop only tails live (no catch-up mode); its "
          "throughput is the one-consumer high-rate fan-out point below")
    print("  fan-out, deliveries per client core second (received / consumer process CPU s):")
    for row in res["fanout"]:
        print(f"    N={row.get('consumers', '-'):<3} {_f(row.get('rate_msgs_per_s')):>6} msg/s "
              f"{row['side']:<8} {_f(row.get('deliveries_per_core_s')):>9}/core·s  received "
              f"{_f(row.get('received'))}/{_f(row.get('expected_deliveries'))}  consumer cpu "
              f"{_f(row.get('consumer_cpu_frac'), '.2f')}"
              + (f"  e2e p50 {_f(row.get('e2e_p50_ms'), '.1f')} ms p99 {_f(row.get('e2e_p99_ms'), '.1f')}"
                 f" ms, lag peak {_f(row.get('lag_peak_msgs'))}" if row["side"] == "harness" else "")
              + (f"  ({row.get('status')}: {row.get('reason') or row.get('error')})"
                 if row.get("status") else ""))
    for f in rat["fanout"]:
        if f["harness_over_bare"] is not None:
            print(f"    N={f['consumers']} at {f['rate_msgs_per_s']:g} msg/s: harness/bare per core "
                  f"= {f['harness_over_bare']:.3f}"
                  + (f"  (harness STALLED: e2e p50 {f['harness_e2e_p50_ms']:.0f} ms > "
                     f"{STALLED_E2E_P50_MS:g} ms, not comparable)" if f["harness_stalled"] else ""))

if __name__ == "__main__":
    if sys.argv[1:2] == ["fanout-consumers"]:
        sys.exit(fanout_consumers_main(sys.argv[2:]))
    sys.exit("usage: python -m tools.bench.load fanout-consumers JSON (used by the bench)")
