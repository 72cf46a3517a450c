"""The report app behind Airflow's own login, with security headers, and the Data Docs served
offline (issue 26, "Access").

The app is the plugin's, mounted at /kafkalab as the api-server mounts it; the login is
checked by Airflow's own core-API dependency against tokens made by Airflow's own auth
manager (the simple auth manager's ``generate_jwt``), revoked tokens looked up in a
throw-away metadata DB that has Airflow's ``revoked_token`` table.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from kafkalab.airflow import data_docs
from kafkalab.airflow.report_app import DATA_DOCS_CSP, PAGE_CSP, create_app
from kafkalab.store import LabData
from kafkalab.urls import APP_PREFIX

RUN = "nightly-20261118T000000Z"
SIMPLE_AUTH_MANAGER = ("airflow.api_fastapi.auth.managers.simple.simple_auth_manager."
                       "SimpleAuthManager")
ROUTES = ["/kafkalab/", "/kafkalab/reports", "/kafkalab/reports/", "/kafkalab/reports/index.html",
          f"/kafkalab/reports/{RUN}/index.html", f"/kafkalab/reports/{RUN}/chart.svg",
          "/kafkalab/data-docs", "/kafkalab/data-docs/index.html",
          "/kafkalab/runs/nightly_latency_regression/scheduled__2026-11-18T00:00:00+00:00"]


@pytest.fixture
def auth_manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Airflow's simple auth manager, made as the api-server makes it, and a metadata DB of
    its own with the revoked-token table."""
    from airflow import settings
    from airflow.api_fastapi import app as api_app
    from airflow.models.revoked_token import RevokedToken
    from sqlalchemy import create_engine
    from sqlalchemy.orm import scoped_session, sessionmaker

    monkeypatch.setenv("AIRFLOW__CORE__AUTH_MANAGER", SIMPLE_AUTH_MANAGER)
    monkeypatch.setenv("AIRFLOW__API_AUTH__JWT_SECRET", "s" * 64)  # the signer is made once
    engine = create_engine(f"sqlite:///{tmp_path / 'airflow.db'}")
    RevokedToken.__table__.create(engine)  # type: ignore[attr-defined]
    monkeypatch.setattr(settings, "Session", scoped_session(sessionmaker(bind=engine)))
    monkeypatch.setattr(api_app._AuthManagerState, "instance", None)
    yield api_app.create_auth_manager()
    engine.dispose()


def _token(auth_manager: Any, username: str = "admin") -> str:
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    return str(auth_manager.generate_jwt(SimpleAuthManagerUser(username=username, role="admin")))


@pytest.fixture
def lab(tmp_path: Path) -> LabData:
    data = LabData(tmp_path / "data")
    data.reports_dir.mkdir(parents=True)
    data.report_index_path().write_text("<h1>overview</h1>")
    page = data.report_page_dir(RUN)
    page.mkdir()
    (page / "index.html").write_text("<h1>run</h1>")
    (page / "chart.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'>"
                                    "<script>alert(1)</script></svg>")
    data.validation_docs_dir.mkdir(parents=True)
    (data.validation_docs_dir / "index.html").write_text("<h1>data docs</h1>")
    return data


class Spy:
    """Records every read of the lab's data and every metadata-DB question of the app."""

    def __init__(self, lab: LabData) -> None:
        self.lab = lab
        self.calls: list[str] = []

    def data_dir(self) -> Path:
        self.calls.append("data_dir")
        return self.lab.root

    def logical_date(self, dag_id: str, run_id: str) -> datetime | None:
        self.calls.append("logical_date")
        return None


def _client(spy: Spy) -> TestClient:
    """The plugin's app with Airflow's own login check (the default)."""
    parent = FastAPI()
    parent.mount(APP_PREFIX, create_app(data_dir=spy.data_dir, logical_date_of=spy.logical_date))
    return TestClient(parent, follow_redirects=False)


