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
MAX_SLACK_FIELD_CHARS = 2000
MAX_SLACK_BLOCKS = 50

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
    "planned_messages", "metric", "direction", "baseline_value", "baseline_mad",
    "baseline_runs", "baseline_from_run_id", "latest_value", "change_pct", "robust_z",
    "confidence", "latest_ci_low", "latest_ci_high", "baseline_ci_low", "baseline_ci_high",
    "rule", "verdict", "alert_status", "good_runs", "alert_since_run_id",
    "broker_is_emulator", "run_id",
)
"""The drift-record fields an alert body carries for each series (besides the derived
``unit``, ``k_mad``, ``baseline_band_low`` / ``baseline_band_high``: :func:`clean_drift`)."""

MAD_SCALE = 1.4826
"""MAD x 1.4826 estimates a normal standard deviation (the drift rule's spread,
:mod:`kafkalab.drift.detect`)."""

FAILED_TASK_FIELDS: tuple[str, ...] = ("task_id", "map_index", "try_number", "log_url")
"""What a ``run_failed`` alert says about the task that failed first."""


def metric_unit(metric: str | None) -> str:
    """The unit of a metric, from its name (the lab puts units in names): ``ms`` (``_ms``),
    ``msg/s`` (``_per_s``), ``%`` (``_pct``), ``B`` (``_bytes``), ``messages`` (``_count``),
    else ``""``."""
    parts = str(metric or "").split("_")
    if "ms" in parts:
        return "ms"
    if "per" in parts and "s" in parts:
        return "msg/s"
    if "pct" in parts:
        return "%"
    if "bytes" in parts:
        return "B"
    if "count" in parts:
        return "messages"
    return ""


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
    failed_task: Mapping[str, Any] | None
    airflow_run_id: str | None
    busy_host: Iterable[Mapping[str, Any]]


BUSY_FIELDS: tuple[str, ...] = (
    "scenario", "client", "payload", "profile", "workload", "cell_id", "host_other_cpu_pct",
    "run_queue_avg", "steal_pct", "note",
)
"""What an alert says of each cell of the run measured on a busy host (:func:`busy_cells`)."""


