"""The embedded lab cluster: ``kafkalab cluster up / status / down`` and ``kill_broker``.

What is started is the flavor's business (:mod:`kafkalab.cluster.flavors`: the embedded
ones, every process bound to 127.0.0.1); this module is the life cycle they share.

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
| :mod:`~kafkalab.cluster.flavors` | what each flavor starts, and how it tells it is ready |
| :mod:`~kafkalab.cluster.readiness` | when a started cluster is ready |
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal as _signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab import procs
from kafkalab.cluster.descriptor import ClusterDescriptor, save_descriptor
from kafkalab.cluster.flavors import (
    DEFAULT_EMBEDDED,
    FLAVORS,
    EmbeddedFlavor,
    embedded_flavor,
)
from kafkalab.cluster.partitions import PartitionReader
from kafkalab.cluster.processes import (
    PORT_RELEASE_TIMEOUT_S,
    STOP_TIMEOUT_S,
    describe,
    is_ours,
    own_port,
    respawn,
    stop_all,
)
from kafkalab.cluster.readiness import wait_ready
from kafkalab.cluster.state import (
    SECURE_DESCRIPTOR_NAME,
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
    "HOST",
    "EmbeddedCluster",
    "cluster_down",
    "cluster_status",
    "cluster_up",
    "is_embedded_descriptor",
    "kill_broker",
    "running_cluster",
]


# --------------------------------------------------------------------------- helpers


def is_embedded_descriptor(data: dict[str, Any]) -> bool:
    """Whether a descriptor file's content describes a cluster the lab started (``name:
    embedded`` and an embedded flavor): only those are deleted with the cluster's state."""
    if data.get("name") == SECURE_DESCRIPTOR_NAME and data.get("flavor") == "external":
        return True  # its SASL_SSL listener's (cluster up --sasl-ssl)
    flavor = FLAVORS.get(str(data.get("flavor")))
    return data.get("name") == "embedded" and flavor is not None and flavor.embedded


def _describe_cluster(flavor: str, n: int) -> str:
    return f"a {flavor} cluster with {n} broker{'s' if n != 1 else ''}"


def _restart_dead(lab: Path, flavor: EmbeddedFlavor, state: ClusterState,
                  progress: Progress) -> list[dict[str, Any]]:
    """Start again the processes of ``state`` that are not running, in the flavor's order
    (its coordination service first), each when the flavor says it may."""
    restarted = []
    for p in flavor.restart_order(state["processes"]):
        if is_ours(p):
            continue
        procs.check_ports_free([own_port(p)])
        flavor.before_restart(state, p, progress)
        progress(f"restarting {describe(p)} on {HOST}:{p['port']}")
        respawn(lab, state, p)
        restarted.append({"role": p["role"], "id": p.get("id"), "pid": p["pid"]})
        flavor.after_restart(p)
    return restarted


def _heal(
    lab: Path, state: ClusterState, timeout_s: float, progress: Progress
) -> ClusterDescriptor:
    """The cluster of ``state`` runs (at least partly): restart what died, wait until ready."""
    flavor, brokers = embedded_flavor(str(state["flavor"])), int(state["brokers"])
    descriptor = flavor.descriptor(state)
    restarted = _restart_dead(lab, flavor, state, progress)
    wait_ready(flavor, state, descriptor, time.monotonic() + timeout_s, progress)
    dpath = Path(state.get("descriptor_path") or descriptor_path(lab))
    if not dpath.is_file():
        save_descriptor(descriptor, dpath)
    if restarted:
        progress(
            f"{_describe_cluster(flavor.name, brokers)} was degraded: restarted "
            + ", ".join(
                f"{r['role']} {r['id'] if r['id'] is not None else ''}".strip() for r in restarted
            )
        )
    else:
        progress(
            f"{_describe_cluster(flavor.name, brokers)} is already up "
            f"({descriptor.bootstrap_servers}); nothing to do"
        )
    return descriptor


