"""The Airflow tasks of the lab, as plain importable functions.

The DAG files in ``dags/`` only wire these together; every function here takes and returns
JSON-able values (they travel through XCom), imports its heavy dependencies inside its body
and does no I/O at import time, so importing this module while a DAG file is parsed costs
nothing but the module itself. No function depends on the current directory: locations
come from :mod:`kafkalab.paths`, data-dir files from :class:`kafkalab.store.LabData`.

The chain (see ``docs/airflow.md``)::

    name_run -> check_cluster -> prepare_run -> measure_cell x N (dynamic mapping) -> close_run
      -> aggregate_metrics (Spark) -> validate_metrics (Spark + GX)
      -> check_drift -> publish_report -> send_alerts -> verify_outcome

Settings come from Airflow Connections, read at run time through
:mod:`kafkalab.airflow.connections` (``kafkalab_cluster``, ``kafkalab_alert_webhook``).

Stale outputs: when a cell of a run is measured again after the run's aggregates,
validation, drift records or report were computed, the run manifest lists them in
``stale_outputs``. The tasks that compute them (``aggregate_metrics``, ``validate_metrics``,
``check_drift``, ``publish_report``) always recompute, then remove their entry
(:func:`mark_recomputed`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalab.airflow.connections import AlertWebhookConnection, ClusterConnection
from kafkalab.alerts.webhook import ALERT_CONN_ID
from kafkalab.catalog import needs_kafka
from kafkalab.config.loader import DEFAULT_WORKLOAD
from kafkalab.errors import CellFailedError, RunError, RunNeverStartedError
from kafkalab.kinds import LATENCY, RunKind
from kafkalab.store import LabData
from kafkalab.values import jsonable

if TYPE_CHECKING:
    from kafkalab.runner import RunRequest
    from kafkalab.summary import CellResult

log = logging.getLogger(__name__)


STALE_OUTPUTS: tuple[str, ...] = ("aggregates", "validation", "drift", "report")
"""The derived outputs of a run that a re-measured cell makes stale, in the order the chain
recomputes them (the manifest's ``stale_outputs`` entries)."""

DERIVED_FROM: dict[str, tuple[str, ...]] = {
    "aggregates": (),
    "validation": ("aggregates",),
    "drift": ("aggregates",),
    "report": ("aggregates", "validation", "drift"),
}
"""What each output is computed from: one computed from a stale input is stale itself."""

_PARAM_OVERRIDES = ("messages", "warmup_messages", "first_message_probes", "consumer_mode")
"""The workload keys a DAG param may override (``null`` or empty: the workload's)."""


def _workload(params: Mapping[str, Any]) -> str:
    """The ``workload`` param: a name from ``include/workloads/``, or an absolute YAML path
    (a task runs in a directory of its own, so a relative path would mean nothing)."""
    from kafkalab.errors import ConfigError

    value = str(params.get("workload") or DEFAULT_WORKLOAD)
    path = Path(value)
    if (path.suffix in (".yaml", ".yml") or len(path.parts) > 1) and not path.is_absolute():
        raise ConfigError(f"param workload: {value!r} is a relative path; give a workload "
                          "name from include/workloads/ or an absolute path")
    return value


def resolve_scenarios(params: Mapping[str, Any]) -> list[str]:
    """The scenarios a run of these params measures (the param, else the workload's)."""
    if params.get("scenarios"):
        return [str(s) for s in params["scenarios"]]
    from kafkalab.config import load_workload

    return list(load_workload(_workload(params)).scenarios)


def check_cluster(cluster_path: str | None = None,
                  scenarios: list[str] | None = None) -> dict[str, Any]:
    """Check that the cluster of the descriptor answers metadata (~10 s timeout).

    Args:
        cluster_path: descriptor YAML (default: see
            :meth:`~kafkalab.airflow.connections.ClusterConnection.descriptor_path`).
        scenarios: when given and none of them uses Kafka, nothing is checked.

    Returns:
        ``{"required", "descriptor_path", "brokers_answering", "cluster": <public view>}``.

    Raises:
        ClusterError: no descriptor, or the cluster does not answer.
    """
    if scenarios is not None and not needs_kafka(scenarios):
        log.info("scenarios %s need no Kafka cluster", scenarios)
        return {"required": False, "descriptor_path": None, "brokers_answering": 0, "cluster": None}
    from kafkalab.cluster.admin import check_reachable
    from kafkalab.cluster.descriptor import emulator_note, public_view
    from kafkalab.cluster.flavors import load_descriptor

    path = ClusterConnection().descriptor_path(cluster_path)
    d = load_descriptor(path)
    n = check_reachable(d)
    log.info("cluster %s (%s %s) answers: %d broker(s)", d.bootstrap_servers, d.flavor, d.version, n)
    if d.is_emulator:
        log.warning("%s", emulator_note(d))
    return {"required": True, "descriptor_path": str(path), "brokers_answering": n,
            "cluster": jsonable(public_view(d))}


def build_request(params: Mapping[str, Any], run_id: str | None = None,
                  command: str | None = None, logical_date: str | None = None) -> RunRequest:
    """A :class:`~kafkalab.runner.RunRequest` from DAG params, through
    :func:`kafkalab.runner.build_run_request`.

    Params: ``workload`` (name or YAML path, default ``images-http-vs-kafka``, alias ``seed000``), ``scenarios``,
    ``payloads``, ``profiles`` (empty or absent: the workload's), ``messages`` (int >= 1 or
    null: the workload's), ``warmup_messages`` (optional), ``cluster_descriptor`` (optional
    path, else the ``kafkalab_cluster`` Connection's). Invalid values raise
    :class:`~kafkalab.errors.ConfigError` naming the param (``param messages must be at
    least 1, got 0``). ``logical_date``: the DAG run's (ISO 8601 UTC,
    :func:`kafkalab.airflow.run_ids.logical_date_iso`), recorded in the manifest.
    """
    from kafkalab.runner import build_run_request

    req = build_run_request(
        _workload(params),
        scenarios=params.get("scenarios") or None,
        payloads=params.get("payloads") or None,
        profiles=params.get("profiles") or None,
        overrides={key: params.get(key) for key in _PARAM_OVERRIDES},
        option_names={key: f"param {key}" for key in _PARAM_OVERRIDES},
        data_dir=LabData().root,
        descriptor_path=ClusterConnection().descriptor_path(params.get("cluster_descriptor")),
        run_id=run_id,
        command=command or f"airflow task (kafkalab.airflow.tasks) run_id={run_id}",
    )
    req.owner_kind = "airflow"  # tasks in several processes: stale by heartbeat, not by pid
    req.logical_date = logical_date
    return req


def prepare_run(params: Mapping[str, Any], run_id: str, command: str | None = None,
                logical_date: str | None = None, supersede: bool = False) -> list[dict[str, str]]:
    """Validate, check the cluster, provision the topics, start the run (manifest ``running``,
    with the DAG run's ``logical_date``). An existing run is re-opened (its cells measured
    before stay; the cells asked for are re-measured); ``supersede`` (a night of the nightly:
    one lab run per night) measures a run made with another workload anew instead of
    refusing it (:attr:`kafkalab.runner.RunRequest.supersede`).

    Returns:
        The cells ``[{"scenario", "payload", "profile"}, ...]``, one mapped task each.
    """
    from kafkalab.runner import start_run

    req = build_request(params, run_id, command, logical_date)
    req.supersede = supersede
    started = start_run(req, progress=log.info)
    cells = [{"scenario": str(c["scenario"]), "payload": str(c["payload"]),
              "profile": str(c["profile"])} for c in started["cells"]]
    log.info("run %s started: %d cell(s) in %s", run_id, len(cells), req.data_dir)
    return cells


def cell_label(cell: Mapping[str, Any]) -> str:
    """The readable name of a mapped latency cell (its ``map_index_template``):
    ``confluent-kafka · 1mb · latency``."""
    return " · ".join(str(cell.get(k)) for k in ("scenario", "payload", "profile"))


def _summary(result: CellResult | Mapping[str, Any]) -> dict[str, Any]:
    """JSON-able summary of a measured cell (a CellResult or an already JSON-able dict):
    p50/p99 are null when undefined, with the reason (``p99_ms_reason: "n<100 (20 in the
    population)"``); for Kafka's tool they are the tool's printed figures."""
    if isinstance(result, Mapping):
        return dict(jsonable(dict(result)))
    from kafkalab.summary import json_summary

    s = json_summary(result)
    tool = s.get("tool") or {}
    out: dict[str, Any] = {
        "scenario": result.scenario, "payload": result.payload, "profile": result.profile,
        "status": result.status, "rows": result.rows, "reason": result.reason,
        "count": s.get("count"), "population": s.get("population"), "lost": s.get("lost"),
        "errors": s.get("errors"), "loop_mode": s.get("loop_mode"),
        "emulator": bool(s.get("emulator")),
    }
    for name in ("p50", "p99"):
        value = s.get(f"{name}_ms") if not tool else tool.get(name)
        out[f"{name}_ms"] = None if value is None else float(value)
        if value is None and s.get(f"{name}_ms_reason") and not tool:
            out[f"{name}_ms_reason"] = s[f"{name}_ms_reason"]
    return dict(jsonable(out))


def measure_cell(params: Mapping[str, Any], run_id: str, cell: Mapping[str, str]) -> dict[str, Any]:
    """Measure one ``(scenario, payload, profile)`` cell of a started run.

    Its samples and manifest fragment are written before this returns or raises.

    Returns:
        ``{"scenario", "payload", "profile", "status", "rows", "reason", "p50_ms", "p99_ms", ...}``
        with status ``complete`` or ``skipped``.

    Raises:
        CellFailedError: the cell failed (the run will be ``incomplete``).
    """
    from kafkalab import runner

    req = build_request(params, run_id)
    result = runner.measure_cell(req, cell["scenario"], cell["payload"], cell["profile"],
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
        RunNeverStartedError: the run was never started (no manifest).
    """
    from kafkalab.runner import finish_run

    lab = LabData()
    if not lab.manifest_path(run_id).is_file():
        raise RunNeverStartedError(
            f"run {run_id} was never started: no {lab.manifest_path(run_id)}")
    manifest = finish_run(lab.root, run_id)
    out = {"run_id": run_id, "status": manifest.get("status"), "error": manifest.get("error"),
           "cells": jsonable(manifest.get("cells") or [])}
    log.info("run %s: %s%s", run_id, out["status"], f" ({out['error']})" if out["error"] else "")
    return out


MTIME_GRANULARITY_S = 0.05
"""How far a file's modification time may lag ``time.time()`` taken just before the write:
Linux stamps files from its coarse clock (one timer tick, 4-10 ms, behind the precise one),
so a file written right after ``since_s`` can carry an earlier time. Comparisons of a
file's time with a wall-clock start allow this much."""


def written_at_or_after(mtime_s: float, since_s: float) -> bool:
    """Whether a file modified at ``mtime_s`` was written at or after the wall-clock time
    ``since_s`` (within :data:`MTIME_GRANULARITY_S`)."""
    return mtime_s >= since_s - MTIME_GRANULARITY_S


def mark_recomputed(run_id: str, output: str, written_since_s: float | None = None) -> bool:
    """Remove ``output`` from the run's ``stale_outputs`` once it has been recomputed.

    Args:
        run_id: the lab run id.
        output: one of :data:`STALE_OUTPUTS`.
        written_since_s: when given (a wall-clock time, seconds since the epoch), the entry
            is removed only if a file of the output was written at or after it: a Spark task
            that failed after writing its result (a validation whose expectations failed)
            did recompute it; one that failed before did not.

    An output computed from inputs that are still stale (:data:`DERIVED_FROM`: drift checked
    on aggregates a failed Spark job did not recompute) stays stale.

    Returns:
        True when the output is now fresh (its entry removed, or there was none).

    Raises:
        ValueError: an unknown output.
    """
    if output not in STALE_OUTPUTS:
        raise ValueError(f"unknown output {output!r} (known: {', '.join(STALE_OUTPUTS)})")
    lab = LabData()
    manifest = lab.manifest(run_id)
    if manifest is None:
        log.warning("run %s has no manifest: its %s cannot be marked fresh", run_id, output)
        return False
    if written_since_s is not None:
        mtimes = [p.stat().st_mtime for p in lab.output_files(run_id, output)]
        if not mtimes or not written_at_or_after(max(mtimes), written_since_s):
            log.warning("run %s: %s not rewritten by this task; still stale", run_id, output)
            return False
    stale = [str(x) for x in manifest.get("stale_outputs") or []]
    if output not in stale:
        log.info("run %s: %s recomputed (it was not stale)", run_id, output)
        return True
    inputs = [x for x in DERIVED_FROM[output] if x in stale]
    if inputs:
        log.warning("run %s: %s computed from stale %s; still stale", run_id, output,
                    ", ".join(inputs))
        return False
    lab.clear_stale(run_id, output)
    log.info("run %s: %s recomputed (no longer stale)", run_id, output)
    return True


def check_drift(run_id: str) -> dict[str, Any]:
    """Detect drift of ``run_id`` against its baseline; writes ``drift/run_id=<id>/drift.parquet``.

    Returns:
        ``{"run_id", "series", "drifts", "path", "flags": [{series_key, change_pct, ...}]}``.
    """
    from kafkalab.drift import records_to_dicts, run_drift

    records, path = run_drift(LabData().root, run_id)
    mark_recomputed(run_id, "drift")
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

    lab = LabData()
    page = build_report(lab.root, run_id=run_id)
    mark_recomputed(run_id, "report")
    log.info("report of %s: %s (overview %s)", run_id, page, lab.report_index_path())
    return str(page)


PROM_TEXTFILE_ENV = "KAFKALAB_PROM_TEXTFILE"
"""Where :func:`export_metrics` writes the Prometheus text file (e.g. node_exporter's
``--collector.textfile.directory`` + ``/kafkalab.prom``); default
``<data>/metrics/kafkalab.prom``."""


def export_metrics() -> dict[str, Any]:
    """Write the data dir's Prometheus text file (what ``kafkalab export prometheus`` writes:
    the last successful run's time, the latest p50/p99 per series, drift state, losses) to
    ``$KAFKALAB_PROM_TEXTFILE`` or its default; returns ``{"path", "samples"}``."""
    from kafkalab.export.prometheus import export_textfile

    out = export_textfile(LabData().root, os.environ.get(PROM_TEXTFILE_ENV) or None)
    log.info("metrics for Prometheus: %s", out["path"])
    return out


def send_alerts(run_id: str, conn_id: str = ALERT_CONN_ID,
                dag_id: str | None = None) -> dict[str, Any]:
    """Announce new drifts / recoveries of ``run_id`` to the webhook of Connection ``conn_id``.

    No Connection: logs "no alert webhook configured" and returns (not a failure).

    Returns:
        The summary of :func:`kafkalab.alerts.alert_on_drift`.

    Raises:
        AlertError: delivery failed (message without the URL); the state is not updated, so
            the next run announces again.
        ConfigError: the Connection's ``extra.format`` is unknown.
    """
    from kafkalab.alerts import alert_on_drift

    hook = AlertWebhookConnection(conn_id).settings()
    if hook is None:
        log.info("no alert webhook configured (Connection %r); alerts not sent", conn_id)
        return {"run_id": run_id, "sent": False, "drifts": 0, "recoveries": 0, "suppressed": 0,
                "reason": "no alert webhook configured"}
    lab = LabData()
    summary = alert_on_drift(lab.root, run_id, hook, report_url=hook.report_url(run_id),
                             dag_id=dag_id)
    log.info("alerts for %s: %s", run_id, summary)
    return dict(jsonable(summary))


ONE_SESSION_PARAM = "one_spark_session"
"""The latency DAGs' param: ``aggregate_metrics`` (and the nightly's ``aggregate_load``)
also validates the run in its own Spark session (``--validate-out``), and the validation task
judges that result instead of starting Spark again (``make demo`` turns it on)."""


def one_spark_session(params: Mapping[str, Any]) -> bool:
    """Whether :data:`ONE_SESSION_PARAM` is on (default off).

    Raises:
        ConfigError: the param is not a boolean.
    """
    from kafkalab.airflow.params import bool_param

    return bool_param(params, ONE_SESSION_PARAM, False)


def validation_written_since(run_id: str, since_s: float, kind: RunKind = LATENCY) -> bool:
    """Whether the run's validation result (of ``kind``) was written at or after ``since_s``
    (wall clock, seconds since the epoch: file modification times are wall-clock; within
    :data:`MTIME_GRANULARITY_S`, :func:`written_at_or_after`)."""
    path = LabData().validation_path(run_id, kind)
    try:
        return written_at_or_after(path.stat().st_mtime, since_s)
    except OSError:
        return False


def judge_validation(run_id: str, kind: RunKind = LATENCY) -> dict[str, Any]:
    """The verdict of the run's validation result (of ``kind``), as its validation job's exit
    code gives it: returns ``{"run_id", "success": True, "expectations"}`` when it passed.

    Raises:
        RunError: it failed (naming up to three failed expectations), is missing or unreadable.
    """
    lab = LabData()
    doc = lab.validation(run_id, kind)
    path = lab.validation_path(run_id, kind)
    if doc is None:
        raise RunError(f"run {run_id}: no validation result at {path}")
    if doc.get("unreadable"):
        raise RunError(f"run {run_id}: the validation result {path} is unreadable")
    suites = doc.get("suites") or {}
    evaluated = sum(int((s.get("statistics") or {}).get("evaluated_expectations") or 0)
                    for s in suites.values() if isinstance(s, dict))
    if doc.get("success"):
        return {"run_id": run_id, "success": True, "expectations": evaluated}
    failed = [str(f.get("summary") or f) if isinstance(f, dict) else str(f)
              for f in (doc.get("failed_expectations") or [])]
    shown = "; ".join(failed[:3]) + (f"; … {len(failed) - 3} more" if len(failed) > 3 else "")
    raise RunError(f"run {run_id}: validation failed ({len(failed)} expectations): {shown} "
                   f"(see {path})")


def run_started(run_id: str) -> bool:
    """Whether the lab run ``run_id`` was started (its manifest exists): a nightly part that
    is turned off, or a run whose starting task failed, has none."""
    return LabData().manifest_path(run_id).is_file()


def outcome_problems(run_id: str, kind: RunKind = LATENCY
                     ) -> tuple[str | None, dict[str, Any] | None, list[str]]:
    """What a run's files say so far about its outcome: its manifest's status, its validation
    result (of ``kind``) and the problems found in them (no manifest, a run that is not
    complete, no validation result). Whether a validation that exists failed, and how to say
    so, is the caller's (a fault run names the lost messages)."""
    lab = LabData()
    problems: list[str] = []
    manifest = lab.manifest(run_id)
    status = None if manifest is None else manifest.get("status")
    if manifest is None:
        problems.append("no run manifest")
    elif status != "complete":
        problems.append(f"run is {status}")
    validation = lab.validation(run_id, kind)
    if validation is None:
        problems.append("no validation result")
    return status, validation, problems


def verify_outcome(run_id: str, kind: RunKind = LATENCY, what: str = "run") -> dict[str, Any]:
    """The run's verdict from its files: manifest complete and validation (of ``kind``)
    passed.

    Returns:
        ``{"run_id", "status": "complete", "validation_success": True}``.

    Raises:
        RunError: naming what is wrong (incomplete run, failed or missing validation), as
            ``<what> <id>: …``.
    """
    status, validation, problems = outcome_problems(run_id, kind)
    if validation is not None and not validation.get("success"):
        problems.append(f"validation failed (see {LabData().validation_path(run_id, kind)})")
    if problems:
        raise RunError(f"{what} {run_id}: " + "; ".join(problems))
    return {"run_id": run_id, "status": status, "validation_success": True}


__all__ = [
    "DERIVED_FROM",
    "ONE_SESSION_PARAM",
    "STALE_OUTPUTS",
    "build_request",
    "cell_label",
    "check_cluster",
    "check_drift",
    "close_run",
    "judge_validation",
    "mark_recomputed",
    "measure_cell",
    "one_spark_session",
    "outcome_problems",
    "prepare_run",
    "publish_report",
    "resolve_scenarios",
    "run_started",
    "send_alerts",
    "validation_written_since",
    "verify_outcome",
]
