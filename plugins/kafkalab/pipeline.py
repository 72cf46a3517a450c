"""The Airflow tasks of the lab, as plain importable functions.

The DAG files in ``dags/`` only wire these together; every function here takes and returns
JSON-able values (they travel through XCom), imports its heavy dependencies inside its body
and does no I/O at import time, so importing this module while a DAG file is parsed costs
nothing but the module itself.

The chain (see ``docs/airflow.md``)::

    name_run -> check_cluster -> prepare_run -> run_cell x N (dynamic mapping) -> close_run
      -> aggregate_metrics (Spark) -> validate_metrics (Spark + GX)
      -> check_drift -> publish_report -> send_alerts -> verify_outcome

Settings come from Airflow Connections, read at run time:

* ``kafkalab_cluster`` (optional): ``extra.descriptor_path``, the cluster descriptor YAML;
* ``kafkalab_alert_webhook`` (optional): the webhook URL, see :func:`webhook_from_connection`.

Data directory: ``$KAFKALAB_DATA_DIR`` or ``<repo>/lab-data`` (:func:`lab_data_dir`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalab.errors import CellFailedError, ClusterError, LabError, RunError
from kafkalab.payloads import payload_names
from kafkalab.scenarios.catalog import KAFKA_SCENARIOS, SCENARIOS

if TYPE_CHECKING:
    from kafkalab.runner import RunRequest

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The checkout this module lives in (``plugins/kafkalab/pipeline.py`` -> repo)."""

SCENARIO_CHOICES: tuple[str, ...] = SCENARIOS
PAYLOAD_CHOICES: tuple[str, ...] = tuple(payload_names())
PROFILE_CHOICES: tuple[str, ...] = ("default", "throughput", "latency", "durability", "availability")
"""Choices offered by the trigger form; the task re-validates against the lab's own lists.
Profiles are listed here, not globbed from include/profiles/, so parsing a DAG reads no file
(a unit test keeps the two in step)."""

_KAFKA_SCENARIOS = frozenset(KAFKA_SCENARIOS)

RUN_PREFIXES: dict[str, str] = {
    "latency_experiment": "experiment",
    "nightly_latency_regression": "nightly",
}
"""Prefix of the lab run ids of each DAG (``nightly-20261121T000000Z``)."""

CLUSTER_CONN_ID = "kafkalab_cluster"
ALERT_CONN_ID = "kafkalab_alert_webhook"

SPARK_JOBS: dict[str, str] = {
    "aggregate": "spark_jobs/aggregate_metrics.py",
    "validate": "spark_jobs/validate_metrics.py",
}


# --------------------------------------------------------------------------- locations


def lab_data_dir() -> Path:
    """``$KAFKALAB_DATA_DIR`` or ``<repo>/lab-data``. No I/O (safe at DAG-parse time).

    Unlike :func:`kafkalab.paths.data_dir` this does not depend on the current directory,
    which for an Airflow task is a temporary one.
    """
    env = os.environ.get("KAFKALAB_DATA_DIR")
    if env:
        return Path(env).expanduser().absolute()
    return REPO_ROOT / "lab-data"


def lab_home_dir() -> Path:
    """``$KAFKALAB_HOME`` or ``<repo>/.lab`` (where ``cluster.yaml`` lives). No I/O."""
    env = os.environ.get("KAFKALAB_HOME")
    if env:
        return Path(env).expanduser().absolute()
    return REPO_ROOT / ".lab"


def spark_application(job: str) -> str:
    """Absolute path of a Spark job script (``aggregate`` or ``validate``). No I/O."""
    try:
        return str(REPO_ROOT / SPARK_JOBS[job])
    except KeyError:
        raise ValueError(f"unknown Spark job {job!r} (known: {', '.join(SPARK_JOBS)})") from None


