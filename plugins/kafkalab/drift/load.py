"""The load runs' aggregates, as drift and the report read them.

A load run (``kafkalab load``, the ``load_experiment`` DAG, the nightly's fan-out cell) is
aggregated by ``spark_jobs/aggregate_load.py`` into three tables under
``aggregates/load/run_id=<id>/`` (schema: ``docs/aggregates-schema.md``, load section):

* ``load_cells.parquet``: one row per cell (the spec, the cluster, every key of the cell's
  JSON summary, the e2e p50/p99 confidence intervals);
* ``load_consumers.parquet``: one row per (cell, consumer);
* ``load_lag.parquet``: one row per (cell, consumer, lag sample).

A table may be one Parquet file or a folder of part files (as Spark writes it); files whose
names start with ``.`` or ``_`` are ignored. Its validation result is
``validation/<run_id>-load.json`` (``validation/<run_id>.json`` is read when that is absent).

:func:`load_cells_history` gives every run's cells in the shape the drift rule needs: the
series parts of :data:`kafkalab.drift.records.LOAD_SERIES_COLUMNS` (aliases of the spec's
names resolved: ``encoding`` → ``payload_encoding``, ``target_rate_msgs_per_s`` →
``rate_msgs_per_s`` …) and the run facts of :data:`kafkalab.drift.history.MANIFEST_COLUMNS`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

import pandas as pd

from kafkalab.drift.history import manifest_frame, run_order
from kafkalab.drift.records import LOAD_SCENARIO, LOAD_SERIES_COLUMNS
from kafkalab.kinds import LOAD
from kafkalab.store import LabData

log = logging.getLogger(__name__)

LOAD_TABLES: tuple[str, ...] = ("load_cells", "load_consumers", "load_lag")
"""The tables of a load run's aggregates (``<name>.parquet``)."""

COLUMN_ALIASES: dict[str, tuple[str, ...]] = {
    "payload_encoding": ("payload_encoding", "encoding"),
    "rate_msgs_per_s": ("rate_msgs_per_s", "target_rate_msgs_per_s"),
    "cluster_flavor": ("cluster_flavor", "flavor", "broker_flavor"),
    "broker_version": ("broker_version", "cluster_version"),
    "broker_count": ("broker_count", "cluster_broker_count"),
    "broker_is_emulator": ("broker_is_emulator", "is_emulator", "cluster_is_emulator"),
}
"""Where each series part may be found in ``load_cells`` (the first present, non-null wins)."""


def read_load_table(lab: LabData, run_id: str, table: str) -> pd.DataFrame:
    """One table of a load run (:data:`LOAD_TABLES`); an empty frame when it is absent or
    unreadable (logged)."""
    import pyarrow.parquet as pq

    if table not in LOAD_TABLES:
        raise ValueError(f"unknown load table {table!r} (known: {', '.join(LOAD_TABLES)})")
    path = lab.run_aggregates_dir(run_id, LOAD) / f"{table}.parquet"
    if not path.exists():
        return pd.DataFrame()
    try:
        df = pq.read_table(path).to_pandas()
    except (OSError, ValueError) as exc:
        log.warning("load table %s unreadable (%s)", path, exc)
        return pd.DataFrame()
    if "run_id" not in df.columns:
        df["run_id"] = run_id
    df["run_id"] = df["run_id"].astype(str)
    return df


def load_run_ids(lab: LabData) -> list[str]:
    """The runs with load aggregates (``aggregates/load/run_id=<id>/``), sorted."""
    root = lab.kind_aggregates_dir(LOAD)
    if not root.is_dir():
        return []
    return sorted(p.name.split("=", 1)[1] for p in root.iterdir()
                  if p.is_dir() and p.name.startswith("run_id="))


def _first_present(df: pd.DataFrame, names: tuple[str, ...]) -> pd.Series:
    out = pd.Series(None, index=df.index, dtype="object")
    for name in names:
        if name in df.columns:
            out = out.where(out.notna(), df[name].astype("object"))
    return out


