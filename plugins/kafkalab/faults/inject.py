"""The fault cluster and the faults: who is the leader, break it, heal it.

**The fault cluster** is an embedded cluster of three brokers of its own, of the flavor
:data:`kafkalab.cluster.flavors.FAULT_CLUSTER`, in ``<lab_dir>/faults`` or
``$KAFKALAB_FAULTS_HOME`` (ports ``$KAFKALAB_FAULTS_BASE_PORT``, default 19392: brokers
19392-19394, and ``$KAFKALAB_FAULTS_CONTROL_PORT``, default 12381: its coordination service,
ZooKeeper for Kafka 0.9). Faults signal broker processes, so they never run on the user's main
cluster, nor on a cluster the lab did not start. ``--cluster-lab`` points at another
embedded cluster; one that cannot host faults or has fewer than three brokers is refused
before anything is touched.

Leadership and the ISR are read where the cluster's flavor says
(:meth:`kafkalab.cluster.embedded.EmbeddedCluster.partition_reader`).

**A fault** (:class:`Injector`) runs in its own thread on the trial's schedule: at
``t0 + fault_at_s`` it signals the target, ``down_s`` later it heals (SIGCONT, or a restart
through :meth:`kafkalab.cluster.embedded.EmbeddedCluster.heal`, which waits until the
flavor lets a killed broker start again). Every action is stamped on CLOCK_MONOTONIC.
Whatever happens, :meth:`Injector.heal_all` leaves no broker stopped or dead.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kafkalab.cluster.embedded import EmbeddedCluster, cluster_up, running_cluster
from kafkalab.cluster.flavors import FAULT_CLUSTER
from kafkalab.cluster.partitions import PartitionReader
from kafkalab.cluster.state import resolve_lab
from kafkalab.errors import ClusterError, ConfigError
from kafkalab.faults.spec import LOSSY_RESTART_AFTER_S, NEEDS_FOLLOWER, FaultTrialSpec
from kafkalab.progress import Progress, noop
from kafkalab.scenarios.base import now_ns

__all__ = ["FAULT_BROKERS", "Injector", "Target", "ensure_fault_cluster", "fault_cluster_lab",
           "fault_cluster_ports", "pick_target", "wait_isr_full"]

FAULT_BROKERS = 3
DEFAULT_FAULTS_CONTROL_PORT = 12381
DEFAULT_FAULTS_BASE_PORT = 19392


def fault_cluster_lab(cluster_lab: Path | str | None = None) -> Path:
    """``cluster_lab``, else ``$KAFKALAB_FAULTS_HOME``, else ``<lab_dir>/faults``."""
    if cluster_lab is not None:
        return resolve_lab(cluster_lab)
    if os.environ.get("KAFKALAB_FAULTS_HOME", "").strip():
        return resolve_lab(os.environ["KAFKALAB_FAULTS_HOME"])
    from kafkalab.paths import lab_dir

    return lab_dir() / "faults"


def fault_cluster_ports() -> tuple[int, int]:
    """``(control_port, base_port)`` of the fault cluster: ``$KAFKALAB_FAULTS_CONTROL_PORT``
    and ``$KAFKALAB_FAULTS_BASE_PORT``, else 12381 and 19392."""
    def port(name: str, default: int) -> int:
        raw = os.environ.get(name, "").strip()
        if not raw:
            return default
        if not raw.isdigit() or not 1024 <= int(raw) <= 65000:
            raise ConfigError(f"{name}={raw!r} is not a port in 1024..65000")
        return int(raw)

    return port("KAFKALAB_FAULTS_CONTROL_PORT", DEFAULT_FAULTS_CONTROL_PORT), port(
        "KAFKALAB_FAULTS_BASE_PORT", DEFAULT_FAULTS_BASE_PORT)


def _check_brokers(running: EmbeddedCluster | None) -> None:
    if running is None:
        return
    n = int(running.state.get("brokers") or 0)
    if not running.flavor.hosts_faults or n < FAULT_BROKERS:
        raise ConfigError(
            f"the embedded cluster in {running.lab} is {running.flavor.name} with {n} "
            f"broker(s): broker faults need a {FAULT_CLUSTER.name} cluster of {FAULT_BROKERS} "
            "(leave --cluster-lab out to use the lab's own fault cluster); nothing was changed")


def ensure_fault_cluster(cluster_lab: Path | str | None = None,
                         progress: Progress = noop) -> EmbeddedCluster:
    """Start (or reuse, healing dead brokers) the 3-broker fault cluster; the running
    cluster (its state read once).

    Raises:
        ConfigError: ``cluster_lab`` holds a running cluster that cannot host faults or is
            too small.
        ClusterError: it cannot be started.
    """
    lab = fault_cluster_lab(cluster_lab)
    running = running_cluster(lab)
    _check_brokers(running)
    if running is not None:
        running.heal(progress)
    else:
        control, base = fault_cluster_ports()
        cluster_up(FAULT_CLUSTER.name, FAULT_BROKERS, lab, base_port=base,
                   control_port=control, progress=progress)
    found = running_cluster(lab)
    if found is None:
        raise ClusterError(f"the fault cluster in {lab} stopped right after it started")
    return found


@dataclass(frozen=True)
class Target:
    """Who a fault hits: ``role`` leader/follower/none; ``followers`` the partition's other
    in-sync replicas when the fault was chosen."""

    broker: int | None
    role: str
    partition: int
    leader: int
    isr: tuple[int, ...]

    @property
    def followers(self) -> tuple[int, ...]:
        return tuple(b for b in self.isr if b != self.leader)


def wait_isr_full(reader: PartitionReader, topic: str, partitions: int, rf: int,
                  timeout_s: float, poll_s: float = 0.1) -> int | None:
    """Wait until every partition has a leader and ``rf`` in-sync replicas; the monotonic
    time (ns) it was seen, None after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            states = [reader.partition_state(topic, p) for p in range(partitions)]
        except OSError:
            states = [None]
        if all(s is not None and s.leader >= 0 and len(s.isr) >= rf for s in states):
            return now_ns()
        time.sleep(poll_s)
    return None


