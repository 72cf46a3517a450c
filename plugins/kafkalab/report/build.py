"""Build the static, self-contained trend report under ``<data_dir>/reports/``.

Layout (see ``docs/drift-and-alerts.md``):

* ``reports/index.html``: every run (newest first) linking to its page, then the newest
  run's sections mirrored;
* ``reports/<run_id>/index.html``: one page per run with five sections: (1) latest run table,
  (2) time series, (3) HTTP vs Kafka clients vs Kafka's tool by payload, (4) first-message
  delay, (5) validation and drift flags.

Charts are inline SVG drawn here; CSS and the small hover script are inlined from
``assets/``. Pages reference nothing outside the data directory (no network at all).
Runs on an emulator broker carry the label "EMULATOR — not Kafka" on every table and chart
they appear in.
"""

from __future__ import annotations

import html
import json
import logging
import math
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from kafkalab import drift as drift_mod

log = logging.getLogger(__name__)

EMULATOR_LABEL = "EMULATOR — not Kafka"
SCENARIO_ORDER = ("rest", "kafka-python", "confluent-kafka", "jvm-e2e")
SCENARIO_LABELS = {
    "rest": "HTTP (rest)",
    "kafka-python": "kafka-python",
    "confluent-kafka": "confluent-kafka",
    "jvm-e2e": "Kafka tool (EndToEndLatency)",
}
TIME_SERIES_METRICS: tuple[tuple[str, str, str], ...] = (
    ("e2e_latency_ms_p50", "End-to-end latency p50", "ms"),
    ("e2e_latency_ms_p99", "End-to-end latency p99", "ms"),
    ("throughput_msgs_per_s", "Throughput", "msgs/s"),
    ("first_message_subscribe_ms", "First message delay (subscribe)", "ms"),
)
PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
    "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
)
BAR_COLORS = {
    "rest": "#4c78a8", "kafka-python": "#f58518", "confluent-kafka": "#54a24b",
    "jvm-e2e": "#b279a2", "subscribe": "#e45756", "assign": "#72b7b2",
}
_SAFE = re.compile(r"[^A-Za-z0-9._=-]")


# --------------------------------------------------------------------------- helpers


def _e(v: Any) -> str:
    """HTML-escape any value (None -> empty)."""
    return "" if v is None else html.escape(str(v), quote=True)


def _num(v: Any) -> float | None:
    """A finite float or None."""
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def fmt_num(v: Any) -> str:
    """Format a number for tables: 3-4 significant digits, thousands separators, '—' if null."""
    f = _num(v)
    if f is None:
        return "—"
    a = abs(f)
    if a >= 1000:
        return f"{f:,.0f}"
    if a >= 100:
        return f"{f:.1f}"
    if a >= 1:
        return f"{f:.2f}"
    if a == 0:
        return "0"
    return f"{f:.3g}"


def fmt_pct(v: Any) -> str:
    """Format a signed percentage, '—' if null."""
    f = _num(v)
    return "—" if f is None else f"{f:+.1f}%"


def _as_bool(v: Any) -> bool:
    if v is None:
        return False
    try:
        if pd.isna(v):
            return False
    except (TypeError, ValueError):
        pass
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes")
    return bool(v)


def _safe_dir(run_id: str) -> str:
    """A file-system-safe directory name for a run id."""
    return _SAFE.sub("_", run_id) or "_"


def _rel(target: Path, from_dir: Path) -> str:
    """A relative, URL-quoted href from ``from_dir`` to ``target``."""
    rel = os.path.relpath(target, from_dir).replace(os.sep, "/")
    return quote(rel, safe="/._-=")


def _asset(name: str) -> str:
    return resources.files("kafkalab.report").joinpath("assets", name).read_text("utf-8")


def _emu_span() -> str:
    return f'<span class="emu">{_e(EMULATOR_LABEL)}</span>'


def _scenario_rank(s: Any) -> int:
    return SCENARIO_ORDER.index(s) if s in SCENARIO_ORDER else len(SCENARIO_ORDER)


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    """A column as numbers (NaN when absent)."""
    if name in df.columns:
        return pd.to_numeric(df[name], errors="coerce")
    return pd.Series(float("nan"), index=df.index, dtype="float64")


def _scol(df: pd.DataFrame, name: str) -> pd.Series:
    """A column as strings ('' when absent/null)."""
    if name in df.columns:
        return df[name].astype("object").where(df[name].notna(), "").astype(str)
    return pd.Series("", index=df.index, dtype="object")


def _emu_col(df: pd.DataFrame) -> pd.Series:
    if "broker_is_emulator" in df.columns:
        return df["broker_is_emulator"].map(_as_bool).astype(bool)
    return pd.Series(False, index=df.index, dtype=bool)


# --------------------------------------------------------------------------- SVG charts


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] with about ``n`` intervals."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) * 0.1 or 1.0)
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = mag
    for m in (1, 2, 2.5, 5, 10):
        step = m * mag
        if (hi - lo) / step <= n:
            break
    start = math.floor(lo / step) * step
    ticks: list[float] = []
    t = start
    while t < hi + step * 0.5 and len(ticks) < 50:
        ticks.append(round(t, 12))
        if t >= hi:
            break
        t += step
    if len(ticks) < 2:
        ticks.append(ticks[-1] + step)
    return ticks


def _tick_label(v: float) -> str:
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:g}M"
    if a >= 1e4:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


@dataclass
class LineSeries:
    """One line of a line chart: values aligned with the chart's x labels (None = gap)."""

    name: str
    values: list[float | None]
    emulator: bool = False


