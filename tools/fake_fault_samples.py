"""A fake fault run (made up, never measured) in the layout of the "fault samples" dataset.

Writes what the fault engine writes for one run (``/tmp/issue9/contract.md``, "Raw files";
``docs/metrics-schema.md``, "Fault samples")::

    <data_dir>/faults/run_date=<d>/run_id=<id>/trial=<trial_id>/
        sends.parquet  receipts-000.parquet  lag-000.parquet  cell.json   (load cell files)
        timeline.parquet  verdicts.parquet  trial.json
    <data_dir>/runs/<run_id>.json            manifest, kind "faults"

Each trial (:class:`FakeFaultTrial`) says what the checker finds: acked messages lost (and
how many of them are still in a broker's log), failed and indeterminate sends (and how many
of them were written anyway), unsent messages, duplicates, reordered messages. The fault
stops the acks for ``outage_s``; a leader fault leaves the partition without a leader for
``election_s``, then broker 2 leads; the ISR is full again ``isr_full_after_heal_s`` after the
heal. Everything is deterministic (no randomness). The trial's ``summary`` is computed from
the very rows written, by the contract's definitions, so a test can compare the Spark
aggregates with it.

Used by the Spark tests (``tests/spark/test_*faults*.py``) and by anyone who needs a fault
run without a cluster::

    .venv/bin/python -m tools.fake_fault_samples --data-dir /tmp/lab --run-id RUN \
        [--durability-loss 2]

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

from kafkalab.faults.files import TIMELINE_SCHEMA, VERDICTS_SCHEMA
from kafkalab.load.files import LAG_SCHEMA, RECEIPTS_SCHEMA, SENDS_SCHEMA
from kafkalab.run_ids import run_id_time
from kafkalab.store import LabData, atomic_file, atomic_write_json, safe_name

__all__ = [
    "TIMELINE_SCHEMA",
    "VERDICTS_SCHEMA",
    "FakeFaultTrial",
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

    # -- spec ------------------------------------------------------------------------

    @property
    def effective_acks(self) -> str:
        return self.acks or _PROFILE_ACKS.get(self.profile, "1")

    @property
    def trial_id(self) -> str:
        """``kafkalab.faults.spec.FaultTrialSpec.trial_id`` (not built from the spec itself:
        the fake's trials are shorter than the engine's spec allows)."""
        return safe_name(f"{self.profile}-{self.fault}-acks-{self.effective_acks}-t{self.trial}")

    @property
    def effective_down_s(self) -> float | None:
        if self.fault == "none":
            return None
        return self.down_s if self.down_s is not None else _DEFAULT_DOWN_S

    @property
    def target_role(self) -> str:
        if self.fault == "none":
            return "none"
        return "follower" if self.fault == "kill-follower" else "leader"

    @property
    def target_broker(self) -> int | None:
        return {"none": None, "follower": _FOLLOWER}.get(self.target_role, _LEADER)

    def spec(self) -> dict[str, Any]:
        """The trial's spec as ``trial.json`` holds it (FaultTrialSpec's fields)."""
        return {
            "profile": self.profile, "fault": self.fault, "acks": self.acks,
            "trial": self.trial, "rate_msgs_per_s": float(self.rate_msgs_per_s),
            "duration_s": float(self.duration_s), "warmup_s": float(self.warmup_s),
            "fault_at_s": float(self.fault_at_s), "down_s": self.effective_down_s,
            "payload": self.payload, "partitions": self.partitions, "client": self.client,
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
    out_end = fault_ts + round(t.outage_s * 1e9) if fault_ts is not None else None
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
    failed_idx = [i for i in range(n) if outcome[i] == "failed"]
    indet_idx = [i for i in range(n) if outcome[i] == "indeterminate"]
    present = set(failed_idx[:t.failed_present]) | set(indet_idx[:t.indeterminate_present])

    # -- verdicts -------------------------------------------------------------------------
    verdicts: list[dict[str, Any]] = []
    receipts: list[dict[str, Any]] = []
    acked_offset = read_offset = 0
    target = str(t.target_broker) if t.target_broker is not None else ""
    for i in range(n):
        is_acked = outcome[i] == "acked"
        if is_acked and i in lost:
            verdict, reads = "acked_lost", 0
        elif is_acked:
            verdict, reads = "ok", 2 if i in dup else 1
        elif i in present:
            verdict = "failed_but_present" if outcome[i] == "failed" else "indeterminate_present"
            reads = 1
        else:
            verdict, reads = "unseen", 0
        row = {
            "seq": i, "is_warmup": warm[i], "outcome": outcome[i], "partition": 0,
            "acked_offset": acked_offset if is_acked else -1, "read_count": reads,
            "first_read_offset": read_offset if reads else -1, "reordered": i in reord,
            "verdict": verdict,
            "in_broker_logs": ((target if lost.index(i) < t.lost_in_logs else "")
                               if verdict == "acked_lost" else None),
        }
        verdicts.append(row)
        if is_acked:
            acked_offset += 1
        for copy in range(reads):
            acked_at = ack[i]
            rx = (acked_at if acked_at is not None else send[i]) + _RECEIVE_AFTER_ACK_NS
            rx += copy * 100_000
            receipts.append({
                "consumer": 0, "shard": 0, "seq": i, "producer_id": 0, "partition": 0,
                "offset": read_offset + copy, "intended_ts_ns": intended[i],
                "send_ts_ns": send[i], "receive_ts_ns": rx,
                "e2e_latency_ms": (rx - send[i]) / 1e6,
                "service_e2e_latency_ms": (rx - intended[i]) / 1e6,
                "duplicate": copy > 0, "after_stop": False, "is_warmup": warm[i],
            })
        read_offset += reads

    sends = [{
        "seq": i, "producer_id": 0, "is_warmup": warm[i], "intended_ts_ns": intended[i],
        "send_ts_ns": None if outcome[i] == "unsent" else send[i], "ack_ts_ns": ack[i],
        "outcome": outcome[i], "error": error[i], "partition": 0,
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
               else "ok" if recovered else "not recovered")
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
        "lag_recovered_ms": ms_since_fault(ev["lag_recovered_ts_ns"]),
        "errors_by_type": errors, "verdict": verdict,
    }


def _cluster(t: FakeFaultTrial) -> dict[str, Any]:
    return {"flavor": "noida" if t.is_emulator else "kafka09",
            "version": "0.2.3" if t.is_emulator else "0.9.0.1", "is_emulator": t.is_emulator,
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
            "target": {"broker": t.target_broker, "role": t.target_role, "partition": 0},
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
    a = p.parse_args(argv)
    trials = standard_trials(a.durability_loss)
    for d in write_fake_fault_run(a.data_dir, a.run_id, trials):
        print(d)
    print(json.dumps({"run_id": a.run_id, "trials": [t.trial_id for t in trials]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
