"""``make bench`` (``python -m tools.bench``): the lab's speed checks, written to
``bench/results/bench-<utc>.json``.

(a) instrument overhead: the lab's ``confluent-kafka`` cell against a minimal produce→poll
    loop on the same broker, topic, bytes and latency-profile settings, at 1 KB and at seed
    000's base64 1 MB image, in alternating A/B rounds. Goal: lab p50 ≤ 1.1 × minimal p50.
(b) 1 KB: the serial-mode harness (``confluent-kafka-serial``: ack, then poll) beside Kafka's
    own ``EndToEndLatency`` on the same topic of the embedded cluster, with the
    overlapped harness and kafka-python for reference. The tool prints whole, truncated
    milliseconds and a mean with 4 decimals: the means are compared (goal: serial mean
    ≤ 1.2 × tool mean).
(c) 1/3/5/10 MB: end-to-end p50/p99 per scenario. Goal: confluent-kafka no slower than
    kafka-python at any payload.
(d) with ``--spark``: the Spark aggregation at 1 M and 10 M fake sample rows (``--spark-rows``)
    against the same aggregation in pandas/numpy (each population sorted once) on the same
    data: rows/s, time ratio, JVM start-up apart, pandas' peak RSS, results equal cell by
    cell. Goals (issue 13): ≥ 1 M rows/s and ≤ 1.5× pandas' time at 10 M rows, 100 M rows
    in ≤ 12× the 10 M time; each printed met or missed by how much.
(e) with ``--nightly``: one ``nightly_latency_regression`` run, wall time by task, on the
    embedded cluster of ``<lab_dir>/cluster.yaml``; with no descriptor there, or brokers
    that do not answer, the part is refused in one line before the DAG starts (exit 1).
(f) with ``--load``: the load engine is not the bottleneck. On its own embedded cluster (ports
    25781/31792), 1 KB raw, acks=1, linger 5 ms: producer max rate of the harness against a
    bare confluent-kafka produce loop (goal ≥ 0.8×) with Kafka's ProducerPerformance beside
    them; consumer throughput against a bare consume loop and ConsumerPerformance; fan-out
    deliveries per second per client core for N = 1, 5, 10 consumers in one process.
(g) with ``--faults``: seed 002 on a 3-node fault cluster of its own (ports 32492/26981): a consumer group's
    rebalance pause, redeliveries and losses per client × kill/leave × commit strategy, and
    reordering under a leader failover with max.in.flight 1 vs 5 (:mod:`tools.bench.faults`).
(h) with ``--report``: what the report's on-call features cost as the history grows, on
    fabricated nights (10 cells × ~400 samples, written with the project's writers; no Kafka,
    no Spark) of 7, 30 and 90 nights (``--report-nights``): the nightly's report build (newest
    page + overview), the whole report (every page; up to ``--report-all-pages-max`` nights),
    the spectra and change points apart, the Prometheus export and the newest night's drift
    judgement; median and min of 3, seconds per night, HTML sizes, and per timing the growth
    from the smallest history to the largest (per-night ratio 1 = linear)
    (:mod:`tools.bench.report`).

(i) with ``--connect``: one night's Spark work (a demo night's size, aggregated and validated
    in one session by ``kafkalab aggregate``, a fresh process each time) through spark-submit
    against the same through a warm Spark Connect server, alternating rounds; the server's
    start and its cold first job apart; aggregates compared (:mod:`tools.bench.connect`).
(j) with ``--nodes``: a 3-node KRaft cluster's start (wall time, each node's CPU seconds)
    without and with the nodes' class-data archive, alternating rounds, on ports of its own
    (:mod:`tools.bench.nodes`).
(k) with ``--demo``: ``make demo`` twice in a data dir of its own, by phase (cluster, seed
    000's measurement and aggregation, each night), against issue 25's budget
    (:mod:`tools.bench.demo`).

(l) with ``--links``: degradable links on a 3-node KRaft cluster of its own (ports 31392/25392):
    publish latency without and with the proxies (their cost), and with every replication link
    delayed 1 and 5 ms one way (acks=all's added p50 over the added round trip)
    (:mod:`tools.bench.links`).
(m) with ``--canary``: ``kafkalab canary`` on a 3-node KRaft cluster of its own (ports
    31492/25492) against a minimal loop on the same schedule and cluster (p50/p99 ratio: the
    harness's own cost), its CPU per record, and the busy-host mark's cost per cell
    (:mod:`tools.bench.canary`).

``--only PARTS`` (kafka, load, spark, nightly, faults, report, connect, nodes, demo, links,
canary) runs just
those, e.g. ``python -m tools.bench --only load``.

Every part that measures a broker names it (``cluster``: flavor, Kafka version, brokers;
part (k): the demo's own ``Kafka <version>`` line), and the result file is written again after
each part (its keys: ``tools.bench.__main__``).

Modules: :mod:`tools.bench.overhead` (a), :mod:`tools.bench.latency` (b, c),
:mod:`tools.bench.spark` (d), :mod:`tools.bench.nightly` (e), :mod:`tools.bench.load` (f),
:mod:`tools.bench.faults` (g), :mod:`tools.bench.report` (h), :mod:`tools.bench.connect` (i),
:mod:`tools.bench.nodes` (j), :mod:`tools.bench.demo` (k), :mod:`tools.bench.links` (l),
:mod:`tools.bench.canary` (m); the
command line is ``__main__``.
Figures from one machine are noisy: read ratios from one run, not absolute times.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkalab.cluster.descriptor import ClusterDescriptor


def cluster_facts(descriptor: ClusterDescriptor) -> dict[str, Any]:
    """What a part's figures were measured on: ``{"flavor", "version", "brokers"}`` of the
    cluster (every bench figure names its broker and version)."""
    return {"flavor": descriptor.flavor, "version": descriptor.version,
            "brokers": descriptor.broker_count}