def spark_job_args(job: str, run_id: Any, data_dir: str | os.PathLike[str] | None = None) -> list[Any]:
    """The ``application_args`` of a Spark job for one run.

    Args:
        job: ``aggregate`` (``spark_jobs/aggregate_metrics.py``) or ``validate``
            (``spark_jobs/validate_metrics.py``).
        run_id: the lab run id, or an XComArg / Jinja string resolved by Airflow at run time.
        data_dir: lab data directory or any Hadoop-compatible URI (default :func:`lab_data_dir`).
    """
    root = str(data_dir if data_dir is not None else lab_data_dir()).rstrip("/")
    if job == "aggregate":
        return ["--samples", f"{root}/samples", "--out", f"{root}/aggregates", "--run-id", run_id]
    if job == "validate":
        return ["--samples", f"{root}/samples", "--aggregates", f"{root}/aggregates",
                "--run-id", run_id, "--out", f"{root}/validation"]
    raise ValueError(f"unknown Spark job {job!r} (known: {', '.join(SPARK_JOBS)})")


def spark_conf() -> dict[str, str]:
    """Spark settings for the jobs: no UI, loopback driver (``$KAFKALAB_SPARK_DRIVER_HOST``
    overrides the driver address when executors run on other hosts)."""
    host = os.environ.get("KAFKALAB_SPARK_DRIVER_HOST", "127.0.0.1")
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": host,
        "spark.driver.bindAddress": host,
        "spark.sql.shuffle.partitions": "4",
        "spark.log.level": "WARN",
    }


def spark_env() -> dict[str, str]:
    """Environment of ``spark-submit``: the Python that runs the jobs, no GX analytics."""
    import sys

    python = os.environ.get("PYSPARK_PYTHON") or sys.executable
    env = {"PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python,
           "GX_ANALYTICS_ENABLED": "false"}
    if "KAFKALAB_SPARK_DRIVER_HOST" not in os.environ:
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


# --------------------------------------------------------------------------- run ids

_TS_RE = re.compile(
    r"(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})T(?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})"
    r"(?P<frac>\.\d+)?(?P<tz>Z|[+-]\d{2}:?\d{2})?"
)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def lab_run_id(airflow_run_id: str, prefix: str = "airflow") -> str:
    """Turn an Airflow run id into a path-safe lab run id (deterministic).

    ``scheduled__2026-11-21T00:00:00+00:00`` -> ``<prefix>-20261121T000000Z``. When the run id
    holds more than a whole-second timestamp (microseconds, a random suffix from the API,
    another time zone) a 6-hex digest of the full id is appended so two runs never share a
    lab run id; an id without a timestamp is slugged (``<prefix>-<slug>-<hash>``). Retries of
    one DAG run map to the same lab run id, so a retried run replaces its rows.
    """
    prefix = _UNSAFE.sub("-", prefix).strip("-.") or "airflow"
    digest = hashlib.sha1(airflow_run_id.encode("utf-8")).hexdigest()[:6]
    m = _TS_RE.search(airflow_run_id)
    if m:
        ts = datetime(int(m["y"]), int(m["m"]), int(m["d"]), int(m["H"]), int(m["M"]), int(m["S"]),
                      tzinfo=UTC)
        tz = m["tz"]
        if tz and tz != "Z":
            sign = 1 if tz[0] == "+" else -1
            hh, mm = int(tz[1:3]), int(tz[-2:])
            from datetime import timedelta

            ts = (ts - sign * timedelta(hours=hh, minutes=mm)).replace(tzinfo=UTC)
        stamp = ts.strftime("%Y%m%dT%H%M%SZ")
        kind, _, _ = airflow_run_id.partition("__")
        clean = (m.start() == len(kind) + 2 and m.end() == len(airflow_run_id)
                 and not (m["frac"] and int(m["frac"][1:] or 0)))
        return f"{prefix}-{stamp}" if clean else f"{prefix}-{stamp}-{digest}"
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", airflow_run_id).strip("-")[:48] or "run"
    return f"{prefix}-{slug}-{digest}"


# --------------------------------------------------------------------------- connections


def _get_connection(conn_id: str) -> Any | None:
    """The Airflow Connection ``conn_id``, or None when it does not exist (or no Airflow)."""
    try:
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException
    except ImportError:  # pragma: no cover - Airflow is part of the stack
        return None
    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None


def _extra(conn: Any) -> dict[str, Any]:
    try:
        extra = conn.extra_dejson
    except Exception:
        return {}
    return dict(extra) if isinstance(extra, Mapping) else {}


