"""The sections of a latency run's page.

A latency run page has five sections: (1) the latest run's table with baselines, changes
and 95 % intervals, (2) time series across runs and (2b) the percentile spectrum per cell
(:mod:`kafkalab.report.trends`), (3) HTTP vs Kafka clients vs Kafka's tool by payload,
(4) first-message delay, (5) the run's state, validation and drift flags
(:mod:`kafkalab.report.checks_section`). Each is a function of a
:class:`~kafkalab.report.data.RunView` returning HTML text; none reads a file.

What every figure is, said where it is shown (:mod:`kafkalab.report.notes`): a table or chart
that puts REST and Kafka side by side carries the line saying what each one's e2e measures;
an undefined percentile shows its reason (``n<100``, ``censored``) and is never plotted;
Kafka's tool is shown with the settings it used, not under a profile it did not apply, and
the serial-mode harness stands beside it. Emulator and Kafka measurements are never blended:
they are separate rows, lines and bars, and the emulator ones carry the label.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from kafkalab.catalog import SCENARIOS, scenario_spec
from kafkalab.drift import SERIES_COLUMNS, records_to_dicts
from kafkalab.report.charts import PALETTE, BarSeries, svg_bar_chart
from kafkalab.report.checks_section import section_checks
from kafkalab.report.data import (
    RunView,
    emulator_mask,
    numbers,
    parse_percentile_note,
    percentile_reasons,
    strings,
)
from kafkalab.report.format import MISSING, emu_mark, esc, fmt_num, fmt_pct
from kafkalab.report.notes import (
    MEASURES_SHORT,
    MESSAGE_RATE_NOTE,
    ci_cell,
    count_cell,
    is_tool,
    measures_note,
    mixes_rest_and_kafka,
    percentile_cell,
    profile_text,
    scenario_kind,
    settings_text,
    settings_title,
)
from kafkalab.report.page_parts import figure, key_part, scenario_rank, scroll_table
from kafkalab.report.trends import section_spectrum, section_time_series
from kafkalab.values import as_float, is_missing

BAR_COLORS = {
    "rest": "#4c78a8", "kafka-python": "#f58518", "confluent-kafka": "#54a24b",
    "confluent-kafka-serial": "#2f8f83", "jvm-e2e": "#b279a2", "subscribe": "#e45756",
    "assign": "#72b7b2",
}
"""Bar colours of the scenarios and of the first-message modes."""

EMULATOR_BAR_COLOR = "#c9a227"

UNDEFINED_NOTE = ("n<100: too few messages for that percentile (p99 needs 100, p99.9 needs "
                  "1,000); censored: lost or failed messages, counted as “at least the "
                  "timeout”, reach its rank. Undefined percentiles are never plotted nor "
                  "drift-checked.")
CI_NOTE = ("95 % CI: distribution-free interval of the percentile (order statistics, exact "
           "binomial); ≥ x: only the lower end is known (too few messages for the upper, or "
           "it is censored) — an undefined p99 can still be known to be at least x.")
TOOL_NOTE = ("† printed by Kafka's EndToEndLatency tool: whole, truncated ms, over all its "
             "messages including its warm-up; compare its mean (4 decimals) rather than its "
             "p50. The tool applies its own settings (shown), never the profile's linger or "
             "fetch settings; the serial harness (confluent-kafka-serial) is its like-for-like "
             "counterpart.")


def scenario_label(name: str) -> str:
    """A scenario's name in the comparison (``HTTP (rest)``): the catalog's label; a name
    the catalog does not know (an old run's) is shown as it is."""
    return scenario_spec(name).display_name if name in SCENARIOS else name


def _cells(rows: pd.DataFrame) -> pd.DataFrame:
    """A copy of a run's rows with the cell's coordinates as plain columns: ``_scenario``,
    ``_client``, ``_payload``, ``_profile`` (strings), ``_bytes``, ``_emu``, ``_rank``,
    ``_tool`` (Kafka's tool), ``_reasons`` (undefined percentiles)."""
    df = rows.copy()
    for name in ("scenario", "client", "payload", "profile"):
        df[f"_{name}"] = strings(df, name)
    df["_bytes"] = numbers(df, "payload_bytes")
    df["_emu"] = emulator_mask(df)
    df["_rank"] = df["_scenario"].map(scenario_rank)
    df["_tool"] = df["_scenario"].map(is_tool).astype(bool)
    df["_reasons"] = percentile_reasons(df)
    return df


def _series_columns(records: pd.DataFrame) -> list[str]:
    """The series columns the drift records carry (older records carry fewer)."""
    return [c for c in SERIES_COLUMNS if c in records.columns]


def _series_of(row: Any, cols: list[str], emulator: bool) -> tuple[tuple[str, ...], bool]:
    """The series of an aggregate row or drift record (``row.get`` by column) and broker kind."""
    return tuple(key_part(row.get(c)) for c in cols), bool(emulator)


def _drift_by_series(records: pd.DataFrame) -> dict[tuple[tuple[str, ...], bool, str],
                                                    dict[str, Any]]:
    """Drift records by (series, emulator, metric)."""
    cols = _series_columns(records)
    return {(*_series_of(r, cols, bool(r.get("broker_is_emulator"))), str(r.get("metric"))): r
            for r in records_to_dicts(records)}


# --------------------------------------------------------------------------- (1) latest run


def _change_cell(rec: dict[str, Any]) -> str:
    c = as_float(rec.get("change_pct"))
    klass = "" if c is None else (" up" if c > 0 else " down")
    return f'<td class="chg{klass}">{esc(fmt_pct(c))}</td>'


def _num_cell(value: Any) -> str:
    return f"<td>{esc(fmt_num(value))}</td>"


_LATEST_HEAD = (
    '<th class="t">scenario</th><th class="t">client</th><th class="t">payload</th>'
    '<th class="t">profile</th><th class="t">settings used</th><th class="t">loop</th>'
    '<th class="t">broker</th>'
    '<th title="messages in the percentile population: received + lost + failed (Kafka&#39;s '
    'tool †: the messages it timed, warm-up included)">n</th>'
    "<th>p50 ms</th><th>p50 95% CI</th><th>baseline p50</th><th>change p50</th>"
    "<th>p99 ms</th><th>p99 95% CI</th><th>baseline p99</th><th>change p99</th>"
    "<th>runs in baseline</th>"
    '<th title="send → broker ack (Kafka only)">publish p50 ms</th>'
    '<th title="request → response (REST only)">rt p50 ms</th>'
    '<th title="≈ 1 / mean latency in a closed loop; not capacity">msg rate /s</th>'
    "<th>lost</th><th>failed</th>"
)


def _text(value: Any) -> str:
    return "" if is_missing(value) else str(value)


def _latest_row(r: pd.Series, base: dict[Any, dict[str, Any]], base_cols: list[str],
                flagged: set[Any], flag_cols: list[str]) -> tuple[str, bool]:
    """One cell's row of the latest-run table; and whether it shows the tool's figures."""
    emu = bool(r["_emu"])
    series = _series_of(r, base_cols, emu)
    reasons: dict[str, str] = r["_reasons"] or {}
    tool = bool(r["_tool"])
    b50 = base.get((*series, "e2e_latency_ms_p50"), {})
    b99 = base.get((*series, "e2e_latency_ms_p99"), {})
    if tool:  # the tool's own figures; its p99 null below 100 timed messages (the aggregate)
        tool_reasons = parse_percentile_note(r.get("tool_percentiles_note"))
        p50 = f"{esc(fmt_num(r.get('tool_p50_ms')))}†"
        p99 = f"{percentile_cell(r.get('tool_p99_ms'), tool_reasons.get('p99'))}†"
        ci50 = ci99 = esc(MISSING)
        n = count_cell(r.get("tool_messages"))  # the messages it timed, warm-up included
    else:
        p50 = percentile_cell(r.get("e2e_latency_ms_p50"), reasons.get("p50"))
        p99 = percentile_cell(r.get("e2e_latency_ms_p99"), reasons.get("p99"))
        ci50 = ci_cell(r.get("e2e_latency_ms_p50_ci_low"), r.get("e2e_latency_ms_p50_ci_high"))
        ci99 = ci_cell(r.get("e2e_latency_ms_p99_ci_low"), r.get("e2e_latency_ms_p99_ci_high"))
        n = count_cell(r.get("sent_count"))
    rest = scenario_kind(r["_scenario"]) == "rest"
    publish = ('<td class="na" title="REST has no broker ack: its round trip is rt">n/a</td>'
               if rest else _num_cell(r.get("publish_latency_ms_p50")))
    flavor = r.get("cluster_flavor", "")
    broker = esc("" if is_missing(flavor) else flavor) + emu_mark(emu)
    settings = settings_text(r.get("client_settings"), r["_scenario"])
    title = settings_title(r.get("client_settings"))
    loop = _text(r.get("loop_mode")) or MISSING
    cls = ' class="drift"' if _series_of(r, flag_cols, emu) in flagged else ""
    prof_cls = ' class="t own"' if tool else ' class="t"'
    row = (
        f"<tr{cls}><td class=\"t\">{esc(r['_scenario'])}</td>"
        f"<td class=\"t\">{esc(r['_client'])}</td><td class=\"t\">{esc(r['_payload'])}</td>"
        f"<td{prof_cls}>{esc(profile_text(r['_profile'], r['_scenario']))}</td>"
        f'<td class="t settings" title="{esc(title)}">{esc(settings)}</td>'
        f'<td class="t">{esc(loop)}</td><td class="t">{broker}</td><td>{n}</td>'
        f"<td>{p50}</td><td>{ci50}</td><td>{esc(fmt_num(b50.get('baseline_value')))}</td>"
        f"{_change_cell(b50)}"
        f"<td>{p99}</td><td>{ci99}</td><td>{esc(fmt_num(b99.get('baseline_value')))}</td>"
        f"{_change_cell(b99)}"
        f"<td>{esc(b99.get('baseline_runs', b50.get('baseline_runs', 0)))}</td>"
        f"{publish}{_num_cell(r.get('round_trip_ms_p50'))}"
        f"{_num_cell(r.get('message_rate_per_s'))}"
        f"<td>{count_cell(r.get('lost_count'))}</td><td>{count_cell(r.get('error_count'))}</td>"
        "</tr>"
    )
    return row, tool


def section_latest(v: RunView) -> str:
    """(1) One row per cell of the run: p50/p99 with their 95 % intervals against the
    baseline, the settings used, publish and round-trip latency, message rate, losses."""
    h = ['<section id="latest"><h2>1. Latest run</h2>']
    if v.rows.empty:
        h.append('<p class="empty">No aggregates for this run.</p></section>')
        return "".join(h)
    df = _cells(v.rows)
    df = df.sort_values(["_rank", "_scenario", "_bytes", "_payload", "_profile"])
    base_cols = _series_columns(v.table_drift)
    base = _drift_by_series(v.table_drift)
    flag_cols = _series_columns(v.drift_records)  # stored records may carry fewer
    flagged = {_series_of(r, flag_cols, bool(r.get("broker_is_emulator")))
               for r in records_to_dicts(v.drift_records) if r.get("is_drift")}
    caption = ("Latency of each cell (ms); baseline = median of the previous comparable runs"
               + emu_mark(bool(df["_emu"].any())))
    h.append(measures_note(df["_scenario"]))
    rows = []
    tool_note = False
    for _, r in df.iterrows():
        row, tool = _latest_row(r, base, base_cols, flagged, flag_cols)
        tool_note |= tool
        rows.append(row)
    h.append(scroll_table("latest", caption, _LATEST_HEAD, "".join(rows)))
    notes = [UNDEFINED_NOTE, CI_NOTE, MESSAGE_RATE_NOTE]
    if tool_note:
        notes.insert(0, TOOL_NOTE)
    h.extend(f'<p class="note">{esc(n)}</p>' for n in notes)
    h.append("</section>")
    return "".join(h)


# --------------------------------------------------------------------------- (3) comparison


def _median(values: pd.Series) -> float | None:
    """The median of the defined values; None when there are none."""
    defined = values.dropna()
    return None if defined.empty else as_float(defined.median())


def _comparison_value(part: pd.DataFrame, payload: str) -> tuple[float | None, str]:
    """The p50 of one scenario at one payload (median over its rows) and its table text:
    the number (``†`` and the mean for Kafka's tool), else why it is undefined."""
    rows = part[part["_payload"] == payload]
    if rows.empty:
        return None, esc(MISSING)
    if bool(rows["_tool"].iloc[0]):
        value = _median(numbers(rows, "tool_p50_ms"))
        mean = _median(numbers(rows, "tool_avg_ms"))
        text = f"{esc(fmt_num(value))}†" if value is not None else esc(MISSING)
        if mean is not None:
            text += f' <span class="mean">(mean {mean:.4f})</span>'
        return value, text
    value = _median(numbers(rows, "e2e_latency_ms_p50"))
    reason = next((r.get("p50") for r in rows["_reasons"] if r and r.get("p50")), None)
    return value, percentile_cell(value, reason)


def _comparison_profile(sub: pd.DataFrame, profile: str) -> str:
    """The chart and table of one profile: a bar per scenario and payload."""
    payloads = (sub.groupby("_payload")["_bytes"].min().sort_values(na_position="last")
                .index.tolist())
    present = sorted(
        {(str(a), bool(b)) for a, b in zip(sub["_scenario"], sub["_emu"], strict=True)},
        key=lambda k: (scenario_rank(k[0]), k[0], k[1]),
    )
    bars: list[BarSeries] = []
    table_rows = []
    tool_settings: list[str] = []
    for sc, emu in present:
        part = sub[(sub["_scenario"] == sc) & (sub["_emu"] == emu)]
        cells = [_comparison_value(part, p) for p in payloads]
        tool = is_tool(sc)
        color = (EMULATOR_BAR_COLOR if emu
                 else BAR_COLORS.get(sc, PALETTE[len(bars) % len(PALETTE)]))
        name = scenario_label(sc) + (", own settings" if tool else "")
        bars.append(BarSeries(name=name, values=[v for v, _ in cells], color=color,
                              emulator=emu))
        raw_settings = part["client_settings"].iloc[0] if "client_settings" in part else None
        settings = settings_text(raw_settings, sc)
        if tool:
            tool_settings.append(settings)
        loop = _text(part["loop_mode"].iloc[0]) if "loop_mode" in part else ""
        label = esc(name) + emu_mark(emu)
        table_rows.append(
            f'<tr><td class="t">{label}</td><td class="t">{esc(loop or MISSING)}</td>'
            f'<td class="t settings" title="{esc(settings_title(raw_settings))}">'
            f"{esc(settings)}</td>" + "".join(f"<td>{t}</td>" for _, t in cells) + "</tr>")
    emu_any = any(b.emulator for b in bars)
    scenarios = [sc for sc, _ in present]
    mixed = mixes_rest_and_kafka(scenarios)
    title = f"p50 latency by payload, harness profile {profile or '—'}"
    own = ""
    if tool_settings:
        own = (f'<p class="note own">Kafka\'s tool did not apply profile {esc(profile or "—")}: '
               f"it used {esc('; '.join(dict.fromkeys(tool_settings)))}.</p>")
    h = [figure(f' data-profile="{esc(profile)}"', esc(title), emu_any,
                 svg_bar_chart(title, payloads, bars, "ms",
                               note=MEASURES_SHORT if mixed else ""),
                 measures_note(scenarios) + own)]
    cap = f"p50 ms, harness profile {esc(profile or '—')}" + emu_mark(emu_any)
    head = "".join(f"<th>{esc(p)}</th>" for p in payloads)
    h.append(f'<table class="comparison"><caption>{cap}</caption><thead><tr>'
             '<th class="t">scenario</th><th class="t">loop</th><th class="t">settings used</th>'
             f"{head}</tr></thead><tbody>{''.join(table_rows)}</tbody></table>")
    return "".join(h)


def section_comparison(v: RunView) -> str:
    """(3) Per profile, the p50 of each scenario by payload: a bar chart and its table, the
    serial harness beside Kafka's tool, each with the settings it used."""
    h = ['<section id="comparison"><h2>3. HTTP vs Kafka clients vs Kafka\'s tool</h2>',
         '<p class="note">Median end-to-end latency (p50, ms) of this run by payload size. '
         "The Kafka tool's bar is its printed p50 (<code>tool_p50_ms</code>, whole truncated "
         "ms); <code>confluent-kafka-serial</code> waits for the ack before polling, as the "
         "tool does, and is the harness to compare it with.</p>"]
    if v.rows.empty:
        h.append('<p class="empty">No aggregates for this run.</p></section>')
        return "".join(h)
    df = _cells(v.rows)
    value = numbers(df, "e2e_latency_ms_p50").where(~df["_tool"], numbers(df, "tool_p50_ms"))
    has_reason = df["_reasons"].map(lambda r: bool(r and r.get("p50")))
    df = df[value.notna() | has_reason]
    if df.empty:
        h.append('<p class="empty">No latency values for this run.</p></section>')
        return "".join(h)
    for profile in sorted(df["_profile"].unique()):
        h.append(_comparison_profile(df[df["_profile"] == profile], profile))
    h.append(f'<p class="note">{esc(TOOL_NOTE)}</p>' if df["_tool"].any() else "")
    h.append("</section>")
    return "".join(h)


# --------------------------------------------------------------------------- (4) first message


def section_first_message(v: RunView) -> str:
    """(4) First-message delay of each client, with ``subscribe`` and with ``assign``: the
    median of the warm probes; the cold probe (the one that created ``__consumer_offsets``)
    and lost probes apart."""
    h = ['<section id="first-message"><h2>4. First-message delay</h2>',
         '<p class="note">Consumer start to the first record already in the topic, with a '
         "consumer group (<code>subscribe</code>) and with manual assignment "
         "(<code>assign</code>); the probes alternate which mode goes first. Each figure is "
         "the median of the received probes that did not have to create "
         "<code>__consumer_offsets</code>; that cold probe is shown on its own, lost probes "
         "are counted. Median over this run's payloads and profiles, ms.</p>"]
    df = v.rows.copy()
    if df.empty:
        h.append('<p class="empty">No aggregates for this run.</p></section>')
        return "".join(h)
    df["_who"] = strings(df, "scenario")
    df["_rank"] = df["_who"].map(scenario_rank)
    df["_sub"] = numbers(df, "first_message_subscribe_ms")
    df["_asg"] = numbers(df, "first_message_assign_ms")
    df["_cold"] = numbers(df, "first_message_cold_ms")
    df["_lost"] = numbers(df, "first_message_lost_count")
    df["_emu"] = emulator_mask(df)
    df = df[df["_sub"].notna() | df["_asg"].notna() | df["_cold"].notna()
            | (df["_lost"].fillna(0) > 0)]
    if df.empty:
        h.append('<p class="empty">No first-message measurements in this run.</p></section>')
        return "".join(h)
    g = (df.groupby(["_who", "_emu"]).agg(rank=("_rank", "min"), sub=("_sub", "median"),
                                          asg=("_asg", "median"), cold=("_cold", "median"),
                                          lost=("_lost", lambda x: x.sum(min_count=1)))
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
    title = "First-message delay by scenario (median, warm probes)"
    h.append(figure("", esc(title), emu, svg_bar_chart(title, groups, bars, "ms")))
    cap = "first-message delay, ms" + emu_mark(emu)
    rows = "".join(
        f'<tr><td class="t">{esc(who)}{emu_mark(e)}</td>'
        f"<td>{esc(fmt_num(s))}</td><td>{esc(fmt_num(a))}</td><td>{esc(fmt_num(c))}</td>"
        f"<td>{count_cell(n)}</td></tr>"
        for who, s, a, c, n, e in zip(g.index, g["sub"], g["asg"], g["cold"], g["lost"], flags,
                                      strict=True)
    )
    h.append(f'<table class="first-message"><caption>{cap}</caption><thead><tr>'
             '<th class="t">scenario</th><th>subscribe ms (median)</th><th>assign ms (median)</th>'
             '<th title="the probe that created __consumer_offsets (not in the medians)">'
             "cold first probe ms</th><th>lost probes</th></tr></thead>"
             f"<tbody>{rows}</tbody></table></section>")
    return "".join(h)


# --------------------------------------------------------------------------- the page


def latency_sections(v: RunView, page_dir: Path) -> str:
    """The sections of a latency run's page (the caller adds the banners and the settings):
    the latest run's table, the trends, the percentile spectrum, the comparison, the
    first-message delay, the checks."""
    return "".join([section_latest(v), section_time_series(v), section_spectrum(v),
                    section_comparison(v), section_first_message(v),
                    section_checks(v, page_dir)])


__all__ = [
    "BAR_COLORS",
    "CI_NOTE",
    "EMULATOR_BAR_COLOR",
    "TOOL_NOTE",
    "UNDEFINED_NOTE",
    "latency_sections",
    "scenario_label",
    "section_comparison",
    "section_first_message",
    "section_latest",
]
