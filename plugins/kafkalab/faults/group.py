"""The consumer group of a consumer-fault trial: its member processes, the fault, the group's
committed offsets over time, and the member logs read back as tables.

* :func:`start_group` writes the members' plan (``group/plan.json``), starts ``consumers``
  member processes (:mod:`kafkalab.faults.member`) and waits until the group is stable: every
  live member holds an assignment, the assignments are disjoint and cover every partition.
* :class:`GroupInjector` is the trial's ``on_start`` hook: at ``fault_at_s`` it SIGKILLs
  member 0 (``kill-consumer``), sends it SIGTERM (``leave-consumer``: it finishes its batch
  by its commit strategy and closes, a LeaveGroup) or cuts every link it has
  (``cut-consumer``: member 0 is bootstrapped to the cluster's ``solo`` plane, so its links
  are its own; it keeps running, unheard, and the heal ``cut_s`` later lets it back); with
  ``rejoin_after_s`` a new process of member 0 (incarnation 1) joins that long after the
  fault.
* :class:`OffsetMonitor` samples the group's committed offset and the log end of every
  partition every ``interval_s`` (a client of its own with the group's id that never joins
  the group: OffsetFetch only), the ``group_lag.parquet`` rows.
* :func:`drain_and_stop` waits until the group has committed the log end of every partition
  (or ``timeout_s``), then stops every member cleanly.
* :func:`collect` turns the members' files into ``processed.parquet``, ``commits.parquet`` and
  ``assignments.parquet`` (schemas: :mod:`kafkalab.faults.files`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.cluster.links import LinkFault, Links
from kafkalab.cluster.links.layout import CLIENTS
from kafkalab.errors import RunError
from kafkalab.faults import files
from kafkalab.faults.deliveries import owned_after
from kafkalab.faults.inject import Scheduled
from kafkalab.faults.member import PROCESSED_ROW
from kafkalab.faults.spec import FaultTrialSpec
from kafkalab.load import files as load_files
from kafkalab.paths import plugins_dir
from kafkalab.progress import Progress, noop
from kafkalab.scenarios.base import now_ns
from kafkalab.store import atomic_write_json

__all__ = ["PHASE_STEP", "GroupInjector", "Members", "OffsetMonitor", "collect",
           "configure_consumer_group", "drain_and_stop", "fault_phase_offset_s", "read_events",
           "stable_assignment", "start_group"]

VICTIM = 0
"""The member a consumer fault hits."""

STABLE_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
POLL_S = 0.1


def group_dir(trial: Path) -> Path:
    """``<trial>/group``: the members' plan, logs and raw files."""
    return trial / "group"


@dataclass
class Members:
    """The member processes of one trial, by ``(member, incarnation)``."""

    plan_path: Path
    gdir: Path
    procs: dict[tuple[int, int], subprocess.Popen[bytes]] = field(default_factory=dict)

    def spawn(self, member: int, incarnation: int) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(plugins_dir()), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        log = open(self.gdir / f"member-m{member}-i{incarnation}.log", "wb")  # noqa: SIM115 - the child's
        p = subprocess.Popen([sys.executable, "-m", "kafkalab.faults.member", str(self.plan_path),
                              str(member), str(incarnation)], stdout=log, stderr=subprocess.STDOUT,
                             env=env)
        log.close()
        self.procs[(member, incarnation)] = p
        return p

    def alive(self) -> list[tuple[int, int]]:
        return [k for k, p in self.procs.items() if p.poll() is None]

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> list[tuple[int, int]]:
        """SIGTERM every live member (a clean leave), wait up to ``timeout_s``, SIGKILL the
        rest. Returns the members that had to be killed."""
        for p in self.procs.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for p in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(max(0.1, deadline - time.monotonic()))
        killed = []
        for k, p in self.procs.items():
            if p.poll() is None:
                p.kill()
                p.wait(10)
                killed.append(k)
        return killed


