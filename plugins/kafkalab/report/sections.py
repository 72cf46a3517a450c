"""The HTML sections of a run's page, and the overview's table of runs.

A run page has five sections: (1) the latest run's table with baselines and changes, (2) time
series across runs, (3) HTTP vs Kafka clients vs Kafka's tool by payload, (4) first-message
delay, (5) validation and drift flags. Each is a function of a :class:`~kafkalab.report.data.RunView`
returning HTML text; none reads a file. Emulator and Kafka measurements are never blended:
they are separate rows, lines and bars, and the emulator ones carry the label.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from kafkalab.drift import records_to_dicts
from kafkalab.report.charts import PALETTE, BarSeries, LineSeries, svg_bar_chart, svg_line_chart
from kafkalab.report.data import RunSummary, RunView, emulator_mask, numbers, strings
from kafkalab.report.format import emu_banner, emu_span, esc, fmt_num, fmt_pct, rel_href
from kafkalab.run_ids import run_id_time
from kafkalab.scenarios.catalog import CATALOG, SCENARIOS, scenario_spec
from kafkalab.store import LabData
from kafkalab.values import as_float, is_missing

TIME_SERIES_METRICS: tuple[tuple[str, str, str], ...] = (
    ("e2e_latency_ms_p50", "End-to-end latency p50", "ms"),
    ("e2e_latency_ms_p99", "End-to-end latency p99", "ms"),
    ("throughput_msgs_per_s", "Throughput", "msgs/s"),
    ("first_message_subscribe_ms", "First message delay (subscribe)", "ms"),
)
"""The trend charts: (metric column, title, unit)."""

BAR_COLORS = {
    "rest": "#4c78a8", "kafka-python": "#f58518", "confluent-kafka": "#54a24b",
    "jvm-e2e": "#b279a2", "subscribe": "#e45756", "assign": "#72b7b2",
}
"""Bar colours of the scenarios and of the first-message modes."""

EMULATOR_BAR_COLOR = "#c9a227"

_TOOL_SCENARIOS = tuple(s.name for s in CATALOG if not s.per_message)
"""Scenarios (Kafka's tool) whose latency is the tool's printed summary (``tool_p50_ms``)."""



def scenario_rank(name: Any) -> int:
    """Where a scenario sorts: the catalog's order, unknown names last."""
    return SCENARIOS.index(name) if name in SCENARIOS else len(SCENARIOS)


def scenario_label(name: str) -> str:
    """A scenario's name in the comparison (``HTTP (rest)``): the catalog's label; a name
    the catalog does not know (an old run's) is shown as it is."""
    return scenario_spec(name).display_name if name in SCENARIOS else name


def series_label(scenario: str, client: str, payload: str, profile: str) -> str:
    """``scenario[/client] payload profile`` (the client only when it differs)."""
    who = scenario if client in ("", scenario) else f"{scenario}/{client}"
    return " ".join(p for p in (who, payload, profile) if p)


def _figure(attrs: str, caption: str, emulator: bool, svg: str) -> str:
    """A chart in a ``<figure>`` with its caption (and the emulator banner when it applies)."""
    banner = emu_banner() if emulator else ""
    return f"<figure{attrs}><figcaption>{caption}</figcaption>{banner}{svg}</figure>"


def _cells(rows: pd.DataFrame) -> pd.DataFrame:
    """A copy of a run's rows with the cell's coordinates as plain columns: ``_scenario``,
    ``_client``, ``_payload``, ``_profile`` (strings), ``_bytes``, ``_emu``, ``_rank``."""
    df = rows.copy()
    for name in ("scenario", "client", "payload", "profile"):
        df[f"_{name}"] = strings(df, name)
    df["_bytes"] = numbers(df, "payload_bytes")
    df["_emu"] = emulator_mask(df)
    df["_rank"] = df["_scenario"].map(scenario_rank)
    return df


def _cell_key(record: dict[str, Any]) -> str:
    """The cell of a drift record: its series key without the metric, plus the emulator flag."""
    return (str(record["series_key"]).rsplit("|", 1)[0]
            + f"|{bool(record['broker_is_emulator'])}")


# --------------------------------------------------------------------------- (1) latest run


def _change_cell(rec: dict[str, Any]) -> str:
    c = as_float(rec.get("change_pct"))
    klass = "" if c is None else (" up" if c > 0 else " down")
    return f'<td class="chg{klass}">{esc(fmt_pct(c))}</td>'


def section_latest(v: RunView) -> str:
    """(1) One row per cell of the run: p50/p99 against the baseline, throughput, losses."""
    h = ['<section id="latest"><h2>1. Latest run</h2>']
    if v.rows.empty:
        h.append('<p class="empty">No aggregates for this run.</p></section>')
        return "".join(h)
    df = _cells(v.rows)
    df = df.sort_values(["_rank", "_scenario", "_bytes", "_payload", "_profile"])
    base = {(_cell_key(r), str(r["metric"])): r for r in records_to_dicts(v.table_drift)}
    flagged = {_cell_key(r) for r in records_to_dicts(v.drift_records) if r.get("is_drift")}
    caption = "Latency of each cell (ms); baseline = median of the previous runs' window"
    if df["_emu"].any():
        caption += f" {emu_span()}"
    h.append('<div class="scroll">')
    h.append(f"<table class=\"latest\"><caption>{caption}</caption><thead><tr>"
             '<th class="t">scenario</th><th class="t">client</th><th class="t">payload</th>'
             '<th class="t">profile</th><th class="t">broker</th>'
             "<th>p50 ms</th><th>baseline p50</th><th>change p50</th>"
             "<th>p99 ms</th><th>baseline p99</th><th>change p99</th><th>runs in baseline</th>"
             "<th>msgs/s</th><th>lost</th></tr></thead><tbody>")
    tool_note = False
    for idx, r in df.iterrows():
        ek = "|".join([r["_scenario"], r["_client"], r["_payload"], r["_profile"],
                       str(bool(r["_emu"]))])
        p50 = as_float(numbers(df, "e2e_latency_ms_p50").get(idx))
        p99 = as_float(numbers(df, "e2e_latency_ms_p99").get(idx))
        tool50 = as_float(numbers(df, "tool_p50_ms").get(idx))
        tool99 = as_float(numbers(df, "tool_p99_ms").get(idx))
        mark50 = mark99 = ""
        if p50 is None and tool50 is not None:
            p50, mark50, tool_note = tool50, "†", True
        if p99 is None and tool99 is not None:
            p99, mark99, tool_note = tool99, "†", True
        b50 = base.get((ek, "e2e_latency_ms_p50"), {})
        b99 = base.get((ek, "e2e_latency_ms_p99"), {})
        flavor = r.get("cluster_flavor", "")
        broker = esc("" if is_missing(flavor) else flavor)
        if r["_emu"]:
            broker += " " + emu_span()
        cls = ' class="drift"' if ek in flagged else ""
        h.append(
            f"<tr{cls}><td class=\"t\">{esc(r['_scenario'])}</td>"
            f"<td class=\"t\">{esc(r['_client'])}</td><td class=\"t\">{esc(r['_payload'])}</td>"
            f"<td class=\"t\">{esc(r['_profile'])}</td><td class=\"t\">{broker}</td>"
            f"<td>{esc(fmt_num(p50))}{mark50}</td><td>{esc(fmt_num(b50.get('baseline_value')))}</td>"
            f"{_change_cell(b50)}"
            f"<td>{esc(fmt_num(p99))}{mark99}</td><td>{esc(fmt_num(b99.get('baseline_value')))}</td>"
            f"{_change_cell(b99)}"
            f"<td>{esc(b99.get('baseline_runs', b50.get('baseline_runs', 0)))}</td>"
            f"<td>{esc(fmt_num(numbers(df, 'throughput_msgs_per_s').get(idx)))}</td>"
            f"<td>{esc(fmt_num(numbers(df, 'lost_count').get(idx)))}</td></tr>"
        )
    h.append("</tbody></table></div>")
    if tool_note:
        h.append('<p class="note">† value printed by Kafka\'s EndToEndLatency tool '
                 "(whole, truncated ms), not measured by the harness.</p>")
    h.append("</section>")
    return "".join(h)


# --------------------------------------------------------------------------- (2) trends


def run_labels(order: list[str], history: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Short x labels for run ids (``11-05 01:02`` from the id's timestamp, else the id
    shortened, prefixed by its run date), and the full ids as their hover titles."""
    dates: dict[str, str] = {}
    if "run_date" in history.columns:
        for rid, d in zip(history["run_id"].astype(str), history["run_date"], strict=False):
            if not is_missing(d):
                dates.setdefault(rid, str(d)[:10])
    labels = []
    for rid in order:
        started = run_id_time(rid)
        if started is not None:
            labels.append(started.strftime("%m-%d %H:%M"))
        elif rid in dates:
            labels.append(f"{dates[rid][5:]} {rid if len(rid) <= 14 else rid[:13] + '…'}")
        else:
            labels.append(rid if len(rid) <= 14 else rid[:13] + "…")
    return labels, list(order)


def section_time_series(v: RunView) -> str:
    """(2) One line chart per metric of :data:`TIME_SERIES_METRICS`, one line per series,
    over the runs up to this one (the median of a series' rows in a run)."""
    h = ['<section id="trends"><h2>2. Trends across runs</h2>']
    hist = v.history
    if hist.empty:
        h.append('<p class="empty">No aggregates yet: nothing to plot.</p></section>')
        return "".join(h)
    df = hist.copy()
    df["_rid"] = df["run_id"].astype(str)
    df["_label"] = [
        series_label(a, b, c, d) for a, b, c, d in zip(
            strings(df, "scenario"), strings(df, "client"), strings(df, "payload"),
            strings(df, "profile"), strict=True)
    ]
    df["_emu"] = emulator_mask(df)
    df["_rank"] = strings(df, "scenario").map(scenario_rank)
    if v.emulator or df["_emu"].any():
        h.append(f'<p class="note">Dashed lines: {emu_span()} (emulator broker).</p>')
    h.append('<div class="charts">')
    any_chart = False
    for metric, title, unit in TIME_SERIES_METRICS:
        sub = df.assign(_v=numbers(df, metric)).dropna(subset=["_v"])
        if sub.empty:
            continue
        runs = [r for r in v.order if r in set(sub["_rid"])]
        pos = {r: i for i, r in enumerate(runs)}
        labels, titles = run_labels(runs, df)
        series: list[LineSeries] = []
        keys = sub[["_rank", "_label", "_emu"]].drop_duplicates().sort_values(
            ["_rank", "_label", "_emu"])
        for _, k in keys.iterrows():
            part = sub[(sub["_label"] == k["_label"]) & (sub["_emu"] == k["_emu"])]
            values: list[float | None] = [None] * len(runs)
            for rid, val in part.groupby("_rid")["_v"].median().items():
                values[pos[str(rid)]] = float(val)
            series.append(LineSeries(name=str(k["_label"]), values=values,
                                     emulator=bool(k["_emu"])))
        any_chart = True
        svg = svg_line_chart(f"{title} ({unit})", labels, series, unit, x_titles=titles)
        h.append(_figure(f' data-metric="{esc(metric)}"', f"{esc(title)} ({esc(unit)})",
                         any(s.emulator for s in series), svg))
    h.append("</div>")
    if not any_chart:
        h.append('<p class="empty">None of the plotted metrics has values yet.</p>')
    h.append("</section>")
    return "".join(h)


# --------------------------------------------------------------------------- (3) comparison


def section_comparison(v: RunView) -> str:
    """(3) Per profile, the p50 of each scenario by payload: a bar chart and its table."""
    h = ['<section id="comparison"><h2>3. HTTP vs Kafka clients vs Kafka\'s tool</h2>',
         '<p class="note">Median end-to-end latency (p50, ms) of this run by payload size; '
         "the Kafka tool's bar is its printed p50 (<code>tool_p50_ms</code>).</p>"]
    if v.rows.empty:
        h.append('<p class="empty">No aggregates for this run.</p></section>')
        return "".join(h)
    df = _cells(v.rows)
    df["_v"] = numbers(df, "e2e_latency_ms_p50")
    tool = df["_scenario"].isin(_TOOL_SCENARIOS)
    tool_p50 = numbers(df, "tool_p50_ms")[tool]
    df.loc[tool, "_v"] = tool_p50.where(tool_p50.notna(), df.loc[tool, "_v"])
    df = df.dropna(subset=["_v"])
    if df.empty:
        h.append('<p class="empty">No latency values for this run.</p></section>')
        return "".join(h)
    for profile in sorted(df["_profile"].unique()):
        sub = df[df["_profile"] == profile]
        payloads = (sub.groupby("_payload")["_bytes"].min().sort_values(na_position="last")
                    .index.tolist())
        bars: list[BarSeries] = []
        present = sorted(
            {(str(a), bool(b)) for a, b in zip(sub["_scenario"], sub["_emu"], strict=True)},
            key=lambda k: (scenario_rank(k[0]), k[0], k[1]),
        )
        table_rows = []
        for sc, emu in present:
            part = sub[(sub["_scenario"] == sc) & (sub["_emu"] == emu)]
            med = part.groupby("_payload")["_v"].median()
            values = [float(med[p]) if p in med.index else None for p in payloads]
            color = (EMULATOR_BAR_COLOR if emu
                     else BAR_COLORS.get(sc, PALETTE[len(bars) % len(PALETTE)]))
            bars.append(BarSeries(name=scenario_label(sc), values=values, color=color,
                                  emulator=emu))
            cells = "".join(f"<td>{esc(fmt_num(x))}</td>" for x in values)
            label = esc(scenario_label(sc)) + (f" {emu_span()}" if emu else "")
            table_rows.append(f'<tr><td class="t">{label}</td>{cells}</tr>')
        emu_any = any(b.emulator for b in bars)
        title = f"p50 latency by payload, profile {profile or '—'}"
        h.append(_figure(f' data-profile="{esc(profile)}"', esc(title), emu_any,
                         svg_bar_chart(title, payloads, bars, "ms")))
        cap = f"p50 ms, profile {esc(profile or '—')}" + (f" {emu_span()}" if emu_any else "")
        head = "".join(f"<th>{esc(p)}</th>" for p in payloads)
        h.append(f'<table class="comparison"><caption>{cap}</caption><thead><tr>'
                 f'<th class="t">scenario</th>{head}</tr></thead><tbody>'
                 f"{''.join(table_rows)}</tbody></table>")
    h.append("</section>")
    return "".join(h)


# --------------------------------------------------------------------------- (4) first message


def section_first_message(v: RunView) -> str:
    """(4) First-message delay of each client, with ``subscribe`` and with ``assign``."""
    h = ['<section id="first-message"><h2>4. First-message delay</h2>',
         '<p class="note">Consumer creation to first record in hand, with a consumer group '
         "(<code>subscribe</code>) and with manual assignment (<code>assign</code>); median "
         "over this run's payloads and profiles, ms.</p>"]
    df = v.rows.copy()
    if df.empty:
        h.append('<p class="empty">No aggregates for this run.</p></section>')
        return "".join(h)
    df["_who"] = [
        series_label(a, b, "", "") for a, b in zip(strings(df, "scenario"),
                                                   strings(df, "client"), strict=True)
    ]
    df["_rank"] = strings(df, "scenario").map(scenario_rank)
    df["_sub"] = numbers(df, "first_message_subscribe_ms")
    df["_asg"] = numbers(df, "first_message_assign_ms")
    df["_emu"] = emulator_mask(df)
    df = df[df["_sub"].notna() | df["_asg"].notna()]
    if df.empty:
        h.append('<p class="empty">No first-message measurements in this run.</p></section>')
        return "".join(h)
    g = (df.groupby(["_who", "_emu"]).agg(rank=("_rank", "min"), sub=("_sub", "median"),
                                          asg=("_asg", "median"))
         .reset_index().sort_values(["rank", "_who", "_emu"]).set_index("_who"))
    flags = [bool(e) for e in g["_emu"]]
    groups = [str(x) + (" [EMU]" if e else "") for x, e in zip(g.index, flags, strict=True)]
    emu = any(flags)
    bars = [
        BarSeries("subscribe (group)", [as_float(x) for x in g["sub"]], BAR_COLORS["subscribe"],
                  emulator_values=flags),
        BarSeries("assign (manual)", [as_float(x) for x in g["asg"]], BAR_COLORS["assign"],
                  emulator_values=flags),
    ]
    title = "First-message delay by client"
    h.append(_figure("", esc(title), emu, svg_bar_chart(title, groups, bars, "ms")))
    cap = "first-message delay, ms" + (f" {emu_span()}" if emu else "")
    rows = "".join(
        f'<tr><td class="t">{esc(who)}{" " + emu_span() if e else ""}</td>'
        f"<td>{esc(fmt_num(s))}</td><td>{esc(fmt_num(a))}</td></tr>"
        for who, s, a, e in zip(g.index, g["sub"], g["asg"], flags, strict=True)
    )
    h.append(f'<table class="first-message"><caption>{cap}</caption><thead><tr>'
             '<th class="t">client</th><th>subscribe ms</th><th>assign ms</th></tr></thead>'
             f"<tbody>{rows}</tbody></table></section>")
    return "".join(h)


# --------------------------------------------------------------------------- (5) checks


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
    broker = emu_span() if r.get("broker_is_emulator") else "Kafka"
    return (f'<tr class="drift"><td class="t">{esc(who)}</td>'
            f'<td class="t">{esc(r.get("metric"))}</td>'
            f'<td class="t">{esc(r.get("direction"))}</td>'
            f"<td>{esc(fmt_num(r.get('baseline_value')))}</td>"
            f"<td>{esc(fmt_num(r.get('latest_value')))}</td>"
            f"<td>{esc('from 0' if change is None else fmt_pct(change))}</td>"
            f"<td>{esc('∞' if z is None else f'{z:.1f}')}</td>"
            f"<td>{esc(f'{confidence:.2f}')}</td>"
            f'<td class="t">{broker}</td></tr>')


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
    flags = [r for r in recs if r.get("is_drift")]
    if not flags:
        h.append('<p class="ok">No drift.</p>')
        return "".join(h)
    emu = any(r.get("broker_is_emulator") for r in flags)
    cap = f"{len(flags)} drift flag(s)" + (f" {emu_span()}" if emu else "")
    h.append(f'<table class="drift-flags"><caption>{cap}</caption><thead><tr>'
             '<th class="t">series</th><th class="t">metric</th><th class="t">direction</th>'
             "<th>baseline</th><th>latest</th><th>change</th><th>robust z</th>"
             '<th>confidence</th><th class="t">broker</th></tr></thead><tbody>')
    h.extend(_drift_flag_row(r) for r in flags)
    h.append("</tbody></table>")
    return "".join(h)


def section_checks(v: RunView, page_dir: Path) -> str:
    """(5) The run's validation outcome (failed expectations, link to the HTML report) and
    its drift flags (stored records, or computed now when none are stored)."""
    return (f'<section id="checks"><h2>5. Validation and drift</h2><h3>Validation</h3>'
            f"{_validation(v, page_dir)}{_drift(v)}</section>")


# --------------------------------------------------------------------------- pages' bodies


def run_sections(v: RunView, page_dir: Path) -> str:
    """The body of a run's page (``page_dir`` is where it is written, for relative links):
    an emulator banner when it applies, then the five sections."""
    parts = []
    if v.cluster_is_emulator:
        parts.append(emu_banner(": this run's broker is an emulator; its latencies say "
                                "nothing about Kafka."))
    elif v.emulator:
        n = int(emulator_mask(v.rows).sum()) if not v.rows.empty else 0
        parts.append(emu_banner(f": {n} cell(s) of this run ran on an emulator broker (marked "
                                "wherever they appear); their latencies say nothing about "
                                "Kafka."))
    parts += [section_latest(v), section_time_series(v), section_comparison(v),
              section_first_message(v), section_checks(v, page_dir)]
    return "".join(parts)


def runs_table(summaries: list[RunSummary], lab: LabData, out_dir: Path) -> str:
    """The overview's table of runs (newest first), each linking to its page."""
    if not summaries:
        return '<p class="empty">No runs yet: no aggregates or run manifests found.</p>'
    h = ['<table class="runs"><caption>Runs, newest first</caption><thead><tr>'
         '<th class="t">run</th><th class="t">started</th><th class="t">status</th>'
         '<th class="t">cluster</th><th>cells</th><th>drift flags</th>'
         '<th class="t">validation</th></tr></thead><tbody>']
    for s in summaries:
        ok = None if s.validation is None else s.validation.get("success")
        vtxt = ("—" if s.validation is None else '<span class="ok">pass</span>' if ok is True
                else '<span class="fail">fail</span>' if ok is False else "?")
        nflags = "—" if s.drift_flags is None else str(s.drift_flags)
        href = rel_href(lab.report_page_dir(s.run_id, out_dir) / "index.html", out_dir)
        h.append(f'<tr><td class="t"><a href="{href}">{esc(s.run_id)}</a></td>'
                 f'<td class="t">{esc(s.started_at)}</td>'
                 f'<td class="t">{esc(s.status)}</td>'
                 f'<td class="t">{esc(s.flavor)}{" " + emu_span() if s.emulator else ""}</td>'
                 f"<td>{s.cells}</td><td>{esc(nflags)}</td><td class=\"t\">{vtxt}</td></tr>")
    h.append("</tbody></table>")
    return "".join(h)


__all__ = [
    "BAR_COLORS",
    "TIME_SERIES_METRICS",
    "run_labels",
    "run_sections",
    "runs_table",
    "scenario_label",
    "scenario_rank",
    "section_checks",
    "section_comparison",
    "section_first_message",
    "section_latest",
    "section_time_series",
    "series_label",
]
