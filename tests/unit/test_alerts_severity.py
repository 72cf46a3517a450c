"""Unit tests of alert severities and the fault-validation alert (kafkalab.alerts).

A fault run's failed validation (``validation/<run_id>-faults.json``, written by
``spark_jobs/validate_faults.py``) is announced with the highest severity there is when
acked messages were lost under the durability profile, and with ``error`` otherwise; the
bodies carry the severity. One real HTTP receiver on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from kafkalab import alerts
from kafkalab.airflow.connections import AlertWebhookConnection
from kafkalab.alerts import bodies
from kafkalab.alerts.webhook import AlertWebhook
from kafkalab.store import LabData, atomic_write_json

SECRET = "T0SECRET/B0SECRET/xoxbFaultToken"
RUN = "20261122T010203Z-faults1"
DURABILITY_CHECK = "profile durability: no acked message is lost (acked_lost = 0)"


@pytest.fixture(autouse=True)
def _no_proxy_for_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def _failure(check: str, column: str | None, rows: list[str]) -> dict[str, Any]:
    return {"suite": "fault_trials", "expectation_type": "expect_column_values_to_be_between",
            "column": column, "check": check,
            "summary": f"fault_trials: {column}: {check}: {len(rows)} of 5 rows violate it, "
                       f"e.g. {', '.join(rows)}",
            "unexpected_count": len(rows), "partial_unexpected_list": [],
            "unexpected_rows": rows, "observed_value": None, "raised_exception": False}


def _report(*, durability_loss: int = 0, other_failure: bool = False,
            durability_block: bool = True) -> dict[str, Any]:
    """A fault validation report in the shape validate_faults writes."""
    trial = "durability-sigkill-leader-acks-all-t1"
    failed = []
    if durability_loss:
        failed.append(_failure(DURABILITY_CHECK, "acked_lost", [trial]))
    if other_failure:
        failed.append(_failure("acked + failed + indeterminate + unsent = intended_msgs",
                               "outcomes_add_up_ok", ["default-none-acks-1-t1"]))
    doc: dict[str, Any] = {
        "schema_version": 1, "suite": "faults", "run_id": RUN,
        "validated_at": "2026-11-22T01:10:00+00:00", "success": not failed,
        "suites": {}, "failed_expectations": failed,
    }
    if durability_block:
        doc["durability"] = {
            "check": DURABILITY_CHECK, "success": not durability_loss,
            "acked_lost": durability_loss,
            "trials": ([{"trial_id": trial, "fault": "sigkill-leader", "acks": "all",
                         "status": "complete", "acked_lost": durability_loss,
                         "acked_lost_in_broker_logs": 1,
                         "acked_lost_absent_from_logs": durability_loss - 1}]
                       if durability_loss else []),
        }
    return doc


# --------------------------------------------------------------------------- severities


def test_severities_are_ordered_and_critical_is_the_highest() -> None:
    assert alerts.SEVERITIES == ("info", "warning", "error", "critical")
    assert alerts.HIGHEST_SEVERITY == "critical" == alerts.SEVERITIES[-1]
    ranks = [bodies.severity_rank(s) for s in alerts.SEVERITIES]
    assert ranks == sorted(ranks) == list(range(4))
    with pytest.raises(alerts.AlertError, match="unknown alert severity"):
        bodies.severity_rank("fatal")


def test_every_kind_has_a_default_severity_below_critical() -> None:
    """Only a broken durability promise is critical: no kind is critical by default."""
    assert set(alerts.DEFAULT_SEVERITY) == {"drift", "recovery", "run_failed",
                                           "validation_failed"}
    assert alerts.HIGHEST_SEVERITY not in alerts.DEFAULT_SEVERITY.values()
    drift = {"series_key": "a|b|c", "metric": "e2e_latency_ms_p99", "is_drift": True}
    assert alerts.build_generic_body(run_id="r", drifts=[drift])["severity"] == "warning"
    assert alerts.build_generic_body(run_id="r", recoveries=[drift])["severity"] == "info"
    assert alerts.build_generic_body(run_id="r", error="boom")["severity"] == "error"
    failed = alerts.build_generic_body(run_id="r", error="boom", severity="critical")
    assert failed["severity"] == "critical" and failed["kind"] == "run_failed"
    with pytest.raises(alerts.AlertError):
        alerts.build_generic_body(run_id="r", error="x", severity="fatal")  # type: ignore[arg-type]


def test_validation_severity() -> None:
    assert alerts.validation_severity(_report()) is None
    assert alerts.validation_severity(_report(durability_loss=2)) == "critical"
    assert alerts.validation_severity(_report(durability_loss=2, other_failure=True)) == "critical"
    assert alerts.validation_severity(_report(other_failure=True)) == "error"
    # a report without the durability block: the failed acked_lost expectation tells
    old = _report(durability_loss=2, durability_block=False)
    assert alerts.durability_broken(old) and alerts.validation_severity(old) == "critical"
    unreadable: dict[str, Any] = {"success": None, "failed": [], "unreadable": True}
    assert alerts.validation_severity(unreadable) == "error"


# --------------------------------------------------------------------------- bodies


def test_durability_bodies_are_critical_and_name_the_trial() -> None:
    fields = alerts.notify.fault_validation_fields(_report(durability_loss=3),
                                                   "/lab/validation/x-faults.json")
    generic = alerts.build_generic_body(run_id=RUN, dag_id="resilience_experiment",
                                        validation=fields, severity="critical")
    assert generic["kind"] == "validation_failed" and generic["severity"] == "critical"
    assert generic["error"] is None and generic["drifts"] == []
    v = generic["validation"]
    assert v["suite"] == "faults" and v["report_path"] == "/lab/validation/x-faults.json"
    assert v["durability"]["success"] is False and v["durability"]["acked_lost"] == 3
    assert v["durability"]["trials"][0]["trial_id"] == "durability-sigkill-leader-acks-all-t1"
    assert len(v["failed_checks"]) == 1 and DURABILITY_CHECK in v["failed_checks"][0]
    json.dumps(generic, allow_nan=False)

    slack = alerts.build_slack_body(run_id=RUN, dag_id="resilience_experiment",
                                    validation=fields, severity="critical")
    header = slack["blocks"][0]["text"]["text"]
    assert header.startswith(":rotating_light: [CRITICAL] Kafka Latency Lab: durability broken")
    assert "3 acked message(s) lost under the durability profile" in slack["text"]
    assert ("durability-sigkill-leader-acks-all-t1: 3 acked message(s) lost "
            "(1 still in a broker log, 2 in none)") in slack["text"]
    assert any("*Validation (faults)*" in b["text"]["text"] for b in slack["blocks"]
               if b["type"] == "section")
    assert len(header) <= bodies.MAX_SLACK_HEADER_CHARS


def test_other_validation_failure_is_an_error_not_critical() -> None:
    fields = alerts.notify.fault_validation_fields(_report(other_failure=True))
    slack = alerts.build_slack_body(run_id=RUN, validation=fields, severity="error")
    assert "[CRITICAL]" not in slack["text"]
    assert slack["text"].startswith(":x: Kafka Latency Lab: faults validation failed in run")
    assert "FAILED fault_trials: outcomes_add_up_ok" in slack["text"]
    many = {**_report(other_failure=True),
            "failed_expectations": [_failure(f"check {i}", "c", ["t"]) for i in range(25)]}
    lines = bodies.validation_lines(alerts.notify.fault_validation_fields(many))
    assert len(lines) == bodies.MAX_VALIDATION_LINES + 1 and lines[-1].startswith("… and 15")


# --------------------------------------------------------------------------- real HTTP


class _Receiver:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                outer.requests.append(json.loads(self.rfile.read(n) or b"null"))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/services/{SECRET}"

    def webhook(self, fmt: str = "generic") -> AlertWebhook:
        """An ``http`` Connection (``AIRFLOW_CONN_<ID>``, set by the fixture) to this
        receiver, read as the lab reads it."""
        hook = AlertWebhookConnection(f"kl_sev_{fmt}").settings()
        assert hook is not None
        return hook

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Receiver]:
    r = _Receiver()
    for fmt in ("generic", "slack"):
        monkeypatch.setenv(f"AIRFLOW_CONN_KL_SEV_{fmt.upper()}", json.dumps({
            "conn_type": "http", "host": "127.0.0.1", "port": r.server.server_address[1],
            "extra": {"endpoint": f"/services/{SECRET}", "format": fmt}}))
    yield r
    r.close()


def _write_report(data_dir: Path, doc: dict[str, Any]) -> Path:
    path = LabData(data_dir).validation_path(RUN, "faults")
    atomic_write_json(path, doc)
    return path


def test_alert_on_fault_validation_durability_loss_is_critical(
        tmp_path: Path, receiver: _Receiver, caplog: pytest.LogCaptureFixture) -> None:
    path = _write_report(tmp_path, _report(durability_loss=2, other_failure=True))
    assert path == tmp_path / "validation" / f"{RUN}-faults.json"
    out = alerts.alert_on_fault_validation(tmp_path, RUN, receiver.webhook(),
                                           dag_id="resilience_experiment")
    assert out == {"run_id": RUN, "sent": True, "severity": "critical", "reason": None,
                   "failed_checks": 2, "acked_lost": 2}
    assert len(receiver.requests) == 1
    body = receiver.requests[0]
    assert body["severity"] == alerts.HIGHEST_SEVERITY and body["kind"] == "validation_failed"
    assert body["dag_id"] == "resilience_experiment" and body["run_id"] == RUN
    assert body["validation"]["report_path"] == str(path)
    assert SECRET not in json.dumps(body)
    assert any(r.levelname == "CRITICAL" and "durability broken" in r.getMessage()
               for r in caplog.records)


def test_alert_on_fault_validation_other_failure_is_error(tmp_path: Path,
                                                          receiver: _Receiver) -> None:
    _write_report(tmp_path, _report(other_failure=True))
    out = alerts.alert_on_fault_validation(tmp_path, RUN, receiver.webhook("slack"))
    assert out["sent"] is True and out["severity"] == "error" and out["acked_lost"] == 0
    assert "[CRITICAL]" not in receiver.requests[0]["text"]


def test_alert_on_fault_validation_sends_nothing_when_passed_missing_or_no_webhook(
        tmp_path: Path, receiver: _Receiver) -> None:
    out = alerts.alert_on_fault_validation(tmp_path, RUN, receiver.webhook())
    assert out["sent"] is False and out["reason"] == "no fault validation result for this run"
    _write_report(tmp_path, _report())
    out = alerts.alert_on_fault_validation(tmp_path, RUN, receiver.webhook())
    assert out["sent"] is False and out["reason"] == "validation passed"
    assert out["severity"] is None
    _write_report(tmp_path, _report(durability_loss=1))
    out = alerts.alert_on_fault_validation(tmp_path, RUN, None)
    assert out["sent"] is False and out["reason"] == "no webhook configured"
    assert out["severity"] == "critical"
    assert receiver.requests == []


def test_alert_run_failed_takes_a_severity(receiver: _Receiver) -> None:
    body = alerts.alert_run_failed(receiver.webhook(), "dag", "r1", "boom",
                                   severity="critical")
    assert body["severity"] == "critical" and receiver.requests[0]["severity"] == "critical"
    default = alerts.alert_run_failed(receiver.webhook(), "dag", "r1", "boom")
    assert default["severity"] == "error"
