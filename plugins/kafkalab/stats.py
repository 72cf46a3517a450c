"""Exact statistics over latency samples.

Percentiles are exact nearest-rank: sort the n values, take the one at rank ``ceil(q * n)``
(1-based). No interpolation, no sketch: the reported p99 is a latency that was observed.
The Spark aggregation uses the same definition, so the CLI table and the history agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

PERCENTILES: tuple[float, ...] = (0.5, 0.9, 0.95, 0.99, 0.999)


def nearest_rank(sorted_values: Sequence[float], q: float) -> float:
    """The exact nearest-rank ``q`` quantile (0 < q <= 1) of already sorted values."""
    if not sorted_values:
        raise ValueError("no values")
    if not 0 < q <= 1:
        raise ValueError(f"quantile {q} outside (0, 1]")
    rank = max(1, math.ceil(q * len(sorted_values) - 1e-9))
    return float(sorted_values[rank - 1])


@dataclass(frozen=True)
class LatencySummary:
    """Count, mean, exact percentiles and max of one set of latencies, in milliseconds."""

    count: int
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float


def summarize(values_ms: Sequence[float]) -> LatencySummary | None:
    """Summarize latencies; None when there are none."""
    if not values_ms:
        return None
    ordered = sorted(values_ms)
    p = [nearest_rank(ordered, q) for q in PERCENTILES]
    return LatencySummary(
        count=len(ordered),
        mean_ms=math.fsum(ordered) / len(ordered),
        p50_ms=p[0],
        p90_ms=p[1],
        p95_ms=p[2],
        p99_ms=p[3],
        p999_ms=p[4],
        max_ms=ordered[-1],
    )
