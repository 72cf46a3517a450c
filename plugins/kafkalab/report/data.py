"""What the report shows, read from the lab data directory.

Every read goes through :class:`kafkalab.store.LabData` (manifests, validation results) and
:mod:`kafkalab.drift` (aggregates history, run order, stored or recomputed drift records);
a load run's tables through :mod:`kafkalab.report.load_data`, a fault run's through
:mod:`kafkalab.report.fault_data`.
Missing or unreadable files give empty views (logged), never an exception: a report with
holes is better than no report.

Aggregates of both schema versions are read. Rows written before aggregates schema 2 (no
``planned_messages``, no percentile note) are made honest on reading
(:func:`honest_percentiles`): a percentile whose minimum sample count the cell did not reach
is blanked and its reason noted, so an old p99 of 20 messages is never shown, plotted or
compared; their ``throughput_*`` columns are read as the message rate they were.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from kafkalab.drift import (
    DriftConfig,
    MetricRule,
    detect_drift,
    load_acceptances,
    load_drift_config_or_default,
    load_history,
    load_prior_records,
    read_drift,
    run_order,
)
from kafkalab.drift.acceptances import Acceptance
from kafkalab.drift.history import run_measured_at
from kafkalab.drift.load import load_cells_history
from kafkalab.kinds import FAULTS, LATENCY, LOAD, STARTUP, RunKind, kind_of, kind_of_run
from kafkalab.report.fault_data import FaultTables, read_fault_table, read_fault_tables
from kafkalab.report.load_data import LoadTables, read_load_tables
from kafkalab.stats import MIN_SAMPLES
from kafkalab.store import LabData
from kafkalab.values import as_bool, is_missing

log = logging.getLogger(__name__)

TABLE_DRIFT_METRICS = ("e2e_latency_ms_p50", "e2e_latency_ms_p99")
"""The metrics whose baseline and change the latest-run table shows."""

PERCENTILE_NAMES: tuple[str, ...] = ("p50", "p90", "p95", "p99", "p999")
"""The e2e percentiles of an aggregate row (``e2e_latency_ms_<name>``)."""

NOTE_COLUMN = "e2e_latency_ms_percentiles_note"
"""Why some e2e percentiles of a row are null: ``"p99: n<100; p999: n<1000"``."""

RENAMED_V1: dict[str, str] = {
    "throughput_msgs_per_s": "message_rate_per_s",
    "throughput_mb_per_s": "message_rate_mb_per_s",
}
"""Aggregate columns of schema 1 and the schema 2 names of the same figures."""


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


def parse_percentile_note(note: Any) -> dict[str, str]:
    """``"p99: n<100; p999: n<1000"`` -> ``{"p99": "n<100", "p999": "n<1000"}`` ({} if null)."""
    if is_missing(note):
        return {}
    out: dict[str, str] = {}
    for part in str(note).split(";"):
        name, sep, reason = part.partition(":")
        if sep and name.strip():
            out[name.strip()] = reason.strip()
    return out


def _format_note(reasons: dict[str, str]) -> str | None:
    parts = [f"{n}: {reasons[n]}" for n in PERCENTILE_NAMES if n in reasons]
    return "; ".join(parts) or None


def is_schema_v2(df: pd.DataFrame) -> pd.Series:
    """True for aggregate rows written by schema 2 (they carry ``planned_messages`` or
    ``ci_confidence``; rows of earlier runs have neither)."""
    return numbers(df, "planned_messages").notna() | numbers(df, "ci_confidence").notna()


def honest_percentiles(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of aggregate rows in which every e2e percentile is either defined or null with
    its reason in :data:`NOTE_COLUMN`, and the schema 2 message-rate columns exist.

    Schema 2 rows are left as written. Schema 1 rows (percentiles of the received messages,
    however few): a percentile whose :data:`kafkalab.stats.MIN_SAMPLES` the cell's
    ``received_count`` does not reach becomes null with reason ``n<N`` (a row without
    counts is left as written); ``throughput_*``
    become ``message_rate_*`` (the same figure: ≈ 1 / mean latency in a closed loop).
    """
    out = df.copy()
    if out.empty:
        return out
    for old, new in RENAMED_V1.items():
        if old in out.columns:
            out[new] = numbers(out, new).where(numbers(out, new).notna(), numbers(out, old))
    if NOTE_COLUMN not in out.columns:
        out[NOTE_COLUMN] = None
    out[NOTE_COLUMN] = out[NOTE_COLUMN].astype("object")
    old_rows = ~is_schema_v2(out)
    if not old_rows.any():
        return out
    received = numbers(out, "received_count")
    for idx in out.index[old_rows]:
        reasons = parse_percentile_note(out.at[idx, NOTE_COLUMN])
        n = received.get(idx)
        for name in PERCENTILE_NAMES:
            col = f"e2e_latency_ms_{name}"
            if col not in out.columns or is_missing(out.at[idx, col]):
                continue
            if not is_missing(n) and n < MIN_SAMPLES[name]:  # unknown n: left as written
                out.at[idx, col] = float("nan")
                reasons[name] = f"n<{MIN_SAMPLES[name]}"
        out.at[idx, NOTE_COLUMN] = _format_note(reasons)
    return out