def _start_fresh(
    lab: Path,
    flavor: EmbeddedFlavor,
    brokers: int,
    base_port: int | None,
    control_port: int | None,
    timeout_s: float,
    progress: Progress,
    sasl_ssl_port: int | None = None,
    broker_settings: Mapping[str, str] | None = None,
    links: bool = False,
) -> ClusterDescriptor:
    """Start a new cluster; on any failure stop what was started and forget it. What the
    flavor runs is installed first: a first download's time does not count against
    ``timeout_s``, which is how long the processes may take to become ready."""
    flavor.install(lab, progress)
    t0 = time.monotonic()
    state: ClusterState = {
        "version": 1,
        "flavor": flavor.name,
        "brokers": brokers,
        "lab_dir": str(lab),
        "started_at": now_iso(),
        "descriptor_path": str(descriptor_path(lab)),
        "processes": [],
    }
    try:
        descriptor = flavor.start(
            lab, brokers, base_port or flavor.default_base_port,
            control_port or flavor.default_control_port, state, progress, sasl_ssl_port,
            broker_settings, links)
        wait_ready(flavor, state, descriptor, t0 + timeout_s, progress)
        flavor.after_ready(lab, state, progress)
    except BaseException:
        if state["processes"]:
            stop_all(state, noop, flavor.stop_together)
            remove_state(lab, state, is_embedded_descriptor)
        raise
    state["startup_s"] = round(time.monotonic() - t0, 3)
    state["ready_at"] = now_iso()
    write_state(lab, state)
    save_descriptor(descriptor, descriptor_path(lab))
    progress(
        f"{_describe_cluster(flavor.name, brokers)} is up in {state['startup_s']:.1f} s "
        f"({descriptor.bootstrap_servers}); descriptor: {descriptor_path(lab)}"
    )
    return descriptor


# --------------------------------------------------------------------------- public API


