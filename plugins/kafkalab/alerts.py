"""Drift, recovery and run-failure alerts to a webhook (Slack-compatible or generic JSON).

Webhook URLs are secrets (the path carries the token): they are never put in an error
message, a log line or an alert body; :func:`redact_url` gives the printable form.
De-duplication state lives in ``<data_dir>/alerts/state.json``. Body and state schemas are
documented in ``docs/drift-and-alerts.md``.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import pandas as pd

from kafkalab.drift import (
    atomic_write_bytes,
    load_drift_config_or_default,
    read_drift,
    records_to_dicts,
)
from kafkalab.errors import AlertError

log = logging.getLogger(__name__)

GENERIC_SCHEMA = "kafkalab.alert/v1"
STATE_SCHEMA = "kafkalab.alert-state/v1"
DEFAULT_WORSEN_MARGIN_PCT = 10.0
EMULATOR_LABEL = "EMULATOR — not Kafka"
MAX_SLACK_DRIFT_BLOCKS = 20
MAX_ERROR_CHARS = 1500

AlertFormat = Literal["slack", "generic"]
AlertKind = Literal["drift", "recovery", "run_failed"]

_DRIFT_FIELDS = (
    "series_key", "scenario", "client", "payload", "profile", "metric", "direction",
    "baseline_value", "baseline_runs", "latest_value", "change_pct", "robust_z", "confidence",
    "verdict", "broker_is_emulator", "run_id",
)


# --------------------------------------------------------------------------- secrets


def redact_url(url: str) -> str:
    """Return ``scheme://host[:port]/***`` for a URL: no user info, path, query or fragment."""
    try:
        parts = urlsplit(str(url))
        host = parts.hostname
        port = parts.port
    except ValueError:
        return "***"
    if not parts.scheme or not host:
        return "***"
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc = f"{netloc}:{port}"
    return f"{parts.scheme}://{netloc}/***"


def _scrub(text: str, url: str) -> str:
    """Remove the URL and its secret parts (path, query, user info) from ``text``."""
    if not url:
        return text
    out = text.replace(url, redact_url(url))
    try:
        parts = urlsplit(url)
    except ValueError:
        return out
    for secret in (parts.path, parts.query, parts.password or "", parts.username or ""):
        if secret and len(secret) > 1:
            out = out.replace(secret, "/***")
    return out


# --------------------------------------------------------------------------- bodies


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _fmt(v: Any, unit: str = "") -> str:
    f = _num(v)
    if f is None:
        return "n/a"
    s = f"{f:,.0f}" if abs(f) >= 1000 else (f"{f:.1f}" if abs(f) >= 10 else f"{f:.3g}")
    return f"{s}{unit}"


def _pct(v: Any) -> str:
    f = _num(v)
    return "from 0" if f is None else f"{f:+.1f}%"


