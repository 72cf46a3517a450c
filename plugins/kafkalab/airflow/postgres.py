"""A private PostgreSQL for Airflow's metadata DB (``make airflow``), bound to 127.0.0.1.

``airflow dags test`` keeps SQLite; the scheduler stack (:func:`kafkalab.airflow.launcher.
airflow_up`) runs on this one. It is Debian's PostgreSQL (``make setup`` installs the
``postgresql`` package when ``initdb`` is missing), with a cluster of the lab's own:

``<dir>/`` (default ``<AIRFLOW_HOME>/postgres``)
    ``data/`` the cluster (``initdb``), ``run/`` its Unix socket, ``postgres.log``,
    ``postgres.pid`` (the postmaster this module started), ``password`` (mode 0600).

The server listens on ``127.0.0.1:<port>`` only (default :data:`DEFAULT_PORT`, or
``$KAFKALAB_POSTGRES_PORT``); connections over TCP need the generated password
(scram-sha-256); the superuser and the database are both named ``airflow``. PostgreSQL
refuses to run as root: as root, the server runs as the ``postgres`` system user (made by
the Debian package) through ``setpriv``, and ``<dir>`` must be reachable by that user.

Functions: :func:`pg_up` (idempotent), :func:`pg_status`, :func:`pg_down` (stops exactly the
postmaster it started, by pid), :func:`sqlalchemy_url`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafkalab import procs
from kafkalab.errors import ClusterError, ConfigError
from kafkalab.progress import Progress, noop
from kafkalab.store import atomic_write, private_token

__all__ = [
    "DATABASE",
    "DEFAULT_PORT",
    "PORT_ENV",
    "USER",
    "pg_bin",
    "pg_down",
    "pg_port",
    "pg_status",
    "pg_up",
    "sqlalchemy_url",
]

DEFAULT_PORT = 15432
"""The lab's PostgreSQL port (not 5432: a system PostgreSQL may hold that one)."""

PORT_ENV = "KAFKALAB_POSTGRES_PORT"
"""Environment variable that overrides :data:`DEFAULT_PORT`."""

USER = "airflow"
"""The cluster's superuser, who owns :data:`DATABASE`."""

DATABASE = "airflow"
"""Airflow's metadata database."""

SYSTEM_USER = "postgres"
"""The account the server runs as when the lab runs as root."""

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


def pg_port(env: Mapping[str, str] | None = None) -> int:
    """``$KAFKALAB_POSTGRES_PORT`` of ``env`` (default ``os.environ``) or :data:`DEFAULT_PORT`.

    Raises:
        ConfigError: the variable is not a port number.
    """
    return procs.env_port(PORT_ENV, DEFAULT_PORT, env)


def pg_bin(name: str) -> str:
    """Path of a PostgreSQL server program (``initdb``, ``postgres``): Debian's newest
    ``/usr/lib/postgresql/<version>/bin`` first, then ``PATH``.

    Raises:
        ClusterError: PostgreSQL is not installed.
    """
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                      key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit()
                      else 0)
    for d in reversed(versions):
        cand = Path(d) / name
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    found = shutil.which(name)
    if found:
        return found
    raise ClusterError(f"PostgreSQL's {name} is not installed: run `make setup` "
                       "(it installs Debian's postgresql package)")


def _files(pg_dir: Path) -> dict[str, Path]:
    return {"data": pg_dir / "data", "run": pg_dir / "run", "log": pg_dir / "postgres.log",
            "pid": pg_dir / "postgres.pid", "password": pg_dir / "password"}


