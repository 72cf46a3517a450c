"""Deciding what to announce: new drifts, worsened drifts and recoveries (pure).

The decision table is documented in ``docs/drift-and-alerts.md`` ("De-duplication").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from kafkalab.alerts.state import STATE_SCHEMA
from kafkalab.drift import records_to_dicts
from kafkalab.values import as_float

DEFAULT_WORSEN_MARGIN_PCT = 10.0
"""Percentage points a drifting series must worsen by to be announced again."""


def badness(rec: Mapping[str, Any]) -> float | None:
    """Change in percent, signed so that positive means worse (None when undefined)."""
    c = as_float(rec.get("change_pct"))
    if c is None:
        return None
    return -c if rec.get("direction") == "lower_is_worse" else c


def worsened(rec: Mapping[str, Any], prev: Mapping[str, Any], margin_pct: float) -> bool:
    """Whether drift record ``rec`` is worse than the announced ``prev`` by ``margin_pct``.

    Compares :func:`badness` in percentage points; when either change is undefined (zero
    baseline), compares the latest values, in percent of the announced one (from an
    announced 0, any move in the bad direction is worse).
    """
    new_b, old_b = badness(rec), badness(prev)
    if new_b is not None and old_b is not None:
        return new_b >= old_b + margin_pct
    new_v, old_v = as_float(rec.get("latest_value")), as_float(prev.get("latest_value"))
    if new_v is None or old_v is None:
        return False
    sign = -1.0 if rec.get("direction") == "lower_is_worse" else 1.0
    if old_v == 0:
        return sign * new_v > 0
    return sign * (new_v - old_v) / abs(old_v) * 100.0 >= margin_pct


def _records(drift_records: pd.DataFrame | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(drift_records, pd.DataFrame):
        return records_to_dicts(drift_records)
    return [dict(r) for r in drift_records]


def _announced(rec: Mapping[str, Any], prev: Mapping[str, Any] | None) -> dict[str, Any]:
    """The state entry of a series announced with drift record ``rec``."""
    return {
        "run_id": rec.get("run_id"),
        "first_run_id": (prev or {}).get("first_run_id") or rec.get("run_id"),
        "metric": rec.get("metric"),
        "direction": rec.get("direction"),
        "baseline_value": as_float(rec.get("baseline_value")),
        "latest_value": as_float(rec.get("latest_value")),
        "change_pct": as_float(rec.get("change_pct")),
        "broker_is_emulator": bool(rec.get("broker_is_emulator") or False),
    }


def plan_alerts(
    drift_records: pd.DataFrame | Iterable[Mapping[str, Any]],
    state: Mapping[str, Any],
    worsen_margin_pct: float = DEFAULT_WORSEN_MARGIN_PCT,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """Decide what to announce (pure).

    * a drifting series not in ``state`` is announced and recorded;
    * a drifting series already in ``state`` is announced again only when it worsened: its
      change (positive = worse) grew by at least ``worsen_margin_pct`` percentage points
      (``worsened: true`` in the record); the state then keeps the new values;
    * a series in ``state`` whose record says ``alert_status: recovered`` (the last of
      ``recovery_runs`` consecutive good runs, :mod:`kafkalab.drift.episodes`) is announced
      once as a recovery and removed from the state;
    * a series in ``state`` whose record says ``clear`` (its new level was accepted) leaves
      the state without an announcement;
    * anything else (``alerting``: fewer good runs than needed yet; ``undefined``,
      ``insufficient_history``; a record without ``alert_status``; no record) leaves the
      state alone.

    Returns:
        ``(to_alert, recoveries, new_state)``.
    """
    old_series: dict[str, Any] = dict((state or {}).get("series") or {})
    new_series: dict[str, Any] = {k: dict(v) for k, v in old_series.items()}
    to_alert: list[dict[str, Any]] = []
    recoveries: list[dict[str, Any]] = []
    for rec in _records(drift_records):
        key = str(rec.get("series_key") or "")
        if not key:
            continue
        prev = old_series.get(key)
        if bool(rec.get("is_drift")):
            if prev is None:
                rec = {**rec, "worsened": False}
            elif worsened(rec, prev, worsen_margin_pct):
                rec = {**rec, "worsened": True}
            else:
                continue
            to_alert.append(rec)
            new_series[key] = _announced(rec, prev)
        elif prev is not None and rec.get("alert_status") == "recovered":
            recoveries.append({**rec, "alerted_run_id": prev.get("run_id")})
            new_series.pop(key, None)
        elif prev is not None and rec.get("alert_status") == "clear":
            new_series.pop(key, None)
    new_state = {**dict(state or {}), "schema": STATE_SCHEMA, "series": new_series}
    return to_alert, recoveries, new_state


__all__ = ["DEFAULT_WORSEN_MARGIN_PCT", "badness", "plan_alerts", "worsened"]
