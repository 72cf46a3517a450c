"""Fault runs: trials of the open-loop load cell with a broker fault, checked afterwards.

One trial (:func:`run_fault_trial`):

1. the 3-broker fault cluster is up (:func:`kafkalab.faults.inject.ensure_fault_cluster`) and a
   fresh topic with the profile's replication factor and topic settings has its full ISR;
2. the target is chosen from the partition state (partition 0's leader, or a follower), read
   where the cluster's flavor says (ZooKeeper on Kafka 0.9, else the Admin API);
3. the load engine runs one producer at the fixed rate and one live consumer
   (:func:`kafkalab.load.cell.run_load_cell`, files in the trial's directory) while the
   :class:`~kafkalab.faults.inject.Injector` breaks and heals the target on schedule and the
   :class:`~kafkalab.faults.monitor.Monitor` records leader and ISR every 100 ms;
4. every broker is healed, the trial waits for the full ISR, a fresh consumer re-reads the
   topic from offset 0 and the checker judges every message; acked messages it did not find are
   looked up in the brokers' log segments (DumpLogSegments);
5. ``timeline.parquet``, ``verdicts.parquet`` and ``trial.json`` are written (also when a step
   failed: what was measured is kept) and the topic is deleted.

A loss is a finding: nothing is retried or dropped to make it go away.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from kafkalab.attempts import attempt_path, final_path, recover, replaces, settle
from kafkalab.cluster.broker_config import broker_settings
from kafkalab.cluster.descriptor import public_view
from kafkalab.cluster.embedded import EmbeddedCluster
from kafkalab.cluster.features import parse_version
from kafkalab.cluster.flavors import FAULT_CLUSTER
from kafkalab.cluster.java import ensure_java
from kafkalab.config.mapping import check_profile
from kafkalab.config.models import Profile
from kafkalab.config.properties import TABLES as PROPERTY_TABLES
from kafkalab.config.properties import check_cluster
from kafkalab.errors import ClusterError, ConfigError, RunError
from kafkalab.faults import checker, files
from kafkalab.faults.inject import (
    FAULT_BROKERS,
    Injector,
    Target,
    ensure_fault_cluster,
    pick_target,
    wait_isr_full,
)
from kafkalab.faults.monitor import Monitor, first_full_isr, first_new_leader
from kafkalab.faults.spec import FaultTrialSpec
from kafkalab.faults.summary import trial_summary
from kafkalab.kinds import FAULTS
from kafkalab.load import files as load_files
from kafkalab.load.cell import effective_profile, run_load_cell
from kafkalab.load.files import CellDoc
from kafkalab.load.producer import SEND_KEY
from kafkalab.load.run import close_run, parts_manifest, planned_parts, reopened_run
from kafkalab.load.shard import plan_path
from kafkalab.load.spec import LoadCellSpec
from kafkalab.paths import default_descriptor_path, images_dir
from kafkalab.payloads import load_body
from kafkalab.progress import Progress, noop
from kafkalab.samples import Manifest, utc_now_iso
from kafkalab.scenarios.base import now_ns
from kafkalab.store import LabData, atomic_write_json, read_json

__all__ = ["FaultRequest", "FaultResult", "execute_faults", "finish_fault_run",
           "run_fault_trial", "sends_by_seq", "start_fault_run", "validate_trials"]

CRC_CONTROLS = 20
"""Messages the re-read found that the log lookup must also find (its self-check)."""

TOPIC_DELETE_TIMEOUT_S = 30.0
"""How long a trial waits for the cluster to forget its deleted topic."""

SETTLE_TIMEOUT_S = 90.0
"""After the schedule, how long the trial waits for every broker back in the ISR."""


@dataclass
class FaultRequest:
    """A fault run: trials (profile × fault × trial number), where to write, which cluster."""

    trials: list[FaultTrialSpec]
    data_dir: Path | str | None = None
    run_id: str | None = None
    cluster_lab: Path | str | None = None
    command: str = ""
    owner_kind: str = "cli"
    keep_topics: bool = False
    logical_date: str | None = None
    """The DAG run's logical date (ISO 8601 UTC), recorded in the manifest; None from the CLI."""


@dataclass
class FaultResult:
    run_id: str
    status: str
    trials: list[dict[str, Any]] = field(default_factory=list)
    manifest_path: Path | None = None