def webhook_from_connection(conn: Any) -> tuple[str, str, str | None]:
    """``(url, format, report_base_url)`` from a webhook Connection.

    * ``extra.webhook_url``: the whole URL (wins over everything else);
    * else ``[schema://]host[:port]`` + path, where the scheme is ``schema`` when it is
      ``http``/``https`` (HttpHook's convention, default ``https`` unless ``conn_type`` is
      ``http``), the path is ``extra.endpoint``, else the password (Slack-webhook style: the
      secret token path lives in the password), else a non-scheme ``schema`` (what the
      URI form ``http://host:port/path`` puts there);
    * ``host`` may itself be a full ``http(s)://...`` URL;
    * ``extra.format``: ``slack`` (default) or ``generic``; ``extra.report_base_url``: where
      the report directory is served (default: a ``file://`` link).
    """
    extra = _extra(conn)
    fmt = str(extra.get("format") or "slack")
    report_base = extra.get("report_base_url") or None
    if extra.get("webhook_url"):
        return str(extra["webhook_url"]), fmt, report_base
    host = (conn.host or "").strip()
    schema = (conn.schema or "").strip()
    path = str(extra.get("endpoint") or "") or (conn.password or "")
    if not path and schema and schema.lower() not in ("http", "https"):
        path = schema
    if host.startswith(("http://", "https://")):
        base = host.rstrip("/")
    else:
        if not host:
            return "", fmt, report_base
        scheme = schema.lower() if schema.lower() in ("http", "https") else (
            "http" if (conn.conn_type or "") == "http" else "https")
        base = f"{scheme}://{host}" + (f":{conn.port}" if conn.port else "")
    if path and not path.startswith("/"):
        path = "/" + path
    return base + path, fmt, report_base


def alert_webhook(conn_id: str = ALERT_CONN_ID) -> tuple[str, str, str | None] | None:
    """The webhook settings of Connection ``conn_id``; None when it is not configured."""
    conn = _get_connection(conn_id)
    if conn is None:
        return None
    url, fmt, base = webhook_from_connection(conn)
    return (url, fmt, base) if url else None


def descriptor_path(cluster_path: str | None = None) -> Path:
    """Which cluster descriptor to use: the given path, else the ``kafkalab_cluster``
    Connection's ``extra.descriptor_path``, else ``<KAFKALAB_HOME or repo/.lab>/cluster.yaml``."""
    if cluster_path:
        return Path(cluster_path).expanduser()
    conn = _get_connection(CLUSTER_CONN_ID)
    if conn is not None and _extra(conn).get("descriptor_path"):
        return Path(str(_extra(conn)["descriptor_path"])).expanduser()
    return lab_home_dir() / "cluster.yaml"


def report_url(run_id: str, base_url: str | None = None) -> str:
    """Link to a run's report page: ``<base_url>/<run_id>/index.html`` or a ``file://`` URI."""
    if base_url:
        return f"{base_url.rstrip('/')}/{run_id}/index.html"
    return (lab_data_dir() / "reports" / run_id / "index.html").as_uri()


# --------------------------------------------------------------------------- tasks


def _needs_kafka(scenarios: list[str] | tuple[str, ...]) -> bool:
    return any(s in _KAFKA_SCENARIOS for s in scenarios)


def resolve_scenarios(params: Mapping[str, Any]) -> list[str]:
    """The scenarios a run of these params measures (the param, else the workload's)."""
    if params.get("scenarios"):
        return [str(s) for s in params["scenarios"]]
    from kafkalab.config import load_workload

    return list(load_workload(str(params.get("workload") or "seed000")).scenarios)


def check_cluster(cluster_path: str | None = None,
                  scenarios: list[str] | None = None) -> dict[str, Any]:
    """Check that the cluster of the descriptor answers metadata (~10 s timeout).

    Args:
        cluster_path: descriptor YAML (default: see :func:`descriptor_path`).
        scenarios: when given and none of them uses Kafka, nothing is checked.

    Returns:
        ``{"required", "descriptor_path", "brokers_answering", "cluster": <public view>}``.

    Raises:
        ClusterError: no descriptor, or the cluster does not answer.
    """
    if scenarios is not None and not _needs_kafka(scenarios):
        log.info("scenarios %s need no Kafka cluster", scenarios)
        return {"required": False, "descriptor_path": None, "brokers_answering": 0, "cluster": None}
    from kafkalab.cluster.descriptor import load_descriptor, public_view
    from kafkalab.runner import check_reachable

    path = descriptor_path(cluster_path)
    d = load_descriptor(path)
    n = check_reachable(d)
    log.info("cluster %s (%s %s) answers: %d broker(s)", d.bootstrap_servers, d.flavor, d.version, n)
    if d.is_emulator:
        log.warning("%s is an EMULATOR, not Apache Kafka: its latencies say nothing about Kafka",
                    d.version)
    return {"required": True, "descriptor_path": str(path), "brokers_answering": n,
            "cluster": _jsonable(public_view(d))}


