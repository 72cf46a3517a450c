"""The lab's Airflow Connections as typed settings (Airflow's Connection class, no Airflow
services)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafkalab.airflow.connections import AlertWebhookConnection, ClusterConnection
from kafkalab.alerts.webhook import AlertWebhook
from kafkalab.errors import ConfigError


@pytest.fixture
def connection(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Airflow's Connection class, imported with a throw-away AIRFLOW_HOME."""
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "airflow-home"))
    from airflow.sdk import Connection

    return Connection


def test_webhook_from_connection_forms(connection: Any) -> None:
    slack = connection(conn_id="w", conn_type="slackwebhook", password="T0/B0/XYZ",
                       extra='{"report_base_url": "https://r"}')
    assert AlertWebhook.from_connection(slack) == AlertWebhook(
        "https://hooks.slack.com/services/T0/B0/XYZ", "slack", "https://r", "w", "slackwebhook")
    whole = connection(conn_id="w", conn_type="slackwebhook",
                       password="https://hooks.example/services/T0/B0/XYZ")
    assert AlertWebhook.from_connection(whole).url == "https://hooks.example/services/T0/B0/XYZ"
    local = connection(conn_id="w", conn_type="slackwebhook", host="http://127.0.0.1:8123",
                       password="/services/T0/B0/XYZ")
    assert AlertWebhook.from_connection(local).url == "http://127.0.0.1:8123/services/T0/B0/XYZ"
    assert "XYZ" not in repr(AlertWebhook.from_connection(local))  # the URL is not in the repr
    assert AlertWebhook.from_connection(local).where == (
        "http://127.0.0.1:8123/*** (Connection 'w')")
    json_form = connection(conn_id="w", conn_type="http", host="127.0.0.1", port=8123,
                           schema="http", extra='{"endpoint": "/hook", "format": "generic"}')
    assert AlertWebhook.from_connection(json_form) == AlertWebhook(
        "http://127.0.0.1:8123/hook", "generic", None, "w", "http", "/hook")
    uri_form = connection(conn_id="w", uri="http://127.0.0.1:8123/http?endpoint=%2Fhook")
    assert AlertWebhook.from_connection(uri_form) == AlertWebhook(
        "http://127.0.0.1:8123/hook", "generic", None, "w", "http", "/hook")
    slack_body = connection(conn_id="w", conn_type="http", host="https://chat.example/hooks/x",
                            extra='{"format": "slack", "Authorization": "Bearer tok-123"}')
    hook = AlertWebhook.from_connection(slack_body)
    assert (hook.url, hook.fmt, hook.endpoint) == ("https://chat.example/hooks/x", "slack", None)
    assert hook.secrets == ("Bearer tok-123",)
    no_host = connection(conn_id="w", conn_type="http")
    assert AlertWebhook.from_connection(no_host).url == ""