def trial_profiles(trials: list[FaultTrialSpec]) -> list[Profile]:
    """Each trial's effective profile (its profile with the trial's acks and max-in-flight),
    in the trials' order: read once here, then passed on as typed values.

    Raises:
        ConfigError: an unknown or invalid profile.
    """
    return [effective_profile(spec.load_cell()) for spec in trials]


def validate_trials(trials: list[FaultTrialSpec]) -> list[Profile]:
    """Refuse what cannot run before anything is touched: an unknown profile, a profile the
    trial's client or the fault cluster's Kafka cannot take (a property, zstd), an rf above
    the fault cluster's three brokers, a follower fault on an rf-1 profile. Returns the
    trials' profiles (:func:`trial_profiles`).

    Raises:
        ConfigError: one line naming the problem.
    """
    if not trials:
        raise ConfigError("no trial to run")
    profiles = trial_profiles(trials)
    for spec, prof in zip(trials, profiles, strict=True):
        check_profile(prof, [spec.client])
        # the fault cluster is always the lab's own (FAULT_CLUSTER): what its Kafka can take
        check_cluster(prof.name, prof.producer.compression,
                      {key: getattr(prof, key) for key in PROPERTY_TABLES},
                      parse_version(FAULT_CLUSTER.version))
        rf = prof.topic.replication_factor
        if rf > FAULT_BROKERS:
            raise ConfigError(f"profile {spec.profile} needs replication factor {rf} but the "
                              f"fault cluster has {FAULT_BROKERS} brokers")
        if spec.is_consumer_fault:
            try:
                spec.check_group_timeline(
                    spec.effective_session_timeout_ms(prof.consumer.session_timeout_ms))
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        if spec.is_controller_fault and not FAULT_CLUSTER.has_controller_quorum:
            raise ConfigError(f"fault {spec.fault} needs a cluster with a controller quorum "
                              f"(KRaft); the fault cluster is {FAULT_CLUSTER.label}")
        if spec.fault in ("kill-follower", "lossy-leader-crash") and rf < 2:
            raise ConfigError(f"fault {spec.fault} needs a follower, but profile {spec.profile} "
                              f"has replication factor {rf} (use durability or availability)")
    return profiles


def start_fault_run(req: FaultRequest, progress: Progress = noop) -> dict[str, Any]:
    """Validate the trials, start (or reuse) the fault cluster, write the manifest (kind
    ``faults``, status ``running``; a re-opened run keeps its earlier trials). Returns
    ``{"run_id", "run_date", "trials"}``."""
    profiles = validate_trials(req.trials)
    lab = LabData(req.data_dir)
    lab.refuse_live_owner(req.run_id, req.owner_kind)  # cheap checks before the cluster
    d = ensure_fault_cluster(req.cluster_lab, progress,
                             links=any(t.needs_links for t in req.trials)).descriptor
    with lab.starting(req.run_id, req.owner_kind):
        run_id, previous = reopened_run(lab, req.run_id, FAULTS, "fault")
        specs = [t.model_dump() for t in req.trials]
        manifest = parts_manifest(
            run_id, previous, FAULTS, command=req.command,
            workload={"kind": FAULTS.name, "name": "faults",
                      "trials": planned_parts(previous, "trials", specs)},
            profiles={t.profile: prof.model_dump()
                      for t, prof in zip(req.trials, profiles, strict=True)},
            scenarios=sorted({t.client for t in req.trials}),
            payloads=sorted({t.payload for t in req.trials}),
            cluster=public_view(d), owner_kind=req.owner_kind, logical_date=req.logical_date,
            broker_settings=broker_settings(d))
        manifest.write(lab.root)
    return {"run_id": run_id, "run_date": manifest.run_date, "trials": specs}


def _summary_head(spec: FaultTrialSpec, run_id: str, trial_id: str, acks: str) -> dict[str, Any]:
    return {"run_id": run_id, "trial_id": trial_id, "profile": spec.profile, "fault": spec.fault,
            "acks": acks, "trial": spec.trial, "status": "failed", "error": None,
            "rate_msgs_per_s": spec.rate_msgs_per_s, "duration_s": spec.duration_s,
            "fault_at_s": spec.fault_at_s, "down_s": spec.effective_down_s,
            "target_broker": None, "target_role": None, "is_emulator": False,
            "client": spec.client, "txn_msgs": spec.txn_msgs,
            "txn_abort_every": spec.txn_abort_every}


