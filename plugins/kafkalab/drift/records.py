"""The drift record table: its columns, their types, and its plain-dict form.

One record per (series of the judged run, broker kind); the column meanings are documented
in ``docs/drift-and-alerts.md``. :func:`coerce_records` gives any frame of records the
stored column order and dtypes, so that a computed table, a stored file and an empty
result all have the same schema.
"""

from __future__ import annotations

from typing import Any, Literal

import pandas as pd

from kafkalab.values import is_missing, jsonable

DRIFT_COLUMNS: tuple[str, ...] = (
    "run_id",
    "series_key",
    "scenario",
    "client",
    "payload",
    "profile",
    "metric",
    "direction",
    "baseline_value",
    "baseline_mad",
    "baseline_runs",
    "latest_value",
    "change_pct",
    "robust_z",
    "confidence",
    "is_drift",
    "verdict",
    "broker_is_emulator",
)
"""Columns of a drift record, in order."""

Verdict = Literal["drift", "ok", "insufficient_history", "improved"]
"""The judgement of one series."""

_FLOAT_COLUMNS = ("baseline_value", "baseline_mad", "latest_value", "change_pct", "robust_z",
                  "confidence")
_BOOL_COLUMNS = ("is_drift", "broker_is_emulator")
_STRING_COLUMNS = ("run_id", "series_key", "scenario", "client", "payload", "profile",
                   "metric", "direction", "verdict")


def coerce_records(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with exactly :data:`DRIFT_COLUMNS`, in order, with their stored dtypes.

    Columns ``df`` lacks are added as nulls; other columns are dropped. Floats are float64,
    ``baseline_runs`` int64 (null -> 0), flags bool, text pandas ``string``. Modifies ``df``.
    """
    for c in DRIFT_COLUMNS:
        if c not in df.columns:
            df[c] = None
    for c in _FLOAT_COLUMNS:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    df["baseline_runs"] = pd.to_numeric(df["baseline_runs"], errors="coerce").fillna(0)
    df["baseline_runs"] = df["baseline_runs"].astype("int64")
    for c in _BOOL_COLUMNS:
        df[c] = df[c].astype(bool)
    for c in _STRING_COLUMNS:
        df[c] = df[c].astype("string")
    return df[list(DRIFT_COLUMNS)].reset_index(drop=True)


def empty_records() -> pd.DataFrame:
    """A table of no drift records, with the stored schema."""
    return coerce_records(pd.DataFrame({c: pd.Series(dtype="object") for c in DRIFT_COLUMNS}))


def records_to_dicts(records: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Drift records as JSON-safe dicts (NaN/NA -> None, numpy scalars -> Python)."""
    if records is None or records.empty:
        return []
    return [
        {str(k): None if is_missing(v) else jsonable(v) for k, v in row.items()}
        for row in records.to_dict(orient="records")
    ]


__all__ = ["DRIFT_COLUMNS", "Verdict", "coerce_records", "empty_records", "records_to_dicts"]
