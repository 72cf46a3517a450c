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
flavor lets a killed broker start again). A link fault (``partition-leader``,
``isolate-leader``) cuts the target's links instead (:mod:`kafkalab.cluster.links`; the fault
cluster then runs with ``--links``) and restores them. Every action is stamped on CLOCK_MONOTONIC.
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

from kafkalab import procs
from kafkalab.cluster.admin import admin_client
from kafkalab.cluster.embedded import EmbeddedCluster, cluster_down, cluster_up, running_cluster
from kafkalab.cluster.flavors import FAULT_CLUSTER
from kafkalab.cluster.links import LinkFault, Links
from kafkalab.cluster.links.layout import CLIENT_PLANES, CLIENTS
from kafkalab.cluster.partitions import PartitionReader
from kafkalab.cluster.state import resolve_lab
from kafkalab.errors import ClusterError, ConfigError
from kafkalab.faults.spec import LOSSY_RESTART_AFTER_S, NEEDS_FOLLOWER, FaultTrialSpec
from kafkalab.progress import Progress, noop
from kafkalab.scenarios.base import now_ns

__all__ = ["FAULT_BROKERS", "Injector", "Target", "ensure_fault_cluster", "fault_cluster_lab",
           "fault_cluster_ports", "pick_target", "wait_isr_full"]