def _verdict(s: dict[str, Any]) -> str:
    if s.get("status") != "complete":
        return "failed"
    if s.get("commit"):  # a consumer fault: the group's delivery guarantee is judged
        if s.get("reread_agrees") is False:
            return "check disagrees"
        if (s.get("acked_lost") or 0) > 0 or (s.get("commit") == "after"
                                                and (s.get("lost_unprocessed") or 0) > 0):
            return "loss"
        return "ok"
    if s.get("fault") != "none" and not s.get("recovered"):
        return "not recovered"
    if (s.get("acked_lost") or 0) > 0:
        return "loss"
    return "aborted visible" if (s.get("aborted_visible") or 0) > 0 else "ok"


@dataclass
class _Trial:
    """One trial while it runs: where it writes, what it has measured so far."""

    spec: FaultTrialSpec
    prof: Profile
    cluster: EmbeddedCluster
    lab: LabData
    run_id: str
    tdir: Path
    topic: str
    doc: dict[str, Any]
    """``trial.json`` as it will be written."""
    summary: dict[str, Any]
    """The trial's summary (the ``--json`` object), filled as it runs."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    """The partition timeline's rows."""

    @property
    def rf(self) -> int:
        return self.prof.topic.replication_factor

    @property
    def descriptor_path(self) -> Path:
        return default_descriptor_path(self.cluster.lab)


def _refuse_another_spec(final: Path, run_id: str, trial_id: str, spec: FaultTrialSpec) -> None:
    """A trial id names one measurement of a run: re-running the same spec replaces it (a
    retry), another spec under the same id would replace a different experiment's evidence.

    Raises:
        ConfigError: ``final`` holds a trial of this id measured with another spec (the fields
            that differ are named; fields only one of the two specs has are not compared).
    """
    try:
        doc = read_json(files.trial_json_path(final))
    except (OSError, ValueError):
        return  # unreadable: the attempt rules (recover/settle) decide what happens to it
    earlier = doc.get("spec") if isinstance(doc, dict) else None
    if not isinstance(earlier, dict):
        return
    now = spec.model_dump(mode="json")
    differ = sorted(k for k in earlier.keys() & now.keys() if earlier[k] != now[k])
    if differ:
        raise ConfigError(
            f"trial {trial_id} of run {run_id} was measured with another spec (differs in "
            f"{', '.join(differ)}): give this one a trial number of its own (trial=N), "
            "or a new run")


def _open_trial(lab: LabData, run_id: str, spec: FaultTrialSpec, prof: Profile,
                cluster: EmbeddedCluster) -> _Trial:
    """The trial's attempt directory (:func:`kafkalab.attempts.attempt_path` of its
    ``trial=<id>/``: an earlier measurement of the trial stays until this one is settled in
    :func:`_close_trial`), topic name and first ``trial.json`` (status ``running``)."""
    manifest = Manifest.load(lab.root, run_id)
    acks = prof.producer.acks
    trial_id = spec.trial_id(acks)
    final = files.trial_dir(lab.root, manifest.run_date, run_id, trial_id)
    final.parent.mkdir(parents=True, exist_ok=True)
    recover(final)
    _refuse_another_spec(final, run_id, trial_id, spec)
    tdir = attempt_path(final)
    tdir.mkdir()
    topic = f"klab-fault-{trial_id}-{os.urandom(3).hex()}"
    summary = _summary_head(spec, run_id, trial_id, acks)
    summary.update(max_in_flight=prof.producer.max_in_flight, retries=prof.producer.retries,
                   idempotence=str(prof.producer_properties.get("enable.idempotence",
                                                                "false")).lower() == "true")
    d = cluster.descriptor
    doc: dict[str, Any] = {"schema_version": files.FAULT_SCHEMA_VERSION, "trial_id": trial_id,
                           "run_id": run_id, "run_date": manifest.run_date, "status": "running",
                           "error": None, "spec": spec.model_dump(), "acks": acks, "topic": topic,
                           "cluster": {**public_view(d), "is_emulator": d.is_emulator},
                           "target": None, "events": {}, "actions": [], "started_at": utc_now_iso(),
                           "summary": summary}
    atomic_write_json(files.trial_json_path(tdir), doc)
    return _Trial(spec, prof, cluster, lab, run_id, tdir, topic, doc, summary)


