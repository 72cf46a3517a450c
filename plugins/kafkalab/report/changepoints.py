"""Change points over a series' whole history (offline, for the report's trend charts).

The nightly drift verdict (:mod:`kafkalab.drift.detect`) asks "is tonight unlike the recent
good nights?". A change point asks the other question an on-call engineer has: "since when
is it slower?": where in the whole history the level of a series moved and stayed.

Method (``ruptures`` 1.1.10; Apache Otava 0.8 would be the first choice but pins numpy 2.2
and cannot install beside the stack):

* the values of one series in run order (undefined runs left out) are standardised by a
  robust noise estimate from successive differences,
  ``sigma = 1.4826 · median(|x[i+1] − x[i]|) / √2`` (a level step moves one difference, not
  the median), floored at :data:`MIN_SIGMA_FRACTION` of the series' median so that changes
  smaller than that are never change points;
* PELT (``ruptures.Pelt``, model ``l2``, ``min_size`` 2, ``jump`` 1) with penalty
  :data:`PENALTY_PER_LOG_N` ``· ln(n)`` on the standardised values (BIC's 2·ln n per
  change, made stricter: a change must explain more than 5·ln n units of noise variance);
* each boundary is then moved to the least-squares split between its neighbours and kept
  only with at least :data:`MIN_SEGMENT` runs on each side (a step on the newest night is
  the drift verdict's, not yet a level);
* series with fewer than :data:`MIN_POINTS` defined values get none.

Pure (no I/O); ``ruptures`` is imported when called.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

MIN_POINTS = 5
"""The fewest defined values a series needs before change points are looked for."""

PENALTY_PER_LOG_N = 5.0
"""PELT's penalty is ``PENALTY_PER_LOG_N · ln(n)`` on robustly standardised values."""

MIN_SIGMA_FRACTION = 0.01
"""The noise estimate is at least this fraction of the series' median (1 %): a perfectly
quiet series does not turn every wiggle into a change point."""

MIN_SEGMENT = 2
"""The fewest runs on each side of a change point."""

METHOD = (f"PELT (ruptures, l2, min_size {MIN_SEGMENT}) with penalty "
          f"{PENALTY_PER_LOG_N:g}·ln n on values standardised by a robust noise estimate; "
          f"at least {MIN_POINTS} runs")
"""One line naming the method, shown under the charts."""


@dataclass(frozen=True)
class ChangePoint:
    """A level change: ``index`` is the first point of the new level (in the input order)."""

    index: int
    before: float
    """Median of the segment before."""
    after: float
    """Median of the segment from ``index`` on."""

    @property
    def change_pct(self) -> float | None:
        """``(after − before) / |before|`` in percent; None when ``before`` is 0."""
        return None if self.before == 0 else (self.after - self.before) / abs(self.before) * 100


def _median(values: Sequence[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def noise_sigma(values: Sequence[float]) -> float:
    """The robust noise estimate the values are standardised by (see the module doc)."""
    diffs = [abs(b - a) for a, b in itertools.pairwise(values)]
    sigma = 1.4826 * _median(diffs) / math.sqrt(2) if diffs else 0.0
    floor = MIN_SIGMA_FRACTION * abs(_median(values)) if values else 0.0
    return max(sigma, floor, 1e-12)


def _sse(xs: Sequence[float]) -> float:
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs)


def _refined(bounds: list[int], xs: Sequence[float]) -> list[int]:
    """Each boundary moved to where it best splits the points between its neighbours
    (least squares, any split), then dropped when a side is shorter than
    :data:`MIN_SEGMENT`: PELT's ``min_size`` would otherwise put a step on the newest run
    one run early (that run is the drift check's to judge, not yet a level)."""
    out: list[int] = []
    for k, b in enumerate(bounds):
        a = out[-1] if out else 0
        c = bounds[k + 1] if k + 1 < len(bounds) else len(xs)
        best = min(range(a + 1, c), key=lambda j: _sse(xs[a:j]) + _sse(xs[j:c]), default=b)
        if best - a >= MIN_SEGMENT and c - best >= MIN_SEGMENT:
            out.append(best)
    return out


CACHE_SERIES = 4096
"""How many distinct series :func:`change_points` remembers: a nightly build draws each
series on the run's page and again on the overview's mirror of it."""


def change_points(values: Sequence[float | None]) -> list[ChangePoint]:
    """The change points of one series (``None`` = undefined in that run, skipped); each
    :attr:`ChangePoint.index` is an index into ``values``. Pure: a series seen before is
    answered from memory (:data:`CACHE_SERIES`)."""
    return list(_change_points(tuple(values)))


def clear_cache() -> None:
    """Forget the series :func:`change_points` remembers (a bench times a cold build)."""
    _change_points.cache_clear()


@functools.lru_cache(maxsize=CACHE_SERIES)
def _change_points(values: tuple[float | None, ...]) -> tuple[ChangePoint, ...]:
    idx = [i for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    xs = [float(values[i]) for i in idx]  # type: ignore[arg-type]
    if len(xs) < MIN_POINTS:
        return ()
    import numpy as np
    import ruptures as rpt

    sigma = noise_sigma(xs)
    centre = _median(xs)
    signal = np.array([(x - centre) / sigma for x in xs], dtype="float64").reshape(-1, 1)
    algo = rpt.Pelt(model="l2", min_size=MIN_SEGMENT, jump=1).fit(signal)
    ends = algo.predict(pen=PENALTY_PER_LOG_N * math.log(len(xs)))
    bounds = _refined([e for e in ends if e < len(xs)], xs)
    out: list[ChangePoint] = []
    start = 0
    for k, b in enumerate(bounds):
        nxt = bounds[k + 1] if k + 1 < len(bounds) else len(xs)
        out.append(ChangePoint(index=idx[b], before=_median(xs[start:b]),
                               after=_median(xs[b:nxt])))
        start = b
    return tuple(out)


__all__ = ["CACHE_SERIES", "METHOD", "MIN_POINTS", "PENALTY_PER_LOG_N", "ChangePoint", "change_points",
           "clear_cache",
           "noise_sigma"]
