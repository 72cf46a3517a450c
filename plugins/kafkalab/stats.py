"""Exact statistics over latency samples, honest about what they do not know.

* **Exact nearest-rank percentiles**: sort the n values, take the one at rank ``ceil(q·n)``
  (1-based), with ``q`` an exact fraction. No interpolation, no sketch: a reported p99 is a
  latency that was observed. The Spark jobs use this very module, so the CLI table and the
  history agree.
* **Minimum samples**: a percentile whose rank needs more values than were measured is
  undefined (``None``) with the reason ``n<100``: p99 of 20 messages would just be the
  maximum. :data:`MIN_SAMPLES` holds the rule (p99 needs 100, p99.9 needs 1,000).
* **Censoring**: a lost message (or one whose send failed) has no latency, but it is not
  fast either: it counts as "at least the timeout" (+inf) in the population, so losses
  push the percentiles up instead of vanishing from them (survivorship). When the rank lands
  on a censored value the percentile is undefined, reason ``censored``. Mean and max are over
  the received messages only.
* **Confidence intervals**: a distribution-free 95 % interval for a quantile from two order
  statistics, with ranks from the exact binomial distribution (:func:`quantile_ci_ranks`).

This file imports only the standard library (at module level and inside functions alike):
it ships to Spark nodes that lack the package as a lone ``--py-files`` file
(``kafkalab.spark.submit.spark_py_files``), where the Spark jobs import it as ``stats``
(``spark_jobs/_session.py``). Keep it so: no numpy, nothing from ``kafkalab``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

PERCENTILES: tuple[float, ...] = (0.5, 0.9, 0.95, 0.99, 0.999)
"""The percentiles summarised, as quantiles."""

PERCENTILE_FRACTIONS: dict[str, tuple[int, int]] = {
    "p50": (1, 2), "p90": (9, 10), "p95": (19, 20), "p99": (99, 100), "p999": (999, 1000),
}
"""The percentiles by name, as exact fractions (numerator, denominator)."""

MIN_SAMPLES: dict[str, int] = {"p50": 1, "p90": 10, "p95": 20, "p99": 100, "p999": 1000}
"""The fewest values (received + censored) for which each percentile is defined."""

CI_PERCENTILES: tuple[str, ...] = ("p50", "p99")
"""The percentiles that get a confidence interval."""

CI_CONFIDENCE = 0.95
"""Coverage of the confidence intervals."""

CENSORED = math.inf
"""The value a lost or failed message stands for in a population: at least the timeout."""


def nearest_rank(sorted_values: Sequence[float], q: float) -> float:
    """The exact nearest-rank ``q`` quantile (0 < q <= 1) of already sorted values."""
    if not sorted_values:
        raise ValueError("no values")
    if not 0 < q <= 1:
        raise ValueError(f"quantile {q} outside (0, 1]")
    rank = max(1, math.ceil(q * len(sorted_values) - 1e-9))
    return float(sorted_values[rank - 1])


def fraction_rank(n: int, num: int, den: int) -> int:
    """``ceil(n · num / den)`` in integers (at least 1): the nearest rank of an exact fraction."""
    return max(1, (n * num + den - 1) // den)


def _log_binom_pmf(k: int, n: int, q: float) -> float:
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            + k * math.log(q) + (n - k) * math.log1p(-q))


def quantile_ci_ranks(n: int, q: float, confidence: float = CI_CONFIDENCE
                      ) -> tuple[int | None, int | None]:
    """1-based ranks ``(lo, hi)`` of a distribution-free ``confidence`` interval for the
    ``q`` quantile of ``n`` values: ``P(x_(lo) <= ξ_q < x_(hi)) >= confidence``.

    With F the Binomial(n, q) CDF and α = 1 − confidence: ``lo = max{l >= 1 : F(l−1) <= α/2}``
    and ``hi = min{u <= n : F(u−1) >= 1 − α/2}``; either is None when no rank qualifies (too
    few values for that side). The binomial mass is summed over a window of ±(10 sd + 10)
    around ``n·q`` (the rest is below 1e-20), so the cost grows with sd, not with n.
    """
    if n <= 0 or not 0 < q < 1:
        return None, None
    alpha = 1.0 - confidence
    sd = math.sqrt(n * q * (1 - q))
    centre = int(n * q)
    lo_k = max(0, centre - int(10 * sd) - 10)
    hi_k = min(n, centre + int(10 * sd) + 10)
    cdf: dict[int, float] = {}
    total = 0.0
    for k in range(lo_k, hi_k + 1):
        total += math.exp(_log_binom_pmf(k, n, q))
        cdf[k] = total

    def F(k: int) -> float:
        if k < lo_k:
            return 0.0
        return cdf[min(k, hi_k)]

    lo = None
    for rank in range(min(n, hi_k + 1), 0, -1):
        if F(rank - 1) <= alpha / 2:
            lo = rank
            break
    hi = None
    for rank in range(max(1, lo_k), n + 1):
        if F(rank - 1) >= 1 - alpha / 2:
            hi = rank
            break
    return lo, hi


@dataclass(frozen=True)
class LatencySummary:
    """One latency population summarised, in milliseconds.

    ``count`` is the population (received + censored); ``received`` and ``censored`` split
    it. A percentile is None when undefined, and ``reasons`` says why (``{"p99": "n<100"}``).
    ``ci`` maps ``p50``/``p99`` to ``(low, high)`` (either None when undefined).
    """

    count: int
    received: int
    censored: int
    mean_ms: float | None
    p50_ms: float | None
    p90_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    p999_ms: float | None
    max_ms: float | None
    reasons: dict[str, str] = field(default_factory=dict)
    ci: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)

    @property
    def note(self) -> str | None:
        """The reasons as one line (``"p99: n<100; p999: n<1000"``), None when all defined."""
        if not self.reasons:
            return None
        return "; ".join(f"{k}: {v}" for k, v in self.reasons.items())


def percentile_or_reason(ordered: Sequence[float], name: str) -> tuple[float | None, str | None]:
    """The named percentile of a sorted population (censored values are +inf), or None
    and the reason it is undefined."""
    n = len(ordered)
    if n < MIN_SAMPLES[name]:
        return None, f"n<{MIN_SAMPLES[name]}"
    num, den = PERCENTILE_FRACTIONS[name]
    value = ordered[fraction_rank(n, num, den) - 1]
    if math.isinf(value):
        return None, "censored"
    return float(value), None


def summarize(values_ms: Sequence[float], censored: int = 0) -> LatencySummary | None:
    """Summarise received latencies plus ``censored`` lost/failed messages; None when the
    population is empty."""
    n = len(values_ms) + censored
    if n == 0:
        return None
    ordered = sorted(values_ms) + [CENSORED] * censored
    values: dict[str, float | None] = {}
    reasons: dict[str, str] = {}
    for name in PERCENTILE_FRACTIONS:
        values[name], reason = percentile_or_reason(ordered, name)
        if reason:
            reasons[name] = reason
    ci: dict[str, tuple[float | None, float | None]] = {}
    for name in CI_PERCENTILES:
        num, den = PERCENTILE_FRACTIONS[name]
        lo, hi = quantile_ci_ranks(n, num / den)

        def at(rank: int | None) -> float | None:
            if rank is None or math.isinf(ordered[rank - 1]):
                return None
            return float(ordered[rank - 1])

        ci[name] = (at(lo), at(hi))
    received = len(values_ms)
    return LatencySummary(
        count=n, received=received, censored=censored,
        mean_ms=math.fsum(values_ms) / received if received else None,
        p50_ms=values["p50"], p90_ms=values["p90"], p95_ms=values["p95"],
        p99_ms=values["p99"], p999_ms=values["p999"],
        max_ms=float(max(values_ms)) if received else None,
        reasons=reasons, ci=ci,
    )


def median_or_none(values: Sequence[float]) -> float | None:
    """The nearest-rank median of ``values``, None when there are none (first-message delays)."""
    return nearest_rank(sorted(values), 0.5) if values else None