def test_every_route_needs_an_airflow_login_checked_before_any_read(
        auth_manager: Any, lab: LabData) -> None:
    spy = Spy(lab)
    client = _client(spy)
    for url in ROUTES:
        response = client.get(url)
        assert response.status_code == 401, url
        assert response.json() == {"detail": "Not authenticated"}
        assert response.headers["www-authenticate"] == "Bearer"
    assert spy.calls == []  # no manifest, file or metadata DB was read
    # Airflow's own JWT: as a Bearer header (the REST API's way) or the UI's cookie
    bearer = {"Authorization": f"Bearer {_token(auth_manager)}"}
    answers = {url: client.get(url, headers=bearer).status_code for url in ROUTES}
    assert answers == {**dict.fromkeys(ROUTES, 200), "/kafkalab/": 307,
                       "/kafkalab/reports": 307, "/kafkalab/data-docs": 307,
                       ROUTES[-1]: 307}  # that DAG run's page is the run RUN's
    assert spy.calls.count("logical_date") == 1  # asked once: by the one logged-in request
    assert client.get("/kafkalab/reports/index.html", headers=bearer).text == "<h1>overview</h1>"
    cookie = TestClient(client.app, follow_redirects=False,
                        cookies={"_token": _token(auth_manager)})
    assert cookie.get("/kafkalab/reports/index.html").text == "<h1>overview</h1>"


