"""Accepted levels: a person says "this drift is the new normal" (``kafkalab drift accept``).

A drifting series stays in alert until it recovers or a person accepts its new level.
Accepting a series records, for its series key, the run its accepted level starts at
(``from_run_id``) and the last run judged when it was accepted (``through_run_id``). From
then on that series' baseline uses only runs from ``from_run_id`` on, and the drift flags of
the runs from ``from_run_id`` to ``through_run_id`` (judged against the old level) no
longer keep them out of the baseline.

The file is ``drift/acceptances.json`` of the data directory
(:meth:`kafkalab.store.LabData.drift_acceptances_path`), schema
``kafkalab.drift-acceptances/v1``, documented in ``docs/drift-and-alerts.md``. Every
acceptance is kept (an audit trail); for a series the last one listed is in force.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from kafkalab.errors import ConfigError
from kafkalab.store import LabData, locked
from kafkalab.values import as_bool, is_missing

ACCEPTANCES_SCHEMA = "kafkalab.drift-acceptances/v1"


@dataclass(frozen=True)
class Acceptance:
    """One accepted level of one series."""

    series_key: str
    from_run_id: str
    """The first run of the accepted level: the series' baseline starts here."""
    through_run_id: str
    """The last run of the series judged when the level was accepted."""
    accepted_at: str
    """ISO 8601 UTC time of the acceptance."""
    accepted_by: str | None = None
    """The OS user who accepted it."""
    note: str | None = None


def parse_acceptances(doc: Mapping[str, Any] | None, source: str = "acceptances") -> list[Acceptance]:
    """The acceptances of a parsed ``acceptances.json`` document (None: none).

    Raises:
        ConfigError: the document is not the documented shape.
    """
    if doc is None:
        return []
    items = doc.get("acceptances") if isinstance(doc, Mapping) else None
    if not isinstance(items, list):
        raise ConfigError(f"{source}: expected an object with an 'acceptances' list")
    out = []
    for i, item in enumerate(items):
        try:
            out.append(Acceptance(
                series_key=str(item["series_key"]), from_run_id=str(item["from_run_id"]),
                through_run_id=str(item["through_run_id"]),
                accepted_at=str(item["accepted_at"]), accepted_by=item.get("accepted_by"),
                note=item.get("note")))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{source}: acceptances[{i}]: missing or bad {exc}") from None
    return out


def load_acceptances(data_dir: str | os.PathLike[str] | None = None) -> list[Acceptance]:
    """Every acceptance stored in the data directory, in the order they were made.

    Raises:
        ConfigError: the file exists but cannot be read or is malformed (acceptances are
            never silently dropped: that would put accepted series back in alert).
    """
    lab = LabData(data_dir)
    path = lab.drift_acceptances_path()
    try:
        doc = lab.drift_acceptances()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: unreadable ({exc})") from None
    return parse_acceptances(doc, str(path))


def save_acceptances(data_dir: str | os.PathLike[str] | None,
                     acceptances: Iterable[Acceptance]) -> Path:
    """Write every acceptance (replacing the file atomically)."""
    doc = {"schema": ACCEPTANCES_SCHEMA, "acceptances": [asdict(a) for a in acceptances]}
    return LabData(data_dir).write_drift_acceptances(doc)


def in_force(acceptances: Iterable[Acceptance] | None) -> dict[str, Acceptance]:
    """The acceptance in force for each series: the last one listed."""
    return {a.series_key: a for a in acceptances or ()}


def _records_in_order(prior: pd.DataFrame, order: Sequence[str]) -> pd.DataFrame:
    pos = {rid: i for i, rid in enumerate(order)}
    df = prior.copy()
    df["run_id"] = df["run_id"].astype(str)
    df["_pos"] = df["run_id"].map(pos)
    return df.dropna(subset=["_pos"]).sort_values("_pos", kind="stable")


