"""The alert de-duplication state: which series are currently announced as drifting.

Stored at ``alerts/state.json`` of the data directory (:meth:`kafkalab.store.LabData.alert_state`);
schema ``kafkalab.alert-state/v1``, documented in ``docs/drift-and-alerts.md``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafkalab.store import LabData

STATE_SCHEMA = "kafkalab.alert-state/v1"


def state_path(data_dir: str | os.PathLike[str]) -> Path:
    """``<data_dir>/alerts/state.json``."""
    return LabData(data_dir).alert_state_path()


def empty_state() -> dict[str, Any]:
    """A state with no series alerted."""
    return {"schema": STATE_SCHEMA, "series": {}}


def load_state(data_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Read the alert state; an absent, unreadable or malformed file is an empty state
    (an unreadable one is logged)."""
    data = LabData(data_dir).alert_state()
    if data is None or not isinstance(data.get("series"), dict):
        return empty_state()
    data.setdefault("schema", STATE_SCHEMA)
    return data


def save_state(data_dir: str | os.PathLike[str], state: Mapping[str, Any]) -> Path:
    """Write the alert state atomically."""
    return LabData(data_dir).write_alert_state(state)


__all__ = ["STATE_SCHEMA", "empty_state", "load_state", "save_state", "state_path"]
