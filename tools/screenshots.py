"""The README's pictures, taken in headless Chromium (``make screenshots``).

``python -m tools.screenshots [--data-dir DIR] [--out docs/images]``

``report.png``: the trend report's overview (``<data>/reports/index.html``) and
``report-run.png``: the newest run's page, as ``make demo`` leaves them. (Pictures of the
Airflow UI, its grid and trigger form, are not taken yet.)

The browser is Debian's ``/usr/bin/chromium`` (``$KAFKALAB_CHROMIUM``) driven by Playwright,
as in ``tests/browser/``, whose test calls :func:`shoot_page` too. Not part of the library.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("KAFKALAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic",
]
VIEWPORT = {"width": 1280, "height": 900}
"""The size of every picture (the first screen of the page, not the whole page)."""


def shoot_page(browser: Any, url: str, out_png: Path, wait_for: str | None = None) -> Path:
    """Open ``url`` in a new page of ``browser`` (a Playwright ``Browser``) and save its first
    screen as ``out_png``. ``wait_for``: a CSS selector that must be visible first."""
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(url, wait_until="load")
        if wait_for:
            page.wait_for_selector(wait_for, state="visible", timeout=30_000)
        out_png.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out_png))
    finally:
        page.close()
    return out_png


def _newest_run_page(reports: Path) -> Path | None:
    pages = [p for p in reports.glob("*/index.html") if p.parent.name != "assets"]
    return max(pages, key=lambda p: p.stat().st_mtime) if pages else None


def shoot_report(browser: Any, data_dir: Path, out_dir: Path) -> list[Path]:
    """``report.png`` (the overview) and ``report-run.png`` (the newest run's page)."""
    index = data_dir / "reports" / "index.html"
    if not index.is_file():
        raise FileNotFoundError(f"no report at {index}: run `make demo` first")
    shots = [shoot_page(browser, index.resolve().as_uri(), out_dir / "report.png", "svg")]
    run_page = _newest_run_page(index.parent)
    if run_page is not None:
        shots.append(shoot_page(browser, run_page.resolve().as_uri(), out_dir / "report-run.png"))
    return shots


def main(argv: list[str] | None = None) -> int:
    """``python -m tools.screenshots``; see the module."""
    from playwright.sync_api import sync_playwright

    from kafkalab.paths import data_dir, project_root

    p = argparse.ArgumentParser(prog="python -m tools.screenshots", description=__doc__)
    p.add_argument("--data-dir", type=Path, default=None, help="lab data dir (default lab-data)")
    p.add_argument("--out", type=Path, default=None, help="where to write (default docs/images)")
    args = p.parse_args(argv)
    out = args.out or project_root() / "docs" / "images"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            shots = shoot_report(browser, args.data_dir or data_dir(), out)
        except FileNotFoundError as exc:
            print(f"screenshots: error: {exc}", file=sys.stderr)
            return 2
        finally:
            browser.close()
    for shot in shots:
        print(f"wrote {shot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
