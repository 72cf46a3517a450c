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

SERIES_COLUMNS: tuple[str, ...] = (
    "scenario", "client", "payload", "payload_encoding", "payload_bytes", "profile",
    "workload", "cluster_flavor", "broker_version", "broker_count", "planned_messages",
)
"""Aggregate columns that, with the metric name, identify a series (in key order). Runs
written before aggregates schema v2 lack ``payload_encoding``, ``broker_count`` and
``planned_messages``: those parts are empty, so old and new runs never share a series."""

LOAD_SCENARIO = "load"
"""The ``scenario`` of every load-cell series (no latency scenario has this name, so a load
series never shares a key with a latency one)."""

LOAD_CELL_COLUMNS: tuple[str, ...] = (
    "acks", "consumers", "rate_msgs_per_s", "partitions", "consumer_mode", "duration_s",
    "pause_at_s", "pause_for_s", "txn_msgs", "txn_abort_every",
)
"""The load-cell settings that make a load series besides the latency series' own parts
(null in the records of latency series). The transaction parts are last and empty for a
plain producer, so a plain cell's key is the same as in aggregates written before they
existed."""

LOAD_SERIES_COLUMNS: tuple[str, ...] = (
    "scenario", "client", "payload", "payload_encoding", "payload_bytes", "profile",
    *LOAD_CELL_COLUMNS, "cluster_flavor", "broker_version", "broker_count",
)
"""The columns that, with the metric name, identify a load-cell series (in key order):
``load|client|payload|encoding|bytes|profile|acks|consumers|rate|partitions|mode|duration|
pause_at|pause_for|txn|txn_abort|flavor|version|count|metric``. ``scenario`` is always :data:`LOAD_SCENARIO`."""

DRIFT_COLUMNS: tuple[str, ...] = (
    "run_id",
    "series_key",
    *SERIES_COLUMNS,
    "metric",
    "direction",
    "baseline_value",
    "baseline_mad",
    "baseline_runs",
    "baseline_from_run_id",
    "latest_value",
    "change_pct",
    "robust_z",
    "confidence",
    "latest_ci_low",
    "latest_ci_high",
    "baseline_ci_low",
    "baseline_ci_high",
    "ci_overlap",
    "rule",
    "is_drift",
    "verdict",
    "note",
    "alert_status",
    "good_runs",
    "alert_since_run_id",
    "broker_is_emulator",
    *LOAD_CELL_COLUMNS,
    "cell_id",
    "host_busy",
    "host_other_cpu_pct",
    "run_queue_avg",
    "steal_pct",
)
"""Columns of a drift record, in order (the load-cell columns and ``cell_id`` are null in the
records of latency series; the host columns, null where the cell has no host figures:
:mod:`kafkalab.drift.busy`)."""

Verdict = Literal["drift", "ok", "improved", "insufficient_history", "undefined", "busy_host"]
"""The judgement of one series in one run."""

AlertStatus = Literal["drifting", "alerting", "recovered", "clear"]
"""Where a series stands after a run: ``drifting`` (this run drifts), ``alerting`` (an
earlier drift not yet followed by ``recovery_runs`` good runs, nor accepted),
``recovered`` (this run is the last of those good runs), ``clear``."""

Rule = Literal["mad+ci", "mad", "zero_baseline"]
"""Which test judged a series: the MAD rule and non-overlapping confidence intervals, the
MAD rule alone (no intervals to compare), or the zero-baseline rule."""

_FLOAT_COLUMNS = ("baseline_value", "baseline_mad", "latest_value", "change_pct", "robust_z",
                  "confidence", "latest_ci_low", "latest_ci_high", "baseline_ci_low",
                  "baseline_ci_high", "rate_msgs_per_s", "duration_s", "pause_at_s",
                  "pause_for_s", "host_other_cpu_pct", "run_queue_avg", "steal_pct")
_INT_COLUMNS = ("baseline_runs", "good_runs")
_NULLABLE_INT_COLUMNS = ("payload_bytes", "broker_count", "planned_messages", "consumers",
                         "partitions", "txn_msgs", "txn_abort_every")
_BOOL_COLUMNS = ("is_drift", "broker_is_emulator")
_NULLABLE_BOOL_COLUMNS = ("ci_overlap", "host_busy")
_STRING_COLUMNS = ("run_id", "series_key", "scenario", "client", "payload", "payload_encoding",
                   "profile", "workload", "cluster_flavor", "broker_version", "metric",
                   "direction", "baseline_from_run_id", "rule", "verdict", "note",
                   "alert_status", "alert_since_run_id", "acks", "consumer_mode", "cell_id")


def _nullable_bool(value: Any) -> Any:
    return pd.NA if is_missing(value) else bool(value)


def coerce_records(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with exactly :data:`DRIFT_COLUMNS`, in order, with their stored dtypes.

    Columns ``df`` lacks are added as nulls; other columns are dropped. Floats are float64,
    counts int64 (null -> 0), series sizes nullable ``Int64``, flags bool (``ci_overlap``
    nullable ``boolean``), text pandas ``string``. A new frame: ``df`` is left as it was.
    """
    df = df.reset_index(drop=True)
    missing = pd.Series([None] * len(df), dtype="object")

    def col(name: str) -> pd.Series:
        return df[name] if name in df.columns else missing

    def numeric(name: str) -> pd.Series:
        return pd.to_numeric(col(name), errors="coerce")

    out: dict[str, pd.Series] = {}
    for c in _FLOAT_COLUMNS:
        out[c] = numeric(c).astype("float64")
    for c in _INT_COLUMNS:
        out[c] = numeric(c).fillna(0).astype("int64")
    for c in _NULLABLE_INT_COLUMNS:
        out[c] = numeric(c).round().astype("Int64")
    for c in _BOOL_COLUMNS:
        out[c] = col(c).map(lambda v: False if is_missing(v) else bool(v)).astype(bool)
    for c in _NULLABLE_BOOL_COLUMNS:
        out[c] = col(c).map(_nullable_bool).astype("boolean")
    for c in _STRING_COLUMNS:
        out[c] = col(c).astype("string")
    return pd.DataFrame({c: out[c] for c in DRIFT_COLUMNS}, index=df.index)


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


__all__ = [
    "DRIFT_COLUMNS",
    "LOAD_CELL_COLUMNS",
    "LOAD_SCENARIO",
    "LOAD_SERIES_COLUMNS",
    "SERIES_COLUMNS",
    "AlertStatus",
    "Rule",
    "Verdict",
    "coerce_records",
    "empty_records",
    "records_to_dicts",
]
