"""A fake fault run (made up, never measured) in the layout of the "fault samples" dataset.

Writes what the fault engine writes for one run (``/tmp/issue9/contract.md``, "Raw files";
``docs/metrics-schema.md``, "Fault samples")::

    <data_dir>/faults/run_date=<d>/run_id=<id>/trial=<trial_id>/
        sends.parquet  receipts-000.parquet  lag-000.parquet  cell.json   (load cell files)
        timeline.parquet  verdicts.parquet  trial.json
        processed.parquet  deliveries.parquet  commits.parquet  assignments.parquet
        group_lag.parquet                        (consumer faults only)
    <data_dir>/runs/<run_id>.json            manifest, kind "faults"

Each trial (:class:`FakeFaultTrial`) says what the checker finds: acked messages lost (and
how many of them are still in a broker's log), failed and indeterminate sends (and how many
of them were written anyway), unsent messages, duplicates, reordered messages. The fault
stops the acks for ``outage_s``; a leader fault leaves the partition without a leader for
``election_s``, then broker 2 leads; the ISR is full again ``isr_full_after_heal_s`` after the
heal. Everything is deterministic (no randomness). The trial's ``summary`` is computed from
the very rows written, by the contract's definitions, so a test can compare the Spark
aggregates with it.

A consumer-fault trial (``kill-consumer`` / ``leave-consumer`` with a ``commit``; see
:func:`consumer_trials`) has no broker outage; its group of members processes the stream,
member 0 stops at the fault, and the summary's consumer figures come from the engine's own
:func:`kafkalab.faults.deliveries.group_summary` over the rows written.

Used by the Spark tests (``tests/spark/test_*faults*.py``) and by anyone who needs a fault
run without a cluster::

    .venv/bin/python -m tools.fake_fault_samples --data-dir /tmp/lab --run-id RUN \
        [--durability-loss 2] [--consumer-faults]

writes the standard set (:func:`standard_trials`): a durability sigkill-leader trial that
loses nothing (or ``--durability-loss`` acked messages), a lossy-leader-crash trial of the
default profile that loses acked messages (one of them still in broker 1's log), one with
duplicates, and a ``none`` control.

Timing model (made-up CLOCK_MONOTONIC): message i is intended at ``t0 + i/R``, sent 50 µs
later and acked 0.5 ms after the send; a message sent during the outage is acked (or fails)
1 ms after its end, in send order 10 µs apart; the live consumer receives every message that
was written 1.5 ms after its ack (a duplicate 0.1 ms after the first copy).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafkalab.cluster.flavors import FAULT_CLUSTER
from kafkalab.faults.files import (
    ASSIGNMENTS_SCHEMA,
    COMMITS_SCHEMA,
    DELIVERIES,
    DELIVERIES_SCHEMA,
    GROUP_LAG_SCHEMA,
    PROCESSED_SCHEMA,
    TIMELINE_SCHEMA,
    VERDICTS_SCHEMA,
)
from kafkalab.load.files import LAG_SCHEMA, RECEIPTS_SCHEMA, SENDS_SCHEMA
from kafkalab.run_ids import run_id_time
from kafkalab.store import LabData, atomic_file, atomic_write_json, safe_name

__all__ = [
    "TIMELINE_SCHEMA",
    "VERDICTS_SCHEMA",
    "FakeFaultTrial",
    "consumer_trials",
    "main",
    "standard_trials",
    "write_fake_fault_run",
]

_MONOTONIC_START_NS = 86_400 * 1_000_000_000
"""The made-up CLOCK_MONOTONIC reading at the run's start (one day of uptime)."""
_MS = 1_000_000
_SEND_AFTER_NS = 50_000
_ACK_AFTER_NS = 500_000
_RECEIVE_AFTER_ACK_NS = 1_500_000
_POLL_NS = 100 * _MS
_LAG_NS = 500 * _MS
_BROKERS = (0, 1, 2)
_LEADER = 1
"""The partition's leader before the fault (the target of a leader fault)."""
_NEW_LEADER = 2
_FOLLOWER = 0
"""The target of ``kill-follower``."""
_LEADER_FAULTS = ("sigkill-leader", "sigterm-leader", "sigstop-leader", "lossy-leader-crash")
_DEFAULT_DOWN_S = 1.0
_CONSUMER_FAULTS = ("kill-consumer", "leave-consumer")
_CONTROLLER_FAULTS = ("sigkill-controller", "sigterm-controller", "sigstop-controller")
"""Faults of the active controller's node: a new quorum leader ``election_s`` after the fault
(the partition's leader stays where it was in the fake)."""
_PROFILE_ACKS = {"durability": "all", "availability": "all", "default": "1"}
"""``producer.acks`` of ``include/profiles/<profile>.yaml``."""


