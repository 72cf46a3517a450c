"""``kafkalab aggregate``: the DAG's Spark part and what follows it, for a run made by the CLI.

A run measured with ``kafkalab run`` (``load``, ``faults run``) has samples and a manifest
but no aggregates, so drift has nothing to judge and the report shows no cells. This module
runs for one run, on this machine, exactly what the DAGs run after the measurement:

* latency run: ``aggregate_metrics`` -> ``validate_metrics`` (Spark + Great Expectations)
  -> ``check_drift`` -> ``publish_report``;
* load run: ``aggregate_load`` -> ``validate_load`` -> ``check_drift`` -> ``publish_report``;
* fault run: ``aggregate_faults`` -> ``validate_faults`` -> ``publish_report``;
* start-up run: ``aggregate_startup`` -> ``validate_startup`` -> ``publish_report``.

The Spark jobs go through ``spark-submit`` with the DAGs' own application, arguments,
py-files, conf and environment (:mod:`kafkalab.spark.submit`); the master is
``$KAFKALAB_SPARK_MASTER`` (the DAGs' switch, :data:`kafkalab.airflow.launcher.SPARK_MASTER_ENV`),
default ``local[*]``; an ``sc://host:port`` there runs each job as a client of that Spark
Connect server instead (:mod:`kafkalab.spark.connect`: a Python process, no driver JVM to
start per job). The steps after Spark are the DAG tasks' own functions
(:func:`kafkalab.airflow.tasks.check_drift`, :func:`~kafkalab.airflow.tasks.publish_report`,
:func:`~kafkalab.airflow.tasks.mark_recomputed`), run with ``KAFKALAB_DATA_DIR`` set to the
data directory for their duration (they address the data directory the way a task does).

As in the DAGs, a validation that fails does not stop drift and the report (its failure is a
result, shown in the report); the outcome says so. Each job's output goes to a log file
under ``<lab>/logs/``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.errors import ConfigError, RunError
from kafkalab.kinds import LATENCY, RunKind, kind_of
from kafkalab.progress import Progress, noop
from kafkalab.spark.connect import is_connect_url
from kafkalab.store import LabData

DEFAULT_MASTER = "local[*]"
"""The Spark master when ``$KAFKALAB_SPARK_MASTER`` is not set (as the DAGs' default)."""

VALIDATION_FAILED_EXIT = 1
"""The exit code of a validation job whose expectations failed (a result, not an error)."""


@dataclass
class JobOutcome:
    """One Spark job (a spark-submit, or a run against a Spark Connect server)."""

    job: str
    exit_code: int
    seconds: float
    log: str
    failed_expectations: list[str] = field(default_factory=list)
    """The ``FAILED …`` lines of a validation job."""
    in_session: bool = False
    """A validation done by the job before it in that job's Spark session (no spark-submit
    of its own: ``seconds`` 0, ``log`` the aggregation's)."""


@dataclass
class AggregateOutcome:
    """What ``kafkalab aggregate`` did (its ``--json`` document)."""

    run_id: str
    kind: str
    master: str
    jobs: list[JobOutcome]
    validation_success: bool
    drift: dict[str, Any] | None
    """``check_drift``'s summary (None for a fault run: not judged for drift)."""
    report: str
    """The run's report page."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def spark_master(env: Mapping[str, str] | None = None) -> str:
    """``$KAFKALAB_SPARK_MASTER`` of ``env`` (default ``os.environ``), else ``local[*]``."""
    from kafkalab.airflow.launcher import SPARK_MASTER_ENV

    env = os.environ if env is None else env
    return (env.get(SPARK_MASTER_ENV) or "").strip() or DEFAULT_MASTER


def newest_run(lab: LabData) -> str:
    """The id of the run started last (manifest ``started_at``, else the id's time).

    Raises:
        ConfigError: the data directory has no run.
    """
    from kafkalab.run_ids import run_id_time

    manifests = lab.manifests()
    if not manifests:
        raise ConfigError(f"no runs in {lab.root}: measure one first (kafkalab run)")

    def started(rid: str) -> tuple[str, str]:
        when = manifests[rid].get("started_at")
        if not when:
            t = run_id_time(rid)
            when = t.isoformat() if t is not None else ""
        return (str(when), rid)

    return max(manifests, key=started)


def refuse_running(lab: LabData, run_id: str, manifest: Mapping[str, Any]) -> None:
    """Refuse a run still being measured (:meth:`LabData.run_state` ``running``: its owner is
    alive and it wrote within :data:`kafkalab.store.STALE_AFTER_S`). Aggregating half of its
    samples would clear its stale outputs and let drift and the report judge a partial run.
    A ``stale`` run (its owner gone) is aggregated: what it measured is all it will have, and
    drift never takes it as a baseline (not ``complete``).

    Raises:
        ConfigError: the run is running.
    """
    if lab.run_state(run_id) != "running":
        return
    owner = manifest.get("owner") or {}
    by = (f" by process {owner['pid']} on {owner.get('host') or 'an unknown host'}"
          if isinstance(owner, Mapping) and owner.get("pid") is not None else "")
    raise ConfigError(f"run {run_id} is still being measured{by}: aggregate it once it has "
                      f"ended (`kafkalab runs` shows its state): kafkalab aggregate --run-id "
                      f"{run_id}")


def spark_submit_binary() -> Path:
    """The venv's ``spark-submit`` (beside this Python), else the one on ``PATH``.

    Raises:
        ConfigError: none found.
    """
    import shutil

    beside = Path(sys.executable).parent / "spark-submit"
    if beside.is_file():
        return beside
    found = shutil.which("spark-submit")
    if found is None:
        raise ConfigError("spark-submit not found (install pyspark: make setup)")
    return Path(found)


def spark_submit_command(job: str, run_id: str, data_dir: str | os.PathLike[str],
                         master: str, extra_args: Sequence[str] = ()) -> list[str]:
    """The ``spark-submit`` command line of ``job`` for one run: the DAG task's
    application, arguments (then ``extra_args``), py-files and conf (class-data archive
    included when built), and the cluster's secret as ``--properties-file`` when the master
    has one (:func:`kafkalab.spark.submit.auth_properties_file`)."""
    from kafkalab.spark.submit import (
        auth_properties_file,
        runtime_conf,
        spark_application,
        spark_conf,
        spark_job_args,
        spark_py_files,
        with_worker_daemon,
    )

    conf = with_worker_daemon(runtime_conf(spark_conf()), master)
    secret_file = auth_properties_file(master)
    return [str(spark_submit_binary()), "--master", master,
            "--name", f"kafkalab-{job.replace('_', '-')}",
            *(["--properties-file", secret_file] if secret_file else []),
            *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")),
            "--py-files", spark_py_files(),
            spark_application(job), *(str(a) for a in spark_job_args(job, run_id, data_dir)),
            *extra_args]


def spark_submit_env() -> dict[str, str]:
    """The environment of the spark-submit: ours with the DAGs' (:func:`spark_env`), the
    venv's ``bin/`` first on ``PATH``, and no PySpark gateway of a parent session."""
    from kafkalab.spark.submit import spark_env

    env = {**os.environ, **spark_env()}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for leaked in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET"):
        env.pop(leaked, None)
    return env


def _log_path(run_id: str, job: str) -> Path:
    from kafkalab.paths import lab_dir
    from kafkalab.store import safe_name

    return lab_dir() / "logs" / f"aggregate-{safe_name(run_id)}-{job}.log"


def _last_error(text: str) -> str:
    """The job's own ``error:`` line, else the last non-empty line of its output."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ": error: " in ln:
            return ln
    return lines[-1] if lines else "no output"


def submit(job: str, run_id: str, data_dir: str | os.PathLike[str], master: str,
           progress: Progress | None = None, timeout_s: float = 3600.0,
           extra_args: Sequence[str] = ()) -> JobOutcome:
    """Run one Spark job (``extra_args`` after the job's own) through spark-submit, or as a
    client of a Spark Connect server when ``master`` is an ``sc://`` URL; its output goes to
    a log file.

    Returns the outcome (exit 0, or 1 for a validation job whose expectations failed).

    Raises:
        ConfigError: the job refused its input (exit 2: no samples of the run, …).
        RunError: it failed otherwise (or ran longer than ``timeout_s``).
    """
    say = progress or noop
    log = _log_path(run_id, job)
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    if is_connect_url(master):
        returncode = _run_connected(job, run_id, data_dir, master, extra_args, log, say,
                                    timeout_s)
    else:
        returncode = _run_submitted(job, run_id, data_dir, master, extra_args, log, say,
                                    timeout_s)
    seconds = time.monotonic() - t0
    text = log.read_text(encoding="utf-8", errors="replace")
    failed = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("FAILED")]
    is_validation = job.startswith("validate")
    if returncode == 0 or (is_validation and returncode == VALIDATION_FAILED_EXIT):
        say(f"{job}: exit {returncode} in {seconds:.0f} s"
            + (f", {len(failed)} expectation(s) failed" if returncode else ""))
        return JobOutcome(job, returncode, round(seconds, 3), str(log), failed)
    message = f"{job} failed (exit {returncode}): {_last_error(text)} (log {log})"
    if returncode == 2:
        raise ConfigError(message)
    raise RunError(message)


def _run_submitted(job: str, run_id: str, data_dir: str | os.PathLike[str], master: str,
                   extra_args: Sequence[str], log: Path, say: Progress, timeout_s: float) -> int:
    """``job`` through spark-submit, its output to ``log``; returns its exit code."""
    cmd = spark_submit_command(job, run_id, data_dir, master, extra_args)
    say(f"spark-submit {Path(cmd[cmd.index('--py-files') + 2]).name} --run-id {run_id} "
        f"(master {master}); log {log}")
    with open(log, "w", encoding="utf-8") as fh:
        fh.write(" ".join(cmd) + "\n\n")
        fh.flush()
        try:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, text=True,
                                  env=spark_submit_env(), timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            raise RunError(f"{job} ran longer than {timeout_s:.0f} s (log {log})") from None
    return proc.returncode


def _run_connected(job: str, run_id: str, data_dir: str | os.PathLike[str], url: str,
                   extra_args: Sequence[str], log: Path, say: Progress,
                   timeout_s: float) -> int:
    """``job`` as a client of the Spark Connect server ``url`` in a Python process of its
    own (:func:`kafkalab.spark.connect.run_job`), its output to ``log``; returns its exit
    code.

    Raises:
        ClusterError: nothing answers at ``url``.
        RunError: it ran longer than ``timeout_s``.
    """
    from kafkalab.spark.connect import run_job
    from kafkalab.spark.submit import spark_application, spark_job_args

    application = spark_application(job)
    args = [*(str(a) for a in spark_job_args(job, run_id, data_dir)), *extra_args]
    say(f"Spark Connect {url}: {Path(application).name} --run-id {run_id}; log {log}")
    with open(log, "w", encoding="utf-8") as fh:
        fh.write(f"Spark Connect {url}: {application} {' '.join(args)}\n\n")
        fh.flush()
        try:
            return run_job(application, args, url, out=fh, timeout_s=timeout_s)
        except RunError as exc:
            raise RunError(f"{job}: {exc} (log {log})") from None


@contextlib.contextmanager
def _data_dir_env(root: Path) -> Iterator[None]:
    """``KAFKALAB_DATA_DIR`` = ``root`` while the DAG tasks' functions run (they address
    the data directory as a task does: :class:`LabData` with no argument)."""
    old = os.environ.get("KAFKALAB_DATA_DIR")
    os.environ["KAFKALAB_DATA_DIR"] = str(root)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("KAFKALAB_DATA_DIR", None)
        else:
            os.environ["KAFKALAB_DATA_DIR"] = old


def _judged_in_session(lab: LabData, run_id: str, aggregation: JobOutcome,
                       kind: RunKind = LATENCY) -> JobOutcome:
    """The validation (of ``kind``) the aggregation wrote in its own session, as the outcome
    of a validation job (exit 0 or :data:`VALIDATION_FAILED_EXIT`, no time of its own)."""
    doc = lab.validation(run_id, kind) or {}
    failed = [f"FAILED {f.get('summary') or f}" if isinstance(f, dict) else f"FAILED {f}"
              for f in (doc.get("failed_expectations") or [])]
    return JobOutcome("validate", 0 if doc.get("success") else VALIDATION_FAILED_EXIT, 0.0,
                      aggregation.log, failed, in_session=True)


def aggregate_run(data_dir: str | os.PathLike[str] | None = None, run_id: str | None = None,
                  master: str | None = None, progress: Progress | None = None,
                  one_session: bool = False) -> AggregateOutcome:
    """Aggregate, validate, judge and report one run, as the DAG does (module docstring).

    Args:
        data_dir: the lab data directory (default ``$KAFKALAB_DATA_DIR`` / ``lab-data``).
        run_id: the run (default :func:`newest_run`).
        master: the Spark master (default :func:`spark_master`).
        progress: where progress lines go.
        one_session: for a kind whose aggregation can validate in its own Spark session
            (:attr:`~kafkalab.kinds.RunKind.validates_in_session`), one spark-submit instead
            of two, as the DAG param ``one_spark_session`` does; the validation job still
            runs when the aggregation wrote no fresh result.

    Raises:
        ConfigError: no such run, a run still being measured (:func:`refuse_running`), or a
            job refused its input (no samples).
        RunError: a Spark job failed.
    """
    from kafkalab.airflow import tasks
    from kafkalab.spark.submit import one_session_args

    lab = LabData(data_dir)
    rid = run_id or newest_run(lab)
    manifest = lab.manifest(rid)
    if manifest is None:
        raise ConfigError(f"unknown run {rid!r}: no manifest {lab.manifest_path(rid)}")
    refuse_running(lab, rid, manifest)
    kind = kind_of(manifest)
    url = master or spark_master()
    say = progress or noop
    aggregate_job, validate_job = kind.spark_jobs
    jobs: list[JobOutcome] = []
    shared = one_session and kind.validates_in_session
    with _data_dir_env(lab.root):
        started = time.time()
        try:
            jobs.append(submit(aggregate_job, rid, lab.root, url, say,
                               extra_args=one_session_args(lab.root) if shared else ()))
        finally:
            if kind.marks_stale:  # as LabSparkSubmitOperator (the fault operator marks none)
                tasks.mark_recomputed(rid, "aggregates", written_since_s=None if jobs else started)
        in_session = shared and tasks.validation_written_since(rid, started, kind)
        if not in_session:
            started = time.time()
        try:
            validation = (_judged_in_session(lab, rid, jobs[0], kind) if in_session
                          else submit(validate_job, rid, lab.root, url, say))
            jobs.append(validation)
        finally:
            if kind.marks_stale:
                passed = len(jobs) == 2 and jobs[-1].exit_code == 0
                tasks.mark_recomputed(rid, "validation",
                                      written_since_s=None if passed else started)
        drift = tasks.check_drift(rid) if kind.drift_judged else None
        report = tasks.publish_report(rid)
    return AggregateOutcome(run_id=rid, kind=kind.name, master=url, jobs=jobs,
                            validation_success=validation.exit_code == 0, drift=drift,
                            report=report)


def format_outcome(o: AggregateOutcome) -> str:
    """The lines ``kafkalab aggregate`` prints."""
    lines = [f"run {o.run_id} ({o.kind}): aggregated on {o.master}"]
    for j in o.jobs:
        took = "in the aggregation's session" if j.in_session else f"{j.seconds:.0f} s"
        lines.append(f"  {j.job:<17} exit {j.exit_code}  {took}  log {j.log}")
        lines.extend(f"    {f}" for f in j.failed_expectations[:10])
    lines.append("validation: " + ("passed" if o.validation_success else
                                   "FAILED (drift and the report ran anyway, as in the DAG)"))
    if o.drift is not None:
        lines.append(f"drift: {o.drift['series']} series checked, {o.drift['drifts']} drift(s)"
                     + (f"; records {o.drift['path']}" if o.drift.get("path") else ""))
        lines.extend(f"  DRIFT {f['series_key']}: {f['baseline_value']} -> {f['latest_value']}"
                     for f in o.drift.get("flags") or [])
    lines.append(f"report: {o.report}")
    return "\n".join(lines)


__all__ = [
    "DEFAULT_MASTER",
    "AggregateOutcome",
    "JobOutcome",
    "aggregate_run",
    "format_outcome",
    "newest_run",
    "refuse_running",
    "spark_master",
    "spark_submit_command",
    "spark_submit_env",
    "submit",
]
