"""Where Airflow's api-server serves the lab's report and the GX Data Docs (the contract
between the report plugin and everything that links to it, such as alerts).

The plugin (``plugins/kafkalab_report_plugin.py``) mounts a FastAPI app at
:data:`APP_PREFIX` on the api-server; it serves ``<data_dir>/reports/`` under
:data:`REPORTS_PATH` and the Data Docs under :data:`DATA_DOCS_PATH`. Pure functions, except
:func:`airflow_base_url`, which reads Airflow's config when called (never at import).
"""

from __future__ import annotations

from urllib.parse import quote

APP_PREFIX = "/kafkalab"
"""The plugin's FastAPI app is mounted here on the api-server."""

REPORTS_PATH = f"{APP_PREFIX}/reports"
"""``<base_url>/kafkalab/reports/<run_id>/index.html`` is ``reports/<run_id>/index.html``."""

DATA_DOCS_PATH = f"{APP_PREFIX}/data-docs"
"""``<base_url>/kafkalab/data-docs/...`` is ``<data_dir>/validation/docs/...``."""

DEFAULT_BASE_URL = "http://localhost:8080"
"""Airflow's own default for ``[api] base_url``."""


def airflow_base_url() -> str:
    """Airflow's ``[api] base_url`` (how browsers reach the api-server), without a trailing
    slash; :data:`DEFAULT_BASE_URL` when Airflow or the option is missing."""
    try:
        from airflow.configuration import conf
    except ImportError:  # pragma: no cover - Airflow is part of the stack
        return DEFAULT_BASE_URL
    value = conf.get("api", "base_url", fallback=None) or DEFAULT_BASE_URL
    return str(value).rstrip("/")


def report_http_url(run_id: str | None = None, base_url: str | None = None) -> str:
    """The http link to a run's report page (or to the overview when ``run_id`` is None)
    as served by the plugin: ``<base_url>/kafkalab/reports/<run_id>/index.html``.
    ``base_url`` defaults to :func:`airflow_base_url`."""
    base = (base_url or airflow_base_url()).rstrip("/")
    if run_id is None:
        return f"{base}{REPORTS_PATH}/index.html"
    return f"{base}{REPORTS_PATH}/{quote(run_id, safe='')}/index.html"


__all__ = ["APP_PREFIX", "DATA_DOCS_PATH", "DEFAULT_BASE_URL", "REPORTS_PATH",
           "airflow_base_url", "report_http_url"]
