"""The report inside Airflow: a small read-only FastAPI app that Airflow's api-server mounts at
:data:`~kafkalab.urls.APP_PREFIX` (``/kafkalab``) through the lab's plugin
(``plugins/kafkalab_report_plugin.py``).

Routes (relative to the mount; see :mod:`kafkalab.urls`):

* ``GET /reports/<path>``: a file of ``<data_dir>/reports/`` (the static trend report);
  a folder serves its ``index.html`` (``/reports/`` is the overview,
  ``/reports/<run_id>/`` a run's page); a folder named without its trailing slash is
  redirected to it, so the page's relative links resolve;
* ``GET /data-docs/<path>``: a file of ``<data_dir>/validation/docs/`` (the Great
  Expectations Data Docs), the same way;
* ``GET /runs/<dag_id>/<airflow_run_id>``: redirects to the report page of that DAG run's lab
  run (what the "Lab report" tab of the DAG run page opens); 404 with a link to the
  overview when the run has no page yet (``publish_report`` builds it);
* ``GET /``: redirects to the overview.

The data directory is :func:`kafkalab.paths.data_dir`, read at every request (never at
import); a path that leaves the served folder (``..``, a symlink pointing out) or names
nothing is 404. Every redirect is relative, so the app works under any ``[api] base_url``.
Building the app does no I/O.

The lab run id of a DAG run comes from its logical date
(:func:`kafkalab.airflow.run_ids.dag_lab_run_id`), which the app reads from Airflow's
metadata database (the api-server has one); without it (a DB that does not answer) the run
is found by its manifest's ``command`` (``airflow dag <dag_id> run <airflow_run_id>``).

The files are served without Airflow's authentication (plugin apps are not behind it): the
lab's api-server listens on 127.0.0.1 only. On a shared deployment, put the api-server's
``/kafkalab`` behind the same login as the UI (docs/airflow.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from html import escape
from pathlib import Path
from urllib.parse import quote

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from kafkalab.airflow.run_ids import RUN_PREFIXES, dag_lab_run_id
from kafkalab.store import LabData, safe_name
from kafkalab.urls import APP_PREFIX, DATA_DOCS_PATH, REPORTS_PATH

log = logging.getLogger(__name__)

REPORTS_ROUTE = REPORTS_PATH[len(APP_PREFIX):]
"""``/reports``: :data:`~kafkalab.urls.REPORTS_PATH` inside the app."""

DATA_DOCS_ROUTE = DATA_DOCS_PATH[len(APP_PREFIX):]
"""``/data-docs``: :data:`~kafkalab.urls.DATA_DOCS_PATH` inside the app."""

RUNS_ROUTE = "/runs"
"""``/runs/<dag_id>/<airflow_run_id>``: the redirect from a DAG run to its lab run's page."""

LogicalDateOf = Callable[[str, str], "datetime | None"]
"""``(dag_id, airflow_run_id) -> logical date`` (else ``run_after``; None: unknown)."""