def _clean_drift(rec: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in _DRIFT_FIELDS:
        v = rec.get(k)
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        out[k] = v
    out["broker_is_emulator"] = bool(rec.get("broker_is_emulator") or False)
    if "worsened" in rec:
        out["worsened"] = bool(rec["worsened"])
    return out


def _line(rec: Mapping[str, Any]) -> str:
    emu = f" [{EMULATOR_LABEL}]" if rec.get("broker_is_emulator") else ""
    worse = " (worsened)" if rec.get("worsened") else ""
    return (
        f"{rec.get('metric')} {rec.get('scenario')}/{rec.get('client')} "
        f"{rec.get('payload')} {rec.get('profile')}: {_fmt(rec.get('latest_value'))} vs "
        f"baseline {_fmt(rec.get('baseline_value'))} ({_pct(rec.get('change_pct'))}){worse}{emu}"
    )


def _kind(drifts: list[Any], recoveries: list[Any], error: str | None) -> AlertKind:
    if error is not None:
        return "run_failed"
    return "drift" if drifts else "recovery"


def _truncate(text: str | None) -> str | None:
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def build_generic_body(
    *,
    run_id: str | None,
    dag_id: str | None = None,
    report_url: str | None = None,
    drifts: Iterable[Mapping[str, Any]] = (),
    recoveries: Iterable[Mapping[str, Any]] = (),
    error: str | None = None,
) -> dict[str, Any]:
    """The generic JSON alert body (schema ``kafkalab.alert/v1``, see the docs)."""
    d = [_clean_drift(r) for r in drifts]
    r = [_clean_drift(x) for x in recoveries]
    return {
        "schema": GENERIC_SCHEMA,
        "kind": _kind(d, r, error),
        "run_id": run_id,
        "dag_id": dag_id,
        "report_url": report_url,
        "emulator": any(x["broker_is_emulator"] for x in d + r),
        "drifts": d,
        "recoveries": r,
        "error": _truncate(error),
    }


def build_slack_body(
    *,
    run_id: str | None,
    dag_id: str | None = None,
    report_url: str | None = None,
    drifts: Iterable[Mapping[str, Any]] = (),
    recoveries: Iterable[Mapping[str, Any]] = (),
    error: str | None = None,
) -> dict[str, Any]:
    """A Slack incoming-webhook body: ``text`` (fallback) plus Block Kit ``blocks``."""
    d = [_clean_drift(x) for x in drifts]
    r = [_clean_drift(x) for x in recoveries]
    kind = _kind(d, r, error)
    where = f"run {run_id}" + (f" (DAG {dag_id})" if dag_id else "")
    if kind == "run_failed":
        title = f":x: Kafka Latency Lab: {where} failed"
    elif kind == "drift":
        title = f":warning: Kafka Latency Lab: {len(d)} drift(s) in {where}"
        if r:
            title += f", {len(r)} recovered"
    else:
        title = f":white_check_mark: Kafka Latency Lab: {len(r)} series recovered in {where}"
    if any(x["broker_is_emulator"] for x in d + r):
        title += f" [{EMULATOR_LABEL}]"
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": title[:150], "emoji": True}}
    ]
    if error is not None:
        err = _truncate(error) or ""
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"```{err}```"}})
    if d:
        lines = [f"• {_line(x)}" for x in d[:MAX_SLACK_DRIFT_BLOCKS]]
        if len(d) > MAX_SLACK_DRIFT_BLOCKS:
            lines.append(f"… and {len(d) - MAX_SLACK_DRIFT_BLOCKS} more")
        blocks.append(
            {"type": "section", "text": {"type": "mrkdwn", "text": "*Drift*\n" + "\n".join(lines)}}
        )
    if r:
        lines = [f"• {_line(x)}" for x in r[:MAX_SLACK_DRIFT_BLOCKS]]
        if len(r) > MAX_SLACK_DRIFT_BLOCKS:
            lines.append(f"… and {len(r) - MAX_SLACK_DRIFT_BLOCKS} more")
        blocks.append(
            {"type": "section",
             "text": {"type": "mrkdwn", "text": "*Recovered*\n" + "\n".join(lines)}}
        )
    if report_url:
        blocks.append(
            {"type": "context",
             "elements": [{"type": "mrkdwn", "text": f"<{report_url}|Trend report>"}]}
        )
    text = title
    if d:
        text += "\n" + "\n".join(_line(x) for x in d[:MAX_SLACK_DRIFT_BLOCKS])
    if error is not None:
        text += f"\n{_truncate(error)}"
    # Slack section text is limited to 3000 characters.
    for b in blocks:
        t = b.get("text")
        if isinstance(t, dict) and len(t.get("text", "")) > 3000:
            t["text"] = t["text"][:2999] + "…"
    return {"text": text[:3000], "blocks": blocks}


def build_body(fmt: AlertFormat, **kwargs: Any) -> dict[str, Any]:
    """Dispatch to :func:`build_slack_body` or :func:`build_generic_body`."""
    if fmt == "slack":
        return build_slack_body(**kwargs)
    if fmt == "generic":
        return build_generic_body(**kwargs)
    raise AlertError(f"unknown alert format {fmt!r} (expected 'slack' or 'generic')")


# --------------------------------------------------------------------------- sending