@dataclass(frozen=True)
class FakeFaultTrial:
    """One fake trial: the spec (``kafkalab.faults.spec.FaultTrialSpec``'s fields) and what
    the checker finds. Counts are over all intended messages (warm-up included):

    * ``failed`` / ``indeterminate``: messages sent during the outage whose send failed /
      got no answer; ``failed_present`` / ``indeterminate_present`` of them were written
      anyway (read back); ``unsent``: the last messages, never sent;
    * ``acked_lost``: the last messages acked before the fault, never read back;
      ``lost_in_logs`` of them are still in the target broker's log (``in_broker_logs``
      ``"<target>"``), the rest in no log (``""``);
    * ``duplicates``: the first messages acked after the outage are read twice (a retry);
    * ``reordered``: the next messages are flagged reordered.
    """

    profile: str = "durability"
    fault: str = "sigkill-leader"
    acks: str | None = None
    trial: int = 1
    rate_msgs_per_s: float = 100.0
    duration_s: float = 3.0
    warmup_s: float = 0.5
    fault_at_s: float = 1.0
    down_s: float | None = None
    payload: str = "1kb"
    partitions: int = 1
    client: str = "confluent-kafka"
    max_in_flight: int | None = None
    """The producer's max in flight as the trial's summary records it (None: not recorded)."""
    idempotence: bool | None = None
    """The producer's idempotence as the summary records it (None: not recorded, as before
    2026-11-29)."""
    txn_msgs: int | None = None
    """Transactions of this many records (None: the plain producer); then ``aborted`` and
    ``aborted_visible`` apply and the verdicts carry the read_uncommitted re-read's counts."""
    aborted: int = 0
    """Records of aborted transactions (the last ones acked after the fault otherwise)."""
    aborted_visible: int = 0
    """Of those, how many the read_committed re-read found (an isolation failure)."""
    status: str = "complete"
    outage_s: float = 0.4
    election_s: float = 0.3
    isr_full_after_heal_s: float = 0.5
    failed: int = 0
    failed_present: int = 0
    indeterminate: int = 0
    indeterminate_present: int = 0
    unsent: int = 0
    acked_lost: int = 0
    lost_in_logs: int = 0
    duplicates: int = 0
    reordered: int = 0
    is_emulator: bool = False
    commit: str | None = None
    """A consumer fault's commit strategy (``auto``, ``after``, ``before``); set it for
    ``kill-consumer`` / ``leave-consumer`` (then the fields below apply, see
    :func:`_group_frames`)."""
    consumers: int = 3
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 2000
    auto_commit_interval_ms: int = 5000
    rebalance_pause_s: float | None = None
    """From the fault to the successor's first record on a moved partition (default: the
    session timeout for kill-consumer, 50 ms for leave-consumer)."""
    redelivered: int = 0
    """Records of the victim's first partition processed but not committed at the fault: the
    successor processes them again."""
    lost_unprocessed: int = 0
    """Records of the victim's first partition committed but not processed at the fault:
    nobody ever processes them."""
    rejoin_after_s: float | None = None

    # -- spec ------------------------------------------------------------------------

    @property
    def effective_acks(self) -> str:
        return self.acks or _PROFILE_ACKS.get(self.profile, "1")

    @property
    def is_consumer_fault(self) -> bool:
        return self.fault in _CONSUMER_FAULTS

    @property
    def trial_id(self) -> str:
        """``kafkalab.faults.spec.FaultTrialSpec.trial_id`` (not built from the spec itself:
        the fake's trials are shorter than the engine's spec allows)."""
        commit = f"-commit-{self.commit}" if self.is_consumer_fault else ""
        client = "-kafka-python" if self.client == "kafka-python" else ""
        idem = "" if self.idempotence is None else (
            "-idem-on" if self.idempotence else "-idem-off")
        txn = "" if self.txn_msgs is None else f"-txn{self.txn_msgs}"
        return safe_name(f"{self.profile}-{self.fault}{commit}-acks-{self.effective_acks}"
                         f"{client}{idem}{txn}-t{self.trial}")

    @property
    def effective_down_s(self) -> float | None:
        if self.fault == "none" or self.is_consumer_fault:
            return None
        return self.down_s if self.down_s is not None else _DEFAULT_DOWN_S

    @property
    def effective_outage_s(self) -> float:
        """A consumer fault leaves the brokers alone: the producer sees no outage."""
        return 0.0 if self.is_consumer_fault else self.outage_s

    @property
    def target_role(self) -> str | None:
        if self.fault == "none":
            return "none"
        if self.is_consumer_fault:
            return None
        if self.fault in _CONTROLLER_FAULTS:
            return "controller"
        return "follower" if self.fault == "kill-follower" else "leader"

    @property
    def target_broker(self) -> int | None:
        if self.target_role is None:
            return None
        return {"none": None, "follower": _FOLLOWER,
                "controller": _FOLLOWER}.get(self.target_role, _LEADER)

    def spec(self) -> dict[str, Any]:
        """The trial's spec as ``trial.json`` holds it (FaultTrialSpec's fields)."""
        return {
            "profile": self.profile, "fault": self.fault, "acks": self.acks,
            "trial": self.trial, "rate_msgs_per_s": float(self.rate_msgs_per_s),
            "duration_s": float(self.duration_s), "warmup_s": float(self.warmup_s),
            "fault_at_s": float(self.fault_at_s), "down_s": self.effective_down_s,
            "payload": self.payload, "partitions": self.partitions, "client": self.client,
            **({"commit": self.commit, "consumers": self.consumers,
                "session_timeout_ms": self.session_timeout_ms, "heartbeat_interval_ms": None,
                "auto_commit_interval_ms": self.auto_commit_interval_ms,
                "rejoin_after_s": self.rejoin_after_s} if self.is_consumer_fault else {}),
        }


def standard_trials(durability_loss: int = 0) -> list[FakeFaultTrial]:
    """The standard fake run: a durability sigkill-leader trial (losing ``durability_loss``
    acked messages, none in any log), a lossy-leader-crash trial of the default profile (3
    acked messages lost, one still in broker 1's log; failed, indeterminate, unsent), a
    default sigkill-leader trial with duplicates and reordering, and a ``none`` control."""
    return [
        FakeFaultTrial(profile="durability", fault="sigkill-leader", failed=2,
                       acked_lost=durability_loss),
        FakeFaultTrial(profile="default", fault="lossy-leader-crash", acks="1", outage_s=0.5,
                       failed=3, failed_present=1, indeterminate=2, indeterminate_present=1,
                       unsent=2, acked_lost=3, lost_in_logs=1),
        FakeFaultTrial(profile="default", fault="sigkill-leader", acks="1", trial=1,
                       duplicates=4, reordered=2),
        FakeFaultTrial(profile="default", fault="sigkill-leader", acks="1", trial=2,
                       outage_s=0.6, duplicates=1),
        FakeFaultTrial(profile="durability", fault="none"),
    ]


