"""The embedded cluster's processes: start one and record it, tell whether it is still ours,
stop it.

A process is *ours* while its pid runs and its command line still carries the record's
marker (:func:`kafkalab.procs.runs`): a pid recycled by another program is never signalled.
The generic process and port helpers live in :mod:`kafkalab.procs`.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kafkalab import procs
from kafkalab.cluster.state import ClusterState, ProcessRecord, write_state
from kafkalab.errors import ClusterError
from kafkalab.progress import Progress

__all__ = [
    "PORT_RELEASE_TIMEOUT_S",
    "STOP_TIMEOUT_S",
    "describe",
    "exited_error",
    "is_ours",
    "own_port",
    "respawn",
    "start_process",
    "stop_all",
    "stop_process",
]

STOP_TIMEOUT_S = 15.0
"""How long a process has to exit after SIGTERM before it is killed."""

PORT_RELEASE_TIMEOUT_S = 10.0
"""How long the port of a stopped process may stay held (a JVM's threads still closing
its sockets after its main thread exited) before a stop gives up waiting for it."""


def describe(proc: ProcessRecord) -> str:
    """``zookeeper``, ``proxy`` or ``broker N``: how messages name a process."""
    return proc["role"] if proc.get("id") is None else f"{proc['role']} {proc['id']}"


def is_ours(proc: ProcessRecord) -> bool:
    """True when ``proc``'s pid runs and its command line still carries ``proc``'s marker."""
    marker = proc.get("marker")
    return bool(marker) and procs.runs(int(proc.get("pid") or 0), marker)


def exited_error(proc: ProcessRecord) -> ClusterError:
    """The error for a process that died while starting: names it, its log and why, as the
    log says it (:func:`kafkalab.procs.failure_line`)."""
    why = procs.failure_line(proc["log"])
    return ClusterError(
        f"{describe(proc)} (pid {proc['pid']}) exited during start-up: "
        + (why or "no output") + f"; see {proc['log']}"
    )


def start_process(
    lab: Path,
    state: ClusterState,
    *,
    role: str,
    proc_id: int | None,
    port: int,
    marker: str,
    config: str | None,
    cmd: list[str],
    logs_dir: Path,
    env: Mapping[str, str] | None = None,
    bound_port: int | None = None,
) -> ProcessRecord:
    """Spawn ``cmd`` (output to ``<logs_dir>/stdout.log``; ``env`` over this process's
    environment, recorded for a restart), add it to ``state`` and write the state file before
    returning, so a crash right after leaves no unknown process. ``bound_port``: the port
    the process binds, when it is not ``port`` (:attr:`ProcessRecord.bound_port`)."""
    log = logs_dir / "stdout.log"
    pid = procs.spawn(cmd, log, logs_dir, _environment(env))
    proc: ProcessRecord = {
        "role": role,
        "id": proc_id,
        "port": port,
        "marker": marker,
        "config": config,
        "log": str(log),
        "logs_dir": str(logs_dir),
        "cmdline": cmd,
        "cwd": str(logs_dir),
        "pid": pid,
    }
    if env:
        proc["env"] = dict(env)
    if bound_port is not None and bound_port != port:
        proc["bound_port"] = bound_port
    state.setdefault("processes", []).append(proc)
    write_state(lab, state)
    return proc


def own_port(proc: ProcessRecord) -> int:
    """The port ``proc`` binds itself (:attr:`ProcessRecord.bound_port`, else its ``port``):
    the one its stop waits to see released and its restart needs free. A node behind a link
    proxy advertises the proxy's port, which the proxy keeps holding after the node is gone
    (waiting on it made every stop of a linked cluster's node wait out
    :data:`PORT_RELEASE_TIMEOUT_S`, polling ``/proc/net/tcp``)."""
    return int(proc.get("bound_port") or proc["port"])


def _environment(extra: Mapping[str, str] | None) -> dict[str, str] | None:
    return None if not extra else {**os.environ, **extra}


def respawn(lab: Path, state: ClusterState, proc: ProcessRecord) -> int:
    """Start ``proc`` again with its recorded command line; records and returns the new pid."""
    proc["pid"] = procs.spawn(list(proc["cmdline"]), Path(proc["log"]), Path(proc["cwd"]),
                              _environment(proc.get("env")))
    write_state(lab, state)
    return proc["pid"]


def stop_process(
    proc: ProcessRecord, sig: int = signal.SIGTERM, timeout_s: float = STOP_TIMEOUT_S
) -> dict[str, Any]:
    """Stop ``proc`` if it is ours (``sig``, then SIGKILL after ``timeout_s``) and wait until
    its port is released.

    Returns:
        role, id, pid, port, action (``not-running``, ``skipped (pid now belongs to another
        process)``, ``stopped``, ``killed``, ``killed (no exit after SIGTERM)``) and, when
        it was signalled, seconds.
    """
    pid = int(proc.get("pid") or 0)
    report: dict[str, Any] = {
        "role": proc["role"],
        "id": proc.get("id"),
        "pid": pid,
        "port": proc.get("port"),
    }
    if not procs.pid_alive(pid):
        return {**report, "action": "not-running"}
    if not is_ours(proc):
        if not procs.pid_alive(pid):  # it exited while its command line was read
            return {**report, "action": "not-running"}
        return {**report, "action": "skipped (pid now belongs to another process)"}
    t0 = time.monotonic()
    action = procs.stop(pid, sig, timeout_s)
    if action == "not-running":  # exited on its own between the checks
        return {**report, "action": action}
    # a JVM's pid looks gone once its main thread exits, while its other threads may
    # still hold the listening socket for a moment: a restart on that port would fail
    procs.wait_port_released(own_port(proc), PORT_RELEASE_TIMEOUT_S)
    return {**report, "action": action, "seconds": round(time.monotonic() - t0, 3)}


def stop_all(state: ClusterState, progress: Progress, together: bool = False) -> list[dict[str, Any]]:
    """Stop every process of ``state``: brokers first (highest id first), then the services
    they need (ZooKeeper, the link proxies).

    Brokers get SIGTERM and do a controlled shutdown. ``together``: every broker is
    signalled at once (KRaft nodes: a broker's controlled shutdown needs the controller
    quorum, which nodes stopped one by one would lose before the last). Even so, a node
    whose approval comes last (seen for the active controller's own node on a busy machine)
    can be left without a quorum once the others have exited; it is killed after
    :data:`STOP_TIMEOUT_S` and reported ``killed (no exit after SIGTERM)``. Returns one
    report per process (:func:`stop_process`), in that order.
    """
    records = list(state.get("processes", []))
    brokers = sorted(
        (p for p in records if p["role"] == "broker"), key=lambda p: -int(p.get("id") or 0)
    )
    services = [p for p in records if p["role"] != "broker"]
    if together and len(brokers) > 1:
        with ThreadPoolExecutor(max_workers=len(brokers)) as pool:
            first = list(pool.map(lambda p: stop_process(p, signal.SIGTERM, STOP_TIMEOUT_S),
                                  brokers))
        rest = [stop_process(p, signal.SIGTERM, STOP_TIMEOUT_S) for p in services]
        reports = [*first, *rest]
    else:
        reports = [stop_process(p, signal.SIGTERM, STOP_TIMEOUT_S) for p in [*brokers, *services]]
    for p, r in zip([*brokers, *services], reports, strict=True):
        if r["action"] != "not-running":
            progress(f"{describe(p)} (pid {r['pid']}): {r['action']}")
    return reports