def pick_target(reader: PartitionReader, spec: FaultTrialSpec, topic: str, rf: int,
                cluster: EmbeddedCluster | None = None) -> Target:
    """The broker the fault hits (partition 0's leader, its first in-sync follower, or — a
    controller fault — the node leading ``cluster``'s controller quorum).

    Raises:
        ConfigError: the fault needs a follower and the topic has none (rf 1).
        ClusterError: partition 0 has no state or no leader.
    """
    st = reader.partition_state(topic, 0)
    if st is None or st.leader < 0:
        raise ClusterError(f"topic {topic} partition 0 has no leader")
    leader, isr = st.leader, st.isr
    if spec.fault in NEEDS_FOLLOWER and rf < 2:
        raise ConfigError(f"fault {spec.fault} needs a follower, but profile {spec.profile} "
                          f"has replication factor {rf}")
    if spec.fault == "none":
        return Target(None, "none", 0, leader, isr)
    if spec.is_controller_fault:
        found = cluster.controller_leader() if cluster is not None else None
        if found is None:
            raise ClusterError("the fault cluster's controller quorum has no leader to break")
        return Target(found[0], "controller", 0, leader, isr)
    if spec.fault == "kill-follower":
        followers = [b for b in isr if b != leader]
        if not followers:
            raise ClusterError(f"topic {topic} partition 0 has no in-sync follower (isr {isr})")
        return Target(followers[0], "follower", 0, leader, isr)
    return Target(leader, "leader", 0, leader, isr)


@dataclass(kw_only=True)
class Scheduled:
    """A fault's schedule on a thread of its own, armed by the load engine's ``on_start`` hook
    with the schedule's t0: the event times and actions it records, its error, and the
    waiting (``_wait_until`` returns False once aborted). Subclasses define ``_run(t0_ns)``."""

    events: dict[str, int | None] = field(default_factory=dict)
    actions: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    thread_name: ClassVar[str] = "fault-injector"

    def _run(self, t0_ns: int) -> None:
        raise NotImplementedError

    def arm(self, t0_ns: int) -> None:
        """Start the fault's thread for a schedule starting at ``t0_ns``."""
        self.events["t0_ns"] = t0_ns
        self._thread = threading.Thread(target=self._run, args=(t0_ns,), name=self.thread_name,
                                        daemon=True)
        self._thread.start()

    def join(self, timeout_s: float = 120.0) -> None:
        if self._thread is not None:
            self._thread.join(timeout_s)

    def abort(self) -> None:
        """Stop waiting for the next action (the trial ended early)."""
        self._stop.set()

    def _wait_until(self, ts_ns: int) -> bool:
        while not self._stop.is_set():
            left = ts_ns - now_ns()
            if left <= 0:
                return True
            self._stop.wait(min(left / 1e9, 0.05))
        return False


