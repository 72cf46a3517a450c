"""The report inside Airflow: a small read-only FastAPI app that Airflow's api-server mounts at
:data:`~kafkalab.urls.APP_PREFIX` (``/kafkalab``) through the lab's plugin
(``plugins/kafkalab_report_plugin.py``).

Routes (relative to the mount; see :mod:`kafkalab.urls`), all behind Airflow's login:

* ``GET /reports/<path>``: a file of ``<data_dir>/reports/`` (the static trend report);
  a folder serves its ``index.html`` (``/reports/`` is the overview,
  ``/reports/<run_id>/`` a run's page); a folder named without its trailing slash is
  redirected to it, so the page's relative links resolve;
* ``GET /data-docs/<path>``: a file of ``<data_dir>/validation/docs/`` (the Great
  Expectations Data Docs), the same way; an ``.html`` page made offline and self-contained
  (:func:`kafkalab.airflow.data_docs.offline_file`);
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
metadata database (the api-server has one); without it (a DB that does not answer, a run
without a logical date) the run is found by its manifest's ``command`` (``airflow dag
<dag_id> run <airflow_run_id>``). Every DAG run of one night of the nightly redirects to that
night's one lab run (``nightly-20261118T000000Z``: one lab run per night, see
:mod:`kafkalab.airflow.run_ids`); a night's run made before that rule
(``nightly-20261118T000000Z-cec839``) is still found when it has a page and the night's has
none.

**Login.** Airflow mounts plugin apps without its authentication, so the app checks it
itself, on every route, before anything else (no metadata-DB query, no manifest or file
read): :func:`airflow_user` runs Airflow's own core-API dependency
(``airflow.api_fastapi.core_api.security.get_user``: an ``Authorization: Bearer <jwt>``
header, else the UI's ``_token`` cookie; the auth manager validates the token and checks
it is not revoked). No token, or an expired one: 401; a token Airflow does not accept: 403
(as the REST API answers). A browser's page request (``Sec-Fetch-Mode: navigate``) gets
the 401 as a small HTML page: it reloads the same address once
(``?kafkalab_login=retry``), which carries the cookie when the first request could not (a
link followed inside a sandboxed Data Docs page: see below), then links to Airflow's login.

**Headers** (:class:`SecurityHeaders`, every response): ``X-Content-Type-Options:
nosniff``, ``X-Frame-Options: SAMEORIGIN``, ``Referrer-Policy: same-origin`` and a
Content-Security-Policy with ``frame-ancestors 'self'`` (the UI shows the report in a
same-origin ``<iframe>``). The lab's report pages are self-contained (inline CSS, one inline
script, inline SVG): :data:`PAGE_CSP` (no network, no plugins, no forms). Any other file of
``reports/`` (an ``.svg`` opened alone) adds ``sandbox``. The Data Docs get
:data:`DATA_DOCS_CSP`: ``sandbox allow-scripts allow-popups`` (GX's scripts run in an
opaque origin: they cannot read the api-server's pages or call its API with the user's
cookie), inline scripts, styles, ``data:`` images and fonts only. Their pages are served
self-contained (:mod:`kafkalab.airflow.data_docs`: the CDN assets they reference are
vendored and inlined), since a sandboxed page's own sub-resource requests carry no cookie.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kafkalab.airflow.data_docs import offline_file
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
"""``(dag_id, airflow_run_id) -> logical date`` (None: the run has none, or unknown)."""

Authenticate = Callable[[Request], Awaitable[Any]]
"""``request -> user``: raises ``HTTPException`` (401/403) when the request has no valid
login (default :func:`airflow_user`)."""

_FRAMES = "base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
PAGE_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            f"img-src 'self' data:; {_FRAMES}")
"""The CSP of the lab's own pages (self-contained: see :mod:`kafkalab.report.build`) and of
the app's own answers."""

