"""Spark Connect: one long-lived Spark driver that the lab's jobs run against as clients.

Every ``spark-submit`` of a lab job starts a driver JVM, and on a small run most of the job's
~20 s is that JVM starting and compiling the same query plans again (``aggregate_metrics``
on one night's 400 samples: ~22 s submitted, ~6 s against a driver already warm). A Spark
Connect server is that driver kept alive: the jobs connect to it over gRPC and each gets a
session of its own on it.

- :func:`start_server` starts the server (Spark's own ``SparkConnectServer``, from the
  installed PySpark's ``spark-submit``, bound to 127.0.0.1) and waits until it accepts
  connections; :func:`stop_server` stops its process group; :func:`running_server` does both
  around a ``with`` block (``make demo`` runs its Spark work through one).
- :func:`run_job` runs a lab job script against a server the way spark-submit runs a driver
  program, minus the JVM: ``python <script> <args>`` in a process of its own, the script's
  folder first on its ``sys.path`` (the ``--py-files``), the lab's package importable, and
  ``$KAFKALAB_SPARK_MASTER`` the server's ``sc://`` URL, which ``spark_jobs/_session.py``
  turns into a Connect session. A process of its own, not the caller's: a DAG task's process
  may measure latency next (``airflow dags test`` runs every task in one process), and must
  not inherit Spark's and Great Expectations' imports, threads, logging settings and
  environment; the job's exit code and output come back as a spark-submit's do.

Where it is used: ``KAFKALAB_SPARK_MASTER=sc://127.0.0.1:<port>`` (the lab's one Spark switch)
makes ``kafkalab aggregate`` and the DAGs' Spark tasks (the ``spark_default`` connection
becomes the provider's ``spark_connect`` type) run their jobs this way. The jobs read and
write the data directory from both sides (the server's executors write Parquet, the client
writes the validation results), so the server must see the same file system as the client:
one machine, or a shared/URI data directory.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO
from urllib.parse import urlparse

from kafkalab import procs
from kafkalab.errors import ClusterError, RunError
from kafkalab.paths import PACKAGE_DIR
from kafkalab.procs import HOST
from kafkalab.progress import Progress, noop
from kafkalab.spark.spec import spark_home
from kafkalab.spark.submit import runtime_conf, spark_conf, spark_env

__all__ = [
    "DEFAULT_PORT",
    "PORT_ENV",
    "SCHEME",
    "ConnectServer",
    "check_reachable",
    "connect_url",
    "is_connect_url",
    "run_job",
    "running_server",
    "server_command",
    "server_port",
    "start_server",
    "stop_server",
]

DEFAULT_PORT = 15102
"""The lab's Spark Connect port (Spark's own default, 15002, is left to a user's server)."""

PORT_ENV = "KAFKALAB_SPARK_CONNECT_PORT"
"""Environment variable overriding :data:`DEFAULT_PORT`."""

SCHEME = "sc://"
"""A Spark master URL with this scheme names a Spark Connect server."""

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
"""Spark's Connect server (``spark-connect_2.13`` ships in the PySpark wheel's ``jars/``)."""

SERVER_MASTER = "local[2]"
"""The server's own master: its driver runs the tasks, one per core of the lab's machine."""

READY_TIMEOUT_S = 120.0
"""How long :func:`start_server` waits for the server to accept connections."""

STOP_TIMEOUT_S = 15.0
"""How long the server has to exit after SIGTERM before it is killed."""

_POLL_S = 0.1


@dataclass(frozen=True)
class ConnectServer:
    """A Spark Connect server :func:`start_server` started."""

    pid: int
    port: int
    log: Path

    @property
    def url(self) -> str:
        """The ``sc://`` URL its clients use."""
        return connect_url(self.port)


def is_connect_url(master: str | None) -> bool:
    """True when the Spark master URL ``master`` names a Spark Connect server."""
    return bool(master) and str(master).strip().startswith(SCHEME)


def connect_url(port: int, host: str = HOST) -> str:
    """``sc://<host>:<port>``."""
    return f"{SCHEME}{host}:{port}"


def server_port() -> int:
    """``$KAFKALAB_SPARK_CONNECT_PORT`` or :data:`DEFAULT_PORT`.

    Raises:
        ConfigError: the variable is not a port number.
    """
    return procs.env_port(PORT_ENV, DEFAULT_PORT)


def server_command(port: int) -> list[str]:
    """The ``spark-submit`` command line of a server on ``127.0.0.1:port``: the jobs' Spark
    settings (:func:`kafkalab.spark.submit.spark_conf`, class-data archive included when
    built) plus the Connect service's address."""
    conf = {**runtime_conf(spark_conf()),
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(port)}
    return [str(spark_home() / "bin" / "spark-submit"), "--master", SERVER_MASTER,
            "--class", SERVER_CLASS, "--name", "kafkalab-spark-connect",
            *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}"))]