def cluster_up(
    flavor: str = DEFAULT_EMBEDDED.name,
    brokers: int = 1,
    lab_dir: Path | str | None = None,
    base_port: int | None = None,
    control_port: int | None = None,
    timeout_s: float = 60.0,
    progress: Progress | None = None,
    sasl_ssl_port: int | None = None,
    broker_settings: Mapping[str, str] | None = None,
    links: bool = False,
) -> ClusterDescriptor:
    """Start the embedded cluster of ``flavor`` (:func:`kafkalab.cluster.flavors.
    embedded_flavor_names`; default :data:`kafkalab.cluster.flavors.DEFAULT_EMBEDDED`), or
    return it when the same one is already up.

    ``base_port``: first broker port (brokers use base_port..base_port+N-1; default the
    flavor's :attr:`~kafkalab.cluster.flavors.base.EmbeddedFlavor.default_base_port`).
    ``control_port``: the port of its coordination service where it has one (ZooKeeper;
    default the flavor's). ``lab_dir``: default :func:`kafkalab.paths.lab_dir`.
    ``sasl_ssl_port``: also a SASL_SSL listener (SCRAM-SHA-512 over TLS) on broker i at
    ``sasl_ssl_port + i``, its descriptor in ``<lab_dir>/cluster-sasl-ssl.yaml``
    (:mod:`kafkalab.cluster.flavors.kraft.security`; the password from
    ``$KAFKALAB_SASL_PASSWORD``).
    ``broker_settings``: broker properties over Kafka's defaults and the lab's overrides
    (``cluster up --broker-setting``; a flavor refuses what it cannot take:
    :meth:`~kafkalab.cluster.flavors.base.EmbeddedFlavor.broker_setting_problem`). They are in
    the nodes' configuration files, so a node started again has them; the state records them
    for ``status`` and to refuse other settings while the cluster runs.
    ``links``: every client, replication and controller link through a proxy the lab can
    slow down and cut (``cluster up --links``; :mod:`kafkalab.cluster.links`).
    A different cluster already up → ClusterError. Dead processes of the same cluster
    (e.g. after :func:`kill_broker`) are started again. Stale state (all pids gone or
    reused by other programs) is removed and the cluster starts fresh.
    """
    progress = progress or noop
    kind = embedded_flavor(flavor)
    kind.check_request(brokers, base_port, control_port, sasl_ssl_port, broker_settings, links)
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
            secured = bool(state.get("sasl_ssl_ports"))
            if alive and sasl_ssl_port is not None and not secured:
                raise ClusterError(
                    f"{_describe_cluster(flavor, brokers)} is already up without a SASL_SSL "
                    "listener; run `kafkalab cluster down` first")
            if alive and links and not state.get("links"):
                raise ClusterError(
                    f"{_describe_cluster(flavor, brokers)} is already up without degradable "
                    "links; run `kafkalab cluster down` first")
            if alive and broker_settings is not None and \
                    state.get("broker_settings", {}) != dict(broker_settings):
                raise ClusterError(
                    f"{_describe_cluster(flavor, brokers)} is already up with other broker "
                    "settings; run `kafkalab cluster down` first")
            if alive:
                if base_port is not None and int(state["broker_ports"][0]) != base_port:
                    raise ClusterError(
                        f"{_describe_cluster(flavor, brokers)} is already up on port "
                        f"{state['broker_ports'][0]}, not {base_port}; run `kafkalab cluster down` first"
                    )
                return _heal(lab, state, timeout_s, progress)
            # stale: nothing of ours runs any more
            progress("removing stale cluster state (its processes are gone)")
            remove_state(lab, state, is_embedded_descriptor)
        return _start_fresh(lab, kind, brokers, base_port, control_port, timeout_s, progress,
                            sasl_ssl_port, broker_settings, links)


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
    flavor = FLAVORS.get(str(state.get("flavor")))
    details = (flavor.status_details(state)
               if isinstance(flavor, EmbeddedFlavor) and n_alive else {})
    return {
        "state": overall,
        "status": overall,  # alias of "state"
        "flavor": state.get("flavor"),
        **details,
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
        flavor = FLAVORS.get(str(state.get("flavor"))) if state else None
        together = isinstance(flavor, EmbeddedFlavor) and flavor.stop_together
        stopped = stop_all(state, progress, together) if state else []
        remove_state(lab, state, is_embedded_descriptor)
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
            if not procs.wait_port_released(own_port(p), PORT_RELEASE_TIMEOUT_S):
                raise ClusterError(
                    f"port {own_port(p)} on {HOST} is still in use {PORT_RELEASE_TIMEOUT_S:.0f} s after "
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


@dataclass(frozen=True)
class EmbeddedCluster:
    """A running embedded cluster, read once from its state file: what the experiments
    that break brokers need of it, each answered by its flavor."""

    lab: Path
    """Its lab directory (``<lab>/cluster/state.json``)."""
    flavor: EmbeddedFlavor
    state: ClusterState
    descriptor: ClusterDescriptor

    @property
    def broker_ids(self) -> list[int]:
        """The ids of its brokers (running or not)."""
        return sorted(int(p["id"]) for p in self.state.get("processes", [])
                      if p["role"] == "broker" and p["id"] is not None)

    def partition_reader(self) -> PartitionReader:
        """A new session reading leadership and the ISR (one per thread)."""
        return self.flavor.partition_reader(self.state)

    def broker_data_dir(self, broker_id: int) -> Path:
        """The folder of broker ``broker_id``'s partition replicas (``<topic>-<p>``)."""
        return self.flavor.broker_data_dir(self.lab, broker_id)

    def controller_leader(self) -> tuple[int, int] | None:
        """``(node, epoch)`` leading its controller quorum now; None without one."""
        return self.flavor.controller_leader(self.state)

    def kafka_home(self) -> Path | None:
        """The Kafka distribution it runs (for Kafka's tools), if any."""
        return self.flavor.kafka_home(self.state)

    def kill_broker(self, broker_id: int, signal: int) -> dict[str, Any]:
        """:func:`kill_broker` on this cluster."""
        return kill_broker(self.lab, broker_id, signal)

    def heal(self, progress: Progress = noop) -> ClusterDescriptor:
        """Start again whatever of it died and wait until it is ready (:func:`cluster_up`
        with its own flavor and size)."""
        return cluster_up(self.flavor.name, int(self.state["brokers"]), self.lab,
                          progress=progress)


def running_cluster(lab_dir: Path | str | None) -> EmbeddedCluster | None:
    """The embedded cluster recorded in ``lab_dir`` (default :func:`kafkalab.paths.lab_dir`)
    while at least one of its processes runs; None otherwise (nothing recorded, or stale)."""
    lab = resolve_lab(lab_dir)
    state = read_state(lab)
    if state is None or not any(is_ours(p) for p in state.get("processes", [])):
        return None
    flavor = embedded_flavor(str(state.get("flavor")))
    return EmbeddedCluster(lab, flavor, state, flavor.descriptor(state))
