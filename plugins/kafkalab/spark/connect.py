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
  program, minus the JVM: ``python <script> <args>`` in a process of its own (in a process
  that runs several, forked from its job host, which has the jobs' imports done:
  :mod:`kafkalab.spark.job_host`), the script's
  folder first on its ``sys.path`` (the ``--py-files``), the lab's package importable, and
  ``$KAFKALAB_SPARK_MASTER`` the server's ``sc://`` URL, which ``spark_jobs/_session.py``
  turns into a Connect session. A process of its own, not the caller's: a DAG task's process
  may measure latency next (``airflow dags test`` runs every task in one process), and must
  not inherit Spark's and Great Expectations' imports, threads, logging settings and
  environment; the job's exit code and output come back as a spark-submit's do.

**Only the lab's jobs get in.** Each server is started with a new random token
(``spark.connect.authenticate.token``, given to the server through its environment,
``SPARK_CONNECT_AUTHENTICATE_TOKEN``, never on its command line) kept in a 0600 file of the
user's runtime folder (:func:`token_path`) while it runs. A client
without it is refused (``UNAUTHENTICATED``): the server runs any code it is sent. The lab's
clients (:func:`job_env`) read the file for a server on this machine and hand the token to
PySpark the same way, through the environment; the URL they connect to names ``localhost``,
the one host PySpark sends a token to without TLS (gRPC local credentials). No URL, command
line or output of the lab's holds the token.

Where it is used: ``KAFKALAB_SPARK_MASTER=sc://localhost:<port>`` (the lab's one Spark switch)
makes ``kafkalab aggregate`` and the DAGs' Spark tasks (the ``spark_default`` connection
becomes the provider's ``spark_connect`` type) run their jobs this way. The jobs read and
write the data directory from both sides (the server's executors write Parquet, the client
writes the validation results), so the server must see the same file system as the client:
one machine, or a shared/URI data directory.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO
from urllib.parse import urlparse

from kafkalab import procs
from kafkalab.errors import ClusterError, RunError
from kafkalab.paths import PACKAGE_DIR
from kafkalab.procs import HOST
from kafkalab.progress import Progress, noop
from kafkalab.spark import job_host
from kafkalab.spark.spec import spark_home
from kafkalab.spark.submit import runtime_conf, spark_conf, spark_env, with_worker_daemon
from kafkalab.store import atomic_write

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
    "token_path",
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

TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
"""Where Spark's Connect server and PySpark's client read the server's token."""

CLIENT_HOST = "localhost"
"""The host of the lab's ``sc://`` URLs: PySpark sends a token in clear only to it."""

_LOCAL_HOSTS = (CLIENT_HOST, HOST)


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


def connect_url(port: int, host: str = CLIENT_HOST) -> str:
    """``sc://<host>:<port>``."""
    return f"{SCHEME}{host}:{port}"


def token_path(port: int) -> Path:
    """The 0600 file holding the token of the lab's server on ``port`` while it runs: in the
    user's runtime folder (``$XDG_RUNTIME_DIR``, else ``<tmp>/kafkalab-<uid>``, mode 0700),
    which every lab client of this user on this machine finds whatever its ``KAFKALAB_HOME``
    (a port names one server on a machine)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) / "kafkalab" if runtime else Path(tempfile.gettempdir()) / f"kafkalab-{os.getuid()}"
    return base / f"spark-connect-{port}.token"


def _write_token(port: int, token: str) -> None:
    """Write the server's token to :func:`token_path` (folder 0700 and ours, file 0600).

    Raises:
        ClusterError: the folder exists and belongs to someone else or others may enter it.
    """
    folder = token_path(port).parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = folder.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise ClusterError(f"{folder} is not a private folder of this user (owner uid "
                           f"{st.st_uid}, mode {st.st_mode & 0o777:o}): the Spark Connect "
                           "server's token cannot be kept there")
    atomic_write(token_path(port), token)  # 0600


def _local_port(url: str) -> int | None:
    """The port of an ``sc://`` URL naming this machine, else None."""
    parsed = urlparse(url.split(";", 1)[0])
    if parsed.hostname not in _LOCAL_HOSTS:
        return None
    return parsed.port or 15002


def server_port() -> int:
    """``$KAFKALAB_SPARK_CONNECT_PORT`` or :data:`DEFAULT_PORT`.

    Raises:
        ConfigError: the variable is not a port number.
    """
    return procs.env_port(PORT_ENV, DEFAULT_PORT)


def server_command(port: int, extra_conf: Mapping[str, str] | None = None) -> list[str]:
    """The ``spark-submit`` command line of a server on ``127.0.0.1:port``: the jobs' Spark
    settings (:func:`kafkalab.spark.submit.spark_conf`, class-data archive included when
    built), then ``extra_conf`` (Spark SQL settings become every session's defaults), then
    the Connect service's address."""
    conf = {**with_worker_daemon(runtime_conf(spark_conf()), SERVER_MASTER),
            **(extra_conf or {}),
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(port)}
    return [str(spark_home() / "bin" / "spark-submit"), "--master", SERVER_MASTER,
            "--class", SERVER_CLASS, "--name", "kafkalab-spark-connect",
            *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}"))]


