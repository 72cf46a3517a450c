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
        assert len(svgs) == 10  # 2 payload panels × 4 trend metrics + comparison + first msg
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


@pytest.fixture(scope="module")
def trends_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Five runs (the newest flagged on confluent-kafka 1mb), raw samples of one cell in the
    two newest runs, Data Docs; and eight nights with a level step for a change point."""
    from kafkalab.store import LabData
    from tests.unit.test_report import _row, _write_aggregates, _write_manifest
    from tests.unit.test_report_trends import _write_samples

    data_dir = tmp_path_factory.mktemp("trends-data")
    info = write_lab_data(data_dir)
    lab = LabData(data_dir)
    _write_samples(lab, info["latest"], received=497, lost=3)
    _write_samples(lab, info["runs"][-2], received=1500, lost=0)
    lab.validation_docs_dir.mkdir(parents=True)
    (lab.validation_docs_dir / "index.html").write_text(
        "<!doctype html><title>docs</title><p>GX Data Docs here</p>")
    steps = tmp_path_factory.mktemp("steps-data")
    ids = [f"nightly-202611{d:02d}T000000Z" for d in range(1, 9)]
    for i, rid in enumerate(ids):
        r = _row(0, "confluent-kafka", "confluent-kafka", "kafka09", "1kb", 1056)
        r.update(run_id=rid, e2e_latency_ms_p50=(6.0 if i < 4 else 12.0) + 0.01 * i)
        _write_aggregates(steps, rid, [r])
        _write_manifest(steps, rid, 1)
    build_report(steps)
    index = build_report(data_dir)
    return {"data_dir": data_dir, "index": index,
            "page": index.parent / info["latest"] / "index.html",
            "steps_page": steps / "reports" / ids[-1] / "index.html", **info}


def test_trend_panels_bands_markers_and_spectrum_render(browser: Any,
                                                       trends_report: dict[str, Any]) -> None:
    page, errors, remote = _open(browser, trends_report["page"])
    try:
        panels = page.query_selector_all("#trends div.payload-panel")
        assert [p.get_attribute("data-payload") for p in panels] == ["1056", "1048608"]
        fig = '#trends figure[data-metric="e2e_latency_ms_p50"][data-payload="1048608"]'
        marker = page.query_selector(f"{fig} circle.drift-marker")
        assert marker is not None and marker.is_visible()
        box = marker.bounding_box()
        assert box is not None and box["width"] > 8
        band = page.query_selector(f"{fig} rect.baseline-band")
        assert band is not None
        bbox = band.bounding_box()
        assert bbox is not None and bbox["width"] > 20 and bbox["height"] > 1
        assert page.locator(f"{fig} text", has_text="night measured").first.is_visible()
        spec = page.query_selector_all("#spectrum figure.spectrum svg.chart")
        assert len(spec) == 1
        sbox = spec[0].bounding_box()
        assert sbox is not None and sbox["width"] > 100 and sbox["height"] > 100
        lines = page.query_selector_all("#spectrum svg.chart g.series polyline")
        assert len(lines) == 2 and all(x.bounding_box()["width"] > 50 for x in lines)
        assert page.get_by_text("not drawn: p99.9 (n<1,000)", exact=False).first.is_visible()
        assert page.locator("#spectrum svg.chart text", has_text="99.99 %").first.is_visible()
        page.click("a.data-docs")  # relative: the file next to the reports, offline
        page.wait_for_load_state("load")
        assert page.url.endswith("/validation/docs/index.html")
        assert page.get_by_text("GX Data Docs here").is_visible()
    finally:
        page.close()
    assert errors == [], errors
    assert remote == [], remote


def test_change_point_line_is_drawn(browser: Any, trends_report: dict[str, Any]) -> None:
    page, errors, remote = _open(browser, trends_report["steps_page"])
    try:
        line = page.query_selector(
            '#trends figure[data-metric="e2e_latency_ms_p50"] g.mark[data-mark="change-point"] '
            "line")
        assert line is not None and line.bounding_box()["height"] > 50
        assert page.locator("#trends svg.chart text", has_text="change +100 %").first.is_visible()
    finally:
        page.close()
    assert errors == [] and remote == []


@pytest.mark.parametrize("prefix", ["", "/airflow"])
def test_data_docs_link_follows_airflow_paths(browser: Any, trends_report: dict[str, Any],
                                              prefix: str) -> None:
    """Served as Airflow's plugin serves them (reports under /kafkalab/reports/, Data Docs
    under /kafkalab/data-docs/) by a real local HTTP server, the link leads to the docs;
    also when the api-server's base_url has a path (``http://host/airflow``): the prefix is
    kept."""
    import threading
    from functools import partial
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    root = trends_report["data_dir"]

    class Handler(SimpleHTTPRequestHandler):
        def translate_path(self, path: str) -> str:
            for served, sub in ((f"{prefix}/kafkalab/reports/", "reports/"),
                                (f"{prefix}/kafkalab/data-docs/", "validation/docs/")):
                if path.startswith(served):
                    return str(root / sub / path[len(served):].split("?")[0])
            return str(root / "missing")

        def log_message(self, *args: Any) -> None:
            pass

    server = None
    for port in range(23817, 23837):
        try:
            server = ThreadingHTTPServer(("127.0.0.1", port), partial(Handler))
            break
        except OSError:
            continue
    assert server is not None
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    page = browser.new_page()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        page.goto(f"{base}{prefix}/kafkalab/reports/{trends_report['latest']}/index.html",
                  wait_until="load")
        assert (page.get_attribute("a.data-docs", "href")
                == f"{prefix}/kafkalab/data-docs/index.html")
        page.click("a.data-docs")
        page.wait_for_load_state("load")
        assert page.url == f"{base}{prefix}/kafkalab/data-docs/index.html"
        assert page.get_by_text("GX Data Docs here").is_visible()
    finally:
        page.close()
        server.shutdown()
        server.server_close()
        thread.join()