def percentile_reasons(df: pd.DataFrame) -> pd.Series:
    """Per row, ``{percentile name: reason}`` of its undefined e2e percentiles."""
    if NOTE_COLUMN not in df.columns:
        return pd.Series([{} for _ in df.index], index=df.index, dtype="object")
    return df[NOTE_COLUMN].map(parse_percentile_note)


def _run_ids(history: pd.DataFrame) -> frozenset[str]:
    """The run ids of ``history``'s rows (none when it is empty)."""
    if history.empty or "run_id" not in history.columns:
        return frozenset()
    return frozenset(history["run_id"].astype(str))


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
    prior: pd.DataFrame | None = None
    """Every run's stored drift records (flags and alert standing), for drift computed now."""
    acceptances: list[Acceptance] | None = None
    """Accepted levels (``drift/acceptances.json``), for drift computed now."""
    load_history: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Every load run's cells (:func:`kafkalab.drift.load.load_cells_history`)."""
    fault_runs: frozenset[str] = frozenset()
    """The fault runs: manifest ``kind: faults``, or aggregates under ``aggregates/faults/``."""
    load_runs: frozenset[str] = frozenset()
    """The runs with load cells (``load_history``)."""
    measured_at: dict[str, pd.Timestamp | None] = field(default_factory=dict)
    """When each run measured (:func:`kafkalab.drift.history.run_measured_at`: the logical
    date of a DAG run, else the night in its id, else its start): the trend charts' x."""
    spectra: dict[tuple[str, str, str, str], Any] = field(default_factory=dict)
    """Percentile spectra read so far, by (run id, scenario, payload, profile)
    (:func:`kafkalab.report.spectrum.read_spectrum`; None: no samples), shared by the pages
    of one build."""

    def runs_upto(self, run_id: str) -> list[str]:
        """The run ids up to ``run_id``, oldest first (just ``run_id`` when it is not
        among :attr:`order`)."""
        if run_id not in self.order:
            return [run_id]
        return self.order[: self.order.index(run_id) + 1]

    def run_kind(self, run_id: str) -> RunKind:
        """The kind of run ``run_id``: which view it gets (:func:`run_view`) and so which
        sections its page shows (:func:`kafkalab.kinds.kind_of_run`: its manifest, else
        what it left: fault aggregates (:attr:`fault_runs`), load cells (:attr:`load_runs`))."""
        left = {FAULTS.name: self.fault_runs, LOAD.name: self.load_runs}
        return kind_of_run(self.manifests.get(run_id),
                           lambda kind: run_id in left.get(kind.name, frozenset()))


