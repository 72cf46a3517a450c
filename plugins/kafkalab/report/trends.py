"""Section 2 of a latency run's page: trends that answer "slower since when?", and the
per-cell latency percentile spectrum.

* The x axis is the night each run measured (:attr:`RunView.measured_at`: a DAG run's
  logical date, else the night in its id, else its start), so back-filled nights sort where
  they belong and four nightly dates triggered on one day show as four dates.
* One panel per payload size (1 KB and 10 MB never share a linear axis), each with a chart
  per metric (p50, p99, p99.9, message rate, first-message delay); at most
  :data:`MAX_SERIES` series per chart (more are split over numbered charts).
* Kafka's tool (``jvm-e2e``) is drawn from its own printed percentiles (``tool_*_ms`` of
  the aggregates, which null a p99 below 100 timed messages and a p99.9 below 1,000:
  ``tool_percentiles_note``, said under the chart), dashed and marked †.
* Each series' baseline band (the drift check's median of the good earlier runs ± the
  threshold it must cross), a ringed marker on every run whose stored drift record flagged
  that series, and change points over the whole history
  (:mod:`kafkalab.report.changepoints`) as labelled vertical lines.
* Section 2b: per cell, latency against percentile (50 … 99.99 %, a "nines" axis) from the
  raw samples, this run and the newest earlier runs of the same series of the cell
  overlaid (:mod:`kafkalab.report.spectrum`); Kafka's tool's percentiles from the
  aggregates.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from kafkalab.drift import SERIES_COLUMNS, series_key
from kafkalab.drift.detect import MAD_SCALE
from kafkalab.report.changepoints import METHOD as CHANGE_METHOD
from kafkalab.report.changepoints import change_points
from kafkalab.report.charts import (
    PALETTE,
    BaselineBand,
    LineSeries,
    XMark,
    XYSeries,
    svg_line_chart,
    svg_xy_chart,
)
from kafkalab.report.data import (
    RunView,
    emulator_mask,
    is_schema_v2,
    numbers,
    parse_percentile_note,
    percentile_reasons,
    strings,
)
from kafkalab.report.format import emu_span, esc, fmt_num
from kafkalab.report.notes import MEASURES_SHORT, is_tool, measures_note, mixes_rest_and_kafka
from kafkalab.report.page_parts import figure, key_part, scenario_rank
from kafkalab.report.spectrum import (
    MAX_RUNS,
    SPECTRUM_MIN_SAMPLES,
    SPECTRUM_PERCENTILES,
    Spectrum,
    nines,
    read_spectrum,
)
from kafkalab.run_ids import run_id_time
from kafkalab.values import as_bool, as_float, is_missing

TREND_METRICS: tuple[tuple[str, str, str, str | None], ...] = (
    ("e2e_latency_ms_p50", "End-to-end latency p50", "ms", "tool_p50_ms"),
    ("e2e_latency_ms_p99", "End-to-end latency p99", "ms", "tool_p99_ms"),
    ("e2e_latency_ms_p999", "End-to-end latency p99.9", "ms", "tool_p999_ms"),
    ("message_rate_per_s", "Message rate (≈ 1 / mean latency; closed loop, not capacity)",
     "msgs/s", None),
    ("first_message_subscribe_ms", "First message delay (subscribe, median of warm probes)",
     "ms", None),
)
"""The trend charts of each payload panel: (metric column, title, unit, the column of
Kafka's tool's own figure for the same percentile, or None)."""

MAX_SERIES = len(PALETTE)
"""At most this many series on one chart (12: a colour each, still told apart); more are
split over numbered charts."""

TOOL_MARK = " † tool"
"""Appended to the name of a series of Kafka's tool's own printed figures."""

TREND_SERIES_EXTRAS: tuple[tuple[str, str], ...] = (
    ("workload", "{}"), ("payload_encoding", "{}"), ("broker_count", "{} broker(s)"),
    ("planned_messages", "n={}"),
)
"""Series facts added to a trend line's name when they differ between runs (a nightly
raw 1 MB run and a seed 000 base64 1 MB run are different series, never one line)."""


# --------------------------------------------------------------------------- x axis


def night_label(ts: pd.Timestamp | None, run_id: str) -> str:
    """A run's x label: ``2026-11-21`` for a night at midnight UTC, ``11-21 13:04`` for
    another time, the run id shortened when no time is known."""
    if ts is None or pd.isna(ts):
        return run_id if len(run_id) <= 14 else run_id[:13] + "…"
    if ts.hour == 0 and ts.minute == 0 and ts.second == 0:
        return ts.strftime("%Y-%m-%d")
    return ts.strftime("%m-%d %H:%M")


def night_labels(v: RunView, runs: list[str]) -> tuple[list[str], list[str]]:
    """The x labels of ``runs`` (:func:`night_label`) and their hover texts (the run id and
    what was measured when)."""
    labels, tips = [], []
    for rid in runs:
        ts = v.measured_at.get(rid)
        labels.append(night_label(ts, rid))
        when = "" if ts is None or pd.isna(ts) else f" · measured {ts.isoformat()}"
        tips.append(f"{rid}{when}")
    return labels, tips


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


# --------------------------------------------------------------------------- series


def series_label(scenario: str, client: str, payload: str, profile: str,
                 extras: tuple[str, ...] = ()) -> str:
    """``scenario[/client] payload profile [extras]`` (the client only when it differs;
    Kafka's tool without a profile: it applies its own settings)."""
    who = scenario if client in ("", scenario) else f"{scenario}/{client}"
    prof = "" if is_tool(scenario) else profile
    return " ".join(p for p in (who, payload, prof, *extras) if p)


def _trend_labels(df: pd.DataFrame) -> list[str]:
    """Each row's line name: its cell, plus the series facts (:data:`TREND_SERIES_EXTRAS`)
    that differ between the runs of that cell, so rows of different series never share a
    line. A fact a row of aggregates schema 1 lacks is named ``(older schema)``."""
    base = [series_label(a, b, c, d) for a, b, c, d in zip(
        strings(df, "scenario"), strings(df, "client"), strings(df, "payload"),
        strings(df, "profile"), strict=True)]
    base_s = pd.Series(base, index=df.index)
    old = ~is_schema_v2(df)
    extras: list[list[str]] = [[] for _ in base]
    older = [False] * len(base)
    for col, fmt in TREND_SERIES_EXTRAS:
        if col not in df.columns:
            continue
        values = df[col].map(key_part)
        varies = values.groupby(base_s).transform("nunique") > 1
        for i, (idx, value) in enumerate(values.items()):
            if not varies[idx]:
                continue
            if value:
                extras[i].append(fmt.format(value))
            elif old[idx]:
                older[i] = True
    return [" ".join([b, *x, *(["(older schema)"] if o else [])])
            for b, x, o in zip(base, extras, older, strict=True)]


def _undefined_in_run(rows: pd.DataFrame, metric: str) -> str:
    """``p99 undefined in 3 cell(s) of this run (n<100: 3)`` for a percentile metric, or ``""``."""
    name = metric.rsplit("_", 1)[-1]
    if not metric.startswith("e2e_latency_ms_p") or rows.empty:
        return ""
    reasons = [r.get(name) for r in percentile_reasons(rows) if r.get(name)]
    if not reasons:
        return ""
    counts: dict[str, int] = {}
    for reason in reasons:
        counts[reason] = counts.get(reason, 0) + 1
    why = ", ".join(f"{k}: {n}" for k, n in sorted(counts.items()))
    return f"{name} undefined in {len(reasons)} cell(s) of this run ({why}): not plotted."


def _key_column(df: pd.DataFrame) -> pd.Series:
    """Each row's series key without the metric (``series_key`` of the series columns)."""
    cols = [df[c] if c in df.columns else pd.Series(None, index=df.index, dtype="object")
            for c in SERIES_COLUMNS]
    return pd.Series([series_key(*parts) for parts in zip(*cols, strict=True)],
                     index=df.index, dtype="object")


def _flag_set(v: RunView) -> set[tuple[str, str, bool]]:
    """(run id, series key, emulator) of every drift flag: stored records of the earlier
    runs and this run's records."""
    out: set[tuple[str, str, bool]] = set()
    for recs in (v.flags, v.drift_records):
        if recs is None or recs.empty or "is_drift" not in recs.columns:
            continue
        for r in recs.to_dict(orient="records"):
            if as_bool(r.get("is_drift")):
                out.add((str(r.get("run_id") or v.run_id), str(r.get("series_key")),
                         as_bool(r.get("broker_is_emulator"))))
    return out


def _records_by_key(v: RunView) -> dict[tuple[str, bool], dict[str, Any]]:
    """This run's drift records by (series key, emulator)."""
    recs = v.drift_records
    if recs is None or recs.empty or "series_key" not in recs.columns:
        return {}
    return {(str(r.get("series_key")), as_bool(r.get("broker_is_emulator"))): r
            for r in recs.to_dict(orient="records")}


def _band(v: RunView, metric: str, rec: dict[str, Any] | None, values: list[float | None],
          flagged: list[bool], pos: dict[str, int]) -> BaselineBand | None:
    """The baseline band of one series: the record's median ± the distance the MAD rule
    needs (``k_mad`` · spread, and at least ``min_relative_change`` of the median), over the
    good earlier points the baseline was taken from and this run's point."""
    if rec is None or v.config is None or v.run_id not in pos:
        return None
    med, mad = as_float(rec.get("baseline_value")), as_float(rec.get("baseline_mad"))
    n = int(as_float(rec.get("baseline_runs")) or 0)
    if med is None or n == 0:
        return None
    try:
        rule = v.config.rule(metric)
    except KeyError:
        return None
    half = max(rule.k_mad * MAD_SCALE * (mad or 0.0), rule.min_relative_change * abs(med))
    i1 = pos[v.run_id]
    earlier = [i for i in range(i1) if values[i] is not None and not flagged[i]]
    i0 = earlier[-n] if len(earlier) >= n else (earlier[0] if earlier else i1)
    label = (f"baseline: median {fmt_num(med)} of {n} good earlier run(s); drift beyond "
             f"{fmt_num(med - half)}–{fmt_num(med + half)} (±max({rule.k_mad:g}·1.4826·MAD, "
             f"{rule.min_relative_change:.0%})), verdict {rec.get('verdict')}")
    return BaselineBand(i0=i0, i1=i1, lo=med - half, hi=med + half, label=label)


def _payload_panels(df: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(panel key, heading, rows) per payload size, smallest first."""
    df = df.assign(_bytes=numbers(df, "payload_bytes"), _pname=strings(df, "payload"))
    panels = []
    keys = df["_bytes"].where(df["_bytes"].notna(), -1.0)
    for b in sorted(keys.unique()):
        part = df[keys == b]
        names = ", ".join(sorted(set(part["_pname"]) - {""})) or "payload"
        head = names if b < 0 else f"{names} ({int(b):,} bytes)"
        key = f"{int(b)}" if b >= 0 else names
        panels.append((key, head, part))
    return panels


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)] or [[]]


def _metric_series(v: RunView, sub: pd.DataFrame, metric: str, tool_col: str | None,
                   runs: list[str], flags: set[tuple[str, str, bool]],
                   recs: dict[tuple[str, bool], dict[str, Any]]
                   ) -> tuple[list[LineSeries], list[list[XMark]], list[list[str]]]:
    """The lines of one metric in one panel and, per line, its change points as marks and
    as text (for the note under the chart)."""
    pos = {r: i for i, r in enumerate(runs)}
    series: list[LineSeries] = []
    marks: list[list[XMark]] = []
    said: list[list[str]] = []
    sub = sub.assign(_v=numbers(sub, metric))
    if tool_col:
        tool = sub["_scenario"].eq("jvm-e2e")
        sub.loc[tool, "_v"] = numbers(sub, tool_col)[tool]
    sub = sub.dropna(subset=["_v"])
    keys = sub[["_rank", "_label", "_emu"]].drop_duplicates().sort_values(
        ["_rank", "_label", "_emu"])
    for _, k in keys.iterrows():
        part = sub[(sub["_label"] == k["_label"]) & (sub["_emu"] == k["_emu"])]
        emu = bool(k["_emu"])
        values: list[float | None] = [None] * len(runs)
        for rid, val in part.groupby("_rid")["_v"].median().items():
            if str(rid) in pos:
                values[pos[str(rid)]] = float(val)
        is_tool = bool(tool_col) and bool(part["_scenario"].eq("jvm-e2e").all())
        skeys = {f"{sk}|{metric}" for sk in part["_skey"]}
        flagged = [any((rid, sk, emu) in flags for sk in skeys) for rid in runs]
        own = [recs[(sk, emu)] for sk in sorted(skeys) if (sk, emu) in recs]
        color = PALETTE[len(series) % len(PALETTE)]
        name = str(k["_label"]) + (TOOL_MARK if is_tool else "")
        band = None if is_tool or len(own) != 1 else _band(v, metric, own[0], values, flagged,
                                                           pos)
        series.append(LineSeries(name=name, values=values, emulator=emu, dashed=is_tool,
                                 color=color, flagged=flagged, band=band))
        marks.append([])
        said.append([])
        for cp in change_points(values):
            pct = cp.change_pct
            what = f"{'+' if (pct or 0) >= 0 else ''}{pct:.0f} %" if pct is not None else "from 0"
            label = f"change {what}"
            marks[-1].append(XMark(x=cp.index - 0.5, label=label, color=color,
                                   row=sum(map(len, marks)) % 4, kind="change-point"))
            said[-1].append(f"{name}: {fmt_num(cp.before)} → {fmt_num(cp.after)} from "
                        f"{night_label(v.measured_at.get(runs[cp.index]), runs[cp.index])}")
    return series, marks, said


def _prepare(v: RunView) -> pd.DataFrame:
    """The history rows with the columns the charts group by."""
    df = v.history.copy()
    df["_rid"] = df["run_id"].astype(str)
    df["_label"] = _trend_labels(df)
    df["_emu"] = emulator_mask(df)
    df["_scenario"] = strings(df, "scenario")
    df["_rank"] = df["_scenario"].map(scenario_rank)
    df["_skey"] = _key_column(df)
    return df


def _metric_figures(v: RunView, panel: pd.DataFrame, key: str, head: str,
                    trend: tuple[str, str, str, str | None], flags: set[tuple[str, str, bool]],
                    recs: dict[tuple[str, bool], dict[str, Any]]) -> tuple[list[str], str]:
    """The figures of one metric of :data:`TREND_METRICS` (``trend``) in the payload panel
    ``panel`` (its lines over :data:`MAX_SERIES` are split over numbered charts), each with
    its change points and why this run's value is not plotted; or no figure and why (``no
    defined value``)."""
    metric, title, unit, tool_col = trend
    in_run = panel[panel["_rid"] == v.run_id]
    undefined = " ".join(x for x in (
        _undefined_in_run(in_run, metric),
        tool_undefined_in_run(in_run, tool_col) if tool_col else "") if x)
    has = numbers(panel, metric).notna()
    if tool_col:
        has |= numbers(panel, tool_col).notna() & panel["_scenario"].eq("jvm-e2e")
    sub = panel[has]
    if sub.empty:
        return [], f"{title}: no defined value." + (f" {undefined}" if undefined else "")
    runs = [r for r in v.order if r in set(sub["_rid"])]
    labels, tips = night_labels(v, runs)
    series, marks, said = _metric_series(v, sub, metric, tool_col, runs, flags, recs)
    chunks = _chunks(list(range(len(series))), MAX_SERIES)
    mixed = mixes_rest_and_kafka(sub["_scenario"].unique())
    figures = []
    for chunk in chunks:
        part = [series[i] for i in chunk]
        suffix = (f" — series {chunk[0] + 1}–{chunk[-1] + 1} of {len(series)}"
                  if len(chunks) > 1 else "")
        svg = svg_line_chart(
            f"{title} ({unit}) · {head}{suffix}", labels, part, unit, x_titles=tips,
            note=MEASURES_SHORT if mixed else "",
            marks=[m for i in chunk for m in marks[i]], x_title="night measured")
        notes = "".join(f'<p class="note change-points">Change point: {esc(x)}.</p>'
                        for i in chunk for x in said[i])
        if undefined:
            notes += f'<p class="note">{esc(undefined)}</p>'
        figures.append(figure(f' data-metric="{esc(metric)}" data-payload="{esc(key)}"',
                              f"{esc(title)} ({esc(unit)}) — {esc(head)}{esc(suffix)}",
                              any(s.emulator for s in part), svg, notes))
    return figures, ""


def section_time_series(v: RunView) -> str:
    """(2) Per payload size, one chart per metric of :data:`TREND_METRICS` over the nights
    measured up to this run: a line per series (the median of its rows in a run; Kafka's
    tool from its own figures), baseline bands, drift markers and change points. Undefined
    percentiles are gaps, never points."""
    h = ['<section id="trends"><h2>2. Trends across runs</h2>']
    if v.history.empty:
        h.append('<p class="empty">No aggregates yet: nothing to plot.</p></section>')
        return "".join(h)
    df = _prepare(v)
    h.append(measures_note(df["_scenario"].unique()))
    h.append('<p class="note">X axis: the night each run measured (a DAG run\'s logical '
             "date, else the night in its run id, else its start), oldest first. One panel "
             "per payload size. Shaded: the baseline band the drift check judged this run "
             "against (median of the good earlier runs ± the change it must exceed); ringed "
             "red: runs whose drift check flagged that series; dashed vertical lines: change "
             f"points over the whole history ({esc(CHANGE_METHOD)}). † dashed: Kafka's "
             "EndToEndLatency tool's own printed figures (whole ms, warm-up included).</p>")
    if v.emulator or df["_emu"].any():
        h.append(f'<p class="note">Dashed lines: {emu_span()} (emulator broker).</p>')
    flags, recs = _flag_set(v), _records_by_key(v)
    any_chart = False
    for key, head, panel in _payload_panels(df):
        h.append(f'<div class="payload-panel" data-payload="{esc(key)}">'
                 f"<h3>Payload {esc(head)}</h3><div class=\"charts\">")
        skipped: list[str] = []
        for trend in TREND_METRICS:
            figures, why_none = _metric_figures(v, panel, key, head, trend, flags, recs)
            h.extend(figures)
            any_chart |= bool(figures)
            if why_none:
                skipped.append(why_none)
        h.append("</div>")
        h.extend(f'<p class="note">{esc(x)}</p>' for x in skipped)
        h.append("</div>")
    if not any_chart:
        h.append('<p class="empty">None of the plotted metrics has values yet.</p>')
    h.append("</section>")
    return "".join(h)


# --------------------------------------------------------------------------- spectrum

_NINES_TICKS = [(nines(num, den), f"{name[1:]} %") for name, num, den in SPECTRUM_PERCENTILES]


def _cell_rows(df: pd.DataFrame, cell: tuple[str, str, str]) -> pd.DataFrame:
    """The aggregate rows of one (scenario, payload, profile) cell."""
    if df.empty:
        return df
    return df[strings(df, "scenario").eq(cell[0]) & strings(df, "payload").eq(cell[1])
              & strings(df, "profile").eq(cell[2])]


def _series_of(rows: pd.DataFrame) -> set[tuple[str, bool]]:
    """(series key, emulator) of each row: the identity the trend lines and the drift check
    use (:data:`kafkalab.drift.SERIES_COLUMNS`), broker kind apart."""
    if rows.empty:
        return set()
    return set(zip(_key_column(rows), emulator_mask(rows).astype(bool), strict=True))


def _spectrum_runs(v: RunView, cell: tuple[str, str, str]) -> list[str]:
    """This run and the newest earlier runs of the same series of that cell, newest first
    (at most :data:`~kafkalab.report.spectrum.MAX_RUNS`).

    An earlier run is overlaid only when one of its rows of the cell has a series key
    (:data:`kafkalab.drift.SERIES_COLUMNS`: workload, encoding, payload bytes, broker
    flavor, version and count, planned messages …) and broker kind (emulator or not) of
    one of this run's rows of the cell: another workload or broker is another series."""
    hist = v.history
    if hist.empty:
        return [v.run_id]
    mine = _series_of(_cell_rows(v.rows, cell))
    has = _cell_rows(hist, cell)
    runs = {str(rid) for rid, key in zip(has["run_id"].astype(str),
                                         zip(_key_column(has), emulator_mask(has).astype(bool),
                                             strict=True), strict=True)
            if key in mine}
    earlier = [r for r in reversed(v.order[:-1]) if r in runs]
    return [v.run_id, *earlier][:MAX_RUNS]


_TOOL_SPECTRUM: tuple[tuple[str, str, str], ...] = (
    ("p50", "tool_p50_ms", "p50"), ("p99", "tool_p99_ms", "p99"),
    ("p99.9", "tool_p999_ms", "p999"),
)
"""Kafka's tool's percentiles on the spectrum: (spectrum name, aggregate column, name in
``tool_percentiles_note``)."""


def tool_spectrum(rows: pd.DataFrame) -> tuple[dict[str, float], dict[str, str]]:
    """Kafka's tool's own percentiles for a spectrum, from a run's aggregate rows of one
    ``jvm-e2e`` cell (never from raw ``tool_summary`` rows: the aggregate nulls a p99 below
    100 timed messages and a p99.9 below 1,000): (spectrum name -> ms, spectrum name -> why
    not drawn, e.g. ``n<1,000``)."""
    rows = rows[strings(rows, "scenario").eq("jvm-e2e")] if not rows.empty else rows
    points: dict[str, float] = {}
    omitted: dict[str, str] = {}
    if rows.empty:
        return points, omitted
    notes: dict[str, str] = {}
    for note in strings(rows, "tool_percentiles_note"):
        notes.update(parse_percentile_note(note or None))
    for name, col, note_name in _TOOL_SPECTRUM:
        vals = numbers(rows, col).dropna()
        if not vals.empty:
            points[name] = float(vals.iloc[0])
        elif note_name in notes:
            omitted[name] = _readable_reason(notes[note_name])
    return points, omitted


def _readable_reason(reason: str) -> str:
    """``n<1000`` -> ``n<1,000`` (as the spectrum's own omissions read)."""
    head, sep, num = reason.partition("<")
    return f"{head}<{int(num):,}" if sep and num.isdigit() else reason


def tool_undefined_in_run(rows: pd.DataFrame, tool_col: str) -> str:
    """Why Kafka's tool's figure ``tool_col`` (``tool_p99_ms``, ``tool_p999_ms``) is not
    plotted for this run's ``jvm-e2e`` rows (their ``tool_percentiles_note``), or ``""``:
    ``Kafka's tool † p99 undefined in 1 cell(s) of this run (n<100: it timed 20 messages):
    not plotted.``"""
    name = tool_col.removeprefix("tool_").removesuffix("_ms")
    if rows.empty:
        return ""
    rows = rows[strings(rows, "scenario").eq("jvm-e2e") & numbers(rows, tool_col).isna()]
    reasons: dict[str, list[int]] = {}
    for note, n in zip(strings(rows, "tool_percentiles_note"), numbers(rows, "tool_messages"),
                       strict=True):
        why = parse_percentile_note(note or None).get(name)
        if why:
            reasons.setdefault(why, [])
            if not is_missing(n):
                reasons[why].append(int(n))
    if not reasons:
        return ""
    count = sum(max(len(ns), 1) for ns in reasons.values())
    why = ", ".join(
        f"{_readable_reason(k)}" + (f": it timed {', '.join(f'{n:,}' for n in sorted(ns))} "
                                    "messages" if ns else "")
        for k, ns in sorted(reasons.items()))
    label = "p99.9" if name == "p999" else name
    return (f"Kafka's tool † {label} undefined in {count} cell(s) of this run ({why}; a "
            "percentile needs p99 ≥ 100, p99.9 ≥ 1,000 samples): not plotted.")


def _omitted_text(sp: Spectrum, label: str) -> str:
    parts = [f"{label}: n={sp.count:,} ({sp.received:,} received, {sp.lost:,} lost, "
             f"{sp.failed:,} failed; lost and failed count as at least the timeout)"]
    if sp.omitted:
        parts.append("not drawn: " + ", ".join(f"{k} ({why})" for k, why in sp.omitted.items()))
    return "; ".join(parts)


def _spectrum_chart(v: RunView, cell: tuple[str, str, str]) -> str:
    """One cell's spectrum figure ('' when no run of it has samples)."""
    assert v.lab is not None
    series: list[XYSeries] = []
    lines: list[str] = []
    emulator = False
    hist = v.history
    for i, rid in enumerate(_spectrum_runs(v, cell)):
        key = (rid, *cell)
        if key not in v.spectra:  # shared by every page of one build: each file read once
            v.spectra[key] = read_spectrum(v.lab, rid, *cell)
        sp = v.spectra[key]
        if sp is None:
            continue
        emulator = emulator or sp.emulator
        label = night_label(v.measured_at.get(rid), rid) + (" (this run)" if i == 0 else "")
        color = PALETTE[i % len(PALETTE)]
        pts: list[tuple[float, float | None]] = [
            (nines(num, den), sp.points.get(name)) for name, num, den in SPECTRUM_PERCENTILES]
        if sp.received or sp.lost or sp.failed:
            series.append(XYSeries(name=label, points=pts, emulator=sp.emulator, color=color))
            lines.append(_omitted_text(sp, label))
        run_rows = hist[hist["run_id"].astype(str) == rid] if not hist.empty else hist
        tool, tool_omitted = tool_spectrum(_cell_rows(run_rows, cell))
        if tool:
            tpts: list[tuple[float, float | None]] = [
                (nines(num, den), tool[name]) for name, num, den in SPECTRUM_PERCENTILES
                if name in tool]
            series.append(XYSeries(name=f"{label}{TOOL_MARK}", points=tpts,
                                   emulator=sp.emulator, dashed=True, color=color))
            text = (f"{label}: Kafka's tool's own p50/p99/p99.9 (whole ms, warm-up "
                    "included; no per-message samples)")
            if tool_omitted:
                text += "; not drawn: " + ", ".join(f"{k} ({why} timed messages)"
                                                    for k, why in tool_omitted.items())
            lines.append(text)
    if not series:
        return ""
    series.reverse()  # oldest first: this run is drawn last, on top
    title = f"{cell[0]} · {cell[1]} · {cell[2]}"
    svg = svg_xy_chart(f"Latency by percentile — {title}", series, "percentile (nines)",
                       "ms", x_ticks=_NINES_TICKS)
    note = "".join(f'<p class="note spectrum-n">{esc(x)}</p>' for x in lines)
    return figure(f' class="spectrum" data-cell="{esc("|".join(cell))}"',
                  f"Percentile spectrum: {esc(title)}", emulator, svg, note)


def section_spectrum(v: RunView) -> str:
    """(2b) Per latency cell of this run, latency against percentile from the raw samples,
    this run and up to five earlier runs of the cell overlaid."""
    h = ['<section id="spectrum"><h2>2b. Latency percentile spectrum per cell</h2>']
    need = ", ".join(f"{k} ≥ {n:,}" for k, n in SPECTRUM_MIN_SAMPLES.items() if n > 1)
    h.append('<p class="note">From the raw samples (warm-up excluded), exact nearest-rank; '
             f"x: -log10(1 − q), so each 9 gets the same room. A percentile needs {esc(need)} "
             "messages and is not drawn otherwise, nor when its rank lands on a lost message "
             f"(counted as at least the timeout). Up to {MAX_RUNS} runs of a cell overlaid, "
             "this run first: earlier runs of the same series only (workload, encoding, "
             "payload bytes, broker flavor, version and count, planned messages, emulator "
             "or not, as the trend lines). Kafka's tool † from the aggregates (its p99 and "
             "p99.9 need as many timed messages).</p>")
    if v.lab is None or v.rows.empty:
        h.append('<p class="empty">No cells in this run.</p></section>')
        return "".join(h)
    rows = v.rows
    cells = sorted({(a, b, c) for a, b, c in zip(strings(rows, "scenario"), strings(
        rows, "payload"), strings(rows, "profile"), strict=True) if a},
        key=lambda c: (float(as_float(_bytes_of(rows, c[1])) or 0), c))
    figs = [f for f in (_spectrum_chart(v, c) for c in cells) if f]
    if not figs:
        h.append('<p class="empty">No raw samples for this run\'s cells.</p>')
    else:
        h.append('<div class="charts">' + "".join(figs) + "</div>")
    h.append("</section>")
    return "".join(h)


def _bytes_of(rows: pd.DataFrame, payload: str) -> Any:
    vals = numbers(rows, "payload_bytes")[strings(rows, "payload").eq(payload)].dropna()
    return None if vals.empty or is_missing(vals.iloc[0]) else float(vals.iloc[0])


__all__ = [
    "MAX_SERIES",
    "TREND_METRICS",
    "TREND_SERIES_EXTRAS",
    "night_label",
    "night_labels",
    "run_labels",
    "section_spectrum",
    "section_time_series",
    "series_label",
    "tool_spectrum",
    "tool_undefined_in_run",
]
