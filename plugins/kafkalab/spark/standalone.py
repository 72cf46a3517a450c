"""A real Spark standalone cluster on this machine: ``kafkalab spark up / status / down``.

One master and N workers (default 2 × 1 core, 1g), started from the installed PySpark's own
``bin/spark-class`` (the wheel has no ``sbin/start-*.sh``), every listener on 127.0.0.1.
Ports, files and command lines: :mod:`kafkalab.spark.spec`. The master's JSON view:
:mod:`kafkalab.spark.master_api`.

``<lab_dir>/spark/state.json`` records exactly what ``up`` started (pid, ports, command line,
log, and the *marker*: the daemon's ``--properties-file`` path, which is in its command line);
``down`` signals only a pid that still carries its marker (:func:`kafkalab.procs.runs`), and
signals its process group, so the executors a worker launched go with it. ``up`` is
idempotent: the same cluster already up is returned (dead daemons of it are started again),
a different one is refused, state whose processes are all gone is dropped.

Point the lab at it with ``KAFKALAB_SPARK_MASTER=spark://127.0.0.1:7077`` (the Airflow
``spark_default`` connection and ``spark_jobs/_session.py`` both follow it).

The cluster authenticates every connection (``spark.authenticate``) with a secret ``up``
generates once into ``<lab_dir>/spark/auth.properties`` (mode 0600, :func:`ensure_secret`);
the lab's submissions pass that file (:func:`kafkalab.spark.submit.auth_properties_file`),
anything else is refused by the master. A cluster started before authentication existed is
refused by ``up`` (one line: ``spark down`` first).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict, cast

from kafkalab import procs
from kafkalab.errors import ClusterError
from kafkalab.procs import HOST
from kafkalab.progress import Progress, noop
from kafkalab.spark.master_api import MasterView, fetch_master
from kafkalab.spark.spec import (
    SECRET_BYTES,
    SparkLayout,
    StandaloneSpec,
    auth_properties,
    daemon_env,
    master_command,
    master_properties,
    spark_home,
    worker_command,
    worker_properties,
)
from kafkalab.store import atomic_write, atomic_write_json

__all__ = [
    "READY_TIMEOUT_S",
    "STOP_TIMEOUT_S",
    "SparkProcess",
    "SparkState",
    "ensure_secret",
    "export_line",
    "kept_secret",
    "spark_down",
    "spark_status",
    "spark_up",
]

READY_TIMEOUT_S = 120.0
"""How long ``up`` waits for the master and every worker to be registered ALIVE."""

STOP_TIMEOUT_S = 15.0
"""How long a daemon has to exit after SIGTERM before it is killed."""

PORT_RELEASE_TIMEOUT_S = 10.0
"""How long a stopped JVM's ports may stay held (threads closing sockets after the main
thread exited)."""

_POLL_S = 0.25


class SparkProcess(TypedDict):
    """One daemon ``up`` started, as recorded in ``state.json``."""

    role: str
    """``master`` or ``worker``."""
    id: int | None
    """Worker number (1-based); None for the master."""
    pid: int
    port: int
    webui_port: int
    marker: str
    """The daemon's ``--properties-file``: one argument of its command line (ownership)."""
    log: str
    cmdline: list[str]
    cwd: str


class SparkState(TypedDict, total=False):
    """The whole ``state.json``."""

    version: int
    lab_dir: str
    spec: dict[str, Any]
    master_url: str
    webui_url: str
    spark_home: str
    started_at: str
    ready_at: str
    startup_s: float
    processes: list[SparkProcess]


# --------------------------------------------------------------------------- state


def _resolve_lab(lab_dir: Path | str | None) -> Path:
    if lab_dir is None:
        from kafkalab.paths import lab_dir as default_lab_dir

        return default_lab_dir()
    return Path(lab_dir).expanduser().absolute()


def _now_iso() -> str:
    return datetime.now(UTC).isoformat()