def _ordered_runs(history: pd.DataFrame, manifests: dict[str, dict[str, Any]],
                  load_history: pd.DataFrame | None = None,
                  more: frozenset[str] = frozenset()) -> list[str]:
    """Every run id (of ``history``, ``load_history``, ``manifests`` and ``more``), oldest
    first (:func:`kafkalab.drift.run_order`)."""
    rows: list[dict[str, Any]] = [{"run_id": rid} for rid in sorted(more)]
    for h in (history, load_history):
        if h is not None and not h.empty and "run_id" in h.columns:
            cols = [c for c in ("run_id", "run_started_at", "run_logical_date", "run_date")
                    if c in h.columns]
            rows.extend(h[cols].to_dict(orient="records"))
    for rid, m in manifests.items():
        rows.append({"run_id": rid, "run_started_at": m.get("started_at"),
                     "run_logical_date": m.get("logical_date")})
    if not rows:
        return []
    df = pd.DataFrame(rows)
    df["run_id"] = df["run_id"].astype(str)
    for col in ("run_started_at", "run_logical_date"):
        df[col] = pd.to_datetime(df.get(col), utc=True, errors="coerce", format="ISO8601")
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
    history = honest_percentiles(history)
    try:
        loads = load_cells_history(lab.root, manifests)
    except Exception as exc:  # unreadable load aggregates: report the rest
        log.warning("load aggregates under %s unreadable (%s); report without them", lab.root,
                    exc)
        loads = pd.DataFrame()
    faults = frozenset({rid for rid, m in manifests.items() if kind_of(m) is FAULTS}
                       | set(lab.run_aggregate_ids(FAULTS)))
    if faults and not history.empty and "run_id" in history.columns:
        # Fault runs are never latency runs, whatever the latency history picked up.
        history = history[~history["run_id"].astype(str).isin(faults)].reset_index(drop=True)
    order = _ordered_runs(history, manifests, loads, faults)
    try:
        prior: pd.DataFrame | None = load_prior_records(lab.root, order)
    except Exception as exc:  # unreadable records: drift computed now treats runs as unflagged
        log.warning("stored drift records under %s unreadable (%s)", lab.root, exc)
        prior = None
    try:
        acceptances: list[Acceptance] | None = load_acceptances(lab.root)
    except Exception as exc:  # a malformed acceptances file is the drift command's to report
        log.warning("drift acceptances under %s unreadable (%s)", lab.root, exc)
        acceptances = None
    return ReportData(lab=lab, history=history, manifests=manifests, order=order,
                      config=load_drift_config_or_default(config_path), prior=prior,
                      acceptances=acceptances, load_history=loads, fault_runs=faults,
                      load_runs=_run_ids(loads),
                      measured_at=_measured_at(order, manifests, history))