def send_alert(webhook_url: str, body: dict[str, Any], timeout_s: float = 10) -> None:
    """POST ``body`` as JSON to the webhook.

    Raises:
        AlertError: on a connection problem, a timeout or a non-2xx answer. The message
            shows only :func:`redact_url` of the webhook, never its path or token, and the
            underlying exception (whose text holds the URL) is not chained.
    """
    import requests

    where = redact_url(webhook_url)
    if not webhook_url:
        raise AlertError("alert webhook URL is empty")
    problem: str | None = None
    try:
        resp = requests.post(
            webhook_url,
            data=json.dumps(body, allow_nan=False, default=str).encode("utf-8"),
            headers={"Content-Type": "application/json"},
            timeout=timeout_s,
        )
    except requests.Timeout:
        problem = f"alert webhook {where}: no answer within {timeout_s:g} s"
    except requests.RequestException as exc:
        problem = f"alert webhook {where}: {type(exc).__name__} (cannot deliver)"
    else:
        if not 200 <= resp.status_code < 300:
            detail = _scrub((resp.text or "")[:200].strip(), webhook_url)
            problem = f"alert webhook {where}: HTTP {resp.status_code} {detail}".rstrip()
    if problem is not None:
        log.warning("%s", problem)
        # Raised outside the except block: no __context__ carrying the URL.
        raise AlertError(problem)
    log.info("alert delivered to %s", where)


# --------------------------------------------------------------------------- state


def state_path(data_dir: str | os.PathLike[str]) -> Path:
    """``<data_dir>/alerts/state.json``."""
    return Path(data_dir) / "alerts" / "state.json"


def empty_state() -> dict[str, Any]:
    """A state with no series alerted."""
    return {"schema": STATE_SCHEMA, "series": {}}