_CONSUMER_SHAPE: dict[str, Any] = {"profile": "durability", "partitions": 6, "duration_s": 4.0,
                                   "fault_at_s": 1.5, "session_timeout_ms": 1500}


def consumer_trials() -> list[FakeFaultTrial]:
    """The standard fake consumer faults (3 members, 6 partitions, fault at 1.5 s of 4 s,
    session timeout 1.5 s): two kill-consumer trials committing after processing (4 and 2
    records processed twice; the successor resumes 1.5 s and 1.2 s after the kill), one
    committing before (3 records never processed), and a member leaving with auto commit
    (5 processed twice) and coming back 1 s later."""
    return [
        FakeFaultTrial(fault="kill-consumer", commit="after", trial=1, redelivered=4,
                       **_CONSUMER_SHAPE),
        FakeFaultTrial(fault="kill-consumer", commit="after", trial=2, redelivered=2,
                       rebalance_pause_s=1.2, **_CONSUMER_SHAPE),
        FakeFaultTrial(fault="kill-consumer", commit="before", lost_unprocessed=3,
                       **_CONSUMER_SHAPE),
        FakeFaultTrial(fault="leave-consumer", commit="auto", redelivered=5,
                       rejoin_after_s=1.0, **_CONSUMER_SHAPE),
    ]


# --------------------------------------------------------------------------- frames


def _write(path: Path, columns: Mapping[str, Any], schema: pa.Schema) -> None:
    table = pa.table({n: pa.array(columns[n], type=schema.field(n).type) for n in schema.names},
                     schema=schema)
    with atomic_file(path) as fh:
        pq.write_table(table, fh, compression="zstd")


def _longest_gap_ms(times: Sequence[int], after_ns: int | None) -> float | None:
    """The longest gap between consecutive ``times`` among the gaps ending after
    ``after_ns`` (all gaps when None), in ms; None when there is no such gap."""
    ts = sorted(times)
    gaps = [(b - a) / 1e6 for a, b in itertools.pairwise(ts)
            if after_ns is None or b > after_ns]
    return max(gaps) if gaps else None


def _ms_between(start: int, end: int | None) -> float | None:
    return (end - start) / 1e6 if end is not None else None


def _columns(rows: list[dict[str, Any]], schema: pa.Schema) -> dict[str, list[Any]]:
    return {n: [r.get(n) for r in rows] for n in schema.names}


