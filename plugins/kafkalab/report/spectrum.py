"""Latency percentile spectra per cell, from the raw samples (HdrHistogram / OMB style).

For each latency cell of a run, latency against percentile (50, 90, 99, 99.9, 99.99 %) on
a "nines" axis (``-log10(1 - q)``: 50 % at 0.3, 90 % at 1, 99 % at 2 …, so the tail gets
the room), the run and up to :data:`MAX_RUNS` − 1 earlier runs of the same cell overlaid.

The population is the one the statistics use (``docs/metrics-schema.md``, "Statistics"):
the cell's ``message`` rows, warm-up excluded; received rows (``ok``, ``late``) give their
``e2e_latency_ms``, ``lost`` and ``error`` rows are censored (+∞). Percentiles are exact
nearest-rank; a percentile needs :data:`SPECTRUM_MIN_SAMPLES` values (p99 100, p99.9 1,000,
p99.99 10,000) and is omitted, with its reason, when the cell has fewer or its rank lands
on a lost message. Kafka's tool (``jvm-e2e``) has no per-message samples: its own printed
p50/p99/p99.9 (whole ms, warm-up included) are drawn as their own series, taken from the
aggregates (:func:`kafkalab.report.trends.tool_spectrum`), never from the raw
``tool_summary`` rows: the aggregation nulls them below their minimum sample count.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

from kafkalab.stats import CENSORED, fraction_rank
from kafkalab.store import LabData

log = logging.getLogger(__name__)

SPECTRUM_PERCENTILES: tuple[tuple[str, int, int], ...] = (
    ("p50", 1, 2), ("p90", 9, 10), ("p99", 99, 100), ("p99.9", 999, 1000),
    ("p99.99", 9999, 10000),
)
"""The spectrum's percentiles: (name, numerator, denominator)."""

SPECTRUM_MIN_SAMPLES: dict[str, int] = {"p50": 1, "p90": 10, "p99": 100, "p99.9": 1000,
                                        "p99.99": 10000}
"""The fewest values (received + censored) each percentile needs."""

MAX_RUNS = 6
"""Runs overlaid on one cell's spectrum: this one and the newest earlier ones."""

RECEIVED = ("ok", "late")
CENSORED_STATUSES = ("lost", "error")


def nines(num: int, den: int) -> float:
    """The x position of percentile ``num/den``: ``-log10(1 - num/den)``."""
    return -math.log10(1 - num / den)


@dataclass
class Spectrum:
    """One run's spectrum of one cell."""

    run_id: str
    points: dict[str, float] = field(default_factory=dict)
    """Percentile name -> latency ms (defined ones only)."""
    omitted: dict[str, str] = field(default_factory=dict)
    """Percentile name -> why it is not drawn (``n<1000``, ``censored``)."""
    received: int = 0
    lost: int = 0
    failed: int = 0
    emulator: bool = False

    @property
    def count(self) -> int:
        """The population: received + lost + failed."""
        return self.received + self.lost + self.failed


def spectrum_of(received_ms: list[float], lost: int = 0, failed: int = 0,
                run_id: str = "") -> Spectrum:
    """The spectrum of a population (pure): nearest-rank percentiles with lost and failed
    messages censored (+∞)."""
    sp = Spectrum(run_id=run_id, received=len(received_ms), lost=lost, failed=failed)
    ordered = sorted(received_ms) + [CENSORED] * (lost + failed)
    n = len(ordered)
    for name, num, den in SPECTRUM_PERCENTILES:
        need = SPECTRUM_MIN_SAMPLES[name]
        if n < need:
            sp.omitted[name] = f"n<{need:,}"
            continue
        value = ordered[fraction_rank(n, num, den) - 1]
        if math.isinf(value):
            sp.omitted[name] = "censored"
        else:
            sp.points[name] = float(value)
    return sp


def cell_files(lab: LabData, run_id: str, scenario: str, payload: str, profile: str
               ) -> list[Path]:
    """The samples files of one cell of ``run_id`` (any run date)."""
    name = lab.cell_file_name(scenario, payload, profile)
    return [f for f in lab.run_sample_files(run_id) if f.name == name]


def read_spectrum(lab: LabData, run_id: str, scenario: str, payload: str, profile: str
                  ) -> Spectrum | None:
    """One cell's spectrum from its samples files; None when it has no readable samples.

    Only ``message`` rows count; ``tool_summary`` rows are left to the aggregates."""
    import pyarrow.parquet as pq

    files = cell_files(lab, run_id, scenario, payload, profile)
    if not files:
        return None
    wanted = ("sample_kind", "is_warmup", "status", "e2e_latency_ms", "broker_is_emulator")
    received: list[float] = []
    lost = failed = 0
    emulator = False
    for f in files:
        try:
            cols = [c for c in wanted if c in pq.read_schema(f).names]
            rows = pq.read_table(f, columns=cols).to_pylist()
        except Exception as exc:  # an unreadable file must not break the report
            log.warning("samples %s unreadable (%s); left out of the spectrum", f, exc)
            continue
        for r in rows:
            emulator = emulator or bool(r.get("broker_is_emulator"))
            if r.get("sample_kind") != "message" or r.get("is_warmup"):
                continue
            status = r.get("status")
            if status in RECEIVED and r.get("e2e_latency_ms") is not None:
                received.append(float(r["e2e_latency_ms"]))
            elif status == "lost":
                lost += 1
            elif status == "error":
                failed += 1
    sp = spectrum_of(received, lost, failed, run_id)
    sp.emulator = emulator
    return sp


__all__ = ["MAX_RUNS", "SPECTRUM_MIN_SAMPLES", "SPECTRUM_PERCENTILES", "Spectrum",
           "cell_files", "nines", "read_spectrum", "spectrum_of"]
