"""The HTML sections of a load run's page (open loop, fan-out to N consumers).

1. **Fan-out** (``#fanout``, seed 003's figures): received rate (average and minimum over
   the consumers) and loss % against the number of consumers, one line per target rate;
   acks 0 and acks 1 (and all) side by side; failing clients likewise.
2. **Latency vs throughput** (``#throughput``): e2e p50 and p99 from the *intended* send time
   (corrected for coordinated omission) and the service-time p99 (from the actual send)
   against the achieved rate, the knee marked when there is one.
   **Latency vs link delay** (``#link-delay``) and **HYDRA on a thin pipe**
   (``#thin-pipe``: one consumer on a degraded link of its own against the others) when the
   run has such cells.
3. **Consumer lag** (``#lag``): lag (log end − position, summed over partitions) per consumer
   over time, the pause window shaded, the client backlog beside it.
4. **Cells** (``#cells``): one row per cell with the cell JSON's keys, ``client_bound`` and
   ``saturated`` as labels, undefined percentiles as ``n<100``/``n<1000``; the failing
   consumers.
5. **Run state, validation and drift** (``#checks``): as on a latency run's page.

Each is a function of a :class:`~kafkalab.report.data.RunView` whose ``load`` holds the
tables; none reads a file. Emulator cells carry the label on every table and chart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from kafkalab.report.charts import (
    PALETTE,
    LineSeries,
    XMark,
    XSpan,
    XYSeries,
    svg_line_chart,
    svg_xy_chart,
)
from kafkalab.report.checks_section import section_checks
from kafkalab.report.data import RunView, emulator_mask, numbers, strings
from kafkalab.report.format import MISSING, emu_mark, esc, fmt_count, fmt_num
from kafkalab.report.load_data import (
    CONFIG_COLUMNS,
    KNEE_FACTOR,
    LoadTables,
    cell_label,
    knee_index,
    percentile_reason,
)
from kafkalab.report.notes import ci_cell, count_cell, percentile_cell
from kafkalab.report.page_parts import figure, scroll_table
from kafkalab.values import as_bool, as_float, is_missing

E2E_NOTE = ("e2e (corrected): receive − intended send time, so a stall of the producer counts "
            "for every message that should have been sent during it (no coordinated omission); "
            "service: receive − actual send; publish delay: actual − intended send (the open "
            "loop falling behind its schedule). Lost messages count as “at least the timeout”.")
FLAGS_NOTE = ("client_bound: a load-generator process used more than 80 % of a core — the "
              "figures may measure the client, not Kafka. host_busy: over 90 % of all the "
              "host's CPUs were busy (clients, broker, anything else). saturated: the publish delay's p99 "
              "exceeded one send interval — the producer could not keep the target rate.")
LOSS_NOTE = ("loss %: expected messages (acked with acks ≥ 1, sent with acks 0) still missing "
             "at a consumer after the drain, over expected × consumers; late %: received only "
             "after the producer stopped. A failing client misses at least one.")

MAX_LAG_LINES = 8
"""More consumers than this in a cell: its lag chart draws the maximum, median and minimum
over the consumers instead of one line each."""

MAX_LAG_CHARTS = 6
"""Lag charts drawn: every cell with a pause, then the cells with the highest lag peak."""

MAX_FAILING_ROWS = 50

CELL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("target_rate_msgs_per_s", "num"), ("achieved_rate_msgs_per_s", "num"),
    ("achieved_mb_per_s", "num"), ("intended_msgs", "count"), ("acked_msgs", "count"),
    ("failed_msgs", "count"), ("indeterminate_msgs", "count"), ("unsent_msgs", "count"),
    ("aborted_msgs", "count"), ("expected_msgs", "count"), ("rx_rate_msgs_per_s_avg", "num"),
    ("rx_rate_msgs_per_s_min", "num"), ("loss_pct", "num"), ("late_pct", "num"),
    ("failing_clients", "count"), ("duplicates", "count"),
    ("e2e_p50_ms", "pct"), ("e2e_p50_ms_ci", "ci"), ("e2e_p90_ms", "pct"),
    ("e2e_p99_ms", "pct"), ("e2e_p99_ms_ci", "ci"), ("e2e_p999_ms", "pct"),
    ("e2e_max_ms", "pct"),
    ("service_e2e_p50_ms", "pct"), ("service_e2e_p99_ms", "pct"),
    ("service_e2e_p999_ms", "pct"), ("service_e2e_max_ms", "pct"),
    ("publish_delay_p50_ms", "pct"), ("publish_delay_p99_ms", "pct"),
    ("publish_delay_max_ms", "pct"), ("ack_latency_p50_ms", "pct"),
    ("ack_latency_p99_ms", "pct"), ("lag_peak_msgs", "count"), ("time_to_drain_s", "num"),
    ("drain_rate_msgs_per_s", "num"),
)
"""The columns of the cells table after the cell's coordinates: keys of the cell JSON
(``kafkalab load --json``), ``…_ci`` the 95 % interval of that percentile."""


# --------------------------------------------------------------------------- helpers

_NO_CELLS = '<p class="empty">No load aggregates for this run.</p>'


def _cells(v: RunView) -> pd.DataFrame:
    """The run's cells with plain coordinates: ``_consumers``, ``_rate``, ``_acks``,
    ``_emu``, ``_config`` (what stays fixed in one fan-out figure) and its label."""
    df = v.rows.copy()
    if df.empty:
        return df
    df["_consumers"] = numbers(df, "consumers")
    df["_rate"] = numbers(df, "rate_msgs_per_s")
    df["_acks"] = strings(df, "acks").replace("", "?")
    df["_emu"] = emulator_mask(df)
    parts = [strings(df, c).map(lambda x: x[:-2] if x.endswith(".0") else x)
             for c in CONFIG_COLUMNS]
    df["_config"] = ["|".join(p) for p in zip(*parts, strict=True)] if parts else ""
    df["_config_label"] = [_config_label(r) for _, r in df.iterrows()]
    return df.sort_values(["_config", "_acks", "_consumers", "_rate"])


def _unpaused(v: RunView) -> tuple[pd.DataFrame, str]:
    """The run's cells without a consumer pause (:func:`_cells`; a pause is a lag
    experiment: its latency and loss are not the fan-out's), and what a section says before
    drawing them: how many were left out, after :data:`_NO_CELLS` when none is left."""
    df = _cells(v)
    if df.empty:
        return df, _NO_CELLS
    paused = numbers(df, "pause_for_s").notna()
    n = int(paused.sum())
    note = (f'<p class="note">{n} cell(s) with a consumer pause left out here: see the lag '
            "section and the cells table.</p>") if n else ""
    df = df[~paused]
    return df, (_NO_CELLS + note if df.empty else note)


def _config_label(r: Any) -> str:
    """``confluent-kafka 1kb, profile latency, 1 partition(s), assign`` (+ the pause, the
    transactions)."""
    bits = [str(r.get(c)) for c in ("client", "payload") if not is_missing(r.get(c))]
    if not is_missing(r.get("profile")):
        bits.append(f"profile {r.get('profile')}")
    parts = as_float(r.get("partitions"))
    if parts is not None:
        bits.append(f"{int(parts)} partition(s)")
    if not is_missing(r.get("consumer_mode")):
        bits.append(str(r.get("consumer_mode")))
    at, for_s = as_float(r.get("pause_at_s")), as_float(r.get("pause_for_s"))
    if at is not None and for_s is not None:
        bits.append(f"consumers paused at {at:g} s for {for_s:g} s")
    txn, abort = as_float(r.get("txn_msgs")), as_float(r.get("txn_abort_every"))
    if txn is not None:
        bits.append(f"transactions of {txn:g} (read_committed)"
                    + (f", every {abort:g}th aborted" if abort is not None else ""))
    delay = as_float(r.get("link_delay_ms"))
    if delay is not None:
        bits.append(f"replication links +{delay:g} ms one way")
    near = as_float(r.get("client_link_delay_ms"))
    if near is not None:
        reads = "follower" if as_bool(r.get("fetch_from_follower")) else "leader"
        bits.append(f"clients beside a follower, +{near:g} ms one way to the other nodes, "
                    f"reading from the {reads}")
    thin = as_float(r.get("thin_consumer"))
    if thin is not None:
        bits.append(f"consumer {int(thin)} on a thin link ({_thin_link(r)})")
    return ", ".join(bits)


def _thin_link(r: Any) -> str:
    """``80 KB/s, +5 ms one way`` (what the thin consumer's link carried)."""
    kbps, delay = as_float(r.get("thin_link_kbps")), as_float(r.get("thin_link_delay_ms"))
    bits = ([f"{kbps:g} KB/s"] if kbps is not None else []) + \
        ([f"+{delay:g} ms one way"] if delay is not None else [])
    return ", ".join(bits) or "nothing added"


def _rate_name(rate: float) -> str:
    return f"{rate:g} msg/s"


# --------------------------------------------------------------------------- (1) fan-out


def _fanout_chart(part: pd.DataFrame, metric: str, title: str, unit: str,
                  with_min: str | None = None) -> tuple[str, bool]:
    """One chart: ``metric`` against the number of consumers, one line per target rate
    (and, with ``with_min``, that column dashed beside it)."""
    xs = sorted({int(c) for c in part["_consumers"].dropna()})
    series: list[LineSeries] = []
    emu = bool(part["_emu"].any())
    for i, rate in enumerate(sorted(part["_rate"].dropna().unique())):
        at = part[part["_rate"] == rate]
        color = PALETTE[i % len(PALETTE)]  # avg and min of one rate share a colour
        for col, dashed, suffix in ((metric, False, ""), (with_min, True, " (min)")):
            if col is None:
                continue
            vals: list[float | None] = []
            for c in xs:
                row = at[at["_consumers"] == c]
                vals.append(as_float(numbers(row, col).median()) if not row.empty else None)
            name = _rate_name(float(rate)) + (" (avg)" if with_min and not dashed else suffix)
            series.append(LineSeries(name=name, values=vals, emulator=emu, dashed=dashed,
                                     color=color))
    return svg_line_chart(title, [str(x) for x in xs], series, unit,
                          x_titles=[f"{x} consumer(s)" for x in xs]), emu


def section_fanout(v: RunView) -> str:
    """(1) Seed 003's figures: rx rate (avg and min), loss % and failing clients against
    the number of consumers, one line per rate, each acks value side by side."""
    h = ['<section id="fanout"><h2>1. Fan-out: received rate and loss vs consumers</h2>',
         '<p class="note">One producer at a fixed target rate fans out to N consumers (each '
         "receives every message). Received rate: unique messages a consumer received before "
         "the producer stopped, per second of the measured window; average and minimum over "
         f"the consumers. {esc(LOSS_NOTE)}</p>"]
    df, said = _unpaused(v)
    h.append(said)
    if df.empty:
        h.append("</section>")
        return "".join(h)
    for config, sub in df.groupby("_config", sort=True):
        label = str(sub["_config_label"].iloc[0])
        if df["_config"].nunique() > 1:
            h.append(f"<h3>{esc(label)}</h3>")
        for metric, title, unit, with_min in (
                ("rx_rate_msgs_per_s_avg", "Received rate per consumer", "msgs/s",
                 "rx_rate_msgs_per_s_min"),
                ("loss_pct", "Loss", "%", None),
                ("failing_clients", "Failing clients", "consumers", None)):
            h.append(f'<div class="charts" data-metric="{esc(metric)}">')
            for acks, part in sub.groupby("_acks", sort=True):
                full = f"{title} vs consumers, acks {acks}"
                svg, emu = _fanout_chart(part, metric, f"{full} ({unit})", unit, with_min)
                h.append(figure(f' data-acks="{esc(acks)}" data-config="{esc(config)}"',
                                esc(f"{full} ({unit})") + emu_mark(emu), emu, svg))
            h.append("</div>")
    h.append("</section>")
    return "".join(h)


# --------------------------------------------------------------------------- (2) throughput


def section_throughput(v: RunView) -> str:
    """(2) Latency vs throughput: e2e p50/p99 (corrected) and service p99 against the
    achieved rate, per acks and number of consumers; the knee marked."""
    h = ['<section id="throughput"><h2>2. Latency vs throughput</h2>',
         f'<p class="note">{esc(E2E_NOTE)} Knee: the first target rate whose e2e p99 exceeds '
         f"{KNEE_FACTOR:g}× the p99 of the lowest rate. Undefined percentiles are not "
         "plotted.</p>"]
    df, said = _unpaused(v)
    h.append(said)
    if df.empty:
        h.append("</section>")
        return "".join(h)
    knees: list[str] = []
    h.append('<div class="charts">')
    for (config, acks, consumers), part in df.groupby(["_config", "_acks", "_consumers"],
                                                      sort=True):
        part = part.sort_values("_rate")
        achieved = numbers(part, "achieved_rate_msgs_per_s")
        x = [a if a is not None else r for a, r in zip(
            (as_float(a) for a in achieved), (float(r) for r in part["_rate"]), strict=True)]
        series = []
        for col, name, dashed in (("e2e_p50_ms", "e2e p50 (corrected)", False),
                                  ("e2e_p99_ms", "e2e p99 (corrected)", False),
                                  ("service_e2e_p99_ms", "service p99 (from send)", True)):
            ys = [as_float(y) for y in numbers(part, col)]
            series.append(XYSeries(name, list(zip(x, ys, strict=True)),
                                   emulator=bool(part["_emu"].any()), dashed=dashed))
        p99s = [as_float(y) for y in numbers(part, "e2e_p99_ms")]
        knee = knee_index([float(r) for r in part["_rate"]], p99s)
        marks = []
        label = str(part["_config_label"].iloc[0])
        who = f"{int(consumers)} consumer(s), acks {acks}"
        if knee is not None:
            rate = float(part["_rate"].iloc[knee])
            marks.append(XMark(x[knee], f"knee {rate:g} msg/s"))
            knees.append(f"{who}: {rate:g} msg/s")
        title = f"Latency vs achieved rate, {who}"
        emu = bool(part["_emu"].any())
        svg = svg_xy_chart(title, series, "achieved msgs/s", "ms", marks=marks)
        h.append(figure(f' data-knee="{"yes" if knee is not None else "no"}" '
                        f'data-config="{esc(config)}"',
                        esc(f"{title} — {label}") + emu_mark(emu), emu, svg))
    h.append("</div>")
    h.append(f'<p class="knees">Knee: {esc("; ".join(knees))}.</p>' if knees
             else '<p class="knees">No knee: e2e p99 stayed within '
                  f"{KNEE_FACTOR:g}× the lowest rate's at every rate measured.</p>")
    h.append("</section>")
    return "".join(h)


# --------------------------------------------------------------------------- link delay

LINK_DELAY_NOTE = (
    "The price of a distant replica: the same cell measured with every replication link "
    "between the nodes delayed by the one-way delay on the x axis (kafkalab load "
    "--link-delay-ms, a cluster started with --links; 0: the proxied links with nothing "
    "added). Publish: send → the producer's acknowledgement (ack_latency); e2e: the intended "
    "send time → a consumer's receipt. acks=all cannot be acknowledged sooner than the "
    "follower's fetch round trip (twice the delay); a consumer reads only up to the high "
    "watermark, which moves once the followers have the record, so e2e pays the round trip "
    "under acks=1 as well.")


NEAR_NOTE = (
    "The clients sit beside one follower of the partition (every node of a linked cluster is "
    "a rack of its own): their links to every other node are delayed by the one-way delay on "
    "the x axis (kafkalab load --client-link-delay-ms). Reading from the leader, a consumer "
    "crosses the slow link; reading from the follower beside it (--fetch-from follower: "
    "client.rack names its rack, the brokers' rack-aware replica selector, KIP-392), it does "
    "not, but the follower serves only what it knows to be committed (the high watermark it "
    "last heard from the leader). The producer writes to the leader across the slow link "
    "either way.")


def _delay_chart(part: pd.DataFrame, x_col: str, lines: str, title: str) -> str:
    """One chart of publish and e2e p50 (solid) and p99 (dashed) against ``x_col``, a colour
    pair per value of the column ``lines`` names."""
    emu = bool(part["_emu"].any())
    series: list[XYSeries] = []
    for i, (key, at) in enumerate(part.groupby(lines, sort=True)):
        at = at.assign(_x=numbers(at, x_col)).sort_values("_x")
        color = PALETTE[(2 * i) % len(PALETTE)], PALETTE[(2 * i + 1) % len(PALETTE)]
        for col, name, dashed, c in (
                ("ack_latency_p50_ms", "publish p50", False, color[0]),
                ("ack_latency_p99_ms", "publish p99", True, color[0]),
                ("e2e_p50_ms", "e2e p50", False, color[1]),
                ("e2e_p99_ms", "e2e p99", True, color[1])):
            points = [(float(x), as_float(y)) for x, y in
                      zip(at["_x"], numbers(at, col), strict=True)]
            series.append(XYSeries(f"{key} {name}", points, emulator=emu, dashed=dashed,
                                   color=c))
    label = str(part["_config_label"].iloc[0]).split(", replication links")[0].split(
        ", clients beside")[0]
    svg = svg_xy_chart(title, series, "one-way delay (ms)", "ms")
    return figure(f' data-x="{esc(x_col)}"', esc(f"{title} — {label}") + emu_mark(emu), emu, svg)


def section_link_delay(v: RunView) -> str:
    """Latency against an injected link delay, one chart per cell setting, number of
    consumers and rate: against the replication links' delay (a line pair per acks), and
    against the clients' delay to every node but their near follower (a line pair per acks
    and where the consumers read). Empty when the run has no cell with either."""
    df, _ = _unpaused(v)
    parts: list[str] = []
    for x_col, heading, note in (
            ("link_delay_ms", "replication delay", LINK_DELAY_NOTE),
            ("client_link_delay_ms", "delay between the clients and the far nodes", NEAR_NOTE)):
        if df.empty or x_col not in df or numbers(df, x_col).notna().sum() == 0:
            continue
        sub = df[numbers(df, x_col).notna()].copy()
        others = [c for c in CONFIG_COLUMNS if c not in (x_col, "fetch_from_follower")]
        sub["_setting"] = ["|".join(str(r.get(c)) for c in others) for _, r in sub.iterrows()]
        reads = ["from follower" if as_bool(f) else "from leader"
                 for f in sub.get("fetch_from_follower", pd.Series([None] * len(sub)))]
        sub["_lines"] = ([f"acks {a}" for a in sub["_acks"]] if x_col == "link_delay_ms" else
                         [f"acks {a} {r}" for a, r in zip(sub["_acks"], reads, strict=True)])
        parts.append(f'<p class="note">{esc(note)} Undefined percentiles are not plotted.</p>'
                     '<div class="charts">')
        for (_, consumers, rate), part in sub.groupby(["_setting", "_consumers", "_rate"],
                                                      sort=True):
            title = (f"Latency vs one-way {heading}, {int(consumers)} consumer(s), "
                     f"{rate:g} msg/s")
            parts.append(_delay_chart(part, x_col, "_lines", title))
        parts.append("</div>")
    if not parts:
        return ""
    return ('<section id="link-delay"><h2>Latency vs link delay</h2>' + "".join(parts)
            + "</section>")


# --------------------------------------------------------------------------- thin pipe

THIN_NOTE = (
    "HYDRA on a thin pipe: one consumer of the cell on links of its own (kafkalab load "
    "--thin-consumer, the cluster's solo plane), limited and/or delayed as its column says, "
    "while the others share the ordinary client links. Its figures beside the worst of the "
    "others' (each consumer's own p99 and peak lag; a pooled figure would hide one bad "
    "consumer): do the others notice? Failing: missing an expected message after the drain. "
    "A consumer that lags fetches more at a time, so over a thin link its records come in "
    "ever larger, ever later batches.")


def _first(frame: pd.DataFrame, key: str, fmt: Any = fmt_num) -> str:
    """``key`` of the frame's first row, formatted; the missing mark for an empty frame."""
    return str(fmt(frame.iloc[0].get(key))) if not frame.empty else MISSING


def _worst(frame: pd.DataFrame, key: str, fmt: Any = fmt_num, low: bool = False) -> str:
    """The highest (``low``: lowest) ``key`` over the frame's rows; the missing mark when a
    row has none (an undefined percentile is not a small one)."""
    vals = numbers(frame, key) if not frame.empty else pd.Series(dtype=float)
    if vals.empty or vals.isna().any():
        return MISSING
    return str(fmt(vals.min() if low else vals.max()))


def _thin_row(r: Any, con: pd.DataFrame) -> str:
    """One cell's row of the thin-pipe table from its ``load_consumers`` rows."""
    thin = int(as_float(r.get("thin_consumer")) or 0)
    mine = con[strings(con, "cell_id") == str(r.get("cell_id"))] if not con.empty else con
    me = mine[numbers(mine, "consumer") == thin] if not mine.empty else mine
    rest = mine[numbers(mine, "consumer") != thin] if not mine.empty else mine
    failing_me = (("FAILING" if as_bool(me.iloc[0].get("failing")) else "no")
                  if not me.empty else MISSING)
    failing_rest = (f"{int(rest['failing'].map(as_bool).sum())} of {len(rest)}"
                    if not rest.empty else MISSING)
    values = [_thin_link(r), failing_me, _first(me, "lag_peak_msgs", fmt_count),
              _first(me, "e2e_p99_ms"), _first(me, "rx_rate_msgs_per_s"), failing_rest,
              _worst(rest, "lag_peak_msgs", fmt_count), _worst(rest, "e2e_p99_ms"),
              _worst(rest, "rx_rate_msgs_per_s", low=True)]
    return (f'<tr><td class="t">{esc(cell_label(r))}</td>'
            + "".join(f"<td>{esc(x)}</td>" for x in values) + "</tr>")


def section_thin_pipe(v: RunView, tables: LoadTables) -> str:
    """One row per cell with a thin consumer: its link, the thin consumer's failing flag,
    peak lag, e2e p99 and rx rate against the others' (from ``load_consumers``). Empty when
    the run has none."""
    df = _cells(v)
    if df.empty or "thin_consumer" not in df or numbers(df, "thin_consumer").notna().sum() == 0:
        return ""
    rows = [_thin_row(r, tables.consumers)
            for _, r in df[numbers(df, "thin_consumer").notna()].iterrows()]
    return ('<section id="thin-pipe"><h2>HYDRA on a thin pipe</h2>'
            f'<p class="note">{esc(THIN_NOTE)}</p><table class="thin"><thead><tr>'
            '<th class="t">cell</th><th>thin link</th><th>thin: failing</th>'
            "<th>thin: lag peak</th><th>thin: e2e p99 ms</th><th>thin: rx msg/s</th>"
            "<th>others: failing</th><th>others: worst lag peak</th>"
            "<th>others: worst e2e p99 ms</th><th>others: lowest rx msg/s</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></section>")


# --------------------------------------------------------------------------- (3) lag


def _lag_cells(df: pd.DataFrame) -> list[Any]:
    """The cells whose lag is drawn: every cell with a pause, then the highest lag peaks."""
    paused = df[numbers(df, "pause_for_s").notna()]
    rest = df[numbers(df, "pause_for_s").isna()].assign(_peak=numbers(df, "lag_peak_msgs"))
    rest = rest.sort_values("_peak", ascending=False, na_position="last")
    picked = pd.concat([paused, rest.drop(columns="_peak")]).head(MAX_LAG_CHARTS)
    return [r for _, r in picked.iterrows()]


def _lag_series(samples: pd.DataFrame, emu: bool) -> list[XYSeries]:
    """Lag lines of one cell: per consumer, or max/median/min over many consumers; the
    client backlog (max over consumers) dashed."""
    samples = samples.assign(_t=numbers(samples, "elapsed_s"), _lag=numbers(samples, "lag_msgs"),
                             _backlog=numbers(samples, "client_backlog_msgs"),
                             _c=numbers(samples, "consumer"))
    samples = samples.dropna(subset=["_t"]).sort_values("_t")
    out: list[XYSeries] = []
    consumers = sorted(samples["_c"].dropna().unique())
    if len(consumers) <= MAX_LAG_LINES:
        for c in consumers:
            one = samples[samples["_c"] == c]
            out.append(XYSeries(f"consumer {int(c)} lag", [
                (float(t), as_float(y)) for t, y in zip(one["_t"], one["_lag"], strict=True)],
                emulator=emu))
    else:
        # Samples of different consumers are taken at nearly the same times: bin by second.
        binned = samples.assign(_bin=samples["_t"].round(0))
        g = binned.groupby("_bin")["_lag"]
        for name, agg in (("max", g.max()), ("median", g.median()), ("min", g.min())):
            out.append(XYSeries(f"lag, {name} over {len(consumers)} consumers",
                                [(float(t), as_float(y)) for t, y in agg.items()], emulator=emu))
    if samples["_backlog"].notna().any():
        b = samples.assign(_bin=samples["_t"].round(0)).groupby("_bin")["_backlog"].max()
        out.append(XYSeries("client backlog (acked − received), max", [
            (float(t), as_float(y)) for t, y in b.items()], emulator=emu, dashed=True))
    return out


def section_lag(v: RunView, tables: LoadTables) -> str:
    """(3) Lag over time per consumer, the pause window shaded."""
    h = ['<section id="lag"><h2>3. Consumer lag over time</h2>',
         '<p class="note">Lag: the partition\'s log-end offset minus the consumer\'s position, '
         "summed over partitions, sampled every lag interval; client backlog: messages acked "
         "by the broker but not yet received by the consumer. While consumers are paused "
         "(shaded) lag grows at about the produce rate; after it, the drain.</p>"]
    df = _cells(v)
    lag = tables.lag
    if df.empty or lag.empty or "cell_id" not in lag.columns:
        h.append('<p class="empty">No lag samples for this run.</p></section>')
        return "".join(h)
    picked = _lag_cells(df)
    h.append('<div class="charts">')
    drawn = 0
    for r in picked:
        samples = lag[lag["cell_id"].astype(str) == str(r.get("cell_id"))]
        if samples.empty:
            continue
        emu = bool(r["_emu"])
        spans = []
        at, for_s = as_float(r.get("pause_at_s")), as_float(r.get("pause_for_s"))
        if at is not None and for_s is not None:
            spans.append(XSpan(at, at + for_s, f"paused {for_s:g} s"))
        elif "paused" in samples.columns and samples["paused"].map(as_bool).any():
            t = numbers(samples[samples["paused"].map(as_bool)], "elapsed_s")
            spans.append(XSpan(float(t.min()), float(t.max()), "paused"))
        title = f"Lag, {cell_label(r)}"
        svg = svg_xy_chart(title, _lag_series(samples, emu), "s since start", "msgs",
                           spans=spans)
        facts = (f'<p class="note">peak {esc(fmt_count(r.get("lag_peak_msgs")))} msgs; '
                 f'time to drain {esc(fmt_num(r.get("time_to_drain_s")))} s; drain rate '
                 f'{esc(fmt_num(r.get("drain_rate_msgs_per_s")))} msgs/s</p>')
        h.append(figure(f' data-cell="{esc(r.get("cell_id"))}"',
                        esc(f"{title} — {r['_config_label']}") + emu_mark(emu), emu, svg, facts))
        drawn += 1
    h.append("</div>")
    if drawn < len(df):
        h.append(f'<p class="note">Lag drawn for {drawn} of {len(df)} cell(s) (those with a '
                 "pause, then the highest peaks); every cell's peak is in the table below.</p>")
    h.append("</section>")
    return "".join(h)


# --------------------------------------------------------------------------- (4) cells


def _flags(r: Any) -> str:
    out = []
    if as_bool(r.get("client_bound")):
        out.append('<span class="flag bound" title="a load-generator process used more than '
                   '80 % of a core">client_bound</span>')
    if as_bool(r.get("host_busy")):
        out.append('<span class="flag bound" title="over 90 % of all the host\'s CPUs were busy: '
                   'clients or broker may have waited for a CPU">host_busy</span>')
    if as_bool(r.get("saturated")):
        out.append('<span class="flag saturated" title="publish delay p99 above one send '
                   'interval">saturated</span>')
    if as_bool(r.get("cross_host_clock")):
        out.append('<span class="flag bound" title="a consumer shard ran on another host: its '
                   'latencies are mapped through both hosts\' wall clocks and carry their '
                   'disagreement (NTP)">cross_host_clock</span>')
    return " ".join(out)


def _cell_value(r: Any, key: str, kind: str) -> str:
    if kind == "ci":
        base = key.removesuffix("_ci")
        return ci_cell(r.get(f"{base}_ci_low"), r.get(f"{base}_ci_high"))
    value = r.get(key)
    if kind == "pct":
        return percentile_cell(value, None if as_float(value) is not None
                               else percentile_reason(r, key))
    if kind == "count":
        return count_cell(value)
    return esc(fmt_num(value))


def _status(r: Any) -> str:
    status = r.get("status")
    text = "" if is_missing(status) else str(status)
    klass = "ok" if text == "complete" else "fail" if text in ("failed", "incomplete") else ""
    return f'<span class="{klass}">{esc(text or MISSING)}</span>'


def section_cells(v: RunView, tables: LoadTables) -> str:
    """(4) One row per cell with the cell JSON's keys; then the failing consumers."""
    h = ['<section id="cells"><h2>4. Cells</h2>']
    df = _cells(v)
    if df.empty:
        h.append(f"{_NO_CELLS}</section>")
        return "".join(h)
    emu_any = bool(df["_emu"].any())
    head = ('<th class="t">cell_id</th><th class="t">client</th><th class="t">payload</th>'
            '<th class="t">profile</th><th class="t">acks</th><th>partitions</th>'
            '<th>consumers</th><th class="t">flags</th><th class="t">status</th>'
            '<th class="t">broker</th>'
            + "".join(f"<th>{esc(k)}</th>" for k, _ in CELL_COLUMNS))
    rows = []
    for _, r in df.iterrows():
        emu = bool(r["_emu"])
        flavor = "" if is_missing(r.get("cluster_flavor")) else str(r.get("cluster_flavor"))
        broker = esc(flavor) + emu_mark(emu)
        parts = as_float(r.get("partitions"))
        cls = ' class="bound"' if as_bool(r.get("client_bound")) else ""
        rows.append(
            f"<tr{cls} data-cell=\"{esc(r.get('cell_id'))}\">"
            f'<td class="t cell-id">{esc(r.get("cell_id"))}</td>'
            f'<td class="t">{esc(r.get("client"))}</td><td class="t">{esc(r.get("payload"))}</td>'
            f'<td class="t">{esc(r.get("profile"))}</td><td class="t">{esc(r["_acks"])}</td>'
            f"<td>{esc(MISSING if parts is None else int(parts))}</td>"
            f"<td>{_cell_value(r, 'consumers', 'count')}</td><td class=\"t\">{_flags(r)}</td>"
            f'<td class="t">{_status(r)}</td><td class="t">{broker}</td>'
            + "".join(f"<td>{_cell_value(r, k, kind)}</td>" for k, kind in CELL_COLUMNS)
            + "</tr>")
    cap = ("Load cells (keys as in <code>kafkalab load --json</code>; ms, msgs/s, %)"
           + emu_mark(emu_any))
    h.append(scroll_table("load-cells", cap, head, "".join(rows)))
    h.extend(f'<p class="note">{esc(n)}</p>' for n in (
        FLAGS_NOTE, E2E_NOTE, "n<100 / n<1000: too few messages for that percentile (p99 needs "
        "100, p99.9 needs 1,000 in the pooled population); never plotted nor drift-checked."))
    h.append(_failing_consumers(tables, df))
    h.append("</section>")
    return "".join(h)


def _failing_consumers(tables: LoadTables, cells: pd.DataFrame) -> str:
    con = tables.consumers
    if con.empty:
        return '<p class="empty">No per-consumer aggregates for this run.</p>'
    failing = con[con["failing"].map(as_bool)] if "failing" in con.columns else con.iloc[0:0]
    if failing.empty:
        return (f'<p class="ok">No failing client: each of the {len(con)} consumer(s) holds '
                "every expected message after the drain.</p>")
    failing = failing.assign(_missing=numbers(failing, "missing_msgs")).sort_values(
        "_missing", ascending=False)
    labels = {str(r.get("cell_id")): cell_label(r) for _, r in cells.iterrows()}
    rows = "".join(
        f'<tr class="drift"><td class="t">{esc(labels.get(str(r.get("cell_id")), r.get("cell_id")))}'
        f"</td><td>{esc(fmt_num(r.get('consumer')))}</td>"
        + "".join(f"<td>{esc(fmt_num(r.get(k)))}</td>" for k in (
            "unique_msgs", "missing_msgs", "gaps", "late_msgs", "duplicates", "unexpected_msgs",
            "rx_rate_msgs_per_s", "e2e_p99_ms"))
        + "</tr>"
        for _, r in failing.head(MAX_FAILING_ROWS).iterrows())
    more = (f'<p class="note">… and {len(failing) - MAX_FAILING_ROWS} more.</p>'
            if len(failing) > MAX_FAILING_ROWS else "")
    return ('<table class="failing"><caption>Failing clients (missing messages after the '
            'drain)</caption><thead><tr><th class="t">cell</th><th>consumer</th>'
            "<th>unique_msgs</th><th>missing_msgs</th><th>gaps</th><th>late_msgs</th>"
            "<th>duplicates</th><th>unexpected_msgs</th><th>rx_rate_msgs_per_s</th>"
            f"<th>e2e_p99_ms</th></tr></thead><tbody>{rows}</tbody></table>{more}")


# --------------------------------------------------------------------------- page body


def load_sections(v: RunView, page_dir: Path) -> str:
    """The sections of a load run's page (the caller adds the banners)."""
    tables = v.load or LoadTables()
    return (section_fanout(v) + section_throughput(v) + section_link_delay(v)
            + section_thin_pipe(v, tables) + section_lag(v, tables)
            + section_cells(v, tables) + section_checks(v, page_dir))


__all__ = [
    "CELL_COLUMNS",
    "MAX_LAG_CHARTS",
    "MAX_LAG_LINES",
    "load_sections",
    "section_cells",
    "section_fanout",
    "section_lag",
    "section_link_delay",
    "section_thin_pipe",
    "section_throughput",
]
