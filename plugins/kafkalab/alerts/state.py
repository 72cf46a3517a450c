"""The alert de-duplication state: which series are currently announced as drifting.

Stored at ``alerts/state.json`` of the data directory (:meth:`kafkalab.store.LabData.alert_state`);
schema ``kafkalab.alert-state/v2``, documented in ``docs/drift-and-alerts.md``. A state of an
earlier schema is read as empty: its series keys (``scenario|client|payload|profile|metric``)
can never match a record of today's keys, so they would stay "announced" forever.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalab.store import LabData, locked

if TYPE_CHECKING:
    from kafkalab.drift.acceptances import Acceptance

log = logging.getLogger(__name__)

STATE_SCHEMA = "kafkalab.alert-state/v2"


def state_path(data_dir: str | os.PathLike[str]) -> Path:
    """``<data_dir>/alerts/state.json``."""
    return LabData(data_dir).alert_state_path()


def empty_state() -> dict[str, Any]:
    """A state with no series alerted."""
    return {"schema": STATE_SCHEMA, "series": {}}


def load_state(data_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Read the alert state; an absent, unreadable or malformed file, or one of an earlier
    schema, is an empty state (an unreadable or outdated one is logged)."""
    data = LabData(data_dir).alert_state()
    if data is None or not isinstance(data.get("series"), dict):
        return empty_state()
    schema = data.get("schema", STATE_SCHEMA)
    if schema != STATE_SCHEMA:
        log.warning("alert state %s has schema %s, not %s: its series keys are outdated; "
                    "starting from an empty state", state_path(data_dir), schema, STATE_SCHEMA)
        return empty_state()
    data["schema"] = STATE_SCHEMA
    return data


def save_state(data_dir: str | os.PathLike[str], state: Mapping[str, Any]) -> Path:
    """Write the alert state atomically."""
    return LabData(data_dir).write_alert_state(state)


def forget_series(data_dir: str | os.PathLike[str], series_keys: Iterable[str]) -> list[str]:
    """Remove ``series_keys`` from the state (their new level was accepted: no recovery will
    be announced); returns the keys that were there. The file is written only when it
    changes."""
    with locked(state_path(data_dir)):
        state = load_state(data_dir)
        series = state["series"]
        gone = [k for k in dict.fromkeys(series_keys) if k in series]
        if gone:
            for k in gone:
                series.pop(k)
            save_state(data_dir, state)
    return gone


def accept_drift(data_dir: str | os.PathLike[str] | None, target: str,
                 note: str | None = None, now: datetime | None = None) -> list[Acceptance]:
    """``kafkalab drift accept``: accept the new level of a series (``target`` = series key)
    or of every series flagged in a run (``target`` = run id)
    (:func:`kafkalab.drift.record_acceptance`), then take the accepted series out of the
    alert state (no recovery will be announced for them); returns what was accepted.

    Raises:
        ConfigError: see :func:`kafkalab.drift.acceptances.plan_acceptance`; or the
            acceptances file is unreadable.
    """
    from kafkalab.drift.acceptances import record_acceptance

    made = record_acceptance(data_dir, target, note=note, now=now)
    forget_series(LabData(data_dir).root, [a.series_key for a in made])
    return made


__all__ = ["STATE_SCHEMA", "accept_drift", "empty_state", "forget_series", "load_state",
           "save_state", "state_path"]