def _read_state(layout: SparkLayout) -> SparkState | None:
    """The recorded state; None when there is none. An unreadable file is a state with no
    processes (nothing that cannot be verified is ever signalled)."""
    try:
        doc = json.loads(layout.state_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"processes": []}
    return cast(SparkState, doc) if isinstance(doc, dict) else {"processes": []}


def _write_state(layout: SparkLayout, state: SparkState) -> None:
    atomic_write_json(layout.state_path, state, sort_keys=False)


@contextlib.contextmanager
def _locked(layout: SparkLayout) -> Iterator[None]:
    """Hold ``<lab>/spark/.lock`` (exclusive ``flock``): two CLIs never start it twice."""
    layout.root.mkdir(parents=True, exist_ok=True)
    with layout.lock_path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _name(p: SparkProcess) -> str:
    return "master" if p["role"] == "master" else f"worker {p['id']}"


def _is_ours(p: SparkProcess) -> bool:
    return bool(p.get("marker")) and procs.runs(int(p.get("pid") or 0), p["marker"])


def _exited(p: SparkProcess) -> ClusterError:
    last = procs.last_line(p["log"])
    return ClusterError(f"Spark {_name(p)} (pid {p['pid']}) exited during start-up; see "
                        f"{p['log']}" + (f" (last line: {last})" if last else ""))


def export_line(master_url: str) -> str:
    """``export KAFKALAB_SPARK_MASTER=<url>``: the one switch that sends the lab's Spark jobs
    to that master."""
    return f"export KAFKALAB_SPARK_MASTER={master_url}"


# --------------------------------------------------------------------------- start


def _spawn(layout: SparkLayout, state: SparkState, env: dict[str, str], *, role: str,
           i: int | None, port: int, webui_port: int, cmd: list[str]) -> SparkProcess:
    """Start one daemon and record it before returning (a crash right after leaves no
    unknown process)."""
    log = layout.log(role, i)
    proc: SparkProcess = {
        "role": role, "id": i, "pid": 0, "port": port, "webui_port": webui_port,
        "marker": cmd[-1], "log": str(log), "cmdline": cmd, "cwd": str(layout.root),
    }
    proc["pid"] = procs.spawn(cmd, log, layout.root, env)
    state.setdefault("processes", []).append(proc)
    _write_state(layout, state)
    return proc


_SECRET_LINE = re.compile(r"^spark\.authenticate\.secret=([0-9a-f]{32,})$", re.M)


