"""The embedded lab cluster: ``kafkalab cluster up / status / down`` and ``kill_broker``.

Two flavors, both bound to 127.0.0.1 only:

- ``kafka09``: real Apache Kafka 0.9.0.1 (JVM), one ZooKeeper + 1..N brokers
  (:mod:`kafkalab.cluster.kafka09`).
- ``noida``: the noida-db emulator (modern protocol, single node, *not* Kafka)
  (:mod:`kafkalab.cluster.noida`).

Processes run in their own session with output in log files, so they outlive the CLI.
``<lab_dir>/cluster/state.json`` (:mod:`kafkalab.cluster.state`) records exactly what was
started (pids, ports, command lines, a per-process *marker* that must appear in the
process's command line); ``down`` and ``kill_broker`` only ever signal a pid that still
carries its marker (:mod:`kafkalab.cluster.processes`). The descriptor goes to
``<lab_dir>/cluster.yaml``.

This module is the public API; the pieces are:

| module | role |
|---|---|
| :mod:`~kafkalab.cluster.state` | state file, lock, lab layout |
| :mod:`~kafkalab.cluster.processes` | start, own, stop the cluster's processes |
| :mod:`~kafkalab.cluster.kafka09`, :mod:`~kafkalab.cluster.noida` | the two launchers |
| :mod:`~kafkalab.cluster.zookeeper` | four-letter words, broker-id registration |
| :mod:`~kafkalab.cluster.readiness` | when a started cluster is ready |
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal as _signal
import time
from pathlib import Path
from typing import Any

from kafkalab import procs
from kafkalab.cluster import zookeeper
from kafkalab.cluster.descriptor import ClusterDescriptor, save_descriptor
from kafkalab.cluster.kafka09 import (
    DEFAULT_BROKER_PORT,
    DEFAULT_ZK_PORT,
    MAX_BROKERS,
    kafka09_descriptor,
    start_kafka09,
)
from kafkalab.cluster.noida import DEFAULT_NOIDA_PORT, noida_descriptor, start_noida
from kafkalab.cluster.processes import (
    PORT_RELEASE_TIMEOUT_S,
    STOP_TIMEOUT_S,
    describe,
    is_ours,
    respawn,
    stop_all,
)
from kafkalab.cluster.readiness import wait_ready
from kafkalab.cluster.state import (
    EMBEDDED_FLAVORS,
    ClusterState,
    ProcessRecord,
    cluster_dir,
    descriptor_path,
    locked,
    now_iso,
    read_state,
    remove_state,
    resolve_lab,
    state_path,
    write_state,
)
from kafkalab.errors import ClusterError, ConfigError
from kafkalab.procs import HOST
from kafkalab.progress import Progress, noop

__all__ = [
    "DEFAULT_BROKER_PORT",
    "DEFAULT_NOIDA_PORT",
    "DEFAULT_ZK_PORT",
    "HOST",
    "cluster_down",
    "cluster_status",
    "cluster_up",
    "kill_broker",
]


# --------------------------------------------------------------------------- helpers


def _check_request(flavor: str, brokers: int, base_port: int | None, zk_port: int | None) -> None:
    """Refuse a flavor, broker count or port ``cluster_up`` cannot honour."""
    if flavor not in EMBEDDED_FLAVORS:
        raise ConfigError(f"unknown cluster flavor {flavor!r}: use kafka09 or noida")
    if not isinstance(brokers, int) or brokers < 1:
        raise ConfigError(f"--brokers must be a positive integer, got {brokers!r}")
    if flavor == "noida" and brokers != 1:
        raise ConfigError("noida is single-node: use --brokers 1 (replication needs kafka09)")
    if flavor == "kafka09" and brokers > MAX_BROKERS:
        raise ConfigError(f"--brokers: at most {MAX_BROKERS} brokers on one machine")
    for name, port in (("--base-port", base_port), ("--zk-port", zk_port)):
        if port is not None and not (1024 <= int(port) <= 65535 - brokers):
            raise ConfigError(f"{name} {port} is outside 1024..{65535 - brokers}")


def _describe_cluster(flavor: str, n: int) -> str:
    return f"a {flavor} cluster with {n} broker{'s' if n != 1 else ''}"


def _descriptor_from_state(state: ClusterState) -> ClusterDescriptor:
    if state["flavor"] == "kafka09":
        return kafka09_descriptor(
            int(state["brokers"]),
            int(state["zookeeper_port"]),
            [int(p) for p in state["broker_ports"]],
            Path(state["kafka_home"]),
        )
    return noida_descriptor(int(state["broker_ports"][0]))


def _restart_dead(lab: Path, state: ClusterState, progress: Progress) -> list[dict[str, Any]]:
    """Start again the processes of ``state`` that are not running (ZooKeeper first)."""
    restarted = []
    records = state["processes"]
    zk = next((z for z in records if z["role"] == "zookeeper"), None)
    for p in sorted(records, key=lambda p: 0 if p["role"] == "zookeeper" else 1):
        if is_ours(p):
            continue
        procs.check_ports_free([int(p["port"])])
        if zk is not None and p["role"] == "broker" and p["id"] is not None:
            zookeeper.wait_broker_ids_free(int(zk["port"]), {int(p["id"])}, progress)
        progress(f"restarting {describe(p)} on {HOST}:{p['port']}")
        respawn(lab, state, p)
        restarted.append({"role": p["role"], "id": p.get("id"), "pid": p["pid"]})
        if p["role"] == "zookeeper":
            zookeeper.wait_serving(p)
    return restarted


def _heal(
    lab: Path, state: ClusterState, timeout_s: float, progress: Progress
) -> ClusterDescriptor:
    """The cluster of ``state`` runs (at least partly): restart what died, wait until ready."""
    flavor, brokers = state["flavor"], int(state["brokers"])
    descriptor = _descriptor_from_state(state)
    restarted = _restart_dead(lab, state, progress)
    wait_ready(state, descriptor, time.monotonic() + timeout_s, progress)
    dpath = Path(state.get("descriptor_path") or descriptor_path(lab))
    if not dpath.is_file():
        save_descriptor(descriptor, dpath)
    if restarted:
        progress(
            f"{_describe_cluster(flavor, brokers)} was degraded: restarted "
            + ", ".join(
                f"{r['role']} {r['id'] if r['id'] is not None else ''}".strip() for r in restarted
            )
        )
    else:
        progress(
            f"{_describe_cluster(flavor, brokers)} is already up "
            f"({descriptor.bootstrap_servers}); nothing to do"
        )
    return descriptor


def _start_fresh(
    lab: Path,
    flavor: str,
    brokers: int,
    base_port: int | None,
    zk_port: int | None,
    timeout_s: float,
    progress: Progress,
) -> ClusterDescriptor:
    """Start a new cluster; on any failure stop what was started and forget it."""
    t0 = time.monotonic()
    state: ClusterState = {
        "version": 1,
        "flavor": flavor,
        "brokers": brokers,
        "lab_dir": str(lab),
        "started_at": now_iso(),
        "descriptor_path": str(descriptor_path(lab)),
        "processes": [],
    }
    try:
        if flavor == "kafka09":
            descriptor = start_kafka09(
                lab,
                brokers,
                zk_port or DEFAULT_ZK_PORT,
                base_port or DEFAULT_BROKER_PORT,
                state,
                progress,
            )
        else:
            descriptor = start_noida(lab, base_port or DEFAULT_NOIDA_PORT, state, progress)
        wait_ready(state, descriptor, t0 + timeout_s, progress)
    except BaseException:
        if state["processes"]:
            stop_all(state, noop)
            remove_state(lab, state)
        raise
    state["startup_s"] = round(time.monotonic() - t0, 3)
    state["ready_at"] = now_iso()
    write_state(lab, state)
    save_descriptor(descriptor, descriptor_path(lab))
    progress(
        f"{_describe_cluster(flavor, brokers)} is up in {state['startup_s']:.1f} s "
        f"({descriptor.bootstrap_servers}); descriptor: {descriptor_path(lab)}"
    )
    return descriptor


# --------------------------------------------------------------------------- public API


def cluster_up(
    flavor: str = "kafka09",
    brokers: int = 1,
    lab_dir: Path | str | None = None,
    base_port: int | None = None,
    zk_port: int | None = None,
    timeout_s: float = 60.0,
    progress: Progress | None = None,
) -> ClusterDescriptor:
    """Start the embedded cluster (or return it when the same one is already up).

    ``base_port``: first broker port (kafka09: brokers use base_port..base_port+N-1,
    default 19092; noida: default 19192). ``zk_port``: ZooKeeper (default 12181).
    ``lab_dir``: default :func:`kafkalab.paths.lab_dir`.
    A different cluster already up → ClusterError. Dead processes of the same cluster
    (e.g. after :func:`kill_broker`) are started again. Stale state (all pids gone or
    reused by other programs) is removed and the cluster starts fresh.
    """
    progress = progress or noop
    _check_request(flavor, brokers, base_port, zk_port)
    lab = resolve_lab(lab_dir)

    with locked(lab):
        state = read_state(lab)
        if state is not None:
            alive = [p for p in state.get("processes", []) if is_ours(p)]
            same = state.get("flavor") == flavor and int(state.get("brokers", 0)) == brokers
            if alive and not same:
                raise ClusterError(
                    f"{_describe_cluster(state['flavor'], int(state['brokers']))} is already up; "
                    "run `kafkalab cluster down` first"
                )
            if alive:
                if base_port is not None and int(state["broker_ports"][0]) != base_port:
                    raise ClusterError(
                        f"{_describe_cluster(flavor, brokers)} is already up on port "
                        f"{state['broker_ports'][0]}, not {base_port}; run `kafkalab cluster down` first"
                    )
                return _heal(lab, state, timeout_s, progress)
            # stale: nothing of ours runs any more
            progress("removing stale cluster state (its processes are gone)")
            remove_state(lab, state)
        return _start_fresh(lab, flavor, brokers, base_port, zk_port, timeout_s, progress)


def cluster_status(lab_dir: Path | str | None = None) -> dict[str, Any]:
    """State of the embedded cluster: ``up`` / ``degraded`` / ``down``, per process."""
    lab = resolve_lab(lab_dir)
    state = read_state(lab)
    dpath = descriptor_path(lab)
    if state is None:
        return {
            "state": "down",
            "status": "down",
            "lab_dir": str(lab),
            "descriptor_path": str(dpath) if dpath.is_file() else None,
            "processes": [],
        }
    rows = []
    for p in state.get("processes", []):
        alive = is_ours(p)
        rows.append(
            {
                "role": p["role"],
                "id": p.get("id"),
                "pid": p.get("pid"),
                "alive": alive,
                "listening": alive and procs.port_open(int(p["port"]), 0.3),
                "port": p.get("port"),
                "address": f"{HOST}:{p.get('port')}",
                "log": p.get("log"),
                "logs_dir": p.get("logs_dir"),
            }
        )
    n_alive = sum(1 for p in rows if p["alive"])
    if rows and n_alive == len(rows):
        overall = "up"
    elif n_alive:
        overall = "degraded"
    else:
        overall = "down"  # stale state: `up` cleans it
    return {
        "state": overall,
        "status": overall,  # alias of "state"
        "flavor": state.get("flavor"),
        "brokers": state.get("brokers"),
        "started_at": state.get("started_at"),
        "startup_s": state.get("startup_s"),
        "lab_dir": str(lab),
        "state_path": str(state_path(lab)),
        "descriptor_path": state.get("descriptor_path") if dpath.is_file() else None,
        "stale": overall == "down",
        "processes": rows,
    }


def cluster_down(
    lab_dir: Path | str | None = None,
    wipe_data: bool = False,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Stop exactly the processes ``up`` started (brokers first, ZooKeeper last).

    Each is sent SIGTERM (brokers do a controlled shutdown), then SIGKILL after 15 s; each
    stop waits until the process's port is released. Removes the state file and the
    descriptor; ``wipe_data`` also deletes the data dirs.
    Returns one dict per process: role, id, pid, port, action, seconds.
    """
    progress = progress or noop
    lab = resolve_lab(lab_dir)
    with locked(lab):
        state = read_state(lab)
        stopped = stop_all(state, progress) if state else []
        remove_state(lab, state)
        if wipe_data:
            data = cluster_dir(lab) / "data"
            if data.exists():
                shutil.rmtree(data)
                progress(f"wiped {data}")
        if state is None:
            progress("no embedded cluster is up")
    return stopped


