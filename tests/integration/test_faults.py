"""Broker faults on a real 3-node Kafka 4.x KRaft cluster, the lab's fault cluster (no mocks): the no-fault control
shows nothing lost, a lossy configuration loses exactly what an independent re-read says, the
durability profile keeps every acked message through a leader crash, and bad requests change
nothing.

The fault cluster runs in its own lab dir on its own ports (controllers 23581-23583, brokers
30892-30894), so it never touches a developer's cluster or the other tests' clusters."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from kafkalab.cluster import cluster_down, cluster_status
from kafkalab.errors import ConfigError
from kafkalab.faults import files
from kafkalab.faults.engine import FaultRequest, finish_fault_run, run_fault_trial, start_fault_run
from kafkalab.faults.spec import FaultTrialSpec

ZK_PORT, BASE_PORT = 23581, 30892
REPLICA_FETCH_WAIT_MAX_NS = 500_000_000
"""``replica.fetch.wait.max.ms`` of the lab's brokers (Kafka's default, 500 ms): the
longest a follower's fetch waits at the leader, so the most a message acked before the
freeze can still lack on the followers."""
KAFKALAB = [sys.executable, "-m", "kafkalab.cli"]

CONTROL = FaultTrialSpec(profile="durability", fault="none", rate_msgs_per_s=100, duration_s=8,
                         warmup_s=1, fault_at_s=3)
LOSSY = FaultTrialSpec(profile="availability", acks="1", fault="lossy-leader-crash",
                       rate_msgs_per_s=100, duration_s=12, warmup_s=1, fault_at_s=3, down_s=1.5)
CRASH = FaultTrialSpec(profile="durability", fault="sigkill-leader", rate_msgs_per_s=100,
                       duration_s=12, warmup_s=1, fault_at_s=3, down_s=2)
TXN = FaultTrialSpec(profile="durability", fault="sigkill-leader", rate_msgs_per_s=100,
                     duration_s=16, warmup_s=1, fault_at_s=3, down_s=2, txn_msgs=10,
                     txn_abort_every=3)
CONTROLLER = FaultTrialSpec(profile="durability", fault="sigkill-controller",
                            rate_msgs_per_s=100, duration_s=16, warmup_s=1, fault_at_s=3,
                            down_s=6)


@pytest.fixture(scope="module")
def fault_env(tmp_path_factory: pytest.TempPathFactory, make_lab: Any,
              monkeypatch_module: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """A started fault run on the lab's own 3-broker fault cluster, stopped after the module."""
    lab = make_lab(tmp_path_factory.mktemp("lab-faults"))
    data = tmp_path_factory.mktemp("data-faults")
    monkeypatch_module.setenv("KAFKALAB_HOME", str(lab))
    monkeypatch_module.setenv("KAFKALAB_FAULTS_CONTROL_PORT", str(ZK_PORT))
    monkeypatch_module.setenv("KAFKALAB_FAULTS_BASE_PORT", str(BASE_PORT))
    clab = lab / "faults"
    trials = [CONTROL, LOSSY, CRASH, TXN, CONTROLLER]
    try:
        started = start_fault_run(FaultRequest(trials=trials, data_dir=data, run_id="faults-it"))
        yield {"lab": lab, "data": data, "clab": clab, "run_id": Path(started["run_id"])}
    finally:
        cluster_down(clab)


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _trial(env: dict[str, Path], spec: FaultTrialSpec, keep_topic: bool = False) -> tuple[dict[str, Any], Path]:
    summary = run_fault_trial(env["data"], str(env["run_id"]), spec, env["clab"],
                              keep_topic=keep_topic)
    (tdir,) = [p for p in (env["data"] / "faults").glob(f"run_date=*/run_id={env['run_id']}/trial=*")
               if p.name == f"trial={summary['trial_id']}"]
    return summary, tdir


def _adds_up(s: dict[str, Any]) -> None:
    assert s["acked"] + s["failed"] + s["indeterminate"] + s["unsent"] == s["intended"]
    v = s["acked_lost"] + s["failed_but_present"] + s["indeterminate_present"] + s["unseen"]
    assert s["acked"] - s["acked_lost"] + v == s["intended"]