def run_fault_trial(data_dir: Path | str | None, run_id: str, spec: FaultTrialSpec | dict[str, Any],
                    cluster_lab: Path | str | None = None, progress: Progress = noop,
                    keep_topic: bool = False) -> dict[str, Any]:
    """Run one trial of a started fault run; returns its summary (the ``--json`` object).

    The trial's topic (``trial.json``'s ``topic``) is deleted at the end unless ``keep_topic``
    (to inspect it with other tools).

    Raises:
        ConfigError, ClusterError: bad input or a cluster that cannot be used (nothing measured).
        RunError: the trial failed while measuring (its files are kept).
    """
    spec = spec if isinstance(spec, FaultTrialSpec) else FaultTrialSpec(**spec)
    (prof,) = validate_trials([spec])
    cluster = ensure_fault_cluster(cluster_lab, progress, links=spec.needs_links)
    t = _open_trial(LabData(data_dir), run_id, spec, prof, cluster)
    summary = t.summary
    what = (f"{spec.fault} of 1 of {spec.consumers} members (commit {spec.effective_commit})"
            if spec.is_consumer_fault else spec.fault)
    lasting = ("the session timeout + 4 s" if spec.fault == "cut-consumer" and spec.down_s is None
               else f"{spec.effective_down_s:g} s")
    progress(f"{summary['trial_id']}: {what} at {spec.fault_at_s:g} s for "
             f"{lasting}, {spec.rate_msgs_per_s:g} msg/s × "
             f"{spec.duration_s:g} s, rf {t.rf}, acks {prof.producer.acks}")

    from kafkalab.topics import TopicSpec, provision_topics

    try:
        provision_topics(cluster.descriptor, [TopicSpec(
            name=t.topic, partitions=spec.partitions, replication_factor=t.rf,
            configs=prof.topic.kafka_configs())])
        _wait_full_isr(t)
        if spec.is_consumer_fault:
            _run_consumer_fault(t, progress)
        else:
            _run_broker_fault(t, progress)
        summary["status"] = "complete" if t.doc["error"] is None else "failed"
        summary["error"] = t.doc["error"]
    except KeyboardInterrupt:
        summary["status"], summary["error"] = "interrupted", "interrupted (Ctrl-C): what was measured is kept"
        raise
    except (ConfigError, ClusterError, RunError) as exc:
        summary["error"] = str(exc)
        raise
    except Exception as exc:
        summary["error"] = f"{type(exc).__name__}: {exc}"
        raise RunError(f"{summary['trial_id']}: {summary['error']}") from exc
    finally:
        _close_trial(t, keep_topic, progress)
    _say_outcome(summary, progress)
    return summary


def _wait_full_isr(t: _Trial) -> None:
    """Wait until the new topic has every replica in sync.

    Raises:
        ClusterError: it did not within :data:`SETTLE_TIMEOUT_S`.
    """
    with t.cluster.partition_reader() as reader:
        if wait_isr_full(reader, t.topic, t.spec.partitions, t.rf, SETTLE_TIMEOUT_S) is None:
            raise ClusterError(f"topic {t.topic} did not get {t.rf} in-sync replicas within "
                               f"{SETTLE_TIMEOUT_S:.0f} s")


def _run_consumer_fault(t: _Trial, progress: Progress) -> None:
    """A consumer-group fault (:func:`kafkalab.faults.group_trial.run_group_trial`)."""
    from kafkalab.faults.group_trial import run_group_trial

    run_group_trial(t.lab.root, t.run_id, t.cluster.descriptor, t.descriptor_path, t.tdir,
                    t.topic, t.spec, t.prof, t.doc, t.summary, progress,
                    check=lambda events: _check(t, events, progress))


def _tagged(t: _Trial, cell: LoadCellSpec) -> LoadCellSpec:
    """The trial's load cell, its records tagged with their seq in a header where the brokers'
    logs keep no per-record CRC (Kafka 0.11+): how :func:`_locate` finds a lost message in
    them."""
    features = t.cluster.flavor.features(t.cluster.descriptor)
    if features.record_headers and not features.record_crc_in_log:
        return cell.model_copy(update={"seq_header": True})
    return cell