def _trial_frames(t: FakeFaultTrial, t0: int) -> dict[str, Any]:
    """Sends, receipts, lag, timeline and verdict rows of one trial, and its clocks."""
    n = round(t.rate_msgs_per_s * t.duration_s)
    fault_ts = t0 + round(t.fault_at_s * 1e9) if t.fault != "none" else None
    down = t.effective_down_s
    heal_ts = fault_ts + round(down * 1e9) if fault_ts is not None and down else None
    out_end = fault_ts + round(t.effective_outage_s * 1e9) if fault_ts is not None else None
    intended = [t0 + round(i * 1e9 / t.rate_msgs_per_s) for i in range(n)]
    send = [x + _SEND_AFTER_NS for x in intended]
    warm = [x < t0 + round(t.warmup_s * 1e9) for x in intended]
    in_outage = [fault_ts is not None and out_end is not None and fault_ts <= s < out_end
                 for s in send]
    outage_idx = [i for i in range(n) if in_outage[i]]
    if t.failed + t.indeterminate > len(outage_idx):
        raise ValueError(f"{t.trial_id}: {t.failed + t.indeterminate} failed/indeterminate "
                         f"messages do not fit in the {len(outage_idx)} sent during the outage")
    outcome = ["acked"] * n
    error: list[str | None] = [None] * n
    for i in outage_idx[:t.failed]:
        outcome[i], error[i] = "failed", "_MSG_TIMED_OUT"
    for i in outage_idx[t.failed:t.failed + t.indeterminate]:
        outcome[i], error[i] = "indeterminate", "_TRANSPORT"
    for i in range(n - t.unsent, n):
        outcome[i] = "unsent"
    ack: list[int | None] = [None] * n
    for i in range(n):
        if outcome[i] == "unsent":
            continue
        if in_outage[i] and out_end is not None:
            ack[i] = out_end + _MS + 10_000 * outage_idx.index(i)
        elif outcome[i] == "acked":
            ack[i] = send[i] + _ACK_AFTER_NS
    acked = [i for i in range(n) if outcome[i] == "acked"]
    before = [i for i in acked if fault_ts is not None and (ack[i] or 0) < fault_ts]
    after = [i for i in acked if fault_ts is None or (ack[i] or 0) >= fault_ts]
    if fault_ts is None and (t.acked_lost or t.duplicates or t.reordered):
        raise ValueError(f"{t.trial_id}: a none trial cannot lose, duplicate or reorder")
    lost = before[len(before) - t.acked_lost:] if t.acked_lost else []
    dup = after[:t.duplicates]
    reord = after[t.duplicates:t.duplicates + t.reordered]
    if t.aborted and t.txn_msgs is None:
        raise ValueError(f"{t.trial_id}: aborted records need txn_msgs")
    plain = [i for i in after if i not in dup and i not in reord]
    aborted = set(plain[len(plain) - t.aborted:]) if t.aborted else set()
    visible = set(sorted(aborted)[:t.aborted_visible])
    for i in aborted:
        outcome[i], ack[i] = "aborted", None
    failed_idx = [i for i in range(n) if outcome[i] == "failed"]
    indet_idx = [i for i in range(n) if outcome[i] == "indeterminate"]
    present = set(failed_idx[:t.failed_present]) | set(indet_idx[:t.indeterminate_present])

    # -- verdicts -------------------------------------------------------------------------
    verdicts: list[dict[str, Any]] = []
    receipts: list[dict[str, Any]] = []
    acked_next = [0] * t.partitions  # per partition (message i goes to i % partitions)
    read_next = [0] * t.partitions
    target = str(t.target_broker) if t.target_broker is not None else ""
    for i in range(n):
        is_acked = outcome[i] == "acked"
        part = i % t.partitions
        if i in aborted:
            verdict, reads = ("aborted_visible", 1) if i in visible else ("aborted", 0)
        elif is_acked and i in lost:
            verdict, reads = "acked_lost", 0
        elif is_acked:
            verdict, reads = "ok", 2 if i in dup else 1
        elif i in present:
            verdict = "failed_but_present" if outcome[i] == "failed" else "indeterminate_present"
            reads = 1
        else:
            verdict, reads = "unseen", 0
        row = {
            "seq": i, "is_warmup": warm[i], "outcome": outcome[i], "partition": part,
            "acked_offset": acked_next[part] if is_acked else -1, "read_count": reads,
            "first_read_offset": read_next[part] if reads else -1, "reordered": i in reord,
            "verdict": verdict,
            "in_broker_logs": ((target if lost.index(i) < t.lost_in_logs else "")
                               if verdict == "acked_lost" else None),
            "uncommitted_read_count": (None if t.txn_msgs is None
                                       else 1 if i in aborted else reads),
        }
        verdicts.append(row)
        if is_acked:
            acked_next[part] += 1
        for copy in range(reads):
            acked_at = ack[i]
            rx = (acked_at if acked_at is not None else send[i]) + _RECEIVE_AFTER_ACK_NS
            rx += copy * 100_000
            receipts.append({
                "consumer": 0, "shard": 0, "seq": i, "producer_id": 0, "partition": part,
                "offset": read_next[part] + copy, "intended_ts_ns": intended[i],
                "send_ts_ns": send[i], "receive_ts_ns": rx,
                "e2e_latency_ms": (rx - send[i]) / 1e6,
                "service_e2e_latency_ms": (rx - intended[i]) / 1e6,
                "duplicate": copy > 0, "after_stop": False, "is_warmup": warm[i],
            })
        read_next[part] += reads

    sends = [{
        "seq": i, "producer_id": 0, "is_warmup": warm[i], "intended_ts_ns": intended[i],
        "send_ts_ns": None if outcome[i] == "unsent" else send[i], "ack_ts_ns": ack[i],
        "outcome": outcome[i], "error": error[i], "partition": i % t.partitions,
        "offset": verdicts[i]["acked_offset"] if verdicts[i]["acked_offset"] >= 0 else None,
        "publish_delay_ms": None if outcome[i] == "unsent" else _SEND_AFTER_NS / 1e6,
        "ack_latency_ms": _ms_between(send[i], ack[i]),
    } for i in range(n)]
    stop = t0 + round(t.duration_s * 1e9)
    end = max([stop, *(r["receive_ts_ns"] for r in receipts)]) + 100 * _MS

    # -- ZooKeeper polls --------------------------------------------------------------------
    leader_fault = t.fault in _LEADER_FAULTS
    elected = (fault_ts + round(t.election_s * 1e9)
               if leader_fault and fault_ts is not None else None)
    isr_full_at = (heal_ts + round(t.isr_full_after_heal_s * 1e9)
                   if heal_ts is not None else None)
    timeline: list[dict[str, Any]] = []
    first_elected = first_full = None
    ts = t0
    while ts <= end:
        faulted = fault_ts is not None and ts >= fault_ts
        down_now = faulted and (heal_ts is None or ts < heal_ts)
        if leader_fault and faulted:
            leader = -1 if elected is not None and ts < elected else _NEW_LEADER
        else:
            leader = _LEADER
        epoch = 0 if leader == _LEADER else (1 if leader == -1 else 2)
        short = faulted and (isr_full_at is None or ts < isr_full_at)
        isr = [b for b in _BROKERS if not (short and b == t.target_broker)]
        alive = [b for b in _BROKERS if not (down_now and b == t.target_broker)]
        timeline.append({
            "sample_ts_ns": ts, "elapsed_s": (ts - t0) / 1e9, "partition": 0,
            "leader": leader, "leader_epoch": epoch, "isr": ",".join(map(str, isr)),
            "isr_size": len(isr), "brokers_alive": ",".join(map(str, alive))})
        if leader_fault and faulted and first_elected is None and leader not in (-1, _LEADER):
            first_elected = ts
        if (heal_ts is not None and first_full is None and ts > heal_ts
                and len(isr) == len(_BROKERS)):
            first_full = ts
        ts += _POLL_NS

    # -- lag (one consumer, one partition) ------------------------------------------------
    acks_sorted = sorted(a for i, a in enumerate(ack) if a is not None and outcome[i] == "acked")
    firsts = sorted(r["receive_ts_ns"] for r in receipts if not r["duplicate"])
    lag: list[dict[str, Any]] = []
    ts = t0 + _LAG_NS
    while ts <= end:
        leo = sum(a <= ts for a in acks_sorted)
        got = sum(x <= ts for x in firsts)
        lag.append({"consumer": 0, "shard": 0, "partition": 0, "sample_ts_ns": ts,
                    "elapsed_s": (ts - t0) / 1e9, "log_end_offset": leo, "position": got,
                    "lag_msgs": max(0, leo - got), "received_msgs": got, "paused": False})
        ts += _LAG_NS
    lag_recovered = heal_ts + 600 * _MS if heal_ts is not None else None

    return {"sends": sends, "receipts": receipts, "lag": lag, "timeline": timeline,
            "verdicts": verdicts, "acks": acks_sorted, "firsts": firsts,
            "events": {"t0_ns": t0, "fault_ts_ns": fault_ts, "heal_ts_ns": heal_ts,
                       "leader_elected_ts_ns": first_elected, "isr_full_ts_ns": first_full,
                       "controller_elected_ts_ns": (
                           fault_ts + round(t.election_s * 1e9)
                           if t.fault in _CONTROLLER_FAULTS and fault_ts is not None else None),
                       "lag_recovered_ts_ns": lag_recovered},
            "clocks": {"t0_ns": t0, "measure_start_ns": t0 + round(t.warmup_s * 1e9),
                       "stop_ts_ns": stop, "drain_end_ts_ns": end, "pause": None}}


