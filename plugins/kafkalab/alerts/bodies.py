"""Alert message bodies: Slack-compatible (Block Kit) or generic JSON (``kafkalab.alert/v1``).

Both are rendered from the same :class:`AlertContent` (the run, the drift records to
announce, the recoveries, the error of a failed run, or a failed validation); the schemas are
documented in ``docs/drift-and-alerts.md``. Every alert has a severity (:data:`SEVERITIES`,
lowest first); :data:`HIGHEST_SEVERITY` (``critical``) is kept for a broken durability
promise: acked messages lost under the durability profile. Pure functions: nothing is sent
from here (see :mod:`kafkalab.alerts.delivery`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Required, TypedDict, Unpack

from kafkalab.cluster.descriptor import EMULATOR_LABEL
from kafkalab.errors import AlertError
from kafkalab.values import as_float

GENERIC_SCHEMA = "kafkalab.alert/v1"
MAX_SLACK_DRIFT_BLOCKS = 20
"""Lines per Slack section; more are summarised as "… and N more"."""
MAX_ERROR_CHARS = 1500
MAX_SLACK_HEADER_CHARS = 150
MAX_SLACK_TEXT_CHARS = 3000

AlertFormat = Literal["slack", "generic"]
AlertKind = Literal["drift", "recovery", "run_failed", "validation_failed"]
Severity = Literal["info", "warning", "error", "critical"]

SEVERITIES: tuple[Severity, ...] = ("info", "warning", "error", "critical")
"""Every severity, lowest first."""
HIGHEST_SEVERITY: Severity = SEVERITIES[-1]
"""``critical``: only a broken durability promise (acked messages lost under the durability
profile) is announced with it."""
DEFAULT_SEVERITY: dict[AlertKind, Severity] = {
    "recovery": "info", "drift": "warning", "run_failed": "error", "validation_failed": "error",
}
"""The severity of an alert of each kind unless its builder is told otherwise."""
MAX_VALIDATION_LINES = 10
"""Failed checks and durability trials listed per alert; more are summarised."""

DRIFT_FIELDS: tuple[str, ...] = (
    "series_key", "scenario", "client", "payload", "payload_encoding", "payload_bytes",
    "profile", "workload", "cluster_flavor", "broker_version", "broker_count",
    "planned_messages", "metric", "direction", "baseline_value", "baseline_runs",
    "latest_value", "change_pct", "robust_z", "confidence", "latest_ci_low", "latest_ci_high",
    "baseline_ci_low", "baseline_ci_high", "rule", "verdict", "alert_status", "good_runs",
    "alert_since_run_id", "broker_is_emulator", "run_id",
)
"""The drift-record fields an alert body carries for each series."""


class AlertFields(TypedDict, total=False):
    """What an alert says, as the keyword arguments of every body builder."""

    run_id: Required[str | None]
    dag_id: str | None
    report_url: str | None
    drifts: Iterable[Mapping[str, Any]]
    recoveries: Iterable[Mapping[str, Any]]
    error: str | None
    validation: Mapping[str, Any] | None
    severity: Severity | None


def severity_rank(severity: str) -> int:
    """The position of ``severity`` in :data:`SEVERITIES` (0 = lowest).

    Raises:
        AlertError: an unknown severity.
    """
    try:
        return SEVERITIES.index(severity)  # type: ignore[arg-type]
    except ValueError:
        raise AlertError(f"unknown alert severity {severity!r} (expected one of "
                         f"{', '.join(SEVERITIES)})") from None


def clean_validation(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a failed validation an alert carries: ``suite``, ``report_path``,
    ``failed_checks`` (summaries), ``durability`` (``success``, ``acked_lost``, ``trials``)
    or None when the report has no durability block."""
    dur = doc.get("durability")
    return {
        "suite": doc.get("suite"),
        "report_path": None if doc.get("report_path") is None else str(doc["report_path"]),
        "failed_checks": [str(x) for x in doc.get("failed_checks") or []],
        "durability": None if not isinstance(dur, Mapping) else {
            "success": bool(dur.get("success", True)),
            "acked_lost": int(dur.get("acked_lost") or 0),
            "trials": [dict(t) for t in dur.get("trials") or []],
        },
    }


