"""Unit tests for kafkalab.alerts: bodies, secret redaction, de-duplication, delivery through
Airflow's HttpHook to a real HTTP receiver (the Connection from ``AIRFLOW_CONN_<ID>``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kafkalab import alerts, drift
from kafkalab.airflow.connections import AlertWebhookConnection
from kafkalab.alerts.webhook import AlertWebhook
from kafkalab.errors import LabError
from tests.webhook import Receiver

SECRET = "T0SECRET/B0SECRET/xoxbSuperSecretToken123"


@pytest.fixture(autouse=True)
def _no_proxy_for_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local receiver must be reached directly even when a proxy is configured."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def _rec(key: str = "rest|requests|1mb|latency|e2e_latency_ms_p99", *, is_drift: bool = True,
         change_pct: float | None = 50.0, verdict: str | None = None, run_id: str = "r2",
         direction: str = "higher_is_worse", latest: float = 15.0,
         emulator: bool = False, alert_status: str | None = None) -> dict[str, Any]:
    scenario, client, payload, profile, metric = key.split("|")
    return {
        "alert_status": alert_status or ("drifting" if is_drift else "clear"),
        "run_id": run_id, "series_key": key, "scenario": scenario, "client": client,
        "payload": payload, "profile": profile, "metric": metric, "direction": direction,
        "baseline_value": 10.0, "baseline_mad": 0.2, "baseline_runs": 7, "latest_value": latest,
        "change_pct": change_pct, "robust_z": 12.0, "confidence": 0.98, "is_drift": is_drift,
        "verdict": verdict or ("drift" if is_drift else "ok"), "broker_is_emulator": emulator,
    }


# --------------------------------------------------------------------------- redaction


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"https://hooks.example.test/services/{SECRET}", "https://hooks.example.test/***"),
        (f"http://127.0.0.1:8080/hook/{SECRET}?token=x", "http://127.0.0.1:8080/***"),
        (f"https://user:pw@host.test:8443/{SECRET}", "https://host.test:8443/***"),
        ("not a url", "***"),
        ("", "***"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert alerts.redact_url(url) == expected


def _webhook(monkeypatch: pytest.MonkeyPatch, port: int, fmt: str = "generic",
             conn_id: str = "kl_alert_test") -> AlertWebhook:
    """An ``http`` Connection posting to ``127.0.0.1:<port>/services/<SECRET>``, defined
    through ``AIRFLOW_CONN_<ID>`` (as outside a task), read as the lab reads it."""
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({
        "conn_type": "http", "host": "127.0.0.1", "port": port,
        "extra": {"endpoint": f"/services/{SECRET}", "format": fmt}}))
    hook = AlertWebhookConnection(conn_id).settings()
    assert hook is not None
    return hook


def test_send_error_never_contains_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    # A port nobody listens on: connection refused.
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(alerts.AlertError) as ei:
        alerts.send_alert(_webhook(monkeypatch, port), {"text": "x"}, timeout_s=2)
    err = ei.value
    assert isinstance(err, LabError)
    for text in (str(err), repr(err), repr(err.args)):
        assert SECRET not in text and "services" not in text
    assert f"127.0.0.1:{port}/***" in str(err)
    # Not chained to the hook's exception (whose text holds the URL).
    assert err.__cause__ is None and err.__context__ is None


def test_bodies_never_contain_the_url_in_failure_text() -> None:
    url = f"https://hooks.example.test/services/{SECRET}"
    body = alerts.build_generic_body(run_id="r1", error=alerts.scrub_url(f"boom at {url}", url))
    assert SECRET not in json.dumps(body)


# --------------------------------------------------------------------------- bodies


def test_slack_body_shape() -> None:
    body = alerts.build_slack_body(
        run_id="r2", dag_id="kafkalab_nightly",
        report_url="http://127.0.0.1:8080/kafkalab/reports/r2/index.html",
        drifts=[_rec(), _rec("a|b|1kb|latency|lost_count", change_pct=None, latest=3,
                             emulator=True)],
        recoveries=[_rec("x|y|1mb|latency|e2e_latency_ms_p50", is_drift=False)],
    )
    assert set(body) == {"text", "blocks"}
    assert isinstance(body["text"], str) and "2 drift(s)" in body["text"]
    assert "EMULATOR — not Kafka" in body["text"]
    types = [b["type"] for b in body["blocks"]]
    assert types[0] == "header" and "section" in types and types[-1] == "context"
    for b in body["blocks"]:
        if b["type"] in ("header", "section"):
            assert b["text"]["type"] in ("plain_text", "mrkdwn")
            assert len(b["text"]["text"]) <= 3000
    dump = json.dumps(body, allow_nan=False)
    assert "+50.0%" in dump and "from 0" in dump and "Recovered" in dump
    assert "<http://127.0.0.1:8080/kafkalab/reports/r2/index.html|Run report>" in dump
    assert "15.0 ms vs baseline 10.0 ms" in dump and "3 messages vs baseline" in dump


def test_generic_body_shape() -> None:
    body = alerts.build_generic_body(
        run_id="r2", dag_id="dag", report_url=None, drifts=[_rec()], recoveries=[]
    )
    assert body["schema"] == "kafkalab.alert/v1"
    assert body["kind"] == "drift"
    assert body["run_id"] == "r2" and body["dag_id"] == "dag" and body["error"] is None
    assert body["drifts"][0]["series_key"].endswith("e2e_latency_ms_p99")
    assert body["drifts"][0]["change_pct"] == 50.0
    assert body["recoveries"] == []
    json.dumps(body, allow_nan=False)
    rec_only = alerts.build_generic_body(run_id="r", recoveries=[_rec(is_drift=False)])
    assert rec_only["kind"] == "recovery"
    failed = alerts.build_generic_body(run_id="r", dag_id="d", error="x" * 5000)
    assert failed["kind"] == "run_failed" and len(failed["error"]) <= 1500
    nan = alerts.build_generic_body(run_id="r", drifts=[_rec(change_pct=float("nan"))])
    json.dumps(nan, allow_nan=False)


def test_unknown_format() -> None:
    with pytest.raises(alerts.AlertError):
        alerts.build_body("teams", run_id="r")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- de-dup


def test_plan_new_drift_then_suppressed_then_worse_then_recovery() -> None:
    state = alerts.empty_state()
    to_alert, rec, state = alerts.plan_alerts([_rec(change_pct=50.0, run_id="r2")], state)
    assert len(to_alert) == 1 and not to_alert[0]["worsened"] and rec == []
    key = to_alert[0]["series_key"]
    assert state["series"][key]["change_pct"] == 50.0

    # Same drift again (slightly worse, below the 10 pp margin): not re-announced.
    to_alert, rec, state2 = alerts.plan_alerts([_rec(change_pct=55.0, run_id="r3")], state)
    assert to_alert == [] and rec == []
    assert state2["series"][key]["change_pct"] == 50.0

    # Worse by >= 10 pp: announced again, flagged worsened, state updated.
    to_alert, rec, state3 = alerts.plan_alerts([_rec(change_pct=61.0, run_id="r4")], state2)
    assert len(to_alert) == 1 and to_alert[0]["worsened"]
    assert state3["series"][key]["change_pct"] == 61.0
    assert state3["series"][key]["first_run_id"] == "r2"

    # Insufficient history keeps the state.
    to_alert, rec, state4 = alerts.plan_alerts(
        [_rec(is_drift=False, verdict="insufficient_history", alert_status="alerting")], state3)
    assert to_alert == [] and rec == [] and key in state4["series"]

    # Back to ok, but fewer good runs than recovery_runs: still in alert, nothing said.
    to_alert, rec, state5 = alerts.plan_alerts(
        [_rec(is_drift=False, run_id="r5", alert_status="alerting")], state4)
    assert to_alert == [] and rec == [] and key in state5["series"]
    # The run that completes the recovery: one recovery, removed; a later ok says nothing.
    to_alert, rec, state6 = alerts.plan_alerts(
        [_rec(is_drift=False, run_id="r6", alert_status="recovered")], state5)
    assert to_alert == [] and len(rec) == 1 and key not in state6["series"]
    assert rec[0]["alerted_run_id"] == "r4"
    to_alert, rec, _ = alerts.plan_alerts([_rec(is_drift=False, run_id="r7")], state6)
    assert to_alert == [] and rec == []


def test_plan_accepted_series_leaves_state_silently() -> None:
    _, _, st = alerts.plan_alerts([_rec()], alerts.empty_state())
    # `clear` while announced: the level was accepted; no recovery is announced.
    to_alert, rec, st2 = alerts.plan_alerts([_rec(is_drift=False, alert_status="clear")], st)
    assert to_alert == [] and rec == [] and st2["series"] == {}
    # A record without alert_status (written before it existed) never announces a recovery.
    old = {k: v for k, v in _rec(is_drift=False).items() if k != "alert_status"}
    assert alerts.plan_alerts([old], st)[1] == [] and alerts.plan_alerts([old], st)[2] == st


def test_forget_series_and_outdated_state(tmp_path: Path) -> None:
    _, _, st = alerts.plan_alerts([_rec(), _rec("a|b|1kb|latency|lost_count")],
                                  alerts.empty_state())
    alerts.save_state(tmp_path, st)
    from kafkalab.alerts.state import forget_series

    assert forget_series(tmp_path, ["a|b|1kb|latency|lost_count", "nope"]) == [
        "a|b|1kb|latency|lost_count"]
    assert set(alerts.load_state(tmp_path)["series"]) == {_rec()["series_key"]}
    # A v1 state's keys can never match today's records: read as empty.
    alerts.save_state(tmp_path, {**st, "schema": "kafkalab.alert-state/v1"})
    assert alerts.load_state(tmp_path) == alerts.empty_state()


def test_plan_margin_configurable_and_lower_is_worse() -> None:
    r1 = _rec(direction="lower_is_worse", change_pct=-40.0)
    _, _, st = alerts.plan_alerts([r1], alerts.empty_state())
    worse = _rec(direction="lower_is_worse", change_pct=-45.0)
    assert alerts.plan_alerts([worse], st)[0] == []
    assert len(alerts.plan_alerts([worse], st, worsen_margin_pct=5.0)[0]) == 1
    better = _rec(direction="lower_is_worse", change_pct=-30.0)
    assert alerts.plan_alerts([better], st, worsen_margin_pct=0.0)[0] == []


def test_plan_zero_baseline_worsening_uses_values() -> None:
    key = "a|b|1kb|latency|lost_count"
    _, _, st = alerts.plan_alerts([_rec(key, change_pct=None, latest=2)], alerts.empty_state())
    assert alerts.plan_alerts([_rec(key, change_pct=None, latest=2)], st)[0] == []
    assert len(alerts.plan_alerts([_rec(key, change_pct=None, latest=5)], st)[0]) == 1


def test_plan_accepts_dataframe() -> None:
    df = pd.DataFrame([_rec(), _rec("q|w|1kb|latency|lost_count", is_drift=False)])
    to_alert, _rec_out, st = alerts.plan_alerts(df, alerts.empty_state())
    assert len(to_alert) == 1 and len(st["series"]) == 1


def test_state_roundtrip_and_corrupt_state(tmp_path: Path) -> None:
    assert alerts.load_state(tmp_path) == alerts.empty_state()
    _, _, st = alerts.plan_alerts([_rec()], alerts.empty_state())
    p = alerts.save_state(tmp_path, st)
    assert p == tmp_path / "alerts" / "state.json"
    assert alerts.load_state(tmp_path)["series"] == st["series"]
    p.write_text("{not json")
    assert alerts.load_state(tmp_path) == alerts.empty_state()


# --------------------------------------------------------------------------- real HTTP


def _url(r: Receiver) -> str:
    """The receiver's URL with a Slack-style secret path."""
    return f"http://127.0.0.1:{r.port}/services/{SECRET}"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _write_run(data_dir: Path, run_id: str, records: list[dict[str, Any]]) -> None:
    df = pd.DataFrame(records)
    drift.write_drift(df, data_dir, run_id)


