"""What the two sections of a fault run's page share: how a trial's fields read as text,
the colours of their charts' markers, how many trials get a chart each.

:mod:`kafkalab.report.durability_section` (broker faults) and
:mod:`kafkalab.report.consumer_faults_section` (consumer-group faults) import it; the
judgements on the data (which trial is a finding, why a value is missing) are
:mod:`kafkalab.report.fault_data`'s.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from kafkalab.report.charts import XMark
from kafkalab.report.fault_data import count, missing_reason
from kafkalab.report.format import MISSING, fmt_num
from kafkalab.values import as_bool, as_float, is_missing

MAX_ALL_TIMELINES = 12
"""Up to this many trials, every trial's chart is drawn (its timeline, its group's lag);
beyond, one per cell (profile × fault × acks, or fault × commit strategy) and every
finding."""

MARK_COLORS = {"fault": "#b3261e", "heal": "#ff7f0e", "leader": "#9467bd", "isr": "#1e7b34",
               "controller": "#1f77b4", "stepdown": "#8c564b",
               "assigned": "#9467bd", "rejoin": "#1e7b34"}
"""Colours of the charts' markers, by what they mark."""


def field_text(r: Any, key: str) -> str:
    """Field ``key`` of a trial row as text (``""`` when missing)."""
    value = r.get(key)
    return "" if is_missing(value) else str(value)


def ms_text(r: Any, key: str) -> str:
    """``412 ms``, else ``—`` with the reason where it is known (``— (no fault)``)."""
    f = as_float(r.get(key))
    if f is not None:
        return f"{fmt_num(f)} ms"
    reason = missing_reason(r, key)
    return f"{MISSING} ({reason})" if reason else MISSING


def trial_emulator(r: Any) -> bool:
    """Whether a trial ran on an emulator broker."""
    return as_bool(r.get("broker_is_emulator"))


def trial_number(r: Any) -> str:
    """A trial's number within its cell (``2``), ``—`` when missing."""
    n = count(r, "trial")
    return MISSING if n is None else str(n)


def by_trial_number(trials: pd.DataFrame) -> pd.DataFrame:
    """Trial rows (of one cell) ordered by their number (``trial``)."""
    return trials.assign(_n=pd.to_numeric(trials.get("trial"), errors="coerce")
                         if "trial" in trials.columns else 0.0).sort_values(["_n"])


def trial_rows(table: pd.DataFrame, trial_id: str) -> pd.DataFrame:
    """The rows of trial ``trial_id`` in a per-trial table (``fault_timeline``,
    ``group_lag``); none when the table has no ``trial_id``."""
    if "trial_id" not in table.columns:
        return table.iloc[0:0]
    return table[table["trial_id"].astype(str) == trial_id]


def event_marks(events: list[tuple[float, str, str]]) -> list[XMark]:
    """A chart's markers of a trial's events, ``(seconds since the trial's start, kind,
    label)``: in time order, each label a row lower, coloured by kind (:data:`MARK_COLORS`),
    labelled ``<label> 6.0 s``."""
    return [XMark(x, f"{label} {x:.1f} s", color=MARK_COLORS[kind], row=i, kind=kind)
            for i, (x, kind, label) in enumerate(sorted(events))]


__all__ = [
    "MARK_COLORS",
    "MAX_ALL_TIMELINES",
    "by_trial_number",
    "event_marks",
    "field_text",
    "ms_text",
    "trial_emulator",
    "trial_number",
    "trial_rows",
]
