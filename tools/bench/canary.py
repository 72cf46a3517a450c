"""Part (m): what the canary costs, and whether its latency is the cluster's.

One 3-node KRaft cluster in a lab of its own on the bench's own ports, warmed by an
unmeasured minimal round. Then alternating rounds of

* **canary**: ``kafkalab canary`` as a user runs it (a subprocess, acks=all, its own topic,
  ``INTERVAL_MS`` between ticks, a partition per broker, ``ROUND_S`` seconds, 5 s warm-up),
  its e2e p50/p99 over every broker from ``summary.json`` (HdrHistogram, 3 significant
  figures) and its process's CPU per record in its steady state (psutil, from its warm-up's
  end to 2 s before its end: its start-up and stop apart; ``cpu_s`` is the whole process);
* **minimal**: the same schedule in a bare loop (one confluent-kafka producer with the same
  settings, a consumer thread with ``assign()``, latency = receive − intended time, the same
  warm-up left out), on a topic of its own with the same placement; exact nearest-rank
  percentiles.

Both measure the same interval (intended send time → read), on the same cluster, records,
acks and schedule, so the ratio canary/minimal is the harness's own cost (1: none). The
minimal loop's percentiles are exact, the canary's are HdrHistogram's (within 0.1 %).

Also the busy-host mark's cost (:mod:`kafkalab.host`): ``HostWindow.begin`` + ``end`` around
nothing, with the broker ports of this cluster, median of ``HOST_WINDOW_REPEATS``: the wall
time a latency cell gains (outside its timed interval).
"""

from __future__ import annotations

import json
import os
import statistics
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tools.bench import cluster_facts

BENCH_CANARY_BASE_PORT = 31492
BENCH_CANARY_CONTROL_PORT = 25492
"""Part (m)'s ports: brokers from 31492, the quorum from 25492."""
BENCH_CANARY_METRICS_PORT = 25499
"""The canary's /metrics in part (m)."""

INTERVAL_MS = 20
ROUND_S = 30.0
WARMUP_S = 5.0
ROUNDS = 3
WARM_CLUSTER_S = 15.0
"""An unmeasured minimal round first: the first round on a fresh cluster ran with cold
brokers (a canary round's p99 was 245 ms there, 8 ms the round after)."""
HOST_WINDOW_REPEATS = 50
_VALUE = struct.Struct(">qiq")


def _steady_cpu_s(pid: int, from_s: float, to_s: float) -> float:
    """The CPU seconds process ``pid`` used between ``from_s`` and ``to_s`` after now (its
    start-up and stop left out)."""
    import psutil

    proc = psutil.Process(pid)
    time.sleep(from_s)
    a = proc.cpu_times()
    time.sleep(to_s - from_s)
    b = proc.cpu_times()
    return (b.user + b.system) - (a.user + a.system)


def _canary_round(desc: Path, out: Path) -> dict[str, Any]:
    from kafkalab.paths import project_root

    root = project_root()  # whatever the working directory
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "plugins"), str(root)])}
    cmd = [sys.executable, "-m", "kafkalab.cli", "canary", "--cluster", str(desc),
           "--interval-ms", str(INTERVAL_MS), "--duration", str(ROUND_S),
           "--warmup-s", str(WARMUP_S), "--metrics-port", str(BENCH_CANARY_METRICS_PORT),
           "--out", str(out), "--json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    # steady state: from the end of its warm-up (+ its start-up, ~3 s) to 2 s before its end
    steady = (WARMUP_S + 3.0, ROUND_S - 2.0)
    steady_cpu_s = _steady_cpu_s(proc.pid, *steady)
    stdout = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"the canary exited {proc.returncode}")
    summary = json.loads(stdout)
    brokers = [b for b in summary["brokers"] if b["broker"] != "unknown"]
    p50 = statistics.median(b["e2e_latency"]["p50_ms"] for b in brokers)
    p99 = statistics.median(b["e2e_latency"]["p99_ms"] for b in brokers
                            if b["e2e_latency"]["p99_ms"] is not None)
    sent = summary["records_sent"]
    steady_records = (steady[1] - steady[0]) * 1000 / INTERVAL_MS * len(brokers)
    return {"p50_ms": p50, "p99_ms": p99, "records_sent": sent,
            "cpu_s": usage.ru_utime + usage.ru_stime, "steady_cpu_s": steady_cpu_s,
            "cpu_ms_per_record": 1000 * steady_cpu_s / steady_records,
            "produce_availability": min(b["produce_availability"] or 0 for b in brokers)}


