"""Alerts delivered through Airflow's providers to a real HTTP server on 127.0.0.1.

The Connection ``kafkalab_alert_webhook`` is defined as outside a task, through
``AIRFLOW_CONN_<ID>`` (JSON form), once as ``slackwebhook`` (``SlackWebhookHook``, the Slack
body) and once as ``http`` (``HttpHook``, the generic ``kafkalab.alert/v1`` body). A drift
alert, a recovery and a failure alert go through the real hooks, from the lab's own entry
points (the DAG tasks' ``send_alerts``, the DAG callback ``on_failure_alert``); the
receiver's JSON is checked. A 500 answer and a refused connection become one ``AlertError``
line without the token.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kafkalab import alerts, drift
from kafkalab.airflow.connections import AlertWebhookConnection
from kafkalab.alerts.webhook import ALERT_CONN_ID
from tests.webhook import Receiver

TOKEN = "T0PROV/B0PROV/xoxbProviderToken987"
AUTH = "Bearer secret-bearer-4711"
DAG = "latency_experiment"
AIRFLOW_RUN = "manual__2026-11-22T01:02:03+00:00"
LAB_RUN = "experiment-20261122T010203Z"
BASE_URL = "http://127.0.0.1:8080"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(autouse=True)
def _lab(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A throw-away data directory and Airflow home; Airflow's ``[api] base_url``; loopback
    reached without a proxy."""
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "airflow-home"))
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", BASE_URL)
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(var, "127.0.0.1,localhost")


def slack_connection(monkeypatch: pytest.MonkeyPatch, port: int) -> None:
    """``kafkalab_alert_webhook`` as a Slack incoming webhook on the receiver: the token
    path is the password."""
    monkeypatch.setenv(f"AIRFLOW_CONN_{ALERT_CONN_ID.upper()}", json.dumps({
        "conn_type": "slackwebhook", "host": f"http://127.0.0.1:{port}",
        "password": f"/services/{TOKEN}"}))


def http_connection(monkeypatch: pytest.MonkeyPatch, port: int) -> None:
    """``kafkalab_alert_webhook`` as a generic JSON webhook on the receiver: the token in the
    endpoint's path and an ``Authorization`` header (an extra key, HttpHook's way)."""
    monkeypatch.setenv(f"AIRFLOW_CONN_{ALERT_CONN_ID.upper()}", json.dumps({
        "conn_type": "http", "host": "127.0.0.1", "port": port, "schema": "http",
        "extra": {"endpoint": f"/hooks/{TOKEN}", "Authorization": AUTH}}))


def _record(metric: str, *, run_id: str = LAB_RUN, is_drift: bool = True,
            alert_status: str = "drifting", baseline: float = 40.0, latest: float = 80.0,
            mad: float = 2.0, ci: bool = True) -> dict[str, Any]:
    key = f"latency|confluent-kafka|1kb|raw|1024|latency|smoke|kafka09|0.9.0.1|1|400|{metric}"
    return {
        "run_id": run_id, "series_key": key, "scenario": "latency", "client": "confluent-kafka",
        "payload": "1kb", "payload_encoding": "raw", "payload_bytes": 1024,
        "profile": "latency", "workload": "smoke", "cluster_flavor": "kafka09",
        "broker_version": "0.9.0.1", "broker_count": 1, "planned_messages": 400,
        "metric": metric, "direction": "higher_is_worse", "baseline_value": baseline,
        "baseline_mad": mad, "baseline_runs": 5, "latest_value": latest,
        "change_pct": (latest - baseline) / baseline * 100 if baseline else None,
        "robust_z": 13.5,
        "confidence": 0.99, "latest_ci_low": latest - 3 if ci else None,
        "latest_ci_high": latest + 3 if ci else None,
        "baseline_ci_low": baseline - 1 if ci else None,
        "baseline_ci_high": baseline + 1 if ci else None,
        "rule": ("mad+ci" if ci else "mad") if baseline else "zero_baseline",
        "is_drift": is_drift, "verdict": "drift" if is_drift else "ok",
        "alert_status": alert_status, "good_runs": 0 if is_drift else 3,
        "alert_since_run_id": run_id if is_drift else None, "broker_is_emulator": False,
    }