def kept_secret(layout: SparkLayout) -> str | None:
    """The shared secret in ``auth.properties``; None when there is none (or unreadable)."""
    try:
        found = _SECRET_LINE.search(layout.auth_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    return found.group(1) if found else None


def ensure_secret(layout: SparkLayout) -> str:
    """The cluster's shared secret: the one kept in ``<lab>/spark/auth.properties``, else a
    new one (:data:`~kafkalab.spark.spec.SECRET_BYTES` random bytes, hex) written there. The
    file is mode 0600 (made so if it was wider)."""
    secret = kept_secret(layout)
    if secret is None:
        secret = secrets.token_hex(SECRET_BYTES)
        atomic_write(layout.auth_path, "# written by kafkalab spark up: the cluster's shared "
                     "secret; spark-submit --properties-file reads it\n"
                     + auth_properties(secret))
    elif layout.auth_path.stat().st_mode & 0o077:
        os.chmod(layout.auth_path, 0o600)
    return secret


def _write_conf(layout: SparkLayout, spec: StandaloneSpec) -> None:
    """The daemons' properties files (mode 0600: they hold the secret)."""
    secret = ensure_secret(layout)
    atomic_write(layout.properties("master"), master_properties(secret))
    for i in range(1, spec.workers + 1):
        atomic_write(layout.properties("worker", i), worker_properties(secret))
        layout.work_dir(i).mkdir(parents=True, exist_ok=True)


def _wait_master(state: SparkState, spec: StandaloneSpec, deadline: float) -> None:
    """Until the master accepts connections on its RPC port (workers registering earlier
    would back off for 5-15 s)."""
    master = state["processes"][0]
    while not procs.port_open(spec.master_port, 0.3):
        if not _is_ours(master):
            raise _exited(master)
        if time.monotonic() > deadline:
            raise ClusterError(f"Spark master did not listen on {HOST}:{spec.master_port}; "
                               f"see {master['log']}")
        time.sleep(_POLL_S)


def _wait_ready(state: SparkState, spec: StandaloneSpec, deadline: float,
                progress: Progress) -> MasterView:
    """Until the master answers ALIVE and lists every worker ALIVE from its own port."""
    said = False
    while True:
        for p in state.get("processes", []):
            if not _is_ours(p):
                raise _exited(p)
        view = fetch_master(spec.webui_url, 1.0)
        missing = list(range(1, spec.workers + 1))
        if view is not None and view.status == "ALIVE":
            missing = [i for i in missing if view.alive_on(HOST, spec.worker_port(i)) is None]
            if not missing:
                return view
        if time.monotonic() > deadline:
            what = ("the master's web UI did not answer" if view is None
                    else f"worker(s) {', '.join(map(str, missing))} not registered")
            logs = SparkLayout(Path(state["lab_dir"])).logs_dir
            raise ClusterError(f"Spark standalone not ready: {what}; see {logs}")
        if not said and view is not None:
            progress(f"waiting for {len(missing)} worker(s) to register with {spec.master_url}")
            said = True
        time.sleep(_POLL_S)


def _start_fresh(layout: SparkLayout, spec: StandaloneSpec, timeout_s: float,
                 progress: Progress) -> SparkState:
    """Start master and workers; on any failure stop what was started and forget it."""
    home = spark_home()
    from kafkalab.cluster.java import ensure_java

    ensure_java()
    procs.check_ports_free(list(spec.ports().values()))
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    state: SparkState = {
        "version": 1, "lab_dir": str(layout.lab), "spec": spec.as_dict(),
        "master_url": spec.master_url, "webui_url": spec.webui_url, "spark_home": str(home),
        "started_at": _now_iso(), "processes": [],
    }
    env = daemon_env(home, layout)
    try:
        _write_conf(layout, spec)
        progress(f"starting Spark master on {spec.master_url} (web UI {spec.webui_url})")
        _spawn(layout, state, env, role="master", i=None, port=spec.master_port,
               webui_port=spec.webui_port, cmd=master_command(home, spec, layout))
        _wait_master(state, spec, deadline)
        progress(f"starting {spec.workers} worker(s): {spec.worker_cores} core(s), "
                 f"{spec.worker_memory} each")
        for i in range(1, spec.workers + 1):
            _spawn(layout, state, env, role="worker", i=i, port=spec.worker_port(i),
                   webui_port=spec.worker_webui_port(i),
                   cmd=worker_command(home, spec, layout, i))
        _wait_ready(state, spec, deadline, progress)
    except BaseException:
        _stop_all(state, noop)
        layout.state_path.unlink(missing_ok=True)
        raise
    state["startup_s"] = round(time.monotonic() - t0, 3)
    state["ready_at"] = _now_iso()
    _write_state(layout, state)
    progress(f"Spark standalone is up in {state['startup_s']:.1f} s: {spec.master_url}, "
             f"{spec.workers} worker(s); logs in {layout.logs_dir}")
    progress(f"it accepts only submissions with its secret: spark-submit --properties-file "
             f"{layout.auth_path} (the lab's own submissions pass it)")
    return state


def _heal(layout: SparkLayout, state: SparkState, spec: StandaloneSpec, timeout_s: float,
          progress: Progress) -> SparkState:
    """The same cluster runs, at least partly: start its dead daemons again (master first),
    then wait until every worker is registered."""
    deadline = time.monotonic() + timeout_s
    env = daemon_env(Path(state.get("spark_home") or spark_home()), layout)
    restarted = []
    for p in state["processes"]:  # the master is recorded first
        if _is_ours(p):
            continue
        procs.check_ports_free([int(p["port"]), int(p["webui_port"])])
        progress(f"restarting Spark {_name(p)}")
        p["pid"] = procs.spawn(list(p["cmdline"]), Path(p["log"]), Path(p["cwd"]), env)
        _write_state(layout, state)
        restarted.append(_name(p))
        if p["role"] == "master":
            _wait_master(state, spec, deadline)
    _wait_ready(state, spec, deadline, progress)
    progress(f"Spark standalone was degraded: restarted {', '.join(restarted)}" if restarted
             else f"Spark standalone is already up ({spec.master_url}); nothing to do")
    return state


def spark_up(spec: StandaloneSpec | None = None, lab_dir: Path | str | None = None,
             timeout_s: float = READY_TIMEOUT_S,
             progress: Progress | None = None) -> dict[str, Any]:
    """Start the standalone cluster of ``spec`` (or find it up) and wait until every worker
    is registered ALIVE with the master.

    Args:
        spec: ports, workers, cores, memory (default :class:`StandaloneSpec`).
        lab_dir: the lab home (default :func:`kafkalab.paths.lab_dir`); files go to
            ``<lab_dir>/spark/``.
        timeout_s: how long to wait for the master and the workers.
        progress: told what happens, one line at a time.

    Returns:
        :func:`spark_status` of the running cluster.

    Raises:
        ConfigError: ``spec`` cannot be started (bad count, port range, overlap, memory).
        ClusterError: a port is taken, a different cluster is up in this lab dir, a daemon
            died while starting, or the workers did not register in time (what was
            started is stopped again).
    """
    spec = (spec or StandaloneSpec()).validate()
    progress = progress or noop
    lab = _resolve_lab(lab_dir)
    layout = SparkLayout(lab)
    with _locked(layout):
        state = _read_state(layout)
        alive = [p for p in (state or {}).get("processes", []) if _is_ours(p)]
        if state is not None and alive:
            running = StandaloneSpec.from_dict(state.get("spec") or {})
            if running != spec:
                raise ClusterError(
                    f"a Spark standalone cluster is already up here with master "
                    f"{running.master_url} (web UI port {running.webui_port}, "
                    f"{running.workers} worker(s) × {running.worker_cores} core(s), "
                    f"{running.worker_memory}); run `kafkalab spark down` first")
            if kept_secret(layout) is None:
                raise ClusterError(
                    f"the Spark standalone cluster up here ({running.master_url}) was started "
                    "without authentication; run `kafkalab spark down`, then `up` again")
            _heal(layout, state, spec, timeout_s, progress)
        else:
            if state is not None:
                progress("removing stale Spark state (its processes are gone)")
                layout.state_path.unlink(missing_ok=True)
            _start_fresh(layout, spec, timeout_s, progress)
    return spark_status(lab)


# --------------------------------------------------------------------------- status


def spark_status(lab_dir: Path | str | None = None) -> dict[str, Any]:
    """The standalone cluster of a lab dir: ``up`` (every daemon ours and running, every
    worker registered ALIVE), ``degraded`` or ``down``, with one entry per daemon.

    Returns:
        ``status``, ``lab_dir``, ``state_path``, ``master_url``, ``webui_url``,
        ``started_at``, ``startup_s``, ``master`` (pid, alive, status as the master reports
        it, log), ``workers`` (id, pid, alive, registered: the master's state for it, port,
        webui, cores, memory_mb and what is used of them, log, work_dir) and ``apps``
        (active application names, completed count).
    """
    lab = _resolve_lab(lab_dir)
    layout = SparkLayout(lab)
    state = _read_state(layout)
    base: dict[str, Any] = {"status": "down", "lab_dir": str(lab),
                            "state_path": str(layout.state_path)}
    if state is None or not state.get("processes"):
        return {**base, "master": None, "workers": [], "apps": None}
    spec = StandaloneSpec.from_dict(state.get("spec") or {})
    alive = {id(p): _is_ours(p) for p in state["processes"]}
    master_proc = next((p for p in state["processes"] if p["role"] == "master"), None)
    view = fetch_master(spec.webui_url, 1.0) if master_proc and alive[id(master_proc)] else None
    master = None if master_proc is None else {
        "pid": master_proc["pid"], "alive": alive[id(master_proc)],
        "status": view.status if view else None, "url": spec.master_url,
        "webui": spec.webui_url, "log": master_proc["log"]}
    workers = []
    for p in state["processes"]:
        if p["role"] != "worker":
            continue
        w = view.alive_on(HOST, p["port"]) if view else None
        workers.append({
            "id": p["id"], "pid": p["pid"], "alive": alive[id(p)],
            "registered": w.state if w else None, "port": p["port"],
            "webui": f"http://{HOST}:{p['webui_port']}",
            "cores": w.cores if w else None, "cores_used": w.cores_used if w else None,
            "memory_mb": w.memory_mb if w else None,
            "memory_used_mb": w.memory_used_mb if w else None,
            "log": p["log"], "work_dir": str(layout.work_dir(int(p["id"] or 0)))})
    n_alive = sum(alive.values())
    if (n_alive == len(alive) and view is not None and view.status == "ALIVE"
            and all(w["registered"] == "ALIVE" for w in workers)):
        status = "up"
    else:
        status = "degraded" if n_alive else "down"
    apps = None if view is None else {
        "active": [a.name for a in view.active_apps], "completed": len(view.completed_apps)}
    return {**base, "status": status, "master_url": spec.master_url,
            "webui_url": spec.webui_url, "started_at": state.get("started_at"),
            "startup_s": state.get("startup_s"), "master": master, "workers": workers,
            "apps": apps}


# --------------------------------------------------------------------------- stop


def _stop(p: SparkProcess) -> dict[str, Any]:
    """Stop one daemon if it is ours (its process group: a worker's executors go with it)."""
    pid = int(p.get("pid") or 0)
    report: dict[str, Any] = {"role": p["role"], "id": p.get("id"), "pid": pid,
                              "port": p.get("port")}
    if not procs.pid_alive(pid):
        return {**report, "action": "not-running"}
    if not _is_ours(p):
        return {**report, "action": "skipped (pid now belongs to another process)"}
    t0 = time.monotonic()
    action = procs.stop(pid, signal.SIGTERM, STOP_TIMEOUT_S, group=True)
    if action != "not-running":
        for port in (int(p["port"]), int(p["webui_port"])):
            procs.wait_port_released(port, PORT_RELEASE_TIMEOUT_S)
    return {**report, "action": action, "seconds": round(time.monotonic() - t0, 3)}


def _stop_all(state: SparkState, progress: Progress) -> list[dict[str, Any]]:
    """Workers first (highest number first), the master last."""
    records = list(state.get("processes", []))
    order = sorted(records, key=lambda p: -1 if p["role"] == "master" else int(p["id"] or 0),
                   reverse=True)
    out = []
    for p in order:
        r = _stop(p)
        if r["action"] != "not-running":
            progress(f"Spark {_name(p)} (pid {r['pid']}): {r['action']}")
        out.append(r)
    return out


def spark_down(lab_dir: Path | str | None = None, wipe: bool = False,
               progress: Progress | None = None) -> list[dict[str, Any]]:
    """Stop exactly the daemons ``up`` started in this lab dir (workers, then the master) and
    forget them.

    Each gets SIGTERM (to its process group), SIGKILL after :data:`STOP_TIMEOUT_S`; a stop
    waits until the daemon's ports are released. ``wipe`` also deletes the workers' work dirs
    (executor logs, shipped files); logs stay.

    Returns:
        One dict per daemon: role, id, pid, port, action (``not-running``, ``stopped``,
        ``killed``, ``killed (no exit after SIGTERM)``, ``skipped (pid now belongs to another
        process)``) and, when signalled, seconds.
    """
    progress = progress or noop
    layout = SparkLayout(_resolve_lab(lab_dir))
    if not layout.root.exists():
        progress("no Spark standalone cluster is up")
        return []
    with _locked(layout):
        state = _read_state(layout)
        stopped = _stop_all(state, progress) if state else []
        layout.state_path.unlink(missing_ok=True)
        if wipe and layout.work_root.exists():
            shutil.rmtree(layout.work_root)
            progress(f"wiped {layout.work_root}")
        if state is None:
            progress("no Spark standalone cluster is up")
    return stopped
