"""The history drift is judged against, and the drift records of each run, on disk.

Reads every run's aggregates (``aggregates/run_id=<id>/part-*.parquet``) with each run's
facts from its manifest and validation result (start time, state, validated, stale
outputs), orders the runs, and reads and writes the drift records
(``drift/run_id=<id>/drift.parquet``). Every location comes from
:class:`kafkalab.store.LabData`; every write goes through :func:`kafkalab.store.atomic_write`.
"""

from __future__ import annotations

import io
import logging
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from kafkalab.drift.busy import join_host
from kafkalab.drift.records import DRIFT_COLUMNS, coerce_records, empty_records
from kafkalab.kinds import RUN_KINDS
from kafkalab.run_ids import RUN_TIME_FORMAT, run_id_time
from kafkalab.store import LabData, atomic_write

log = logging.getLogger(__name__)

MANIFEST_COLUMNS: tuple[str, ...] = (
    "run_id", "run_started_at", "run_status", "run_state", "run_validated", "run_stale_outputs",
    "run_logical_date",
)
"""Columns :func:`load_history` adds to the aggregates: from the run manifest
(``run_started_at``, ``run_status`` as written, ``run_logical_date``: the manifest's
``logical_date``, the night a DAG run measured, NaT when absent), :meth:`LabData.run_state` (``run_state``:
complete, incomplete, failed, running, stale), the validation result (``run_validated``: its
``success`` is true; no validation file is false) and the manifest's ``stale_outputs``
(``run_stale_outputs``: comma-separated, empty when none)."""


def _run_state(lab: LabData | None, run_id: str, manifest: Mapping[str, Any]) -> Any:
    """The run's state (:meth:`LabData.run_state`); without ``lab``, the manifest's
    ``status``."""
    return lab.run_state(run_id) if lab is not None else manifest.get("status")


def _validated(lab: LabData | None, run_id: str) -> bool:
    """True only when the run's validation result exists and its ``success`` is true."""
    if lab is None:
        return False
    doc = lab.validation(run_id)
    return doc is not None and doc.get("success") is True


def manifest_frame(manifests: Mapping[str, Mapping[str, Any]],
                   lab: LabData | None = None) -> pd.DataFrame:
    """The :data:`MANIFEST_COLUMNS` of each run in ``manifests`` (as
    :meth:`kafkalab.store.LabData.manifests` returns them); start time as a UTC timestamp
    (NaT when absent or unparsable). Without ``lab`` (the data directory) the state is the
    manifest's status and no run is validated."""
    rows = [
        {"run_id": rid, "run_started_at": m.get("started_at"), "run_status": m.get("status"),
         "run_state": _run_state(lab, rid, m), "run_validated": _validated(lab, rid),
         "run_stale_outputs": ",".join(sorted(str(o) for o in m.get("stale_outputs") or [])),
         "run_logical_date": m.get("logical_date")}
        for rid, m in manifests.items()
    ]
    df = pd.DataFrame(rows, columns=list(MANIFEST_COLUMNS))
    for col in ("run_started_at", "run_logical_date"):
        df[col] = pd.to_datetime(df[col], utc=True, errors="coerce", format="ISO8601")
    df["run_validated"] = df["run_validated"].astype(bool)
    return df


OTHER_AGGREGATES_SUBDIRS: tuple[str, ...] = tuple(
    k.aggregates_subdir for k in RUN_KINDS.values() if k.aggregates_subdir)
"""Subdirectories of ``aggregates/`` that are not latency aggregates (the other kinds' own
folders, :mod:`kafkalab.kinds`: ``load/``, ``faults/``)."""


def _latency_files(agg_dir: Path) -> list[Path]:
    """The latency aggregate files under ``agg_dir``: not hidden (``.``/``_``), not under
    ``load/`` or ``faults/`` (those runs' tables have their own readers)."""
    out = []
    for f in sorted(agg_dir.rglob("*.parquet")):
        parts = f.relative_to(agg_dir).parts
        if parts[0] in OTHER_AGGREGATES_SUBDIRS or any(p.startswith((".", "_")) for p in parts):
            continue
        if f.is_file():
            out.append(f)
    return out


