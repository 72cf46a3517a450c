"""Unit tests for the report's pure pieces: SVG charts, text formats, scenario ordering."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from kafkalab.catalog import SCENARIOS
from kafkalab.cluster.descriptor import EMULATOR_LABEL
from kafkalab.report.charts import (
    BarSeries,
    LineSeries,
    nice_ticks,
    svg_bar_chart,
    svg_line_chart,
    tick_label,
)
from kafkalab.report.format import esc, fmt_num, fmt_pct, rel_href
from kafkalab.report.page_parts import scenario_rank
from kafkalab.report.trends import run_labels, series_label

SVG = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ET.Element:
    """The chart as XML (it must be well formed on its own)."""
    return ET.fromstring(svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1))


def _series(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == "series"]


def _legend(root: ET.Element) -> list[str]:
    return [t.text or "" for g in root.iter(f"{SVG}g") if g.get("class") == "legend-item"
            for t in g.iter(f"{SVG}title")]


def _y_ticks(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end"
            and t.get("transform") is None]


# --------------------------------------------------------------------------- ticks


@pytest.mark.parametrize(("lo", "hi"), [(0, 37), (0, 1), (0, 0.003), (-5, 12), (0, 2.5e6),
                                        (7, 7), (0, 0)])
def test_nice_ticks_cover_the_range_with_round_steps(lo: float, hi: float) -> None:
    t = nice_ticks(lo, hi)
    assert len(t) >= 2 and t[0] <= lo and t[-1] >= hi
    steps = {round(b - a, 9) for a, b in itertools.pairwise(t)}
    assert len(steps) == 1 and steps.pop() > 0
    assert len(t) <= 8


def test_nice_ticks_of_non_finite_input() -> None:
    assert nice_ticks(float("nan"), 3) == [0.0, 1.0]
    assert nice_ticks(0, float("inf")) == [0.0, 1.0]


def test_nice_ticks_values() -> None:
    assert nice_ticks(0, 37) == [0, 10, 20, 30, 40]
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0, 11) == [0, 2.5, 5, 7.5, 10, 12.5]  # the top tick is never below hi
    assert nice_ticks(0, 0.3) == [0, 0.1, 0.2, 0.3]


@pytest.mark.parametrize("top", [11.0, 45.0, 0.11, 1234.0])
def test_every_point_and_bar_stays_inside_the_plot(top: float) -> None:
    line = _parse(svg_line_chart("t", ["a", "b"], [LineSeries("x", [top / 3, top])], "ms"))
    bar = _parse(svg_bar_chart("t", ["a", "b"], [BarSeries("x", [top / 3, top], "#000")], "ms"))
    plot_top_px = 34
    assert min(float(c.get("cy") or 0) for c in line.iter(f"{SVG}circle")) >= plot_top_px
    assert min(float(r.get("y") or 0) for r in _series(bar)[0].iter(f"{SVG}rect")) >= plot_top_px


def test_tick_label() -> None:
    assert [tick_label(v) for v in (0, 2.5, 9999, 40_000, 1_200_000)] == [
        "0", "2.5", "9999", "40k", "1.2M"]


# --------------------------------------------------------------------------- line chart


def test_line_chart_draws_one_group_per_series() -> None:
    svg = svg_line_chart("p50 (ms)", ["a", "b", "c"],
                         [LineSeries("rest", [1.0, 2.0, 3.0]),
                          LineSeries("kafka-python", [2.0, None, 4.0])], "ms")
    root = _parse(svg)
    assert root.get("aria-label") == "p50 (ms)"
    groups = _series(root)
    assert [g.get("data-series") for g in groups] == ["s0", "s1"]
    # a full line is one polyline; a gap with single points either side draws no line
    assert len(list(groups[0].iter(f"{SVG}polyline"))) == 1
    assert len(list(groups[1].iter(f"{SVG}polyline"))) == 0
    assert [len(list(g.iter(f"{SVG}circle"))) for g in groups] == [3, 2]
    assert _legend(root) == ["rest", "kafka-python"]
    # the y axis starts at 0 and covers the largest value
    assert _y_ticks(root)[0] == "0" and float(_y_ticks(root)[-1]) >= 4
    assert EMULATOR_LABEL not in svg and "stroke-dasharray" not in svg


def test_line_chart_marks_emulator_series() -> None:
    svg = svg_line_chart("t", ["a", "b"], [LineSeries("rest", [1.0, 2.0]),
                                           LineSeries("external", [3.0, 4.0], emulator=True)], "ms")
    root = _parse(svg)
    assert any(g.get("class") == "emu-badge" for g in root.iter(f"{SVG}g"))
    assert _legend(root) == ["rest", f"external [{EMULATOR_LABEL}]"]
    dashed = [p for p in root.iter(f"{SVG}polyline") if p.get("stroke-dasharray")]
    assert len(dashed) == 1


def test_line_chart_hover_titles() -> None:
    svg = svg_line_chart("t", ["01-02"], [LineSeries("rest", [1234.5])], "ms",
                         x_titles=["20260102T000000Z-x"])
    assert "rest | 20260102T000000Z-x: 1,234 ms" in svg


@pytest.mark.parametrize("series", [[], [LineSeries("rest", [None, None])]])
def test_line_chart_without_values_says_no_data(series: list[LineSeries]) -> None:
    root = _parse(svg_line_chart("empty", ["a", "b"], series, "ms"))
    assert [t.text for t in root.iter(f"{SVG}text")][-1] == "no data"
    assert not _series(root)


def test_line_chart_escapes_names() -> None:
    svg = svg_line_chart('<b>&"', ["x"], [LineSeries("<i>", [1.0])], "ms")
    _parse(svg)  # still well formed
    assert "<b>" not in svg and "<i>" not in svg


def test_long_legend_wraps_and_grows_the_chart() -> None:
    one = _parse(svg_line_chart("t", ["a"], [LineSeries("x" * 70, [1.0])], "ms"))
    many = _parse(svg_line_chart("t", ["a"], [LineSeries(f"{i}" + "x" * 70, [1.0])
                                              for i in range(6)], "ms"))
    assert int(many.get("height") or 0) > int(one.get("height") or 0)
    assert any(t.endswith("…") for t in (x.text or "" for x in many.iter(f"{SVG}text")))


# --------------------------------------------------------------------------- bar chart


def test_bar_chart_draws_one_rect_per_value() -> None:
    svg = svg_bar_chart("by payload", ["1kb", "1mb"],
                        [BarSeries("rest", [1.0, 5.0], "#111111"),
                         BarSeries("jvm-e2e", [2.0, None], "#222222")], "ms")
    root = _parse(svg)
    groups = _series(root)
    assert [g.get("data-series") for g in groups] == ["b0", "b1"]
    assert [len(list(g.iter(f"{SVG}rect"))) for g in groups] == [2, 1]
    assert {r.get("fill") for r in groups[0].iter(f"{SVG}rect")} == {"#111111"}
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "middle"]
    assert "1kb" in labels and "1mb" in labels
    assert EMULATOR_LABEL not in svg


def test_bar_chart_marks_emulator_bars_one_by_one() -> None:
    svg = svg_bar_chart("t", ["kafka", "external"],
                        [BarSeries("subscribe", [3.0, 4.0], "#e45756",
                                   emulator_values=[False, True])], "ms")
    root = _parse(svg)
    assert any(g.get("class") == "emu-badge" for g in root.iter(f"{SVG}g"))
    rects = list(_series(root)[0].iter(f"{SVG}rect"))
    assert [r.get("stroke-dasharray") for r in rects] == [None, "3 2"]
    titles = [next(r.iter(f"{SVG}title")).text or "" for r in rects]
    assert EMULATOR_LABEL not in titles[0] and EMULATOR_LABEL in titles[1]
    assert _legend(root) == ["subscribe"]  # the series itself is not all emulator


def test_bar_chart_emulator_series_in_legend() -> None:
    svg = svg_bar_chart("t", ["1kb"], [BarSeries("confluent-kafka", [1.0], "#c9a227",
                                                 emulator=True)], "ms")
    assert _legend(_parse(svg)) == [f"confluent-kafka [{EMULATOR_LABEL}]"]


def test_bar_chart_negative_values_hang_below_zero() -> None:
    root = _parse(svg_bar_chart("t", ["a", "b"], [BarSeries("x", [-2.0, 3.0], "#000")], "ms"))
    assert float(_y_ticks(root)[0]) < 0
    a, b = _series(root)[0].iter(f"{SVG}rect")
    assert float(a.get("y") or 0) > float(b.get("y") or 0)


@pytest.mark.parametrize(("groups", "bars"), [([], [BarSeries("x", [], "#000")]),
                                               (["a"], []),
                                               (["a"], [BarSeries("x", [None], "#000")])])
def test_bar_chart_without_values_says_no_data(groups: list[str], bars: list[BarSeries]) -> None:
    svg = svg_bar_chart("empty", groups, bars, "ms")
    assert svg.endswith("no data</text></svg>")
    _parse(svg)


# --------------------------------------------------------------------------- formats


def test_formats() -> None:
    assert [fmt_num(v) for v in (None, float("nan"), "x", 0, 0.01234, 1.5, 123.45, 1234.4)] == [
        "—", "—", "—", "0", "0.0123", "1.50", "123.5", "1,234"]
    assert fmt_pct(12.34) == "+12.3%" and fmt_pct(-1) == "-1.0%" and fmt_pct(None) == "—"
    assert esc(None) == "" and esc('<a href="x">') == "&lt;a href=&quot;x&quot;&gt;"


def test_rel_href_is_relative_and_quoted(tmp_path: Path) -> None:
    page = tmp_path / "reports" / "r 1"
    assert rel_href(tmp_path / "validation" / "r 1.html", page) == "../../validation/r%201.html"
    assert rel_href(tmp_path / "reports" / "index.html", page) == "../index.html"


# --------------------------------------------------------------------------- ordering & labels


def test_scenario_rank_follows_the_catalog() -> None:
    assert sorted(reversed(SCENARIOS), key=scenario_rank) == list(SCENARIOS)
    assert scenario_rank("unknown") == len(SCENARIOS)


def test_series_and_run_labels() -> None:
    assert series_label("rest", "requests", "1kb", "latency") == "rest/requests 1kb latency"
    assert series_label("kafka-python", "kafka-python", "", "") == "kafka-python"
    hist = pd.DataFrame({"run_id": ["20261105T010203Z-aa", "manual-run-with-long-id"],
                         "run_date": ["2026-11-05", "2026-11-06"]})
    labels, titles = run_labels(list(hist["run_id"]), hist)
    assert labels == ["11-05 01:02", "11-06 manual-run-wi…"]
    assert titles == list(hist["run_id"])
    assert re.fullmatch(r"[^<>]*", "".join(labels))
