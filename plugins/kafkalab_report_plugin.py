"""Airflow plugin: the lab's report and the Great Expectations Data Docs, served by Airflow's
api-server, with a "Lab report" tab on every DAG run page.

Airflow 3.1+ loads this file from its plugins folder (the lab's launcher links it into
``<AIRFLOW_HOME>/plugins/``: :func:`kafkalab.airflow.launcher.install_plugins`). It mounts
:func:`kafkalab.airflow.report_app.create_app` at ``/kafkalab``
(:data:`kafkalab.urls.APP_PREFIX`) and adds two external views:

* "Lab report" (destination ``dag_run``): a tab of the DAG run page that shows that run's
  report page (``kafkalab/runs/{DAG_ID}/{RUN_ID}`` redirects to it);
* "Lab reports" (destination ``nav``, under Browse): the overview of every run.

Both views open inside the UI's same-origin ``<iframe>``. Every route of the app is behind
Airflow's own login (the UI's token cookie, or ``Authorization: Bearer <jwt>`` as for the
REST API; :func:`kafkalab.airflow.report_app.airflow_user`), which Airflow does not apply to
plugin apps by itself; every response carries ``nosniff``, frame rules and a CSP (sandboxed
for the Data Docs). See docs/security.md.

The static report under ``<data_dir>/reports/`` still opens offline (``file://``); this is
the same file over http, which is what the alerts link to
(:func:`kafkalab.urls.report_http_url`). Importing this module does no I/O:
the data directory is read at request time, and Airflow's auth modules are imported at the
first request.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from kafkalab.airflow.report_app import RUNS_ROUTE, create_app
from kafkalab.urls import APP_PREFIX, REPORTS_PATH

_APP_PATH = APP_PREFIX.lstrip("/")
"""``kafkalab``: external views' hrefs are relative to the UI's base URL (no leading slash)."""


class KafkaLabReportPlugin(AirflowPlugin):
    """The report app on the api-server and its links in the UI."""

    name = "kafkalab_report"
    # Airflow reads these class attributes (declared so in AirflowPlugin): hence no ClassVar.
    fastapi_apps = [  # noqa: RUF012
        {"app": create_app(), "url_prefix": APP_PREFIX, "name": "Kafka Latency Lab report"},
    ]
    external_views = [  # noqa: RUF012
        {"name": "Lab report", "href": f"{_APP_PATH}{RUNS_ROUTE}/{{DAG_ID}}/{{RUN_ID}}",
         "destination": "dag_run", "url_route": "kafkalab-report"},
        {"name": "Lab reports", "href": f"{REPORTS_PATH.lstrip('/')}/index.html",
         "destination": "nav", "category": "browse", "url_route": "kafkalab-reports"},
    ]