def _read_aggregates(agg_dir: Path) -> pd.DataFrame:
    """All aggregate Parquet files under ``agg_dir`` as one DataFrame (hive ``run_id``)."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    part = ds.partitioning(pa.schema([("run_id", pa.string())]), flavor="hive")
    files = _latency_files(agg_dir)
    if not files:
        return pd.DataFrame()
    try:
        # The union of every file's columns: runs written before a schema change lack the
        # new columns (null there), and a column null in one run is double in another.
        paths = [str(f) for f in files]
        found = ds.dataset(paths, format="parquet", partitioning=part,
                           partition_base_dir=str(agg_dir))
        schema = pa.unify_schemas(
            [*(f.physical_schema for f in found.get_fragments()),
             pa.schema([("run_id", pa.string())])], promote_options="permissive")
        dataset = ds.dataset(paths, schema=schema, format="parquet", partitioning=part,
                             partition_base_dir=str(agg_dir))
        return dataset.to_table().to_pandas()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError):
        pass
    # Schemas that cannot be unified: read the files one by one and let pandas unify.
    frames: list[pd.DataFrame] = []
    for f in files:
        try:
            df = pq.read_table(f).to_pandas()
        except (OSError, pa.ArrowException) as exc:
            log.warning("aggregates file %s unreadable (%s); left out of the history", f, exc)
            continue
        rid = next(
            (p.split("=", 1)[1] for p in f.relative_to(agg_dir).parts if p.startswith("run_id=")),
            None,
        )
        if rid is not None:
            df["run_id"] = rid
        frames.append(df)
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load_history(data_dir: str | os.PathLike[str],
                 manifests: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """Read every run's aggregates under ``<data_dir>/aggregates`` into one DataFrame.

    Adds the run facts of :data:`MANIFEST_COLUMNS` (null when a run has no manifest; such a
    run is never a baseline) and each cell's host figures
    (:data:`kafkalab.drift.busy.HOST_COLUMNS`, from the manifest's ``cells[].host``; null
    when the cell has none); ``manifests``: those already read by the caller
    (:meth:`LabData.manifests`), else they are read here. Returns an empty DataFrame when
    there are no aggregates.
    """
    lab = LabData(data_dir)
    agg_dir = lab.aggregates_dir
    if not agg_dir.is_dir() or not _latency_files(agg_dir):
        return pd.DataFrame()
    df = _read_aggregates(agg_dir)
    if df.empty:
        return df
    if "run_id" in df.columns:
        df["run_id"] = df["run_id"].astype(str)
    df = df.drop(columns=[c for c in MANIFEST_COLUMNS[1:] if c in df.columns])
    known = manifests if manifests is not None else lab.manifests()
    return join_host(df, known).merge(manifest_frame(known, lab), on="run_id", how="left")


_DAG_ID_TIME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*?-(\d{8}T\d{6}Z)(?=$|-)")


def run_id_night(run_id: str) -> pd.Timestamp | None:
    """The night a DAG run's id carries after its prefix (``nightly-20261121T000000Z``: the
    Airflow run's logical date, :mod:`kafkalab.airflow.run_ids`); None for any other id
    (a CLI run's ``20261121T000000Z-1a2b3c`` carries its start, not a night)."""
    m = _DAG_ID_TIME.match(run_id)
    if not m:
        return None
    ts = pd.to_datetime(m.group(1), format=RUN_TIME_FORMAT, utc=True, errors="coerce")
    return None if pd.isna(ts) else pd.Timestamp(ts)


def run_measured_at(run_id: str, logical_date: Any = None, started_at: Any = None
                    ) -> pd.Timestamp | None:
    """When a run measured, the key runs are ordered by (:func:`run_order`): the manifest's
    ``logical_date`` (the night a DAG run measured, also for a back-filled or re-run date),
    else the night in a DAG run's id (:func:`run_id_night`), else ``started_at``, else the
    start time a CLI run id begins with; None when none is known."""
    for ts in (_utc(logical_date), run_id_night(run_id), _utc(started_at)):
        if ts is not None:
            return ts
    started = run_id_time(run_id)
    return pd.Timestamp(started) if started is not None else None


def _utc(value: Any) -> pd.Timestamp | None:
    """``value`` (ISO 8601 text, datetime, Timestamp) as a UTC Timestamp; None when missing
    or unparsable."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        ts = pd.to_datetime(value, utc=True, errors="coerce")
    except (TypeError, ValueError):
        return None
    return None if pd.isna(ts) else pd.Timestamp(ts)


def run_order(history: pd.DataFrame) -> list[str]:
    """Run ids of ``history`` from oldest to newest (pure), by the night each run measured.

    The order key is :func:`run_measured_at`: the manifest's ``run_logical_date`` (a DAG
    run's logical date, so a back-filled night sorts among the nights around it and is
    judged against the nights before it), else the night in a DAG run's id
    (``nightly-YYYYMMDDTHHMMSSZ``), else ``run_started_at``, else the start a CLI run id
    begins with (``YYYYMMDDTHHMMSSZ-...``), else ``run_date``; ties are broken by ``run_started_at`` (runs started within one second),
    then by run id.
    """
    if history.empty or "run_id" not in history.columns:
        return []
    keys: dict[str, tuple[pd.Timestamp, pd.Timestamp]] = {}
    far_past = pd.Timestamp("1970-01-01", tz="UTC")
    for rid, grp in history.groupby("run_id", sort=False):
        started: Any = pd.NaT
        if "run_started_at" in grp.columns:
            started = pd.to_datetime(grp["run_started_at"], utc=True, errors="coerce").min()
        logical: Any = pd.NaT
        if "run_logical_date" in grp.columns:
            logical = pd.to_datetime(grp["run_logical_date"], utc=True, errors="coerce").min()
        ts: Any = run_measured_at(str(rid), logical, started)
        if ts is None and "run_date" in grp.columns:
            ts = pd.to_datetime(grp["run_date"].astype(str), utc=True, errors="coerce").min()
        keys[str(rid)] = (far_past if ts is None or pd.isna(ts) else ts,
                          far_past if pd.isna(started) else started)
    return sorted(keys, key=lambda r: (*keys[r], r))


def newest_started(*histories: pd.DataFrame) -> str | None:
    """The run of ``histories`` that started last (``run_started_at``, else the start a CLI
    run id begins with; ties and unknown starts by :func:`run_order`): the run a command
    without ``--run-id`` means, "the one just measured", which for a back-filled night is
    not the newest night. None when there are no runs."""
    frames = [h for h in histories if not h.empty and "run_id" in h.columns]
    if not frames:
        return None
    both = pd.concat(frames, ignore_index=True)
    order = run_order(both)
    starts: dict[str, pd.Timestamp] = {}
    if "run_started_at" in both.columns:
        for rid, ts in pd.to_datetime(both["run_started_at"], utc=True, errors="coerce").groupby(
                both["run_id"].astype(str)).min().items():
            if not pd.isna(ts):
                starts[str(rid)] = ts
    for rid in order:
        if rid not in starts and run_id_time(rid) is not None:
            starts[rid] = pd.Timestamp(run_id_time(rid))
    far_past = pd.Timestamp("1970-01-01", tz="UTC")
    pos = {r: i for i, r in enumerate(order)}
    return max(order, key=lambda r: (starts.get(r, far_past), pos[r]))


def write_drift(
    records: pd.DataFrame, data_dir: str | os.PathLike[str], run_id: str
) -> Path:
    """Write a run's drift records atomically; a re-run replaces the previous file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = coerce_records(records) if not records.empty else empty_records()
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), buf)
    return atomic_write(LabData(data_dir).drift_path(run_id), buf.getvalue())


