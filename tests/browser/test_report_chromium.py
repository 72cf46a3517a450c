"""Open the trend report in headless Chromium (Debian's /usr/bin/chromium) via Playwright.

Playwright is driven against the system Chromium (``executable_path``); ``playwright install``
is never needed. Skipped when Playwright or Chromium is missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalab.cluster.descriptor import EMULATOR_LABEL
from kafkalab.report.build import build_report
from tests.unit.test_report import write_lab_data

CHROMIUM = os.environ.get("KAFKALAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic",
]

if os.environ.get("CI"):  # CI installs both (make setup): a missing browser must fail there
    import playwright.sync_api as sync_api
else:
    sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        if os.environ.get("CI"):
            pytest.fail(f"no Chromium at {CHROMIUM}: `make setup` should have installed it")
        pytest.skip(f"no Chromium at {CHROMIUM}")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def _open(browser: Any, page_path: Path) -> tuple[Any, list[str], list[str]]:
    """Open a file:// page; return the page, console errors, and non-file requests."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    remote: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: remote.append(r.url) if not r.url.startswith(
        ("file:", "data:", "about:")) else None)
    page.goto(page_path.resolve().as_uri(), wait_until="load")
    return page, errors, remote


def _distinct_colors(png: Path) -> int:
    from PIL import Image

    with Image.open(png) as img:
        colors = img.convert("RGB").getcolors(maxcolors=1 << 20)
    return len(colors or [])


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data_dir = tmp_path_factory.mktemp("lab-data")
    info = write_lab_data(data_dir)
    index = build_report(data_dir)
    return {"data_dir": data_dir, "index": index,
            "run_page": index.parent / info["latest"] / "index.html", **info}


@pytest.mark.parametrize("which", ["index", "run_page"])
def test_report_renders_in_chromium(browser: Any, report: dict[str, Any], which: str,
                                    tmp_path: Path) -> None:
    page, errors, remote = _open(browser, report[which])
    try:
        svgs = page.query_selector_all("svg.chart")
        assert len(svgs) == 6
        for svg in svgs:
            box = svg.bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 100
        # Lines and bars really have geometry.
        line = page.query_selector("svg.chart polyline")
        bar = page.query_selector("svg.chart rect[fill]")
        assert line is not None and line.bounding_box()["width"] > 10
        assert bar is not None and bar.bounding_box()["height"] > 0
        # The emulator label is visible text on the page and inside a chart.
        assert page.get_by_text(EMULATOR_LABEL).first.is_visible()
        assert page.query_selector("svg.chart g.emu-badge") is not None
        # The hover script works (dims the other series) without errors.
        legend = page.query_selector("svg.chart .legend-item")
        assert legend is not None
        legend.hover()
        assert page.query_selector_all("svg.chart .series.dim")
        shot = tmp_path / f"{which}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        assert _distinct_colors(shot) > 50
    finally:
        page.close()
    assert errors == [], errors
    assert remote == [], remote


def test_run_page_links_resolve(browser: Any, report: dict[str, Any]) -> None:
    page, errors, _ = _open(browser, report["index"])
    try:
        page.click(f"a[href='{report['latest']}/index.html']")
        page.wait_for_load_state("load")
        assert page.url.endswith(f"/{report['latest']}/index.html")
        assert page.query_selector("#latest table.latest") is not None
    finally:
        page.close()
    assert errors == []


def test_empty_report_renders(browser: Any, tmp_path: Path) -> None:
    page, errors, remote = _open(browser, build_report(tmp_path))
    try:
        assert page.get_by_text("No runs yet").first.is_visible()
    finally:
        page.close()
    assert errors == [] and remote == []


@pytest.fixture(scope="module")
def load_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from tests.unit.test_report_load import LOAD_RUNS, write_load_run

    data_dir = tmp_path_factory.mktemp("load-data")
    write_load_run(data_dir, LOAD_RUNS[0], 1)
    write_load_run(data_dir, LOAD_RUNS[1], 2, emulator=True, pause=False)
    index = build_report(data_dir)
    return {"index": index, "page": index.parent / LOAD_RUNS[0] / "index.html",
            "emu_page": index.parent / LOAD_RUNS[1] / "index.html", "runs": LOAD_RUNS[:2]}