def busy_cells(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The cells of a run's drift records measured on a busy host (verdict ``busy_host``),
    one per cell (its :data:`BUSY_FIELDS`, non-finite floats -> None): they were not judged,
    so an alert about the run's other series says so."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for rec in records:
        if rec.get("verdict") != "busy_host":
            continue
        key = tuple(rec.get(k) for k in ("scenario", "client", "payload", "profile", "workload",
                                         "cell_id"))
        out.setdefault(key, {k: (as_float(rec.get(k)) if isinstance(rec.get(k), float)
                                 else rec.get(k)) for k in BUSY_FIELDS})
    return list(out.values())


def busy_line(rec: Mapping[str, Any]) -> str:
    """One line about a cell measured on a busy host: the cell and its figures."""
    figures = [f"other processes {format_value(rec.get('host_other_cpu_pct'), '%')} CPU"]
    if as_float(rec.get("run_queue_avg")) is not None:
        figures.append(f"run queue {format_value(rec.get('run_queue_avg'))}")
    if as_float(rec.get("steal_pct")) is not None:
        figures.append(f"steal {format_value(rec.get('steal_pct'), '%')}")
    cell = f" cell {rec['cell_id']}" if rec.get("cell_id") else ""
    return (f"{rec.get('scenario')}/{rec.get('client')} {rec.get('payload')} "
            f"{rec.get('profile')}{cell}: {', '.join(figures)}; not judged")


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
    ``worsened`` and ``alerted_run_id`` when the record has them, and derived:

    * ``unit``: :func:`metric_unit` of the metric;
    * ``k_mad``: the drift rule's threshold in robust z (the record's, set by
      :func:`kafkalab.alerts.notify.alert_on_drift` from the drift config), else None;
    * ``baseline_band_low`` / ``baseline_band_high``: the MAD band of the rule, baseline
      median -/+ ``k_mad`` x 1.4826 x MAD (None without ``k_mad`` or MAD).
    """
    out: dict[str, Any] = {}
    for k in DRIFT_FIELDS:
        v = rec.get(k)
        out[k] = as_float(v) if isinstance(v, float) else v
    out["broker_is_emulator"] = bool(rec.get("broker_is_emulator") or False)
    out["unit"] = metric_unit(out.get("metric"))
    k_mad = as_float(rec.get("k_mad"))
    out["k_mad"] = k_mad
    med, mad = as_float(out.get("baseline_value")), as_float(out.get("baseline_mad"))
    if k_mad is not None and med is not None and mad is not None:
        half = k_mad * MAD_SCALE * mad
        out["baseline_band_low"], out["baseline_band_high"] = med - half, med + half
    else:
        out["baseline_band_low"] = out["baseline_band_high"] = None
    if "worsened" in rec:
        out["worsened"] = bool(rec["worsened"])
    if "alerted_run_id" in rec:
        out["alerted_run_id"] = rec["alerted_run_id"]
    return out


def clean_failed_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`FAILED_TASK_FIELDS` of a failed task (``map_index`` -1 when not mapped)."""
    out = {k: task.get(k) for k in FAILED_TASK_FIELDS}
    out["map_index"] = int(out["map_index"]) if isinstance(out["map_index"], int) else -1
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
    failed_task: dict[str, Any] | None = None
    airflow_run_id: str | None = None
    busy_host: list[dict[str, Any]] | None = None
    """The run's cells measured on a busy host (:func:`busy_cells`): not judged."""

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
            failed_task=(None if (task := fields.get("failed_task")) is None
                         else clean_failed_task(task)),
            airflow_run_id=fields.get("airflow_run_id"),
            busy_host=[dict(r) for r in fields.get("busy_host", ())],
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
    then the unit (``%`` attached, any other after a space); ``n/a`` when missing."""
    f = as_float(v)
    if f is None:
        return "n/a"
    s = f"{f:,.0f}" if abs(f) >= 1000 else (f"{f:.1f}" if abs(f) >= 10 else f"{f:.3g}")
    unit = unit.strip()
    if not unit:
        return s
    return f"{s}{unit}" if unit == "%" else f"{s} {unit}"


def format_range(low: Any, high: Any, unit: str = "") -> str | None:
    """``low–high unit`` (None when either end is missing)."""
    if as_float(low) is None or as_float(high) is None:
        return None
    return f"{format_value(low)}–{format_value(high, unit)}"


def format_change(v: Any) -> str:
    """A signed change in percent, or ``from 0`` when undefined (zero baseline)."""
    f = as_float(v)
    return "from 0" if f is None else f"{f:+.1f}%"


def _unit_of(rec: Mapping[str, Any]) -> str:
    """The record's ``unit``, else :func:`metric_unit` of its metric."""
    unit = rec.get("unit")
    return str(unit) if unit is not None else metric_unit(rec.get("metric"))


def series_line(rec: Mapping[str, Any]) -> str:
    """One line of text about one series' drift record: the latest value and the baseline
    median with the metric's unit, and the change."""
    unit = _unit_of(rec)
    emu = f" [{EMULATOR_LABEL}]" if rec.get("broker_is_emulator") else ""
    worse = " (worsened)" if rec.get("worsened") else ""
    workload = f" ({rec['workload']})" if rec.get("workload") else ""
    return (
        f"{rec.get('metric')} {rec.get('scenario')}/{rec.get('client')} "
        f"{rec.get('payload')} {rec.get('profile')}{workload}: "
        f"{format_value(rec.get('latest_value'), unit)} vs "
        f"baseline {format_value(rec.get('baseline_value'), unit)} "
        f"({format_change(rec.get('change_pct'))}){worse}{emu}"
    )


