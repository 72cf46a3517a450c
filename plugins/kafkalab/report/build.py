"""Build the static, self-contained trend report under ``<data_dir>/reports/``.

Layout (see ``docs/drift-and-alerts.md``):

* ``reports/index.html``: every run (newest first) linking to its page, the version
  matrices' verdicts (:mod:`kafkalab.report.versions_section`), then the newest run's
  sections mirrored;
* ``reports/<run_id>/index.html``: one page per run with five sections and the percentile
  spectrum (:mod:`kafkalab.report.pages` lays it out; a latency run's sections:
  :mod:`kafkalab.report.latency_sections`, :mod:`kafkalab.report.trends`; a load run's:
  :mod:`kafkalab.report.load_sections`; a fault run's, "Durability and availability":
  :mod:`kafkalab.report.fault_sections`), under a banner when the run is stale, failed or
  incomplete or some of its outputs are stale.

Charts are inline SVG (:mod:`kafkalab.report.charts`); CSS and the small hover script are
inlined from ``assets/``. Pages reference nothing outside the data directory (no network at
all; the GX Data Docs link: :func:`data_docs_link`). Runs on an emulator broker carry the
label "EMULATOR — not Kafka" on every table and chart they appear in. This module assembles pages and writes them; the data comes from
:mod:`kafkalab.report.data`.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from kafkalab.report.data import RunView, load_report_data, run_summaries, run_view
from kafkalab.report.format import asset, emu_span, esc, rel_href
from kafkalab.report.pages import run_sections, runs_table
from kafkalab.report.versions_section import matrices_section
from kafkalab.store import LabData, atomic_write
from kafkalab.urls import DATA_DOCS_PATH, REPORTS_PATH


def _page(title: str, header_meta: str, nav: str, body: str) -> str:
    """A whole HTML page: inlined CSS and script, a strict no-network CSP."""
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{esc(title)}</title><style>{asset('report.css')}</style></head><body>"
        f"<header><h1>{esc(title)}</h1><div class=\"meta\">{header_meta}</div>"
        f"<nav class=\"meta\">{nav}</nav></header><main>{body}</main>"
        f"<footer class=\"note\" style=\"padding:0 24px 16px\">Generated {generated} by "
        "kafkalab. Self-contained: no external resources.</footer>"
        f"<script>{asset('report.js')}</script></body></html>\n"
    )


def _run_meta(v: RunView) -> str:
    """The header line of a run's page: id, state (and stale outputs), start, cluster,
    emulator label."""
    m = v.manifest or {}
    cl = m.get("cluster") or {}
    bits = [f"run {esc(v.run_id)}"]
    if v.state or m.get("status"):
        bits.append(f"state {esc(v.state or m.get('status'))}")
    if v.stale_outputs:
        bits.append(f"stale: {esc(', '.join(v.stale_outputs))}")
    if m.get("started_at"):
        bits.append(f"started {esc(m['started_at'])}")
    if cl.get("flavor"):
        bits.append(f"cluster {esc(cl.get('flavor'))} {esc(cl.get('version') or '')}".strip())
    if v.emulator:
        bits.append(emu_span())
    return " · ".join(bits)


def data_docs_link(lab: LabData, page_dir: Path) -> str:
    """The link to the Great Expectations Data Docs (``validation/docs/index.html``), or
    ``""`` when none were built.

    Its ``href`` is relative (works from the files, offline); a page served by Airflow's
    api-server under :data:`~kafkalab.urls.REPORTS_PATH` serves the Data
    Docs elsewhere (:data:`~kafkalab.urls.DATA_DOCS_PATH`), so the page's
    script swaps in ``data-served-href`` when the page's address is under
    ``data-served-under``, keeping whatever precedes that segment (the api-server's own
    path, e.g. ``[api] base_url = http://host/airflow``).
    """
    index = lab.validation_docs_dir / "index.html"
    if not index.is_file():
        return ""
    return (f'<a class="data-docs" href="{rel_href(index, page_dir)}" '
            f'data-served-href="{DATA_DOCS_PATH}/index.html" '
            f'data-served-under="{REPORTS_PATH}/">Great Expectations Data Docs</a>')


def _nav(*links: str) -> str:
    return " · ".join(x for x in links if x)


def build_report(
    data_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str] | None = None,
    run_id: str | None = None,
    config_path: str | os.PathLike[str] | None = None,
) -> Path:
    """Write the trend report and return the path of the page built for ``run_id``.

    Args:
        data_dir: the lab data directory.
        out_dir: where to write (default ``<data_dir>/reports``).
        run_id: build only this run's page (plus the overview); default: every run's page.
        config_path: drift config (default ``include/drift.yaml``; built-in defaults if absent).

    Returns:
        ``<out_dir>/<run_id>/index.html`` when ``run_id`` is given, else ``<out_dir>/index.html``.
        Missing or empty data gives pages that say so; it never raises for absent files.
    """
    lab = LabData(data_dir)
    out = Path(out_dir) if out_dir is not None else lab.reports_dir
    data = load_report_data(lab, config_path)
    written: Path | None = None
    pages = [run_id] if run_id is not None else list(data.order)
    views: dict[str, RunView] = {}  # a run's view once: its page and the mirror
    for rid in pages:
        view = views[rid] = run_view(data, rid)
        page_dir = lab.report_page_dir(rid, out)
        nav = _nav(f'<a href="{rel_href(lab.report_index_path(out), page_dir)}">← all runs</a>',
                   data_docs_link(lab, page_dir))
        page = _page(f"Kafka Latency Lab — run {rid}", _run_meta(view), nav,
                     run_sections(view, page_dir))
        written = atomic_write(page_dir / "index.html", page)

    # Overview: all runs, then the newest run mirrored.
    parts = ["<section id=\"runs\"><h2>Runs</h2>",
             runs_table(run_summaries(data, pages_built=set(pages)), lab, out), "</section>",
             matrices_section(lab, out)]
    meta = f"{len(data.order)} run(s) in {esc(lab.root.name or str(lab.root))}"
    if data.order:
        latest = data.order[-1]
        href = rel_href(lab.report_page_dir(latest, out) / "index.html", out)
        parts.append(f'<h2 class="mirror">Newest run: <a href="{href}">{esc(latest)}</a></h2>')
        latest_view = views.get(latest)
        parts.append(run_sections(latest_view if latest_view is not None
                                  else run_view(data, latest), out))
    else:
        parts.append('<p class="empty">No data yet. Run <code>kafkalab run</code>, then the '
                     "aggregation job, then rebuild this report.</p>")
    index = atomic_write(lab.report_index_path(out),
                         _page("Kafka Latency Lab — trend report", meta,
                               data_docs_link(lab, out), "".join(parts)))
    return written if run_id is not None and written is not None else index


__all__ = ["build_report", "data_docs_link"]
