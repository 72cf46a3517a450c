"""The sections of a start-up run's page (seed 000's first-message delay, docs/first-message.md):

1. **First record** (``#startup``): the answer, one line per client, and the cases' table (the
   median first record and its parts, each with its n, min and max), from the run's
   ``startup_cases`` aggregate (``spark_jobs/aggregate_startup.py``);
2. **Run state and validation** (``#checks``, :mod:`kafkalab.report.checks_section`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from kafkalab.report.checks_section import section_checks
from kafkalab.report.data import RunView
from kafkalab.report.format import esc, fmt_count, fmt_num
from kafkalab.report.page_parts import scroll_table
from kafkalab.startup_figures import KAFKA_DEFAULT_INITIAL_REBALANCE_DELAY_MS, answer_lines

__all__ = ["CASE_COLUMNS", "startup_sections"]

CASE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("first_record_ms", "first record"), ("client_start_ms", "client start"),
    ("join_ms", "join"), ("fetch_ms", "fetch"),
    ("offsets_topic_ready_ms", "offsets topic led"), ("coordinator_ready_ms", "coordinator ready"))
"""The figures of the cases' table, in order, with their headings (medians, ms)."""


def _figure_cell(row: dict[str, Any], name: str) -> str:
    value = row.get(name)
    if value is None or pd.isna(value):
        return "<td>–</td>"
    spread = (f"n={fmt_count(row.get(f'{name}_n'))}, {fmt_num(row.get(f'{name}_min'))}–"
              f"{fmt_num(row.get(f'{name}_max'))}")
    return f'<td title="{esc(spread)}">{fmt_num(value)}</td>'


def _cases_table(cases: pd.DataFrame) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in (
        "cluster", "delay ms", "client", "join", "protocol", "members", "probes", "failed",
        *(label for _, label in CASE_COLUMNS)))
    rows = []
    for row in cases.to_dict(orient="records"):
        keys = "".join(f"<td>{esc(row.get(k))}</td>" for k in (
            "cluster_state", "initial_rebalance_delay_ms", "client", "join", "group_protocol",
            "members", "probes", "failed"))
        rows.append(f"<tr>{keys}{''.join(_figure_cell(row, n) for n, _ in CASE_COLUMNS)}</tr>")
    return scroll_table("startup", "Medians in ms after each consumer's start (hover a figure "
                        "for its n, min and max)", head, "".join(rows))


def _section_startup(v: RunView) -> str:
    h = ['<section id="startup"><h2>1. First record</h2>',
         '<p class="note">Each probe times new consumers from their construction to their '
         "first record, on the run's own one-node cluster started fresh: cold (the cluster's "
         "first group) or warm, with the broker's group.initial.rebalance.delay.ms as set, the "
         "classic or the KIP-848 group protocol, or assign() with no group. The parts (client "
         "start, join, fetch) add up to the first record; a probe that timed out or failed is "
         "counted, never in a median. See docs/first-message.md.</p>"]
    cases = v.rows
    if cases.empty:
        h.append('<p class="note">Not aggregated yet: run <code>kafkalab aggregate '
                 f"{esc(v.run_id)}</code>.</p></section>")
        return "".join(h)
    versions = sorted({str(x) for x in cases.get("kafka_version", pd.Series(dtype=str)).dropna()})
    h.append(f"<p>Measured on Kafka {esc(', '.join(versions) or 'unknown')}.</p>")
    workload = (v.manifest or {}).get("workload") or {}
    default_delay = workload.get("broker_default_delay_ms", KAFKA_DEFAULT_INITIAL_REBALANCE_DELAY_MS)
    lines = answer_lines(cases.to_dict(orient="records"), int(default_delay))
    h.append("<ul class=\"answer\">" + "".join(f"<li>{esc(line)}</li>" for line in lines)
             + "</ul>")
    unsupported = [u for u in workload.get("unsupported") or [] if isinstance(u, dict)]
    if unsupported:
        h.append('<p class="note">Not measured: ' + "; ".join(
            f"{esc(u.get('client'))} with group.protocol={esc(u.get('group_protocol'))} "
            f"({esc(u.get('reason'))})" for u in unsupported) + ".</p>")
    h.append(_cases_table(cases))
    h.append("</section>")
    return "".join(h)


def startup_sections(v: RunView, page_dir: Path) -> str:
    """The sections of a start-up run's page (the caller adds the banners)."""
    return _section_startup(v) + section_checks(v, page_dir, number=2)
