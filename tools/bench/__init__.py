"""``make bench`` (``python -m tools.bench``): the lab's speed checks, written to
``bench/results/bench-<utc>.json``.

(a) 1 KB messages: end-to-end p50/p99 of the ``confluent-kafka`` harness and of Kafka's own
    ``EndToEndLatency`` on the same topic of the embedded kafka09 cluster, and their ratio.
    Goal: harness p50 ≤ 1.2 × tool p50 (the harness must not be the bottleneck it measures).
    The tool prints whole, truncated milliseconds, so the mean (4 decimals) is compared too.
(b) 1/3/5/10 MB: end-to-end p50/p99 per scenario. Goal: confluent-kafka no slower than
    kafka-python at any payload.
(c) with ``--spark``: the Spark aggregation at 1 M and 10 M fake sample rows (rows/s, ratio
    to pandas on the same data).
(d) with ``--nightly``: one ``nightly_latency_regression`` run, wall time by task.

Modules: :mod:`tools.bench.latency` (a, b), :mod:`tools.bench.spark` (c),
:mod:`tools.bench.nightly` (d); the command line is ``__main__``.
Figures from one machine are noisy: read ratios from one run, not absolute times.
"""