def _run_broker_fault(t: _Trial, progress: Progress) -> None:
    """A broker fault: pick the target, run the load cell while the injector breaks and heals
    it and the monitor records the partitions, wait for the full ISR, then judge every
    message (:func:`_check`)."""
    spec, summary = t.spec, t.summary
    with t.cluster.partition_reader() as reader:
        target = pick_target(reader, spec, t.topic, t.rf, t.cluster)
    t.doc["target"] = {"broker": target.broker, "role": target.role,
                       "partition": target.partition, "leader_before": target.leader,
                       "isr_before": list(target.isr)}
    summary.update(target_broker=target.broker, target_role=target.role)
    injector = Injector(spec, target, t.cluster, progress, topic=t.topic)
    monitor: Monitor | None = Monitor(t.cluster.partition_reader, t.topic, spec.partitions).start()
    interrupted = False
    try:
        try:
            run_load_cell(t.lab.root, t.run_id, _tagged(t, spec.load_cell()), t.descriptor_path,
                          progress, provision=False, topic=t.topic, cell_path=t.tdir,
                          on_start=injector.arm)
        except RunError as exc:
            t.doc["error"] = str(exc)  # the live consumer's trouble; the checker still judges
        except KeyboardInterrupt:
            interrupted = True
        injector.join(spec.duration_s + 60)
        injector.heal_all()
        progress(f"  waiting for {t.rf} in-sync replicas (up to {SETTLE_TIMEOUT_S:.0f} s)")
        events: dict[str, Any] = dict(injector.events)
        with t.cluster.partition_reader() as reader:
            wait_isr_full(reader, t.topic, spec.partitions, t.rf, SETTLE_TIMEOUT_S)
        assert monitor is not None
        t.rows, monitor = monitor.stop(), None
        events.update(_recovery_events(spec, target, t.rf, events, t.rows))
        events["producer_saw_new_leader_ts_ns"] = _producer_saw_new_leader(t, target, events)
        if spec.is_link_fault:
            # a cut leader that also led the controller quorum is a compound fault: the
            # others must first elect a new active controller before anyone can fence it
            led = injector.quorum_leader_at_fault
            t.doc["target"]["led_quorum"] = summary["target_led_quorum"] = (
                None if led is None else led == target.broker)
        t.doc["events"], t.doc["actions"] = events, injector.actions
        if injector.error:
            raise RunError(f"{summary['trial_id']}: fault injection failed: {injector.error}")
        if interrupted:
            raise KeyboardInterrupt
        progress("  re-reading the topic from offset 0")
        _check(t, events, progress)
    finally:
        if monitor is not None:
            t.rows = monitor.stop()
        injector.heal_all()


def _producer_saw_new_leader(t: _Trial, target: Target, events: dict[str, Any]) -> int | None:
    """When the producer's own client first named a leader of partition 0 other than the one
    before the fault (``cell.json``'s ``producer_leader_view``, :mod:`kafkalab.load.client_view`);
    None when the target was not the leader, the producer was not watched, or it never did."""
    fault_ts = events.get("fault_ts_ns")
    meta = CellDoc.read(t.tdir)
    view = meta.producer_leader_view if meta is not None else None
    if fault_ts is None or target.role != "leader" or not view:
        return None
    return next((int(ts) for ts, leader in view
                 if ts > fault_ts and leader not in (target.leader, -1)), None)


def _recovery_events(spec: FaultTrialSpec, target: Target, rf: int, events: dict[str, Any],
                     rows: list[dict[str, Any]]) -> dict[str, int | None]:
    """When a new leader was seen and when the ISR was whole again (from the timeline)."""
    fault_ts = events.get("fault_ts_ns")
    if fault_ts is None or spec.fault == "none":
        return {"leader_elected_ts_ns": None, "isr_full_ts_ns": None}
    elected = (first_new_leader(rows, int(fault_ts), target.leader)
               if target.role == "leader" else None)
    if spec.is_link_fault:
        # the timeline's answers may come from the cut leader itself, which names itself
        # until the heal: the election is what the majority side itself says
        elected = events.get("majority_sees_new_leader_ts_ns")
    return {
        "leader_elected_ts_ns": elected,
        "isr_full_ts_ns": first_full_isr(rows, int(fault_ts), rf, spec.partitions,
                                         events.get("heal_ts_ns")),
    }


def _close_trial(t: _Trial, keep_topic: bool, progress: Progress) -> None:
    """Whatever happened: write the timeline and the final ``trial.json`` (what was measured
    is kept), then delete the topic (unless ``keep_topic``)."""
    _write_timeline(t.tdir, t.rows, (t.doc.get("events") or {}).get("t0_ns"))
    summary = t.summary
    summary["verdict"] = _verdict(summary)
    t.doc["status"], t.doc["error"] = summary["status"], summary["error"]
    t.doc["summary"], t.doc["ended_at"] = summary, utc_now_iso()
    atomic_write_json(files.trial_json_path(t.tdir), t.doc)
    _settle_trial(t, progress)
    if not keep_topic:
        _delete_topic(t.cluster, t.topic, progress)