def member_plan(spec: FaultTrialSpec, d: ClusterDescriptor, descriptor_path: Path, topic: str,
                gdir: Path, session_ms: int, heartbeat_ms: int, profile: Any,
                victim_bootstrap: str | None = None) -> dict[str, Any]:
    """The members' plan: no secret (members read those from the descriptor). The members
    start before the producer has chosen its nonce; the trial's topic is its own, so every
    stamped record on it is the trial's. ``victim_bootstrap``: the victim's own bootstrap
    servers (``cut-consumer``: the ``solo`` plane's), as ``member_bootstrap``."""
    from kafkalab.cluster.descriptor import kafka_python_config, librdkafka_config
    from kafkalab.config.mapping import confluent_consumer_config, kafka_python_consumer_config

    public = d.model_copy(update={"secret_env": {}})
    group_id = f"kafkalab-fault-{topic}"
    if spec.client == "kafka-python":
        base: dict[str, Any] = kafka_python_consumer_config(kafka_python_config(public), profile, group_id)
    else:
        base = confluent_consumer_config(librdkafka_config(public), profile, group_id)
    return {"topic": topic, "group_id": group_id, "client": spec.client,
            "commit": spec.effective_commit, "batch_msgs": spec.batch_msgs,
            "batch_wait_ms": spec.batch_wait_ms, "session_timeout_ms": session_ms,
            "heartbeat_interval_ms": heartbeat_ms,
            "auto_commit_interval_ms": spec.auto_commit_interval_ms,
            "intended": spec.load_cell().intended_messages, "group_dir": str(gdir),
            "descriptor_path": str(descriptor_path), "client_config": base,
            "die_after_records": spec.victim_dies_after_records,
            # KIP-345: member i is "<group>-m<i>" in every incarnation
            "group_instance_prefix": f"{group_id}-m" if spec.static_membership else None,
            "rebalance": spec.rebalance,
            "member_bootstrap": {} if victim_bootstrap is None else {str(VICTIM): victim_bootstrap}}


def configure_consumer_group(d: ClusterDescriptor, group_id: str, session_ms: int,
                             heartbeat_ms: int, timeout_s: float = 30.0) -> dict[str, str]:
    """Give a KIP-848 group the trial's session timeout and heartbeat interval before its
    members start (a group config, KIP-848/KIP-1101: the consumer protocol's are the
    broker's, not the client's; the lab's brokers accept down to 1 s and 100 ms). Returns the
    values set.

    Raises:
        RunError: the broker refused them.
    """
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    from kafkalab.cluster.admin import admin_client

    values = {"consumer.session.timeout.ms": str(session_ms),
              "consumer.heartbeat.interval.ms": str(heartbeat_ms)}
    res = ConfigResource(ResourceType.GROUP, group_id, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in values.items()])
    admin = admin_client(d, timeout_s)  # kept until the answer: a dropped handle aborts it
    try:
        admin.incremental_alter_configs([res])[res].result(timeout=timeout_s)
    except Exception as exc:  # KafkaException: the broker's own message
        raise RunError(f"the broker refused the consumer group's settings {values}: {exc}") from None
    return values


def read_events(gdir: Path) -> list[dict[str, Any]]:
    """Every member's events, in time order (a torn last line of a killed member is skipped)."""
    out: list[dict[str, Any]] = []
    for p in sorted(gdir.glob("events-m*-i*.jsonl")):
        for line in p.read_text().splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
    return sorted(out, key=lambda e: int(e.get("ts_ns") or 0))


def stable_assignment(events: list[dict[str, Any]], live: list[tuple[int, int]],
                      partitions: int) -> dict[tuple[int, int], list[int]] | None:
    """Each live member's current partitions when the group is stable (every live member
    assigned after its last revocation, or left owning some after an incremental one;
    disjoint, covering ``0..partitions-1``), else None."""
    current: dict[tuple[int, int], list[int] | None] = {k: None for k in live}
    for e in events:
        k = (int(e["member"]), int(e["incarnation"]))
        if k not in current or e["ev"] not in ("assigned", "revoked"):
            continue
        owned = owned_after(e)
        current[k] = owned if e["ev"] == "assigned" or owned else None
    if any(v is None for v in current.values()):
        return None
    seen = [p for v in current.values() for p in (v or [])]
    if sorted(seen) != list(range(partitions)):
        return None
    return {k: list(v or []) for k, v in current.items()}


def member_error(events: list[dict[str, Any]]) -> str | None:
    """The first ``error`` event of any member, as text."""
    for e in events:
        if e.get("ev") == "error":
            return f"member {e.get('member')}: {e.get('error')}"
    return None