@dataclass
class Injector(Scheduled):
    """Runs one trial's fault on its schedule (a thread started by :meth:`arm`)."""

    spec: FaultTrialSpec
    target: Target
    cluster: EmbeddedCluster
    progress: Progress = noop
    _stopped: set[int] = field(default_factory=set)
    _killed: set[int] = field(default_factory=set)

    # ------------------------------------------------------------------ the schedule
    def _signal(self, broker: int, sig: int) -> int:
        ts = now_ns()
        r = self.cluster.kill_broker(broker, sig)
        self.actions.append({"ts_ns": ts, "done_ts_ns": now_ns(), "broker": broker,
                             "signal": signal.Signals(sig).name, "result": r.get("action")})
        self.progress(f"  fault: {signal.Signals(sig).name} broker {broker} ({r.get('action')})")
        if sig == signal.SIGSTOP:
            self._stopped.add(broker)
        elif sig == signal.SIGCONT:
            self._stopped.discard(broker)
        elif sig in (signal.SIGKILL, signal.SIGTERM):
            self._killed.add(broker)
        return ts

    def _restart(self) -> int:
        ts = now_ns()
        self.progress("  heal: restarting the stopped broker(s)")
        self.cluster.heal(noop)
        self.actions.append({"ts_ns": ts, "broker": sorted(self._killed), "signal": None,
                             "result": "restarted"})
        self._killed.clear()
        return ts

    def _run(self, t0_ns: int) -> None:
        spec, tgt = self.spec, self.target
        fault_ts = t0_ns + int(spec.fault_at_s * 1e9)
        heal_at = fault_ts + int(spec.effective_down_s * 1e9)
        self.events["fault_ts_ns"] = None
        self.events["heal_ts_ns"] = None
        try:
            if spec.fault == "none" or tgt.broker is None:
                self.events["fault_ts_ns"] = fault_ts  # the nominal instant, for the control
                return
            if not self._wait_until(fault_ts):
                return
            b = tgt.broker
            if spec.fault == "lossy-leader-crash":
                for f in tgt.followers:
                    self.events.setdefault("fault_ts_ns", None)
                    ts = self._signal(f, signal.SIGSTOP)
                    if self.events["fault_ts_ns"] is None:
                        self.events["fault_ts_ns"] = ts
                if not self._wait_until(heal_at):
                    return
                self.events["leader_killed_ts_ns"] = self._signal(b, signal.SIGKILL)
                # kill_broker returns once the process is gone: no ack can leave it after this
                self.events["leader_gone_ts_ns"] = int(self.actions[-1]["done_ts_ns"])
                for f in tgt.followers:
                    self._signal(f, signal.SIGCONT)
                if not self._wait_until(heal_at + int(LOSSY_RESTART_AFTER_S * 1e9)):
                    return
                self.events["heal_ts_ns"] = self._restart()
                return
            sig = {"sigkill-leader": signal.SIGKILL, "kill-follower": signal.SIGKILL,
                   "sigterm-leader": signal.SIGTERM, "sigstop-leader": signal.SIGSTOP,
                   "sigkill-controller": signal.SIGKILL, "sigterm-controller": signal.SIGTERM,
                   "sigstop-controller": signal.SIGSTOP}[spec.fault]
            epoch = self.cluster.controller_leader() if spec.is_controller_fault else None
            self.events["fault_ts_ns"] = self._signal(b, sig)
            if epoch is not None:
                self._watch_quorum(b, epoch[1], heal_at)
            if not self._wait_until(heal_at):
                return
            if sig == signal.SIGSTOP:
                self.events["heal_ts_ns"] = self._signal(b, signal.SIGCONT)
            else:
                self.events["heal_ts_ns"] = self._restart()
            if epoch is not None and self.events.get("controller_elected_ts_ns") is None:
                # no election before the heal: keep watching to the schedule's end
                self._watch_quorum(b, epoch[1], t0_ns + int(spec.duration_s * 1e9))
        except Exception as exc:  # reported by the trial; heal_all still runs
            self.error = f"{type(exc).__name__}: {exc}"
            self.progress(f"  fault injection failed: {self.error}")

    def _watch_quorum(self, old_leader: int, old_epoch: int, until_ns: int) -> None:
        """Poll the controller quorum every 10 ms until a node leads it in an epoch newer
        than ``old_epoch`` (``controller_elected_ts_ns``; another node, or — once healed —
        ``old_leader`` elected again), or ``until_ns``."""
        self.events["controller_elected_ts_ns"] = None
        while now_ns() < until_ns and not self._stop.is_set():
            found = self.cluster.controller_leader()
            if found is not None and found[1] > old_epoch:
                self.events["controller_elected_ts_ns"] = now_ns()
                self.events["controller_elected_node"] = found[0]
                self.progress(f"  quorum: node {found[0]} leads the controllers (epoch {found[1]})")
                return
            self._stop.wait(0.01)

    # ------------------------------------------------------------------ always
    def heal_all(self) -> None:
        """Continue every broker this trial stopped and restart every one it killed (also
        after an error or Ctrl-C): the next trial starts from a whole cluster."""
        self.abort()
        self.join(60.0)
        for b in sorted(self._stopped):
            with contextlib.suppress(Exception):
                self._signal(b, signal.SIGCONT)
        if self._killed:
            ts = self._restart()
            if self.events.get("heal_ts_ns") is None and self.events.get("fault_ts_ns"):
                self.events["heal_ts_ns"] = ts
