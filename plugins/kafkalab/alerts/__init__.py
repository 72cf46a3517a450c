"""Drift, recovery and run-failure alerts through Airflow's providers (Slack incoming
webhook, or a generic JSON webhook over HTTP).

One role per module:

| module | role |
|---|---|
| :mod:`kafkalab.alerts.bodies` | the message bodies (Slack Block Kit, generic ``kafkalab.alert/v1``) |
| :mod:`kafkalab.alerts.delivery` | :func:`send_alert`: through ``SlackWebhookHook`` or ``HttpHook``, failures as :class:`AlertError` |
| :mod:`kafkalab.alerts.http_hook` | ``AlertHttpHook``: ``HttpHook`` without the lab's ``extra`` keys as headers (imported on delivery) |
| :mod:`kafkalab.alerts.webhook` | :class:`AlertWebhook`: the alert Connection's settings as typed data |
| :mod:`kafkalab.alerts.state` | the de-duplication state (``alerts/state.json``, via :mod:`kafkalab.store`) |
| :mod:`kafkalab.alerts.plan` | :func:`plan_alerts`: what to announce (pure) |
| :mod:`kafkalab.alerts.notify` | the entry points :func:`alert_on_drift`, :func:`alert_run_failed`, :func:`alert_on_fault_validation` |

Webhook URLs are secrets: :mod:`kafkalab.redact` gives their printable form and scrubs them
out of messages.

Severities (:data:`SEVERITIES`, lowest first): ``info`` (recovery), ``warning`` (drift),
``error`` (failed run, failed validation), ``critical`` (:data:`HIGHEST_SEVERITY`: acked
messages lost under the durability profile).

Where alerts go is the Airflow Connection ``kafkalab_alert_webhook``
(:class:`kafkalab.airflow.connections.AlertWebhookConnection`, whose settings are
:class:`kafkalab.alerts.webhook.AlertWebhook`). Body and state schemas and
the Connection's fields are documented in ``docs/drift-and-alerts.md``.
"""

from kafkalab.alerts.bodies import (
    DEFAULT_SEVERITY,
    GENERIC_SCHEMA,
    HIGHEST_SEVERITY,
    MAX_ERROR_CHARS,
    MAX_SLACK_DRIFT_BLOCKS,
    SEVERITIES,
    AlertFormat,
    AlertKind,
    Severity,
    build_body,
    build_generic_body,
    build_slack_body,
)
from kafkalab.alerts.delivery import send_alert
from kafkalab.alerts.notify import (
    alert_on_drift,
    alert_on_fault_validation,
    alert_run_failed,
    durability_broken,
    validation_severity,
)
from kafkalab.alerts.plan import DEFAULT_WORSEN_MARGIN_PCT, plan_alerts
from kafkalab.alerts.state import (
    STATE_SCHEMA,
    accept_drift,
    empty_state,
    load_state,
    save_state,
    state_path,
)
from kafkalab.cluster.descriptor import EMULATOR_LABEL
from kafkalab.errors import AlertError
from kafkalab.redact import redact_url, scrub_url

__all__ = [
    "DEFAULT_SEVERITY",
    "DEFAULT_WORSEN_MARGIN_PCT",
    "EMULATOR_LABEL",
    "GENERIC_SCHEMA",
    "HIGHEST_SEVERITY",
    "MAX_ERROR_CHARS",
    "MAX_SLACK_DRIFT_BLOCKS",
    "SEVERITIES",
    "STATE_SCHEMA",
    "AlertError",
    "AlertFormat",
    "AlertKind",
    "Severity",
    "accept_drift",
    "alert_on_drift",
    "alert_on_fault_validation",
    "alert_run_failed",
    "build_body",
    "build_generic_body",
    "build_slack_body",
    "durability_broken",
    "empty_state",
    "load_state",
    "plan_alerts",
    "redact_url",
    "save_state",
    "scrub_url",
    "send_alert",
    "state_path",
    "validation_severity",
]