def start_server(port: int, log_path: Path, workdir: Path,
                 timeout_s: float = READY_TIMEOUT_S,
                 progress: Progress | None = None) -> ConnectServer:
    """Start a Spark Connect server on ``127.0.0.1:port`` and wait until it accepts
    connections; its output goes to ``log_path``, its working directory is ``workdir``.

    Raises:
        ClusterError: the port is in use, or the server exited or did not answer within
            ``timeout_s`` (one line with the reason from its log; it is stopped then).
    """
    say = progress or noop
    procs.check_ports_free([port])
    workdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **spark_env()}
    for leaked in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET"):
        env.pop(leaked, None)
    pid = procs.spawn(server_command(port), log_path, workdir, env)
    server = ConnectServer(pid=pid, port=port, log=log_path)
    say(f"Spark Connect server starting on {server.url} (pid {pid}, log {log_path})")
    started = time.monotonic()
    deadline = started + timeout_s
    try:
        while not procs.port_open(port, 0.3):
            if not procs.pid_alive(pid):
                procs.reap(pid)
                raise ClusterError(f"the Spark Connect server exited before it listened on "
                                   f"{port}: {procs.failure_line(log_path)} (log {log_path})")
            if time.monotonic() > deadline:
                raise ClusterError(f"the Spark Connect server did not listen on {port} "
                                   f"within {timeout_s:.0f} s (log {log_path})")
            time.sleep(_POLL_S)
    except BaseException:  # a failed or interrupted start leaves no server behind
        stop_server(server)
        raise
    say(f"Spark Connect server ready on {server.url} in {time.monotonic() - started:.1f} s")
    return server


def stop_server(server: ConnectServer) -> str:
    """Stop the server's process group (SIGTERM, then SIGKILL after
    :data:`STOP_TIMEOUT_S`); returns what :func:`kafkalab.procs.stop` did."""
    outcome = procs.stop(server.pid, timeout_s=STOP_TIMEOUT_S, group=True)
    procs.wait_port_released(server.port)
    return outcome


@contextlib.contextmanager
def running_server(port: int, log_path: Path, workdir: Path,
                   progress: Progress | None = None) -> Iterator[ConnectServer]:
    """:func:`start_server` for the length of a ``with`` block, stopped after it."""
    server = start_server(port, log_path, workdir, progress=progress)
    try:
        yield server
    finally:
        stop_server(server)


def check_reachable(url: str) -> None:
    """Refuse a Spark Connect URL nothing answers at, before a job waits on PySpark's retries
    (minutes) for it.

    Raises:
        ClusterError: ``no Spark Connect server answers at <url>`` and what to do.
    """
    parsed = urlparse(url.split(";", 1)[0])
    host, port = parsed.hostname or HOST, parsed.port or 15002
    if not procs.port_open(port, 1.0, host=host):
        raise ClusterError(f"no Spark Connect server answers at {url}: start one (make demo "
                           "does; kafkalab.spark.connect.start_server) or unset "
                           "KAFKALAB_SPARK_MASTER to spark-submit each job")


_SESSION_ENV = ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "SPARK_CONNECT_MODE_ENABLED",
                "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")
"""Variables of a PySpark session in the caller that must not reach the job's process."""


def job_env(url: str) -> dict[str, str]:
    """The job process's environment: ours, ``$KAFKALAB_SPARK_MASTER`` = ``url``, no GX
    analytics, the lab's package importable, no PySpark session of the caller's."""
    env = {k: v for k, v in os.environ.items() if k not in _SESSION_ENV}
    paths = [str(PACKAGE_DIR.parent),
             *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    env.update(KAFKALAB_SPARK_MASTER=url, GX_ANALYTICS_ENABLED="false",
               PYTHONPATH=os.pathsep.join(dict.fromkeys(paths)))
    return env


def run_job(application: str | os.PathLike[str], argv: Sequence[str], url: str,
            out: TextIO | Progress | None = None, timeout_s: float | None = None) -> int:
    """Run the lab job script ``application`` with ``argv`` against the Spark Connect
    server at ``url`` in a Python process of its own; return its exit code (0, 1 for a
    validation whose expectations failed or a job that raised, 2 for input it refused: the
    scripts' own codes).

    ``out``: where the job's stdout and stderr go: a text file, a callable given each line,
    or (None) this process's.

    Raises:
        ClusterError: nothing answers at ``url`` (:func:`check_reachable`).
        RunError: the job ran longer than ``timeout_s`` (it is killed).
    """
    check_reachable(url)
    script = Path(application).resolve()
    cmd = [sys.executable, str(script), *(str(a) for a in argv)]
    if out is None or hasattr(out, "write"):
        try:
            return subprocess.run(cmd, env=job_env(url), stdout=out,  # type: ignore[arg-type]
                                  stderr=subprocess.STDOUT if out is not None else None,
                                  timeout=timeout_s, check=False).returncode
        except subprocess.TimeoutExpired:
            raise RunError(f"{script.name} ran longer than {timeout_s:.0f} s") from None
    sink: Progress = out  # type: ignore[assignment]
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    with subprocess.Popen(cmd, env=job_env(url), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sink(line.rstrip("\n"))
            if deadline is not None and time.monotonic() > deadline:
                proc.kill()
                raise RunError(f"{script.name} ran longer than {timeout_s:.0f} s")
        return proc.wait()