def _write_drifts(run_id: str, records: list[dict[str, Any]]) -> None:
    from kafkalab.store import LabData

    drift.write_drift(pd.DataFrame(records), LabData().root, run_id)


def _drift_then_recovery(receiver: Receiver) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run with two drifts (p99 in ms, loss in %) announced by the DAG task
    ``send_alerts``, then a run that completes the p99 recovery: both bodies received."""
    from kafkalab.airflow import tasks

    _write_drifts(LAB_RUN, [_record("e2e_latency_ms_p99"),
                            _record("lost_count", baseline=0.0, latest=3.0, mad=0.0, ci=False)])
    out = tasks.send_alerts(LAB_RUN, dag_id=DAG)
    assert (out["sent"], out["drifts"], out["recoveries"]) == (True, 2, 0)
    later = "experiment-20261123T010203Z"
    _write_drifts(later, [_record("e2e_latency_ms_p99", run_id=later, is_drift=False,
                                  alert_status="recovered", latest=41.0)])
    out = tasks.send_alerts(later, dag_id=DAG)
    assert (out["sent"], out["drifts"], out["recoveries"]) == (True, 0, 1)
    assert len(receiver.posts) == 2
    return receiver.posts[0], receiver.posts[1]


def _fail_a_task() -> dict[str, Any]:
    """A run whose mapped ``measure_cell[2]`` failed first (recorded by the tasks' failure
    callback), then the watcher; returns the context Airflow hands the DAG callback."""
    from kafkalab.airflow.callbacks import record_task_failure

    class Named:
        def __init__(self, **attrs: Any) -> None:
            self.__dict__.update(attrs)

    def ctx(task_id: str, map_index: int, exc: Exception) -> dict[str, Any]:
        return {"dag": Named(dag_id=DAG), "dag_run": Named(run_id=AIRFLOW_RUN),
                "task_instance": Named(task_id=task_id, map_index=map_index, try_number=2),
                "exception": exc}

    record_task_failure(ctx("measure_cell", 2, RuntimeError("broker 127.0.0.1:9092 gone")))
    record_task_failure(ctx("verify_outcome", -1, RuntimeError("an upstream task failed")))
    return {**ctx("verify_outcome", -1, RuntimeError("an upstream task failed")),
            "reason": "task_failure"}


LOG_URL = (f"{BASE_URL}/dags/{DAG}/runs/manual__2026-11-22T01%3A02%3A03%2B00%3A00"
           "/tasks/measure_cell/mapped/2?try_number=2")
REPORT_URL = f"{BASE_URL}/kafkalab/reports/{LAB_RUN}/index.html"


def _mrkdwn(body: dict[str, Any]) -> str:
    """Every text of a Slack body's blocks, joined."""
    texts = []
    for block in body["blocks"]:
        if isinstance(block.get("text"), dict):
            texts.append(block["text"]["text"])
        texts += [f["text"] for f in block.get("fields", [])]
        texts += [e["text"] for e in block.get("elements", [])]
    return "\n".join(texts)


# --------------------------------------------------------------------------- Slack


