"""A private Redis for Airflow's Celery executor (``make airflow EXECUTOR=celery``), bound to
127.0.0.1.

It is Debian's ``redis-server`` (``make setup`` installs the package when it is missing),
run with a directory of the lab's own:

``<dir>/`` (default ``<AIRFLOW_HOME>/redis``)
    ``redis.conf`` (mode 0600: it holds the password), ``redis.log``, ``redis.pid`` (the
    server this module started), ``password`` (mode 0600).

The server listens on ``127.0.0.1:<port>`` only (default :data:`DEFAULT_PORT`, or
``$KAFKALAB_REDIS_PORT``), needs the generated password, and keeps nothing on disk (no RDB
snapshots, no append-only file): it is Celery's message broker, and a task queued when it
stops is lost with it (the scheduler sees the task instance stuck and reschedules it).
Celery's results go to the metadata database (PostgreSQL), not to Redis.

Functions: :func:`redis_up` (idempotent), :func:`redis_status`, :func:`redis_down` (stops
exactly the server it started, by pid), :func:`broker_url`.
"""

from __future__ import annotations

import shutil
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafkalab import procs
from kafkalab.errors import ClusterError
from kafkalab.progress import Progress, noop
from kafkalab.store import atomic_write, private_token

__all__ = ["DEFAULT_PORT", "PORT_ENV", "broker_url", "redis_down", "redis_port",
           "redis_status", "redis_up"]

DEFAULT_PORT = 16379
"""The lab's Redis port (not 6379: a system Redis may hold that one)."""

PORT_ENV = "KAFKALAB_REDIS_PORT"
"""Environment variable that overrides :data:`DEFAULT_PORT`."""

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0


def redis_port(env: Mapping[str, str] | None = None) -> int:
    """``$KAFKALAB_REDIS_PORT`` of ``env`` (default ``os.environ``) or :data:`DEFAULT_PORT`.

    Raises:
        ConfigError: the variable is not a port number.
    """
    return procs.env_port(PORT_ENV, DEFAULT_PORT, env)


def _files(redis_dir: Path) -> dict[str, Path]:
    return {"conf": redis_dir / "redis.conf", "log": redis_dir / "redis.log",
            "pid": redis_dir / "redis.pid", "password": redis_dir / "password"}


def _server_bin() -> str:
    found = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").is_file() else None)
    if not found:
        raise ClusterError("redis-server is not installed: run `make setup` (it installs "
                           "Debian's redis-server package for EXECUTOR=celery)")
    return found


def _password(redis_dir: Path) -> str:
    return private_token(_files(redis_dir)["password"])


def broker_url(redis_dir: Path | str, port: int | None = None) -> str:
    """Celery's ``broker_url`` for the lab's Redis (database 0, with the password)."""
    d = Path(redis_dir).expanduser().absolute()
    return f"redis://:{_password(d)}@{procs.HOST}:{port or redis_port()}/0"


def _read_pid(redis_dir: Path) -> int | None:
    try:
        return int(_files(redis_dir)["pid"].read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _ours(pid: int | None) -> bool:
    return procs.runs(pid, "redis-server")


def _write_conf(redis_dir: Path, port: int) -> Path:
    """The server's configuration: loopback only, the password (so it never appears on a
    command line or in the log's start line), nothing persisted."""
    path = _files(redis_dir)["conf"]
    atomic_write(path, "\n".join([
        f"bind {procs.HOST}", f"port {port}", f"dir {redis_dir}",
        f"requirepass {_password(redis_dir)}", 'save ""', "appendonly no",
        "protected-mode yes", "daemonize no", 'logfile ""', ""]))  # mode 0600
    return path


def _ping(port: int, password: str, timeout_s: float = 2.0) -> bool:
    """Whether the server on ``port`` answers ``AUTH`` + ``PING`` (RESP over a socket)."""
    try:
        with socket.create_connection((procs.HOST, port), timeout=timeout_s) as sock:
            sock.sendall(f"AUTH {password}\r\nPING\r\n".encode())
            reply = b""
            while b"+PONG" not in reply and len(reply) < 1024:
                chunk = sock.recv(256)
                if not chunk:
                    break
                reply += chunk
            return b"+PONG" in reply
    except OSError:
        return False


def redis_up(redis_dir: Path | str, port: int | None = None, progress: Progress = noop,
             timeout_s: float = START_TIMEOUT_S) -> dict[str, Any]:
    """Start the lab's Redis (once; idempotent) and wait until it answers.

    Returns:
        :func:`redis_status`.

    Raises:
        ClusterError: not installed, the server exited or did not answer in time (naming
            its log), or the port is held by another program.
    """
    d = Path(redis_dir).expanduser().absolute()
    port = port or redis_port()
    f = _files(d)
    d.mkdir(parents=True, exist_ok=True)
    pid = _read_pid(d)
    if not _ours(pid):
        procs.check_ports_free([port])
        pid = procs.spawn([_server_bin(), str(_write_conf(d, port))], f["log"], d)
        atomic_write(f["pid"], f"{pid}\n")
        progress(f"redis: started pid {pid} on {procs.HOST}:{port}, log {f['log']}")
    deadline = time.monotonic() + timeout_s
    while not _ping(port, _password(d)):
        if not procs.pid_alive(pid):
            raise ClusterError(f"redis-server (pid {pid}) exited; see {f['log']} "
                               f"(last line: {procs.last_line(f['log'])})")
        if time.monotonic() > deadline:
            raise ClusterError(f"redis-server did not answer on {procs.HOST}:{port} within "
                               f"{timeout_s:.0f} s; see {f['log']}")
        time.sleep(0.1)
    return redis_status(d, port)


def redis_status(redis_dir: Path | str, port: int | None = None) -> dict[str, Any]:
    """pid, alive, port, log and whether it answers."""
    d = Path(redis_dir).expanduser().absolute()
    port = port or redis_port()
    pid = _read_pid(d)
    alive = _ours(pid)
    return {"pid": pid, "alive": alive, "answers": alive and _ping(port, _password(d)),
            "port": port, "log": str(_files(d)["log"])}


def redis_down(redis_dir: Path | str, progress: Progress = noop) -> dict[str, Any] | None:
    """Stop the server :func:`redis_up` started (SIGTERM), by pid. None when none was
    started."""
    d = Path(redis_dir).expanduser().absolute()
    pid = _read_pid(d)
    if pid is None:
        return None
    result = "not running"
    if _ours(pid):
        result = procs.stop(pid, timeout_s=STOP_TIMEOUT_S)
    _files(d)["pid"].unlink(missing_ok=True)
    progress(f"redis: pid {pid} {result}")
    return {"component": "redis", "pid": pid, "result": result}