def start_group(spec: FaultTrialSpec, plan: dict[str, Any], trial: Path,
                progress: Progress = noop) -> Members:
    """Start the members and wait for a stable group.

    Raises:
        RunError: a member failed or the group did not settle within 60 s (members stopped).
    """
    gdir = group_dir(trial)
    gdir.mkdir(parents=True, exist_ok=True)
    for old in gdir.iterdir():
        old.unlink()
    plan_path = gdir / "plan.json"
    atomic_write_json(plan_path, plan)
    members = Members(plan_path, gdir)
    for m in range(spec.consumers):
        members.spawn(m, 0)
    progress(f"  {spec.consumers} group members started ({spec.client}, commit "
             f"{spec.effective_commit}); waiting for the group to settle")
    deadline = time.monotonic() + STABLE_TIMEOUT_S
    while True:  # a bounded poll of the members' event files (the only channel they share)
        events = read_events(gdir)
        err = member_error(events)
        dead = [k for k, p in members.procs.items() if p.poll() is not None]
        if err or dead:
            members.stop(5)
            raise RunError(f"group member failed before the run: {err or f'member {dead[0][0]} exited'}"
                           f" (see {gdir})")
        if stable_assignment(events, members.alive(), spec.partitions) is not None:
            return members
        if time.monotonic() > deadline:
            members.stop(5)
            raise RunError(f"the consumer group did not settle within {STABLE_TIMEOUT_S:.0f} s "
                           f"(see {gdir})")
        time.sleep(POLL_S)


PHASE_STEP = (5 ** 0.5 - 1) / 2
"""The golden ratio's fraction: trial k strikes ``frac(k * PHASE_STEP)`` of a heartbeat
interval early, a sequence that covers the interval evenly for any number of trials."""


def fault_phase_offset_s(trial: int, heartbeat_s: float, room_s: float) -> float:
    """How much earlier than its ``fault_at_s`` a consumer fault's trial ``trial`` strikes:
    a fraction ``frac(trial * PHASE_STEP)`` of one heartbeat interval (at most ``room_s``,
    the time between the warm-up's end and ``fault_at_s``).

    A group's members learn of a rebalance at their next heartbeat, and the classic
    protocol's members heartbeat in step from the moment the group settled, a near-constant
    time before the schedule starts; a fault at a fixed instant would meet the same phase of
    the heartbeat cycle in every trial of a cell, and a different one in another cell. The
    offset draws the phase across the trials instead; the pauses are measured from the
    fault's actual instant either way.
    """
    fraction = (trial * PHASE_STEP) % 1.0
    return round(fraction * min(heartbeat_s, max(0.0, room_s)), 6)


