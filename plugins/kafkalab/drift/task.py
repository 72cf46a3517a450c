"""The drift step of a run: load the history, judge one run, store its records."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from kafkalab.drift.config import load_drift_config_or_default
from kafkalab.drift.detect import detect_drift
from kafkalab.drift.history import load_history, run_order, write_drift
from kafkalab.drift.records import empty_records


def run_drift(
    data_dir: str | os.PathLike[str],
    run_id: str | None = None,
    config_path: str | os.PathLike[str] | None = None,
) -> tuple[pd.DataFrame, Path | None]:
    """Load history, detect drift for ``run_id`` (default newest) and write the records.

    ``config_path`` defaults to :func:`kafkalab.paths.drift_config_path` (built-in rules
    when that file does not exist).

    Returns the records and the written path (None when there is no history at all).
    """
    config = load_drift_config_or_default(config_path)
    history = load_history(data_dir)
    if history.empty:
        return empty_records(), None
    rid = run_id or run_order(history)[-1]
    records = detect_drift(history, config, rid)
    return records, write_drift(records, data_dir, rid)


__all__ = ["run_drift"]
