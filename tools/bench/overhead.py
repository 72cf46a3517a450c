"""Bench part (a): the instrument's overhead — the lab's harness against a minimal loop.

The lab's ``confluent-kafka`` cell (runner, tracker, streamed rows) and a minimal
produce→poll loop written here measure the same thing on the same broker and topic, with
the same message bytes and the same client settings (the ``latency`` profile through the
lab's own config mapping):

* 1 KB: the lab's raw 1 KB body + the 32-byte stamp;
* 1 MB: the 1,462,780-byte base64 body of the 1 MB test image + the stamp (seed 000's
  bytes).

The minimal loop builds each message first, reads ``time.monotonic_ns()`` immediately
before ``produce()`` and immediately after ``poll()`` returns a record, and does nothing
else in between (delivery reports are served after the receipt, outside the interval).
Lab and minimal runs alternate (A B B A …) so that machine noise falls on both; each side's
p50 is the nearest-rank median of all its rounds' messages. Goal: lab p50 ≤ 1.1 × minimal p50.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from kafkalab.cluster.descriptor import ClusterDescriptor, librdkafka_config
from kafkalab.config import load_profile, load_workload
from kafkalab.config.mapping import confluent_consumer_config, confluent_producer_config
from kafkalab.paths import images_dir
from kafkalab.payloads import load_body, read_stamp, stamp, wire_size_bytes
from kafkalab.runner import build_run_request, execute
from kafkalab.samples import read_cell
from kafkalab.stats import nearest_rank
from kafkalab.store import LabData

__all__ = ["LAB_OVER_MINIMAL_GOAL", "OVERHEAD_PAYLOADS", "bench_overhead", "minimal_loop",
           "print_overhead"]

WORKLOAD = "bench-latency"
PROFILE = "latency"
SCENARIO = "confluent-kafka"
OVERHEAD_PAYLOADS: tuple[tuple[str, str], ...] = (("1kb", "raw"), ("1mb", "base64"))
"""(payload, encoding) pairs compared: 1 KB raw, and seed 000's base64 1 MB image."""
LAB_OVER_MINIMAL_GOAL = 1.1
"""Goal: the lab's e2e p50 at most this many times the minimal loop's."""
MESSAGE_TIMEOUT_S = 10.0


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _ready_consumer(consumer: Any, topic: str) -> None:
    """Assign every partition of ``topic`` at its end (the lab's assign mode)."""
    from confluent_kafka import TopicPartition

    meta = consumer.list_topics(timeout=10)  # all topics: 0.9 trips on a by-name request
    if topic not in meta.topics:
        raise RuntimeError(f"topic {topic} does not exist")
    parts = [TopicPartition(topic, p) for p in meta.topics[topic].partitions]
    for p in parts:
        _low, p.offset = consumer.get_watermark_offsets(p, timeout=10)
    consumer.assign(parts)


def minimal_loop(descriptor: ClusterDescriptor, topic: str, body: bytes, base64_body: bool,
                 messages: int, warmup: int) -> list[float]:
    """e2e latencies (ms) of ``messages`` measured produce→poll round trips after ``warmup``.

    Same client settings as the lab's ``confluent-kafka`` cell under the ``latency`` profile;
    the same stamp header on the same body. A message not back within
    :data:`MESSAGE_TIMEOUT_S` is left out (and counted by the caller as missing).
    """
    from confluent_kafka import Consumer, Producer

    profile = load_profile(PROFILE)
    base = librdkafka_config(descriptor)
    producer = Producer(confluent_producer_config(base, profile))
    consumer = Consumer(confluent_consumer_config(base, profile, None))
    nonce = os.urandom(8)
    out: list[float] = []
    try:
        _ready_consumer(consumer, topic)
        for seq in range(warmup + messages):
            value = stamp(body, seq, nonce, base64_body)  # built before the clock starts
            t0 = time.monotonic_ns()
            producer.produce(topic, value)
            deadline = t0 + int(MESSAGE_TIMEOUT_S * 1e9)
            t1 = None
            while True:
                msg = consumer.poll(1.0)
                t = time.monotonic_ns()
                if msg is not None and not msg.error():
                    got = read_stamp(msg.value())
                    if got is not None and got[0] == seq and got[2] == nonce:
                        t1 = t
                        break
                if t > deadline:
                    break
            producer.poll(0)  # delivery reports, outside the timed interval
            if t1 is not None and seq >= warmup:
                out.append((t1 - t0) / 1e6)
        producer.flush(10)
    finally:
        consumer.close()
    return out