FAULT_BROKERS = 3
STEP_DOWN_WATCH_S = 10.0
"""A link fault's watch of the old leader's own view goes on this long past the schedule."""
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
                         progress: Progress = noop, links: bool = False) -> EmbeddedCluster:
    """Start (or reuse, healing dead brokers) the 3-broker fault cluster; the running
    cluster (its state read once). ``links``: a link fault will run, so its links must be
    degradable (``cluster up --links``): the lab's own fault cluster running without them is
    stopped and started again with them.

    Raises:
        ConfigError: ``cluster_lab`` holds a running cluster that cannot host faults, is
            too small, or (``links``) has no degradable links.
        ClusterError: it cannot be started.
    """
    lab = fault_cluster_lab(cluster_lab)
    running = running_cluster(lab)
    _check_brokers(running)
    if links and not FAULT_CLUSTER.has_links:
        raise ConfigError(f"link faults need degradable links, which the {FAULT_CLUSTER.name} "
                          "fault cluster cannot have")
    if running is not None and links and Links.of(running.state) is None:
        if cluster_lab is not None:
            raise ConfigError(f"link faults need the cluster in {lab} started with degradable "
                              "links of this version (kafkalab cluster up --brokers 3 --links)")
        progress("restarting the fault cluster with degradable links (a link fault is planned)")
        cluster_down(lab, progress=progress)
        running = None
    if running is not None:
        running.heal(progress)
    else:
        control, base = fault_cluster_ports()
        cluster_up(FAULT_CLUSTER.name, FAULT_BROKERS, lab, base_port=base,
                   control_port=control, progress=progress, links=links)
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
    topic: str = ""
    """The trial's topic (a link fault watches its partition 0 as the old leader sees it)."""
    _stopped: set[int] = field(default_factory=set)
    _killed: set[int] = field(default_factory=set)
    _cut: list[LinkFault] = field(default_factory=list)
    quorum_leader_at_fault: int | None = None
    """A link fault: the node leading the KRaft controller quorum right before the cut (None:
    not read, or none)."""

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

    # ------------------------------------------------------------------ link faults
    def _links(self) -> Links:
        links = Links.of(self.cluster.state)
        if links is None:
            raise ClusterError("the fault cluster has no degradable links (cluster up --links)")
        return links

    def _cut_links(self, broker: int) -> int:
        """Cut ``broker``'s replication and controller links to every other node
        (``partition-leader``), its clients' links (``clients-cut-from-leader``) or both
        (``isolate-leader``); the monotonic time the cut began."""
        links = self._links()
        others = tuple(b for b in self.cluster.broker_ids if b != broker)
        peers = LinkFault("cut", (broker,), others, ("replication", "controller"))
        clients = LinkFault("cut", (broker,), (CLIENTS,), CLIENT_PLANES)
        faults = {"partition-leader": [peers], "isolate-leader": [peers, clients],
                  "clients-cut-from-leader": [clients]}[self.spec.fault]
        ts = now_ns()
        for fault in faults:
            self._cut.append(fault)
            links.apply(fault)
        what = "; ".join(f.describe() for f in faults)
        self.actions.append({"ts_ns": ts, "done_ts_ns": now_ns(), "broker": broker,
                             "signal": None, "result": f"links cut: {what}"})
        self.progress(f"  fault: {what}")
        return ts

    def _heal_links(self) -> int:
        """Take this trial's cuts off (the cut connections are closed: both ends reconnect)."""
        links = self._links()
        ts = now_ns()
        for fault in list(self._cut):
            links.remove(fault)
            self._cut.remove(fault)
        self.actions.append({"ts_ns": ts, "done_ts_ns": now_ns(), "broker": self.target.broker,
                             "signal": None, "result": "links healed"})
        self.progress("  heal: links restored")
        return ts

    def _alone(self, node: int) -> Any:
        """The cluster's descriptor bootstrapped to ``node`` alone."""
        port = int(self.cluster.state["broker_ports"][node])
        return self.cluster.descriptor.model_copy(
            update={"bootstrap_servers": f"{procs.HOST}:{port}"})

    def _watch_step_down(self, old_leader: int, until_ns: int) -> None:
        """Every 200 ms until ``until_ns``, ask ``old_leader`` itself who leads the trial's
        partition 0 until it names another broker (``old_leader_stepped_down_ts_ns``), and a
        node of the majority side (the partition's first other in-sync replica) until it does
        (``majority_sees_new_leader_ts_ns``): a fresh client bootstrapped to each alone, only
        its own answers count. A leader cut from the quorum keeps its old view of the
        metadata and names itself until it hears of its successor, so a client that happens
        to ask it (the lab's timeline may) sees no election; the majority's own view does."""
        self.events.setdefault("old_leader_stepped_down_ts_ns", None)
        self.events.setdefault("majority_sees_new_leader_ts_ns", None)
        witness = next((b for b in self.target.followers if b != old_leader), None)
        watched = {old_leader: "old_leader_stepped_down_ts_ns"}
        if witness is not None:
            watched[witness] = "majority_sees_new_leader_ts_ns"
        views = {node: self._alone(node) for node in watched}
        while now_ns() < until_ns and not self._stop.is_set():
            for node, key in watched.items():
                if self.events.get(key) is not None:
                    continue
                leader = self._leader_as_seen_by(views[node], node)
                if leader is not None and leader >= 0 and leader != old_leader:
                    self.events[key] = now_ns()
                    if node == old_leader:
                        self.events["old_leader_sees"] = leader
                        self.progress(f"  the old leader {old_leader} now names broker {leader}")
                    else:
                        self.progress(f"  broker {node} (majority side) names broker {leader}")
            if all(self.events.get(key) is not None for key in watched.values()):
                return
            self._stop.wait(0.2)

    def _leader_as_seen_by(self, alone: Any, node: int) -> int | None:
        """Partition 0's leader in a metadata answer from ``node`` itself, or None (no answer,
        or — librdkafka asks whichever broker it likes once it knows them — another broker
        answered: its ``orig_broker_id`` says which; -1 is the bootstrap connection, ``node``'s
        own address)."""
        try:
            md = admin_client(alone, 1.0, quiet=True).list_topics(self.topic, timeout=1.0)
        except Exception:  # unreachable (an isolated node) or busy: ask again
            return None
        if md.orig_broker_id not in (node, -1):
            return None
        part = md.topics.get(self.topic)
        p0 = None if part is None or part.error is not None else part.partitions.get(0)
        return None if p0 is None else int(p0.leader)

    def _run_link_fault(self, t0_ns: int, heal_at: int) -> None:
        """Cut the target's links now, restore them at ``heal_at``; watch the old leader's
        view throughout (to :data:`STEP_DOWN_WATCH_S` past the schedule's end when it has not
        stepped down by the heal)."""
        b = self.target.broker
        assert b is not None
        found = self.cluster.controller_leader()
        self.quorum_leader_at_fault = found[0] if found is not None else None
        self.events["fault_ts_ns"] = self._cut_links(b)
        self._watch_step_down(b, heal_at)
        if not self._wait_until(heal_at):
            return
        self.events["heal_ts_ns"] = self._heal_links()
        if self.events.get("old_leader_stepped_down_ts_ns") is None:
            # the old leader learns of its successor from the metadata log once it reaches
            # the quorum again: watch on past the schedule while the cell drains
            self._watch_step_down(b, t0_ns + int((self.spec.duration_s + STEP_DOWN_WATCH_S)
                                                 * 1e9))

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
            if spec.is_link_fault:
                self._run_link_fault(t0_ns, heal_at)
                return
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
        """Continue every broker this trial stopped, restart every one it killed and restore
        every link it cut (also after an error or Ctrl-C): the next trial starts from a whole
        cluster."""
        self.abort()
        self.join(60.0)
        if self._cut:
            with contextlib.suppress(Exception):
                ts = self._heal_links()
                if self.events.get("heal_ts_ns") is None and self.events.get("fault_ts_ns"):
                    self.events["heal_ts_ns"] = ts
        for b in sorted(self._stopped):
            with contextlib.suppress(Exception):
                self._signal(b, signal.SIGCONT)
        if self._killed:
            ts = self._restart()
            if self.events.get("heal_ts_ns") is None and self.events.get("fault_ts_ns"):
                self.events["heal_ts_ns"] = ts