def baseline_line(rec: Mapping[str, Any]) -> str:
    """The baseline of one series' drift record in words: the median of how many good runs,
    the rule's MAD band (not under the zero-baseline rule, which does not test it), the
    baseline's and the latest run's 95 % intervals (each when known), with the metric's
    unit."""
    unit = _unit_of(rec)
    parts = [f"baseline = median of {rec.get('baseline_runs') or 0} good run(s)"]
    band = (None if rec.get("rule") == "zero_baseline" else  # not the rule's test there
            format_range(rec.get("baseline_band_low"), rec.get("baseline_band_high"), unit))
    if band is not None:
        parts.append(f"MAD band {band} (±{format_value(rec.get('k_mad'))}×1.4826×MAD)")
    elif as_float(rec.get("baseline_mad")) is not None:
        parts.append(f"MAD {format_value(rec.get('baseline_mad'), unit)}")
    ci = format_range(rec.get("baseline_ci_low"), rec.get("baseline_ci_high"), unit)
    if ci is not None:
        parts.append(f"95 % CI {ci}")
    latest_ci = format_range(rec.get("latest_ci_low"), rec.get("latest_ci_high"), unit)
    if latest_ci is not None:
        parts.append(f"latest 95 % CI {latest_ci}")
    if rec.get("rule"):
        parts.append(f"rule {rec['rule']}")
    return "; ".join(parts)


def task_label(task: Mapping[str, Any]) -> str:
    """``task_id[map_index] (try N)`` of a failed task."""
    where = str(task.get("task_id"))
    map_index = task.get("map_index")
    if isinstance(map_index, int) and map_index >= 0:
        where += f"[{map_index}]"
    if task.get("try_number") is not None:
        where += f" (try {task['try_number']})"
    return where


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
        "airflow_run_id": content.airflow_run_id,
        "failed_task": content.failed_task,
        "busy_host": content.busy_host or [],
    }


def _slack_title(c: AlertContent) -> str:
    where = f"run {c.run_id}" + (f" (DAG {c.dag_id})" if c.dag_id else "")
    kind = c.kind
    if kind == "run_failed":
        title = f":x: Kafka Latency Lab: {where} failed"
        if c.failed_task and c.failed_task.get("task_id"):
            title += f" in task {task_label(c.failed_task)}"
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


def _sections(heading: str, lines: list[str]) -> list[dict[str, Any]]:
    """``lines`` under a bold heading as mrkdwn sections of at most
    :data:`MAX_SLACK_TEXT_CHARS` each (a line never split; an over-long one cut)."""
    out: list[dict[str, Any]] = []
    text = f"*{heading}*"
    for line in lines:
        line = line if len(line) < MAX_SLACK_TEXT_CHARS - 1 else line[: MAX_SLACK_TEXT_CHARS - 2] + "…"
        if len(text) + 1 + len(line) > MAX_SLACK_TEXT_CHARS:
            out.append({"type": "section", "text": {"type": "mrkdwn", "text": text}})
            text = line
        else:
            text += "\n" + line
    out.append({"type": "section", "text": {"type": "mrkdwn", "text": text}})
    return out


