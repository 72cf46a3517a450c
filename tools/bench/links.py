"""Part (l): what degradable links cost, and what a replication delay adds.

One 3-node KRaft cluster in a lab of its own on the bench's own ports, started without links
(``plain``) and with them (``cluster up --links``), alternating rounds; each start formats
fresh directories. On each: a topic of one partition, RF 3, ``min.insync.replicas=2``, and
publish latency (send → delivery report, monotonic, one record at a time, after 20 unmeasured
ones, after an unmeasured warm-up of the same size) of 1 KB records with acks=all and
acks=1. On the linked cluster also with every replication link delayed by 1 and 5 ms one
way (:func:`kafkalab.cluster.links.replication_delay`), the delays in reverse order every
other round. Figures: per arm the median of the rounds' p50 and p99; the ratio
links/plain at no delay (what the proxies cost: two more loopback hops and a user-space
copy per direction), and for each delay acks=all's added p50 over the added round trip
(1 means the publish pays exactly the round trip).

On the linked cluster also the **solo plane's calibration** (what ``kafkalab load
--thin-consumer`` rests on): two consumers read the same records, one on the shared client
links, one bootstrapped to the solo plane (links of its own), send → receipt of 1 KB
records one at a time (acks=1, monotonic, one process, a receiving thread per consumer):
with nothing added, solo/shared p50 (1: the solo plane costs what the client plane does);
with the solo links delayed ``SOLO_DELAY_MS`` one way, the solo consumer's added p50 over the
delay and the shared consumer's p50 ratio to its own undelayed one (1: untouched). The first
is ~2, not ~1, by this arm's design: each record is sent once both consumers have the one
before, when the solo consumer's next fetch request is still crossing its link, so the
record waits for it and then crosses back (a stream whose fetches wait at the broker pays
one crossing: the +50 ms thin-pipe cell in docs/load.md).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from pathlib import Path
from typing import Any

from tools.bench import cluster_facts

BENCH_LINKS_BASE_PORT = 31392
BENCH_LINKS_CONTROL_PORT = 25392
"""Part (l)'s ports: brokers (their client proxies) from 31392, the quorum from 25392 and,
with links, the nodes' own listeners and the proxies' API up to 25392 + 30."""

DELAYS_MS = (1.0, 5.0)
RECORDS = 300
WARMUP_RECORDS = 20
SOLO_DELAY_MS = 5.0
"""The solo plane's delay in its calibration arm (one way)."""
RECEIVE_TIMEOUT_S = 10.0


def _publish_ms(d: Any, topic: str, acks: str) -> list[float]:
    from confluent_kafka import Producer

    from kafkalab.cluster.descriptor import librdkafka_config

    p = Producer({**librdkafka_config(d), "acks": acks, "linger.ms": 0})
    acked: list[int] = []
    out: list[float] = []
    body = b"x" * 1024
    for i in range(RECORDS + WARMUP_RECORDS):
        t0 = time.monotonic_ns()
        p.produce(topic, body, on_delivery=lambda e, m: acked.append(time.monotonic_ns()))
        while len(acked) <= i:
            p.poll(0.0005)
        if i >= WARMUP_RECORDS:
            out.append((acked[i] - t0) / 1e6)
    p.flush(30)
    return out


