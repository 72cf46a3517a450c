"""The checks block of every run page: the run's state and stale outputs, its validation
outcome and its drift flags (``#checks``), and the banner at the top of a page whose run or
outputs are not to be trusted as they are.

Each is a function of a :class:`~kafkalab.report.data.RunView` returning HTML text; none
reads a file. :func:`state_text` and :func:`stale_text` also write the overview's table of
runs (:mod:`kafkalab.report.pages`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafkalab.drift import records_to_dicts
from kafkalab.report.data import RunView
from kafkalab.report.format import (
    MISSING,
    emu_mark,
    emu_span,
    esc,
    fmt_num,
    fmt_pct,
    rel_href,
)
from kafkalab.values import as_float


def _validation(v: RunView, page_dir: Path) -> str:
    val = v.validation
    h = []
    if val is None:
        h.append('<p class="empty">No validation results for this run.</p>')
    else:
        ok = val.get("success")
        if val.get("unreadable"):
            h.append('<p class="fail">Validation results file is unreadable.</p>')
        elif ok is True:
            h.append('<p class="ok">All expectations passed.</p>')
        elif ok is False:
            h.append('<p class="fail">Validation failed.</p>')
        else:
            h.append('<p class="empty">Validation outcome unknown.</p>')
        failed = val.get("failed") or []
        if isinstance(failed, list) and failed:
            h.append('<table class="validation"><caption>Failed expectations</caption><thead>'
                     '<tr><th class="t">suite</th><th class="t">expectation</th>'
                     '<th class="t">summary</th></tr></thead><tbody>')
            for f in failed:
                f = f if isinstance(f, dict) else {"summary": f}
                summary = f.get("summary")
                if not isinstance(summary, str):
                    summary = json.dumps(summary, default=str)
                h.append(f'<tr><td class="t">{esc(f.get("suite"))}</td>'
                         f'<td class="t">{esc(f.get("expectation"))}</td>'
                         f'<td class="t">{esc(summary)}</td></tr>')
            h.append("</tbody></table>")
    if v.validation_html is not None:
        h.append(f'<p><a href="{rel_href(v.validation_html, page_dir)}">Validation report '
                 "(HTML)</a></p>")
    return "".join(h)


def _drift_flag_row(r: dict[str, Any]) -> str:
    who = str(r.get("series_key") or "").rsplit("|", 1)[0].replace("|", " ")
    change = as_float(r.get("change_pct"))
    z = as_float(r.get("robust_z"))
    confidence = as_float(r.get("confidence")) or 0.0
    flavor = str(r.get("cluster_flavor") or "")
    broker = (emu_span() if r.get("broker_is_emulator")
              else "HTTP (no broker)" if flavor == "http" else "Kafka")
    return (f'<tr class="drift"><td class="t">{esc(who)}</td>'
            f'<td class="t">{esc(r.get("metric"))}</td>'
            f'<td class="t">{esc(r.get("direction"))}</td>'
            f"<td>{esc(fmt_num(r.get('baseline_value')))}</td>"
            f"<td>{esc(fmt_num(r.get('latest_value')))}</td>"
            f"<td>{esc('from 0' if change is None else fmt_pct(change))}</td>"
            f"<td>{esc('∞' if z is None else f'{z:.1f}')}</td>"
            f"<td>{esc(f'{confidence:.2f}')}</td>"
            f'<td class="t">{esc(r.get("rule") or MISSING)}</td>'
            f'<td class="t">{esc(r.get("alert_status") or MISSING)}</td>'
            f'<td class="t">{broker}</td></tr>')


def _busy_host(recs: list[dict[str, Any]]) -> str:
    """The table of the run's cells measured on a busy host (verdict ``busy_host``: not
    judged, never a baseline), one row per cell with its host figures; ``""`` when none."""
    cells: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in recs:
        if r.get("verdict") == "busy_host":
            cells.setdefault(tuple(r.get(k) for k in ("scenario", "client", "payload",
                                                      "profile", "workload", "cell_id")), r)
    if not cells:
        return ""
    rows = []
    for r in cells.values():
        who = " ".join(str(r.get(k)) for k in ("scenario", "payload", "profile", "cell_id")
                       if r.get(k))
        note = str(r.get("note") or "")
        why = note.split("(", 1)[1].split("): not judged", 1)[0] if "): not judged" in note else ""
        rows.append(f'<tr class="busy"><td class="t">{esc(who)}</td>'
                    f"<td>{esc(fmt_num(r.get('host_other_cpu_pct')))}</td>"
                    f"<td>{esc(fmt_num(r.get('run_queue_avg')))}</td>"
                    f"<td>{esc(fmt_num(r.get('steal_pct')))}</td>"
                    f'<td class="t">{esc(why or MISSING)}</td></tr>')
    return (f'<table class="busy-host"><caption>{len(cells)} cell(s) measured on a busy host: '
            "not judged, never a baseline (drift config <code>busy_host</code>)</caption>"
            '<thead><tr><th class="t">cell</th><th>other CPU %</th><th>run queue</th>'
            '<th>steal %</th><th class="t">why</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def _drift(v: RunView) -> str:
    h = ["<h3>Drift flags</h3>"]
    recs = records_to_dicts(v.drift_records)
    if not v.drift_stored and recs:
        h.append('<p class="note">Computed when this report was built (no stored drift '
                 "records for this run).</p>")
    if not recs:
        h.append('<p class="empty">No drift records for this run.</p>')
        return "".join(h)
    counts: dict[str, int] = {}
    for r in recs:
        counts[str(r.get("verdict"))] = counts.get(str(r.get("verdict")), 0) + 1
    h.append('<p class="verdicts">' + ", ".join(
        f"{esc(k)}: {n}" for k, n in sorted(counts.items())) + "</p>")
    h.append(_busy_host(recs))
    flags = [r for r in recs if r.get("is_drift")]
    if not flags:
        h.append('<p class="ok">No drift.</p>')
        return "".join(h)
    emu = any(r.get("broker_is_emulator") for r in flags)
    cap = f"{len(flags)} drift flag(s)" + emu_mark(emu)
    h.append(f'<table class="drift-flags"><caption>{cap}</caption><thead><tr>'
             '<th class="t">series</th><th class="t">metric</th><th class="t">direction</th>'
             "<th>baseline</th><th>latest</th><th>change</th><th>robust z</th>"
             '<th>confidence</th><th class="t">rule</th><th class="t">alert</th>'
             '<th class="t">broker</th></tr></thead><tbody>')
    h.extend(_drift_flag_row(r) for r in flags)
    h.append("</tbody></table>")
    return "".join(h)


BAD_STATES = ("stale", "failed", "incomplete")
"""Run states a page announces in a banner (``running`` is shown, not announced)."""

_OUTPUT_NAMES = {"aggregates": "aggregates", "validation": "validation",
                 "drift": "drift records", "report": "report page"}


def state_text(state: str) -> str:
    """A run's state as a page shows it: ``complete`` green, a :data:`BAD_STATES` red,
    ``—`` when unknown."""
    klass = "fail" if state in BAD_STATES else "ok" if state == "complete" else ""
    return f'<span class="state {klass}">{esc(state or MISSING)}</span>'


def stale_text(outputs: tuple[str, ...]) -> str:
    """A run's stale outputs by their names on a page (``drift records, report page``)."""
    return ", ".join(_OUTPUT_NAMES.get(o, o) for o in outputs)


