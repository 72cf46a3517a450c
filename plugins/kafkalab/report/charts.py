"""Inline SVG charts for the report: a line chart over labels, a line chart over a numeric
x axis (with shaded spans and marked x values), and a grouped bar chart.

Pure functions of their arguments (no pandas, no files): values in, SVG text out. A series
measured on an emulator broker is drawn dashed, named ``<name> [EMULATOR — not Kafka]`` in
the legend, and puts the emulator badge in the chart's corner.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from kafkalab.cluster.descriptor import EMULATOR_LABEL
from kafkalab.report.format import esc, fmt_num

PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
    "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#393b79", "#e6a100",
)
"""Line colours, in series order (repeating after twelve)."""

_PLOT_H_PX = 250
_LINE_X_AXIS_PX = 70  # room under the plot for rotated run labels
_BAR_X_AXIS_PX = 50  # room under the plot for group labels
_LEGEND_ROW_PX = 18
_LEGEND_MAX_CHARS = 64
_NOTE_PX = 18  # room under the title for the note line


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] with about ``n`` intervals (at least two ticks)."""
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
    while len(ticks) < 50:  # up to the first tick at or above ``hi`` (at least two: lo < hi)
        t = round(start + len(ticks) * step, 12)
        ticks.append(t)
        if t >= hi - step * 1e-9:
            break
    return ticks


def tick_label(value: float) -> str:
    """A short axis label: ``12``, ``2.5``, ``40k``, ``1.2M``."""
    a = abs(value)
    if a >= 1e6:
        return f"{value / 1e6:g}M"
    if a >= 1e4:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def emulator_name(name: str, emulator: bool) -> str:
    """A series name as the legend shows it: with ``[EMULATOR — not Kafka]`` when it applies."""
    return name + (f" [{EMULATOR_LABEL}]" if emulator else "")


@dataclass
class LineSeries:
    """One line of a line chart: values aligned with the chart's x labels (None = gap);
    ``dashed`` draws it dashed (as an emulator series is)."""

    name: str
    values: list[float | None]
    emulator: bool = False
    dashed: bool = False
    color: str | None = None
    """Its colour (default: the palette's, in series order)."""
    flagged: list[bool] | None = None
    """Aligned with ``values``: True where the drift check flagged that run (a ringed
    ``drift-marker`` on the point)."""
    band: BaselineBand | None = None
    """The baseline band the drift check judged this series' newest point against."""


@dataclass
class BaselineBand:
    """The band a drift check called normal: from x index ``i0`` to ``i1`` (the baseline's
    runs and the judged one), values ``lo`` to ``hi``; ``label`` is its hover text."""

    i0: int
    i1: int
    lo: float
    hi: float
    label: str


@dataclass
class XYSeries:
    """One line of an x-y chart: ``(x, y)`` points in drawing order (y None = gap)."""

    name: str
    points: list[tuple[float, float | None]]
    emulator: bool = False
    dashed: bool = False
    color: str | None = None
    """Its colour (default: the palette's, in series order)."""


@dataclass
class XSpan:
    """A shaded stretch of the x axis (``x0`` to ``x1``) with a label, e.g. a pause."""

    x0: float
    x1: float
    label: str


@dataclass
class XMark:
    """A vertical line at ``x`` with a label, e.g. the knee of a latency curve."""

    x: float
    label: str
    color: str = "#b3261e"
    row: int = 0
    """The label's line from the top of the plot (marks close together each take a row)."""
    kind: str = ""
    """Written as the mark's ``data-mark`` (what it marks: ``fault``, ``leader`` …)."""


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


class _LegendItem(NamedTuple):
    key: str  # the series' ``data-series`` (the hover script pairs legend and series by it)
    label: str
    dashed: bool
    color: str