def _summary(t: FakeFaultTrial, run_id: str, f: dict[str, Any]) -> dict[str, Any]:
    """The trial summary (``kafkalab faults run --json``) by the contract's definitions."""
    v = f["verdicts"]

    def count(**eq: Any) -> int:
        return sum(all(r[k] == x for k, x in eq.items()) for r in v)

    ev = f["events"]
    fault_ts, heal_ts = ev["fault_ts_ns"], ev["heal_ts_ns"]
    acked_lost = count(verdict="acked_lost")
    since = heal_ts if heal_ts is not None else fault_ts
    after = (sum(a > since for a in f["acks"]) if since is not None else len(f["acks"]))
    window_start = f["clocks"]["measure_start_ns"]
    gap_after = fault_ts if fault_ts is not None else window_start

    def ms_since_fault(ts: int | None) -> float | None:
        return (ts - fault_ts) / 1e6 if ts is not None and fault_ts is not None else None

    errors: dict[str, int] = {}
    for s in f["sends"]:
        if s["outcome"] in ("failed", "indeterminate") and s["error"]:
            errors[s["error"]] = errors.get(s["error"], 0) + 1
    recovered = after > 0
    verdict = ("failed" if t.status != "complete" else "loss" if acked_lost
               else "not recovered" if not recovered
               else "aborted visible" if count(verdict="aborted_visible") else "ok")
    return {
        "run_id": run_id, "trial_id": t.trial_id, "profile": t.profile, "fault": t.fault,
        "acks": t.effective_acks, "trial": t.trial, "status": t.status,
        "error": None if t.status == "complete" else "fake failure",
        "rate_msgs_per_s": float(t.rate_msgs_per_s), "duration_s": float(t.duration_s),
        "fault_at_s": float(t.fault_at_s), "down_s": t.effective_down_s,
        "target_broker": t.target_broker, "target_role": t.target_role,
        "is_emulator": t.is_emulator,
        "intended": len(v), "acked": count(outcome="acked"), "failed": count(outcome="failed"),
        "indeterminate": count(outcome="indeterminate"), "unsent": count(outcome="unsent"),
        "read_back": sum(r["read_count"] > 0 for r in v), "acked_lost": acked_lost,
        "acked_lost_in_broker_logs": sum(r["verdict"] == "acked_lost"
                                         and bool(r["in_broker_logs"]) for r in v),
        "acked_lost_absent_from_logs": count(verdict="acked_lost", in_broker_logs=""),
        "failed_but_present": count(verdict="failed_but_present"),
        "indeterminate_present": count(verdict="indeterminate_present"),
        "unseen": count(verdict="unseen"),
        "duplicates": sum(r["read_count"] - 1 for r in v if r["read_count"] > 0),
        "reordered": count(reordered=True),
        "acks_after_fault": after, "recovered": recovered,
        "unavailable_ms": _longest_gap_ms(f["acks"], gap_after),
        "consumer_gap_ms": _longest_gap_ms(f["firsts"], gap_after),
        "leader_elected_ms": ms_since_fault(ev["leader_elected_ts_ns"]),
        "isr_full_ms": ms_since_fault(ev["isr_full_ts_ns"]),
        "controller_elected_ms": ms_since_fault(ev["controller_elected_ts_ns"]),
        "lag_recovered_ms": ms_since_fault(ev["lag_recovered_ts_ns"]),
        "errors_by_type": errors, "verdict": verdict,
        **({} if t.max_in_flight is None else {"max_in_flight": t.max_in_flight}),
        **({} if t.idempotence is None else {"idempotence": t.idempotence}),
        "aborted": count(outcome="aborted"), "aborted_visible": count(verdict="aborted_visible"),
        "aborted_read_uncommitted": None if t.txn_msgs is None else count(outcome="aborted"),
        "txn_committed_unacked": None if t.txn_msgs is None else 0,
        **({} if t.txn_msgs is None else {"txn_msgs": t.txn_msgs}),
    }


# --------------------------------------------------------------------------- consumer group


_RX_AFTER_ACK_NS = 2 * _MS
"""A group member receives a record 2 ms after its ack and processes it 1 ms later."""
_PROCESS_NS = _MS
_COMMIT_EVERY_NS = 500 * _MS
_SETTLE_NS = 4_000 * _MS
"""The group settled (first assignment) this long before t0."""


