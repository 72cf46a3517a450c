"""The DAG failure callback (no Airflow services: the webhook lookup and delivery are stubbed)."""

from __future__ import annotations

from typing import Any

import pytest

import kafkalab.alerts
from kafkalab.airflow.callbacks import on_failure_alert
from kafkalab.airflow.connections import AlertWebhook, AlertWebhookConnection


class _Named:
    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


def test_on_failure_alert_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AlertWebhookConnection, "get_connection", lambda self: None)

    class Broken:
        @property
        def run_id(self) -> str:
            raise RuntimeError("boom")

    on_failure_alert({"dag_run": Broken(), "reason": "task_failure"})  # must not raise
    on_failure_alert({})

    def failing_lookup(self: AlertWebhookConnection) -> None:
        raise RuntimeError("secrets backend down")

    monkeypatch.setattr(AlertWebhookConnection, "get_connection", failing_lookup)
    on_failure_alert({"reason": "task_failure"})


def test_on_failure_alert_posts_run_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[dict[str, Any]] = []

    def record(url: str, dag_id: str | None, run_id: str | None, error: str,
               **kwargs: Any) -> dict[str, Any]:
        sent.append({"url": url, "dag_id": dag_id, "run_id": run_id, "error": error, **kwargs})
        return {}

    hook = AlertWebhook("https://hooks.example/T/X", "generic", "https://reports.example")
    monkeypatch.setattr(AlertWebhookConnection, "settings", lambda self: hook)
    monkeypatch.setattr(kafkalab.alerts, "alert_run_failed", record)
    on_failure_alert({
        "dag": _Named(dag_id="nightly_latency_regression"),
        "dag_run": _Named(run_id="scheduled__2026-11-21T00:00:00+00:00"),
        "task_instance": _Named(task_id="measure_cell"),
        "reason": "task_failure",
        "exception": ValueError("broker gone"),
    })
    assert sent == [{
        "url": "https://hooks.example/T/X", "dag_id": "nightly_latency_regression",
        "run_id": "nightly-20261121T000000Z",
        "error": "task_failure; task measure_cell failed; ValueError: broker gone",
        "fmt": "generic",
        "report_url": "https://reports.example/nightly-20261121T000000Z/index.html",
    }]