def test_load_page_renders_in_chromium(browser: Any, load_report: dict[str, Any],
                                       tmp_path: Path) -> None:
    """A load run's page: seed 003's fan-out charts, latency vs throughput with the knee,
    lag with the pause shaded, the cells table with its labels; drawn, no errors, offline."""
    page, errors, remote = _open(browser, load_report["page"])
    try:
        for section in ("fanout", "throughput", "lag", "cells", "checks"):
            assert page.query_selector(f"section#{section}") is not None, section
        svgs = page.query_selector_all("svg.chart")
        assert len(svgs) >= 6 + 9 + 1  # 3 fan-out metrics × 2 acks, 9 curves, lag
        for svg in svgs:
            box = svg.bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 100
        # acks 0 and 1 side by side: same row, left and right
        left, right = (page.query_selector(f'[data-metric="loss_pct"] figure[data-acks="{a}"]')
                       for a in ("0", "1"))
        assert left is not None and right is not None
        lb, rb = left.bounding_box(), right.bounding_box()
        assert lb and rb and abs(lb["y"] - rb["y"]) < 2 and rb["x"] > lb["x"] + lb["width"] / 2
        knee = page.query_selector("#throughput svg.chart g.mark line")
        assert knee is not None and knee.bounding_box()["height"] > 50
        assert page.get_by_text("knee 1000 msg/s").first.is_visible()
        span = page.query_selector("#lag svg.chart g.span rect")
        assert span is not None and span.bounding_box()["width"] > 10
        assert page.locator("table.load-cells .flag.bound").first.is_visible()
        assert page.locator("table.load-cells .flag.saturated").first.is_visible()
        assert page.locator("table.load-cells .undef").first.is_visible()
        legend = page.query_selector("#fanout svg.chart .legend-item")
        assert legend is not None
        legend.hover()
        assert page.query_selector_all("#fanout svg.chart .series.dim")
        shot = tmp_path / "load.png"
        page.screenshot(path=str(shot), full_page=True)
        assert _distinct_colors(shot) > 50
    finally:
        page.close()
    assert errors == [], errors
    assert remote == [], remote


def test_load_runs_in_the_index_and_the_emulator_label(browser: Any,
                                                       load_report: dict[str, Any]) -> None:
    page, errors, remote = _open(browser, load_report["index"])
    try:
        for run in load_report["runs"]:
            assert page.locator(f"table.runs a[href='{run}/index.html']").is_visible()
        page.click(f"a[href='{load_report['runs'][1]}/index.html']")
        page.wait_for_load_state("load")
        assert page.query_selector("section#fanout") is not None
        assert page.get_by_text(EMULATOR_LABEL).first.is_visible()
        assert page.query_selector("#fanout svg.chart g.emu-badge") is not None
    finally:
        page.close()
    assert errors == [] and remote == []


def test_fault_page_renders_in_chromium(browser: Any, tmp_path: Path) -> None:
    """A fault run's page: the finding visible, a timeline per trial with its markers drawn,
    no errors, offline."""
    from tests.unit.test_report_faults import FAULT_RUN, write_fault_run

    trials = write_fault_run(tmp_path, validated=False)
    index = build_report(tmp_path)
    page, errors, remote = _open(browser, index.parent / FAULT_RUN / "index.html")
    try:
        assert page.query_selector("section#durability") is not None
        assert page.locator("div.finding").first.is_visible()
        assert page.locator("table.fault-trials tr.finding").first.is_visible()
        svgs = page.query_selector_all("#durability svg.chart")
        assert len(svgs) == len(trials)
        for svg in svgs:
            box = svg.bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 100
        for kind in ("fault", "leader", "heal", "isr"):
            line = page.query_selector(f'#durability svg.chart g.mark[data-mark="{kind}"] line')
            assert line is not None and line.bounding_box()["height"] > 50, kind
        assert page.get_by_text("No idempotent producer").first.is_visible()
    finally:
        page.close()
    assert errors == [], errors
    assert remote == [], remote


def test_the_readme_pictures_are_taken_by_the_screenshot_tool(browser: Any, report: dict[str, Any],
                                                              tmp_path: Path) -> None:
    """``make screenshots`` (tools/screenshots.py) on a report: the overview and the newest
    run's page, each a real picture of the first screen."""
    from tools.screenshots import VIEWPORT, shoot_report

    shots = shoot_report(browser, report["data_dir"], tmp_path / "images")
    assert [s.name for s in shots] == ["report.png", "report-run.png"]
    from PIL import Image

    for shot in shots:
        with Image.open(shot) as img:
            assert img.size == (VIEWPORT["width"], VIEWPORT["height"])
        assert _distinct_colors(shot) > 50
    with pytest.raises(FileNotFoundError, match="run `make demo` first"):
        shoot_report(browser, tmp_path / "no-data", tmp_path / "images")