def served_file(base: Path, path: str) -> Path | None:
    """The file ``path`` (URL path, ``/``-separated) names under ``base``: the file itself, or
    a folder's ``index.html``; None when it names nothing there or leaves ``base`` (``..``,
    an absolute path, a symlink pointing out)."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." or "\\" in p or "\x00" in p for p in parts):
        return None
    try:
        root = base.resolve(strict=True)
        target = root.joinpath(*parts).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(root):
        return None
    if target.is_dir():
        target = target / "index.html"
    return target if target.is_file() else None


def _serve(base: Path, path: str) -> Response:
    """A file of ``base`` (see :func:`served_file`), a redirect from a folder named without
    its trailing slash, or 404."""
    found = served_file(base, path)
    if found is None:
        raise HTTPException(status_code=404, detail="not found")
    if found.name == "index.html" and path and not path.endswith("/") \
            and not path.endswith("index.html"):
        # relative links of <folder>/index.html resolve only under <folder>/
        return RedirectResponse(f"./{quote(path.rsplit('/', 1)[-1])}/", status_code=307)
    return FileResponse(found)


def airflow_logical_date(dag_id: str, airflow_run_id: str) -> datetime | None:
    """The logical date (else ``run_after``) of a DAG run, from Airflow's metadata database;
    None when there is no such run or no database answers."""
    try:
        from airflow.models.dagrun import DagRun
        from airflow.utils.session import create_session
        from sqlalchemy import select

        with create_session() as session:
            row = session.execute(select(DagRun.logical_date, DagRun.run_after).where(
                DagRun.dag_id == dag_id, DagRun.run_id == airflow_run_id)).first()
    except Exception as exc:  # no DB here: fall back on the manifests' commands
        log.info("no logical date of %s/%s from the metadata DB: %s", dag_id, airflow_run_id,
                 exc)
        return None
    if row is None:
        return None
    value = row[0] or row[1]
    return value if isinstance(value, datetime) else None


def find_lab_run(lab: LabData, dag_id: str, airflow_run_id: str,
                 logical_date: datetime | None) -> str | None:
    """The lab run id of a DAG run that has a report page: the id from its logical date, else
    the id from its run id alone (runs made before lab run ids carried the logical date),
    else the run whose manifest says it was made by that DAG run (the DAG's own run, not the
    nightly's fan-out or fault run). None when none has a page."""
    candidates = [dag_lab_run_id(dag_id, airflow_run_id, logical_date),
                  dag_lab_run_id(dag_id, airflow_run_id)]
    for run_id in candidates:
        if (lab.report_page_dir(run_id) / "index.html").is_file():
            return run_id
    prefix = RUN_PREFIXES.get(dag_id, dag_id) + "-"
    command = f"airflow dag {dag_id} run {airflow_run_id}"
    for run_id, manifest in lab.manifests().items():
        rest = run_id[len(prefix):] if run_id.startswith(prefix) else ""
        if (rest[:1].isdigit() and manifest.get("command") == command
                and (lab.report_page_dir(run_id) / "index.html").is_file()):
            return run_id
    return None


def _no_page(dag_id: str, airflow_run_id: str, tried: str) -> HTMLResponse:
    body = (f"<!doctype html><meta charset='utf-8'><title>No lab report yet</title>"
            f"<p>No report page for DAG run <code>{escape(dag_id)}</code> / "
            f"<code>{escape(airflow_run_id)}</code> (lab run <code>{escape(tried)}</code>) yet: "
            f"its <code>publish_report</code> task builds it.</p>"
            f"<p><a href='../..{REPORTS_ROUTE}/index.html'>All lab reports</a></p>")
    return HTMLResponse(body, status_code=404)


def create_app(data_dir: Callable[[], Path] | None = None,
               logical_date_of: LogicalDateOf | None = None) -> FastAPI:
    """The app (see the module). ``data_dir``: where the lab's data is, called at every
    request (default :func:`kafkalab.paths.data_dir`); ``logical_date_of``: how a DAG run's
    logical date is found (default :func:`airflow_logical_date`). No I/O."""

    def lab() -> LabData:
        if data_dir is not None:
            return LabData(data_dir())
        from kafkalab.paths import data_dir as default_data_dir

        return LabData(default_data_dir())

    find_date = logical_date_of or airflow_logical_date
    app = FastAPI(title="Kafka Latency Lab report", docs_url=None, redoc_url=None,
                  openapi_url=None)

    @app.get("/", include_in_schema=False)
    def overview(request: Request) -> RedirectResponse:
        root = str(request.scope.get("root_path") or "").rstrip("/")  # the mount: /kafkalab
        return RedirectResponse(f"{root}{REPORTS_ROUTE}/index.html", status_code=307)

    @app.get(REPORTS_ROUTE, include_in_schema=False)
    def reports_folder() -> RedirectResponse:
        return RedirectResponse(f".{REPORTS_ROUTE}/", status_code=307)

    @app.get(DATA_DOCS_ROUTE, include_in_schema=False)
    def data_docs_folder() -> RedirectResponse:
        return RedirectResponse(f".{DATA_DOCS_ROUTE}/", status_code=307)

    @app.get(REPORTS_ROUTE + "/{path:path}", include_in_schema=False)
    def report_file(path: str) -> Response:
        return _serve(lab().reports_dir, path)

    @app.get(DATA_DOCS_ROUTE + "/{path:path}", include_in_schema=False)
    def data_docs_file(path: str) -> Response:
        return _serve(lab().validation_docs_dir, path)

    @app.get(RUNS_ROUTE + "/{dag_id}/{airflow_run_id}", include_in_schema=False)
    def dag_run_report(dag_id: str, airflow_run_id: str) -> Response:
        logical_date = find_date(dag_id, airflow_run_id)
        run_id = find_lab_run(lab(), dag_id, airflow_run_id, logical_date)
        if run_id is None:
            return _no_page(dag_id, airflow_run_id,
                            dag_lab_run_id(dag_id, airflow_run_id, logical_date))
        page = quote(safe_name(run_id), safe="")
        return RedirectResponse(f"../..{REPORTS_ROUTE}/{page}/index.html", status_code=307)

    return app


__all__ = ["DATA_DOCS_ROUTE", "REPORTS_ROUTE", "RUNS_ROUTE", "airflow_logical_date",
           "create_app", "find_lab_run", "served_file"]