def _settle_trial(t: _Trial, progress: Progress) -> None:
    """The attempt takes the trial's place unless an earlier complete trial would be lost
    (:mod:`kafkalab.attempts`); ``t.tdir`` then names where the attempt's files are."""
    final = final_path(t.tdir)
    earlier = read_json(files.trial_json_path(final)) if final.is_dir() else None
    earlier_complete = isinstance(earlier, dict) and earlier.get("status") == "complete"
    replace = replaces(earlier_complete=earlier_complete,
                       attempt_complete=t.doc["status"] == "complete", attempt_has_data=True)
    kept = settle(final, replace=replace)
    if kept is None:
        t.tdir = final
        return
    t.tdir = kept
    progress(f"  {t.summary['trial_id']}: this attempt ended {t.doc['status']}; the earlier "
             f"complete trial (ended {earlier.get('ended_at') if isinstance(earlier, dict) else '?'}) "
             f"is kept, this attempt's files are in {kept.name}")


def _say_outcome(summary: dict[str, Any], progress: Progress) -> None:
    if summary.get("commit"):
        progress(f"{summary['trial_id']}: processed {summary.get('processed_records')}, "
                 f"redelivered {summary.get('redelivered')}, lost "
                 f"{summary.get('lost_unprocessed')}, pause {summary.get('rebalance_pause_ms')} "
                 f"ms → {summary['verdict']}")
    else:
        progress(f"{summary['trial_id']}: acked {summary.get('acked')}, acked-but-lost "
                 f"{summary.get('acked_lost')}, duplicates {summary.get('duplicates')}, "
                 f"unavailable {summary.get('unavailable_ms')} ms → {summary['verdict']}")


def _delete_topic(cluster: EmbeddedCluster, topic: str, progress: Progress) -> None:
    """Delete the trial's topic and wait until the cluster has forgotten it (on Kafka 0.9,
    TopicCommand fails on every topic while one is half deleted, "next on empty iterator",
    which would break the next trial's provisioning)."""
    from kafkalab.topics import delete_topics

    try:
        delete_topics(cluster.descriptor, [topic], timeout_s=30)
        with cluster.partition_reader() as reader:
            deadline = now_ns() + int(TOPIC_DELETE_TIMEOUT_S * 1e9)
            while now_ns() < deadline and not reader.topic_gone(topic):
                time.sleep(0.2)
    except Exception as exc:  # the trial's result stands; the topic is left behind
        progress(f"  (could not delete topic {topic}: {exc})")


def _write_timeline(tdir: Path, rows: list[dict[str, Any]], t0: int | None) -> None:
    cols = {n: [r[n] for r in rows] for n in files.TIMELINE_SCHEMA.names if n != "elapsed_s"}
    cols["elapsed_s"] = [(r["sample_ts_ns"] - t0) / 1e9 if t0 else None for r in rows]
    load_files.write_table(files.timeline_path(tdir), cols, files.TIMELINE_SCHEMA)