def load_state(data_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Read the alert state; an absent or unreadable file is an empty state (logged)."""
    p = state_path(data_dir)
    if not p.exists():
        return empty_state()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("alert state %s unreadable (%s); starting empty", p, exc)
        return empty_state()
    if not isinstance(data, dict) or not isinstance(data.get("series"), dict):
        return empty_state()
    data.setdefault("schema", STATE_SCHEMA)
    return data


def save_state(data_dir: str | os.PathLike[str], state: Mapping[str, Any]) -> Path:
    """Write the alert state atomically."""
    text = json.dumps(state, indent=2, sort_keys=True, allow_nan=False, default=str)
    return atomic_write_bytes(state_path(data_dir), (text + "\n").encode("utf-8"))


def _badness(rec: Mapping[str, Any]) -> float | None:
    """Change in percent, signed so that positive means worse (None when undefined)."""
    c = _num(rec.get("change_pct"))
    if c is None:
        return None
    return -c if rec.get("direction") == "lower_is_worse" else c


def _worsened(rec: Mapping[str, Any], prev: Mapping[str, Any], margin_pct: float) -> bool:
    new_b, old_b = _badness(rec), _badness(prev)
    if new_b is not None and old_b is not None:
        return new_b >= old_b + margin_pct
    # Zero baseline (change undefined): compare the values themselves, relative to the
    # value announced before.
    new_v, old_v = _num(rec.get("latest_value")), _num(prev.get("latest_value"))
    if new_v is None or old_v is None:
        return False
    sign = -1.0 if rec.get("direction") == "lower_is_worse" else 1.0
    if old_v == 0:
        return sign * new_v > 0
    return sign * (new_v - old_v) / abs(old_v) * 100.0 >= margin_pct


def _records(drift_records: pd.DataFrame | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(drift_records, pd.DataFrame):
        return records_to_dicts(drift_records)
    return [dict(r) for r in drift_records]


def plan_alerts(
    drift_records: pd.DataFrame | Iterable[Mapping[str, Any]],
    state: Mapping[str, Any],
    worsen_margin_pct: float = DEFAULT_WORSEN_MARGIN_PCT,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """Decide what to announce (pure).

    * a drifting series not in ``state`` is announced and recorded;
    * a drifting series already in ``state`` is announced again only when it worsened: its
      change (positive = worse) grew by at least ``worsen_margin_pct`` percentage points
      (``worsened: true`` in the record); the state then keeps the new values;
    * a series in ``state`` whose verdict is now ``ok`` or ``improved`` is announced once as a
      recovery and removed from the state;
    * ``insufficient_history`` or a series absent from the records leaves the state alone.

    Returns:
        ``(to_alert, recoveries, new_state)``.
    """
    old_series: dict[str, Any] = dict((state or {}).get("series") or {})
    new_series: dict[str, Any] = {k: dict(v) for k, v in old_series.items()}
    to_alert: list[dict[str, Any]] = []
    recoveries: list[dict[str, Any]] = []
    for rec in _records(drift_records):
        key = str(rec.get("series_key") or "")
        if not key:
            continue
        prev = old_series.get(key)
        if bool(rec.get("is_drift")):
            if prev is None:
                rec = {**rec, "worsened": False}
            elif _worsened(rec, prev, worsen_margin_pct):
                rec = {**rec, "worsened": True}
            else:
                continue
            to_alert.append(rec)
            new_series[key] = {
                "run_id": rec.get("run_id"),
                "first_run_id": (prev or {}).get("first_run_id") or rec.get("run_id"),
                "metric": rec.get("metric"),
                "direction": rec.get("direction"),
                "baseline_value": _num(rec.get("baseline_value")),
                "latest_value": _num(rec.get("latest_value")),
                "change_pct": _num(rec.get("change_pct")),
                "broker_is_emulator": bool(rec.get("broker_is_emulator") or False),
            }
        elif prev is not None and rec.get("verdict") in ("ok", "improved"):
            recoveries.append({**rec, "alerted_run_id": prev.get("run_id")})
            new_series.pop(key, None)
    new_state = {**dict(state or {}), "schema": STATE_SCHEMA, "series": new_series}
    return to_alert, recoveries, new_state


# --------------------------------------------------------------------------- entry points


def alert_on_drift(
    data_dir: str | os.PathLike[str],
    run_id: str,
    webhook_url: str | None,
    fmt: AlertFormat = "slack",
    report_url: str | None = None,
    *,
    dag_id: str | None = None,
    worsen_margin_pct: float | None = None,
    timeout_s: float = 10,
) -> dict[str, Any]:
    """Announce a run's new drifts and recoveries once, then update the state.

    Reads ``<data_dir>/drift/run_id=<run_id>/drift.parquet``; when nothing needs saying no
    request is made. The state is written only after a successful delivery, so a failed
    delivery is retried by the next call. Without a webhook nothing is sent nor recorded.
    ``worsen_margin_pct`` defaults to ``alerts.worsen_margin_pct`` of the drift config.

    Returns:
        ``{"run_id", "sent", "drifts", "recoveries", "suppressed", "reason"}``.

    Raises:
        AlertError: delivery failed (message without the URL).
    """
    summary: dict[str, Any] = {
        "run_id": run_id, "sent": False, "drifts": 0, "recoveries": 0, "suppressed": 0,
        "reason": None,
    }
    records = read_drift(data_dir, run_id)
    if records is None:
        summary["reason"] = "no drift records for this run"
        return summary
    if worsen_margin_pct is None:
        worsen_margin_pct = load_drift_config_or_default().alerts.worsen_margin_pct
    state = load_state(data_dir)
    to_alert, recoveries, new_state = plan_alerts(records, state, worsen_margin_pct)
    n_drift = int(records["is_drift"].fillna(False).astype(bool).sum()) if len(records) else 0
    summary.update(
        drifts=len(to_alert), recoveries=len(recoveries), suppressed=n_drift - len(to_alert)
    )
    if not to_alert and not recoveries:
        summary["reason"] = "nothing new to announce"
        return summary
    if not webhook_url:
        summary["reason"] = "no webhook configured"
        log.info("drift alert for %s not sent: no webhook configured", run_id)
        return summary
    body = build_body(
        fmt, run_id=run_id, dag_id=dag_id, report_url=report_url, drifts=to_alert,
        recoveries=recoveries,
    )
    send_alert(webhook_url, body, timeout_s=timeout_s)
    save_state(data_dir, new_state)
    summary["sent"] = True
    return summary


def alert_run_failed(
    webhook_url: str,
    dag_id: str | None,
    run_id: str | None,
    error: str,
    fmt: AlertFormat = "slack",
    report_url: str | None = None,
    timeout_s: float = 10,
) -> dict[str, Any]:
    """Announce a failed run (e.g. from an Airflow ``on_failure_callback``); returns the body.

    The error text is cut to 1500 characters and scrubbed of the webhook URL.
    """
    err = _scrub(str(error), webhook_url)
    body = build_body(fmt, run_id=run_id, dag_id=dag_id, report_url=report_url, error=err)
    send_alert(webhook_url, body, timeout_s=timeout_s)
    return body