def test_no_fault_control_loses_nothing(fault_env: dict[str, Path]) -> None:
    s, tdir = _trial(fault_env, CONTROL)
    assert s["status"] == "complete" and s["verdict"] == "ok"
    assert s["acked"] == s["intended"] == 800
    assert (s["acked_lost"], s["duplicates"], s["reordered"], s["unseen"]) == (0, 0, 0, 0)
    assert s["read_back"] == 800 and s["target_role"] == "none"
    assert s["leader_elected_ms"] is None and s["isr_full_ms"] is None
    _adds_up(s)
    v = pq.read_table(files.verdicts_path(tdir)).to_pandas()
    assert len(v) == 800 and set(v["verdict"]) == {"ok"} and (v["read_count"] == 1).all()
    t = pq.read_table(files.timeline_path(tdir)).to_pandas()
    assert len(t) > 10 and set(t["isr_size"]) == {3} and t["leader"].nunique() == 1
    for name in ("sends.parquet", "receipts-000.parquet", "cell.json", "trial.json"):
        assert (tdir / name).is_file()


def _independent_re_read(bootstrap: str, topic: str) -> set[int]:
    """The trial's topic read back with kafka-python (another client than the checker's)."""
    from kafka import KafkaConsumer, TopicPartition

    from kafkalab.payloads import read_stamp

    c = KafkaConsumer(bootstrap_servers=bootstrap.split(","), enable_auto_commit=False,
                      consumer_timeout_ms=5000)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    end = c.end_offsets([tp])[tp]
    seqs: set[int] = set()
    while c.position(tp) < end:
        for msgs in c.poll(timeout_ms=1000).values():
            for m in msgs:
                st = read_stamp(m.value)
                assert st is not None
                seqs.add(st[0])
    c.close()
    return seqs


def test_lossy_configuration_loses_exactly_what_the_log_lacks(fault_env: dict[str, Path]) -> None:
    """acks=1 with both followers frozen, then the leader killed: the acked messages only the
    leader had are lost. The checker's count equals an independent re-read's, every lost
    message was acked while the followers were frozen (or in the last replica fetch before),
    and the brokers' logs no longer hold any of them (broker loss, found with
    DumpLogSegments)."""
    import json

    s, tdir = _trial(fault_env, LOSSY, keep_topic=True)
    assert s["status"] == "complete" and s["verdict"] == "loss"
    assert s["acked_lost"] > 0 and s["recovered"]
    _adds_up(s)
    doc = json.loads((tdir / "trial.json").read_text())
    bootstrap = doc["cluster"]["bootstrap_servers"]
    read = _independent_re_read(bootstrap, doc["topic"])
    sends = pq.read_table(tdir / "sends.parquet").to_pandas()
    acked = set(sends.loc[sends["outcome"] == "acked", "seq"])
    v = pq.read_table(files.verdicts_path(tdir)).to_pandas()
    lost = set(v.loc[v["verdict"] == "acked_lost", "seq"])
    assert lost == acked - read
    assert len(lost) == s["acked_lost"]
    ev = doc["events"]
    ack_ts = sends.set_index("seq")["ack_ts_ns"]
    lost_ack = np.asarray([ack_ts[q] for q in lost])
    # acked before the killed leader was gone (an ack already on its way when SIGKILL was
    # sent may still arrive in the few ms the kill takes), and at most one replica fetch
    # before the freeze: followers copy asynchronously, so a message acked a few ms before
    # SIGSTOP, or sitting in a fetch response a follower had not applied yet, was never
    # replicated either (seen in CI: lost messages acked 12 ms before the freeze). The
    # bound is the brokers' replica.fetch.wait.max.ms (0.9 default, 500 ms).
    assert lost_ack.min() >= ev["fault_ts_ns"] - REPLICA_FETCH_WAIT_MAX_NS
    assert lost_ack.max() <= ev["leader_gone_ts_ns"]
    # most of the loss is what the leader acked alone while the followers were frozen
    assert (lost_ack >= ev["fault_ts_ns"]).mean() > 0.5
    # Kafka 4.x stores record batches (one CRC a batch): the records carried their seq in a
    # header key, which Kafka's DumpLogSegments prints; no broker's log holds a lost one
    assert s["acked_lost_in_broker_logs"] == 0 and s["acked_lost_absent_from_logs"] == len(lost)
    assert set(v.loc[v["verdict"] == "acked_lost", "in_broker_logs"]) == {""}


def test_durability_keeps_every_acked_message_through_a_leader_crash(fault_env: dict[str, Path]) -> None:
    s, tdir = _trial(fault_env, CRASH)
    assert s["status"] == "complete" and s["verdict"] == "ok", s
    assert s["acked_lost"] == 0 and s["recovered"] and s["acks_after_fault"] > 0
    assert s["target_role"] == "leader"
    assert s["leader_elected_ms"] is not None and s["leader_elected_ms"] > 0
    assert s["isr_full_ms"] is not None and s["isr_full_ms"] >= s["leader_elected_ms"]
    assert s["unavailable_ms"] is not None
    _adds_up(s)
    t = pq.read_table(files.timeline_path(tdir)).to_pandas()
    assert t["leader"].nunique() >= 2  # the leadership moved, and the timeline shows it
    assert t["isr_size"].min() < 3 and t["isr_size"].iloc[-1] == 3
    done = finish_fault_run(fault_env["data"], str(fault_env["run_id"]))
    assert {x["trial_id"] for x in done["trials"]} >= {s["trial_id"]}