def _lab_round(payload: str, encoding: str, messages: int, warmup: int,
               data_dir: Path) -> list[float]:
    """One run of the lab's cell; its measured e2e latencies (ms, ok/late messages)."""
    req = build_run_request(
        WORKLOAD, scenarios=[SCENARIO], payloads=[payload], profiles=[PROFILE],
        overrides={"messages": messages, "warmup_messages": warmup, "encoding": encoding},
        data_dir=data_dir, command="make bench (overhead)",
    )
    result = execute(req, progress=_progress)
    values: list[float] = []
    for path in LabData(data_dir).run_sample_files(result.run_id):
        for r in read_cell(path).to_pylist():
            if (r.get("sample_kind") == "message" and not r.get("is_warmup")
                    and r.get("status") in ("ok", "late") and r.get("e2e_latency_ms") is not None):
                values.append(float(r["e2e_latency_ms"]))
    return values


def _p50(values: list[float]) -> float | None:
    return nearest_rank(sorted(values), 0.5) if values else None


def bench_overhead(descriptor: ClusterDescriptor, rounds: int, messages_1kb: int,
                   messages_1mb: int, data_dir: Path) -> list[dict[str, Any]]:
    """Lab against minimal loop for each of :data:`OVERHEAD_PAYLOADS`, ``rounds`` A/B rounds.

    Returns one dict per payload: bytes on the wire, per side the count, p50 and mean (ms),
    ``lab_over_minimal_p50`` (pooled), the per-round ratios and the goal's verdict.
    """
    workload_topic = load_workload(WORKLOAD).topic_for(PROFILE)  # the lab cell's topic
    out = []
    for payload, encoding in OVERHEAD_PAYLOADS:
        body = load_body(payload, encoding, images_dir())
        messages = messages_1kb if payload == "1kb" else messages_1mb
        warmup = max(5, messages // 10)
        lab: list[float] = []
        minimal: list[float] = []
        per_round = []
        for r in range(rounds):
            order = ("lab", "minimal") if r % 2 == 0 else ("minimal", "lab")
            got: dict[str, list[float]] = {}
            for side in order:
                if side == "lab":
                    got[side] = _lab_round(payload, encoding, messages, warmup, data_dir)
                else:
                    got[side] = minimal_loop(descriptor, workload_topic, body,
                                             encoding == "base64", messages, warmup)
            lab += got["lab"]
            minimal += got["minimal"]
            lp, mp = _p50(got["lab"]), _p50(got["minimal"])
            per_round.append(None if not lp or not mp else round(lp / mp, 4))
            _progress(f"overhead {payload} round {r + 1}/{rounds} ({'/'.join(order)}): "
                      f"lab p50 {lp} ms, minimal p50 {mp} ms")
        lab_p50, min_p50 = _p50(lab), _p50(minimal)
        ratio = lab_p50 / min_p50 if lab_p50 and min_p50 else None
        out.append({
            "payload": payload, "encoding": encoding, "body_bytes": len(body),
            "wire_bytes": wire_size_bytes(body), "rounds": rounds,
            "messages_per_round": messages, "warmup_per_round": warmup,
            "lab": {"count": len(lab), "p50_ms": lab_p50,
                    "mean_ms": sum(lab) / len(lab) if lab else None},
            "minimal": {"count": len(minimal), "p50_ms": min_p50,
                        "mean_ms": sum(minimal) / len(minimal) if minimal else None},
            "lab_over_minimal_p50": ratio,
            "lab_over_minimal_p50_by_round": per_round,
            "goal_within_1_1x": None if ratio is None else ratio <= LAB_OVER_MINIMAL_GOAL,
        })
    return out


def print_overhead(rows: list[dict[str, Any]]) -> None:
    """Print part (a)."""
    print("\n(a) instrument overhead: the lab's confluent-kafka cell vs a minimal produce→poll "
          "loop (same broker, topic, bytes, latency profile; A/B rounds)")
    for r in rows:
        lab, mini = r["lab"], r["minimal"]
        print(f"  {r['payload']:<4} {r['wire_bytes']:>9,} B  lab p50 {lab['p50_ms'] or 0:8.3f} ms"
              f" (n={lab['count']})  minimal p50 {mini['p50_ms'] or 0:8.3f} ms (n={mini['count']})"
              f"  lab/minimal = {r['lab_over_minimal_p50'] or float('nan'):.3f}"
              f"  (rounds: {r['lab_over_minimal_p50_by_round']})"
              f"  → goal ≤ {LAB_OVER_MINIMAL_GOAL}: {'met' if r['goal_within_1_1x'] else 'NOT met'}")
