"""The lab's Airflow Connections as typed settings (Airflow's Connection class, no Airflow
services)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kafkalab.airflow.connections import (
    AlertWebhook,
    AlertWebhookConnection,
    ClusterConnection,
)
from kafkalab.errors import ConfigError
from kafkalab.store import LabData


@pytest.fixture
def connection(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Airflow's Connection class, imported with a throw-away AIRFLOW_HOME."""
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "airflow-home"))
    from airflow.sdk import Connection

    return Connection


def test_webhook_from_connection_forms(connection: Any) -> None:
    json_form = connection(conn_id="w", conn_type="http", host="127.0.0.1", port=8123,
                           schema="http", extra='{"endpoint": "/hook", "format": "generic"}')
    assert AlertWebhook.from_connection(json_form) == AlertWebhook(
        "http://127.0.0.1:8123/hook", "generic", None)
    uri_form = connection(conn_id="w", uri="http://127.0.0.1:8123/hook")  # path lands in schema
    assert AlertWebhook.from_connection(uri_form).url == "http://127.0.0.1:8123/hook"
    slack = connection(conn_id="w", conn_type="http", host="hooks.slack.com", schema="https",
                       password="/services/T0/B0/XYZ")
    assert AlertWebhook.from_connection(slack) == AlertWebhook(
        "https://hooks.slack.com/services/T0/B0/XYZ", "slack", None)
    whole = connection(conn_id="w", conn_type="http",
                       extra='{"webhook_url": "https://example.invalid/x", "report_base_url": "https://r"}')
    assert AlertWebhook.from_connection(whole) == AlertWebhook(
        "https://example.invalid/x", "slack", "https://r")
    no_host = connection(conn_id="w", conn_type="http")
    assert AlertWebhook.from_connection(no_host).url == ""


def test_webhook_format_is_checked(connection: Any) -> None:
    bad = connection(conn_id="hook", conn_type="http", host="h", extra='{"format": "teams"}')
    with pytest.raises(ConfigError, match=r"'hook': extra.format must be 'slack' or 'generic'"):
        AlertWebhook.from_connection(bad)


def test_webhook_settings_none_without_connection_or_url(
        monkeypatch: pytest.MonkeyPatch, connection: Any) -> None:
    monkeypatch.setattr(AlertWebhookConnection, "get_connection", lambda self: None)
    assert AlertWebhookConnection().settings() is None
    monkeypatch.setattr(AlertWebhookConnection, "get_connection",
                        lambda self: connection(conn_id=self.conn_id, conn_type="http"))
    assert AlertWebhookConnection().settings() is None  # no host: no URL
    monkeypatch.setattr(AlertWebhookConnection, "get_connection",
                        lambda self: connection(conn_id=self.conn_id, uri="https://h/p"))
    assert AlertWebhookConnection("x").settings() == AlertWebhook("https://h/p", "slack", None)


def test_report_url(tmp_path: Path) -> None:
    lab = LabData(tmp_path / "data")
    assert AlertWebhook("u", "slack", "https://r/reports/").report_url("nightly-1") == \
        "https://r/reports/nightly-1/index.html"
    assert AlertWebhook("u", "slack").report_url("nightly-1", lab) == \
        (lab.reports_dir / "nightly-1" / "index.html").as_uri()


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