def state_banner(v: RunView) -> str:
    """The banner at the top of a run's page when its state or outputs are not to be trusted
    as they are: a stale, failed or incomplete run; outputs not recomputed since a cell was
    measured again. ``""`` otherwise."""
    lines = []
    if v.state in BAD_STATES:
        why = _reason(v.state, v.state_reason)
        why = f" ({why})" if why else ""
        lines.append(f"This run is <strong>{esc(v.state)}</strong>{esc(why)}.")
    if v.stale_outputs:
        lines.append(f"Stale outputs: <strong>{esc(stale_text(v.stale_outputs))}</strong> "
                     "were computed before a cell of this run was measured again; the figures "
                     "below may not include the new measurement until they are recomputed.")
    return f'<div class="state-banner">{" ".join(lines)}</div>' if lines else ""


def _reason(state: str, reason: str) -> str:
    """A state's reason when it says more than the state (``closed complete`` does not)."""
    return "" if reason in ("", state, f"closed {state}") else reason


def _state(v: RunView) -> str:
    """The run's state and stale outputs, as the checks section shows them."""
    why = _reason(v.state, v.state_reason)
    reason = f" — {esc(why)}" if why else ""
    stale = (f'<p class="fail">Stale outputs: {esc(stale_text(v.stale_outputs))}.</p>'
             if v.stale_outputs else '<p class="ok">No stale outputs.</p>'
             if v.manifest is not None else "")
    return f"<h3>Run state</h3><p>{state_text(v.state)}{reason}</p>{stale}"


def section_checks(v: RunView, page_dir: Path, number: int = 5) -> str:
    """(5) The run's state and stale outputs, its validation outcome (failed expectations,
    link to the HTML report) and its drift flags (stored records, or computed now when none
    are stored) when its kind is judged for drift
    (:attr:`kafkalab.kinds.RunKind.drift_judged`: not a fault run); ``number``: the
    section's number on its page."""
    drift = v.kind.drift_judged
    title = "Run state, validation and drift" if drift else "Run state and validation"
    return (f'<section id="checks"><h2>{number}. {title}</h2>{_state(v)}'
            f"<h3>Validation</h3>{_validation(v, page_dir)}{_drift(v) if drift else ''}"
            "</section>")



__all__ = ["BAD_STATES", "section_checks", "stale_text", "state_banner", "state_text"]