@dataclass
class BarSeries:
    """One bar per group (None = no bar) with a legend name and a colour."""

    name: str
    values: list[float | None]
    color: str
    emulator: bool = False
    emulator_values: list[bool] | None = None  # per-bar flags; default: ``emulator`` for all

    def is_emulator(self, i: int) -> bool:
        """Whether bar ``i`` was measured on an emulator broker."""
        if self.emulator_values is not None and i < len(self.emulator_values):
            return bool(self.emulator_values[i])
        return self.emulator


@dataclass
class _Frame:
    width: int
    height: int
    left: int = 64
    right: int = 16
    top: int = 34
    bottom: int = 70
    parts: list[str] = field(default_factory=list)

    @property
    def plot_w(self) -> int:
        return self.width - self.left - self.right

    @property
    def plot_h(self) -> int:
        return self.height - self.top - self.bottom


def _svg_open(title: str, width: int, height: int) -> str:
    return (
        f'<svg class="chart" role="img" aria-label="{_e(title)}" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}">'
        f"<title>{_e(title)}</title>"
    )


def _emu_badge(width: int) -> str:
    w = 172
    x = width - w - 8
    return (
        f'<g class="emu-badge"><rect class="emu-svg" x="{x}" y="6" width="{w}" height="20" '
        f'rx="3"/><text class="emu-svg" x="{x + w / 2:.1f}" y="20" text-anchor="middle">'
        f"{_e(EMULATOR_LABEL)}</text></g>"
    )


def _y_axis(fr: _Frame, ticks: list[float], y_label: str) -> tuple[float, float]:
    lo, hi = ticks[0], ticks[-1]
    for t in ticks:
        y = fr.top + fr.plot_h * (1 - (t - lo) / (hi - lo))
        fr.parts.append(
            f'<line class="grid" x1="{fr.left}" y1="{y:.1f}" x2="{fr.left + fr.plot_w}" '
            f'y2="{y:.1f}"/><text x="{fr.left - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{_e(_tick_label(t))}</text>"
        )
    fr.parts.append(
        f'<line class="axis" x1="{fr.left}" y1="{fr.top}" x2="{fr.left}" '
        f'y2="{fr.top + fr.plot_h}"/>'
        f'<line class="axis" x1="{fr.left}" y1="{fr.top + fr.plot_h}" '
        f'x2="{fr.left + fr.plot_w}" y2="{fr.top + fr.plot_h}"/>'
        f'<text x="14" y="{fr.top + fr.plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {fr.top + fr.plot_h / 2:.1f})">{_e(y_label)}</text>'
    )
    return lo, hi


_LEGEND_MAX_CHARS = 64


def _legend_col_w(items: list[tuple[str, str, bool, str]], width: int) -> int:
    """Legend column width (px) fitting the longest label (about 6.3 px per character)."""
    longest = max((min(len(i[1]), _LEGEND_MAX_CHARS) for i in items), default=10)
    return int(min(max(width, 120), 40 + 6.3 * longest))