def test_slack_drift_recovery_and_failure_through_slack_webhook_hook(
        monkeypatch: pytest.MonkeyPatch, receiver: Receiver) -> None:
    slack_connection(monkeypatch, receiver.port)
    hook = AlertWebhookConnection().settings()
    assert hook is not None and (hook.conn_type, hook.fmt) == ("slackwebhook", "slack")

    drift_post, recovery_post = _drift_then_recovery(receiver)
    assert drift_post["path"] == f"/services/{TOKEN}"
    assert "slackclient" in drift_post["headers"]["User-Agent"]  # slack_sdk, via the hook
    body = drift_post["body"]
    assert set(body) == {"text", "blocks"}
    text = _mrkdwn(body)
    # Values with units, the baseline median and its interval, the http report link.
    assert "80.0 ms vs baseline 40.0 ms (+100.0%)" in text
    assert "baseline = median of 5 good run(s)" in text
    assert "MAD band 31.1–48.9 ms (±3×1.4826×MAD)" in text  # 40 -/+ 3 x 1.4826 x 2
    assert "95 % CI 39.0–41.0 ms" in text and "latest 95 % CI 77.0–83.0 ms" in text
    assert "3 messages vs baseline 0 messages (from 0)" in text
    assert f"<{REPORT_URL}|Run report>" in text
    assert "file://" not in json.dumps(body)
    recovery = _mrkdwn(recovery_post["body"])
    assert "*Recovered*" in recovery and "41.0 ms vs baseline 40.0 ms" in recovery

    from kafkalab.airflow.callbacks import on_failure_alert

    on_failure_alert(_fail_a_task())
    assert len(receiver.posts) == 3
    failed = receiver.posts[2]["body"]
    text = _mrkdwn(failed)
    assert failed["blocks"][0]["text"]["text"] == (
        f":x: Kafka Latency Lab: run {LAB_RUN} (DAG {DAG}) failed in task measure_cell[2] "
        "(try 2)")
    assert f"*DAG*\n`{DAG}`" in text and f"Airflow `{AIRFLOW_RUN}`" in text
    assert "*Failed task*\n`measure_cell[2] (try 2)`" in text
    assert f"<{LOG_URL}|open the log in Airflow>" in text
    assert "RuntimeError: broker 127.0.0.1:9092 gone" in text
    assert LOG_URL in failed["text"]  # the notification's fallback text too
    assert TOKEN not in json.dumps([p["body"] for p in receiver.posts])


# --------------------------------------------------------------------------- HTTP


def test_generic_drift_recovery_and_failure_through_http_hook(
        monkeypatch: pytest.MonkeyPatch, receiver: Receiver) -> None:
    http_connection(monkeypatch, receiver.port)
    hook = AlertWebhookConnection().settings()
    assert hook is not None and (hook.conn_type, hook.fmt) == ("http", "generic")

    drift_post, recovery_post = _drift_then_recovery(receiver)
    assert drift_post["path"] == f"/hooks/{TOKEN}"
    headers = {k.lower(): v for k, v in drift_post["headers"].items()}
    assert headers["content-type"] == "application/json"
    assert headers["authorization"] == AUTH  # HttpHook: other extra keys are headers
    assert not {"endpoint", "format", "report_base_url"} & set(headers)  # the lab's are not
    body = drift_post["body"]
    assert (body["schema"], body["kind"], body["severity"]) == (
        "kafkalab.alert/v1", "drift", "warning")
    assert (body["dag_id"], body["run_id"], body["report_url"]) == (DAG, LAB_RUN, REPORT_URL)
    p99, lost = body["drifts"]
    assert (p99["metric"], p99["unit"], p99["latest_value"], p99["baseline_value"]) == (
        "e2e_latency_ms_p99", "ms", 80.0, 40.0)
    assert (p99["baseline_mad"], p99["k_mad"], p99["baseline_runs"]) == (2.0, 3.0, 5)
    assert p99["baseline_band_low"] == pytest.approx(40 - 3 * 1.4826 * 2)
    assert p99["baseline_band_high"] == pytest.approx(40 + 3 * 1.4826 * 2)
    assert (p99["baseline_ci_low"], p99["baseline_ci_high"]) == (39.0, 41.0)
    assert (lost["unit"], lost["change_pct"]) == ("messages", None)
    rec = recovery_post["body"]
    assert rec["kind"] == "recovery" and rec["recoveries"][0]["alerted_run_id"] == LAB_RUN
    assert rec["recoveries"][0]["unit"] == "ms"

    from kafkalab.airflow.callbacks import on_failure_alert

    on_failure_alert(_fail_a_task())
    failed = receiver.posts[2]["body"]
    assert (failed["kind"], failed["severity"], failed["dag_id"], failed["run_id"]) == (
        "run_failed", "error", DAG, LAB_RUN)
    assert failed["airflow_run_id"] == AIRFLOW_RUN
    assert failed["failed_task"] == {"task_id": "measure_cell", "map_index": 2,
                                     "try_number": 2, "log_url": LOG_URL}
    assert failed["error"].startswith("task measure_cell[2] failed first: RuntimeError")
    assert failed["report_url"] == REPORT_URL
    assert TOKEN not in json.dumps([p["body"] for p in receiver.posts])