def build_request(params: Mapping[str, Any], run_id: str | None = None,
                  command: str | None = None) -> RunRequest:
    """A :class:`~kafkalab.runner.RunRequest` from DAG params.

    Params: ``workload`` (name or YAML path, default ``seed000``), ``scenarios``,
    ``payloads``, ``profiles`` (empty or absent: the workload's), ``messages`` (int >= 1 or
    null: the workload's), ``warmup_messages`` (optional), ``cluster_descriptor`` (optional
    path). Validation errors are :class:`~kafkalab.errors.ConfigError`.
    """
    from kafkalab.cluster.descriptor import load_descriptor
    from kafkalab.config import load_workload
    from kafkalab.errors import ConfigError
    from kafkalab.runner import RunRequest

    w = load_workload(str(params.get("workload") or "seed000"))
    updates: dict[str, Any] = {}
    for key, minimum in (("messages", 1), ("warmup_messages", 0)):
        value = params.get(key)
        if value is None or value == "":
            continue
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"param {key}: expected an integer, got {value!r}") from None
        if number < minimum:
            raise ConfigError(f"param {key}: must be at least {minimum}, got {number}")
        updates[key] = number
    if updates:
        w = w.model_copy(update=updates)
    scenarios = [str(s) for s in (params.get("scenarios") or w.scenarios)]
    payloads = [str(p) for p in (params.get("payloads") or w.payloads)]
    profiles = [str(p) for p in (params.get("profiles") or w.profiles)]
    descriptor = None
    if _needs_kafka(scenarios):
        descriptor = load_descriptor(descriptor_path(params.get("cluster_descriptor") or None))
    return RunRequest(
        workload=w, profiles=profiles, payloads=payloads, scenarios=scenarios,
        data_dir=lab_data_dir(), descriptor=descriptor, run_id=run_id,
        command=command or f"airflow task (kafkalab.pipeline) run_id={run_id}",
    )


def prepare_run(params: Mapping[str, Any], run_id: str, command: str | None = None) -> list[dict[str, str]]:
    """Validate, check the cluster, provision the topics, start the run (manifest ``running``).

    Returns:
        The cells ``[{"scenario", "payload", "profile"}, ...]``, one mapped task each.
    """
    from kafkalab.runner import start_run

    req = build_request(params, run_id, command)
    started = start_run(req, progress=log.info)
    cells = [{"scenario": str(c["scenario"]), "payload": str(c["payload"]),
              "profile": str(c["profile"])} for c in started["cells"]]
    log.info("run %s started: %d cell(s) in %s", run_id, len(cells), req.data_dir)
    return cells


def _summary(result: Any) -> dict[str, Any]:
    """JSON-able summary of a measured cell (a CellResult or an already JSON-able dict)."""
    if isinstance(result, Mapping):
        return _jsonable(dict(result))
    from kafkalab.runner import cell_summary

    s = cell_summary(result)
    lat = s.get("latency")
    tool = s.get("tool") or {}
    p50 = lat.p50_ms if lat is not None else tool.get("p50")
    p99 = lat.p99_ms if lat is not None else tool.get("p99")
    return {
        "scenario": result.scenario, "payload": result.payload, "profile": result.profile,
        "status": result.status, "rows": len(result.samples), "reason": result.reason,
        "count": s.get("count"), "lost": s.get("lost"),
        "p50_ms": None if p50 is None else float(p50),
        "p99_ms": None if p99 is None else float(p99),
        "emulator": bool(s.get("emulator")),
    }