def clean_drift(rec: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`DRIFT_FIELDS` of a drift record (non-finite floats -> None), plus
    ``worsened`` when the record has it."""
    out: dict[str, Any] = {}
    for k in DRIFT_FIELDS:
        v = rec.get(k)
        out[k] = as_float(v) if isinstance(v, float) else v
    out["broker_is_emulator"] = bool(rec.get("broker_is_emulator") or False)
    if "worsened" in rec:
        out["worsened"] = bool(rec["worsened"])
    return out


def truncate_error(text: str | None) -> str | None:
    """``text`` cut to :data:`MAX_ERROR_CHARS` (ending in ``…`` when cut)."""
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


@dataclass(frozen=True)
class AlertContent:
    """The content of one alert, with its drift records cleaned (:func:`clean_drift`)."""

    run_id: str | None
    dag_id: str | None
    report_url: str | None
    drifts: list[dict[str, Any]]
    recoveries: list[dict[str, Any]]
    error: str | None
    validation: dict[str, Any] | None = None
    requested_severity: Severity | None = None

    @classmethod
    def of(cls, **fields: Unpack[AlertFields]) -> AlertContent:
        """Build the content from the builders' keyword arguments."""
        return cls(
            run_id=fields["run_id"],
            dag_id=fields.get("dag_id"),
            report_url=fields.get("report_url"),
            drifts=[clean_drift(r) for r in fields.get("drifts", ())],
            recoveries=[clean_drift(r) for r in fields.get("recoveries", ())],
            error=fields.get("error"),
            validation=(None if (validation := fields.get("validation")) is None
                        else clean_validation(validation)),
            requested_severity=fields.get("severity"),
        )

    @property
    def kind(self) -> AlertKind:
        """``run_failed`` with an error, else ``validation_failed`` with a validation, else
        ``drift`` with drifts, else ``recovery``."""
        if self.error is not None:
            return "run_failed"
        if self.validation is not None:
            return "validation_failed"
        return "drift" if self.drifts else "recovery"

    @property
    def severity(self) -> Severity:
        """The severity asked for, else :data:`DEFAULT_SEVERITY` of the kind.

        Raises:
            AlertError: an unknown severity was asked for.
        """
        if self.requested_severity is None:
            return DEFAULT_SEVERITY[self.kind]
        severity_rank(self.requested_severity)
        return self.requested_severity

    @property
    def emulator(self) -> bool:
        """Whether any listed series was measured on an emulator broker."""
        return any(x["broker_is_emulator"] for x in self.drifts + self.recoveries)


def format_value(v: Any, unit: str = "") -> str:
    """A number for a message line: thousands separated, 1 decimal from 10, else 3 digits;
    ``n/a`` when missing."""
    f = as_float(v)
    if f is None:
        return "n/a"
    s = f"{f:,.0f}" if abs(f) >= 1000 else (f"{f:.1f}" if abs(f) >= 10 else f"{f:.3g}")
    return f"{s}{unit}"


def format_change(v: Any) -> str:
    """A signed change in percent, or ``from 0`` when undefined (zero baseline)."""
    f = as_float(v)
    return "from 0" if f is None else f"{f:+.1f}%"


def series_line(rec: Mapping[str, Any]) -> str:
    """One line of text about one series' drift record."""
    emu = f" [{EMULATOR_LABEL}]" if rec.get("broker_is_emulator") else ""
    worse = " (worsened)" if rec.get("worsened") else ""
    workload = f" ({rec['workload']})" if rec.get("workload") else ""
    return (
        f"{rec.get('metric')} {rec.get('scenario')}/{rec.get('client')} "
        f"{rec.get('payload')} {rec.get('profile')}{workload}: "
        f"{format_value(rec.get('latest_value'))} vs "
        f"baseline {format_value(rec.get('baseline_value'))} "
        f"({format_change(rec.get('change_pct'))}){worse}{emu}"
    )


def generic_body(content: AlertContent) -> dict[str, Any]:
    """The generic JSON body of ``content`` (schema ``kafkalab.alert/v1``)."""
    return {
        "schema": GENERIC_SCHEMA,
        "kind": content.kind,
        "severity": content.severity,
        "run_id": content.run_id,
        "dag_id": content.dag_id,
        "report_url": content.report_url,
        "emulator": content.emulator,
        "drifts": content.drifts,
        "recoveries": content.recoveries,
        "error": truncate_error(content.error),
        "validation": content.validation,
    }


def _slack_title(c: AlertContent) -> str:
    where = f"run {c.run_id}" + (f" (DAG {c.dag_id})" if c.dag_id else "")
    kind = c.kind
    if kind == "run_failed":
        title = f":x: Kafka Latency Lab: {where} failed"
    elif kind == "validation_failed":
        v = c.validation or {}
        dur = v.get("durability") or {}
        if dur and not dur.get("success", True):
            title = (f":rotating_light: Kafka Latency Lab: durability broken in {where}: "
                     f"{dur.get('acked_lost', 0)} acked message(s) lost under the durability "
                     "profile")
        else:
            title = f":x: Kafka Latency Lab: {v.get('suite') or ''} validation failed in {where}"
    elif kind == "drift":
        title = f":warning: Kafka Latency Lab: {len(c.drifts)} drift(s) in {where}"
        if c.recoveries:
            title += f", {len(c.recoveries)} recovered"
    else:
        title = (f":white_check_mark: Kafka Latency Lab: {len(c.recoveries)} series recovered "
                 f"in {where}")
    if c.emulator:
        title += f" [{EMULATOR_LABEL}]"
    if c.severity == HIGHEST_SEVERITY:  # after the emoji: ":rotating_light: [CRITICAL] ..."
        emoji, _, rest = title.partition(" ")
        title = f"{emoji} [{c.severity.upper()}] {rest}"
    return title


def validation_lines(validation: Mapping[str, Any]) -> list[str]:
    """Text lines about a failed validation: the durability trials that lost acked messages
    first, then the failed checks (at most :data:`MAX_VALIDATION_LINES` each)."""
    lines: list[str] = []
    dur = validation.get("durability") or {}
    trials = list(dur.get("trials") or [])
    for t in trials[:MAX_VALIDATION_LINES]:
        in_logs, absent = t.get("acked_lost_in_broker_logs"), t.get("acked_lost_absent_from_logs")
        lines.append(f"{t.get('trial_id')}: {t.get('acked_lost')} acked message(s) lost "
                     f"({in_logs if in_logs is not None else '?'} still in a broker log, "
                     f"{absent if absent is not None else '?'} in none)")
    if len(trials) > MAX_VALIDATION_LINES:
        lines.append(f"… and {len(trials) - MAX_VALIDATION_LINES} more trial(s)")
    checks = list(validation.get("failed_checks") or [])
    lines += [f"FAILED {x}" for x in checks[:MAX_VALIDATION_LINES]]
    if len(checks) > MAX_VALIDATION_LINES:
        lines.append(f"… and {len(checks) - MAX_VALIDATION_LINES} more failed check(s)")
    if validation.get("report_path"):
        lines.append(f"validation report: {validation['report_path']}")
    return lines


def _slack_list(heading: str, recs: list[dict[str, Any]]) -> dict[str, Any]:
    lines = [f"• {series_line(x)}" for x in recs[:MAX_SLACK_DRIFT_BLOCKS]]
    if len(recs) > MAX_SLACK_DRIFT_BLOCKS:
        lines.append(f"… and {len(recs) - MAX_SLACK_DRIFT_BLOCKS} more")
    return {"type": "section", "text": {"type": "mrkdwn", "text": f"*{heading}*\n" + "\n".join(lines)}}


def slack_body(content: AlertContent) -> dict[str, Any]:
    """A Slack incoming-webhook body of ``content``: ``text`` (fallback) plus ``blocks``."""
    c = content
    title = _slack_title(c)
    header_text = title[:MAX_SLACK_HEADER_CHARS]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": header_text, "emoji": True}}
    ]
    if c.error is not None:
        err = truncate_error(c.error) or ""
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"```{err}```"}})
    if c.validation is not None:
        text_lines = "\n".join(f"• {x}" for x in validation_lines(c.validation))
        blocks.append({"type": "section", "text": {
            "type": "mrkdwn", "text": f"*Validation ({c.validation.get('suite')})*\n{text_lines}"}})
    if c.drifts:
        blocks.append(_slack_list("Drift", c.drifts))
    if c.recoveries:
        blocks.append(_slack_list("Recovered", c.recoveries))
    if c.report_url:
        blocks.append(
            {"type": "context",
             "elements": [{"type": "mrkdwn", "text": f"<{c.report_url}|Trend report>"}]}
        )
    text = title
    if c.drifts:
        text += "\n" + "\n".join(series_line(x) for x in c.drifts[:MAX_SLACK_DRIFT_BLOCKS])
    if c.error is not None:
        text += f"\n{truncate_error(c.error)}"
    if c.validation is not None:
        text += "\n" + "\n".join(validation_lines(c.validation))
    # Slack section text is limited to 3000 characters.
    for b in blocks:
        t = b.get("text")
        if isinstance(t, dict) and len(t.get("text", "")) > MAX_SLACK_TEXT_CHARS:
            t["text"] = t["text"][: MAX_SLACK_TEXT_CHARS - 1] + "…"
    return {"text": text[:MAX_SLACK_TEXT_CHARS], "blocks": blocks}