@pytest.mark.parametrize(("fields", "message"), [
    ({"conn_type": "http", "host": "h", "extra": '{"format": "teams"}'},
     r"'hook': extra.format must be 'slack' or 'generic', got 'teams'"),
    ({"conn_type": "slackwebhook", "password": "T/B/X", "extra": '{"format": "generic"}'},
     r"'slackwebhook' Connection posts Slack bodies"),
    ({"conn_type": "generic", "host": "h"}, r"conn_type must be 'slackwebhook' .* or 'http'"),
    # The earlier forms, each refused with what to write instead:
    ({"conn_type": "http", "extra": '{"webhook_url": "https://example.invalid/x"}'},
     r"extra.webhook_url is no longer read"),
    ({"conn_type": "http", "host": "hooks.slack.com", "schema": "https",
      "password": "/services/T0/B0/XYZ"}, r"password but no login.*'slackwebhook'"),
    ({"uri": "http://127.0.0.1:8123/hook"}, r"schema is not http or https but a value of 4 "),
    # a Slack-style path in the URI form: the token lands in schema and is never quoted
    ({"uri": "http://hooks.example.com/services/T0/B0/XYZ"},
     r"schema is not http or https .* not shown"),
])
def test_webhook_connection_errors(connection: Any, fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as ei:
        AlertWebhook.from_connection(connection(conn_id="hook", **fields))
    assert "XYZ" not in str(ei.value)


def test_webhook_settings_none_without_connection_or_target(
        monkeypatch: pytest.MonkeyPatch, connection: Any) -> None:
    monkeypatch.setattr(AlertWebhookConnection, "get_connection", lambda self: None)
    assert AlertWebhookConnection().settings() is None
    monkeypatch.setattr(AlertWebhookConnection, "get_connection",
                        lambda self: connection(conn_id=self.conn_id, conn_type="http"))
    assert AlertWebhookConnection().settings() is None  # no host: no target
    monkeypatch.setattr(AlertWebhookConnection, "get_connection",
                        lambda self: connection(conn_id=self.conn_id, conn_type="slackwebhook"))
    assert AlertWebhookConnection().settings() is None  # no password: no target
    monkeypatch.setattr(AlertWebhookConnection, "get_connection",
                        lambda self: connection(conn_id=self.conn_id, uri="http://h/http"))
    assert AlertWebhookConnection("x").settings() == AlertWebhook(
        "http://h", "generic", None, "x", "http")


def test_webhook_settings_from_an_environment_variable(monkeypatch: pytest.MonkeyPatch,
                                                       connection: Any) -> None:
    """Outside a task the Connection comes from ``AIRFLOW_CONN_<ID>``, JSON or URI form."""
    monkeypatch.setenv("AIRFLOW_CONN_KL_ENV_JSON", json.dumps(
        {"conn_type": "slackwebhook", "password": "T0/B0/XYZ"}))
    monkeypatch.setenv("AIRFLOW_CONN_KL_ENV_URI",
                       "http://127.0.0.1:8123/http?endpoint=%2Fhook&format=slack")
    assert AlertWebhookConnection("kl_env_json").settings() == AlertWebhook(
        "https://hooks.slack.com/services/T0/B0/XYZ", "slack", None, "kl_env_json",
        "slackwebhook")
    assert AlertWebhookConnection("kl_env_uri").settings() == AlertWebhook(
        "http://127.0.0.1:8123/hook", "slack", None, "kl_env_uri", "http", "/hook")
    assert AlertWebhookConnection("kl_env_missing").settings() is None


def test_report_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """The report link is http: the Connection's report_base_url, else the api-server's
    route of the report plugin under Airflow's [api] base_url."""
    assert AlertWebhook("u", "slack", "https://r/reports/").report_url("nightly-1") == \
        "https://r/reports/nightly-1/index.html"
    assert AlertWebhook("u", "slack", "file:///srv/lab/reports").report_url("n-1") == \
        "file:///srv/lab/reports/n-1/index.html"  # only when so configured
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "http://airflow.example:8080/")
    assert AlertWebhook("u", "slack").report_url("nightly-1") == \
        "http://airflow.example:8080/kafkalab/reports/nightly-1/index.html"
    monkeypatch.delenv("AIRFLOW__API__BASE_URL")
    assert AlertWebhook("u", "slack").report_url("nightly-1").startswith("http://")


def test_cluster_descriptor_path_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                       connection: Any) -> None:
    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path / "lab"))
    monkeypatch.setattr(ClusterConnection, "get_connection", lambda self: None)
    assert ClusterConnection().descriptor_path() == tmp_path / "lab" / "cluster.yaml"
    assert ClusterConnection().descriptor_path("/x/given.yaml") == Path("/x/given.yaml")
    conn = connection(conn_id="kafkalab_cluster", conn_type="generic",
                      extra='{"descriptor_path": "/etc/kafkalab/prod.yaml"}')
    monkeypatch.setattr(ClusterConnection, "get_connection", lambda self: conn)
    assert ClusterConnection().descriptor_path() == Path("/etc/kafkalab/prod.yaml")
    assert ClusterConnection().descriptor_path("/x/given.yaml") == Path("/x/given.yaml")