def test_report_base_url_of_the_connection_wins(monkeypatch: pytest.MonkeyPatch,
                                                receiver: Receiver) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{ALERT_CONN_ID.upper()}", json.dumps({
        "conn_type": "http", "host": f"http://127.0.0.1:{receiver.port}",
        "extra": {"endpoint": "/hook", "report_base_url": "https://lab.example/reports/"}}))
    _write_drifts(LAB_RUN, [_record("e2e_latency_ms_p99")])
    from kafkalab.airflow import tasks

    assert tasks.send_alerts(LAB_RUN, dag_id=DAG)["sent"] is True
    (post,) = receiver.posts
    assert post["body"]["report_url"] == f"https://lab.example/reports/{LAB_RUN}/index.html"
    assert "report_base_url" not in {k.lower() for k in post["headers"]}


# --------------------------------------------------------------------------- failures


def _refused_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


@pytest.mark.parametrize("connection", [slack_connection, http_connection])
def test_a_500_answer_is_one_line_without_the_token(
        monkeypatch: pytest.MonkeyPatch, connection: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    refusing = Receiver(status=500, reply=f"internal error at /services/{TOKEN}".encode())
    try:
        connection(monkeypatch, refusing.port)
        hook = AlertWebhookConnection().settings()
        assert hook is not None
        with caplog.at_level(logging.DEBUG), pytest.raises(alerts.AlertError) as ei:
            alerts.alert_run_failed(hook, DAG, LAB_RUN, "boom")
        assert len(refusing.posts) == 1  # it was delivered, and refused
    finally:
        refusing.close()
    message = str(ei.value)
    assert "\n" not in message and "HTTP 500" in message
    assert message.startswith(f"alert webhook http://127.0.0.1:{refusing.port}/*** "
                              f"(Connection '{ALERT_CONN_ID}'): HTTP 500")
    assert TOKEN not in message and AUTH not in message
    assert ei.value.__cause__ is None and ei.value.__context__ is None
    assert TOKEN not in caplog.text


@pytest.mark.parametrize("connection", [slack_connection, http_connection])
def test_a_refused_connection_is_one_line_without_the_token(
        monkeypatch: pytest.MonkeyPatch, connection: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    port = _refused_port()
    connection(monkeypatch, port)
    hook = AlertWebhookConnection().settings()
    assert hook is not None
    _write_drifts(LAB_RUN, [_record("e2e_latency_ms_p99")])
    from kafkalab.airflow import tasks

    with caplog.at_level(logging.DEBUG), pytest.raises(alerts.AlertError) as ei:
        tasks.send_alerts(LAB_RUN, dag_id=DAG)
    message = str(ei.value)
    assert message == (f"alert webhook http://127.0.0.1:{port}/*** (Connection "
                       f"'{ALERT_CONN_ID}'): {message.rsplit(': ', 1)[1]}")
    assert message.endswith("(cannot deliver)") and "\n" not in message
    assert TOKEN not in message and "hooks/" not in message and "services/" not in message
    assert ei.value.__cause__ is None and ei.value.__context__ is None
    assert TOKEN not in caplog.text
    assert not alerts.state_path(Path(tasks.LabData().root)).exists()  # announced next time
