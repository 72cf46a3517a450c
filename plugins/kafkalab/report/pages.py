"""The body of each page: a run page's sections by the run's kind, and the overview's table
of runs. Only :mod:`kafkalab.report.build` imports this module.

A run page shows the state banner and the emulator banner when they apply, then the
sections of its kind (:attr:`kafkalab.kinds.RunKind.report_sections`, ``module:function``,
imported when a page of that kind is drawn: :mod:`kafkalab.report.latency_sections`,
:mod:`kafkalab.report.load_sections`, :mod:`kafkalab.report.fault_sections`), then the
clients' effective settings (:mod:`kafkalab.report.settings_section`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from kafkalab.kinds import RunKind
from kafkalab.report.checks_section import stale_text, state_banner, state_text
from kafkalab.report.data import RunSummary, RunView, emulator_mask
from kafkalab.report.format import MISSING, emu_banner, emu_mark, esc, rel_href
from kafkalab.report.settings_section import settings_section
from kafkalab.store import LabData


def run_sections(v: RunView, page_dir: Path) -> str:
    """The body of a run's page (``page_dir`` is where it is written, for relative links):
    the state banner and the emulator banner when they apply, then the sections of its kind
    (:attr:`kafkalab.kinds.RunKind.report_sections`:
    :func:`kafkalab.report.latency_sections.latency_sections`,
    :func:`kafkalab.report.load_sections.load_sections`,
    :func:`kafkalab.report.fault_sections.fault_sections`), then the clients' effective
    settings (:func:`kafkalab.report.settings_section.settings_section`)."""
    parts = [state_banner(v)]
    if v.cluster_is_emulator:
        parts.append(emu_banner(": this run's broker is an emulator; its latencies say "
                                "nothing about Kafka."))
    elif v.emulator:
        n = int(emulator_mask(v.rows).sum()) if not v.rows.empty else 0
        unit = f"{v.kind.measured_unit}(s)"
        parts.append(emu_banner(f": {n} {unit} of this run ran on an emulator broker (marked "
                                "wherever they appear); their latencies say nothing about "
                                "Kafka."))
    # what each client was given, last on every kind of page ("" when nothing was recorded)
    parts += [kind_sections(v.kind)(v, page_dir), settings_section(v.manifest or {})]
    return "".join(parts)


def kind_sections(kind: RunKind) -> Callable[[RunView, Path], str]:
    """The function that draws the sections of a run of ``kind``
    (:attr:`kafkalab.kinds.RunKind.report_sections`, ``module:function``, imported now)."""
    module, _, name = kind.report_sections.partition(":")
    draw: Callable[[RunView, Path], str] = getattr(importlib.import_module(module), name)
    return draw


def runs_table(summaries: list[RunSummary], lab: LabData, out_dir: Path) -> str:
    """The overview's table of runs (newest first), each linking to its page."""
    if not summaries:
        return '<p class="empty">No runs yet: no aggregates or run manifests found.</p>'
    h = ['<table class="runs"><caption>Runs, newest first</caption><thead><tr>'
         '<th class="t">run</th><th class="t">kind</th><th class="t">started</th>'
         '<th class="t">state</th>'
         '<th class="t">stale outputs</th>'
         '<th class="t">cluster</th><th>cells</th><th>drift flags</th>'
         '<th class="t">validation</th></tr></thead><tbody>']
    for s in summaries:
        ok = None if s.validation is None else s.validation.get("success")
        vtxt = ("—" if s.validation is None else '<span class="ok">pass</span>' if ok is True
                else '<span class="fail">fail</span>' if ok is False else "?")
        nflags = "—" if s.drift_flags is None else str(s.drift_flags)
        href = rel_href(lab.report_page_dir(s.run_id, out_dir) / "index.html", out_dir)
        h.append(f'<tr data-kind="{esc(s.kind)}"><td class="t"><a href="{href}">'
                 f"{esc(s.run_id)}</a></td><td class=\"t\">{esc(s.kind)}</td>"
                 f'<td class="t">{esc(s.started_at)}</td>'
                 f'<td class="t" title="{esc(s.state_reason)}">{state_text(s.state or s.status)}</td>'
                 f'<td class="t{" fail" if s.stale_outputs else ""}">'
                 f"{esc(stale_text(s.stale_outputs) or MISSING)}</td>"
                 f'<td class="t">{esc(s.flavor)}{emu_mark(s.emulator)}</td>'
                 f"<td>{s.cells}</td><td>{esc(nflags)}</td><td class=\"t\">{vtxt}</td></tr>")
    h.append("</tbody></table>")
    return "".join(h)


__all__ = ["kind_sections", "run_sections", "runs_table"]