def _legend_height(items: list[tuple[str, str, bool, str]], width: int) -> int:
    per_row = max(1, width // _legend_col_w(items, width))
    return math.ceil(len(items) / per_row) * 18 if items else 0


def _legend(items: list[tuple[str, str, bool, str]], x0: int, y0: int, width: int) -> tuple[
    str, int
]:
    """Legend rows: items are (key, label, dashed, color). Returns (svg, height used)."""
    col_w = _legend_col_w(items, width)
    per_row = max(1, width // col_w)
    out = []
    for i, (key, label, dashed, color) in enumerate(items):
        x = x0 + (i % per_row) * col_w
        y = y0 + (i // per_row) * 18
        short = label if len(label) <= _LEGEND_MAX_CHARS else label[: _LEGEND_MAX_CHARS - 1] + "…"
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        out.append(
            f'<g class="legend-item" data-series="{_e(key)}"><title>{_e(label)}</title>'
            f'<line x1="{x}" y1="{y}" x2="{x + 22}" y2="{y}" stroke="{color}" '
            f'stroke-width="3"{dash}/><text x="{x + 28}" y="{y + 4}">{_e(short)}</text></g>'
        )
    rows = math.ceil(len(items) / per_row) if items else 0
    return "".join(out), rows * 18


def svg_line_chart(
    title: str,
    x_labels: list[str],
    series: list[LineSeries],
    y_label: str,
    width: int = 620,
    x_titles: list[str] | None = None,
) -> str:
    """An inline SVG line chart: one line per series, y from 0, gaps for missing values."""
    items = [(f"s{i}", s.name + (f" [{EMULATOR_LABEL}]" if s.emulator else ""), s.emulator, "")
             for i, s in enumerate(series)]
    legend_h = _legend_height(items, width - 80)
    fr = _Frame(width=width, height=250 + 70 + legend_h, bottom=70 + legend_h + 8)
    emulator = any(s.emulator for s in series)
    fr.parts.append(_svg_open(title, fr.width, fr.height))
    fr.parts.append(f'<text class="ttl" x="{fr.left}" y="20">{_e(title)}</text>')
    if emulator:
        fr.parts.append(_emu_badge(fr.width))
    vals = [v for s in series for v in s.values if v is not None]
    if not vals or not x_labels:
        fr.parts.append(
            f'<text x="{fr.width / 2:.0f}" y="{fr.height / 2:.0f}" text-anchor="middle">'
            "no data</text></svg>"
        )
        return "".join(fr.parts)
    ticks = nice_ticks(min(0.0, min(vals)), max(vals))
    lo, hi = _y_axis(fr, ticks, y_label)
    n = len(x_labels)

    def px(i: int) -> float:
        return fr.left + (fr.plot_w * (i + 0.5) / n)

    def py(v: float) -> float:
        return fr.top + fr.plot_h * (1 - (v - lo) / (hi - lo))

    step = max(1, math.ceil(n / 12))
    base_y = fr.top + fr.plot_h
    for i, lab in enumerate(x_labels):
        if i % step and i != n - 1:
            continue
        x = px(i)
        tip = f"<title>{_e((x_titles or x_labels)[i])}</title>"
        fr.parts.append(
            f'<line class="axis" x1="{x:.1f}" y1="{base_y}" x2="{x:.1f}" y2="{base_y + 4}"/>'
            f'<text x="{x:.1f}" y="{base_y + 14}" text-anchor="end" '
            f'transform="rotate(-30 {x:.1f} {base_y + 14})">{tip}{_e(lab)}</text>'
        )
    legend_items = []
    for si, s in enumerate(series):
        color = PALETTE[si % len(PALETTE)]
        key = f"s{si}"
        dash = ' stroke-dasharray="5 3"' if s.emulator else ""
        segs: list[list[tuple[float, float]]] = [[]]
        points = []
        for i, v in enumerate(s.values):
            if v is None:
                if segs[-1]:
                    segs.append([])
                continue
            segs[-1].append((px(i), py(v)))
            xt = (x_titles or x_labels)[i]
            points.append(
                f'<circle cx="{px(i):.1f}" cy="{py(v):.1f}" r="3" fill="{color}">'
                f"<title>{_e(s.name)} | {_e(xt)}: {_e(fmt_num(v))} {_e(y_label)}</title></circle>"
            )
        paths = "".join(
            f'<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="'
            + " ".join(f"{x:.1f},{y:.1f}" for x, y in seg)
            + '"/>'
            for seg in segs
            if len(seg) > 1
        )
        fr.parts.append(
            f'<g class="series" data-series="{key}">{paths}{"".join(points)}</g>'
        )
        label = s.name + (f" [{EMULATOR_LABEL}]" if s.emulator else "")
        legend_items.append((key, label, s.emulator, color))
    legend, _ = _legend(legend_items, fr.left, fr.height - legend_h - 4, fr.plot_w)
    fr.parts.append(legend)
    fr.parts.append("</svg>")
    return "".join(fr.parts)


def svg_bar_chart(
    title: str,
    groups: list[str],
    bars: list[BarSeries],
    y_label: str,
    width: int = 620,
) -> str:
    """An inline SVG grouped bar chart: one group per label, one bar per series."""
    items = [(f"b{i}", b.name + (f" [{EMULATOR_LABEL}]" if b.emulator else ""), b.emulator, "")
             for i, b in enumerate(bars)]
    legend_h = _legend_height(items, width - 80)
    fr = _Frame(width=width, height=250 + 50 + legend_h, bottom=50 + legend_h + 8)
    emulator = any(b.is_emulator(i) for b in bars for i in range(len(b.values)))
    fr.parts.append(_svg_open(title, fr.width, fr.height))
    fr.parts.append(f'<text class="ttl" x="{fr.left}" y="20">{_e(title)}</text>')
    if emulator:
        fr.parts.append(_emu_badge(fr.width))
    vals = [v for b in bars for v in b.values if v is not None]
    if not vals or not groups:
        fr.parts.append(
            f'<text x="{fr.width / 2:.0f}" y="{fr.height / 2:.0f}" text-anchor="middle">'
            "no data</text></svg>"
        )
        return "".join(fr.parts)
    ticks = nice_ticks(min(0.0, min(vals)), max(vals))
    lo, hi = _y_axis(fr, ticks, y_label)
    g_w = fr.plot_w / len(groups)
    bar_w = g_w * 0.8 / max(1, len(bars))
    base_y = fr.top + fr.plot_h

    def py(v: float) -> float:
        return fr.top + fr.plot_h * (1 - (v - lo) / (hi - lo))

    for gi, g in enumerate(groups):
        cx = fr.left + g_w * (gi + 0.5)
        fr.parts.append(
            f'<text x="{cx:.1f}" y="{base_y + 16}" text-anchor="middle">{_e(g)}</text>'
        )
    legend_items = []
    for bi, b in enumerate(bars):
        key = f"b{bi}"
        rects = []
        for gi, v in enumerate(b.values):
            if v is None:
                continue
            x = fr.left + g_w * gi + g_w * 0.1 + bar_w * bi
            y0, y1 = py(max(v, 0.0)), py(min(v, 0.0))
            emu_bar = b.is_emulator(gi)
            stroke = ' stroke="#7a4b00" stroke-width="1.5" stroke-dasharray="3 2"' if (
                emu_bar) else ""
            emu_tip = f" [{EMULATOR_LABEL}]" if emu_bar else ""
            rects.append(
                f'<rect x="{x:.1f}" y="{y0:.1f}" width="{max(bar_w - 2, 1):.1f}" '
                f'height="{max(y1 - y0, 0.5):.1f}" fill="{b.color}"{stroke}>'
                f"<title>{_e(b.name)} | {_e(groups[gi])}: {_e(fmt_num(v))} {_e(y_label)}"
                f"{_e(emu_tip)}</title></rect>"
            )
        fr.parts.append(f'<g class="series" data-series="{key}">{"".join(rects)}</g>')
        label = b.name + (f" [{EMULATOR_LABEL}]" if b.emulator else "")
        legend_items.append((key, label, b.emulator, b.color))
    legend, _ = _legend(legend_items, fr.left, fr.height - legend_h - 4, fr.plot_w)
    fr.parts.append(legend)
    fr.parts.append("</svg>")
    return "".join(fr.parts)


# --------------------------------------------------------------------------- data access


def _load_manifests(data_dir: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    d = data_dir / "runs"
    if not d.is_dir():
        return out
    for f in sorted(d.glob("*.json")):
        try:
            m = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log.warning("run manifest %s unreadable; skipped", f)
            continue
        if isinstance(m, dict):
            out[str(m.get("run_id") or f.stem)] = m
    return out


def _load_validation(data_dir: Path, run_id: str) -> dict[str, Any] | None:
    p = data_dir / "validation" / f"{run_id}.json"
    if not p.exists():
        return None
    try:
        v = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"success": None, "failed": [], "unreadable": True}
    return v if isinstance(v, dict) else {"success": None, "failed": [], "unreadable": True}


def _ordered_runs(history: pd.DataFrame, manifests: dict[str, dict[str, Any]]) -> list[str]:
    rows: list[dict[str, Any]] = []
    if not history.empty and "run_id" in history.columns:
        cols = [c for c in ("run_id", "run_started_at", "run_date") if c in history.columns]
        rows.extend(history[cols].to_dict(orient="records"))
    for rid, m in manifests.items():
        rows.append({"run_id": rid, "run_started_at": m.get("started_at")})
    if not rows:
        return []
    df = pd.DataFrame(rows)
    df["run_id"] = df["run_id"].astype(str)
    df["run_started_at"] = pd.to_datetime(df.get("run_started_at"), utc=True, errors="coerce")
    return drift_mod.run_order(df)


@dataclass
class RunView:
    """Everything one run's sections need."""

    run_id: str
    manifest: dict[str, Any] | None
    rows: pd.DataFrame
    history: pd.DataFrame
    order: list[str]
    table_drift: pd.DataFrame
    drift_records: pd.DataFrame
    drift_stored: bool
    validation: dict[str, Any] | None
    validation_html: Path | None
    emulator: bool


def _run_view(
    data_dir: Path, run_id: str, history: pd.DataFrame, order: list[str],
    manifests: dict[str, dict[str, Any]], config: drift_mod.DriftConfig,
) -> RunView:
    upto = order[: order.index(run_id) + 1] if run_id in order else [run_id]
    if not history.empty and "run_id" in history.columns:
        hist = history[history["run_id"].astype(str).isin(upto)]
        rows = hist[hist["run_id"].astype(str) == run_id]
    else:
        hist = rows = pd.DataFrame()
    manifest = manifests.get(run_id)
    cluster = (manifest or {}).get("cluster") or {}
    emulator = bool(_emu_col(rows).any()) if not rows.empty else False
    emulator = emulator or _as_bool(cluster.get("is_emulator"))
    table_cfg = drift_mod.DriftConfig(
        defaults=config.defaults,
        metrics={m: config.metrics.get(m, drift_mod.MetricRule())
                 for m in ("e2e_latency_ms_p50", "e2e_latency_ms_p99")},
    )
    table_drift = (
        drift_mod.detect_drift(hist, table_cfg, run_id) if not rows.empty
        else drift_mod.detect_drift(pd.DataFrame(), table_cfg)
    )
    stored = None
    try:
        stored = drift_mod.read_drift(data_dir, run_id)
    except Exception as exc:  # a corrupt file must not break the report
        log.warning("drift records of %s unreadable (%s); recomputing", run_id, exc)
    if stored is not None:
        records, is_stored = stored, True
    else:
        records = (drift_mod.detect_drift(hist, config, run_id) if not rows.empty
                   else drift_mod.detect_drift(pd.DataFrame(), config))
        is_stored = False
    vhtml = data_dir / "validation" / f"{run_id}.html"
    return RunView(
        run_id=run_id, manifest=manifest, rows=rows, history=hist, order=upto,
        table_drift=table_drift, drift_records=records, drift_stored=is_stored,
        validation=_load_validation(data_dir, run_id),
        validation_html=vhtml if vhtml.exists() else None, emulator=emulator,
    )


# --------------------------------------------------------------------------- sections


def _series_label(scenario: str, client: str, payload: str, profile: str) -> str:
    who = scenario if client in ("", scenario) else f"{scenario}/{client}"
    return " ".join(p for p in (who, payload, profile) if p)


def _section_latest(v: RunView) -> str:
    h = ['<section id="latest"><h2>1. Latest run</h2>']
    if v.rows.empty:
        h.append('<p class="empty">No aggregates for this run.</p></section>')
        return "".join(h)
    df = v.rows.copy()
    df["_scenario"] = _scol(df, "scenario")
    df["_client"] = _scol(df, "client")
    df["_payload"] = _scol(df, "payload")
    df["_profile"] = _scol(df, "profile")
    df["_emu"] = _emu_col(df)
    df["_bytes"] = _col(df, "payload_bytes")
    df["_rank"] = df["_scenario"].map(_scenario_rank)
    df = df.sort_values(["_rank", "_scenario", "_bytes", "_payload", "_profile"])
    base: dict[tuple[str, str], dict[str, Any]] = {}
    for r in drift_mod.records_to_dicts(v.table_drift):
        key = (str(r["series_key"]).rsplit("|", 1)[0] + f"|{bool(r['broker_is_emulator'])}",
               str(r["metric"]))
        base[key] = r
    flagged = set()
    for r in drift_mod.records_to_dicts(v.drift_records):
        if r.get("is_drift"):
            flagged.add(str(r["series_key"]).rsplit("|", 1)[0] + f"|{bool(r['broker_is_emulator'])}")
    caption = "Latency of each cell (ms); baseline = median of the previous runs' window"
    if df["_emu"].any():
        caption += f" {_emu_span()}"
    h.append('<div class="scroll">')
    h.append(f"<table class=\"latest\"><caption>{caption}</caption><thead><tr>"
             '<th class="t">scenario</th><th class="t">client</th><th class="t">payload</th>'
             '<th class="t">profile</th><th class="t">broker</th>'
             "<th>p50 ms</th><th>baseline p50</th><th>change p50</th>"
             "<th>p99 ms</th><th>baseline p99</th><th>change p99</th><th>runs in baseline</th>"
             "<th>msgs/s</th><th>lost</th></tr></thead><tbody>")
    tool_note = False
    for idx, r in df.iterrows():
        sk = "|".join([r["_scenario"], r["_client"], r["_payload"], r["_profile"]])
        ek = f"{sk}|{bool(r['_emu'])}"
        p50 = _num(_col(df, "e2e_latency_ms_p50").get(idx))
        p99 = _num(_col(df, "e2e_latency_ms_p99").get(idx))
        mark50 = mark99 = ""
        if p50 is None and _num(_col(df, "tool_p50_ms").get(idx)) is not None:
            p50, mark50, tool_note = _num(_col(df, "tool_p50_ms").get(idx)), "†", True
        if p99 is None and _num(_col(df, "tool_p99_ms").get(idx)) is not None:
            p99, mark99, tool_note = _num(_col(df, "tool_p99_ms").get(idx)), "†", True
        b50 = base.get((ek, "e2e_latency_ms_p50"), {})
        b99 = base.get((ek, "e2e_latency_ms_p99"), {})
        flavor = r.get("cluster_flavor", "")
        broker = _e("" if flavor is None or (isinstance(flavor, float) and math.isnan(flavor))
                    else flavor)
        if r["_emu"]:
            broker += " " + _emu_span()
        cls = ' class="drift"' if ek in flagged else ""

        def chg(rec: dict[str, Any]) -> str:
            c = _num(rec.get("change_pct"))
            klass = "" if c is None else (" up" if c > 0 else " down")
            return f'<td class="chg{klass}">{_e(fmt_pct(c))}</td>'

        h.append(
            f"<tr{cls}><td class=\"t\">{_e(r['_scenario'])}</td>"
            f"<td class=\"t\">{_e(r['_client'])}</td><td class=\"t\">{_e(r['_payload'])}</td>"
            f"<td class=\"t\">{_e(r['_profile'])}</td><td class=\"t\">{broker}</td>"
            f"<td>{_e(fmt_num(p50))}{mark50}</td><td>{_e(fmt_num(b50.get('baseline_value')))}</td>"
            f"{chg(b50)}"
            f"<td>{_e(fmt_num(p99))}{mark99}</td><td>{_e(fmt_num(b99.get('baseline_value')))}</td>"
            f"{chg(b99)}<td>{_e(b99.get('baseline_runs', b50.get('baseline_runs', 0)))}</td>"
            f"<td>{_e(fmt_num(_col(df, 'throughput_msgs_per_s').get(idx)))}</td>"
            f"<td>{_e(fmt_num(_col(df, 'lost_count').get(idx)))}</td></tr>"
        )
    h.append("</tbody></table></div>")
    if tool_note:
        h.append('<p class="note">† value printed by Kafka\'s EndToEndLatency tool '
                 "(whole, truncated ms), not measured by the harness.</p>")
    h.append("</section>")
    return "".join(h)


def _x_labels(order: list[str], history: pd.DataFrame) -> tuple[list[str], list[str]]:
    dates: dict[str, str] = {}
    if "run_date" in history.columns:
        for rid, d in zip(history["run_id"].astype(str), history["run_date"], strict=False):
            if d is not None and not (isinstance(d, float) and math.isnan(d)):
                dates.setdefault(rid, str(d)[:10])
    labels = []
    for rid in order:
        m = re.match(r"^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})", rid)
        if m:
            labels.append(f"{m[2]}-{m[3]} {m[4]}:{m[5]}")
        else:
            labels.append(rid if len(rid) <= 14 else rid[:13] + "…")
        if rid in dates and not m:
            labels[-1] = f"{dates[rid][5:]} {labels[-1]}"
    return labels, list(order)


def _section_time_series(v: RunView) -> str:
    h = ['<section id="trends"><h2>2. Trends across runs</h2>']
    hist = v.history
    if hist.empty:
        h.append('<p class="empty">No aggregates yet: nothing to plot.</p></section>')
        return "".join(h)
    df = hist.copy()
    df["_rid"] = df["run_id"].astype(str)
    df["_label"] = [
        _series_label(a, b, c, d) for a, b, c, d in zip(
            _scol(df, "scenario"), _scol(df, "client"), _scol(df, "payload"),
            _scol(df, "profile"), strict=True)
    ]
    df["_emu"] = _emu_col(df)
    df["_rank"] = _scol(df, "scenario").map(_scenario_rank)
    if v.emulator or df["_emu"].any():
        h.append(f'<p class="note">Dashed lines: {_emu_span()} (emulator broker).</p>')
    h.append('<div class="charts">')
    any_chart = False
    for metric, title, unit in TIME_SERIES_METRICS:
        vals = _col(df, metric)
        sub = df.assign(_v=vals).dropna(subset=["_v"])
        if sub.empty:
            continue
        runs = [r for r in v.order if r in set(sub["_rid"])]
        pos = {r: i for i, r in enumerate(runs)}
        labels, titles = _x_labels(runs, df)
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
        emu = any(s.emulator for s in series)
        banner = f'<div class="emu-banner">{_e(EMULATOR_LABEL)}</div>' if emu else ""
        h.append(f'<figure data-metric="{_e(metric)}"><figcaption>{_e(title)} ({_e(unit)})'
                 f"</figcaption>{banner}"
                 f"{svg_line_chart(f'{title} ({unit})', labels, series, unit, x_titles=titles)}"
                 "</figure>")
    h.append("</div>")
    if not any_chart:
        h.append('<p class="empty">None of the plotted metrics has values yet.</p>')
    h.append("</section>")
    return "".join(h)


def _section_comparison(v: RunView) -> str:
    h = ['<section id="comparison"><h2>3. HTTP vs Kafka clients vs Kafka\'s tool</h2>',
         '<p class="note">Median end-to-end latency (p50, ms) of this run by payload size; '
         "the Kafka tool's bar is its printed p50 (<code>tool_p50_ms</code>).</p>"]
    if v.rows.empty:
        h.append('<p class="empty">No aggregates for this run.</p></section>')
        return "".join(h)
    df = v.rows.copy()
    df["_scenario"] = _scol(df, "scenario")
    df["_payload"] = _scol(df, "payload")
    df["_profile"] = _scol(df, "profile")
    df["_bytes"] = _col(df, "payload_bytes")
    df["_emu"] = _emu_col(df)
    df["_v"] = _col(df, "e2e_latency_ms_p50")
    tool = df["_scenario"] == "jvm-e2e"
    df.loc[tool, "_v"] = _col(df, "tool_p50_ms")[tool].where(
        _col(df, "tool_p50_ms")[tool].notna(), df.loc[tool, "_v"])
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
            key=lambda k: (_scenario_rank(k[0]), k[0], k[1]),
        )
        table_rows = []
        for sc, emu in present:
            # Emulator and Kafka measurements are never blended into one bar.
            part = sub[(sub["_scenario"] == sc) & (sub["_emu"] == emu)]
            med = part.groupby("_payload")["_v"].median()
            values = [float(med[p]) if p in med.index else None for p in payloads]
            color = BAR_COLORS.get(sc, PALETTE[len(bars) % len(PALETTE)])
            if emu:
                color = "#c9a227"
            bars.append(BarSeries(name=SCENARIO_LABELS.get(sc, sc), values=values,
                                  color=color, emulator=emu))
            cells = "".join(f"<td>{_e(fmt_num(x))}</td>" for x in values)
            label = _e(SCENARIO_LABELS.get(sc, sc)) + (f" {_emu_span()}" if emu else "")
            table_rows.append(f'<tr><td class="t">{label}</td>{cells}</tr>')
        emu_any = any(b.emulator for b in bars)
        title = f"p50 latency by payload, profile {profile or '—'}"
        banner = f'<div class="emu-banner">{_e(EMULATOR_LABEL)}</div>' if emu_any else ""
        h.append(f'<figure data-profile="{_e(profile)}"><figcaption>{_e(title)}</figcaption>'
                 f"{banner}{svg_bar_chart(title, payloads, bars, 'ms')}</figure>")
        cap = f"p50 ms, profile {_e(profile or '—')}" + (f" {_emu_span()}" if emu_any else "")
        head = "".join(f"<th>{_e(p)}</th>" for p in payloads)
        h.append(f'<table class="comparison"><caption>{cap}</caption><thead><tr>'
                 f'<th class="t">scenario</th>{head}</tr></thead><tbody>'
                 f"{''.join(table_rows)}</tbody></table>")
    h.append("</section>")
    return "".join(h)


def _section_first_message(v: RunView) -> str:
    h = ['<section id="first-message"><h2>4. First-message delay</h2>',
         '<p class="note">Consumer creation to first record in hand, with a consumer group '
         "(<code>subscribe</code>) and with manual assignment (<code>assign</code>); median "
         "over this run's payloads and profiles, ms.</p>"]
    df = v.rows.copy()
    if df.empty:
        h.append('<p class="empty">No aggregates for this run.</p></section>')
        return "".join(h)
    df["_who"] = [
        _series_label(a, b, "", "") for a, b in zip(_scol(df, "scenario"), _scol(df, "client"),
                                                    strict=True)
    ]
    df["_rank"] = _scol(df, "scenario").map(_scenario_rank)
    df["_sub"] = _col(df, "first_message_subscribe_ms")
    df["_asg"] = _col(df, "first_message_assign_ms")
    df["_emu"] = _emu_col(df)
    df = df[df["_sub"].notna() | df["_asg"].notna()]
    if df.empty:
        h.append('<p class="empty">No first-message measurements in this run.</p></section>')
        return "".join(h)
    # Emulator and Kafka measurements of a client are separate groups, never blended.
    g = (df.groupby(["_who", "_emu"]).agg(rank=("_rank", "min"), sub=("_sub", "median"),
                                          asg=("_asg", "median"))
         .reset_index().sort_values(["rank", "_who", "_emu"]).set_index("_who"))
    g["emu"] = g["_emu"].astype(bool)
    groups = [str(x) + (" [EMU]" if e else "") for x, e in zip(g.index, g["emu"], strict=True)]
    emu = bool(g["emu"].any())
    flags = [bool(e) for e in g["emu"]]
    bars = [
        BarSeries("subscribe (group)", [_num(x) for x in g["sub"]], BAR_COLORS["subscribe"],
                  emulator_values=flags),
        BarSeries("assign (manual)", [_num(x) for x in g["asg"]], BAR_COLORS["assign"],
                  emulator_values=flags),
    ]
    banner = f'<div class="emu-banner">{_e(EMULATOR_LABEL)}</div>' if emu else ""
    title = "First-message delay by client"
    h.append(f"<figure><figcaption>{_e(title)}</figcaption>{banner}"
             f"{svg_bar_chart(title, groups, bars, 'ms')}</figure>")
    cap = "first-message delay, ms" + (f" {_emu_span()}" if emu else "")
    rows = "".join(
        f'<tr><td class="t">{_e(who)}{" " + _emu_span() if e else ""}</td>'
        f"<td>{_e(fmt_num(s))}</td><td>{_e(fmt_num(a))}</td></tr>"
        for who, s, a, e in zip(g.index, g["sub"], g["asg"], g["emu"], strict=True)
    )
    h.append(f'<table class="first-message"><caption>{cap}</caption><thead><tr>'
             '<th class="t">client</th><th>subscribe ms</th><th>assign ms</th></tr></thead>'
             f"<tbody>{rows}</tbody></table></section>")
    return "".join(h)


def _section_checks(v: RunView, page_dir: Path) -> str:
    h = ['<section id="checks"><h2>5. Validation and drift</h2><h3>Validation</h3>']
    val = v.validation
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
                h.append(f'<tr><td class="t">{_e(f.get("suite"))}</td>'
                         f'<td class="t">{_e(f.get("expectation"))}</td>'
                         f'<td class="t">{_e(summary)}</td></tr>')
            h.append("</tbody></table>")
    if v.validation_html is not None:
        h.append(f'<p><a href="{_rel(v.validation_html, page_dir)}">Validation report '
                 "(HTML)</a></p>")
    h.append("<h3>Drift flags</h3>")
    recs = drift_mod.records_to_dicts(v.drift_records)
    if not v.drift_stored and recs:
        h.append('<p class="note">Computed when this report was built (no stored drift '
                 "records for this run).</p>")
    if not recs:
        h.append('<p class="empty">No drift records for this run.</p></section>')
        return "".join(h)
    counts: dict[str, int] = {}
    for r in recs:
        counts[str(r.get("verdict"))] = counts.get(str(r.get("verdict")), 0) + 1
    h.append('<p class="verdicts">' + ", ".join(
        f"{_e(k)}: {n}" for k, n in sorted(counts.items())) + "</p>")
    flags = [r for r in recs if r.get("is_drift")]
    if not flags:
        h.append('<p class="ok">No drift.</p></section>')
        return "".join(h)
    emu = any(r.get("broker_is_emulator") for r in flags)
    cap = f"{len(flags)} drift flag(s)" + (f" {_emu_span()}" if emu else "")
    h.append(f'<table class="drift-flags"><caption>{cap}</caption><thead><tr>'
             '<th class="t">series</th><th class="t">metric</th><th class="t">direction</th>'
             "<th>baseline</th><th>latest</th><th>change</th><th>robust z</th>"
             '<th>confidence</th><th class="t">broker</th></tr></thead><tbody>')
    for r in flags:
        who = str(r.get("series_key") or "").rsplit("|", 1)[0].replace("|", " ")
        chg = "from 0" if _num(r.get("change_pct")) is None else fmt_pct(r.get("change_pct"))
        z = "∞" if _num(r.get("robust_z")) is None else f"{_num(r.get('robust_z')):.1f}"
        broker = _emu_span() if r.get("broker_is_emulator") else "Kafka"
        conf = f"{_num(r.get('confidence')) or 0.0:.2f}"
        h.append(f'<tr class="drift"><td class="t">{_e(who)}</td>'
                 f'<td class="t">{_e(r.get("metric"))}</td>'
                 f'<td class="t">{_e(r.get("direction"))}</td>'
                 f"<td>{_e(fmt_num(r.get('baseline_value')))}</td>"
                 f"<td>{_e(fmt_num(r.get('latest_value')))}</td><td>{_e(chg)}</td>"
                 f"<td>{_e(z)}</td><td>{_e(conf)}</td>"
                 f'<td class="t">{broker}</td></tr>')
    h.append("</tbody></table></section>")
    return "".join(h)


def _run_sections(v: RunView, page_dir: Path) -> str:
    parts = []
    cluster = (v.manifest or {}).get("cluster") or {}
    if _as_bool(cluster.get("is_emulator")):
        parts.append(f'<div class="emu-banner">{_e(EMULATOR_LABEL)}: this run\'s broker is '
                     "an emulator; its latencies say nothing about Kafka.</div>")
    elif v.emulator:
        n = int(_emu_col(v.rows).sum()) if not v.rows.empty else 0
        parts.append(f'<div class="emu-banner">{_e(EMULATOR_LABEL)}: {n} cell(s) of this run '
                     "ran on an emulator broker (marked wherever they appear); their latencies "
                     "say nothing about Kafka.</div>")
    parts += [_section_latest(v), _section_time_series(v), _section_comparison(v),
              _section_first_message(v), _section_checks(v, page_dir)]
    return "".join(parts)


def _run_meta(v: RunView) -> str:
    m = v.manifest or {}
    cl = m.get("cluster") or {}
    bits = [f"run {_e(v.run_id)}"]
    if m.get("status"):
        bits.append(f"status {_e(m['status'])}")
    if m.get("started_at"):
        bits.append(f"started {_e(m['started_at'])}")
    if cl.get("flavor"):
        bits.append(f"cluster {_e(cl.get('flavor'))} {_e(cl.get('version') or '')}".strip())
    if v.emulator:
        bits.append(_emu_span())
    return " · ".join(bits)


def _page(title: str, header_meta: str, nav: str, body: str) -> str:
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{_e(title)}</title><style>{_asset('report.css')}</style></head><body>"
        f"<header><h1>{_e(title)}</h1><div class=\"meta\">{header_meta}</div>"
        f"<nav class=\"meta\">{nav}</nav></header><main>{body}</main>"
        f"<footer class=\"note\" style=\"padding:0 24px 16px\">Generated {generated} by "
        "kafkalab. Self-contained: no external resources.</footer>"
        f"<script>{_asset('report.js')}</script></body></html>\n"
    )


def _runs_table(
    order: list[str], history: pd.DataFrame, manifests: dict[str, dict[str, Any]],
    data_dir: Path, out_dir: Path,
) -> str:
    if not order:
        return '<p class="empty">No runs yet: no aggregates or run manifests found.</p>'
    h = ['<table class="runs"><caption>Runs, newest first</caption><thead><tr>'
         '<th class="t">run</th><th class="t">started</th><th class="t">status</th>'
         '<th class="t">cluster</th><th>cells</th><th>drift flags</th>'
         '<th class="t">validation</th></tr></thead><tbody>']
    for rid in reversed(order):
        m = manifests.get(rid) or {}
        cl = m.get("cluster") or {}
        rows = (history[history["run_id"].astype(str) == rid]
                if not history.empty and "run_id" in history.columns else pd.DataFrame())
        emu = bool(_emu_col(rows).any()) if not rows.empty else False
        emu = emu or _as_bool(cl.get("is_emulator"))
        flavors = {str(cl["flavor"])} if cl.get("flavor") else set()
        if not rows.empty:
            flavors |= set(_scol(rows, "cluster_flavor")) - {"", "http"}
        flavor = ", ".join(sorted(flavors))
        try:
            dr = drift_mod.read_drift(data_dir, rid)
        except Exception:
            dr = None
        nflags = "—" if dr is None else str(int(dr["is_drift"].fillna(False).astype(bool).sum()))
        val = _load_validation(data_dir, rid)
        vtxt = ("—" if val is None else '<span class="ok">pass</span>' if val.get("success")
                is True else '<span class="fail">fail</span>' if val.get("success") is False
                else "?")
        href = _rel(out_dir / _safe_dir(rid) / "index.html", out_dir)
        h.append(f'<tr><td class="t"><a href="{href}">{_e(rid)}</a></td>'
                 f'<td class="t">{_e(m.get("started_at") or "")}</td>'
                 f'<td class="t">{_e(m.get("status") or "")}</td>'
                 f'<td class="t">{_e(flavor)}{" " + _emu_span() if emu else ""}</td>'
                 f"<td>{len(rows)}</td><td>{_e(nflags)}</td><td class=\"t\">{vtxt}</td></tr>")
    h.append("</tbody></table>")
    return "".join(h)


# --------------------------------------------------------------------------- entry point


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
    root = Path(data_dir)
    out = Path(out_dir) if out_dir is not None else root / "reports"
    out.mkdir(parents=True, exist_ok=True)
    config = drift_mod.load_drift_config_or_default(config_path)
    try:
        history = drift_mod.load_history(root)
    except Exception as exc:  # unreadable aggregates: report what can be reported
        log.warning("aggregates under %s unreadable (%s); report without them", root, exc)
        history = pd.DataFrame()
    manifests = _load_manifests(root)
    order = _ordered_runs(history, manifests)
    targets = [run_id] if run_id is not None else list(order)
    written: Path | None = None
    for rid in targets:
        view = _run_view(root, rid, history, order, manifests, config)
        page_dir = out / _safe_dir(rid)
        body = _run_sections(view, page_dir)
        nav = f'<a href="{_rel(out / "index.html", page_dir)}">← all runs</a>'
        page = _page(f"Kafka Latency Lab — run {rid}", _run_meta(view), nav, body)
        written = drift_mod.atomic_write_bytes(page_dir / "index.html", page.encode("utf-8"))

    # Overview: all runs, then the newest run mirrored.
    parts = ["<section id=\"runs\"><h2>Runs</h2>",
             _runs_table(order, history, manifests, root, out), "</section>"]
    meta = f"{len(order)} run(s) in {_e(root.name or str(root))}"
    if order:
        latest = order[-1]
        view = _run_view(root, latest, history, order, manifests, config)
        href = _rel(out / _safe_dir(latest) / "index.html", out)
        parts.append(f'<h2 class="mirror">Newest run: <a href="{href}">{_e(latest)}</a></h2>')
        parts.append(_run_sections(view, out))
    else:
        parts.append('<p class="empty">No data yet. Run <code>kafkalab run</code>, then the '
                     "aggregation job, then rebuild this report.</p>")
    index = drift_mod.atomic_write_bytes(
        out / "index.html",
        _page("Kafka Latency Lab — trend report", meta, "", "".join(parts)).encode("utf-8"),
    )
    return written if run_id is not None and written is not None else index