def _as_user() -> list[str]:
    """The command prefix that runs a server program as :data:`SYSTEM_USER` when we are
    root (PostgreSQL refuses root), else nothing."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        raise ClusterError(f"running as root, PostgreSQL needs the {SYSTEM_USER!r} system user "
                           "(Debian's postgresql package creates it): run `make setup`") from None
    return ["setpriv", f"--reuid={SYSTEM_USER}", f"--regid={SYSTEM_USER}", "--init-groups",
            "--reset-env"]


def _check_reachable(pg_dir: Path) -> None:
    """As root, every parent of ``pg_dir`` must be searchable by others (the server runs as
    :data:`SYSTEM_USER`)."""
    if os.geteuid() != 0:
        return
    for parent in [pg_dir, *pg_dir.parents]:
        if parent.exists() and not parent.stat().st_mode & 0o001:
            raise ConfigError(
                f"{parent} is not searchable by the {SYSTEM_USER} user, who runs PostgreSQL "
                f"when the lab runs as root: put AIRFLOW_HOME elsewhere or `chmod o+x {parent}`")


def _password(pg_dir: Path) -> str:
    return private_token(_files(pg_dir)["password"], 18)


def sqlalchemy_url(pg_dir: Path, port: int | None = None) -> str:
    """Airflow's ``sql_alchemy_conn`` for the lab's PostgreSQL (psycopg2 over TCP)."""
    return (f"postgresql+psycopg2://{USER}:{_password(pg_dir)}@{procs.HOST}:"
            f"{port or pg_port()}/{DATABASE}")


def _read_pid(pg_dir: Path) -> int | None:
    try:
        return int(_files(pg_dir)["pid"].read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _ours(pg_dir: Path, pid: int | None) -> bool:
    return procs.runs(pid, str(_files(pg_dir)["data"]))


def _initdb(pg_dir: Path, progress: Progress) -> None:
    f = _files(pg_dir)
    pw_file = pg_dir / "pwfile"
    atomic_write(pw_file, _password(pg_dir) + "\n")
    f["data"].mkdir(mode=0o700)
    if os.geteuid() == 0:
        for p in (pg_dir, f["data"], pw_file):
            shutil.chown(p, SYSTEM_USER, SYSTEM_USER)
    progress(f"postgres: initdb {f['data']}")
    try:
        out = subprocess.run(
            [*_as_user(), pg_bin("initdb"), "-D", str(f["data"]), "-U", USER,
             f"--pwfile={pw_file}", "--auth-local=scram-sha-256",
             "--auth-host=scram-sha-256", "-E", "UTF8", "--no-locale"],
            capture_output=True, text=True, timeout=120, check=False)
    finally:
        pw_file.unlink(missing_ok=True)
    if out.returncode != 0:
        shutil.rmtree(f["data"], ignore_errors=True)
        last = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ClusterError(f"initdb failed: {last[0]}")


def _connect(pg_dir: Path, port: int, dbname: str, timeout_s: int = 3) -> Any:
    import psycopg2

    return psycopg2.connect(host=procs.HOST, port=port, user=USER, password=_password(pg_dir),
                            dbname=dbname, connect_timeout=timeout_s)


def _why_exited(log: Path) -> str:
    """The line of the server's log that says why it stopped: the last ``FATAL``/``PANIC``
    line or shutdown request (a bind failure, a signal), else the last line. PostgreSQL
    ends every stop with "database system is shut down", which says nothing."""
    try:
        tail = log.read_text(errors="replace").splitlines()[-200:]
    except OSError:
        return "no log"
    telling = [ln.strip() for ln in tail
               if any(k in ln for k in ("FATAL", "PANIC", "shutdown request"))]
    return (telling[-1] if telling else f"last line: {procs.last_line(log)}")[:300]


def pg_up(pg_dir: Path | str, port: int | None = None, progress: Progress = noop,
          timeout_s: float = START_TIMEOUT_S) -> dict[str, Any]:
    """Initialise (once) and start the lab's PostgreSQL; create :data:`DATABASE`. Idempotent.

    Returns:
        :func:`pg_status`.

    Raises:
        ClusterError: not installed, initdb failed, the server exited or did not answer in
            time (naming its log), or the port is held by another program.
        ConfigError: ``pg_dir`` unreachable for the server's user.
    """
    d = Path(pg_dir).expanduser().absolute()
    port = port or pg_port()
    f = _files(d)
    d.mkdir(parents=True, exist_ok=True)
    _check_reachable(d)
    pid = _read_pid(d)
    if not _ours(d, pid):
        if not (f["data"] / "PG_VERSION").is_file():
            _initdb(d, progress)
        procs.check_ports_free([port])
        f["run"].mkdir(exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(f["run"], SYSTEM_USER, SYSTEM_USER)
        cmd = [*_as_user(), pg_bin("postgres"), "-D", str(f["data"]), "-h", procs.HOST,
               "-p", str(port), "-k", str(f["run"]), "-c", "max_connections=200"]
        pid = procs.spawn(cmd, f["log"], d)
        atomic_write(f["pid"], f"{pid}\n")
        progress(f"postgres: started pid {pid} on {procs.HOST}:{port}, log {f['log']}")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            con = _connect(d, port, "postgres")
            break
        except Exception as exc:  # psycopg2.OperationalError while it starts
            if not procs.pid_alive(pid):
                raise ClusterError(f"postgres (pid {pid}) exited; see {f['log']} "
                                   f"({_why_exited(f['log'])})") from None
            if time.monotonic() > deadline:
                raise ClusterError(f"postgres did not accept connections on {procs.HOST}:{port}"
                                   f" within {timeout_s:.0f} s ({exc}); see {f['log']}") from None
            time.sleep(0.3)
    try:
        con.autocommit = True
        with con.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
            if cur.fetchone() is None:
                cur.execute(f'CREATE DATABASE "{DATABASE}" OWNER "{USER}"')
                progress(f"postgres: created database {DATABASE}")
    finally:
        con.close()
    return pg_status(d, port)


def pg_status(pg_dir: Path | str, port: int | None = None) -> dict[str, Any]:
    """pid, alive, port, data dir, log and whether it answers."""
    d = Path(pg_dir).expanduser().absolute()
    port = port or pg_port()
    pid = _read_pid(d)
    alive = _ours(d, pid)
    answers = False
    if alive:
        with contextlib.suppress(Exception):
            _connect(d, port, DATABASE, timeout_s=2).close()
            answers = True
    return {"pid": pid, "alive": alive, "answers": answers, "port": port,
            "data": str(_files(d)["data"]), "log": str(_files(d)["log"])}


def pg_down(pg_dir: Path | str, progress: Progress = noop) -> dict[str, Any] | None:
    """Stop the postmaster :func:`pg_up` started (fast shutdown: SIGINT), by pid. None when
    none was started."""
    d = Path(pg_dir).expanduser().absolute()
    pid = _read_pid(d)
    if pid is None:
        return None
    result = "not running"
    if _ours(d, pid):
        result = procs.stop(pid, signal.SIGINT, STOP_TIMEOUT_S)
    _files(d)["pid"].unlink(missing_ok=True)
    progress(f"postgres: pid {pid} {result}")
    return {"component": "postgres", "pid": pid, "result": result}
