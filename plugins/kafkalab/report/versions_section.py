"""The overview's "Version matrices" section: each version matrix's verdict, its versions side
by side (``docs/versions.md``).

It reads the files the matrix wrote (``versions/<id>.json``) and its last verdict
(``versions/<id>.verdict.json``, written by ``kafkalab versions run|verdict`` and the
``version_matrix`` DAG); a matrix not judged yet is listed with its state. Per series, one
row per metric: the baseline's median over the rounds, then for every other version its
median, the change with its 95 % interval and the drift rule's verdict. Every version links
to its load run's page, and to its start-up run's where the matrix measured the first-message
delay (the ``first msg`` series).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafkalab.report.format import MISSING, esc, rel_href
from kafkalab.report.page_parts import scroll_table
from kafkalab.store import LabData, read_json

MAX_MATRICES = 5
"""Matrices shown, newest first (the others stay in ``versions/``)."""


def _num(x: Any) -> str:
    if x is None:
        return MISSING
    x = float(x)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def _change(m: dict[str, Any]) -> str:
    if m.get("change_pct") is None:
        return MISSING
    text = f"{m['change_pct']:+.1f} %"
    lo, hi = m.get("change_ci_low_pct"), m.get("change_ci_high_pct")
    if lo is not None and hi is not None:
        text += f" ({lo:+.0f} … {hi:+.0f} %)"
    return text


def _verdict(m: dict[str, Any]) -> str:
    verdict = str(m.get("verdict") or MISSING)
    klass = ("fail" if verdict == "regressed" else "ok" if verdict in ("ok", "improved")
             else "")
    title = f' title="{esc(m["note"])}"' if m.get("note") else ""
    star = " *" if m.get("significant") else ""
    return f'<span class="{klass}"{title}>{esc(verdict)}{star}</span>'


def _run_link(lab: LabData, run_id: str, out_dir: Path, text: str) -> str:
    href = rel_href(lab.report_page_dir(run_id, out_dir) / "index.html", out_dir)
    return f'<a href="{href}">{esc(text)}</a>'


def _runs_note(lab: LabData, runs: dict[str, Any], versions: list[str], out_dir: Path,
               what: str) -> str:
    """A note saying ``what`` rows come from, linking each version's run (``""``: no runs)."""
    if not runs:
        return ""
    links = ", ".join(_run_link(lab, str(runs[v]), out_dir, "Kafka " + v)
                      for v in versions if v in runs)
    return f'<p class="note">{esc(what)} ({links}).</p>'


def _matrix_table(lab: LabData, doc: dict[str, Any], verdict: dict[str, Any],
                  out_dir: Path) -> str:
    versions = [str(v) for v in verdict.get("versions") or []]
    baseline = str(verdict.get("baseline"))
    runs = verdict.get("runs") or {}
    others = [v for v in versions if v != baseline]
    head = ('<th class="t">series</th><th class="t">metric</th>'
            f'<th>{_run_link(lab, runs.get(baseline, ""), out_dir, "Kafka " + baseline)} '
            "(baseline)</th>"
            + "".join(f'<th>{_run_link(lab, runs.get(v, ""), out_dir, "Kafka " + v)}</th>'
                      f"<th>change (95 % interval)</th><th>verdict</th>" for v in others))
    rows = []
    for s in verdict.get("series") or []:
        by_metric: dict[str, dict[str, dict[str, Any]]] = {}
        for m in s.get("metrics") or []:
            by_metric.setdefault(str(m["metric"]), {})[str(m["version"])] = m
        for metric, per_version in by_metric.items():
            first = next(iter(per_version.values()))
            cells = "".join(
                f"<td>{_num(per_version[v].get('v_value'))}</td>"
                f"<td>{esc(_change(per_version[v]))}</td><td class=\"t\">"
                f"{_verdict(per_version[v])}</td>" if v in per_version
                else f"<td>{MISSING}</td><td>{MISSING}</td><td class=\"t\">{MISSING}</td>"
                for v in others)
            rows.append(f'<tr data-series="{esc(s.get("series"))}" data-metric="{esc(metric)}">'
                        f'<td class="t">{esc(s.get("label"))}</td><td class="t">{esc(metric)}'
                        f"</td><td>{_num(first.get('b_value'))}</td>{cells}</tr>")
    counts = verdict.get("rounds") or {}
    rounds = ", ".join(f"{esc(v)}: {counts.get(v, 0)}" for v in versions)
    caption = (f"Matrix {esc(doc.get('matrix_id'))}: each version against Kafka "
               f"{esc(baseline)}, medians over the rounds ({rounds}); * the change's interval "
               "excludes 0 and the drift rule moved; judged "
               f"{esc(verdict.get('judged_at') or MISSING)}")
    missing = "".join(f'<p class="note">{esc(m.get("label"))}: not measured on '
                      f'{esc(", ".join(m.get("versions") or []))}</p>'
                      for m in verdict.get("missing") or [])
    for s in verdict.get("series") or []:
        failed = {k: n for k, n in (s.get("failed_probes") or {}).items() if n}
        if failed:
            missing += (f'<p class="note">{esc(s.get("label"))}: '
                        f'{esc(s.get("failed_what") or "failed")}: '
                        + esc(", ".join(f"{k} {n}" for k, n in failed.items())) + "</p>")
    missing += _runs_note(lab, verdict.get("startup_runs") or {}, versions, out_dir,
                          'The "first msg" rows: each new consumer\'s time to its first record, '
                          "medians per round over the cases' probes, from each version's "
                          "start-up run")
    missing += _runs_note(lab, verdict.get("faults_runs") or {}, versions, out_dir,
                          'The "fault" rows: each round\'s broker-fault trials on a fresh '
                          "3-broker cluster of the version (acked records lost summed, the times "
                          "medians), from each version's fault run")
    return (f'<div data-matrix="{esc(doc.get("matrix_id"))}">'
            f"{scroll_table('versions', caption, head, ''.join(rows))}{missing}</div>")


def matrices_section(lab: LabData, out_dir: Path) -> str:
    """The section (``""`` when the data directory holds no version matrix)."""
    ids = lab.matrix_ids()
    if not ids:
        return ""
    parts = ['<section id="versions"><h2>Version matrices: does upgrading make us slower?'
             "</h2>"]
    for matrix_id in reversed(ids[-MAX_MATRICES:]):
        doc = read_json(lab.matrix_path(matrix_id))
        verdict = read_json(lab.matrix_verdict_path(matrix_id))
        if not isinstance(doc, dict):
            continue
        if not isinstance(verdict, dict):
            parts.append(f'<p class="empty">Matrix {esc(matrix_id)} ({esc(doc.get("status"))}'
                         f", Kafka {esc(', '.join(doc.get('spec', {}).get('versions') or []))}"
                         "): not judged yet (<code>kafkalab versions verdict "
                         f"{esc(matrix_id)}</code>).</p>")
            continue
        parts.append(_matrix_table(lab, doc, verdict, out_dir))
    parts.append("</section>")
    return "".join(parts)


__all__ = ["MAX_MATRICES", "matrices_section"]