def normalize_load_cells(cells: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``load_cells`` rows with every series part of
    :data:`~kafkalab.drift.records.LOAD_SERIES_COLUMNS` as a column (``scenario`` =
    ``load``, aliases resolved, absent parts null), ``acks`` as text (``0``, ``1``,
    ``all``) and ``broker_is_emulator`` as a bool."""
    df = cells.copy()
    for name, aliases in COLUMN_ALIASES.items():
        df[name] = _first_present(df, aliases)
    for name in LOAD_SERIES_COLUMNS:
        if name not in df.columns:
            df[name] = None
    df["scenario"] = LOAD_SCENARIO
    df["acks"] = df["acks"].map(_acks_text).astype("object")
    df["broker_is_emulator"] = df["broker_is_emulator"].map(
        lambda v: bool(v) if not pd.isna(v) else False).astype(bool)
    return df


def _acks_text(value: Any) -> Any:
    """``-1``/``all`` -> ``all``; ``1``/``1.0`` -> ``1``; None stays None."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return None
    text = str(value).strip()
    if text in ("-1", "-1.0", "all"):
        return "all"
    try:
        return str(int(float(text)))
    except ValueError:
        return text


def load_cells_history(data_dir: str | os.PathLike[str],
                       manifests: Mapping[str, Mapping[str, Any]] | None = None
                       ) -> pd.DataFrame:
    """Every load run's ``load_cells`` rows, normalized (:func:`normalize_load_cells`), with
    the run facts of :data:`kafkalab.drift.history.MANIFEST_COLUMNS` (``run_validated``
    from :meth:`LabData.validation` of the load kind). Empty when no run has load aggregates."""
    lab = LabData(data_dir)
    frames = [f for f in (read_load_table(lab, rid, "load_cells") for rid in load_run_ids(lab))
              if not f.empty]
    if not frames:
        return pd.DataFrame()
    # Columns null in a whole run are left out before concatenating (their type is unknown);
    # they come back null where absent.
    df = normalize_load_cells(pd.concat([f.dropna(axis=1, how="all") for f in frames],
                                        ignore_index=True))
    known = manifests if manifests is not None else lab.manifests()
    facts = manifest_frame(known, lab)
    facts["run_validated"] = facts["run_id"].map(
        lambda rid: load_validated(lab, str(rid))).astype(bool)
    df = df.drop(columns=[c for c in facts.columns[1:] if c in df.columns])
    return df.merge(facts, on="run_id", how="left")


def load_validated(lab: LabData, run_id: str) -> bool:
    """True only when the load run's validation result exists and says ``success: true``."""
    doc = lab.validation(run_id, LOAD)
    return doc is not None and doc.get("success") is True


def runs_order(*histories: pd.DataFrame) -> list[str]:
    """The run ids of several histories (latency and load) in one order, oldest first
    (:func:`kafkalab.drift.history.run_order`)."""
    cols = ("run_id", "run_started_at", "run_logical_date", "run_date")
    frames = [h[[c for c in cols if c in h.columns]] for h in histories
              if not h.empty and "run_id" in h.columns]
    if not frames:
        return []
    return run_order(pd.concat(frames, ignore_index=True))


def all_runs_order(data_dir: str | os.PathLike[str]) -> list[str]:
    """Every run with aggregates, latency or load, oldest first."""
    from kafkalab.drift.history import load_history

    lab = LabData(data_dir)
    manifests = lab.manifests()
    return runs_order(load_history(lab.root, manifests), load_cells_history(lab.root, manifests))


__all__ = [
    "COLUMN_ALIASES",
    "LOAD_TABLES",
    "all_runs_order",
    "load_cells_history",
    "load_run_ids",
    "load_validated",
    "normalize_load_cells",
    "read_load_table",
    "runs_order",
]
