"""The README's pictures, taken in headless Chromium (``make screenshots``).

``python -m tools.screenshots [--data-dir DIR] [--out docs/images] [--no-airflow]
[--airflow-home PATH]``

Of the trend report, as ``make demo`` leaves it:

* ``report.png``: the overview (``<data>/reports/index.html``);
* ``report-run.png``: the newest run's page.

Of the real Airflow 3 UI, over the runs ``make demo`` recorded with ``airflow dags test``
in the SQLite database ``<AIRFLOW_HOME>/airflow.db`` (:func:`kafkalab.paths.airflow_home`):

* ``airflow-grid.png``: the grid of :data:`GRID_DAG` (its DAG runs and task rows);
* ``airflow-trigger.png``: the trigger form of :data:`TRIGGER_DAG` (its params).

For those, one ``airflow api-server`` is started on that home (the lab's environment,
:func:`kafkalab.airflow.launcher.airflow_env`, on ``127.0.0.1:``:data:`AIRFLOW_PORT`, one
worker, the simple auth manager's "everyone is admin" mode, so no login), polled on
``/api/v2/monitor/health`` until its metadata database answers, and stopped (its process
group) when the pictures are taken or anything fails; its log is
``<AIRFLOW_HOME>/screenshots-api-server.log``. Without nightly runs in that database, one
line says so and only the report's pictures are taken. ``--no-airflow`` skips them.

The browser is Debian's ``/usr/bin/chromium`` (``$KAFKALAB_CHROMIUM``) driven by Playwright,
as in ``tests/browser/``, whose test calls :func:`shoot_page` too. Not part of the library.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("KAFKALAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic",
]
VIEWPORT = {"width": 1280, "height": 900}
"""The size of every picture (the first screen of the page, not the whole page)."""
WAIT_TIMEOUT_MS = 30_000
"""How long a page may take to show the element that proves it rendered."""

AIRFLOW_HOST = "127.0.0.1"
"""The only address the screenshot api-server binds."""
AIRFLOW_PORT = 28080
"""The screenshot api-server's own port (not ``make airflow``'s 8080, below 32768)."""
GRID_DAG = "nightly_latency_regression"
"""The DAG whose grid is photographed; its runs in the database decide whether to try."""
TRIGGER_DAG = "latency_experiment"
"""The DAG whose trigger form is photographed."""
HEALTH_TIMEOUT_S = 180.0
"""How long the api-server may take to answer healthy (~6 s on this two-core machine)."""
STOP_TIMEOUT_S = 20.0
"""How long the api-server's process group has after SIGTERM before SIGKILL."""
API_SERVER_LOG = "screenshots-api-server.log"
"""The api-server's output, in ``AIRFLOW_HOME``."""


class NoAirflowRuns(Exception):
    """The Airflow home has no database or no runs of :data:`GRID_DAG` to photograph."""


# --------------------------------------------------------------------------- pages


def shoot_page(browser: Any, url: str, out_png: Path, wait_for: str | None = None,
               prepare: Callable[[Any], None] | None = None,
               init_script: str | None = None) -> Path:
    """Open ``url`` in a new page of ``browser`` (a Playwright ``Browser``, light colour
    scheme) and save its first screen as ``out_png``. ``wait_for``: a CSS selector that must
    be visible first. ``prepare``: called with the Playwright ``Page`` after that (e.g. to
    open a dialog and wait for it), before the picture. ``init_script``: JavaScript run in
    the page before its own (e.g. to seed its ``localStorage``)."""
    page = browser.new_page(viewport=VIEWPORT, color_scheme="light")
    try:
        if init_script:
            page.add_init_script(init_script)
        page.goto(url, wait_until="load")
        if wait_for:
            page.wait_for_selector(wait_for, state="visible", timeout=WAIT_TIMEOUT_MS)
        if prepare is not None:
            prepare(page)
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


# --------------------------------------------------------------------------- Airflow


def airflow_db(home: Path) -> Path:
    """The SQLite metadata database ``airflow dags test`` writes in ``home``."""
    return home / "airflow.db"