def run_cell(params: Mapping[str, Any], run_id: str, cell: Mapping[str, str]) -> dict[str, Any]:
    """Measure one ``(scenario, payload, profile)`` cell of a started run.

    Its samples and manifest fragment are written before this returns or raises.

    Returns:
        ``{"scenario", "payload", "profile", "status", "rows", "reason", "p50_ms", "p99_ms", ...}``
        with status ``complete`` or ``skipped``.

    Raises:
        CellFailedError: the cell failed (the run will be ``incomplete``).
    """
    from kafkalab.runner import measure_cell

    req = build_request(params, run_id)
    result = measure_cell(req, cell["scenario"], cell["payload"], cell["profile"],
                          progress=log.info)
    summary = _summary(result)
    log.info("cell %s/%s/%s: %s, %s rows, p50 %s ms, p99 %s ms", summary["scenario"],
             summary["payload"], summary["profile"], summary["status"], summary.get("rows"),
             summary.get("p50_ms"), summary.get("p99_ms"))
    if summary["status"] == "failed":
        raise CellFailedError(f"cell {summary['scenario']}/{summary['payload']}/"
                              f"{summary['profile']} failed: {summary.get('reason')}")
    return summary


def close_run(run_id: str) -> dict[str, Any]:
    """Merge the cells' fragments into ``runs/<run_id>.json`` (status complete|incomplete).

    Returns:
        ``{"run_id", "status", "error", "cells"}``.

    Raises:
        RunError: the run was never started (no manifest).
    """
    from kafkalab.runner import finish_run

    data_dir = lab_data_dir()
    if not (data_dir / "runs" / f"{run_id}.json").is_file():
        raise RunError(f"run {run_id} was never started: no {data_dir}/runs/{run_id}.json")
    manifest = finish_run(data_dir, run_id)
    out = {"run_id": run_id, "status": manifest.get("status"), "error": manifest.get("error"),
           "cells": _jsonable(manifest.get("cells") or [])}
    log.info("run %s: %s%s", run_id, out["status"], f" ({out['error']})" if out["error"] else "")
    return out


def check_drift(run_id: str) -> dict[str, Any]:
    """Detect drift of ``run_id`` against its baseline; writes ``drift/run_id=<id>/drift.parquet``.

    Returns:
        ``{"run_id", "series", "drifts", "path", "flags": [{series_key, change_pct, ...}]}``.
    """
    from kafkalab.drift import records_to_dicts, run_drift

    records, path = run_drift(lab_data_dir(), run_id)
    recs = records_to_dicts(records)
    flags = [{k: r.get(k) for k in ("series_key", "metric", "baseline_value", "latest_value",
                                    "change_pct", "confidence", "broker_is_emulator")}
             for r in recs if r.get("is_drift")]
    log.info("run %s: %d series checked, %d drift(s)", run_id, len(recs), len(flags))
    for f in flags[:20]:
        log.warning("DRIFT %s: %s -> %s (%s %%)", f["series_key"], f["baseline_value"],
                    f["latest_value"], f["change_pct"])
    return {"run_id": run_id, "series": len(recs), "drifts": len(flags),
            "path": str(path) if path else None, "flags": flags[:50]}


def publish_report(run_id: str) -> str:
    """Build the trend report (overview + this run's page); returns the run page's path."""
    from kafkalab.report.build import build_report

    page = build_report(lab_data_dir(), run_id=run_id)
    log.info("report of %s: %s (overview %s)", run_id, page, page.parent.parent / "index.html")
    return str(page)


def send_alerts(run_id: str, conn_id: str = ALERT_CONN_ID, dag_id: str | None = None) -> dict[str, Any]:
    """Announce new drifts / recoveries of ``run_id`` to the webhook of Connection ``conn_id``.

    No Connection: logs "no alert webhook configured" and returns (not a failure).

    Returns:
        The summary of :func:`kafkalab.alerts.alert_on_drift`.

    Raises:
        kafkalab.alerts.AlertError: delivery failed (message without the URL); the state is
            not updated, so the next run announces again.
    """
    from kafkalab.alerts import alert_on_drift

    hook = alert_webhook(conn_id)
    if hook is None:
        log.info("no alert webhook configured (Connection %r); alerts not sent", conn_id)
        return {"run_id": run_id, "sent": False, "drifts": 0, "recoveries": 0, "suppressed": 0,
                "reason": "no alert webhook configured"}
    url, fmt, base = hook
    summary = alert_on_drift(lab_data_dir(), run_id, url, fmt=fmt,  # type: ignore[arg-type]
                             report_url=report_url(run_id, base), dag_id=dag_id)
    log.info("alerts for %s: %s", run_id, summary)
    return _jsonable(summary)