@dataclass
class GroupInjector(Scheduled):
    """Breaks member 0 on the trial's schedule (the load engine's ``on_start`` hook)."""

    thread_name: ClassVar[str] = "group-injector"

    spec: FaultTrialSpec
    members: Members
    progress: Progress = noop
    fault_offset_s: float = 0.0
    """How much earlier than ``fault_at_s`` it strikes (:func:`fault_phase_offset_s`)."""
    links: Links | None = None
    """``cut-consumer``: the fault cluster's links (member 0's are the ``solo`` plane)."""
    cut_s: float = 0.0
    """``cut-consumer``: how long member 0 stays cut (:meth:`FaultTrialSpec.cut_s`)."""

    def _run(self, t0_ns: int) -> None:
        spec = self.spec
        fault_at = t0_ns + int((spec.fault_at_s - self.fault_offset_s) * 1e9)
        self.events["fault_ts_ns"] = None
        self.events["rejoin_ts_ns"] = None
        try:
            if not self._wait_until(fault_at):
                return
            victim = self.members.procs[(VICTIM, 0)]
            if victim.poll() is not None:
                raise RuntimeError("member 0 was already gone at the fault")
            if spec.fault == "cut-consumer":
                self._cut_and_heal()
                return
            ts = now_ns()
            if spec.fault == "leave-consumer":
                victim.send_signal(signal.SIGTERM)
                what = "SIGTERM (clean leave)"
            elif spec.victim_dies_after_records is not None:
                victim.send_signal(signal.SIGUSR2)
                what = f"SIGUSR2 (dies after {spec.victim_dies_after_records} records of its next batch)"
            else:
                victim.kill()
                what = "SIGKILL"
            self.events["fault_ts_ns"] = ts
            self.actions.append({"ts_ns": ts, "member": VICTIM, "signal": what})
            self.progress(f"  fault: member {VICTIM} {what}")
            if spec.rejoin_after_s is not None:
                if not self._wait_until(ts + int(spec.rejoin_after_s * 1e9)):
                    return
                with contextlib.suppress(subprocess.TimeoutExpired):
                    victim.wait(5)
                rts = now_ns()
                self.members.spawn(VICTIM, 1)
                self.events["rejoin_ts_ns"] = rts
                self.actions.append({"ts_ns": rts, "member": VICTIM, "signal": "rejoin (incarnation 1)"})
                self.progress(f"  member {VICTIM} rejoins (a new process)")
        except Exception as exc:  # reported by the trial
            self.error = f"{type(exc).__name__}: {exc}"
            self.progress(f"  fault injection failed: {self.error}")

    def _cut_and_heal(self) -> None:
        """Cut member 0's every link (the ``solo`` plane, to every node) now; heal them all
        ``cut_s`` later (the heal is also the member's rejoin: it is still running). The heal
        runs whatever happens while waiting."""
        if self.links is None:
            raise RuntimeError("cut-consumer needs the fault cluster's degradable links")
        nodes = tuple(range(self.links.layout.nodes))
        fault = LinkFault("cut", nodes, (CLIENTS,), ("solo",))
        ts = now_ns()
        try:
            self.links.apply(fault)
            self.events["fault_ts_ns"] = ts
            self.actions.append({"ts_ns": ts, "member": VICTIM, "signal": f"links cut: {fault.describe()}"})
            self.progress(f"  fault: member {VICTIM}'s links cut for {self.cut_s:g} s")
            self._wait_until(ts + int(self.cut_s * 1e9))
        finally:
            self.links.heal()
            hts = now_ns()
            self.events["heal_ts_ns"] = hts
            self.events["rejoin_ts_ns"] = hts
            self.actions.append({"ts_ns": hts, "member": VICTIM, "signal": "links healed"})
            self.progress(f"  member {VICTIM}'s links healed")


class OffsetMonitor:
    """Samples the group's committed offsets and the log ends (``group_lag.parquet`` rows)."""

    def __init__(self, d: ClusterDescriptor, topic: str, group_id: str, partitions: int,
                 interval_s: float = 0.5) -> None:
        self.d, self.topic, self.group_id, self.partitions = d, topic, group_id, partitions
        self.interval_s = interval_s
        self.rows: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="group-offsets", daemon=True)
        self._client: Any = None

    def start(self) -> OffsetMonitor:
        from confluent_kafka import Consumer

        from kafkalab.cluster.descriptor import librdkafka_config

        cfg: dict[str, Any] = dict(librdkafka_config(self.d))
        cfg.update({"group.id": self.group_id, "enable.auto.commit": False, "log_level": 3})
        self._client = Consumer(cfg)
        self._thread.start()
        return self

    def sample(self) -> list[dict[str, Any]]:
        from confluent_kafka import TopicPartition

        c = self._client
        ts = now_ns()
        try:
            committed = {int(tp.partition): int(tp.offset) for tp in
                         c.committed([TopicPartition(self.topic, p) for p in range(self.partitions)],
                                     timeout=5)}
        except Exception:  # the coordinator did not answer this time: the sample says so
            committed = {}
        rows = []
        for p in range(self.partitions):
            try:
                _lo, hi = c.get_watermark_offsets(TopicPartition(self.topic, p), timeout=5, cached=False)
                end: int | None = int(hi)
            except Exception:
                end = None
            off = committed.get(p)
            off = off if off is not None and off >= 0 else None
            rows.append({"sample_ts_ns": ts, "partition": p, "committed_offset": off,
                         "log_end_offset": end,
                         "lag_msgs": None if end is None else max(0, end - (off or 0))})
        return rows

    def _run(self) -> None:
        while not self._stop.is_set():
            self.rows.extend(self.sample())
            self._stop.wait(self.interval_s)

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        self._thread.join(15)
        with contextlib.suppress(Exception):
            self.rows.extend(self.sample())
            self._client.close()
        return self.rows