@dataclass
class _Frame:
    """The geometry of one chart (pixels) and the SVG parts written so far."""

    width: int
    height: int
    legend: list[_LegendItem]
    legend_h: int
    left: int = 64
    right: int = 16
    top: int = 34
    bottom: int = 70
    lo: float = 0.0
    hi: float = 1.0
    parts: list[str] = field(default_factory=list)

    @property
    def plot_w(self) -> int:
        return self.width - self.left - self.right

    @property
    def plot_h(self) -> int:
        return self.height - self.top - self.bottom

    @property
    def base_y(self) -> int:
        """The y of the x axis."""
        return self.top + self.plot_h

    def py(self, value: float) -> float:
        """The y pixel of ``value`` on the y axis."""
        return self.top + self.plot_h * (1 - (value - self.lo) / (self.hi - self.lo))


def _legend_col_w(items: list[_LegendItem], width: int) -> int:
    """Legend column width (px) fitting the longest label (about 6.3 px per character)."""
    longest = max((min(len(i.label), _LEGEND_MAX_CHARS) for i in items), default=10)
    return int(min(max(width, 120), 40 + 6.3 * longest))


def _legend_height(items: list[_LegendItem], width: int) -> int:
    per_row = max(1, width // _legend_col_w(items, width))
    return math.ceil(len(items) / per_row) * _LEGEND_ROW_PX if items else 0


def _legend(items: list[_LegendItem], x0: int, y0: int, width: int) -> str:
    """Legend rows, as many items per row as fit in ``width``."""
    col_w = _legend_col_w(items, width)
    per_row = max(1, width // col_w)
    out = []
    for i, (key, label, dashed, color) in enumerate(items):
        x = x0 + (i % per_row) * col_w
        y = y0 + (i // per_row) * _LEGEND_ROW_PX
        short = label if len(label) <= _LEGEND_MAX_CHARS else label[: _LEGEND_MAX_CHARS - 1] + "…"
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        out.append(
            f'<g class="legend-item" data-series="{esc(key)}"><title>{esc(label)}</title>'
            f'<line x1="{x}" y1="{y}" x2="{x + 22}" y2="{y}" stroke="{color}" '
            f'stroke-width="3"{dash}/><text x="{x + 28}" y="{y + 4}">{esc(short)}</text></g>'
        )
    return "".join(out)


def _emu_badge(width: int) -> str:
    w = 172
    x = width - w - 8
    return (
        f'<g class="emu-badge"><rect class="emu-svg" x="{x}" y="6" width="{w}" height="20" '
        f'rx="3"/><text class="emu-svg" x="{x + w / 2:.1f}" y="20" text-anchor="middle">'
        f"{esc(EMULATOR_LABEL)}</text></g>"
    )


def _open(title: str, width: int, x_axis_px: int, legend: list[_LegendItem],
          emulator: bool, note: str = "") -> _Frame:
    """Start a chart: the ``<svg>`` element, its title, the note line under it (what the
    figures measure) and the emulator badge if any."""
    legend_h = _legend_height(legend, width - _Frame.left - _Frame.right)
    note_px = _NOTE_PX if note else 0
    fr = _Frame(width=width, height=_PLOT_H_PX + x_axis_px + legend_h + note_px, legend=legend,
                legend_h=legend_h, top=_Frame.top + note_px, bottom=x_axis_px + legend_h + 8)
    fr.parts.append(
        f'<svg class="chart" role="img" aria-label="{esc(title)}" width="{fr.width}" '
        f'height="{fr.height}" viewBox="0 0 {fr.width} {fr.height}">'
        f"<title>{esc(title)}</title>"
    )
    fr.parts.append(f'<text class="ttl" x="{fr.left}" y="20">{esc(title)}</text>')
    if note:
        fr.parts.append(f'<text class="note" x="{fr.left}" y="38">{esc(note)}</text>')
    if emulator:
        fr.parts.append(_emu_badge(fr.width))
    return fr


def _no_data(fr: _Frame) -> str:
    fr.parts.append(
        f'<text x="{fr.width / 2:.0f}" y="{fr.height / 2:.0f}" text-anchor="middle">'
        "no data</text></svg>"
    )
    return "".join(fr.parts)


def _y_axis(fr: _Frame, values: list[float], y_label: str) -> None:
    """Draw the y axis (from 0 or below) with grid lines, and set the frame's scale."""
    ticks = nice_ticks(min(0.0, min(values)), max(values))
    fr.lo, fr.hi = ticks[0], ticks[-1]
    for t in ticks:
        y = fr.py(t)
        fr.parts.append(
            f'<line class="grid" x1="{fr.left}" y1="{y:.1f}" x2="{fr.left + fr.plot_w}" '
            f'y2="{y:.1f}"/><text x="{fr.left - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{esc(tick_label(t))}</text>"
        )
    fr.parts.append(
        f'<line class="axis" x1="{fr.left}" y1="{fr.top}" x2="{fr.left}" '
        f'y2="{fr.base_y}"/>'
        f'<line class="axis" x1="{fr.left}" y1="{fr.base_y}" '
        f'x2="{fr.left + fr.plot_w}" y2="{fr.base_y}"/>'
        f'<text x="14" y="{fr.top + fr.plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {fr.top + fr.plot_h / 2:.1f})">{esc(y_label)}</text>'
    )


def _close(fr: _Frame) -> str:
    """Finish a chart: the legend under the plot, and ``</svg>``."""
    fr.parts.append(_legend(fr.legend, fr.left, fr.height - fr.legend_h - 4, fr.plot_w))
    fr.parts.append("</svg>")
    return "".join(fr.parts)


def _line_legend(series: Sequence[LineSeries | XYSeries]) -> list[_LegendItem]:
    """The legend of a chart of lines: a series' name (with the emulator label), dashed when
    it is, its colour (the palette's, in series order, unless it has its own)."""
    return [_LegendItem(f"s{i}", emulator_name(s.name, s.emulator), s.emulator or s.dashed,
                        s.color or PALETTE[i % len(PALETTE)]) for i, s in enumerate(series)]


def _marks(fr: _Frame, marks: list[XMark], px: Callable[[float], float]) -> None:
    """Draw labelled vertical lines at ``px(mark.x)``; a label in the right part of the plot
    ends at its line, any other starts there."""
    for m in marks:
        x = px(m.x)
        ty = fr.top + 12 + 13 * m.row
        kind = f' data-mark="{esc(m.kind)}"' if m.kind else ""
        anchor = ' text-anchor="end"' if x > fr.left + fr.plot_w * 0.6 else ""
        tx = x - 4 if anchor else x + 4
        fr.parts.append(
            f'<g class="mark"{kind}><line x1="{x:.1f}" y1="{fr.top}" x2="{x:.1f}" '
            f'y2="{fr.base_y}" stroke="{m.color}" stroke-width="1.5" stroke-dasharray="4 3"/>'
            f'<text x="{tx:.1f}" y="{ty}"{anchor} fill="{m.color}">{esc(m.label)}</text>'
            f"<title>{esc(m.label)}</title></g>")


def _series_group(item: _LegendItem, points: list[tuple[float, float] | None],
                  dots: list[str]) -> str:
    """One series: its line through the pixel ``points`` (None breaks it; a lone point has
    no line, only its dot), dashed as its legend item, then its ``dots``."""
    dash = ' stroke-dasharray="5 3"' if item.dashed else ""
    segs: list[list[tuple[float, float]]] = [[]]
    for pt in points:
        if pt is None:
            if segs[-1]:
                segs.append([])
            continue
        segs[-1].append(pt)
    paths = "".join(
        f'<polyline fill="none" stroke="{item.color}" stroke-width="2"{dash} points="'
        + " ".join(f"{x:.1f},{y:.1f}" for x, y in seg) + '"/>'
        for seg in segs if len(seg) > 1)
    return f'<g class="series" data-series="{item.key}">{paths}{"".join(dots)}</g>'


def _bands(fr: _Frame, series: list[LineSeries], legend: list[_LegendItem],
           px: Callable[[float], float]) -> None:
    """Shade each series' baseline band behind the lines (fainter when more than three
    overlap); hovering a legend item dims the others (class ``series``)."""
    band_opacity = 0.12 if sum(s.band is not None for s in series) <= 3 else 0.06
    for s, item in zip(series, legend, strict=True):
        b = s.band
        if b is None:
            continue
        x0, x1 = px(b.i0 - 0.4), px(b.i1 + 0.4)
        y0, y1 = fr.py(max(b.hi, fr.lo)), fr.py(max(b.lo, fr.lo))
        fr.parts.append(
            f'<rect class="series baseline-band" data-series="{item.key}" x="{x0:.1f}" '
            f'y="{y0:.1f}" width="{max(x1 - x0, 1):.1f}" height="{max(y1 - y0, 1):.1f}" '
            f'fill="{item.color}" fill-opacity="{band_opacity}" stroke="{item.color}" '
            f'stroke-opacity="0.5" stroke-dasharray="2 2"><title>{esc(s.name)}: '
            f"{esc(b.label)}</title></rect>")


def _x_labels(fr: _Frame, x_labels: list[str], tips: list[str],
              px: Callable[[float], float]) -> None:
    """The x axis' labels, rotated, at most about twelve (and always the last), each with
    its hover text."""
    n = len(x_labels)
    step = max(1, math.ceil(n / 12))
    for i, lab in enumerate(x_labels):
        if i % step and i != n - 1:
            continue
        x = px(i)
        fr.parts.append(
            f'<line class="axis" x1="{x:.1f}" y1="{fr.base_y}" x2="{x:.1f}" '
            f'y2="{fr.base_y + 4}"/><text x="{x:.1f}" y="{fr.base_y + 14}" text-anchor="end" '
            f'transform="rotate(-30 {x:.1f} {fr.base_y + 14})"><title>{esc(tips[i])}</title>'
            f"{esc(lab)}</text>"
        )


def svg_line_chart(
    title: str,
    x_labels: list[str],
    series: list[LineSeries],
    y_label: str,
    width: int = 620,
    x_titles: list[str] | None = None,
    note: str = "",
    marks: list[XMark] | None = None,
    x_title: str = "",
) -> str:
    """An inline SVG line chart: one line per series, y from 0, gaps for missing values.

    ``x_titles`` are the hover texts of the x labels (default: the labels themselves);
    ``note``: a line drawn under the title (what the figures measure); ``marks``: labelled
    vertical lines whose ``x`` is a (fractional) label index, e.g. a change point between
    two runs at ``i - 0.5``; ``x_title``: the x axis' name. A series' ``band`` is shaded
    behind the lines and its ``flagged`` points are ringed.
    """
    legend = _line_legend(series)
    fr = _open(title, width, _LINE_X_AXIS_PX, legend, any(s.emulator for s in series), note)
    vals = [v for s in series for v in s.values if v is not None]
    if not vals or not x_labels:
        return _no_data(fr)
    _y_axis(fr, vals + [b for s in series if s.band for b in (s.band.lo, s.band.hi)],
            y_label)
    tips = x_titles or x_labels
    n = len(x_labels)

    def px(i: float) -> float:
        return fr.left + (fr.plot_w * (i + 0.5) / n)

    _bands(fr, series, legend, px)
    if x_title:
        fr.parts.append(f'<text class="x-title" x="{fr.left + fr.plot_w:.1f}" '
                        f'y="{fr.base_y - 4}" text-anchor="end">{esc(x_title)}</text>')
    _marks(fr, marks or [], px)
    _x_labels(fr, x_labels, tips, px)
    for s, item in zip(series, legend, strict=True):
        points: list[tuple[float, float] | None] = []
        dots = []
        for i, v in enumerate(s.values):
            if v is None:
                points.append(None)
                continue
            points.append((px(i), fr.py(v)))
            dots.append(
                f'<circle cx="{px(i):.1f}" cy="{fr.py(v):.1f}" r="3" fill="{item.color}">'
                f"<title>{esc(s.name)} | {esc(tips[i])}: {esc(fmt_num(v))} {esc(y_label)}"
                "</title></circle>"
            )
            if s.flagged is not None and i < len(s.flagged) and s.flagged[i]:
                dots.append(
                    f'<circle class="drift-marker" data-run="{esc(tips[i])}" cx="{px(i):.1f}" '
                    f'cy="{fr.py(v):.1f}" r="7" fill="none" stroke="#b3261e" '
                    f'stroke-width="2.5"><title>drift flagged: {esc(s.name)} | {esc(tips[i])}'
                    f": {esc(fmt_num(v))} {esc(y_label)}</title></circle>")
        fr.parts.append(_series_group(item, points, dots))
    return _close(fr)


def _x_scale(xs: list[float], spans: list[XSpan], marks: list[XMark],
             x_ticks: list[tuple[float, str]] | None) -> tuple[float, float, dict[float, str]]:
    """The x axis of an x-y chart: (lowest x, highest x, tick value -> label). Round ticks
    from 0 (or below) up to cover the points, spans and marks; or the given ``x_ticks``
    (from 0 or below, with room after the last tick's label)."""
    xticks = nice_ticks(min(0.0, min(xs)), max([*xs, *(sp.x1 for sp in spans),
                                               *(m.x for m in marks)]))
    if not x_ticks:
        return xticks[0], xticks[-1], {t: tick_label(t) for t in xticks}
    x_lo = min(0.0, min(xs), *(t for t, _ in x_ticks))
    x_hi = max(*xs, *(t for t, _ in x_ticks))
    x_hi += 0.05 * (x_hi - x_lo)  # room for the last tick's label
    return x_lo, x_hi, dict(x_ticks)


def svg_xy_chart(
    title: str,
    series: list[XYSeries],
    x_label: str,
    y_label: str,
    width: int = 620,
    spans: list[XSpan] | None = None,
    marks: list[XMark] | None = None,
    note: str = "",
    x_ticks: list[tuple[float, str]] | None = None,
) -> str:
    """An inline SVG line chart over a numeric x axis (both axes from 0): one line per
    series, gaps where y is None, ``spans`` shaded behind the lines (a pause window),
    ``marks`` as labelled vertical lines (a knee); ``note``: a line under the title;
    ``x_ticks``: the x axis' ticks as (value, label) instead of round numbers (e.g.
    percentiles on a "nines" axis)."""
    legend = _line_legend(series)
    fr = _open(title, width, _BAR_X_AXIS_PX, legend, any(s.emulator for s in series), note)
    ys = [y for s in series for _, y in s.points if y is not None]
    xs = [x for s in series for x, y in s.points if y is not None]
    spans, marks = spans or [], marks or []
    if not ys:
        return _no_data(fr)
    _y_axis(fr, ys, y_label)
    x_lo, x_hi, tick_labels = _x_scale(xs, spans, marks, x_ticks)

    def px(x: float) -> float:
        return fr.left + fr.plot_w * (x - x_lo) / (x_hi - x_lo)

    for sp in spans:
        a, b = px(max(sp.x0, x_lo)), px(min(sp.x1, x_hi))
        fr.parts.append(
            f'<g class="span"><rect x="{a:.1f}" y="{fr.top}" width="{max(b - a, 1):.1f}" '
            f'height="{fr.plot_h}" fill="#f2c14e" fill-opacity="0.25"><title>{esc(sp.label)}'
            f'</title></rect><text x="{a + 3:.1f}" y="{fr.top + 12}">{esc(sp.label)}</text></g>')
    for t, label in tick_labels.items():
        x = px(t)
        fr.parts.append(
            f'<line class="axis" x1="{x:.1f}" y1="{fr.base_y}" x2="{x:.1f}" '
            f'y2="{fr.base_y + 4}"/><text x="{x:.1f}" y="{fr.base_y + 16}" '
            f'text-anchor="middle">{esc(label)}</text>')
    fr.parts.append(f'<text x="{fr.left + fr.plot_w / 2:.1f}" y="{fr.base_y + 32}" '
                    f'text-anchor="middle">{esc(x_label)}</text>')
    _marks(fr, marks, px)
    for s, item in zip(series, legend, strict=True):
        points: list[tuple[float, float] | None] = []
        dots = []
        for x, y in s.points:
            if y is None:
                points.append(None)
                continue
            points.append((px(x), fr.py(y)))
            if len(s.points) <= 60:  # a dot per point only where they can be told apart
                dots.append(
                    f'<circle cx="{px(x):.1f}" cy="{fr.py(y):.1f}" r="3" fill="{item.color}">'
                    f"<title>{esc(s.name)} | {esc(x_label)} {esc(fmt_num(x))}: "
                    f"{esc(fmt_num(y))} {esc(y_label)}</title></circle>")
        fr.parts.append(_series_group(item, points, dots))
    return _close(fr)


def svg_bar_chart(
    title: str,
    groups: list[str],
    bars: list[BarSeries],
    y_label: str,
    width: int = 620,
    note: str = "",
) -> str:
    """An inline SVG grouped bar chart: one group per label, one bar per series.

    Emulator bars get a dashed outline and the label in their hover text; ``note``: a line
    drawn under the title (what the figures measure).
    """
    legend = [_LegendItem(f"b{i}", emulator_name(b.name, b.emulator), b.emulator, b.color)
              for i, b in enumerate(bars)]
    emulator = any(b.is_emulator(i) for b in bars for i in range(len(b.values)))
    fr = _open(title, width, _BAR_X_AXIS_PX, legend, emulator, note)
    vals = [v for b in bars for v in b.values if v is not None]
    if not vals or not groups:
        return _no_data(fr)
    _y_axis(fr, vals, y_label)
    g_w = fr.plot_w / len(groups)
    bar_w = g_w * 0.8 / max(1, len(bars))
    for gi, g in enumerate(groups):
        cx = fr.left + g_w * (gi + 0.5)
        fr.parts.append(
            f'<text x="{cx:.1f}" y="{fr.base_y + 16}" text-anchor="middle">{esc(g)}</text>'
        )
    for bi, (b, item) in enumerate(zip(bars, legend, strict=True)):
        rects = []
        for gi, v in enumerate(b.values):
            if v is None:
                continue
            x = fr.left + g_w * gi + g_w * 0.1 + bar_w * bi
            y0, y1 = fr.py(max(v, 0.0)), fr.py(min(v, 0.0))
            emu_bar = b.is_emulator(gi)
            stroke = ' stroke="#7a4b00" stroke-width="1.5" stroke-dasharray="3 2"' if (
                emu_bar) else ""
            emu_tip = f" [{EMULATOR_LABEL}]" if emu_bar else ""
            rects.append(
                f'<rect x="{x:.1f}" y="{y0:.1f}" width="{max(bar_w - 2, 1):.1f}" '
                f'height="{max(y1 - y0, 0.5):.1f}" fill="{b.color}"{stroke}>'
                f"<title>{esc(b.name)} | {esc(groups[gi])}: {esc(fmt_num(v))} {esc(y_label)}"
                f"{esc(emu_tip)}</title></rect>"
            )
        fr.parts.append(f'<g class="series" data-series="{item.key}">{"".join(rects)}</g>')
    return _close(fr)


__all__ = [
    "PALETTE",
    "BarSeries",
    "BaselineBand",
    "LineSeries",
    "XMark",
    "XSpan",
    "XYSeries",
    "emulator_name",
    "nice_ticks",
    "svg_bar_chart",
    "svg_line_chart",
    "svg_xy_chart",
    "tick_label",
]