def verify_outcome(run_id: str) -> dict[str, Any]:
    """The run's verdict from its files: manifest complete and validation passed.

    Raises:
        RunError: naming what is wrong (incomplete run, failed or missing validation).
    """
    import json

    data_dir = lab_data_dir()
    problems: list[str] = []
    manifest_path = data_dir / "runs" / f"{run_id}.json"
    status = None
    if manifest_path.is_file():
        status = json.loads(manifest_path.read_text(encoding="utf-8")).get("status")
        if status != "complete":
            problems.append(f"run is {status}")
    else:
        problems.append("no run manifest")
    vpath = data_dir / "validation" / f"{run_id}.json"
    valid = None
    if vpath.is_file():
        valid = bool(json.loads(vpath.read_text(encoding="utf-8")).get("success"))
        if not valid:
            problems.append(f"validation failed (see {vpath})")
    else:
        problems.append("no validation result")
    if problems:
        raise RunError(f"run {run_id}: " + "; ".join(problems))
    return {"run_id": run_id, "status": status, "validation_success": valid}


def on_failure_alert(context: Mapping[str, Any]) -> None:
    """Airflow ``on_failure_callback``: tell on-call that a run failed. Never raises.

    Uses the ``kafkalab_alert_webhook`` Connection; without it only logs.
    """
    try:
        dag_run = context.get("dag_run")
        dag = context.get("dag")
        ti = context.get("task_instance") or context.get("ti")
        dag_id = getattr(dag, "dag_id", None) or getattr(dag_run, "dag_id", None)
        airflow_run_id = getattr(dag_run, "run_id", None) or context.get("run_id")
        prefix = RUN_PREFIXES.get(str(dag_id), str(dag_id or "airflow"))
        run_id = lab_run_id(str(airflow_run_id), prefix) if airflow_run_id else None
        parts = []
        if context.get("reason"):
            parts.append(str(context["reason"]))
        if ti is not None and getattr(ti, "task_id", None):
            parts.append(f"task {ti.task_id} failed")
        if context.get("exception") is not None:
            exc = context["exception"]
            parts.append(f"{type(exc).__name__}: {exc}")
        error = "; ".join(parts) or "the DAG run failed"
        hook = alert_webhook(ALERT_CONN_ID)
        if hook is None:
            log.warning("run %s of %s failed (%s); no alert webhook configured", run_id, dag_id,
                        error)
            return
        from kafkalab.alerts import alert_run_failed

        url, fmt, base = hook
        alert_run_failed(url, dag_id, run_id, error, fmt=fmt,  # type: ignore[arg-type]
                         report_url=report_url(run_id, base) if run_id else None)
        log.info("failure alert for %s of %s sent", run_id, dag_id)
    except Exception as exc:  # a callback must never raise
        log.warning("failure alert not sent: %s: %s", type(exc).__name__, exc)


# --------------------------------------------------------------------------- helpers


def _jsonable(value: Any) -> Any:
    """Recursively turn numpy scalars, Paths and other objects into JSON-able values."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):
        try:
            return _jsonable(value.item())
        except (TypeError, ValueError):
            pass
    return str(value)


__all__ = [
    "ALERT_CONN_ID",
    "CLUSTER_CONN_ID",
    "PAYLOAD_CHOICES",
    "PROFILE_CHOICES",
    "RUN_PREFIXES",
    "SCENARIO_CHOICES",
    "CellFailedError",
    "ClusterError",
    "LabError",
    "RunError",
    "build_request",
    "check_cluster",
    "check_drift",
    "close_run",
    "descriptor_path",
    "lab_data_dir",
    "lab_run_id",
    "on_failure_alert",
    "prepare_run",
    "publish_report",
    "resolve_scenarios",
    "run_cell",
    "send_alerts",
    "spark_application",
    "spark_conf",
    "spark_env",
    "spark_job_args",
    "verify_outcome",
    "webhook_from_connection",
]