def _group_frames(t: FakeFaultTrial, f: dict[str, Any]) -> dict[str, Any]:
    """The consumer group of a ``kill-consumer`` / ``leave-consumer`` trial: its processed
    rows, commits, assignments, offset samples and the engine's own summary of them.

    Partition p belongs to member ``p % consumers``; member 0 (the victim) stops at the fault
    and member 1 takes its partitions over ``rebalance_pause_s`` later, starting at the
    committed offset: the victim committed every 0.5 s what it had processed, and right
    before the fault ``redelivered`` fewer (those are processed again) or
    ``lost_unprocessed`` more (those are never processed) on its first partition. The other
    members are not disturbed (each commits what it processed before the rebalance revokes
    its partitions, as a member committing after processing does). The summary comes from :func:`kafkalab.faults.deliveries
    .group_summary` over these very rows, so a test can compare the Spark aggregates with it.
    """
    import numpy as np

    from kafkalab.faults.checker import ReRead
    from kafkalab.faults.deliveries import deliveries, group_summary
    from kafkalab.faults.group_trial import group_protocol_note

    if t.redelivered and t.lost_unprocessed:
        raise ValueError(f"{t.trial_id}: one commit cannot leave both redelivered and lost")
    k, parts = t.consumers, t.partitions
    t0, fault = f["events"]["t0_ns"], f["events"]["fault_ts_ns"]
    pause_s = (t.rebalance_pause_s if t.rebalance_pause_s is not None
               else t.session_timeout_ms / 1000 if t.fault == "kill-consumer" else 0.05)
    resume = fault + round(pause_s * 1e9)
    assigned = resume - 20 * _MS  # the survivors' new assignment (revoked 10 ms before)
    rejoin = fault + round(t.rejoin_after_s * 1e9) if t.rejoin_after_s is not None else None
    moved = [p for p in range(parts) if p % k == 0]
    # the topic: (partition, offset, seq, ack) of every record read back, in offset order
    read = ReRead()
    records: dict[int, list[tuple[int, int, int]]] = {p: [] for p in range(parts)}
    acks = {s["seq"]: s["ack_ts_ns"] for s in f["sends"]}
    for v in f["verdicts"]:
        if v["read_count"] > 0:
            ack = acks[v["seq"]] or f["clocks"]["stop_ts_ns"]
            records[v["partition"]].append((v["first_read_offset"], v["seq"], ack))
    for p in range(parts):
        records[p].sort()
        for off, seq, _ in records[p]:
            read.partition.append(p)
            read.offset.append(off)
            read.seq.append(seq)
    processed: list[dict[str, Any]] = []
    committed: dict[int, int] = {}
    victim_next: dict[int, int] = {}
    for p in range(parts):
        recs = records[p]
        if p not in moved:  # the eager rebalance stops a survivor from revoke to assignment
            back = assigned + _MS * (p % k)
            stopped = [r for r in recs if back - 10 * _MS - 2 * _MS
                       <= r[2] + _RX_AFTER_ACK_NS < back + _MS]
            processed += [{"member": p % k, "incarnation": 0, "seq": seq, "partition": p,
                           "offset": off,
                           "receive_ts_ns": (back + _MS + 10_000 * stopped.index((off, seq, ack))
                                             if (off, seq, ack) in stopped
                                             else ack + _RX_AFTER_ACK_NS)}
                          for off, seq, ack in recs]
            continue
        before = [r for r in recs if r[2] + _RX_AFTER_ACK_NS < fault]
        n = len(before)
        extra = t.lost_unprocessed if p == moved[0] else 0
        again = t.redelivered if p == moved[0] else 0
        if extra + again > n:
            raise ValueError(f"{t.trial_id}: partition {p} has only {n} records before the fault")
        done = n - extra
        victim_next[p], committed[p] = done, done - again + extra
        processed += [{"member": 0, "incarnation": 0, "seq": seq, "partition": p,
                       "offset": off, "receive_ts_ns": ack + _RX_AFTER_ACK_NS}
                      for off, seq, ack in before[:done]]
        for j, (off, seq, ack) in enumerate(recs[committed[p]:]):
            rx = max(ack + _RX_AFTER_ACK_NS, resume + j * 10_000)
            processed.append({"member": 1 % k, "incarnation": 0, "seq": seq, "partition": p,
                              "offset": off, "receive_ts_ns": rx})
    for r in processed:
        r["processed_ts_ns"] = r["receive_ts_ns"] + _PROCESS_NS
    processed.sort(key=lambda r: (r["receive_ts_ns"], r["partition"], r["offset"]))
    cols = {n: np.asarray([r[n] for r in processed],
                          dtype=np.int32 if n in ("member", "incarnation", "partition")
                          else np.int64) for n in PROCESSED_SCHEMA.names}

    # -- lifecycle, assignments and commits (the members' event log) ----------------------
    events: list[dict[str, Any]] = []

    def ev(member: int, ts: int, name: str, partitions: Sequence[int] = (), **more: Any) -> None:
        events.append({"member": member, "incarnation": more.pop("incarnation", 0),
                       "ts_ns": ts, "ev": name, "partitions": list(partitions), **more})

    for m in range(k):
        ev(m, t0 - _SETTLE_NS - _MS * (k - m), "started")
    for m in range(k):
        ev(m, t0 - _SETTLE_NS + _MS * m, "assigned", [p for p in range(parts) if p % k == m])
    if t.fault == "leave-consumer":
        ev(0, fault, "leaving")
        ev(0, fault + _MS, "revoked", moved)
        ev(0, fault + 2 * _MS, "closed")
    for m in range(1, k):
        own = [p for p in range(parts) if p % k == m]
        ev(m, assigned - 10 * _MS, "revoked", own)
        ev(m, assigned + _MS * (m - 1), "assigned", sorted(own + (moved if m == 1 else [])))
    if rejoin is not None:
        ev(0, rejoin, "started", incarnation=1)
    stop = f["clocks"]["stop_ts_ns"]
    last = max([stop, *(r["processed_ts_ns"] for r in processed)]) + 100 * _MS

    def owner(p: int, ts: int) -> int:
        return 0 if p in moved and ts < fault else (1 % k if p in moved else p % k)

    ts = t0
    while ts <= last:
        by_member: dict[int, dict[str, int]] = {}
        for p in range(parts):
            m = owner(p, ts)
            if m == 0 and ts >= fault - _MS:
                continue  # the victim's last commit is the one right before the fault
            upto = [r["offset"] + 1 for r in processed if r["partition"] == p
                    and r["member"] == m and r["processed_ts_ns"] <= ts]
            if not upto:
                continue
            off = max(upto)
            if m == 0:
                off = min(off, committed[p])
            by_member.setdefault(m, {})[str(p)] = off
        for m, offsets in sorted(by_member.items()):
            ev(m, ts, "commit", ok=True, offsets=offsets, source="sync")
        ts += _COMMIT_EVERY_NS
    ev(0, fault - _MS, "commit", ok=True, offsets={str(p): committed[p] for p in moved},
       source="sync")
    for m in range(1, k):  # a survivor commits what it processed before it gives it up
        revoke = assigned - 10 * _MS
        done_by = {str(p): max(r["offset"] + 1 for r in processed if r["partition"] == p
                               and r["member"] == m and r["processed_ts_ns"] < revoke)
                   for p in range(parts) if p % k == m and any(
                       r["partition"] == p and r["member"] == m
                       and r["processed_ts_ns"] < revoke for r in processed)}
        if done_by:
            ev(m, revoke - _MS, "commit", ok=True, offsets=done_by, source="sync")
    events.sort(key=lambda e: e["ts_ns"])

    # -- the group's committed offsets, every 0.5 s ---------------------------------------
    lag: list[dict[str, Any]] = []
    ts = t0 - _LAG_NS
    while ts <= last:
        for p in range(parts):
            leo = sum(ack <= ts for _, _, ack in records[p])
            done_at = [int(e["offsets"][str(p)]) for e in events if e["ev"] == "commit"
                       and e["ts_ns"] <= ts and str(p) in e["offsets"]]
            cmt = done_at[-1] if done_at else None
            lag.append({"sample_ts_ns": ts, "elapsed_s": (ts - t0) / 1e9, "partition": p,
                        "committed_offset": cmt, "log_end_offset": leo,
                        "lag_msgs": max(0, leo - (cmt or 0))})
        ts += _LAG_NS

    commit_rows = [{"member": e["member"], "incarnation": e["incarnation"],
                    "commit_ts_ns": e["ts_ns"], "partition": int(p), "offset": int(o),
                    "ok": True, "error": None, "source": e["source"]}
                   for e in events if e["ev"] == "commit" for p, o in e["offsets"].items()]
    assign_rows = [{"member": e["member"], "incarnation": e["incarnation"],
                    "event_ts_ns": e["ts_ns"], "event": e["ev"],
                    "partitions": ",".join(map(str, e["partitions"]))}
                   for e in events if e["ev"] != "commit"]
    warm = np.asarray([v["is_warmup"] for v in f["verdicts"]], dtype=bool)
    deliv = deliveries(len(f["verdicts"]), warm, read, cols)
    gs = group_summary(read=read, processed=cols, events=events, fault_ts_ns=fault,
                       rejoin_ts_ns=rejoin, fault=t.fault, lag_rows=lag,
                       keeps_position=t.client == "kafka-python")
    victim_end = gs.pop("victim_end_ts_ns")
    summary = {
        "commit": t.commit, "client": t.client, "consumers": k,
        "session_timeout_ms": t.session_timeout_ms,
        "heartbeat_interval_ms": t.heartbeat_interval_ms,
        "auto_commit_interval_ms": t.auto_commit_interval_ms if t.commit == "auto" else None,
        "batch_msgs": 100, "batch_wait_ms": 100, "rejoin_after_s": t.rejoin_after_s,
        "partitions": parts, "group_protocol": group_protocol_note((0, 9)), **gs, "drained": True,
        "deliveries": {d: int((deliv["delivery"] == d).sum()) for d in DELIVERIES},
    }
    return {"processed": cols, "deliveries": deliv, "commits": commit_rows,
            "assignments": assign_rows, "group_lag": lag, "summary": summary,
            "events": {"rejoin_ts_ns": rejoin, "victim_end_ts_ns": victim_end,
                       "drained": True}, "end_ts_ns": last}


