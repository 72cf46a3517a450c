"""What the report shows, read from the lab data directory.

Every read goes through :class:`kafkalab.store.LabData` (manifests, validation results) and
:mod:`kafkalab.drift` (aggregates history, run order, stored or recomputed drift records).
Missing or unreadable files give empty views (logged), never an exception: a report with
holes is better than no report.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from kafkalab.drift import (
    DriftConfig,
    MetricRule,
    detect_drift,
    load_drift_config_or_default,
    load_history,
    read_drift,
    run_order,
)
from kafkalab.store import LabData
from kafkalab.values import as_bool

log = logging.getLogger(__name__)

TABLE_DRIFT_METRICS = ("e2e_latency_ms_p50", "e2e_latency_ms_p99")
"""The metrics whose baseline and change the latest-run table shows."""


# --------------------------------------------------------------------------- columns


def numbers(df: pd.DataFrame, name: str) -> pd.Series:
    """Column ``name`` as numbers (NaN where absent or not numeric)."""
    if name in df.columns:
        return pd.to_numeric(df[name], errors="coerce")
    return pd.Series(float("nan"), index=df.index, dtype="float64")


def strings(df: pd.DataFrame, name: str) -> pd.Series:
    """Column ``name`` as strings ('' where absent or null)."""
    if name in df.columns:
        return df[name].astype("object").where(df[name].notna(), "").astype(str)
    return pd.Series("", index=df.index, dtype="object")


def emulator_mask(df: pd.DataFrame) -> pd.Series:
    """True for the rows measured on an emulator broker (``broker_is_emulator``)."""
    if "broker_is_emulator" in df.columns:
        return df["broker_is_emulator"].map(as_bool).astype(bool)
    return pd.Series(False, index=df.index, dtype=bool)


def _rows_of(history: pd.DataFrame, run_ids: list[str]) -> pd.DataFrame:
    """The aggregate rows of ``run_ids`` (an empty frame when there is no history)."""
    if history.empty or "run_id" not in history.columns:
        return pd.DataFrame()
    return history[history["run_id"].astype(str).isin(run_ids)]


def _is_emulator(rows: pd.DataFrame, manifest: dict[str, Any] | None) -> bool:
    """Whether any cell of a run, or its cluster, is an emulator broker."""
    cluster = (manifest or {}).get("cluster") or {}
    return (not rows.empty and bool(emulator_mask(rows).any())) or as_bool(
        cluster.get("is_emulator"))


def _stored_drift(lab: LabData, run_id: str) -> pd.DataFrame | None:
    """A run's stored drift records; None when absent or unreadable (logged)."""
    try:
        return read_drift(lab.root, run_id)
    except Exception as exc:  # a corrupt file must not break the report
        log.warning("drift records of %s unreadable (%s)", run_id, exc)
        return None


# --------------------------------------------------------------------------- the lab


@dataclass
class ReportData:
    """Everything read once per report build."""

    lab: LabData
    history: pd.DataFrame
    """Every run's aggregates (empty when there are none or they are unreadable)."""
    manifests: dict[str, dict[str, Any]]
    order: list[str]
    """Run ids, oldest first: runs with aggregates and runs with only a manifest."""
    config: DriftConfig


def _ordered_runs(history: pd.DataFrame, manifests: dict[str, dict[str, Any]]) -> list[str]:
    rows: list[dict[str, Any]] = []
    if not history.empty and "run_id" in history.columns:
        cols = [c for c in ("run_id", "run_started_at", "run_date") if c in history.columns]
        rows.extend(history[cols].to_dict(orient="records"))
    for rid, m in manifests.items():
        rows.append({"run_id": rid, "run_started_at": m.get("started_at")})
    if not rows:
        return []
    df = pd.DataFrame(rows)
    df["run_id"] = df["run_id"].astype(str)
    df["run_started_at"] = pd.to_datetime(df.get("run_started_at"), utc=True, errors="coerce")
    return run_order(df)


def load_report_data(lab: LabData,
                     config_path: str | os.PathLike[str] | None = None) -> ReportData:
    """Read the history, manifests (once) and drift config (built-in defaults when absent)."""
    manifests = lab.manifests()
    try:
        history = load_history(lab.root, manifests)
    except Exception as exc:  # unreadable aggregates: report what can be reported
        log.warning("aggregates under %s unreadable (%s); report without them", lab.root, exc)
        history = pd.DataFrame()
    return ReportData(lab=lab, history=history, manifests=manifests,
                      order=_ordered_runs(history, manifests),
                      config=load_drift_config_or_default(config_path))