def _receipt_ms(d: Any, topic: str, solo_bootstrap: str) -> dict[str, list[float]]:
    """Send → receipt (ms) of each record, one at a time, for a consumer on the shared client
    links (``shared``) and one on the solo plane (``solo``), after the warm-up records.

    Raises:
        LabError: a record did not reach both consumers within :data:`RECEIVE_TIMEOUT_S`.
    """
    import threading

    from confluent_kafka import Consumer, Producer, TopicPartition

    from kafkalab.cluster.descriptor import librdkafka_config
    from kafkalab.errors import LabError

    base = librdkafka_config(d)
    got: dict[str, dict[int, int]] = {"shared": {}, "solo": {}}
    stop = threading.Event()
    consumers = {}
    for arm, bootstrap in (("shared", base["bootstrap.servers"]), ("solo", solo_bootstrap)):
        c = Consumer({**base, "bootstrap.servers": bootstrap, "group.id": f"bench-{arm}",
                      "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        _lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        c.assign([TopicPartition(topic, 0, hi)])
        consumers[arm] = c

    def receive(arm: str) -> None:
        c, mine = consumers[arm], got[arm]
        while not stop.is_set():
            m = c.poll(0.05)
            key = m.key() if m is not None and m.error() is None else None
            if key is not None:
                mine[int(key)] = time.monotonic_ns()

    threads = [threading.Thread(target=receive, args=(a,), daemon=True) for a in consumers]
    for t in threads:
        t.start()
    p = Producer({**base, "acks": "1", "linger.ms": 0})
    sent: dict[int, int] = {}
    try:
        time.sleep(1.0)  # both consumers positioned and fetching before the first record
        for i in range(RECORDS + WARMUP_RECORDS):
            sent[i] = time.monotonic_ns()
            p.produce(topic, b"x" * 1024, key=str(i).encode())
            p.poll(0)
            deadline = time.monotonic() + RECEIVE_TIMEOUT_S
            while i not in got["shared"] or i not in got["solo"]:
                if time.monotonic() > deadline:
                    raise LabError(f"bench part (l): record {i} did not reach both consumers "
                                   f"within {RECEIVE_TIMEOUT_S:g} s")
                p.poll(0.0005)
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        for c in consumers.values():
            c.close()
        p.flush(10)
    return {arm: [(got[arm][i] - sent[i]) / 1e6 for i in range(WARMUP_RECORDS, len(sent))]
            for arm in got}


def _solo_arms(linked: Any, d: Any, topic: str) -> dict[str, Any]:
    """The solo plane's calibration: both consumers with nothing added, then with the solo
    links delayed :data:`SOLO_DELAY_MS` one way."""
    from kafkalab.cluster.links import LinkFault
    from kafkalab.cluster.links.layout import CLIENTS

    solo = linked.layout.solo_bootstrap()
    arms: dict[str, Any] = {}
    for arm, ms in _receipt_ms(d, topic, solo).items():
        arms[f"receipt|{arm}|0"] = _summary(ms)
    delay = LinkFault("delay", tuple(range(linked.layout.nodes)), (CLIENTS,), ("solo",),
                      SOLO_DELAY_MS)
    linked.apply(delay)
    try:
        for arm, ms in _receipt_ms(d, topic, solo).items():
            arms[f"receipt|{arm}|{SOLO_DELAY_MS:g}"] = _summary(ms)
    finally:
        linked.remove(delay)
    return arms


def _summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"p50_ms": round(statistics.median(ordered), 3),
            "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))], 3)}


def _topic(d: Any) -> str:
    import uuid

    from confluent_kafka.admin import NewTopic

    from kafkalab.cluster.admin import admin_client
    from kafkalab.cluster.partitions import AdminPartitions
    from kafkalab.errors import LabError
    from kafkalab.faults.inject import wait_isr_full

    name = f"bench-links-{uuid.uuid4().hex[:6]}"
    admin = admin_client(d, 10.0)
    for f in admin.create_topics([NewTopic(name, 1, 3, config={"min.insync.replicas": "2"})]).values():
        f.result(timeout=30)
    with AdminPartitions(admin) as reader:  # every replica in sync before anything is timed
        if wait_isr_full(reader, name, 1, 3, 60.0) is None:
            raise LabError(f"bench topic {name} did not get 3 in-sync replicas within 60 s")
    return name


def _one_round(lab: Path, links: bool, reverse: bool = False) -> dict[str, Any]:
    from kafkalab.cluster import cluster_down, cluster_up
    from kafkalab.cluster.links import links_for, replication_delay
    from kafkalab.progress import noop

    d = cluster_up("kraft", 3, lab_dir=lab, base_port=BENCH_LINKS_BASE_PORT,
                   control_port=BENCH_LINKS_CONTROL_PORT, links=links, timeout_s=180)
    try:
        topic = _topic(d)
        for acks in ("all", "1"):  # the JVMs' and the clients' warm-up, unmeasured
            _publish_ms(d, topic, acks)
        arms: dict[str, Any] = {}
        linked = links_for(lab / "cluster.yaml") if links else None
        delays = (0.0, *DELAYS_MS) if links else (0.0,)
        # alternate rounds run the delays in reverse, so a drift over the round (a JVM still
        # warming, the page cache) weighs on every delay alike
        for delay in (reversed(delays) if reverse else delays):
            with (replication_delay(linked, delay, noop) if linked is not None
                  else contextlib.nullcontext()):
                for acks in ("all", "1"):
                    arms[f"{'links' if links else 'plain'}|{acks}|{delay:g}"] = _summary(
                        _publish_ms(d, topic, acks))
        solo = _solo_arms(linked, d, topic) if linked is not None else {}
        return {"links": links, "arms": arms, "solo": solo, "cluster": cluster_facts(d)}
    finally:
        cluster_down(lab, wipe_data=True)


def bench_links(work: Path, rounds: int = 4) -> dict[str, Any]:
    """Part (l): ``rounds`` alternating rounds of each arm; medians and ratios."""
    lab = work / "lab"
    lab.mkdir(parents=True, exist_ok=True)
    runs = [_one_round(lab, links, reverse=k % 2 == 1) for k in range(rounds)
            for links in (False, True)]
    keys = sorted({k for r in runs for k in r["arms"]})
    med = {k: {q: round(statistics.median(r["arms"][k][q] for r in runs if k in r["arms"]), 3)
               for q in ("p50_ms", "p99_ms")} for k in keys}
    proxies = {acks: round(med[f"links|{acks}|0"]["p50_ms"] / med[f"plain|{acks}|0"]["p50_ms"], 3)
               for acks in ("all", "1")}
    per_round_trip = {
        f"{delay:g}": round((med[f"links|all|{delay:g}"]["p50_ms"] - med["links|all|0"]["p50_ms"])
                            / (2 * delay), 3) for delay in DELAYS_MS}
    solo_keys = sorted({k for r in runs for k in r.get("solo") or {}})
    solo_med = {k: {q: round(statistics.median(r["solo"][k][q] for r in runs
                                               if k in (r.get("solo") or {})), 3)
                    for q in ("p50_ms", "p99_ms")} for k in solo_keys}
    d = f"{SOLO_DELAY_MS:g}"
    calibration = {
        "solo_over_shared_p50": round(solo_med["receipt|solo|0"]["p50_ms"]
                                      / solo_med["receipt|shared|0"]["p50_ms"], 3),
        "solo_added_p50_over_delay": round(
            (solo_med[f"receipt|solo|{d}"]["p50_ms"] - solo_med["receipt|solo|0"]["p50_ms"])
            / SOLO_DELAY_MS, 3),
        "shared_p50_with_solo_delayed_over_without": round(
            solo_med[f"receipt|shared|{d}"]["p50_ms"] / solo_med["receipt|shared|0"]["p50_ms"], 3),
    } if solo_med else {}
    return {"cluster": runs[0]["cluster"], "rounds": rounds, "records": RECORDS,
            "median": med, "links_over_plain_p50": proxies,
            "acks_all_added_p50_over_round_trip": per_round_trip,
            "solo_median": solo_med, "solo_calibration": calibration, "runs": runs}


def print_links(result: dict[str, Any]) -> None:
    """Part (l)'s lines."""
    m = result["median"]
    print(f"\n(l) degradable links: publish latency, 1 KB one at a time, RF 3 (median of "
          f"{result['rounds']} alternating rounds of {result['records']} records)")
    for key in sorted(m, key=lambda k: (k.split("|")[0], k.split("|")[1], float(k.split("|")[2]))):
        arm, acks, delay = key.split("|")
        print(f"  {arm:<6} acks={acks:<3} +{delay:>3} ms one way   p50 {m[key]['p50_ms']:7.2f} ms"
              f"   p99 {m[key]['p99_ms']:7.2f} ms")
    r = result["links_over_plain_p50"]
    print(f"  proxies' cost, links/plain p50: acks=all {r['all']:.2f}, acks=1 {r['1']:.2f}")
    for delay, ratio in result["acks_all_added_p50_over_round_trip"].items():
        print(f"  +{delay} ms one way: acks=all p50 added / round trip added = {ratio:.2f}")
    for key, m in sorted((result.get("solo_median") or {}).items()):
        _, arm, delay = key.split("|")
        print(f"  receipt, {arm:<6} consumer, solo +{delay:>3} ms   p50 {m['p50_ms']:7.2f} ms"
              f"   p99 {m['p99_ms']:7.2f} ms")
    c = result.get("solo_calibration") or {}
    if c:
        print(f"  solo plane: solo/shared p50 {c['solo_over_shared_p50']:.2f}; +{SOLO_DELAY_MS:g} ms "
              f"one way adds {c['solo_added_p50_over_delay']:.2f}× the delay to the solo "
              f"consumer's p50; the shared one's p50 ×{c['shared_p50_with_solo_delayed_over_without']:.2f}")