def _check(t: _Trial, events: dict[str, Any], progress: Progress = noop) -> checker.ReRead:
    """Re-read, judge, look lost messages up in the logs, write ``verdicts.parquet`` and fill
    the summary; returns the re-read."""
    spec, tdir = t.spec, t.tdir
    col = sends_by_seq(pq.read_table(load_files.sends_path(tdir)).to_pydict())
    n = len(col["seq"])
    plan = read_json(plan_path(tdir))
    nonce = bytes.fromhex(str((plan or {}).get("nonce") or ""))
    read = checker.re_read(t.cluster.descriptor, t.topic, spec.partitions, nonce)
    if not read.complete:
        raise RunError(f"checker: {read.error}")
    uncommitted = None
    if spec.txn_msgs is not None:
        uncommitted = checker.re_read(t.cluster.descriptor, t.topic, spec.partitions, nonce,
                                      isolation="read_uncommitted")
        if not uncommitted.complete:
            raise RunError(f"checker (read_uncommitted): {uncommitted.error}")
    v = checker.judge(col["outcome"], col["partition"], col["offset"], col["is_warmup"], read,
                      uncommitted)
    lost = np.flatnonzero(v["verdict"] == "acked_lost")
    in_logs: dict[int, str] | None = {}
    if len(lost):
        progress(f"  {len(lost)} acked message(s) missing: looking them up in the brokers' log "
                 "segments (DumpLogSegments)")
        ok = np.flatnonzero(v["verdict"] == "ok")
        controls = ok[np.linspace(0, len(ok) - 1, min(len(ok), CRC_CONTROLS)).astype(int)] if len(ok) else ok
        in_logs = _locate(t, nonce, col, lost, controls)
        if in_logs is None:
            progress("  the log lookup failed its self-check (messages the re-read found were not "
                     "found in any log): where the lost messages went is left unknown")
    v["in_broker_logs"] = np.asarray([in_logs.get(int(s)) if in_logs is not None else None
                                      for s in v["seq"]], dtype=object)
    load_files.write_table(files.verdicts_path(tdir), v, files.VERDICTS_SCHEMA)
    receipts = [pq.read_table(p, columns=["receive_ts_ns", "duplicate"]).to_pydict()
                for p in load_files.receipts_path.every(tdir)]
    rx = np.asarray([ts for r in receipts for ts, dup in zip(r["receive_ts_ns"], r["duplicate"],
                                                              strict=True) if not dup],
                    dtype=np.int64)
    lag_rows: list[dict[str, Any]] = []
    for p in load_files.lag_path.every(tdir):
        lag_rows += pq.read_table(p, columns=["sample_ts_ns", "lag_msgs"]).to_pylist()
    t.summary.update(trial_summary(
        verdicts=v, sends={"ack_ts_ns": col["ack_ts_ns"], "txn_end": col["txn_end"]},
        receipts_ts_ns=rx, lag_rows=lag_rows, events=events,
        errors=list(col["error"]), rf=t.rf,
        rate_msgs_per_s=spec.rate_msgs_per_s, lag_interval_s=spec.load_cell().lag_interval_s,
        in_broker_logs=in_logs))
    t.summary["read_back_foreign"] = read.foreign
    t.summary["intended"] = n
    return read


def sends_by_seq(sends: dict[str, list[Any]]) -> dict[str, np.ndarray]:
    """``sends.parquet``'s columns ordered by seq, with typed arrays: the integer columns with
    -1 for a missing value (an unanswered message has no offset, an unsent one no send
    time), ``outcome`` as strings, ``error`` and ``txn_end`` as str or None (``txn_end`` None
    throughout in files written before it existed)."""
    order = np.argsort(np.asarray(sends["seq"], dtype=np.int64), kind="stable")

    def ints(name: str, dtype: Any = np.int64) -> np.ndarray:
        return np.asarray([-1 if x is None else int(x) for x in sends[name]], dtype=dtype)[order]

    return {"seq": ints("seq"), "partition": ints("partition", np.int32), "offset": ints("offset"),
            "send_ts_ns": ints("send_ts_ns"), "ack_ts_ns": ints("ack_ts_ns"),
            "intended_ts_ns": ints("intended_ts_ns"),
            "is_warmup": np.asarray([bool(x) for x in sends["is_warmup"]], dtype=bool)[order],
            "outcome": np.asarray([str(x) for x in sends["outcome"]], dtype=object)[order],
            "error": np.asarray([x if isinstance(x, str) else None for x in sends["error"]],
                                dtype=object)[order],
            "txn_end": np.asarray([x if isinstance(x, str) else None
                                   for x in sends.get("txn_end") or [None] * len(order)],
                                  dtype=object)[order]}


