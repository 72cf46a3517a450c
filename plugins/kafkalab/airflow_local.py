"""A loopback-only local Airflow 3 for the lab (``make airflow`` / ``make airflow-down``).

``airflow standalone`` would bind its log servers to 0.0.0.0 (8793/8794, not configurable),
so the four components are started separately, bound to 127.0.0.1 where they listen:

* ``airflow api-server -H 127.0.0.1 -p 8080`` (UI, REST API, execution API);
* ``airflow scheduler --skip-serve-logs`` (LocalExecutor, SQLite is accepted in 3.x);
* ``airflow triggerer --skip-serve-logs``;
* ``airflow dag-processor``.

State lives in ``<repo>/.lab/airflow`` (``AIRFLOW_HOME``): the SQLite DB, logs, one pid file
and one log file per component, and ``secrets.json`` (JWT / API secret shared by the
components). The UI login comes from the simple auth manager: user ``admin``, password in
``simple_auth_manager_passwords.json.generated`` (printed by :func:`airflow_up`).

Usage: ``python -m kafkalab.airflow_local up|down|status|env|dags-test DAG_ID [DATE] [--conf JSON]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
PORT = 8080
COMPONENTS: dict[str, list[str]] = {
    "api-server": ["api-server", "-H", HOST, "-p", str(PORT)],
    "scheduler": ["scheduler", "--skip-serve-logs"],
    "triggerer": ["triggerer", "--skip-serve-logs"],
    "dag-processor": ["dag-processor"],
}
ADMIN_USER = "admin"
SPARK_LOCAL_CONN = json.dumps({"conn_type": "spark", "host": "local[*]"})


def default_repo_root() -> Path:
    """The checkout this module lives in (``plugins/kafkalab/airflow_local.py`` -> repo)."""
    return Path(__file__).resolve().parents[2]


def airflow_home(repo_root: Path) -> Path:
    """``$AIRFLOW_HOME`` when set by the caller, else ``<repo>/.lab/airflow``."""
    return repo_root / ".lab" / "airflow"


def _secrets(home: Path) -> dict[str, str]:
    """JWT and API secrets shared by all components (created once, mode 0600)."""
    path = home / "secrets.json"
    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("jwt_secret") and data.get("secret_key"):
            return {str(k): str(v) for k, v in data.items()}
    home.mkdir(parents=True, exist_ok=True)
    data = {"jwt_secret": secrets.token_urlsafe(32), "secret_key": secrets.token_urlsafe(32)}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    return data


def airflow_env(repo_root: Path | str | None = None, home: Path | str | None = None,
                base: Mapping[str, str] | None = None, with_secrets: bool = True) -> dict[str, str]:
    """The environment every Airflow process of the lab runs with.

    Args:
        repo_root: the checkout (default: the one this module lives in).
        home: ``AIRFLOW_HOME`` (default ``<repo>/.lab/airflow``).
        base: environment to start from (default ``os.environ``); ``KAFKALAB_DATA_DIR`` and
            ``AIRFLOW_CONN_*`` already in it are kept.
        with_secrets: add the shared JWT/API secrets (creates ``<home>/secrets.json``).
    """
    repo = Path(repo_root) if repo_root is not None else default_repo_root()
    repo = repo.resolve()
    af_home = Path(home) if home is not None else airflow_home(repo)
    env = dict(os.environ if base is None else base)
    venv_bin = repo / ".venv" / "bin"
    python = venv_bin / "python"
    py = str(python) if python.exists() else sys.executable
    path_parts = [str(venv_bin)] + [p for p in env.get("PATH", "").split(os.pathsep)
                                    if p and p != str(venv_bin)]
    env.update({
        "AIRFLOW_HOME": str(af_home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(repo / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(repo / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "4",
        # Airflow 3 has no SequentialExecutor; LocalExecutor runs on SQLite (one DB writer
        # at a time: keep the parallelism small).
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://{HOST}:{PORT}/execution/",
        "AIRFLOW__API__HOST": HOST,
        "AIRFLOW__API__PORT": str(PORT),
        "AIRFLOW__API__BASE_URL": f"http://{HOST}:{PORT}",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
        "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
        "PATH": os.pathsep.join(path_parts),
        "SPARK_LOCAL_IP": HOST,
        "PYSPARK_PYTHON": py,
        "PYSPARK_DRIVER_PYTHON": py,
        "GX_ANALYTICS_ENABLED": "false",
        "PYTHONPATH": os.pathsep.join(
            [str(repo / "plugins")] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]),
    })
    env.setdefault("AIRFLOW_CONN_SPARK_DEFAULT", SPARK_LOCAL_CONN)
    env.setdefault("KAFKALAB_DATA_DIR", str(repo / "lab-data"))
    if with_secrets:
        s = _secrets(af_home)
        env.setdefault("AIRFLOW__API_AUTH__JWT_SECRET", s["jwt_secret"])
        env.setdefault("AIRFLOW__API__SECRET_KEY", s["secret_key"])
    for leaked in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET"):
        env.pop(leaked, None)
    return env


def _airflow_bin(env: Mapping[str, str]) -> str:
    for p in env.get("PATH", "").split(os.pathsep):
        cand = Path(p) / "airflow"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return "airflow"


def db_migrate(env: Mapping[str, str], timeout_s: float = 300) -> None:
    """``airflow db migrate`` (idempotent, ~2 s on SQLite)."""
    subprocess.run([_airflow_bin(env), "db", "migrate"], env=dict(env), check=True,
                   stdout=subprocess.DEVNULL, timeout=timeout_s)


def _pid_file(home: Path, name: str) -> Path:
    return home / f"{name}.pid"


def _read_pid(home: Path, name: str) -> int | None:
    try:
        return int(_pid_file(home, name).read_text().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as dead.
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _is_airflow(pid: int) -> bool:
    """True when ``pid`` still runs an ``airflow`` command (guards against pid reuse)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc: trust the pid file
    return any(b"airflow" in part for part in cmd)


