"""The report app of the Airflow plugin, mounted at /kafkalab as the api-server mounts it,
against a temporary data dir (requests through FastAPI's TestClient)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from kafkalab.airflow.report_app import create_app, served_file
from kafkalab.airflow.run_ids import dag_lab_run_id
from kafkalab.store import LabData
from kafkalab.urls import APP_PREFIX, report_http_url

NIGHT = datetime(2026, 11, 18, tzinfo=UTC)
TRIGGERED = "manual__2026-11-22T05:01:02.123456+00:00"


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LabData:
    """A data dir with the overview, one run's page and the Data Docs; a secret beside it."""
    data = LabData(tmp_path / "data")
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(data.root))
    (tmp_path / "secret.txt").write_text("not served")
    data.reports_dir.mkdir(parents=True)
    data.report_index_path().write_text("<h1>overview</h1>")
    run_id = dag_lab_run_id("nightly_latency_regression", TRIGGERED, NIGHT)
    page = data.report_page_dir(run_id)
    page.mkdir()
    (page / "index.html").write_text(f"<h1>{run_id}</h1><img src='chart.svg'>")
    (page / "chart.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    data.validation_docs_dir.mkdir(parents=True)
    (data.validation_docs_dir / "index.html").write_text("<h1>data docs</h1>")
    return data


async def _anyone(request: Request) -> str:
    """A login check that lets every request in (Airflow's own: test_report_app_access.py)."""
    return "tester"


def _client(dates: dict[tuple[str, str], datetime] | None = None) -> TestClient:
    """The app mounted at /kafkalab (as the plugin has the api-server do); the logical dates
    the metadata DB would give."""
    parent = FastAPI()
    parent.mount(APP_PREFIX, create_app(logical_date_of=lambda d, r: (dates or {}).get((d, r)),
                                        authenticate=_anyone))
    return TestClient(parent, follow_redirects=False)


def test_serves_the_overview_a_run_page_and_its_files(lab: LabData) -> None:
    client = _client()
    overview = client.get("/kafkalab/reports/index.html")
    assert overview.status_code == 200 and overview.text == "<h1>overview</h1>"
    assert overview.headers["content-type"].startswith("text/html")
    assert client.get("/kafkalab/reports/").text == "<h1>overview</h1>"
    run_id = dag_lab_run_id("nightly_latency_regression", TRIGGERED, NIGHT)
    page = client.get(f"/kafkalab/reports/{run_id}/index.html")
    assert page.status_code == 200 and run_id in page.text
    assert client.get(f"/kafkalab/reports/{run_id}/").text == page.text
    svg = client.get(f"/kafkalab/reports/{run_id}/chart.svg")
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg")
    # a folder without its slash: redirected, so the page's relative links resolve
    moved = client.get(f"/kafkalab/reports/{run_id}")
    assert moved.status_code == 307 and moved.headers["location"] == f"./{run_id}/"
    assert client.get("/kafkalab/").headers["location"] == "/kafkalab/reports/index.html"
    assert client.get("/kafkalab/reports").headers["location"] == "./reports/"
    docs = client.get("/kafkalab/data-docs/index.html")
    assert docs.status_code == 200 and docs.text == "<h1>data docs</h1>"
    # the alerts' link is this URL
    assert report_http_url(run_id, "http://127.0.0.1:8080").endswith(
        f"/kafkalab/reports/{run_id}/index.html")


def test_a_missing_run_is_404(lab: LabData) -> None:
    client = _client()
    assert client.get("/kafkalab/reports/nightly-20990101T000000Z/index.html").status_code == 404
    assert client.get("/kafkalab/reports/nightly-20990101T000000Z/").status_code == 404
    assert client.get("/kafkalab/data-docs/validations/none.html").status_code == 404


def test_no_path_leaves_the_served_folders(lab: LabData, tmp_path: Path) -> None:
    client = _client()
    for url in ("/kafkalab/reports/..%2F..%2Fsecret.txt", "/kafkalab/reports/%2e%2e/%2e%2e/secret.txt",
                "/kafkalab/reports/..%5C..%5Csecret.txt", "/kafkalab/data-docs/%2e%2e/%2e%2e/secret.txt",
                f"/kafkalab/reports/{tmp_path}/secret.txt"):
        response = client.get(url)
        assert response.status_code == 404, url
        assert "not served" not in response.text
    (lab.reports_dir / "out").symlink_to(tmp_path)  # a symlink pointing out of reports/
    assert client.get("/kafkalab/reports/out/secret.txt").status_code == 404
    assert served_file(lab.reports_dir, "../secret.txt") is None
    assert served_file(lab.reports_dir, "") == lab.report_index_path()


def test_the_data_dir_is_read_at_request_time(lab: LabData, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    client = _client()  # built before the data dir moves
    other = LabData(tmp_path / "other")
    other.reports_dir.mkdir(parents=True)
    other.report_index_path().write_text("<h1>the other lab</h1>")
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(other.root))
    assert client.get("/kafkalab/reports/index.html").text == "<h1>the other lab</h1>"


def test_a_dag_run_redirects_to_its_lab_run_page(lab: LabData) -> None:
    """The DAG run page's "Lab report" tab: the lab run id comes from the run's logical date
    (the metadata DB's); without one, from the manifest that DAG run wrote."""
    dag = "nightly_latency_regression"
    run_id = dag_lab_run_id(dag, TRIGGERED, NIGHT)
    client = _client({(dag, TRIGGERED): NIGHT})
    moved = client.get(f"/kafkalab/runs/{dag}/manual__2026-11-22T05%3A01%3A02.123456%2B00%3A00")
    assert moved.status_code == 307
    assert moved.headers["location"] == f"../../reports/{run_id}/index.html"
    # no metadata DB: the manifest's command names the DAG run
    lab.write_manifest({"run_id": run_id, "command": f"airflow dag {dag} run {TRIGGERED}",
                        "status": "complete"})
    moved = _client().get(f"/kafkalab/runs/{dag}/{TRIGGERED}")
    assert moved.headers["location"] == f"../../reports/{run_id}/index.html"
    # a run without a page yet: 404, with a link to the overview
    missing = client.get(f"/kafkalab/runs/{dag}/scheduled__2026-11-23T00:00:00+00:00")
    assert missing.status_code == 404
    assert "nightly-20261123T000000Z" in missing.text and "../../reports/index.html" in missing.text


def test_every_dag_run_of_a_night_redirects_to_the_nights_one_lab_run(lab: LabData) -> None:
    """One lab run per night: a re-run of the night (another Airflow run id, the same logical
    date) opens the same page; a night whose page was made before that rule
    (``nightly-<night>-<hash>``) is still found; an experiment's two triggers are two runs."""
    dag = "nightly_latency_regression"
    again = "manual__2026-11-29T19:40:00.654321+00:00"
    client = _client({(dag, TRIGGERED): NIGHT, (dag, again): NIGHT})
    for airflow_run_id in (TRIGGERED, again):
        moved = client.get(f"/kafkalab/runs/{dag}/{airflow_run_id}")
        assert moved.status_code == 307
        assert moved.headers["location"] == "../../reports/nightly-20261118T000000Z/index.html"
    older = datetime(2026, 11, 17, tzinfo=UTC)
    legacy = dag_lab_run_id(dag, TRIGGERED, older, per_night=False)
    assert legacy.startswith("nightly-20261117T000000Z-")
    (lab.report_page_dir(legacy)).mkdir()
    (lab.report_page_dir(legacy) / "index.html").write_text("legacy")
    moved = _client({(dag, TRIGGERED): older}).get(f"/kafkalab/runs/{dag}/{TRIGGERED}")
    assert moved.headers["location"] == f"../../reports/{legacy}/index.html"
    first = dag_lab_run_id("latency_experiment", TRIGGERED, NIGHT)
    assert first != dag_lab_run_id("latency_experiment", again, NIGHT)


def test_the_plugin_mounts_the_app_and_links_the_dag_run_page() -> None:
    """As Airflow's plugin loader imports the file from its plugins folder."""
    import importlib.util

    from kafkalab.paths import plugins_dir

    path = plugins_dir() / "kafkalab_report_plugin.py"
    spec = importlib.util.spec_from_file_location("kafkalab_report_plugin_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    plugin = module.KafkaLabReportPlugin
    (app,) = plugin.fastapi_apps
    assert app["url_prefix"] == "/kafkalab" and isinstance(app["app"], FastAPI)
    views = {v["destination"]: v for v in plugin.external_views}
    assert views["dag_run"]["href"] == "kafkalab/runs/{DAG_ID}/{RUN_ID}"  # base-URL relative
    assert views["dag_run"]["name"] == "Lab report" and views["dag_run"]["url_route"]
    assert views["nav"]["href"] == "kafkalab/reports/index.html"