def _locate(t: _Trial, nonce: bytes, col: dict[str, Any], lost: np.ndarray,
            controls: np.ndarray) -> dict[int, str] | None:
    """The brokers whose log segments hold each lost message (DumpLogSegments); None when the
    logs could not be read or the lookup fails its self-check: ``controls`` (messages the
    re-read found) must each be found in some log, else the CRCs (or seq headers) are not
    what the brokers store and an "absent" would be a wrong answer.

    Kafka 0.9's logs are searched by each record's CRC; newer ones (one CRC a batch) by the
    ``kafkalab.seq.<seq>`` header the trial's records carry (:func:`_tagged`)."""
    home = t.cluster.kafka_home()
    features = t.cluster.flavor.features(t.cluster.descriptor)
    tool = features.tools.dump_log_segments
    if home is None or tool is None:
        return None
    if not features.record_crc_in_log:
        if not features.record_headers:
            return None
        return _locate_by_header(t, home, tool, col, lost, controls)
    body = load_body(t.spec.payload, "raw", images_dir())
    wanted = []
    for s in [*lost, *controls]:
        seq = int(col["seq"][s])
        key = SEND_KEY.pack(seq, int(col["send_ts_ns"][s]))
        value = checker.sent_value(body, seq, int(col["intended_ts_ns"][s]), nonce, False)
        wanted.append({"seq": seq, "crc": checker.message_crc(key, value)})
    java = ensure_java()
    logs: dict[int, dict[int, int]] = {}
    for b in t.cluster.broker_ids:
        dirs = [t.cluster.broker_data_dir(b) / f"{t.topic}-{p}" for p in range(t.spec.partitions)]
        logs[b] = checker.dump_log_crcs(home, java, [x for x in dirs if x.is_dir()], tool)
    found = checker.locate_lost(wanted, logs)
    if any(not found[int(col["seq"][c])] for c in controls):
        return None
    return {int(col["seq"][s]): found[int(col["seq"][s])] for s in lost}


def _locate_by_header(t: _Trial, home: Path, tool: str, col: dict[str, Any], lost: np.ndarray,
                      controls: np.ndarray) -> dict[int, str] | None:
    """:func:`_locate` on brokers that keep record headers: the seqs each broker's log holds,
    read from the ``kafkalab.seq.<seq>`` header keys DumpLogSegments prints."""
    java = ensure_java()
    held: dict[int, set[int]] = {}
    for b in t.cluster.broker_ids:
        dirs = [t.cluster.broker_data_dir(b) / f"{t.topic}-{p}" for p in range(t.spec.partitions)]
        held[b] = checker.dump_log_seqs(home, java, [x for x in dirs if x.is_dir()], tool)
    found = checker.locate_lost_seqs([int(col["seq"][s]) for s in [*lost, *controls]], held)
    if any(not found[int(col["seq"][c])] for c in controls):
        return None
    return {int(col["seq"][s]): found[int(col["seq"][s])] for s in lost}


def finish_fault_run(data_dir: Path | str | None, run_id: str, error: str | None = None) -> dict[str, Any]:
    """Merge every trial's summary into the manifest and close it: ``complete`` when every
    planned trial completed, ``failed`` when none did, else ``incomplete``."""
    lab = LabData(data_dir)
    with lab.run_lock(run_id):
        manifest = Manifest.load(lab.root, run_id)
        planned = [FaultTrialSpec(**raw) for raw in manifest.workload.get("trials") or []]
        trials = close_run(lab, manifest, (
            _trial_part(lab.root, manifest.run_date, run_id, spec, prof.producer.acks)
            for spec, prof in zip(planned, trial_profiles(planned), strict=True)), error)
    return {"run_id": run_id, "status": manifest.status, "trials": trials}


def _trial_part(data_root: Path, run_date: str, run_id: str, spec: FaultTrialSpec,
                acks: str) -> tuple[str, dict[str, Any]] | None:
    """A planned trial's ``(status, summary)`` from its ``trial.json``; None when it left
    none."""
    doc = read_json(files.trial_json_path(files.trial_dir(data_root, run_date, run_id,
                                                          spec.trial_id(acks))))
    if not isinstance(doc, dict):
        return None
    return str(doc.get("status")), dict(doc.get("summary") or {})


def execute_faults(req: FaultRequest, progress: Progress = noop) -> FaultResult:
    """Start a fault run, run every trial, close the run (always, even on Ctrl-C)."""
    started = start_fault_run(req, progress)
    run_id = req.run_id = started["run_id"]
    error: str | None = None
    try:
        for spec in req.trials:
            try:
                run_fault_trial(req.data_dir, run_id, spec, req.cluster_lab, progress,
                                keep_topic=req.keep_topics)
            except (RunError, ClusterError) as exc:  # recorded in its trial.json; go on
                progress(f"trial failed: {exc}")
    except KeyboardInterrupt:
        error = "interrupted"
        raise
    finally:
        done = finish_fault_run(req.data_dir, run_id, error=error)
    return FaultResult(run_id=run_id, status=done["status"], trials=done["trials"],
                       manifest_path=LabData(req.data_dir).manifest_path(run_id))