def drain_and_stop(members: Members, monitor: OffsetMonitor, ends: dict[int, int],
                   timeout_s: float, progress: Progress = noop) -> dict[str, Any]:
    """Wait until the group's committed offset reached ``ends`` on every partition (or
    ``timeout_s``), then stop the members cleanly. Returns what happened."""
    deadline = time.monotonic() + timeout_s
    caught_up = False
    while time.monotonic() < deadline:  # a bounded poll of the broker's committed offsets
        latest = monitor.sample()
        if all((r["committed_offset"] or 0) >= ends.get(int(r["partition"]), 0) for r in latest):
            caught_up = True
            break
        if not members.alive():
            break
        time.sleep(0.25)
    if not caught_up:
        progress(f"  the group had not committed the log end within {timeout_s:.0f} s: what it "
                 "did not process counts as lost")
    killed = members.stop()
    return {"caught_up": caught_up, "stopped_ts_ns": now_ns(),
            "killed_at_stop": [list(k) for k in killed]}


def collect(trial: Path, t0_ns: int | None, lag_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Write ``processed.parquet``, ``commits.parquet``, ``assignments.parquet`` and
    ``group_lag.parquet`` from the members' raw files; return the tables as numpy columns
    (``processed``) and event lists for the summary."""
    gdir = group_dir(trial)
    cols: dict[str, list[np.ndarray]] = {n: [] for n in files.PROCESSED_SCHEMA.names}
    for p in sorted(gdir.glob("processed-m*-i*.bin")):
        member, inc = (int(x[1:]) for x in p.stem.split("-")[1:3])
        raw = p.read_bytes()
        k = len(raw) // PROCESSED_ROW.size
        a = np.frombuffer(raw[: k * PROCESSED_ROW.size],
                          dtype=np.dtype([("seq", "<i8"), ("partition", "<i4"), ("offset", "<i8"),
                                          ("receive_ts_ns", "<i8"), ("processed_ts_ns", "<i8")]))
        cols["member"].append(np.full(k, member, dtype=np.int32))
        cols["incarnation"].append(np.full(k, inc, dtype=np.int32))
        for n in ("seq", "partition", "offset", "receive_ts_ns", "processed_ts_ns"):
            cols[n].append(a[n].astype(np.int64 if n != "partition" else np.int32))
    processed = {n: (np.concatenate(v) if v else np.zeros(0, dtype=files.numpy_type(files.PROCESSED_SCHEMA, n)))
                 for n, v in cols.items()}
    order = np.argsort(processed["receive_ts_ns"], kind="stable")
    processed = {n: v[order] for n, v in processed.items()}
    load_files.write_table(files.processed_path(trial), processed, files.PROCESSED_SCHEMA)
    events = read_events(gdir)
    commits: dict[str, list[Any]] = {n: [] for n in files.COMMITS_SCHEMA.names}
    assigns: dict[str, list[Any]] = {n: [] for n in files.ASSIGNMENTS_SCHEMA.names}
    for e in events:
        if e["ev"] == "commit":
            for p, off in (e.get("offsets") or {}).items():
                commits["member"].append(int(e["member"]))
                commits["incarnation"].append(int(e["incarnation"]))
                commits["commit_ts_ns"].append(int(e["ts_ns"]))
                commits["partition"].append(int(p))
                commits["offset"].append(int(off))
                commits["ok"].append(bool(e.get("ok")))
                commits["error"].append(e.get("error"))
                commits["source"].append(str(e.get("source")))
        elif e["ev"] in ("assigned", "revoked", "started", "leaving", "closed", "self_kill", "error",
                         "dropped", "armed"):
            parts = e.get("partitions") or sorted(int(p) for p in (e.get("rewound_to") or {}))
            assigns["member"].append(int(e["member"]))
            assigns["incarnation"].append(int(e["incarnation"]))
            assigns["event_ts_ns"].append(int(e["ts_ns"]))
            assigns["event"].append(str(e["ev"]))
            assigns["partitions"].append(",".join(str(p) for p in parts))
    load_files.write_table(files.commits_path(trial), commits, files.COMMITS_SCHEMA)
    load_files.write_table(files.assignments_path(trial), assigns, files.ASSIGNMENTS_SCHEMA)
    lag = {n: [r.get(n) for r in lag_rows] for n in files.GROUP_LAG_SCHEMA.names if n != "elapsed_s"}
    lag["elapsed_s"] = [(r["sample_ts_ns"] - t0_ns) / 1e9 if t0_ns else None for r in lag_rows]
    load_files.write_table(files.group_lag_path(trial), lag, files.GROUP_LAG_SCHEMA)
    return {"processed": processed, "events": events}
