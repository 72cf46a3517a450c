"""Parts that the sections of every kind of run page share: a chart's ``<figure>``, a wide
table in its scrolling box, where a scenario sorts, and one part of a series key.

Pure functions of their arguments, returning HTML or plain text; no section imports another
section's module for them (:mod:`kafkalab.report.latency_sections`,
:mod:`kafkalab.report.trends`, :mod:`kafkalab.report.load_sections` and the fault run's
sections all import this one).
"""

from __future__ import annotations

from typing import Any

from kafkalab.catalog import SCENARIOS
from kafkalab.report.format import emu_banner
from kafkalab.values import as_float, is_missing


def figure(attrs: str, caption: str, emulator: bool, svg: str, note: str = "") -> str:
    """A chart in a ``<figure>``: ``attrs`` (the element's attributes, HTML, with their
    leading space), its ``caption`` (HTML), ``note`` (HTML: what it measures, its facts), the
    emulator banner when ``emulator``, then ``svg`` (or what stands in for the chart)."""
    banner = emu_banner() if emulator else ""
    return f"<figure{attrs}><figcaption>{caption}</figcaption>{note}{banner}{svg}</figure>"


def scroll_table(klass: str, caption: str, head: str, rows: str) -> str:
    """A wide table in its horizontally scrolling box: ``<table class="klass">`` with its
    ``caption``, the header cells ``head`` and the body rows ``rows`` (all HTML)."""
    return (f'<div class="scroll"><table class="{klass}"><caption>{caption}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>")


def scenario_rank(name: Any) -> int:
    """Where a scenario sorts: the catalog's order (the serial harness beside the tool),
    unknown names last."""
    return SCENARIOS.index(name) if name in SCENARIOS else len(SCENARIOS)


def key_part(value: Any) -> str:
    """One part of a series key, the same whether read from aggregates or drift records:
    ``""`` for a missing value, ``1024`` for the float ``1024.0``, the text otherwise."""
    if is_missing(value) or value == "":
        return ""
    if isinstance(value, bool):
        return str(value)
    f = as_float(value)
    if f is not None and not isinstance(value, str):
        return str(int(f)) if f.is_integer() else repr(f)
    return str(value)


__all__ = ["figure", "key_part", "scenario_rank", "scroll_table"]