def health(timeout_s: float = 2.0) -> dict[str, Any] | None:
    """The api-server's ``/api/v2/monitor/health`` document, or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://{HOST}:{PORT}/api/v2/monitor/health",
                                    timeout=timeout_s) as resp:
            data = json.loads(resp.read().decode("utf-8"))
            return data if isinstance(data, dict) else None
    except (OSError, ValueError, urllib.error.URLError):
        return None


def admin_password(home: Path) -> str | None:
    """The admin password of the simple auth manager (from its generated password file)."""
    path = home / "simple_auth_manager_passwords.json.generated"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return str(data.get(ADMIN_USER)) if isinstance(data, dict) and data.get(ADMIN_USER) else None


def _ensure_password(home: Path) -> str:
    """Create the password file with a random admin password unless one exists."""
    existing = admin_password(home)
    if existing:
        return existing
    pw = secrets.token_urlsafe(12)
    path = home / "simple_auth_manager_passwords.json.generated"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({ADMIN_USER: pw}) + "\n")
    return pw


def airflow_status(repo_root: Path | str | None = None) -> dict[str, Any]:
    """Which components run (by pid file) and whether the API answers."""
    repo = Path(repo_root) if repo_root is not None else default_repo_root()
    home = airflow_home(repo.resolve())
    comps = {}
    for name in COMPONENTS:
        pid = _read_pid(home, name)
        comps[name] = {"pid": pid, "alive": bool(pid and _alive(pid)),
                       "log": str(home / f"{name}.log")}
    h = health()
    up = all(c["alive"] for c in comps.values()) and h is not None
    return {"status": "up" if up else ("partial" if any(c["alive"] for c in comps.values())
                                        else "down"),
            "url": f"http://{HOST}:{PORT}", "airflow_home": str(home), "components": comps,
            "health": h}


def airflow_up(repo_root: Path | str | None = None, timeout_s: float = 180.0,
               progress: Any = print) -> dict[str, Any]:
    """Migrate the DB, start the four components (each once), wait for health, print login."""
    repo = (Path(repo_root) if repo_root is not None else default_repo_root()).resolve()
    home = airflow_home(repo)
    home.mkdir(parents=True, exist_ok=True)
    env = airflow_env(repo, home)
    progress(f"airflow home {home}; migrating the database …")
    db_migrate(env)
    password = _ensure_password(home)
    airflow = _airflow_bin(env)
    for name, args in COMPONENTS.items():
        pid = _read_pid(home, name)
        if pid and _alive(pid) and _is_airflow(pid):
            progress(f"{name}: already running (pid {pid})")
            continue
        log_file = home / f"{name}.log"
        with open(log_file, "ab") as log:
            proc = subprocess.Popen([airflow, *args], env=env, cwd=str(repo), stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        _pid_file(home, name).write_text(f"{proc.pid}\n")
        progress(f"{name}: started pid {proc.pid}, log {log_file}")
    deadline = time.monotonic() + timeout_s
    h = None
    while time.monotonic() < deadline:
        h = health()
        if h is not None and all(
                (h.get(k) or {}).get("status") == "healthy"
                for k in ("metadatabase", "scheduler")):
            break
        dead = [n for n in COMPONENTS if not _alive(_read_pid(home, n))]
        if dead:
            raise RuntimeError(f"airflow {', '.join(dead)} exited; see {home}/{dead[0]}.log")
        time.sleep(2)
    else:
        raise RuntimeError(f"airflow api-server not healthy within {timeout_s:.0f} s: {h}; "
                           f"see {home}/api-server.log")
    progress(f"Airflow UI: http://{HOST}:{PORT}  login: {ADMIN_USER} / {password}")
    progress(f"(password file {home}/simple_auth_manager_passwords.json.generated)")
    return airflow_status(repo)


def airflow_down(repo_root: Path | str | None = None, timeout_s: float = 30.0,
                 progress: Any = print) -> list[dict[str, Any]]:
    """Stop exactly the processes :func:`airflow_up` started (their process groups), by pid."""
    repo = (Path(repo_root) if repo_root is not None else default_repo_root()).resolve()
    home = airflow_home(repo)
    stopped: list[dict[str, Any]] = []
    for name in reversed(list(COMPONENTS)):
        pid = _read_pid(home, name)
        if not pid:
            continue
        result = "not running"
        if _alive(pid) and _is_airflow(pid):
            # Each component was started in its own session: its group holds its workers.
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            except PermissionError:
                os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.3)
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                result = "killed"
            else:
                result = "stopped"
        _pid_file(home, name).unlink(missing_ok=True)
        stopped.append({"component": name, "pid": pid, "result": result})
        progress(f"{name}: pid {pid} {result}")
    return stopped


def dags_test(dag_id: str, logical_date: str | None = None, conf: Mapping[str, Any] | None = None,
              repo_root: Path | str | None = None, home: Path | str | None = None,
              extra_env: Mapping[str, str] | None = None, timeout_s: float = 1800,
              migrate: bool = True, mark_success_pattern: str | None = None) -> int:
    """Run ``airflow dags test DAG_ID [DATE] [-c JSON]`` in a subprocess with the lab's env.

    ``mark_success_pattern``: regex of task ids marked successful without running them.
    Returns the exit code (non-zero when the DAG run failed).
    """
    env = airflow_env(repo_root, home)
    if extra_env:
        env.update(extra_env)
    Path(env["AIRFLOW_HOME"]).mkdir(parents=True, exist_ok=True)
    if migrate:
        db_migrate(env)
    cmd = [_airflow_bin(env), "dags", "test", dag_id]
    if logical_date:
        cmd.append(logical_date)
    if conf:
        cmd += ["-c", json.dumps(dict(conf))]
    if mark_success_pattern:
        cmd += ["--mark-success-pattern", mark_success_pattern]
    print("+", shlex.join(cmd), flush=True)
    repo = Path(repo_root) if repo_root is not None else default_repo_root()
    return subprocess.run(cmd, env=env, cwd=str(repo), timeout=timeout_s).returncode


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kafkalab.airflow_local up|down|status|env|dags-test``."""
    p = argparse.ArgumentParser(prog="python -m kafkalab.airflow_local",
                                description="Loopback-only local Airflow for the lab.")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("up", help="start api-server, scheduler, triggerer, dag-processor")
    sub.add_parser("down", help="stop exactly the processes `up` started")
    sub.add_parser("status", help="components, pids, health")
    sub.add_parser("env", help="print the environment as shell exports")
    t = sub.add_parser("dags-test", help="airflow dags test with the lab's environment")
    t.add_argument("dag_id")
    t.add_argument("logical_date", nargs="?")
    t.add_argument("--conf", default=None, help="DAG run conf as JSON")
    args = p.parse_args(argv)
    if args.cmd == "up":
        try:
            airflow_up()
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            print(f"airflow up: error: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.cmd == "down":
        if not airflow_down():
            print("airflow down: nothing was running")
        return 0
    if args.cmd == "status":
        st = airflow_status()
        print(json.dumps(st, indent=2))
        return 0 if st["status"] == "up" else 1
    if args.cmd == "env":
        env = airflow_env(with_secrets=False)
        for k in sorted(env):
            if k.startswith(("AIRFLOW", "KAFKALAB", "SPARK", "PYSPARK", "GX_")) or k in ("PATH", "PYTHONPATH"):
                print(f"export {k}={shlex.quote(env[k])}")
        return 0
    try:
        conf = json.loads(args.conf) if args.conf else None
    except json.JSONDecodeError as exc:
        print(f"dags-test: error: --conf is not valid JSON ({exc.msg} at column {exc.colno})", file=sys.stderr)
        return 2
    return dags_test(args.dag_id, args.logical_date, conf)


if __name__ == "__main__":
    sys.exit(main())
