"""What a lab Spark job is submitted with: script, arguments, conf, env, py-files (the DAGs'
``SparkSubmitOperator`` tasks and ``kafkalab aggregate`` alike).

The scripts live in :func:`kafkalab.paths.spark_jobs_dir`; the data folders they read and
write are named by :class:`kafkalab.store.LabData`. Pure functions (environment only, no
file access), so :mod:`kafkalab.airflow.operators` calls them while a DAG file is parsed;
:func:`runtime_conf` and :func:`auth_properties_file` look at files, and are called when a
task runs.

**The cluster's secret.** A Spark standalone cluster that authenticates
(``spark.authenticate``; the lab's own always does: :mod:`kafkalab.spark.spec`) refuses a
submission without its shared secret. Every lab ``spark-submit`` (the DAGs' tasks,
``kafkalab aggregate``) passes :func:`auth_properties_file` as ``--properties-file``: the
file named by ``$KAFKALAB_SPARK_AUTH_FILE`` (a user's own cluster: a Spark properties file,
mode 0600, with ``spark.authenticate=true`` and ``spark.authenticate.secret=<its secret>``),
else the lab's ``<lab_dir>/spark/auth.properties`` when the master is the lab's own
standalone master. The secret never appears on a command line or in the conf passed with
``--conf``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafkalab import store
from kafkalab.errors import ConfigError
from kafkalab.kinds import RUN_KINDS, kind_of_job
from kafkalab.paths import PACKAGE_DIR, data_dir, lab_dir, spark_jobs_dir
from kafkalab.spark.cds import DRIVER_JAVA_OPTIONS, LAUNCHER_OPTS, with_archive

SPARK_JOBS: dict[str, str] = {
    "aggregate": "aggregate_metrics.py",
    "validate": "validate_metrics.py",
    "aggregate_load": "aggregate_load.py",
    "validate_load": "validate_load.py",
    "aggregate_faults": "aggregate_faults.py",
    "validate_faults": "validate_faults.py",
    "aggregate_startup": "aggregate_startup.py",
    "validate_startup": "validate_startup.py",
}
"""The Spark jobs by name: their script in :func:`kafkalab.paths.spark_jobs_dir` (the
``_load`` ones for load runs: ``load/`` samples, ``aggregates/load/`` tables; the
``_faults`` ones for fault runs: ``faults/`` trials, ``aggregates/faults/`` tables)."""

SPARK_JOB_OUTPUTS: dict[str, str] = {
    job: output for k in RUN_KINDS.values()
    for job, output in ((k.aggregate_job, "aggregates"), (k.validate_job, "validation"))}
"""The run output each job recomputes (its entry in the manifest's ``stale_outputs``): a
kind's aggregation job its ``aggregates``, its validation job its ``validation``."""

SESSION_MODULE = "_session.py"
"""The session builder every job imports, shipped with each job as a py-file."""

def _check_job(job: str) -> None:
    if job not in SPARK_JOBS:
        raise ValueError(f"unknown Spark job {job!r} (known: {', '.join(SPARK_JOBS)})")


def spark_application(job: str) -> str:
    """Absolute path of a Spark job script (``aggregate`` or ``validate``). No I/O.

    Raises:
        ValueError: an unknown job.
    """
    _check_job(job)
    return str(spark_jobs_dir() / SPARK_JOBS[job])


def spark_py_files() -> str:
    """The ``py_files`` of every job, comma-separated: ``spark_jobs/_session.py`` (the shared
    Spark session and job plumbing), ``spark_jobs/_gx.py`` (the validations' shared Great
    Expectations helpers), ``spark_jobs/validate_metrics.py``, ``spark_jobs/validate_load.py``
    and ``spark_jobs/validate_startup.py`` (``aggregate_metrics``, ``aggregate_load`` and
    ``aggregate_startup --validate-out`` import them), and the lab's two lone-file modules, standard library only
    and importable as ``store`` and ``stats`` where the package is not installed:
    ``kafkalab/store.py`` (the atomic writer) and ``kafkalab/stats.py`` (percentiles, minimum
    samples, confidence intervals). Spark puts them on the driver's and executors'
    ``PYTHONPATH``. No I/O."""
    jobs = spark_jobs_dir()
    return ",".join([str(jobs / SESSION_MODULE), str(jobs / "_gx.py"),
                     str(jobs / "validate_metrics.py"), str(jobs / "validate_load.py"),
                     str(jobs / "validate_startup.py"), str(PACKAGE_DIR / "store.py"), str(PACKAGE_DIR / "stats.py")])


def spark_job_args(job: str, run_id: Any,
                   data: str | os.PathLike[str] | None = None) -> list[Any]:
    """The ``application_args`` of a Spark job for one run.

    Args:
        job: ``aggregate`` (``spark_jobs/aggregate_metrics.py``), ``validate``
            (``spark_jobs/validate_metrics.py``), ``aggregate_load`` (``--load <data>/load
            --out <data>/aggregates/load``) or ``validate_load`` (``--aggregates
            <data>/aggregates/load``; its result is ``validation/<run_id>-load.json``).
        run_id: the lab run id, or an XComArg / Jinja string resolved by Airflow at run time.
        data: lab data directory or any Hadoop-compatible URI (``s3a://bucket/lab``);
            default :func:`kafkalab.paths.data_dir`.

    Raises:
        ValueError: an unknown job.
    """
    _check_job(job)
    kind = kind_of_job(job)
    root = str(data if data is not None else data_dir()).rstrip("/")
    measured = f"{root}/{kind.measured_dir}"
    aggregates = "/".join(p for p in (root, store.AGGREGATES_DIR, kind.aggregates_subdir) if p)
    if job == kind.aggregate_job:  # every aggregation job reads --<its measured folder>
        return [f"--{kind.measured_dir}", measured, "--out", aggregates, "--run-id", run_id]
    args = ["--aggregates", aggregates, "--run-id", run_id,
            "--out", f"{root}/{store.VALIDATION_DIR}"]
    return ["--samples", measured, *args] if kind.validate_reads_measured else args


DRIVER_STATIC_CONF: dict[str, str] = {"spark.python.sql.dataFrameDebugging.enabled": "false"}
"""Settings every driver of the lab's jobs starts with (static: a running session cannot
change them): :func:`spark_conf` gives them to each spark-submit (a job, the Spark Connect
server), ``spark_jobs/_session.py``'s ``local_builder`` its copy (a job may import only
kafkalab's lone files) to a job run by plain python.

``spark.python.sql.dataFrameDebugging.enabled`` off. With it on (PySpark's default) every
DataFrame and Column call of a classic session asks the JVM for the active session and a
setting, and sets and clears the Python call site it keeps for error messages: several py4j
round trips per call, ~10,000 per validation of a run (GX builds its checks from thousands
of such calls); a Connect client inspects the Python stack at every call instead. The jobs
are the lab's own code and report their errors by job, table and check, not by a Python
line. Measured on the 2-core machine (2026-11-28; one local[2] JVM, a fake run of 800
samples aggregated and validated twice; the same rows): 36.7 -> 30.9 CPU-s for the whole
process, a warm aggregation 3.1 -> 1.65 s, a warm validation 5.0 -> 3.65 s."""


def spark_conf() -> dict[str, str]:
    """Spark settings for the jobs: no UI, loopback driver (``$KAFKALAB_SPARK_DRIVER_HOST``
    overrides the driver address when executors run on other hosts), a quick-starting
    driver JVM (:data:`DRIVER_JAVA_OPTIONS`), :data:`DRIVER_STATIC_CONF`."""
    host = os.environ.get("KAFKALAB_SPARK_DRIVER_HOST", "127.0.0.1")
    conf = {
        **DRIVER_STATIC_CONF,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": host,
        "spark.driver.bindAddress": host,
        "spark.sql.shuffle.partitions": "4",
        "spark.log.level": "WARN",
        # the jobs read small Parquet files from a shared path: waiting up to 3 s per task
        # for a "local" executor only delays them (72 s -> 46 s for validate on a 2-worker
        # standalone cluster)
        "spark.locality.wait": "0s",
    }
    java_options = os.environ.get("KAFKALAB_SPARK_DRIVER_JAVA_OPTIONS", DRIVER_JAVA_OPTIONS)
    if java_options.strip():
        conf["spark.driver.extraJavaOptions"] = java_options.strip()
    return conf


def one_session_args(root: Any) -> list[str]:
    """The arguments that make an aggregation job (``aggregate_metrics``,
    ``aggregate_load``: :attr:`kafkalab.kinds.RunKind.validates_in_session`) validate its run
    in the same Spark session (the param ``one_spark_session``): ``--validate-out
    <root>/validation``."""
    return ["--validate-out", f"{root}/{store.VALIDATION_DIR}"]


def runtime_conf(conf: Mapping[str, str] | None) -> dict[str, str]:
    """``conf`` as a task runs it: with the driver's class-data archive
    (:func:`kafkalab.spark.cds.with_archive`) when it exists on this machine. Called in the
    operator's ``execute``, never at parse time (it looks at files)."""
    return with_archive(conf or {})


AUTH_FILE_ENV = "KAFKALAB_SPARK_AUTH_FILE"
"""A Spark properties file with the shared secret of a user's own cluster (see the module)."""


def _lab_master(lab: Path) -> str | None:
    """The master URL of the lab's standalone cluster (its ``state.json``), if recorded."""
    from kafkalab.spark.spec import SparkLayout

    try:
        state = json.loads(SparkLayout(lab).state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    url = state.get("master_url") if isinstance(state, dict) else None
    return url if isinstance(url, str) else None


def auth_properties_file(master: str | None, env: Mapping[str, str] | None = None,
                         lab: Path | None = None) -> str | None:
    """The properties file that carries the secret of ``master`` to ``spark-submit
    --properties-file`` (see the module): ``$KAFKALAB_SPARK_AUTH_FILE`` of ``env`` (default
    ``os.environ``) when set, else ``<lab>/spark/auth.properties`` (``lab``: default
    :func:`kafkalab.paths.lab_dir`) when ``master`` is the lab's own standalone master; None
    otherwise (``local[*]``, YARN, a cluster without authentication). Reads files: call it
    when the job runs.

    Raises:
        ConfigError: ``$KAFKALAB_SPARK_AUTH_FILE`` names no readable file.
    """
    named = (os.environ if env is None else env).get(AUTH_FILE_ENV, "").strip()
    if named:
        if not os.access(named, os.R_OK) or not Path(named).is_file():
            raise ConfigError(f"${AUTH_FILE_ENV} {named!r} is not a readable file (a Spark "
                              "properties file with spark.authenticate.secret)")
        return named
    if not master or not master.strip().startswith("spark://"):
        return None
    from kafkalab.spark.spec import SparkLayout

    lab = lab or lab_dir()
    path = SparkLayout(lab).auth_path
    if path.is_file() and _lab_master(lab) == master.strip():
        return str(path)
    return None


WORKER_DAEMON_CONF = "spark.python.daemon.module"
"""The Spark setting that names the module Python workers are forked from."""

WORKER_DAEMON = "kafkalab.spark.worker_daemon"
"""The lab's daemon (:mod:`kafkalab.spark.worker_daemon`): PySpark's own, minus a per-task
cost of CPython 3.11 that the zips Spark puts on the workers' path bring."""


def lab_executors(master: str | None, lab: Path | None = None) -> bool:
    """Whether the executors of a job on ``master`` run from the lab's own virtualenv: a
    ``local[*]`` master, or the lab's standalone master (``<lab>/spark/state.json``). Reads
    that file: call it when the job runs."""
    master = (master or "").strip()
    if master == "local" or master.startswith("local["):
        return True
    return master.startswith("spark://") and _lab_master(lab or lab_dir()) == master


def with_worker_daemon(conf: Mapping[str, str], master: str | None,
                       lab: Path | None = None) -> dict[str, str]:
    """``conf`` with :data:`WORKER_DAEMON` as the Python workers' daemon when
    :func:`lab_executors` (a user's cluster keeps PySpark's: its workers may not have the
    lab installed); a daemon ``conf`` already names is kept."""
    out = dict(conf)
    if WORKER_DAEMON_CONF not in out and lab_executors(master, lab):
        out[WORKER_DAEMON_CONF] = WORKER_DAEMON
    return out


def spark_env() -> dict[str, str]:
    """Environment of ``spark-submit``: the Python that runs the jobs, no GX analytics, a
    quick launcher JVM (:data:`LAUNCHER_OPTS`, unless ``$SPARK_LAUNCHER_OPTS`` is set)."""
    python = os.environ.get("PYSPARK_PYTHON") or sys.executable
    env = {"PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python,
           "GX_ANALYTICS_ENABLED": "false",
           "SPARK_LAUNCHER_OPTS": os.environ.get("SPARK_LAUNCHER_OPTS", LAUNCHER_OPTS)}
    if "KAFKALAB_SPARK_DRIVER_HOST" not in os.environ:
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


__all__ = [
    "AUTH_FILE_ENV",
    "DRIVER_STATIC_CONF",
    "SESSION_MODULE",
    "SPARK_JOBS",
    "SPARK_JOB_OUTPUTS",
    "WORKER_DAEMON",
    "WORKER_DAEMON_CONF",
    "auth_properties_file",
    "lab_executors",
    "one_session_args",
    "runtime_conf",
    "spark_application",
    "spark_conf",
    "spark_env",
    "spark_job_args",
    "spark_py_files",
    "with_worker_daemon",
]
