"""A busy host is not a regression: the per-cell host figures and the busy rule (pure but
:func:`cell_host_frame`'s reading of already loaded manifests).

Each latency cell's fragment, and so the manifest's ``cells[]``, carries ``host``: how busy
the machine was while the cell measured (:mod:`kafkalab.host`). :func:`cell_host_frame`
turns the manifests' cells into :data:`HOST_COLUMNS` per (run, scenario, payload, profile),
which :func:`kafkalab.drift.history.load_history` joins to the aggregates, so drift,
``kafkalab compare`` and the report read them beside the latencies. :func:`busy_reason`
applies the drift config's :class:`~kafkalab.drift.config.BusyHostRule`: a cell reaching
any limit is *busy* (kept out of baselines, not judged). Cells measured before the figures
existed have none and are never busy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from kafkalab.drift.config import BusyHostRule
from kafkalab.values import as_float

HOST_COLUMNS: tuple[str, ...] = (
    "host_other_cpu_pct", "host_cpu_pct", "lab_cpu_pct", "steal_pct", "run_queue_avg",
    "host_window_s", "cpu_count",
)
"""The host figures of a cell (the keys of the manifest's ``cells[].host``)."""

CELL_KEY: tuple[str, ...] = ("run_id", "scenario", "payload", "profile")
"""What joins a manifest cell to its aggregate row."""

BUSY_VERDICT = "busy_host"
"""The drift verdict of a series measured on a busy host (never a drift, never a baseline)."""


def cell_host_frame(manifests: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per manifest cell that has host figures: :data:`CELL_KEY` + :data:`HOST_COLUMNS`
    (floats; missing figures null). Empty (those columns) when no cell has any."""
    rows = []
    for rid, m in manifests.items():
        for cell in m.get("cells") or []:
            host = cell.get("host") if isinstance(cell, Mapping) else None
            if not isinstance(host, Mapping):
                continue
            rows.append({"run_id": str(rid), "scenario": cell.get("scenario"),
                         "payload": cell.get("payload"), "profile": cell.get("profile"),
                         **{c: as_float(host.get(c)) for c in HOST_COLUMNS}})
    df = pd.DataFrame(rows, columns=[*CELL_KEY, *HOST_COLUMNS])
    for c in HOST_COLUMNS:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    return df.drop_duplicates(subset=list(CELL_KEY), keep="last")


def join_host(history: pd.DataFrame, manifests: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """``history`` (latency aggregates with ``run_id``) with the :data:`HOST_COLUMNS` of each
    row's cell (null when its manifest cell has none); columns of the same names already in
    ``history`` are replaced."""
    df = history.drop(columns=[c for c in HOST_COLUMNS if c in history.columns])
    if df.empty or not set(CELL_KEY) <= set(df.columns):
        for c in HOST_COLUMNS:
            df[c] = pd.Series(dtype="float64", index=df.index)
        return df
    host = cell_host_frame(manifests)
    keys = df[list(CELL_KEY)].astype(str)
    joined = keys.merge(host.astype({k: str for k in CELL_KEY}), on=list(CELL_KEY), how="left")
    for c in HOST_COLUMNS:
        df[c] = joined[c].to_numpy(dtype="float64")
    return df


def _limit(value: Any, limit: float | None) -> bool:
    v = as_float(value)
    return limit is not None and v is not None and v >= limit


def busy_reason(row: Mapping[str, Any], rule: BusyHostRule) -> str | None:
    """Why the cell of ``row`` (its :data:`HOST_COLUMNS`) was measured on a busy host, in
    words (``other processes used 62 % of the CPU (limit 30 %)``); None when it was not,
    when the rule is disabled, or when the cell has no figures."""
    if not rule.enabled:
        return None
    why: list[str] = []
    if _limit(row.get("host_other_cpu_pct"), rule.max_other_cpu_pct):
        why.append(f"other processes used {as_float(row.get('host_other_cpu_pct')):.0f} % of "
                   f"the CPU (limit {rule.max_other_cpu_pct:g} %)")
    if _limit(row.get("steal_pct"), rule.max_steal_pct):
        why.append(f"steal {as_float(row.get('steal_pct')):.1f} % (limit {rule.max_steal_pct:g} %)")
    cpus = as_float(row.get("cpu_count")) or 1.0
    queue = as_float(row.get("run_queue_avg"))
    if queue is not None and _limit(queue / cpus, rule.max_run_queue_per_cpu):
        why.append(f"run queue {queue:.1f} on {cpus:.0f} core(s) (limit "
                   f"{rule.max_run_queue_per_cpu:g} per core)")
    return "; ".join(why) or None


def host_text(row: Mapping[str, Any]) -> str | None:
    """The cell's host figures in a few words (``other 62 % CPU, run queue 2.5, steal 0.0
    %``); None when it has none."""
    other = as_float(row.get("host_other_cpu_pct"))
    if other is None:
        return None
    parts = [f"other {other:.0f} % CPU"]
    queue, steal = as_float(row.get("run_queue_avg")), as_float(row.get("steal_pct"))
    if queue is not None:
        parts.append(f"run queue {queue:.1f}")
    if steal is not None:
        parts.append(f"steal {steal:.1f} %")
    return ", ".join(parts)


def busy_rows(rows: pd.DataFrame, rule: BusyHostRule) -> pd.Series:
    """Per row of ``rows`` (any table with :data:`HOST_COLUMNS`), its :func:`busy_reason`
    (None when not busy), indexed like ``rows``."""
    if rows.empty or "host_other_cpu_pct" not in rows.columns:
        return pd.Series([None] * len(rows), index=rows.index, dtype="object")
    return pd.Series([busy_reason(r, rule) for r in rows.to_dict(orient="records")],
                     index=rows.index, dtype="object")


__all__ = [
    "BUSY_VERDICT",
    "CELL_KEY",
    "HOST_COLUMNS",
    "busy_reason",
    "busy_rows",
    "cell_host_frame",
    "host_text",
    "join_host",
]