DATA_DOCS_CSP = ("sandbox allow-scripts allow-popups allow-popups-to-escape-sandbox; "
                 "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                 f"img-src data:; font-src data:; {_FRAMES}")
"""The CSP of everything under ``/data-docs/`` (see the module)."""

RETRY_PARAM = "kafkalab_login"
"""The query parameter of the one reload a browser's 401 page makes (``=retry``)."""


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


def _serve(base: Path, path: str, offline_html: bool = False) -> Response:
    """A file of ``base`` (see :func:`served_file`), a redirect from a folder named without
    its trailing slash, or 404. ``offline_html``: an ``.html`` file is served through
    :func:`kafkalab.airflow.data_docs.offline_file` (the Data Docs)."""
    found = served_file(base, path)
    if found is None:
        raise HTTPException(status_code=404, detail="not found")
    if found.name == "index.html" and path and not path.endswith("/") \
            and not path.endswith("index.html"):
        # relative links of <folder>/index.html resolve only under <folder>/
        return RedirectResponse(f"./{quote(path.rsplit('/', 1)[-1])}/", status_code=307)
    if offline_html and found.suffix.lower() in (".html", ".htm"):
        return HTMLResponse(offline_file(base, found))
    return FileResponse(found)


# --------------------------------------------------------------------------- login


async def airflow_user(request: Request) -> Any:
    """The Airflow user who sent ``request``, as Airflow's REST API finds it: its own
    ``get_user`` dependency (a ``Bearer`` token, else the UI's ``_token`` cookie, validated
    by the auth manager, revoked tokens refused). Raises ``HTTPException`` 401 (no or an
    expired token) or 403 (a token Airflow does not accept); 503 when Airflow's auth manager
    is not set up in this process (never open)."""
    try:
        from airflow.api_fastapi.core_api.security import bearer_scheme, get_user

        credentials = await bearer_scheme(request)
        return await get_user(request, None, credentials)
    except HTTPException:
        raise
    except Exception as exc:  # no auth manager, no metadata DB: refuse, never serve
        log.warning("report app: cannot check the login: %s", exc)
        raise HTTPException(status_code=503, detail="Airflow's login cannot be checked") \
            from exc


def _is_page_request(request: Request) -> bool:
    """A browser loading a page (not a script, an image, curl or the REST client)."""
    mode = request.headers.get("sec-fetch-mode")
    if mode is not None:
        return mode == "navigate"
    return "text/html" in request.headers.get("accept", "")


def _login_url(request: Request) -> str | None:
    """Airflow's login page, back to this address after it; None without an auth manager."""
    try:
        from airflow.api_fastapi.app import get_auth_manager

        return str(get_auth_manager().get_url_login(next_url=request.url.path))
    except Exception:  # no auth manager here: the 401 page links nowhere
        return None


def _login_page(request: Request, status: int, detail: str) -> HTMLResponse:
    """The 401/403 of a browser's page request: one reload of the same address (a request
    made from a sandboxed page had no cookie; the reload from this page has it), then a
    link to Airflow's login."""
    params = parse_qsl(request.url.query, keep_blank_values=True)
    head = ""
    if status == 401 and all(k != RETRY_PARAM for k, _ in params):
        # a query-only URL: the same path, never another site
        again = "?" + urlencode([*params, (RETRY_PARAM, "retry")])
        head = f"<meta http-equiv='refresh' content='0;url={escape(again)}'>"
    login = _login_url(request)
    link = f"<p><a href='{escape(login)}'>Log in to Airflow</a></p>" if login else ""
    body = (f"<!doctype html><meta charset='utf-8'>{head}<title>Log in to Airflow</title>"
            f"<p>The Kafka Latency Lab report needs your Airflow login ({escape(detail)}).</p>"
            f"{link}")
    return HTMLResponse(body, status_code=status,
                        headers={"WWW-Authenticate": "Bearer"} if status == 401 else None)


async def _http_error(request: Request, exc: Exception) -> Response:
    """FastAPI's own JSON error (a 401 says ``WWW-Authenticate: Bearer``), except a login
    error of a browser's page request (:func:`_login_page`)."""
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code in (401, 403) and _is_page_request(request):
        return _login_page(request, exc.status_code, str(exc.detail))
    from fastapi.exception_handlers import http_exception_handler

    response = await http_exception_handler(request, exc)
    if exc.status_code == 401:
        response.headers.setdefault("WWW-Authenticate", "Bearer")
    return response


class SecurityHeaders:
    """ASGI middleware: the headers of every response (see the module): the CSP by route
    (``/data-docs/``: :data:`DATA_DOCS_CSP`, its login page excepted) and by type (a
    non-HTML file is sandboxed)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path") or "")
        root = str(scope.get("root_path") or "")
        route = path[len(root):] if root and path.startswith(root) else path
        data_docs = route == DATA_DOCS_ROUTE or route.startswith(DATA_DOCS_ROUTE + "/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers: MutableMapping[str, str] = {}
                for key, value in message.get("headers", []):
                    headers[key.decode("latin-1").lower()] = value.decode("latin-1")
                html = headers.get("content-type", "").startswith("text/html")
                if data_docs and message["status"] not in (401, 403):
                    csp = DATA_DOCS_CSP
                else:
                    csp = PAGE_CSP if html or message["status"] >= 300 else f"{PAGE_CSP}; sandbox"
                extra = {"content-security-policy": csp, "x-content-type-options": "nosniff",
                         "x-frame-options": "SAMEORIGIN", "referrer-policy": "same-origin"}
                message["headers"] = [
                    *((k, v) for k, v in message.get("headers", [])
                      if k.decode("latin-1").lower() not in extra),
                    *((k.encode("latin-1"), v.encode("latin-1")) for k, v in extra.items())]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def airflow_logical_date(dag_id: str, airflow_run_id: str) -> datetime | None:
    """The logical date of a DAG run, from Airflow's metadata database; None when the run has
    none (a manual run of Airflow 3 without one: its lab run id then follows from its run id,
    else its manifest's command), there is no such run or no database answers."""
    try:
        from airflow.models.dagrun import DagRun
        from airflow.utils.session import create_session
        from sqlalchemy import select

        with create_session() as session:
            row = session.execute(select(DagRun.logical_date).where(
                DagRun.dag_id == dag_id, DagRun.run_id == airflow_run_id)).first()
    except Exception as exc:  # no DB here: fall back on the manifests' commands
        log.info("no logical date of %s/%s from the metadata DB: %s", dag_id, airflow_run_id,
                 exc)
        return None
    if row is None:
        return None
    value = row[0]
    return value if isinstance(value, datetime) else None


def find_lab_run(lab: LabData, dag_id: str, airflow_run_id: str,
                 logical_date: datetime | None) -> str | None:
    """The lab run id of a DAG run that has a report page: the id from its logical date (a
    nightly's: the night's), else the id that date gave before one lab run per night (a
    nightly re-run's ``nightly-<night>-<hash>``), else the id from its run id alone (runs made
    before lab run ids carried the logical date), else the run whose manifest says it was
    made by that DAG run (the DAG's own run, not the nightly's fan-out or fault run). None
    when none has a page."""
    candidates = [dag_lab_run_id(dag_id, airflow_run_id, logical_date),
                  dag_lab_run_id(dag_id, airflow_run_id, logical_date, per_night=False),
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
               logical_date_of: LogicalDateOf | None = None,
               authenticate: Authenticate | None = None) -> FastAPI:
    """The app (see the module). ``data_dir``: where the lab's data is, called at every
    request (default :func:`kafkalab.paths.data_dir`); ``logical_date_of``: how a DAG run's
    logical date is found (default :func:`airflow_logical_date`); ``authenticate``: who sent
    a request, checked before every route (default :func:`airflow_user`). No I/O."""

    def lab() -> LabData:
        if data_dir is not None:
            return LabData(data_dir())
        from kafkalab.paths import data_dir as default_data_dir

        return LabData(default_data_dir())

    find_date = logical_date_of or airflow_logical_date
    check = authenticate or airflow_user

    async def require_login(request: Request) -> None:
        await check(request)

    app = FastAPI(title="Kafka Latency Lab report", docs_url=None, redoc_url=None,
                  openapi_url=None, dependencies=[Depends(require_login)])
    app.add_middleware(SecurityHeaders)
    app.add_exception_handler(StarletteHTTPException, _http_error)

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
        return _serve(lab().validation_docs_dir, path, offline_html=True)

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


__all__ = ["DATA_DOCS_CSP", "DATA_DOCS_ROUTE", "PAGE_CSP", "REPORTS_ROUTE", "RETRY_PARAM",
           "RUNS_ROUTE", "Authenticate", "SecurityHeaders", "airflow_logical_date",
           "airflow_user", "create_app", "find_lab_run", "served_file"]