def _cluster(t: FakeFaultTrial) -> dict[str, Any]:
    return {"flavor": "external" if t.is_emulator else FAULT_CLUSTER.name,
            "version": "0.2.3" if t.is_emulator else FAULT_CLUSTER.version,
            "is_emulator": t.is_emulator,
            "broker_count": 1 if t.is_emulator else 3}


def _cell_doc(t: FakeFaultTrial, run_id: str, run_date: str, topic: str,
              f: dict[str, Any], summary: dict[str, Any]) -> dict[str, Any]:
    """``cell.json`` as the load engine writes it (one consumer, shard 0)."""
    return {
        "schema_version": 1, "cell_id": t.trial_id, "run_id": run_id, "run_date": run_date,
        "status": t.status, "error": summary["error"],
        "spec": {"client": t.client, "payload": t.payload, "encoding": "raw",
                 "profile": t.profile, "acks": t.effective_acks, "consumers": 1,
                 "rate_msgs_per_s": float(t.rate_msgs_per_s),
                 "duration_s": float(t.duration_s), "warmup_s": float(t.warmup_s),
                 "partitions": t.partitions, "consumer_mode": "assign",
                 "consumers_per_shard": 1, "drain_s": 2.0, "lag_interval_s": 0.5},
        "acks": t.effective_acks, "payload_bytes": 1056, "topic": topic,
        "partitions": t.partitions, "cluster": _cluster(t), "client": t.client,
        "client_version": "2.16.1", **f["clocks"], "processes": [], "client_bound": False,
        "broker_cpu_frac": None, "hosts": {"fakehost": {"cpus": 2}},
        "summary": {"cell_id": t.trial_id, "profile": t.profile, "acks": t.effective_acks,
                    "status": t.status},
    }