def _measured_at(order: list[str], manifests: dict[str, dict[str, Any]],
                 history: pd.DataFrame) -> dict[str, pd.Timestamp | None]:
    """Each run's :func:`~kafkalab.drift.history.run_measured_at`; a run without a manifest
    falls back on its aggregates' ``run_date``."""
    dates: dict[str, Any] = {}
    if not history.empty and {"run_id", "run_date"} <= set(history.columns):
        for rid, d in zip(history["run_id"].astype(str), history["run_date"], strict=True):
            if not is_missing(d):
                dates.setdefault(rid, str(d)[:10])
    out: dict[str, pd.Timestamp | None] = {}
    for rid in order:
        m = manifests.get(rid) or {}
        out[rid] = run_measured_at(rid, m.get("logical_date"),
                                   m.get("started_at") or dates.get(rid))
    return out


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
    state: str = ""
    """:meth:`kafkalab.store.LabData.run_state`: ``complete``, ``incomplete``, ``failed``,
    ``running``, ``stale`` (running with no live owner); ``""`` without a manifest."""
    state_reason: str = ""
    stale_outputs: tuple[str, ...] = ()
    """The run's derived outputs not recomputed since a cell was measured again (the page
    being built is never among them)."""
    kind: RunKind = LATENCY
    """The kind of run (:mod:`kafkalab.kinds`): which sections its page shows
    (:attr:`kafkalab.kinds.RunKind.report_sections`)."""
    load: LoadTables | None = None
    """A load run's tables (its page shows the load sections); None for a latency run."""
    faults: FaultTables | None = None
    """A fault run's tables (its page shows the fault sections); None for other runs."""
    flags: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The stored drift records (flags) of the runs in ``order`` before this one, for the
    drift markers on the trend charts (:data:`kafkalab.drift.history.PRIOR_COLUMNS`)."""
    config: DriftConfig | None = None
    """The drift rules (the baseline bands' thresholds)."""
    measured_at: dict[str, pd.Timestamp | None] = field(default_factory=dict)
    """:attr:`ReportData.measured_at`."""
    lab: LabData | None = None
    """The lab data directory (the spectrum reads the cells' samples)."""
    spectra: dict[tuple[str, str, str, str], Any] = field(default_factory=dict)
    """:attr:`ReportData.spectra` (the cache of the build)."""

    @property
    def cluster_is_emulator(self) -> bool:
        """True when the run's cluster (not just some cells) is an emulator broker."""
        return as_bool(((self.manifest or {}).get("cluster") or {}).get("is_emulator"))


def _detect(data: ReportData, hist: pd.DataFrame, rows: pd.DataFrame, config: DriftConfig,
            run_id: str, earlier: list[str], kind: RunKind = LATENCY) -> pd.DataFrame:
    """Drift records of ``run_id`` computed now, as the drift task computes them: the stored
    records of the ``earlier`` runs keep flagged runs out of the baseline and carry the
    alert standing, accepted levels apply (empty records when the run has no rows)."""
    if rows.empty:
        return detect_drift(pd.DataFrame(), config)
    prior = data.prior
    if prior is not None and not prior.empty and "run_id" in prior.columns:
        prior = prior[prior["run_id"].astype(str).isin(earlier)]
    return detect_drift(hist, config, run_id, prior=prior, acceptances=data.acceptances,
                        kind=kind.name)


def run_state(lab: LabData, run_id: str, manifest: dict[str, Any] | None) -> tuple[str, str]:
    """A run's state and its reason (``("", "")`` without a manifest); never raises."""
    if manifest is None:
        return "", ""
    try:
        return lab.run_state(run_id), lab.run_state_reason(run_id)
    except Exception as exc:  # an odd manifest must not break the report
        log.warning("state of run %s unknown (%s)", run_id, exc)
        return str(manifest.get("status") or ""), ""


def stale_outputs(manifest: dict[str, Any] | None, page_built: bool) -> tuple[str, ...]:
    """The manifest's ``stale_outputs``; without ``report`` when this build writes the
    run's page (that page is fresh)."""
    raw = (manifest or {}).get("stale_outputs") or []
    names = [str(x) for x in raw] if isinstance(raw, list) else []
    return tuple(x for x in names if not (page_built and x == "report"))


def _view(data: ReportData, run_id: str, kind: RunKind, rows: pd.DataFrame,
          history: pd.DataFrame, **fields: Any) -> RunView:
    """The view of ``run_id`` with what every kind's view holds alike (its manifest, state,
    stale outputs, its kind's validation result and HTML, whether it ran on an emulator,
    the runs up to it) and its kind's own ``fields``."""
    manifest = data.manifests.get(run_id)
    state, reason = run_state(data.lab, run_id, manifest)
    return RunView(
        run_id=run_id, manifest=manifest, rows=rows, history=history,
        order=data.runs_upto(run_id), validation=data.lab.validation(run_id, kind),
        validation_html=_validation_html(data.lab, run_id, kind),
        emulator=_is_emulator(rows, manifest), state=state, state_reason=reason,
        stale_outputs=stale_outputs(manifest, page_built=True), kind=kind, **fields)


def _validation_html(lab: LabData, run_id: str, kind: RunKind) -> Path | None:
    """A run's validation HTML: its kind's (``validation/<run_id><suffix>.html``), else the
    plain one (runs validated before the suffixes), else None."""
    for path in (lab.validation_html_path(run_id, kind), lab.validation_html_path(run_id)):
        if path.exists():
            return path
    return None


def load_run_view(data: ReportData, run_id: str) -> RunView:
    """The view of load run ``run_id``: its cells as ``rows``, the earlier load runs' cells
    as ``history``, its tables in ``load``, its load validation and drift records."""
    upto = data.runs_upto(run_id)
    hist = _rows_of(data.load_history, upto)
    tables = read_load_tables(data.lab, run_id)
    rows = tables.cells if not tables.cells.empty else _rows_of(hist, [run_id])
    stored = _stored_drift(data.lab, run_id)
    earlier = [r for r in upto[:-1] if data.run_kind(r) is LOAD]
    return _view(
        data, run_id, LOAD, rows, hist, table_drift=pd.DataFrame(),
        drift_records=(stored if stored is not None
                       else _detect(data, hist, _rows_of(hist, [run_id]), data.config, run_id,
                                    earlier, kind=LOAD)),
        drift_stored=stored is not None, load=tables)


def fault_run_view(data: ReportData, run_id: str) -> RunView:
    """The view of fault run ``run_id``: its trials as ``rows``, its tables in ``faults``,
    its fault validation; no history and no drift (fault runs have none)."""
    tables = read_fault_tables(data.lab, run_id)
    return _view(data, run_id, FAULTS, tables.trials, tables.trials,
                 table_drift=pd.DataFrame(), drift_records=pd.DataFrame(), drift_stored=False,
                 faults=tables)


STARTUP_CASES = "startup_cases"
"""The start-up run's table its page shows (``spark_jobs/aggregate_startup.py``)."""


def read_startup_cases(lab: LabData, run_id: str) -> pd.DataFrame | None:
    """A start-up run's ``startup_cases`` table; None when it is absent or unreadable
    (logged)."""
    import pyarrow.parquet as pq

    path = lab.run_aggregates_dir(run_id, STARTUP) / f"{STARTUP_CASES}.parquet"
    if not path.exists():
        return None
    try:
        return pq.read_table(path).to_pandas()
    except (OSError, ValueError) as exc:
        log.warning("start-up table %s unreadable (%s)", path, exc)
        return None


def startup_run_view(data: ReportData, run_id: str) -> RunView:
    """The view of start-up run ``run_id``: its cases as ``rows`` (empty before its Spark
    aggregation), its validation; no history and no drift (start-up runs are not judged)."""
    cases = read_startup_cases(data.lab, run_id)
    rows = cases if cases is not None else pd.DataFrame()
    return _view(data, run_id, STARTUP, rows, rows, table_drift=pd.DataFrame(),
                 drift_records=pd.DataFrame(), drift_stored=False)


def run_view(data: ReportData, run_id: str) -> RunView:
    """The view of ``run_id`` as of that run (later runs are left out of its trends), built
    for its kind (:meth:`ReportData.run_kind`, :data:`VIEWS`)."""
    return VIEWS[data.run_kind(run_id).name](data, run_id)


def latency_run_view(data: ReportData, run_id: str) -> RunView:
    """The view of latency run ``run_id``: its cells' aggregates as ``rows``, the history up
    to it, its drift records (stored, else computed as drift would) and validation."""
    upto = data.runs_upto(run_id)
    hist = _rows_of(data.history, upto)
    rows = _rows_of(hist, [run_id])
    table_cfg = DriftConfig(
        defaults=data.config.defaults,
        metrics={m: data.config.metrics.get(m, MetricRule()) for m in TABLE_DRIFT_METRICS},
    )
    stored = _stored_drift(data.lab, run_id)
    return _view(
        data, run_id, LATENCY, rows, hist,
        table_drift=_detect(data, hist, rows, table_cfg, run_id, upto[:-1]),
        drift_records=(stored if stored is not None
                       else _detect(data, hist, rows, data.config, run_id, upto[:-1])),
        drift_stored=stored is not None,
        flags=_prior_of(data.prior, upto[:-1]), config=data.config,
        measured_at=data.measured_at, lab=data.lab, spectra=data.spectra,
    )


def _prior_of(prior: pd.DataFrame | None, run_ids: list[str]) -> pd.DataFrame:
    """The stored drift records of ``run_ids`` (empty when none)."""
    if prior is None or prior.empty or "run_id" not in prior.columns:
        return pd.DataFrame()
    return prior[prior["run_id"].astype(str).isin(run_ids)]


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
    state: str = ""
    """As :attr:`RunView.state`."""
    state_reason: str = ""
    stale_outputs: tuple[str, ...] = ()
    kind: str = LATENCY.name
    """The run's kind (:attr:`kafkalab.kinds.RunKind.name`: ``latency``, ``load`` or
    ``faults``)."""


def run_summaries(data: ReportData, pages_built: frozenset[str] | set[str] = frozenset()
                  ) -> list[RunSummary]:
    """A summary of every run, newest first; ``pages_built``: the runs whose page this build
    writes (their ``report`` output is not stale)."""
    out = []
    for rid in reversed(data.order):
        m = data.manifests.get(rid) or {}
        cl = m.get("cluster") or {}
        kind = data.run_kind(rid)
        rows = SUMMARY_ROWS[kind.name](data, rid)
        flavors = {str(cl["flavor"])} if cl.get("flavor") else set()
        if not rows.empty:
            flavors |= set(strings(rows, "cluster_flavor")) - {"", "http"}
        dr = _stored_drift(data.lab, rid)
        state, reason = run_state(data.lab, rid, data.manifests.get(rid))
        out.append(RunSummary(
            run_id=rid, started_at=str(m.get("started_at") or ""),
            status=str(m.get("status") or ""), flavor=", ".join(sorted(flavors)),
            emulator=_is_emulator(rows, m), cells=len(rows),
            drift_flags=None if dr is None else int(dr["is_drift"].fillna(False).astype(bool).sum()),
            validation=data.lab.validation(rid, kind),
            state=state, state_reason=reason,
            stale_outputs=stale_outputs(data.manifests.get(rid), rid in pages_built),
            kind=kind.name,
        ))
    return out


VIEWS: dict[str, Callable[[ReportData, str], RunView]] = {
    LATENCY.name: latency_run_view, LOAD.name: load_run_view, FAULTS.name: fault_run_view,
    STARTUP.name: startup_run_view}
"""How a run's view is built, by its kind (:data:`kafkalab.kinds.RUN_KINDS`)."""


def _fault_rows(data: ReportData, run_id: str) -> pd.DataFrame:
    trials = read_fault_table(data.lab, run_id, "fault_trials")
    return trials if trials is not None else pd.DataFrame()


SUMMARY_ROWS: dict[str, Callable[[ReportData, str], pd.DataFrame]] = {
    LATENCY.name: lambda data, rid: _rows_of(data.history, [rid]),
    LOAD.name: lambda data, rid: _rows_of(data.load_history, [rid]),
    FAULTS.name: _fault_rows,
    STARTUP.name: lambda data, rid: startup_run_view(data, rid).rows,
}
"""A run's rows in the overview (its cells, or its trials), by its kind."""


__all__ = [
    "NOTE_COLUMN",
    "PERCENTILE_NAMES",
    "RENAMED_V1",
    "STARTUP_CASES",
    "SUMMARY_ROWS",
    "TABLE_DRIFT_METRICS",
    "VIEWS",
    "ReportData",
    "RunSummary",
    "RunView",
    "emulator_mask",
    "fault_run_view",
    "honest_percentiles",
    "is_schema_v2",
    "latency_run_view",
    "load_report_data",
    "load_run_view",
    "numbers",
    "parse_percentile_note",
    "percentile_reasons",
    "read_startup_cases",
    "run_state",
    "run_summaries",
    "run_view",
    "stale_outputs",
    "startup_run_view",
    "strings",
]