def build_generic_body(**fields: Unpack[AlertFields]) -> dict[str, Any]:
    """The generic JSON alert body (schema ``kafkalab.alert/v1``, see the docs)."""
    return generic_body(AlertContent.of(**fields))


def build_slack_body(**fields: Unpack[AlertFields]) -> dict[str, Any]:
    """A Slack incoming-webhook body: ``text`` (fallback) plus Block Kit ``blocks``."""
    return slack_body(AlertContent.of(**fields))


def build_body(fmt: AlertFormat, **fields: Unpack[AlertFields]) -> dict[str, Any]:
    """Dispatch to :func:`build_slack_body` or :func:`build_generic_body`.

    Raises:
        AlertError: ``fmt`` is neither ``slack`` nor ``generic``.
    """
    if fmt == "slack":
        return build_slack_body(**fields)
    if fmt == "generic":
        return build_generic_body(**fields)
    raise AlertError(f"unknown alert format {fmt!r} (expected 'slack' or 'generic')")


__all__ = [
    "DEFAULT_SEVERITY",
    "DRIFT_FIELDS",
    "GENERIC_SCHEMA",
    "HIGHEST_SEVERITY",
    "MAX_ERROR_CHARS",
    "MAX_SLACK_DRIFT_BLOCKS",
    "MAX_VALIDATION_LINES",
    "SEVERITIES",
    "AlertContent",
    "AlertFields",
    "AlertFormat",
    "AlertKind",
    "Severity",
    "build_body",
    "build_generic_body",
    "build_slack_body",
    "clean_drift",
    "clean_validation",
    "format_change",
    "format_value",
    "generic_body",
    "series_line",
    "severity_rank",
    "slack_body",
    "truncate_error",
    "validation_lines",
]