def start_server(port: int, log_path: Path, workdir: Path,
                 timeout_s: float = READY_TIMEOUT_S,
                 progress: Progress | None = None,
                 extra_conf: Mapping[str, str] | None = None) -> ConnectServer:
    """Start a Spark Connect server on ``127.0.0.1:port`` and wait until it accepts
    connections; its output goes to ``log_path``, its working directory is ``workdir``;
    ``extra_conf``: Spark settings added to the jobs' (:func:`server_command`).

    Raises:
        ClusterError: the port is in use, or the server exited or did not answer within
            ``timeout_s`` (one line with the reason from its log; it is stopped then).
    """
    say = progress or noop
    procs.check_ports_free([port])
    workdir.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    _write_token(port, token)
    env = {**os.environ, **spark_env(), TOKEN_ENV: token}
    for leaked in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET"):
        env.pop(leaked, None)
    try:
        pid = procs.spawn(server_command(port, extra_conf), log_path, workdir, env)
    except BaseException:
        token_path(port).unlink(missing_ok=True)
        raise
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
    token_path(server.port).unlink(missing_ok=True)
    return outcome


@contextlib.contextmanager
def running_server(port: int, log_path: Path, workdir: Path,
                   progress: Progress | None = None,
                   extra_conf: Mapping[str, str] | None = None) -> Iterator[ConnectServer]:
    """:func:`start_server` for the length of a ``with`` block, stopped after it."""
    server = start_server(port, log_path, workdir, progress=progress, extra_conf=extra_conf)
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


def client_url(url: str) -> tuple[str, str | None]:
    """The URL a lab client connects to and the token it sends: for a server of the lab's on
    this machine (its :func:`token_path` exists), the token, and the URL's host as
    ``localhost`` (PySpark sends a token over a plain channel only there); else ``url`` as
    given and None (a server of the user's: its own URL parameters apply)."""
    port = _local_port(url)
    if port is None or ";token=" in url:
        return url, None
    try:
        token = token_path(port).read_text(encoding="utf-8").strip()
    except OSError:
        return url, None
    base, sep, params = url.partition(";")
    parsed = urlparse(base)
    local = base.replace(f"{parsed.hostname}:", f"{CLIENT_HOST}:", 1) \
        if parsed.port else f"{SCHEME}{CLIENT_HOST}:{port}"
    return local + sep + params, token or None


def job_env(url: str) -> dict[str, str]:
    """The job process's environment: ours, ``$KAFKALAB_SPARK_MASTER`` the server's URL and
    its token in ``$SPARK_CONNECT_AUTHENTICATE_TOKEN`` (:func:`client_url`), no GX
    analytics, the lab's package importable, no PySpark session of the caller's."""
    env = {k: v for k, v in os.environ.items() if k not in (*_SESSION_ENV, TOKEN_ENV)}
    paths = [str(PACKAGE_DIR.parent),
             *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    url, token = client_url(url)
    env.update(KAFKALAB_SPARK_MASTER=url, GX_ANALYTICS_ENABLED="false",
               PYTHONPATH=os.pathsep.join(dict.fromkeys(paths)))
    if token:
        env[TOKEN_ENV] = token
    return env


def _run_in_host(script: Path, argv: Sequence[str], url: str, out: TextIO | Progress | None,
                 timeout_s: float | None) -> int:
    """:func:`run_job` through the process's job host (:mod:`kafkalab.spark.job_host`)."""
    try:
        if out is None or hasattr(out, "write"):
            if out is not None:
                out.flush()  # type: ignore[union-attr]
            return job_host.run_script(
                script, argv, job_env(url), timeout_s=timeout_s,
                out_fd=None if out is None else out.fileno())  # type: ignore[union-attr]
        return job_host.run_script(script, argv, job_env(url), sink=out,  # type: ignore[arg-type]
                                   timeout_s=timeout_s)
    except job_host.JobTimeout as exc:
        raise RunError(str(exc)) from None
    except OSError as exc:
        raise RunError(f"{script.name}: {exc}") from None


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
    if job_host.active():
        return _run_in_host(script, argv, url, out, timeout_s)
    cmd = [sys.executable, str(script), *(str(a) for a in argv)]
    if out is None or hasattr(out, "write"):
        try:
            return subprocess.run(cmd, env=job_env(url), stdout=out,  # type: ignore[arg-type]
                                  stderr=subprocess.STDOUT if out is not None else None,
                                  timeout=timeout_s, check=False).returncode
        except subprocess.TimeoutExpired:
            raise RunError(f"{script.name} ran longer than {timeout_s:.0f} s") from None
    sink: Progress = out  # type: ignore[assignment]
    with subprocess.Popen(cmd, env=job_env(url), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        assert proc.stdout is not None
        # a timer, not a check between lines: a job that prints nothing more is stopped too
        with procs.kill_after(timeout_s, proc.kill) as timed_out:
            for line in proc.stdout:
                sink(line.rstrip("\n"))
            code = proc.wait()
        if timed_out.is_set():
            raise RunError(f"{script.name} ran longer than {timeout_s:.0f} s")
        return code
