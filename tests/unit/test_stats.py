"""Exact nearest-rank percentiles."""

from __future__ import annotations

import random

import pytest

from kafkalab.stats import MIN_SAMPLES, nearest_rank, quantile_ci_ranks, summarize


def test_nearest_rank_on_1_to_100() -> None:
    values = list(range(1, 101))
    assert nearest_rank(values, 0.5) == 50
    assert nearest_rank(values, 0.95) == 95
    assert nearest_rank(values, 0.99) == 99
    assert nearest_rank(values, 0.999) == 100
    assert nearest_rank(values, 1.0) == 100


def test_percentile_is_an_observed_value() -> None:
    rng = random.Random(7)
    values = [rng.lognormvariate(0, 1) for _ in range(1001)]
    s = summarize(values)
    assert s is not None
    for v in (s.p50_ms, s.p90_ms, s.p95_ms, s.p99_ms, s.p999_ms):
        assert v in values
    assert s.p50_ms <= s.p90_ms <= s.p95_ms <= s.p99_ms <= s.p999_ms <= s.max_ms
    assert s.p50_ms == sorted(values)[500]


def test_small_samples() -> None:
    s = summarize([3.0])
    assert s is not None and s.p50_ms == s.max_ms == 3.0 and s.count == 1
    assert s.p99_ms is None and s.reasons["p99"] == "n<100"
    assert summarize([]) is None


def test_a_percentile_needs_enough_samples() -> None:
    """p99 of 20 messages would just be the maximum: it is undefined, with the reason."""
    s = summarize([float(i) for i in range(1, 21)])
    assert s is not None
    assert (s.p50_ms, s.p90_ms, s.p95_ms) == (10.0, 18.0, 19.0)
    assert s.p99_ms is None and s.p999_ms is None
    assert s.note == "p99: n<100; p999: n<1000"
    hundred = summarize([float(i) for i in range(1, 101)])
    assert hundred is not None and hundred.p99_ms == 99.0 and hundred.reasons == {"p999": "n<1000"}
    assert MIN_SAMPLES == {"p50": 1, "p90": 10, "p95": 20, "p99": 100, "p999": 1000}


def test_lost_messages_are_censored_not_dropped() -> None:
    """98 received at 1..98 ms and 2 lost: the lost ones sit above everything received."""
    received = [float(i) for i in range(1, 99)]
    s = summarize(received, censored=2)
    assert s is not None and s.count == 100 and s.received == 98 and s.censored == 2
    assert s.p50_ms == 50.0                                  # rank 50 of 100, not of 98
    assert s.p99_ms is None and s.reasons["p99"] == "censored"   # rank 99 is a lost message
    assert s.max_ms == 98.0 and s.mean_ms == sum(received) / 98  # over the received only
    survivors = summarize(received)
    assert survivors is not None and survivors.p95_ms == 94.0 and s.p95_ms == 95.0


def test_everything_lost_has_no_percentile_but_a_population() -> None:
    s = summarize([], censored=5)
    assert s is not None and s.count == 5 and s.p50_ms is None and s.reasons["p50"] == "censored"
    assert s.mean_ms is None and s.max_ms is None


@pytest.mark.parametrize(("n", "q", "ranks"), [
    (20, 0.5, (6, 15)), (100, 0.5, (40, 61)), (5, 0.5, (None, None)), (100, 0.99, (97, None)),
    (1000, 0.99, (983, 997)),
])
def test_confidence_interval_ranks_match_the_binomial_tables(
        n: int, q: float, ranks: tuple[int | None, int | None]) -> None:
    assert quantile_ci_ranks(n, q) == ranks


def test_confidence_interval_covers_the_quantile_at_least_95_percent() -> None:
    """Exact coverage from the binomial: P(lo <= X <= hi - 1) >= 0.95, X ~ Bin(n, q)."""
    from math import comb

    for n, q in ((10, 0.5), (37, 0.5), (100, 0.9), (250, 0.9), (2000, 0.99)):
        lo, hi = quantile_ci_ranks(n, q)
        assert lo is not None and hi is not None and 1 <= lo < hi <= n
        cover = sum(comb(n, k) * q**k * (1 - q) ** (n - k) for k in range(lo, hi))
        assert cover >= 0.95


def test_summary_carries_the_intervals() -> None:
    s = summarize([float(i) for i in range(1, 101)])
    assert s is not None and s.ci["p50"] == (40.0, 61.0) and s.ci["p99"] == (97.0, None)


def test_large_n_interval_is_cheap_and_centred() -> None:
    lo, hi = quantile_ci_ranks(100_000_000, 0.5)
    assert lo is not None and hi is not None and lo < 50_000_000 < hi and hi - lo < 30_000
    with pytest.raises(ValueError):
        nearest_rank([1.0], 0)