def _run_date(run_id: str) -> str:
    started = run_id_time(run_id)
    return (started or dt.datetime(2026, 11, 22, tzinfo=dt.UTC)).strftime("%Y-%m-%d")


def write_fake_fault_run(data_dir: str | Path, run_id: str,
                         trials: Sequence[FakeFaultTrial] | None = None, *,
                         run_date: str | None = None, manifest: bool = True) -> list[Path]:
    """Write a fake fault run under ``data_dir`` and return its trial directories.

    ``trials`` default to :func:`standard_trials`. With ``manifest``,
    ``runs/<run_id>.json`` (``kind: "faults"``) lists the trials' summaries. ``run_date``
    defaults to the date in the run id. Trials run one after another on the clock.
    """
    lab = LabData(data_dir)
    date = run_date or _run_date(run_id)
    trials = list(standard_trials() if trials is None else trials)
    dirs: list[Path] = []
    summaries: list[dict[str, Any]] = []
    t0 = _MONOTONIC_START_NS
    for t in trials:
        tdir = (lab.root / "faults" / f"run_date={date}" / f"run_id={run_id}"
                / f"trial={t.trial_id}")
        f = _trial_frames(t, t0)
        summary = _summary(t, run_id, f)
        group = _group_frames(t, f) if t.is_consumer_fault else None
        if group is not None:
            summary.update(group["summary"])
            f["events"].update(group["events"])
            f["clocks"]["drain_end_ts_ns"] = max(f["clocks"]["drain_end_ts_ns"],
                                                 group["end_ts_ns"])
            _write(tdir / "processed.parquet", group["processed"], PROCESSED_SCHEMA)
            _write(tdir / "deliveries.parquet", group["deliveries"], DELIVERIES_SCHEMA)
            for name, schema in (("commits", COMMITS_SCHEMA),
                                 ("assignments", ASSIGNMENTS_SCHEMA),
                                 ("group_lag", GROUP_LAG_SCHEMA)):
                _write(tdir / f"{name}.parquet", _columns(group[name], schema), schema)
        topic = f"kl-faults-{safe_name(run_id)}-{t.trial_id}"
        _write(tdir / "sends.parquet", _columns(f["sends"], SENDS_SCHEMA), SENDS_SCHEMA)
        _write(tdir / "receipts-000.parquet", _columns(f["receipts"], RECEIPTS_SCHEMA),
               RECEIPTS_SCHEMA)
        _write(tdir / "lag-000.parquet", _columns(f["lag"], LAG_SCHEMA), LAG_SCHEMA)
        _write(tdir / "timeline.parquet", _columns(f["timeline"], TIMELINE_SCHEMA),
               TIMELINE_SCHEMA)
        _write(tdir / "verdicts.parquet", _columns(f["verdicts"], VERDICTS_SCHEMA),
               VERDICTS_SCHEMA)
        atomic_write_json(tdir / "cell.json", _cell_doc(t, run_id, date, topic, f, summary),
                          sort_keys=False)
        atomic_write_json(tdir / "trial.json", {
            "schema_version": 1, "trial_id": t.trial_id, "run_id": run_id, "run_date": date,
            "status": t.status, "error": summary["error"], "spec": t.spec(),
            "acks": t.effective_acks, "topic": topic, "cluster": _cluster(t),
            "target": (None if t.is_consumer_fault else
                       {"broker": t.target_broker, "role": t.target_role, "partition": 0}),
            "events": f["events"], "summary": summary,
        }, sort_keys=False)
        dirs.append(tdir)
        summaries.append(summary)
        t0 = int(f["clocks"]["drain_end_ts_ns"]) + 1_000_000_000
    if manifest:
        statuses = {s["status"] for s in summaries}
        lab.write_manifest({
            "run_id": run_id, "kind": "faults", "schema_version": 1,
            "status": "complete" if statuses <= {"complete"} else "incomplete",
            "started_at": f"{date}T00:00:00+00:00", "ended_at": f"{date}T00:10:00+00:00",
            "command": "fake_fault_samples", "run_date": date,
            "workload": {"kind": "faults", "name": "fake",
                         "trials": [asdict(t) for t in trials]},
            "cluster": _cluster(trials[0]) if trials else {},
            "trials": summaries, "error": None, "fake": True,
        })
    return dirs


# --------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """Write the standard fake fault run (``--help``); prints the trial directories."""
    p = argparse.ArgumentParser(prog="fake_fault_samples", description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--durability-loss", type=int, default=0,
                   help="acked messages the durability sigkill-leader trial loses")
    p.add_argument("--consumer-faults", action="store_true",
                   help="add the standard consumer-fault trials (kill/leave-consumer)")
    a = p.parse_args(argv)
    trials = standard_trials(a.durability_loss)
    if a.consumer_faults:
        trials += consumer_trials()
    for d in write_fake_fault_run(a.data_dir, a.run_id, trials):
        print(d)
    print(json.dumps({"run_id": a.run_id, "trials": [t.trial_id for t in trials]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