def _find_broker(state: ClusterState | None, broker_id: int) -> ProcessRecord:
    if state is None:
        raise ClusterError("no embedded cluster is up; run `kafkalab cluster up`")
    for p in state.get("processes", []):
        if p["role"] == "broker" and p["id"] is not None and int(p["id"]) == int(broker_id):
            return p
    ids = [p["id"] for p in state.get("processes", []) if p["role"] == "broker"]
    raise ConfigError(f"no broker {broker_id} in the embedded cluster (brokers: {ids})")


def kill_broker(lab_dir: Path | str | None, broker_id: int, signal: int = 9) -> dict[str, Any]:
    """Send ``signal`` (default SIGKILL) to broker ``broker_id`` of the embedded cluster.

    For availability experiments; the state keeps the broker, so ``status`` says
    ``degraded`` and :func:`cluster_up` starts it again. After SIGKILL or SIGTERM this
    returns only once the broker has exited and its port is released, so ``cluster_up``
    can restart it right away.

    Returns:
        broker_id, pid, port, signal, action (``signalled``), ts_ns (wall clock when the
        broker was gone); or broker_id, pid, action ``not-running``.

    Raises:
        ClusterError: no cluster is up; or the broker did not exit within 15 s, or its port
            stayed held 10 s after it exited.
        ConfigError: the cluster has no broker ``broker_id``.
    """
    lab = resolve_lab(lab_dir)
    with locked(lab):
        p = _find_broker(read_state(lab), broker_id)
        if not is_ours(p):
            return {"broker_id": broker_id, "pid": p.get("pid"), "action": "not-running"}
        pid, port = int(p["pid"]), int(p["port"])
        # ProcessLookupError: it died on its own a moment ago; gone is what was asked for
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal)
        if signal in (_signal.SIGKILL, _signal.SIGTERM):
            if not procs.wait_gone(pid, STOP_TIMEOUT_S):
                raise ClusterError(
                    f"broker {broker_id} (pid {pid}) still runs {STOP_TIMEOUT_S:.0f} s after "
                    f"signal {int(signal)}"
                )
            if not procs.wait_port_released(port, PORT_RELEASE_TIMEOUT_S):
                raise ClusterError(
                    f"port {port} on {HOST} is still in use {PORT_RELEASE_TIMEOUT_S:.0f} s after "
                    f"broker {broker_id} (pid {pid}) exited"
                )
        procs.reap(pid)
        return {
            "broker_id": broker_id,
            "pid": pid,
            "port": port,
            "signal": int(signal),
            "action": "signalled",
            "ts_ns": time.time_ns(),
        }