def test_a_token_airflow_does_not_accept_is_refused(auth_manager: Any, lab: LabData) -> None:
    from airflow.api_fastapi.auth.tokens import JWTGenerator

    spy = Spy(lab)
    client = _client(spy)
    forged = JWTGenerator(secret_key="f" * 64, valid_for=3600,
                          audience="apache-airflow").generate({"sub": "admin", "role": "admin"})
    revoked = _token(auth_manager)
    auth_manager.revoke_token(revoked)
    for token in (forged, revoked, "not-a-jwt"):
        response = client.get("/kafkalab/reports/index.html",
                              headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 403 and response.json() == {"detail": "Invalid JWT token"}
    assert spy.calls == []


def test_a_browser_page_without_login_reloads_once_then_links_the_login(
        auth_manager: Any, lab: LabData) -> None:
    """A link followed inside a sandboxed Data Docs page sends no cookie; the 401 page
    reloads the same address once (that request carries it), then offers Airflow's login."""
    client = _client(Spy(lab))
    page = {"Sec-Fetch-Mode": "navigate", "Accept": "text/html"}
    first = client.get("/kafkalab/data-docs/validations/x.html?a=1", headers=page)
    assert first.status_code == 401 and first.headers["content-type"].startswith("text/html")
    assert "<meta http-equiv='refresh' content='0;url=?a=1&amp;kafkalab_login=retry'>" in first.text
    assert first.headers["content-security-policy"] == PAGE_CSP  # not sandboxed: it reloads
    again = client.get("/kafkalab/data-docs/validations/x.html?a=1&kafkalab_login=retry",
                       headers=page)
    assert again.status_code == 401 and "refresh" not in again.text
    assert "href='/auth/login?next=%2Fkafkalab%2Fdata-docs%2Fvalidations%2Fx.html'" in again.text
    # the same address with the cookie: the page
    cookie = TestClient(client.app, follow_redirects=False,
                        cookies={"_token": _token(auth_manager)})
    assert cookie.get("/kafkalab/data-docs/index.html?kafkalab_login=retry",
                      headers=page).text == "<h1>data docs</h1>"


def test_every_response_carries_the_security_headers(auth_manager: Any, lab: LabData) -> None:
    client = _client(Spy(lab))
    bearer = {"Authorization": f"Bearer {_token(auth_manager)}"}
    got = {url: client.get(url, headers=bearer) for url in (
        "/kafkalab/reports/index.html", f"/kafkalab/reports/{RUN}/chart.svg",
        "/kafkalab/data-docs/index.html", "/kafkalab/reports/missing.html", "/kafkalab/reports")}
    got["unauthenticated"] = client.get("/kafkalab/reports/index.html")
    for url, response in got.items():
        assert response.headers["x-content-type-options"] == "nosniff", url
        assert response.headers["x-frame-options"] == "SAMEORIGIN", url
        assert "frame-ancestors 'self'" in response.headers["content-security-policy"], url
    csp = {url: r.headers["content-security-policy"] for url, r in got.items()}
    assert csp["/kafkalab/reports/index.html"] == PAGE_CSP  # the report's inline script runs
    # an .svg with a script, opened alone: sandboxed, its script blocked (no 'self' script)
    assert csp[f"/kafkalab/reports/{RUN}/chart.svg"] == f"{PAGE_CSP}; sandbox"
    assert got[f"/kafkalab/reports/{RUN}/chart.svg"].headers["content-type"].startswith(
        "image/svg+xml")
    assert csp["/kafkalab/data-docs/index.html"] == DATA_DOCS_CSP
    assert DATA_DOCS_CSP.startswith("sandbox allow-scripts allow-popups")
    assert "allow-same-origin" not in DATA_DOCS_CSP and "'self'" not in DATA_DOCS_CSP.split(
        "frame-ancestors")[0]
    assert csp["unauthenticated"] == PAGE_CSP and got["unauthenticated"].status_code == 401


def _gx_template_tags() -> list[str]:
    """The ``<script src>``/``<link href>`` tags of Great Expectations' installed page
    templates that load from outside."""
    import great_expectations

    templates = Path(great_expectations.__file__).parent / "render" / "view" / "templates"
    tags = []
    for name in ("js_script_imports.j2", "page.j2", "index_page.j2", "page_minimal.j2"):
        text = (templates / name).read_text()
        tags += re.findall(r"<script [^>]*src=\"https?://[^>]*></script>", text)
        tags += re.findall(r"<link [^>]*href=\"https?://[^>]*>", text)
    assert len(tags) >= 20
    return tags


def test_every_cdn_asset_of_gx_is_vendored_or_dropped_and_the_copies_are_the_published_ones(
        ) -> None:
    urls = {re.search(r"(?:src|href)=\"([^\"]+)\"", t).group(1)  # type: ignore[union-attr]
            for t in _gx_template_tags()}
    known = {u for a in data_docs.ASSETS for u in a.urls} | set(data_docs.DROPPED_SCRIPTS)
    assert urls <= known, urls - known  # a new GX links something new: vendor it
    for asset in data_docs.ASSETS:
        assert data_docs.sha256_of(asset) == asset.sha256, asset.file
    # GX's own tags pin Popper and Bootstrap's script by hash: the vendored copies match
    for tag in _gx_template_tags():
        integrity = re.search(r"integrity=\"sha384-([^\"]+)\"", tag)
        if integrity:
            url = re.search(r"src=\"([^\"]+)\"", tag).group(1)  # type: ignore[union-attr]
            asset = next(a for a in data_docs.ASSETS if url in a.urls)
            digest = base64.b64encode(hashlib.sha384(data_docs.asset_bytes(asset)).digest())
            assert digest.decode() == integrity.group(1), asset.file


def test_data_docs_pages_are_served_self_contained(auth_manager: Any, lab: LabData) -> None:
    """A page with GX's own CDN tags, logo and favicon comes out with nothing to load from
    anywhere (the sandboxed page's own requests would carry no cookie)."""
    site = lab.validation_docs_dir
    (site / "static" / "images").mkdir(parents=True)
    (site / "static" / "images" / "logo-long.png").write_bytes(b"\x89PNG logo")
    (site / "static" / "images" / "favicon.ico").write_bytes(b"ico")
    page = site / "validations" / "suite" / "run.html"
    page.parent.mkdir(parents=True)
    logo = ("<img src='https://great-expectations-web-assets.s3.us-east-2.amazonaws.com/"
            "logo-long.png?d=20261127T112714Z'>")
    page.write_text("<html><head><link rel='shortcut icon' href='../../static/images/favicon.ico'>"
                    + "".join(_gx_template_tags()) + "<style>.x{background:url("
                    "'https://great-expectations-web-assets.s3.us-east-2.amazonaws.com/"
                    "full_logo_dark.png')}</style></head><body>" + logo
                    + "<p>expectation</p></body></html>")
    client = _client(Spy(lab))
    bearer = {"Authorization": f"Bearer {_token(auth_manager)}"}
    served = client.get("/kafkalab/data-docs/validations/suite/run.html", headers=bearer)
    assert served.status_code == 200 and served.headers["content-security-policy"] == DATA_DOCS_CSP
    html = served.text
    assert "<p>expectation</p>" in html
    assert not re.findall(r"(?:src|href)=[\"']?https?:", html)  # no external load left
    assert not re.findall(r"url\(['\"]?https?:", html)
    assert "jQuery v3.7.1" in html and "Bootstrap v4.3.1" in html and "bootstrapTable" in html
    assert "Font Awesome Free 6.6.0" in html and "data:font/woff2;base64," in html
    assert "url(../webfonts/" not in html  # every font inline or data:,
    assert "src='data:image/png;base64," + base64.b64encode(b"\x89PNG logo").decode() in html
    assert "href='data:image/vnd.microsoft.icon;base64," in html \
        or "href='data:image/x-icon;base64," in html
    assert "cdn.jsdelivr.net/npm/vega" not in html  # the charts' scripts: dropped
    # the file on disk is GX's own
    assert "https://code.jquery.com/jquery-3.7.1.min.js" in page.read_text()