# --------------------------------------------------------------------------- one run


@dataclass
class RunView:
    """Everything one run's sections need."""

    run_id: str
    manifest: dict[str, Any] | None
    rows: pd.DataFrame
    """This run's aggregate rows."""
    history: pd.DataFrame
    """The aggregate rows of this run and every earlier one."""
    order: list[str]
    """Run ids up to this one, oldest first."""
    table_drift: pd.DataFrame
    """Drift records of :data:`TABLE_DRIFT_METRICS` (baselines for the latest-run table)."""
    drift_records: pd.DataFrame
    drift_stored: bool
    """True when ``drift_records`` were read from the store, False when computed now."""
    validation: dict[str, Any] | None
    validation_html: Path | None
    emulator: bool
    """True when any cell of the run, or its cluster, is an emulator broker."""

    @property
    def cluster_is_emulator(self) -> bool:
        """True when the run's cluster (not just some cells) is an emulator broker."""
        return as_bool(((self.manifest or {}).get("cluster") or {}).get("is_emulator"))


def _detect(hist: pd.DataFrame, rows: pd.DataFrame, config: DriftConfig,
            run_id: str) -> pd.DataFrame:
    """Drift records of ``run_id`` computed now (empty records when it has no rows)."""
    if rows.empty:
        return detect_drift(pd.DataFrame(), config)
    return detect_drift(hist, config, run_id)


def run_view(data: ReportData, run_id: str) -> RunView:
    """The view of ``run_id`` as of that run (later runs are left out of its trends)."""
    upto = data.order[: data.order.index(run_id) + 1] if run_id in data.order else [run_id]
    hist = _rows_of(data.history, upto)
    rows = _rows_of(hist, [run_id])
    manifest = data.manifests.get(run_id)
    table_cfg = DriftConfig(
        defaults=data.config.defaults,
        metrics={m: data.config.metrics.get(m, MetricRule()) for m in TABLE_DRIFT_METRICS},
    )
    stored = _stored_drift(data.lab, run_id)
    vhtml = data.lab.validation_html_path(run_id)
    return RunView(
        run_id=run_id, manifest=manifest, rows=rows, history=hist, order=upto,
        table_drift=_detect(hist, rows, table_cfg, run_id),
        drift_records=stored if stored is not None else _detect(hist, rows, data.config, run_id),
        drift_stored=stored is not None,
        validation=data.lab.validation(run_id),
        validation_html=vhtml if vhtml.exists() else None,
        emulator=_is_emulator(rows, manifest),
    )


# --------------------------------------------------------------------------- the overview


@dataclass
class RunSummary:
    """One line of the overview's table of runs."""

    run_id: str
    started_at: str
    status: str
    flavor: str
    """The cluster flavours the run measured (comma-separated; HTTP cells left out)."""
    emulator: bool
    cells: int
    drift_flags: int | None
    """How many stored drift records are flagged; None when none are stored."""
    validation: dict[str, Any] | None


def run_summaries(data: ReportData) -> list[RunSummary]:
    """A summary of every run, newest first."""
    out = []
    for rid in reversed(data.order):
        m = data.manifests.get(rid) or {}
        cl = m.get("cluster") or {}
        rows = _rows_of(data.history, [rid])
        flavors = {str(cl["flavor"])} if cl.get("flavor") else set()
        if not rows.empty:
            flavors |= set(strings(rows, "cluster_flavor")) - {"", "http"}
        dr = _stored_drift(data.lab, rid)
        out.append(RunSummary(
            run_id=rid, started_at=str(m.get("started_at") or ""),
            status=str(m.get("status") or ""), flavor=", ".join(sorted(flavors)),
            emulator=_is_emulator(rows, m), cells=len(rows),
            drift_flags=None if dr is None else int(dr["is_drift"].fillna(False).astype(bool).sum()),
            validation=data.lab.validation(rid),
        ))
    return out


__all__ = [
    "TABLE_DRIFT_METRICS",
    "ReportData",
    "RunSummary",
    "RunView",
    "emulator_mask",
    "load_report_data",
    "numbers",
    "run_summaries",
    "run_view",
    "strings",
]