def _minimal_round(d: Any, topic: str, partitions: int,
                   round_s: float = ROUND_S) -> dict[str, Any]:
    from confluent_kafka import Consumer, Producer, TopicPartition

    from kafkalab.cluster.descriptor import librdkafka_config

    base = dict(librdkafka_config(d))
    producer = Producer({**base, "acks": "all", "enable.idempotence": True, "linger.ms": 0})
    consumer = Consumer({**base, "group.id": "bench-canary-minimal", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 100})
    tps = []
    for p in range(partitions):
        _lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)
        tps.append(TopicPartition(topic, p, hi))
    consumer.assign(tps)
    producer.list_topics(topic, timeout=15)
    got: list[float] = []
    stop = threading.Event()
    t0 = time.monotonic_ns() + 200_000_000
    warm_until = t0 + int(WARMUP_S * 1e9)

    def read() -> None:
        while not stop.is_set():
            msg = consumer.poll(0.1)
            if msg is None or msg.error():
                continue
            now = time.monotonic_ns()
            intended, _p, _seq = _VALUE.unpack_from(msg.value() or bytes(_VALUE.size))
            if intended >= warm_until:
                got.append((now - intended) / 1e6)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    tick, pad = 0, b"\0" * (100 - _VALUE.size)
    end = t0 + int(round_s * 1e9)
    while (intended := t0 + tick * INTERVAL_MS * 1_000_000) < end:
        while (now := time.monotonic_ns()) < intended:
            producer.poll(min(0.05, (intended - now) / 1e9))
        for p in range(partitions):
            producer.produce(topic, _VALUE.pack(intended, p, tick) + pad, partition=p)
        tick += 1
        producer.poll(0)
    producer.flush(10)
    time.sleep(1.0)
    stop.set()
    reader.join(5)
    consumer.close()
    ordered = sorted(got)
    return {"p50_ms": ordered[(len(ordered) + 1) // 2 - 1],
            "p99_ms": ordered[-(-99 * len(ordered) // 100) - 1], "received": len(ordered)}


def _host_window_ms(d: Any) -> float:
    from kafkalab.host import HostWindow

    times = []
    for _ in range(HOST_WINDOW_REPEATS):
        t = time.perf_counter()
        HostWindow.begin(d.servers).end()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def bench_canary(work: Path) -> dict[str, Any]:
    """Run part (m) in ``work`` (its lab and the canary's files) and return its figures."""
    from confluent_kafka.admin import NewTopic

    from kafkalab.cluster import cluster_down, cluster_up
    from kafkalab.cluster.admin import admin_client
    from kafkalab.cluster.descriptor import save_descriptor
    from kafkalab.progress import noop

    lab = work / "lab"
    d = cluster_up("kraft", 3, lab_dir=lab, base_port=BENCH_CANARY_BASE_PORT,
                   control_port=BENCH_CANARY_CONTROL_PORT, progress=noop)
    try:
        desc = save_descriptor(d, work / "cluster.yaml")
        admin = admin_client(d)
        admin.create_topics([NewTopic("bench-canary-minimal", 3, replica_assignment=[
            [0, 1, 2], [1, 2, 0], [2, 0, 1]])])["bench-canary-minimal"].result(timeout=30)
        _minimal_round(d, "bench-canary-minimal", 3, WARM_CLUSTER_S)  # unmeasured
        rounds: list[dict[str, Any]] = []
        for i in range(ROUNDS):
            order = ("canary", "minimal") if i % 2 == 0 else ("minimal", "canary")
            row: dict[str, Any] = {}
            for arm in order:
                row[arm] = (_canary_round(desc, work / f"canary-{i}") if arm == "canary"
                            else _minimal_round(d, "bench-canary-minimal", 3))
            rounds.append(row)
        med = {arm: {k: statistics.median(r[arm][k] for r in rounds) for k in ("p50_ms", "p99_ms")}
               for arm in ("canary", "minimal")}
        return {"cluster": cluster_facts(d), "interval_ms": INTERVAL_MS, "round_s": ROUND_S,
                "partitions": 3, "acks": "all", "rounds": rounds, "median": med,
                "p50_ratio_canary_over_minimal": med["canary"]["p50_ms"] / med["minimal"]["p50_ms"],
                "p99_ratio_canary_over_minimal": med["canary"]["p99_ms"] / med["minimal"]["p99_ms"],
                "canary_cpu_ms_per_record": statistics.median(
                    r["canary"]["cpu_ms_per_record"] for r in rounds),
                "host_window_ms": _host_window_ms(d)}
    finally:
        cluster_down(lab)


def print_canary(result: dict[str, Any]) -> None:
    """Part (m) in a few lines."""
    c = result["cluster"]
    print(f"\n(m) the canary against a minimal loop on {c.get('flavor')} {c.get('version')}, "
          f"3 brokers, a record per partition every {result['interval_ms']} ms, acks=all")
    for arm in ("canary", "minimal"):
        m = result["median"][arm]
        print(f"  {arm:<8} p50 {m['p50_ms']:7.2f} ms   p99 {m['p99_ms']:7.2f} ms")
    print(f"  canary/minimal: p50 {result['p50_ratio_canary_over_minimal']:.2f}, p99 "
          f"{result['p99_ratio_canary_over_minimal']:.2f}; canary CPU "
          f"{result['canary_cpu_ms_per_record']:.3f} ms per record")
    print(f"  busy-host mark: {result['host_window_ms']:.2f} ms a cell (outside its timed interval)")
