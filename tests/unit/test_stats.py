"""Exact nearest-rank percentiles."""

from __future__ import annotations

import random

import pytest

from kafkalab.stats import nearest_rank, summarize


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
    assert s is not None and s.p50_ms == s.p99_ms == s.max_ms == 3.0 and s.count == 1
    assert summarize([]) is None
    with pytest.raises(ValueError):
        nearest_rank([1.0], 0)