def _slack_list(heading: str, recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sections listing series: per series its line (values with units) and, below it, its
    baseline (:func:`baseline_line`); at most :data:`MAX_SLACK_DRIFT_BLOCKS` series."""
    lines = [f"• {series_line(x)}\n      _{baseline_line(x)}_"
             for x in recs[:MAX_SLACK_DRIFT_BLOCKS]]
    if len(recs) > MAX_SLACK_DRIFT_BLOCKS:
        lines.append(f"… and {len(recs) - MAX_SLACK_DRIFT_BLOCKS} more")
    return _sections(heading, lines)


def _slack_failed_task(c: AlertContent) -> dict[str, Any]:
    """A section of fields: the DAG, the run (lab and Airflow run ids), the failed task and
    a link to its log."""
    task = c.failed_task or {}
    run = f"`{c.run_id}`" + (f"\nAirflow `{c.airflow_run_id}`" if c.airflow_run_id else "")
    fields = [f"*DAG*\n`{c.dag_id}`", f"*Run*\n{run}"]
    if task.get("task_id"):
        fields.append(f"*Failed task*\n`{task_label(task)}`")
    if task.get("log_url"):
        fields.append(f"*Task log*\n<{task['log_url']}|open the log in Airflow>")
    return {"type": "section",
            "fields": [{"type": "mrkdwn", "text": f[:MAX_SLACK_FIELD_CHARS]} for f in fields]}


def slack_body(content: AlertContent) -> dict[str, Any]:
    """A Slack incoming-webhook body of ``content``: ``text`` (fallback) plus ``blocks``."""
    c = content
    title = _slack_title(c)
    header_text = title[:MAX_SLACK_HEADER_CHARS]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": header_text, "emoji": True}}
    ]
    if c.error is not None or c.failed_task is not None:
        blocks.append(_slack_failed_task(c))
    if c.error is not None:
        err = truncate_error(c.error) or ""
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"```{err}```"}})
    if c.validation is not None:
        text_lines = "\n".join(f"• {x}" for x in validation_lines(c.validation))
        blocks.append({"type": "section", "text": {
            "type": "mrkdwn", "text": f"*Validation ({c.validation.get('suite')})*\n{text_lines}"}})
    if c.drifts:
        blocks.extend(_slack_list("Drift", c.drifts))
    if c.recoveries:
        blocks.extend(_slack_list("Recovered", c.recoveries))
    if c.busy_host:
        blocks.extend(_sections("Measured on a busy host (not judged, not a baseline)",
                                [f"• {busy_line(x)}" for x in c.busy_host]))
    if c.report_url:
        blocks.append(
            {"type": "context",
             "elements": [{"type": "mrkdwn", "text": f"<{c.report_url}|Run report>"}]}
        )
    text = title
    if c.drifts:
        text += "\n" + "\n".join(series_line(x) for x in c.drifts[:MAX_SLACK_DRIFT_BLOCKS])
    if c.busy_host:
        text += "\nbusy host, not judged: " + "; ".join(busy_line(x) for x in c.busy_host)
    if c.failed_task is not None:
        text += f"\nfailed task {task_label(c.failed_task)}"
        if c.failed_task.get("log_url"):
            text += f": {c.failed_task['log_url']}"
    if c.error is not None:
        text += f"\n{truncate_error(c.error)}"
    if c.validation is not None:
        text += "\n" + "\n".join(validation_lines(c.validation))
    if c.report_url:
        text += f"\nreport: {c.report_url}"
    # Slack section text is limited to 3000 characters.
    for b in blocks:
        t = b.get("text")
        if isinstance(t, dict) and len(t.get("text", "")) > MAX_SLACK_TEXT_CHARS:
            t["text"] = t["text"][: MAX_SLACK_TEXT_CHARS - 1] + "…"
    return {"text": text[:MAX_SLACK_TEXT_CHARS], "blocks": blocks[:MAX_SLACK_BLOCKS]}


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
    "BUSY_FIELDS",
    "DEFAULT_SEVERITY",
    "DRIFT_FIELDS",
    "FAILED_TASK_FIELDS",
    "GENERIC_SCHEMA",
    "HIGHEST_SEVERITY",
    "MAD_SCALE",
    "MAX_ERROR_CHARS",
    "MAX_SLACK_DRIFT_BLOCKS",
    "MAX_VALIDATION_LINES",
    "SEVERITIES",
    "AlertContent",
    "AlertFields",
    "AlertFormat",
    "AlertKind",
    "Severity",
    "baseline_line",
    "build_body",
    "build_generic_body",
    "build_slack_body",
    "busy_cells",
    "busy_line",
    "clean_drift",
    "clean_failed_task",
    "clean_validation",
    "format_change",
    "format_range",
    "format_value",
    "generic_body",
    "metric_unit",
    "series_line",
    "severity_rank",
    "slack_body",
    "task_label",
    "truncate_error",
    "validation_lines",
]