def test_a_leader_crash_under_transactions_shows_no_aborted_record_to_committed_readers(
        fault_env: dict[str, Path]) -> None:
    """Transactions of 10 records, every third aborted after its records were written, and
    the partition leader SIGKILLed: the read_committed re-read holds every acked record once
    and no aborted one; the read_uncommitted re-read finds the deliberately aborted records in
    the log."""
    s, tdir = _trial(fault_env, TXN)
    # Whether acks resume before the schedule ends depends on the machine's speed (a
    # transactional producer stalled 13-18 s under this kill on an idle machine, CI's once
    # more): "not recovered" is no failure of the properties asserted here, which hold either
    # way.
    assert s["status"] == "complete" and s["verdict"] in ("ok", "not recovered"), s
    assert (s["acked_lost"], s["duplicates"], s["aborted_visible"]) == (0, 0, 0)
    assert s["txn_msgs"] == 10 and s["aborted"] > 0
    assert s["acked"] + s["failed"] + s["indeterminate"] + s["unsent"] + s["aborted"] \
        == s["intended"]
    v = pq.read_table(files.verdicts_path(tdir)).to_pandas()
    sends = pq.read_table(tdir / "sends.parquet").to_pandas().set_index("seq").sort_index()
    aborted = v[v["outcome"] == "aborted"]
    assert set(aborted["verdict"]) == {"aborted"}
    # every deliberately aborted transaction (the 3rd, 6th, ...) that ended without an error
    # was flushed before its abort: its records are in the log
    deliberate = aborted[((aborted["seq"] // 10 + 1) % 3 == 0).to_numpy()
                         & sends.loc[aborted["seq"], "error"].isna().to_numpy()]
    assert len(deliberate) > 0 and (deliberate["uncommitted_read_count"] >= 1).all()
    assert s["aborted_read_uncommitted"] >= len(deliberate)
    assert (v.loc[v["outcome"] == "acked", "read_count"] == 1).all()


def test_bad_requests_change_nothing(fault_env: dict[str, Path], kraft_lab: Any) -> None:
    """A fault on a one-broker cluster, and a follower fault on an rf-1 profile: one line,
    exit 2, the clusters untouched."""
    one_lab, _ = kraft_lab
    before = [(p["pid"], p["alive"]) for p in cluster_status(one_lab)["processes"]]
    r = subprocess.run([*KAFKALAB, "faults", "run", "--fault", "sigkill-leader", "--trials", "1",
                        "--cluster-lab", str(one_lab), "--data-dir", str(fault_env["data"])],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "1 broker(s)" in r.stderr and "nothing was changed" in r.stderr
    assert [(p["pid"], p["alive"]) for p in cluster_status(one_lab)["processes"]] == before
    with pytest.raises(ConfigError, match="needs a follower"):
        start_fault_run(FaultRequest(trials=[FaultTrialSpec(profile="default", fault="kill-follower")],
                                     data_dir=fault_env["data"]))


def test_killing_the_active_controller_reports_the_quorums_new_leader(
        fault_env: dict[str, Path]) -> None:
    """SIGKILL of the node leading the KRaft controller quorum: another node leads it in a
    newer epoch, the trial says when, and the durability profile loses no acked message."""
    import json

    s, tdir = _trial(fault_env, CONTROLLER)
    assert s["status"] == "complete" and s["target_role"] == "controller"
    assert s["acked_lost"] == 0 and s["recovered"]
    _adds_up(s)
    doc = json.loads((tdir / "trial.json").read_text())
    ev = doc["events"]
    assert ev["controller_elected_ts_ns"] > ev["fault_ts_ns"]
    # the quorum elects another node while the killed one is down (6 s, beyond the quorum's
    # 2 s fetch timeout and 1 s election timeout)
    if ev["controller_elected_ts_ns"] < ev["heal_ts_ns"]:
        assert ev["controller_elected_node"] != s["target_broker"]
    assert s["controller_elected_ms"] == round(
        (ev["controller_elected_ts_ns"] - ev["fault_ts_ns"]) / 1e6, 3)