PRIOR_COLUMNS: tuple[str, ...] = (
    "run_id", "series_key", "broker_is_emulator", "verdict", "is_drift", "alert_status",
    "alert_since_run_id",
)
"""The columns of the stored records that later judgements use (flags and standing)."""


def load_prior_records(data_dir: str | os.PathLike[str], run_ids: Iterable[str]) -> pd.DataFrame:
    """The :data:`PRIOR_COLUMNS` of the stored drift records of ``run_ids``, one table.

    Runs without a drift file contribute nothing (their flags are unknown: they count as
    unflagged); an unreadable file is logged and treated the same way.
    """
    import pyarrow.parquet as pq

    lab = LabData(data_dir)
    frames = []
    for rid in run_ids:
        path = lab.drift_path(rid)
        if not path.exists():
            continue
        try:
            present = set(pq.ParquetFile(path).schema_arrow.names)
            df = pq.read_table(path, columns=[c for c in PRIOR_COLUMNS if c in present]
                               ).to_pandas()
        except (OSError, ValueError) as exc:
            log.warning("drift records of run %s unreadable (%s); its flags are unknown",
                        rid, exc)
            continue
        for c in PRIOR_COLUMNS:
            if c not in df.columns:
                df[c] = None
        if not df.empty:
            frames.append(df[list(PRIOR_COLUMNS)].astype("object"))
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in PRIOR_COLUMNS})
    return pd.concat(frames, ignore_index=True)


def read_drift(data_dir: str | os.PathLike[str], run_id: str) -> pd.DataFrame | None:
    """A run's stored drift records, or None when the file does not exist.

    Columns of :data:`DRIFT_COLUMNS` missing from the file are added as nulls.
    """
    df = LabData(data_dir).drift(run_id)
    if df is None:
        return None
    for c in DRIFT_COLUMNS:
        if c not in df.columns:
            df[c] = None
    return df


__all__ = [
    "MANIFEST_COLUMNS",
    "PRIOR_COLUMNS",
    "load_history",
    "load_prior_records",
    "manifest_frame",
    "newest_started",
    "read_drift",
    "run_id_night",
    "run_measured_at",
    "run_order",
    "write_drift",
]