def _in_alert(rec: Mapping[str, Any]) -> bool:
    status = rec.get("alert_status")
    if is_missing(status):  # records written before alert_status existed
        return as_bool(rec.get("is_drift"))
    return str(status) in ("drifting", "alerting")


def plan_acceptance(target: str, prior: pd.DataFrame, order: Sequence[str],
                    accepted_at: str, accepted_by: str | None = None,
                    note: str | None = None) -> list[Acceptance]:
    """The acceptances ``kafkalab drift accept TARGET`` makes (pure).

    Args:
        target: a series key (it contains ``|``): accept the level of that series from the
            first drifting run of its current alert; or a run id: accept every series
            flagged in that run, from that run.
        prior: the stored drift records of every run.
        order: run ids, oldest first (:func:`kafkalab.drift.history.run_order`).

    Raises:
        ConfigError: unknown series or run, a series not in alert, or a run with no flags.
    """
    recs = _records_in_order(prior, order) if not prior.empty else prior
    if recs.empty:
        raise ConfigError("no drift records yet: run `kafkalab drift` first")
    latest_of: dict[str, dict[str, Any]] = {}
    for rec in recs.to_dict(orient="records"):
        latest_of[str(rec["series_key"])] = rec
    made: list[Acceptance] = []
    if "|" in target:
        rec = latest_of.get(target)
        if rec is None:
            raise ConfigError(f"no drift record has series key {target!r}")
        if not _in_alert(rec):
            raise ConfigError(f"series {target!r} is not in alert (last judged in run "
                              f"{rec['run_id']}: {rec.get('verdict')}); nothing to accept")
        since = rec.get("alert_since_run_id")
        start = str(rec["run_id"]) if is_missing(since) else str(since)
        made.append(Acceptance(target, start, str(rec["run_id"]), accepted_at, accepted_by,
                               note))
        return made
    of_run = recs[recs["run_id"] == target]
    if of_run.empty:
        raise ConfigError(f"no drift records for run {target!r} (neither a known run id nor "
                          "a series key SCENARIO|...|METRIC): run `kafkalab drift --run-id` first")
    flagged = of_run[of_run["is_drift"].map(as_bool)]
    if flagged.empty:
        raise ConfigError(f"run {target!r} has no drift flags to accept")
    for key in dict.fromkeys(str(k) for k in flagged["series_key"]):
        through = str(latest_of[key]["run_id"])
        made.append(Acceptance(key, target, through, accepted_at, accepted_by, note))
    return made


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return None


def record_acceptance(data_dir: str | os.PathLike[str] | None, target: str,
                      note: str | None = None, now: datetime | None = None) -> list[Acceptance]:
    """Accept the new level of a series (``target`` = series key) or of every series flagged
    in a run (``target`` = run id); store it and return what was accepted.

    See :func:`plan_acceptance` for the rules. ``kafkalab drift accept`` calls
    :func:`kafkalab.alerts.accept_drift`, which also takes the accepted series out of the
    alert de-duplication state (no recovery is announced for them).

    Raises:
        ConfigError: see :func:`plan_acceptance`; or the acceptances file is unreadable.
    """
    from kafkalab.drift.history import load_prior_records
    from kafkalab.drift.load import all_runs_order

    lab = LabData(data_dir)
    order = all_runs_order(lab.root)  # latency and load runs
    prior = load_prior_records(lab.root, order)
    stamp = (now or datetime.now(UTC)).isoformat()
    made = plan_acceptance(target, prior, order, stamp, _user(), note)
    with locked(lab.drift_acceptances_path()):  # read-modify-write: no acceptance lost
        save_acceptances(lab.root, [*load_acceptances(lab.root), *made])
    return made


__all__ = [
    "ACCEPTANCES_SCHEMA",
    "Acceptance",
    "in_force",
    "load_acceptances",
    "parse_acceptances",
    "plan_acceptance",
    "record_acceptance",
    "save_acceptances",
]
