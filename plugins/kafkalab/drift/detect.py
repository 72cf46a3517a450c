"""Drift detection: the robust rule, applied to every series of a run (pure, no I/O).

For every series ``(scenario, client, payload, profile, metric)`` the latest run is compared
with a baseline window made of the ``window_runs`` most recent *earlier* runs of the same
series (ordered by run start, :func:`kafkalab.drift.history.run_order`). The rule is robust
to outliers:

* baseline = median of the window; spread = ``1.4826 * MAD`` (MAD = median absolute
  deviation from the median; the factor makes it estimate a normal standard deviation);
* ``robust_z = (latest - median) / spread``;
* a series drifts when the latest value is beyond ``median ± k_mad * spread`` in the
  metric's bad direction **and** ``|latest - median| / |median| >= min_relative_change``.
  Both conditions are needed: a noisy series needs a large z, a zero-spread series needs a
  relative change that matters;
* zero baseline (median = 0, e.g. ``lost_count``): the relative change is undefined, so the
  latest value drifts when it is worse than 0 by more than ``min_absolute_change``
  (default 0: *any* increase from 0 is a drift); ``change_pct`` is then null;
* confidence = ``1 - exp(-|robust_z| / k_mad)`` in [0, 1] (0.63 at the threshold, 0.95 at
  3x the threshold); 1.0 when the spread is 0 and the value moved (``robust_z`` null).

The whole schema of a drift record is in ``docs/drift-and-alerts.md``.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from kafkalab.drift.config import DriftConfig, ResolvedRule
from kafkalab.drift.history import run_order
from kafkalab.drift.records import coerce_records, empty_records
from kafkalab.values import as_bool, is_missing

MAD_SCALE = 1.4826
"""Scale factor turning a MAD into a consistent estimate of a normal standard deviation."""

SERIES_COLUMNS: tuple[str, ...] = ("scenario", "client", "payload", "profile")
"""Columns that, with the metric name, identify a series."""


def series_key(scenario: Any, client: Any, payload: Any, profile: Any, metric: str) -> str:
    """The stable string id of a series: ``scenario|client|payload|profile|metric``."""
    parts = [scenario, client, payload, profile, metric]
    return "|".join("" if is_missing(p) else str(p) for p in parts)


def _median(values: list[float]) -> float:
    return float(pd.Series(values, dtype="float64").median())


def evaluate_series(
    baseline: list[float], latest: float, rule: ResolvedRule
) -> dict[str, Any]:
    """Apply the robust rule to one series (pure; see the module docstring).

    Args:
        baseline: values of the earlier runs in the window (oldest first).
        latest: the latest run's value.
        rule: the metric's resolved thresholds.

    Returns:
        A dict with baseline_value, baseline_mad, baseline_runs, latest_value, change_pct,
        robust_z, confidence, is_drift and verdict.
    """
    n = len(baseline)
    out: dict[str, Any] = {
        "baseline_value": None,
        "baseline_mad": None,
        "baseline_runs": n,
        "latest_value": latest,
        "change_pct": None,
        "robust_z": None,
        "confidence": 0.0,
        "is_drift": False,
        "verdict": "insufficient_history",
    }
    if n == 0:
        return out
    med = _median(baseline)
    mad = _median([abs(v - med) for v in baseline])
    spread = MAD_SCALE * mad
    delta = latest - med
    out["baseline_value"] = med
    out["baseline_mad"] = mad
    if med != 0:
        out["change_pct"] = delta / abs(med) * 100.0
    if spread > 0:
        z: float | None = delta / spread
        confidence = 1.0 - math.exp(-abs(delta / spread) / rule.k_mad)
    else:
        z = 0.0 if delta == 0 else None
        confidence = 0.0 if delta == 0 else 1.0
    out["robust_z"] = z
    out["confidence"] = confidence
    if n < rule.min_baseline_runs:
        return out

    sign = 1.0 if rule.direction == "higher_is_worse" else -1.0
    bad_delta = sign * delta  # > 0 means worse
    if med == 0:
        # Zero baseline: relative change undefined; any move beyond min_absolute_change in
        # the bad (or good) direction decides.
        beyond = abs(delta) > rule.min_absolute_change
        if beyond and bad_delta > 0:
            out["verdict"], out["is_drift"] = "drift", True
        elif beyond and bad_delta < 0:
            out["verdict"] = "improved"
        else:
            out["verdict"] = "ok"
        return out
    beyond_mad = abs(delta) > rule.k_mad * spread
    relevant = abs(delta) / abs(med) >= rule.min_relative_change
    if beyond_mad and relevant and bad_delta > 0:
        out["verdict"], out["is_drift"] = "drift", True
    elif beyond_mad and relevant and bad_delta < 0:
        out["verdict"] = "improved"
    else:
        out["verdict"] = "ok"
    return out


def detect_drift(
    history: pd.DataFrame, config: DriftConfig, latest_run_id: str | None = None
) -> pd.DataFrame:
    """Compare the latest run of every series with its baseline window (pure function).

    Args:
        history: aggregates of all runs (as returned by
            :func:`kafkalab.drift.history.load_history`); missing columns and null values
            are tolerated (a metric absent from the latest run gives no record).
        config: thresholds and the metrics to check.
        latest_run_id: the run to judge; default the newest run of ``history``.

    Returns:
        One row per series of the latest run and configured metric, columns
        :data:`kafkalab.drift.records.DRIFT_COLUMNS`. The baseline of a series only uses
        runs on the same kind of broker (emulator or not) as the latest value, and skips
        runs whose manifest status is ``failed``.
    """
    order = run_order(history)
    if not order:
        return empty_records()
    if latest_run_id is None:
        latest_run_id = order[-1]
    if latest_run_id not in order:
        return empty_records()
    pos = {rid: i for i, rid in enumerate(order)}
    df = history.copy()
    df["run_id"] = df["run_id"].astype(str)
    df["_pos"] = df["run_id"].map(pos)
    for c in SERIES_COLUMNS:
        if c not in df.columns:
            df[c] = None
    df["_emu"] = (
        df["broker_is_emulator"].map(as_bool) if "broker_is_emulator" in df.columns else False
    )
    status = df["run_status"] if "run_status" in df.columns else pd.Series(None, index=df.index)
    df["_failed"] = status.astype("string").str.lower().eq("failed").fillna(False).astype(bool)
    latest_pos = pos[latest_run_id]
    key_cols = [*SERIES_COLUMNS, "_emu"]
    # Group keys must not be NaN for groupby; use a filled copy.
    for c in SERIES_COLUMNS:
        df[c] = df[c].astype("object").where(df[c].notna(), "")

    records: list[dict[str, Any]] = []
    latest_rows = df[df["_pos"] == latest_pos]
    earlier = df[(df["_pos"] < latest_pos) & ~df["_failed"]]
    for metric in config.metrics:
        if metric not in df.columns:
            continue
        rule = config.rule(metric)
        values = pd.to_numeric(df[metric], errors="coerce")
        lat = latest_rows.assign(_v=values.loc[latest_rows.index]).dropna(subset=["_v"])
        if lat.empty:
            continue
        lat_series = lat.groupby(key_cols, sort=True)["_v"].median()
        base = earlier.assign(_v=values.loc[earlier.index]).dropna(subset=["_v"])
        # One value per (series, run): the median if a run has several rows.
        per_run = base.groupby([*key_cols, "_pos"], sort=True)["_v"].median()
        for key, latest_value in lat_series.items():
            k = key if isinstance(key, tuple) else (key,)
            try:
                hist = per_run.loc[k]
            except KeyError:
                hist = pd.Series(dtype="float64")
            window = [float(v) for v in hist.sort_index().tail(rule.window_runs).tolist()]
            res = evaluate_series(window, float(latest_value), rule)
            scenario, client, payload, profile, emu = k
            records.append(
                {
                    "run_id": latest_run_id,
                    "series_key": series_key(scenario, client, payload, profile, metric),
                    "scenario": scenario,
                    "client": client,
                    "payload": payload,
                    "profile": profile,
                    "metric": metric,
                    "direction": rule.direction,
                    "broker_is_emulator": bool(emu),
                    **res,
                }
            )
    if not records:
        return empty_records()
    return coerce_records(pd.DataFrame.from_records(records))


__all__ = ["MAD_SCALE", "SERIES_COLUMNS", "detect_drift", "evaluate_series", "series_key"]