def count_dag_runs(home: Path, dag_id: str = GRID_DAG) -> int:
    """How many runs of ``dag_id`` the SQLite database of ``home`` holds (read-only; 0 when
    there is no database or it has no ``dag_run`` table yet)."""
    db = airflow_db(home)
    if not db.is_file():
        return 0
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        row = conn.execute("SELECT COUNT(*) FROM dag_run WHERE dag_id = ?", (dag_id,)).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return 0
        raise
    finally:
        conn.close()
    return int(row[0])


def api_server_env(home: Path, port: int = AIRFLOW_PORT,
                   base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The screenshot api-server's environment: the lab's (``airflow_env(home)``, as for
    ``airflow dags test``) on its own port, bound to :data:`AIRFLOW_HOST`, on the SQLite
    database of ``home``, one worker, and no login (every visitor is admin)."""
    from kafkalab.airflow.launcher import PORT_ENV, airflow_env

    start = dict(os.environ if base is None else base)
    start[PORT_ENV] = str(port)  # airflow_env derives its API and execution URLs from it
    env = airflow_env(home, base=start)
    url = f"http://{AIRFLOW_HOST}:{port}"
    env.update({
        "AIRFLOW__API__HOST": AIRFLOW_HOST,
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_db(home).absolute()}",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
    })
    return env


def api_server_cmd(env: Mapping[str, str]) -> list[str]:
    """``airflow api-server -H <host> -p <port> -w 1`` with the ``airflow`` of ``env``'s
    ``PATH`` (the venv's)."""
    airflow = shutil.which("airflow", path=env.get("PATH")) or "airflow"
    return [airflow, "api-server", "-H", env["AIRFLOW__API__HOST"],
            "-p", env["AIRFLOW__API__PORT"], "-w", env.get("AIRFLOW__API__WORKERS", "1")]


def _group_running(pgid: int) -> bool:
    """Whether a live (not zombie) process is left in process group ``pgid``. From
    ``/proc`` (an orphan's zombie waits for whoever adopted it to reap it, which in a
    container may take seconds); without ``/proc``, whether the group exists at all."""
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for stat in proc_dir.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


def _group_gone(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` until no live process of ``proc``'s group is left (reaping
    its leader)."""
    deadline = time.monotonic() + timeout_s
    while True:
        proc.poll()
        if not _group_running(proc.pid):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def stop_group(proc: subprocess.Popen[bytes], timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the process group of ``proc`` (started in its own session), wait until all of
    it (uvicorn's workers too) is gone, SIGKILL what is left after ``timeout_s``."""
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        if _group_gone(proc, wait_s):
            break
    proc.poll()


@contextmanager
def airflow_api_server(home: Path, port: int = AIRFLOW_PORT,
                       timeout_s: float = HEALTH_TIMEOUT_S) -> Iterator[str]:
    """Run one ``airflow api-server`` on ``home`` (:func:`api_server_env`) until the block
    ends; yields its base URL once its metadata database is healthy. Its process group is
    stopped however the block ends.

    Raises:
        RuntimeError: the port is taken, the server exited, or it was not healthy within
            ``timeout_s`` (the message names its log).
    """
    from kafkalab import procs
    from kafkalab.airflow.launcher import health as launcher_health
    from kafkalab.airflow.launcher import install_plugins

    if procs.port_in_use(port, AIRFLOW_HOST):
        raise RuntimeError(f"port {AIRFLOW_HOST}:{port} is in use: the screenshot "
                           "api-server needs it free")
    env = api_server_env(home, port)
    install_plugins(home)  # the DAG run page's "Lab report" tab, as `make airflow` has it
    log_path = home / API_SERVER_LOG
    url = env["AIRFLOW__API__BASE_URL"]
    with log_path.open("ab") as log:
        proc = subprocess.Popen(api_server_cmd(env), env=env, cwd=str(home),
                                stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        health: dict[str, Any] | None = None
        while True:
            health = launcher_health(port=port)
            if (health or {}).get("metadatabase", {}).get("status") == "healthy":
                break
            if proc.poll() is not None:
                raise RuntimeError(f"airflow api-server exited with {proc.returncode}; "
                                   f"see {log_path}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"airflow api-server not healthy at {url} within "
                                   f"{timeout_s:.0f} s ({health}); see {log_path}")
            time.sleep(1.0)
        yield url
    finally:
        stop_group(proc)


GRID_PANEL_PERCENT = 45
"""The grid's share of the DAG page's width (the UI's default, 20 %, shows two runs)."""
_GRID_LAYOUT_JS = "localStorage.setItem({}, {});".format(
    json.dumps("react-resizable-panels:grid-ltr"),
    json.dumps(json.dumps({"details-panel,main-panel": {
        "expandToSizes": {}, "layout": [GRID_PANEL_PERCENT, 100 - GRID_PANEL_PERCENT]}})))
"""Seeds the UI's remembered panel sizes (the key its resizable panels store them under)."""
TRIGGER_FIELD = "[role=dialog] [id^='element_']"
"""A param's field in the trigger dialog (Airflow names them ``element_<param>``)."""


def _settle(page: Any, timeout_ms: int = 10_000) -> None:
    """Wait (bounded) until the page has no request in flight (task summaries, charts)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with contextlib.suppress(PlaywrightTimeout):  # a page that keeps polling: as it is
        page.wait_for_load_state("networkidle", timeout=timeout_ms)


def _wait_grid(page: Any) -> None:
    """Wait until a task cell of the grid shows, then for its last requests."""
    page.wait_for_selector("[id^='grid-']", state="attached", timeout=WAIT_TIMEOUT_MS)
    _settle(page)


def _open_trigger_form(page: Any) -> None:
    """Click the DAG page's Trigger button and wait for the dialog's param fields."""
    page.locator("[data-testid=trigger-dag-button]").first.click()
    page.wait_for_selector(TRIGGER_FIELD, state="visible", timeout=WAIT_TIMEOUT_MS)
    _settle(page)


def shoot_airflow(browser: Any, base_url: str, out_dir: Path) -> list[Path]:
    """``airflow-grid.png`` (the grid of :data:`GRID_DAG`) and ``airflow-trigger.png`` (the
    trigger form of :data:`TRIGGER_DAG`) from the api-server at ``base_url``."""
    grid = shoot_page(browser, f"{base_url}/dags/{GRID_DAG}", out_dir / "airflow-grid.png",
                      wait_for="a[href*='/runs/']", prepare=_wait_grid,
                      init_script=_GRID_LAYOUT_JS)
    trigger = shoot_page(browser, f"{base_url}/dags/{TRIGGER_DAG}",
                         out_dir / "airflow-trigger.png",
                         wait_for="[data-testid=trigger-dag-button]",
                         prepare=_open_trigger_form)
    return [grid, trigger]


def take_airflow(browser: Any, home: Path, out_dir: Path) -> list[Path]:
    """Start the api-server on ``home``, take :func:`shoot_airflow`'s pictures, stop it.

    Raises:
        NoAirflowRuns: ``home`` has no runs of :data:`GRID_DAG`.
        RuntimeError: the api-server did not come up.
    """
    if count_dag_runs(home) == 0:
        raise NoAirflowRuns(f"no Airflow runs in {home}: run make demo first")
    with airflow_api_server(home) as url:
        return shoot_airflow(browser, url, out_dir)


# --------------------------------------------------------------------------- command


def main(argv: list[str] | None = None) -> int:
    """``python -m tools.screenshots``; see the module."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    from kafkalab.paths import airflow_home, data_dir, project_root

    p = argparse.ArgumentParser(prog="python -m tools.screenshots", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path, default=None, help="lab data dir (default lab-data)")
    p.add_argument("--out", type=Path, default=None, help="where to write (default docs/images)")
    p.add_argument("--no-airflow", action="store_true", help="only the report's pictures")
    p.add_argument("--airflow-home", type=Path, default=None,
                   help="AIRFLOW_HOME with make demo's runs (default .lab/airflow)")
    args = p.parse_args(argv)
    out = args.out or project_root() / "docs" / "images"
    home = (args.airflow_home or airflow_home()).expanduser().absolute()
    shots: list[Path] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            shots += shoot_report(browser, args.data_dir or data_dir(), out)
            if not args.no_airflow:
                started = time.monotonic()
                try:
                    shots += take_airflow(browser, home, out)
                    print(f"screenshots: Airflow UI pictures took "
                          f"{time.monotonic() - started:.0f} s")
                except NoAirflowRuns as exc:
                    print(f"screenshots: {exc}")
        except (FileNotFoundError, RuntimeError, PlaywrightError) as exc:
            print(f"screenshots: error: {exc}", file=sys.stderr)
            return 2
        finally:
            browser.close()
            for shot in shots:
                print(f"wrote {shot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
