"""Drift detection: the robust rule, applied to every series of a run (pure, no I/O).

A **series** is one aggregate metric of one kind of cell measured the same way:
:data:`kafkalab.drift.records.SERIES_COLUMNS` + the metric (:func:`series_key`). The judged
run's value is compared with a **baseline window**: the ``window_runs`` most recent earlier
runs of the same series that are *good* for it (ordered by run start,
:func:`kafkalab.drift.history.run_order`):

* the run's state is ``complete``, its validation succeeded (a run with no validation
  result is not validated) and none of its aggregates, validation or drift records is
  stale (``run_state``, ``run_validated``, ``run_stale_outputs`` of
  :func:`kafkalab.drift.history.load_history`; :data:`BASELINE_STALE_OUTPUTS`);
* the run's own stored drift record of that series was not a drift, unless a person
  accepted that level (:mod:`kafkalab.drift.acceptances`): then the baseline starts at the
  accepted run;
* same kind of broker (emulator or not) and a defined (non-null) value;
* not measured on a busy host (:mod:`kafkalab.drift.busy`: the drift config's
  ``busy_host`` limits on other processes' CPU, steal and run queue).

A judged cell measured on a busy host is not judged either: its record has verdict
``busy_host`` (never a drift: no alert, and, like ``undefined``, it neither counts towards
nor breaks a recovery), its host figures, and in ``note`` why it is busy and what the rule
would have said.

The rule is robust to outliers:

* baseline = median of the window; spread = ``1.4826 * MAD`` (MAD = median absolute
  deviation from the median; the factor makes it estimate a normal standard deviation);
* ``robust_z = (latest - median) / spread``;
* the **MAD rule**: the latest value is beyond ``median ± k_mad * spread`` **and**
  ``|latest - median| / |median| >= min_relative_change``;
* the **CI rule**, for metrics with confidence-interval columns (``<metric>_ci_low`` /
  ``_ci_high``): the latest interval and the baseline interval (median of the window's lows,
  median of its highs) do not overlap. A drift (or an improvement) needs both rules; without
  intervals (runs before aggregates schema v2) the MAD rule alone decides and the record
  says so (``rule = "mad"``, ``note``);
* zero baseline (median = 0, e.g. ``lost_count``): the latest value drifts when it is worse
  than 0 by more than ``min_absolute_change``; ``change_pct`` is then null;
* confidence = ``1 - exp(-|robust_z| / k_mad)`` in [0, 1] (0.63 at the threshold, 0.95 at
  3x the threshold); 1.0 when the spread is 0 and the value moved (``robust_z`` null).

A null latest value (an undefined percentile: too few samples, or the loss exceeds the
tail) is never judged: its record has verdict ``undefined`` and the reason in ``note``.
Where the series stands (in alert, recovered) is :mod:`kafkalab.drift.episodes`. The whole
schema of a drift record is in ``docs/drift-and-alerts.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from kafkalab.drift.acceptances import Acceptance, in_force
from kafkalab.drift.busy import BUSY_VERDICT, busy_rows
from kafkalab.drift.config import BusyHostRule, DriftConfig, ResolvedRule
from kafkalab.drift.episodes import Step, standing
from kafkalab.drift.history import run_order
from kafkalab.drift.records import (
    LOAD_SERIES_COLUMNS,
    SERIES_COLUMNS,
    coerce_records,
    empty_records,
)
from kafkalab.values import as_bool, is_missing

MAD_SCALE = 1.4826
"""Scale factor turning a MAD into a consistent estimate of a normal standard deviation."""

CI_LOW_SUFFIX = "_ci_low"
CI_HIGH_SUFFIX = "_ci_high"
"""A metric ``m`` has a confidence interval when the aggregates have ``m_ci_low`` and
``m_ci_high`` (e.g. ``e2e_latency_ms_p99_ci_low``)."""

GOOD_RUN_STATE = "complete"
"""The only run state whose runs can serve as a baseline."""

BASELINE_STALE_OUTPUTS: frozenset[str] = frozenset({"aggregates", "validation", "drift"})
"""Stale outputs that keep an earlier run out of baselines: its numbers, their validation
and its own drift flags are outdated. A stale ``report`` changes nothing judged here."""

JUDGED_STALE_OUTPUTS: frozenset[str] = frozenset({"aggregates", "validation"})
"""Stale outputs that make the judged run not good (not counted towards a recovery): its
``drift`` entry is the one being recomputed now."""

_INT_PARTS = ("payload_bytes", "broker_count", "planned_messages", "consumers", "partitions")
_FLOAT_PARTS = ("rate_msgs_per_s", "duration_s", "pause_at_s", "pause_for_s")

KINDS: dict[str, tuple[str, ...]] = {"latency": SERIES_COLUMNS, "load": LOAD_SERIES_COLUMNS}
"""The series columns of each kind of run drift judges (:attr:`kafkalab.kinds.RunKind.
drift_judged`): ``latency`` (the latency cells' aggregates, metrics under ``metrics``) and
``load`` (the load cells' ``load_cells`` table, metrics under ``load_metrics``). A unit test
keeps its keys equal to the judged kinds."""


def key_part(value: Any) -> str:
    """One part of a series key: '' for a missing value, whole numbers without a decimal
    point (``1048576``, not ``1048576.0``), anything else as ``str``."""
    if is_missing(value):
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if hasattr(value, "item"):  # numpy scalars
        return key_part(value.item())
    return str(value)


def series_key(*parts: Any) -> str:
    """The stable string id of a series: the :data:`SERIES_COLUMNS` values then the metric,
    joined by ``|`` (missing parts are empty): ``scenario|client|payload|payload_encoding|
    payload_bytes|profile|workload|cluster_flavor|broker_version|broker_count|
    planned_messages|metric``."""
    return "|".join(key_part(p) for p in parts)


def _median(values: Iterable[float]) -> float | None:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return float(pd.Series(vals, dtype="float64").median()) if vals else None


def _ci_judgement(delta: float, latest_ci: tuple[float | None, float | None] | None,
                  baseline_ci: Iterable[tuple[float | None, float | None]] | None
                  ) -> tuple[dict[str, Any], bool | None, str | None]:
    """The interval fields of a record, whether the intervals are apart on the side the
    value moved (None when that cannot be told), and a note when they cannot."""
    out: dict[str, Any] = {"latest_ci_low": None, "latest_ci_high": None,
                           "baseline_ci_low": None, "baseline_ci_high": None,
                           "ci_overlap": None}
    if latest_ci is None or baseline_ci is None:
        return out, None, "no confidence-interval columns (runs before schema v2): MAD rule only"
    pairs = list(baseline_ci)
    lat_lo, lat_hi = latest_ci
    base_lo = _median(lo for lo, _ in pairs if lo is not None)
    base_hi = _median(hi for _, hi in pairs if hi is not None)
    out.update(latest_ci_low=lat_lo, latest_ci_high=lat_hi, baseline_ci_low=base_lo,
               baseline_ci_high=base_hi)
    # Up: apart when the latest low is above the baseline high; down: the mirror image.
    need = (lat_lo, base_hi) if delta >= 0 else (base_lo, lat_hi)
    if need[0] is None or need[1] is None:
        side = "latest low / baseline high" if delta >= 0 else "baseline low / latest high"
        return out, None, f"confidence interval undefined ({side} null): MAD rule only"
    apart = need[0] > need[1]
    out["ci_overlap"] = not apart
    return out, apart, None


def evaluate_series(
    baseline: list[float],
    latest: float,
    rule: ResolvedRule,
    latest_ci: tuple[float | None, float | None] | None = None,
    baseline_ci: Iterable[tuple[float | None, float | None]] | None = None,
) -> dict[str, Any]:
    """Apply the rule to one series (pure; see the module docstring).

    Args:
        baseline: values of the good earlier runs in the window (oldest first).
        latest: the judged run's value (defined).
        rule: the metric's resolved thresholds.
        latest_ci: the judged run's ``(ci_low, ci_high)`` (either may be None), or None when
            the metric has no interval columns.
        baseline_ci: the window runs' ``(ci_low, ci_high)``, or None (no interval columns).

    Returns:
        A dict with baseline_value, baseline_mad, baseline_runs, latest_value, change_pct,
        robust_z, confidence, the interval fields (latest_ci_low/high, baseline_ci_low/high,
        ci_overlap), rule, is_drift, verdict and note.
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
        "latest_ci_low": None,
        "latest_ci_high": None,
        "baseline_ci_low": None,
        "baseline_ci_high": None,
        "ci_overlap": None,
        "rule": None,
        "is_drift": False,
        "verdict": "insufficient_history",
        "note": f"{n} good earlier run(s) < min_baseline_runs {rule.min_baseline_runs}",
    }
    if n == 0:
        return out
    med = float(pd.Series(baseline, dtype="float64").median())
    mad = float(pd.Series([abs(v - med) for v in baseline], dtype="float64").median())
    spread = MAD_SCALE * mad
    delta = latest - med
    out["baseline_value"] = med
    out["baseline_mad"] = mad
    if med != 0:
        out["change_pct"] = delta / abs(med) * 100.0
    if spread > 0:
        out["robust_z"] = delta / spread
        out["confidence"] = 1.0 - math.exp(-abs(delta / spread) / rule.k_mad)
    else:
        out["robust_z"] = 0.0 if delta == 0 else None
        out["confidence"] = 0.0 if delta == 0 else 1.0
    ci_fields, apart, ci_note = _ci_judgement(delta, latest_ci, baseline_ci)
    out.update(ci_fields)
    if n < rule.min_baseline_runs:
        return out

    out["note"] = None
    sign = 1.0 if rule.direction == "higher_is_worse" else -1.0
    bad_delta = sign * delta  # > 0 means worse
    if med == 0:
        # Zero baseline: relative change undefined; any move beyond min_absolute_change in
        # the bad (or good) direction decides.
        out["rule"] = "zero_baseline"
        moved = abs(delta) > rule.min_absolute_change
    else:
        out["rule"] = "mad" if apart is None else "mad+ci"
        out["note"] = ci_note
        mad_moved = (abs(delta) > rule.k_mad * spread
                     and abs(delta) / abs(med) >= rule.min_relative_change)
        moved = mad_moved and apart is not False
        if mad_moved and apart is False:
            out["note"] = ("beyond the MAD threshold, but the confidence intervals overlap: "
                           "not a drift")
    if moved and bad_delta > 0:
        out["verdict"], out["is_drift"] = "drift", True
    elif moved and bad_delta < 0:
        out["verdict"] = "improved"
    else:
        out["verdict"] = "ok"
    return out


def undefined_reason(metric: str, rows: pd.DataFrame) -> str:
    """Why ``metric`` is null in ``rows`` (the judged run's rows of one series).

    A percentile ``<base>_pNN`` whose ``<base>_percentiles_note`` names it (``"p99: n<100;
    p999: n<1000"``) gives that reason (``p99: n<100``); otherwise a general one.
    """
    own = f"{metric}_reason"  # the load cells' form: e2e_p99_ms_reason = "n<100"
    if own in rows.columns:
        for reason in rows[own].dropna().astype(str):
            if reason:
                return f"{metric}: {reason}"
    base, _, pct = metric.rpartition("_")
    note_col = f"{base}_percentiles_note"
    if base and pct.startswith("p") and note_col in rows.columns:
        for note in rows[note_col].dropna().astype(str):
            for part in note.split(";"):
                if part.strip().startswith(f"{pct}:"):
                    return part.strip()
    return "null in the aggregates (undefined, or not measured by this scenario)"


def _prepare(history: pd.DataFrame, pos: Mapping[str, int],
             series_columns: tuple[str, ...] = SERIES_COLUMNS,
             busy_rule: BusyHostRule | None = None) -> pd.DataFrame:
    """``history`` with run positions, the broker kind, the good-run flag, why the row's
    cell was measured on a busy host (``_busy``, None when not; ``busy_rule``) and the
    series parts as key strings (``_k_<column>``) and their joined prefix (``_series``)."""
    df = history.copy()
    df["_busy"] = (busy_rows(df, busy_rule) if busy_rule is not None
                   else pd.Series([None] * len(df), index=df.index, dtype="object"))
    df["run_id"] = df["run_id"].astype(str)
    df["_pos"] = df["run_id"].map(pos)
    df["_emu"] = (df["broker_is_emulator"].map(as_bool).astype(bool)
                  if "broker_is_emulator" in df.columns else False)

    def col(name: str) -> pd.Series:
        return df[name] if name in df.columns else pd.Series(None, index=df.index, dtype="object")

    state_ok = col("run_state").map(lambda v: not is_missing(v) and str(v).lower() == GOOD_RUN_STATE)
    validated = col("run_validated").map(as_bool)
    stale = col("run_stale_outputs").map(
        lambda v: set() if is_missing(v) else {o.strip() for o in str(v).split(",") if o.strip()})
    good = state_ok & validated
    df["_good_run"] = (good & stale.map(lambda o: not o & BASELINE_STALE_OUTPUTS)).astype(bool)
    df["_good_judged"] = (good & stale.map(lambda o: not o & JUDGED_STALE_OUTPUTS)).astype(bool)
    for c in series_columns:
        df[f"_k_{c}"] = col(c).map(key_part).astype(str)
    df["_series"] = df[[f"_k_{c}" for c in series_columns]].agg("|".join, axis=1) \
        if len(df) else pd.Series(dtype=str)
    return df


def _series_fields(first: Mapping[str, Any],
                   series_columns: tuple[str, ...] = SERIES_COLUMNS) -> dict[str, Any]:
    """The series columns of a record, from the key strings of one of its rows."""
    out: dict[str, Any] = {}
    for c in series_columns:
        v = str(first[f"_k_{c}"])
        if c in _INT_PARTS:
            out[c] = int(v) if v.lstrip("-").isdigit() else None
        elif c in _FLOAT_PARTS:
            try:
                out[c] = float(v) if v else None
            except ValueError:
                out[c] = None
        else:
            out[c] = v or None
    if "cell_id" in first and not is_missing(first["cell_id"]):
        out["cell_id"] = str(first["cell_id"])
    return out


def _prior_verdicts(prior: pd.DataFrame | None, skip_run: str
                    ) -> dict[tuple[str, str, bool], str]:
    """(run id, series key, emulator) -> the stored verdict, for every run but ``skip_run``."""
    if prior is None or prior.empty:
        return {}
    out: dict[tuple[str, str, bool], str] = {}
    for rec in prior.to_dict(orient="records"):
        rid = str(rec.get("run_id"))
        if rid == skip_run or is_missing(rec.get("series_key")):
            continue
        verdict = rec.get("verdict")
        if is_missing(verdict):
            verdict = "drift" if as_bool(rec.get("is_drift")) else "ok"
        out[(rid, str(rec["series_key"]), as_bool(rec.get("broker_is_emulator")))] = str(verdict)
    return out


def detect_drift(
    history: pd.DataFrame,
    config: DriftConfig,
    latest_run_id: str | None = None,
    *,
    prior: pd.DataFrame | None = None,
    acceptances: Iterable[Acceptance] | None = None,
    kind: str = "latency",
) -> pd.DataFrame:
    """Judge every series of one run against its baseline window (pure function).

    Args:
        history: aggregates of all runs with their run facts (as returned by
            :func:`kafkalab.drift.history.load_history`); missing columns and null values are
            tolerated. A run lacking ``run_state``/``run_validated`` is never a baseline.
        config: thresholds and the metrics to check.
        latest_run_id: the run to judge; default the newest run of ``history``.
        prior: the stored drift records of earlier runs
            (:func:`kafkalab.drift.history.load_prior_records`): their drift flags keep those
            runs out of the baseline, and their verdicts give the alert standing. None: no
            run was flagged.
        acceptances: accepted levels (:func:`kafkalab.drift.acceptances.load_acceptances`).
        kind: ``latency`` (``history`` = the latency aggregates, ``config.metrics``) or
            ``load`` (``history`` = :func:`kafkalab.drift.load.load_cells_history`,
            ``config.load_metrics``, series of :data:`KINDS` ``["load"]``).

    Returns:
        One row per series of the judged run (per broker kind) and configured metric present
        in the history, columns :data:`kafkalab.drift.records.DRIFT_COLUMNS`.
    """
    order = run_order(history)
    if not order:
        return empty_records()
    if latest_run_id is None:
        latest_run_id = order[-1]
    if latest_run_id not in order:
        return empty_records()
    if kind not in KINDS:
        raise ValueError(f"unknown kind of history {kind!r} (known: {', '.join(KINDS)})")
    series_columns = KINDS[kind]
    pos = {rid: i for i, rid in enumerate(order)}
    df = _prepare(history, pos, series_columns, config.busy_host)
    latest_pos = pos[latest_run_id]
    latest_rows = df[df["_pos"] == latest_pos]
    earlier = df[df["_pos"] < latest_pos]
    verdicts = _prior_verdicts(prior, latest_run_id)
    accepted = in_force(acceptances)

    records: list[dict[str, Any]] = []
    for metric in config.metrics_of(kind):
        if metric not in df.columns:
            continue
        rule = config.rule(metric)
        lo_col, hi_col = metric + CI_LOW_SUFFIX, metric + CI_HIGH_SUFFIX
        has_ci = lo_col in df.columns and hi_col in df.columns
        for (series, emu), rows in latest_rows.groupby(["_series", "_emu"], sort=True):
            key = f"{series}|{metric}"
            records.append(_judge_series(
                metric, rule, key, bool(emu), rows,
                earlier[(earlier["_series"] == series) & (earlier["_emu"] == emu)],
                has_ci, verdicts, accepted.get(key), pos, latest_run_id, series_columns))
    if not records:
        return empty_records()
    return coerce_records(pd.DataFrame.from_records(records))


def _num(rows: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(rows[column], errors="coerce")


def _busy_of(rows: pd.DataFrame) -> str | None:
    """Why one run's rows of a series were measured on a busy host (the first reason), or
    None when none was."""
    reasons = [r for r in rows["_busy"].tolist() if r] if "_busy" in rows.columns else []
    return str(reasons[0]) if reasons else None


def _mark_busy(res: dict[str, Any], rows: pd.DataFrame) -> None:
    """Turn the judgement ``res`` of the judged run's ``rows`` into ``busy_host`` when they
    were measured on a busy host: never a drift; the note says why and what the rule would
    have said."""
    why = _busy_of(rows)
    if why is None:
        return
    would = str(res.get("verdict"))
    note = (f"measured on a busy host ({why}): not judged, and never a baseline; the rule "
            f"would have said {would}")
    res["note"] = f"{note}; {res['note']}" if res.get("note") else note
    res["verdict"], res["is_drift"] = BUSY_VERDICT, False


def _host_fields(rows: pd.DataFrame) -> dict[str, Any]:
    """The host fields of a record: ``host_busy`` and the judged rows' median figures (null
    when the cell has none; all null when the history has no host figures at all: load
    cells aggregated before ``host_other_cpu_pct`` existed)."""
    if "host_other_cpu_pct" not in rows.columns:  # a history without host figures
        return {"host_busy": None, "host_other_cpu_pct": None, "run_queue_avg": None,
                "steal_pct": None}
    out: dict[str, Any] = {"host_busy": _busy_of(rows) is not None}
    for c in ("host_other_cpu_pct", "run_queue_avg", "steal_pct"):
        out[c] = _median(_num(rows, c).tolist()) if c in rows.columns else None
    return out


@dataclass(frozen=True)
class _EarlierRun:
    """One earlier run of a series, as the judgement of a later run sees it."""

    run_id: str
    position: int
    verdict: str | None
    """Its stored verdict for the series (None: never judged)."""
    good_run: bool
    value: float | None
    ci: tuple[float | None, float | None]
    baseline_ok: bool
    """Not flagged (or flagged but accepted), not before an accepted level, not measured on
    a busy host."""


def _judge_series(metric: str, rule: ResolvedRule, key: str, emu: bool, rows: pd.DataFrame,
                  earlier: pd.DataFrame, has_ci: bool,
                  verdicts: Mapping[tuple[str, str, bool], str], acceptance: Acceptance | None,
                  pos: Mapping[str, int], latest_run_id: str,
                  series_columns: tuple[str, ...] = SERIES_COLUMNS) -> dict[str, Any]:
    """The drift record of one series of the judged run (see :func:`detect_drift`)."""
    lo_col, hi_col = metric + CI_LOW_SUFFIX, metric + CI_HIGH_SUFFIX
    accepted: tuple[int, int] | None = None
    if acceptance is not None and acceptance.from_run_id in pos:
        start = pos[acceptance.from_run_id]
        accepted = (start, max(start, pos.get(acceptance.through_run_id, start)))

    # One value per earlier run (the median if a run has several rows).
    per_run: list[_EarlierRun] = []
    for p, grp in earlier.groupby("_pos", sort=True):
        rid = str(grp["run_id"].iloc[0])
        verdict = verdicts.get((rid, key, emu))
        in_accepted = accepted is not None and accepted[0] <= int(p) <= accepted[1]
        before_accepted = accepted is not None and int(p) < accepted[0]
        per_run.append(_EarlierRun(
            run_id=rid, position=int(p), verdict=verdict,
            good_run=bool(grp["_good_run"].all()),
            value=_median(_num(grp, metric).tolist()),
            ci=((_median(_num(grp, lo_col).tolist()), _median(_num(grp, hi_col).tolist()))
                if has_ci else (None, None)),
            baseline_ok=(not (verdict == "drift" and not in_accepted) and not before_accepted
                         and _busy_of(grp) is None),
        ))
    window = [r for r in per_run if r.good_run and r.baseline_ok and r.value is not None
              ][-rule.window_runs:]
    values = [r.value for r in window if r.value is not None]
    latest_value = _median(_num(rows, metric).tolist())
    latest_good = bool(rows["_good_judged"].all())

    if latest_value is None:
        res: dict[str, Any] = {
            "baseline_value": _median(values),
            "baseline_runs": len(window), "latest_value": None, "confidence": 0.0,
            "is_drift": False, "verdict": "undefined", "note": undefined_reason(metric, rows),
        }
    else:
        latest_ci = ((_median(_num(rows, lo_col).tolist()), _median(_num(rows, hi_col).tolist()))
                     if has_ci else None)
        base_ci = [r.ci for r in window] if has_ci else None
        res = evaluate_series(values, latest_value, rule, latest_ci, base_ci)
    _mark_busy(res, rows)
    if not latest_good:
        why = ("not a good run (state, validation or stale outputs): never a baseline, not "
               "counted towards a recovery")
        res["note"] = f"{res['note']}; {why}" if res.get("note") else why

    steps = [Step(r.run_id, r.position, r.verdict, r.good_run)
             for r in per_run if r.verdict is not None]
    steps.append(Step(latest_run_id, pos[latest_run_id], str(res["verdict"]), latest_good))
    now = standing(steps, rule.recovery_runs, accepted)
    return {
        "run_id": latest_run_id,
        "series_key": key,
        **_series_fields(rows.iloc[0], series_columns),
        "metric": metric,
        "direction": rule.direction,
        "baseline_from_run_id": (acceptance.from_run_id
                                 if accepted is not None and acceptance is not None else None),
        **res,
        "alert_status": now.alert_status,
        "good_runs": now.good_runs,
        "alert_since_run_id": now.alert_since_run_id,
        "broker_is_emulator": emu,
        **_host_fields(rows),
    }


__all__ = [
    "BASELINE_STALE_OUTPUTS",
    "CI_HIGH_SUFFIX",
    "CI_LOW_SUFFIX",
    "GOOD_RUN_STATE",
    "JUDGED_STALE_OUTPUTS",
    "KINDS",
    "MAD_SCALE",
    "SERIES_COLUMNS",
    "detect_drift",
    "evaluate_series",
    "key_part",
    "series_key",
    "undefined_reason",
]
