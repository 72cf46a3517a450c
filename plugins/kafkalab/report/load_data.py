"""What a load run's page shows, read from ``aggregates/load/run_id=<id>/`` (through
:mod:`kafkalab.drift.load`), and the figures derived from it (pure): the knee of a
latency-vs-throughput curve, the label of a cell, the reason an undefined percentile is
undefined.

A load run's tables (schema: ``docs/aggregates-schema.md``, load section):
``load_cells`` (one row per cell), ``load_consumers`` (per cell and consumer),
``load_lag`` (per cell, consumer and lag sample). Missing tables give empty frames; the
page then says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from kafkalab.drift.load import normalize_load_cells, read_load_table
from kafkalab.stats import MIN_SAMPLES
from kafkalab.store import LabData
from kafkalab.values import as_float, is_missing

KNEE_FACTOR = 2.0
"""The knee of a latency-vs-throughput curve: the first target rate whose e2e p99 exceeds
``KNEE_FACTOR`` × the p99 of the lowest rate (the lowest rate with a defined p99)."""

CONFIG_COLUMNS: tuple[str, ...] = ("client", "payload", "profile", "partitions", "consumer_mode",
                                   "pause_at_s", "pause_for_s", "cluster_flavor", "txn_msgs",
                                   "txn_abort_every", "link_delay_ms", "client_link_delay_ms",
                                   "fetch_from_follower", "thin_consumer", "thin_link_kbps",
                                   "thin_link_delay_ms")
"""What stays fixed inside one fan-out figure: a run that varies any of these gets one set
of figures per combination."""


@dataclass
class LoadTables:
    """A load run's aggregates: its cells (normalized: ``acks`` as text, series columns
    present), consumers and lag samples."""

    cells: pd.DataFrame = field(default_factory=pd.DataFrame)
    consumers: pd.DataFrame = field(default_factory=pd.DataFrame)
    lag: pd.DataFrame = field(default_factory=pd.DataFrame)


def read_load_tables(lab: LabData, run_id: str) -> LoadTables:
    """The three tables of a load run (empty frames for those absent or unreadable)."""
    cells = read_load_table(lab, run_id, "load_cells")
    return LoadTables(cells=normalize_load_cells(cells) if not cells.empty else cells,
                      consumers=read_load_table(lab, run_id, "load_consumers"),
                      lag=read_load_table(lab, run_id, "load_lag"))


def knee_index(rates: list[float], p99s: list[float | None],
               factor: float = KNEE_FACTOR) -> int | None:
    """The index of the knee in points sorted by target rate: the first whose p99 exceeds
    ``factor`` × the p99 of the lowest rate that has one; None when there is none (or fewer
    than two defined p99s)."""
    order = sorted(range(len(rates)), key=lambda i: rates[i])
    defined = [i for i in order if p99s[i] is not None]
    if len(defined) < 2:
        return None
    base = p99s[defined[0]]
    assert base is not None
    for i in defined[1:]:
        value = p99s[i]
        if value is not None and value > factor * base:
            return i
    return None


def percentile_reason(row: Any, key: str) -> str | None:
    """Why percentile ``key`` (``e2e_p99_ms``) of a cell or consumer row is null: its
    ``<key>_reason`` column; else, when the population is known to be below the percentile's
    minimum sample count, ``n<100`` / ``n<1000``; else None."""
    reason = row.get(f"{key}_reason") if hasattr(row, "get") else None
    if not is_missing(reason) and str(reason):
        return str(reason)
    name = next((n for n in ("p999", "p99", "p95", "p90", "p50") if f"_{n}_" in f"_{key}"), None)
    if name is None:
        return None
    expected = as_float(row.get("expected_msgs")) if hasattr(row, "get") else None
    consumers = as_float(row.get("consumers")) if hasattr(row, "get") else None
    population = None if expected is None else expected * (consumers or 1.0)
    if key.startswith(("publish_delay", "ack_latency")) and hasattr(row, "get"):
        population = as_float(row.get("intended_msgs"))
    if population is not None and population < MIN_SAMPLES[name]:
        return f"n<{MIN_SAMPLES[name]}"
    return None


def cell_label(row: Any, with_rate: bool = True) -> str:
    """A short name for a cell: ``5 consumers × 200 msg/s, acks 1`` (``acks`` when known)."""
    consumers = as_float(row.get("consumers"))
    rate = as_float(row.get("rate_msgs_per_s"))
    bits = []
    if consumers is not None:
        bits.append(f"{int(consumers)} consumer{'s' if consumers != 1 else ''}")
    if with_rate and rate is not None:
        bits.append(f"{rate:g} msg/s")
    label = " × ".join(bits) or str(row.get("cell_id") or "cell")
    acks = row.get("acks")
    return label + (f", acks {acks}" if not is_missing(acks) and acks != "" else "")


__all__ = [
    "CONFIG_COLUMNS",
    "KNEE_FACTOR",
    "LoadTables",
    "cell_label",
    "knee_index",
    "percentile_reason",
    "read_load_tables",
]