def test_alert_on_drift_real_http(tmp_path: Path, receiver: Receiver,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    generic = _webhook(monkeypatch, receiver.port)
    slack = _webhook(monkeypatch, receiver.port, "slack", "kl_alert_test_slack")
    _write_run(tmp_path, "r2", [_rec(run_id="r2"),
                                _rec("q|w|1kb|latency|lost_count", is_drift=False, run_id="r2")])
    summary = alerts.alert_on_drift(tmp_path, "r2", generic,
                                    report_url="../reports/r2/index.html", dag_id="nightly")
    assert summary["sent"] is True and summary["drifts"] == 1 and summary["recoveries"] == 0
    assert len(receiver.posts) == 1
    req = receiver.posts[0]
    assert req["path"] == f"/services/{SECRET}"
    assert req["headers"]["Content-Type"] == "application/json"
    assert not {"endpoint", "format"} & {h.lower() for h in req["headers"]}  # lab keys
    body = req["body"]
    assert body["schema"] == "kafkalab.alert/v1" and body["kind"] == "drift"
    assert body["run_id"] == "r2" and body["dag_id"] == "nightly"
    assert body["report_url"] == "../reports/r2/index.html"
    assert [d["series_key"] for d in body["drifts"]] == [
        "rest|requests|1mb|latency|e2e_latency_ms_p99"]
    assert SECRET not in json.dumps(body)
    assert (tmp_path / "alerts" / "state.json").exists()

    # Same run again: de-duplicated, no request.
    summary = alerts.alert_on_drift(tmp_path, "r2", slack)
    assert summary["sent"] is False and summary["suppressed"] == 1
    assert len(receiver.posts) == 1

    # A later run completes the recovery: one Slack message with the recovery.
    _write_run(tmp_path, "r3", [_rec(run_id="r3", is_drift=False, alert_status="recovered")])
    summary = alerts.alert_on_drift(tmp_path, "r3", slack)
    assert summary["sent"] is True and summary["recoveries"] == 1
    slack = receiver.posts[-1]["body"]
    assert "recovered" in slack["text"] and slack["blocks"]
    assert alerts.load_state(tmp_path)["series"] == {}


def test_alert_on_drift_without_records_or_webhook(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert alerts.alert_on_drift(tmp_path, "none", _webhook(monkeypatch, 9))["sent"] is False
    _write_run(tmp_path, "r2", [_rec(run_id="r2")])
    s = alerts.alert_on_drift(tmp_path, "r2", None)
    assert s["sent"] is False and s["reason"] == "no webhook configured"
    assert not (tmp_path / "alerts" / "state.json").exists()


def test_failed_delivery_keeps_state_and_hides_secret(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    r = Receiver(status=403, reply=f"invalid_token for /services/{SECRET}".encode())
    try:
        _write_run(tmp_path, "r2", [_rec(run_id="r2")])
        with pytest.raises(alerts.AlertError) as ei:
            alerts.alert_on_drift(tmp_path, "r2", _webhook(monkeypatch, r.port, "slack"))
        assert "HTTP 403" in str(ei.value)
        assert SECRET not in str(ei.value)
        assert not (tmp_path / "alerts" / "state.json").exists()
    finally:
        r.close()


def test_alert_run_failed_real_http(receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    generic = _webhook(monkeypatch, receiver.port)
    body = alerts.alert_run_failed(generic, "nightly", "r9",
                                   f"Traceback ... posting to {_url(receiver)}")
    assert body["kind"] == "run_failed"
    got = receiver.posts[0]["body"]
    assert got["kind"] == "run_failed" and got["dag_id"] == "nightly" and got["run_id"] == "r9"
    assert SECRET not in json.dumps(got)
    slack = alerts.alert_run_failed(_webhook(monkeypatch, receiver.port, "slack"), "nightly",
                                    "r9", "boom")
    assert "failed" in slack["text"] and "boom" in json.dumps(slack["blocks"])


# --------------------------------------------------------------------------- split modules


def test_scrub_url_removes_every_secret_part() -> None:
    url = f"https://user:pw-secret@hooks.example.test/services/{SECRET}?token=tok123"
    text = alerts.scrub_url(f"POST {url} failed; path /services/{SECRET}; token=tok123", url)
    for secret in (SECRET, "pw-secret", "tok123"):
        assert secret not in text
    assert "https://hooks.example.test/***" in text
    assert alerts.scrub_url("untouched", "") == "untouched"


def test_badness_and_worsened() -> None:
    from kafkalab.alerts.plan import badness, worsened

    assert badness({"change_pct": 30.0}) == 30.0
    assert badness({"change_pct": -30.0, "direction": "lower_is_worse"}) == 30.0
    assert badness({"change_pct": None}) is None
    assert worsened({"change_pct": 61.0}, {"change_pct": 50.0}, 10.0)
    assert not worsened({"change_pct": 59.0}, {"change_pct": 50.0}, 10.0)
    # Zero baseline: values compared, relative to the announced one.
    assert worsened({"change_pct": None, "latest_value": 1}, {"latest_value": 0}, 10.0)
    assert worsened({"change_pct": None, "latest_value": 11}, {"latest_value": 10}, 10.0)
    assert not worsened({"change_pct": None, "latest_value": 10.5}, {"latest_value": 10}, 10.0)
    assert not worsened({"change_pct": None}, {"latest_value": 10}, 10.0)


def test_formatting_helpers() -> None:
    from kafkalab.alerts.bodies import (
        MAX_ERROR_CHARS,
        AlertContent,
        clean_drift,
        format_change,
        format_value,
        series_line,
        truncate_error,
    )

    assert format_value(1234.5) == "1,234" and format_value(12.34) == "12.3"
    assert format_value(0.012345, " ms") == "0.0123 ms" and format_value(None) == "n/a"
    assert format_change(12.345) == "+12.3%" and format_change(float("nan")) == "from 0"
    assert truncate_error(None) is None and truncate_error("short") == "short"
    cut = truncate_error("x" * (MAX_ERROR_CHARS + 5))
    assert cut is not None and len(cut) == MAX_ERROR_CHARS and cut.endswith("…")
    clean = clean_drift({**_rec(change_pct=float("inf"), emulator=True), "worsened": 1,
                         "baseline_mad": 0.2})
    assert clean["change_pct"] is None and clean["worsened"] is True
    # The baseline's spread and the metric's unit travel with the record; the MAD band
    # needs the rule's k_mad (set by alert_on_drift from the drift config).
    assert clean["baseline_mad"] == 0.2 and clean["unit"] == "ms"
    assert clean["baseline_band_low"] is None and clean["k_mad"] is None
    banded = clean_drift({**_rec(), "k_mad": 3.0})
    assert banded["baseline_band_low"] == pytest.approx(10.0 - 3 * 1.4826 * 0.2)
    assert banded["baseline_band_high"] == pytest.approx(10.0 + 3 * 1.4826 * 0.2)
    assert series_line(clean).endswith("(from 0) (worsened) [EMULATOR — not Kafka]")
    assert AlertContent.of(run_id="r").kind == "recovery"
    assert AlertContent.of(run_id="r", drifts=[_rec()]).kind == "drift"
    assert AlertContent.of(run_id="r", drifts=[_rec()], error="e").kind == "run_failed"


def test_slack_body_caps_lines_per_section() -> None:
    drifts = [_rec(f"s{i}|c|1kb|latency|lost_count") for i in range(25)]
    body = alerts.build_slack_body(run_id="r", drifts=drifts)
    section = body["blocks"][1]["text"]["text"]
    assert section.startswith("*Drift*") and section.endswith("… and 5 more")
    assert section.count("• ") == alerts.MAX_SLACK_DRIFT_BLOCKS


def test_the_alert_state_is_locked_from_read_to_write(tmp_path: Path, receiver: Receiver,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """While one notifier plans and delivers, another process cannot take the state's lock
    (it would read the old state and announce the same drift again; issue 26)."""
    import subprocess
    import sys

    from kafkalab.alerts import notify
    from kafkalab.store import lock_path

    lock = lock_path(alerts.state_path(tmp_path))
    probe = ("import fcntl, sys; f = open(sys.argv[1], 'a')\n"
             "try:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); print('free')\n"
             "except BlockingIOError:\n    print('held')")
    seen: list[str] = []
    real_send = notify.send_alert

    def send_and_probe(*args: Any, **kwargs: Any) -> None:
        seen.append(subprocess.run([sys.executable, "-c", probe, str(lock)], text=True,
                                   capture_output=True, check=True).stdout.strip())
        real_send(*args, **kwargs)

    monkeypatch.setattr(notify, "send_alert", send_and_probe)
    _write_run(tmp_path, "r2", [_rec(run_id="r2")])
    assert alerts.alert_on_drift(tmp_path, "r2", _webhook(monkeypatch, receiver.port))["sent"]
    assert seen == ["held"] and len(receiver.posts) == 1
    free = subprocess.run([sys.executable, "-c", probe, str(lock)], text=True,
                          capture_output=True, check=True).stdout.strip()
    assert free == "free"   # released once the state is written
