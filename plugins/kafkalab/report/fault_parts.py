"""What the two sections of a fault run's page share: how a trial's fields read as text,
the colours of their charts' markers, how many trials get a chart each.

:mod:`kafkalab.report.durability_section` (broker faults) and
:mod:`kafkalab.report.consumer_faults_section` (consumer-group faults) import it; the
judgements on the data (which trial is a finding, why a value is missing) are
:mod:`kafkalab.report.fault_data`'s.
"""

from __future__ import annotations

from typing import Any

from kafkalab.report.fault_data import count, missing_reason
from kafkalab.report.format import MISSING, fmt_num
from kafkalab.values import as_bool, as_float, is_missing

MAX_ALL_TIMELINES = 12
"""Up to this many trials, every trial's chart is drawn (its timeline, its group's lag);
beyond, one per cell (profile × fault × acks, or fault × commit strategy) and every
finding."""

MARK_COLORS = {"fault": "#b3261e", "heal": "#ff7f0e", "leader": "#9467bd", "isr": "#1e7b34",
               "assigned": "#9467bd", "rejoin": "#1e7b34"}
"""Colours of the charts' markers, by what they mark."""


def field_text(r: Any, key: str) -> str:
    """Field ``key`` of a trial row as text (``""`` when missing)."""
    value = r.get(key)
    return "" if is_missing(value) else str(value)


def count_text(r: Any, key: str) -> str:
    """Count ``key`` of a trial row: ``1,234``, ``—`` when missing."""
    n = count(r, key)
    return MISSING if n is None else f"{n:,}"


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


__all__ = [
    "MARK_COLORS",
    "MAX_ALL_TIMELINES",
    "count_text",
    "field_text",
    "ms_text",
    "trial_emulator",
]
