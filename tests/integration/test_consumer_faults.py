"""Consumer faults on a real Kafka 4.x KRaft cluster (no mocks): group members are real
processes, the kill is a real SIGKILL, the leave a real LeaveGroup.

* a member that dies on purpose mid-batch makes an exact number of duplicates (commit after
  processing) or of losses (commit before), and the counts agree with an independent re-read
  of the topic;
* a clean leave moves the partitions long before a kill does (the session timeout), and
  at-least-once loses nothing either way;
* an incremental rebalance (cooperative-sticky, both clients; KIP-848's protocol) moves only
  the leaver's partitions;
* kafka-python's members, auto commit and a member that comes back.

The fault cluster runs in its own lab dir on its own ports (controllers 23591-23593, brokers
30902-30904)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kafkalab.cluster import cluster_down
from kafkalab.cluster.descriptor import librdkafka_config
from kafkalab.cluster.flavors import load_descriptor
from kafkalab.faults import files
from kafkalab.faults.engine import FaultRequest, run_fault_trial, start_fault_run
from kafkalab.faults.group import group_dir, read_events
from kafkalab.faults.spec import FaultTrialSpec
from kafkalab.paths import default_descriptor_path
from kafkalab.store import read_json

ZK_PORT, BASE_PORT = 23591, 30902

# 50 msg/s over 4 partitions and 2 members: a batch of 10 fills in ~0.4 s, far inside its
# 5 s wait, so the dying batch holds exactly 10 records. The rate is low on purpose: no
# verdict here depends on it, and each message costs the three nodes requests (a produce,
# the followers' and the members' fetches): at 200 msg/s this module used 247 CPU-s, at 50
# 186 (2026-12-07). Trial 2: its own trial id, so the later kill trial of GROUP (t1) does
# not replace its files (a failure's evidence).
HOOK = {"trial": 2, "profile": "default", "fault": "kill-consumer", "consumers": 2, "partitions": 4,
        "rate_msgs_per_s": 50, "duration_s": 10, "warmup_s": 1, "fault_at_s": 3,
        "session_timeout_ms": 1000, "heartbeat_interval_ms": 300, "batch_msgs": 10,
        "batch_wait_ms": 5000, "victim_dies_after_records": 3}
SESSION_MS, HEARTBEAT_MS = 6000, 1000
GROUP = {"profile": "default", "consumers": 2, "partitions": 4, "rate_msgs_per_s": 50,
         "duration_s": 16, "warmup_s": 1, "fault_at_s": 3, "session_timeout_ms": SESSION_MS,
         "heartbeat_interval_ms": HEARTBEAT_MS}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, make_lab: Any) -> Iterator[dict[str, Any]]:
    lab = make_lab(tmp_path_factory.mktemp("lab-cfaults"))
    data = tmp_path_factory.mktemp("data-cfaults")
    mp = pytest.MonkeyPatch()
    mp.setenv("KAFKALAB_HOME", str(lab))
    mp.setenv("KAFKALAB_FAULTS_CONTROL_PORT", str(ZK_PORT))
    mp.setenv("KAFKALAB_FAULTS_BASE_PORT", str(BASE_PORT))
    clab = lab / "faults"
    try:
        started = start_fault_run(FaultRequest(trials=[FaultTrialSpec(**HOOK, commit="after")],
                                               data_dir=data, run_id="cfaults-it"))
        yield {"data": data, "clab": clab, "run_id": started["run_id"]}
    finally:
        cluster_down(clab)
        mp.undo()


def _trial(env: dict[str, Any], spec: FaultTrialSpec, keep_topic: bool = False) -> tuple[dict[str, Any], Path]:
    s = run_fault_trial(env["data"], env["run_id"], spec, env["clab"], keep_topic=keep_topic)
    (tdir,) = (env["data"] / "faults").glob(f"run_date=*/run_id={env['run_id']}/trial={s['trial_id']}")
    return s, tdir


def _topic_records(env: dict[str, Any], topic: str, partitions: int) -> set[tuple[int, int]]:
    """An independent re-read: every (partition, offset) the topic holds."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    cfg = dict(librdkafka_config(load_descriptor(default_descriptor_path(env["clab"]))))
    c = Consumer({**cfg, "group.id": "test-reread", "enable.auto.commit": False})
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions)}
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got: set[tuple[int, int]] = set()
        misses = 0
        while len(got) < sum(ends.values()) and misses < 40:
            batch = c.consume(1000, 0.5)
            misses = misses + 1 if not batch else 0
            got |= {(m.partition(), m.offset()) for m in batch if m.error() is None}
        return got
    finally:
        c.close()


def _survivor_changes(tdir: Path, ev: str) -> list[dict[str, Any]]:
    """Member 1's ``ev`` events (assigned, revoked) between the fault and its own leaving
    at the end of the trial."""
    fault_ns = read_json(files.trial_json_path(tdir))["events"]["fault_ts_ns"]
    mine = [e for e in read_events(group_dir(tdir)) if e["member"] == 1]
    left_ns = min(e["ts_ns"] for e in mine if e["ev"] == "leaving")
    return [e for e in mine if e["ev"] == ev and fault_ns < e["ts_ns"] < left_ns]


def _processed(tdir: Path) -> list[tuple[int, int]]:
    t = pq.read_table(files.processed_path(tdir), columns=["partition", "offset"]).to_pydict()
    return list(zip(t["partition"], t["offset"], strict=True))


def _victims_last_rows(processed: dict[str, list[Any]], n: int) -> list[tuple[int, int]]:
    """The (partition, offset) of the last ``n`` records the killed member processed: the
    member whose last processing came first (the others went on after the kill)."""
    last: dict[tuple[int, int], int] = {}
    for m, inc, ts in zip(processed["member"], processed["incarnation"],
                          processed["processed_ts_ns"], strict=True):
        last[(m, inc)] = max(last.get((m, inc), 0), ts)
    victim = min(last, key=last.__getitem__)
    rows = sorted((ts, p, o) for m, inc, p, o, ts in zip(
        processed["member"], processed["incarnation"], processed["partition"],
        processed["offset"], processed["processed_ts_ns"], strict=True) if (m, inc) == victim)
    return [(p, o) for _ts, p, o in rows[-n:]]


@pytest.mark.parametrize(("commit", "dup", "lost"), [("after", 3, 0), ("before", 0, 7)])
def test_a_member_dying_mid_batch_makes_exactly_the_duplicates_or_the_gap_its_commit_allows(
        env: dict[str, Any], commit: str, dup: int, lost: int) -> None:
    """The killed member's own share is exact: the 3 records it processed of its dying batch
    are processed again (``after``) or the 7 it had not are never processed (``before``).
    Under ``after`` a survivor adds duplicates only when its own commit met the rebalance the
    kill started (a busy machine): its processed batch then goes uncommitted to the next
    owner as well. The checker explains every duplicate from the commits either way."""
    spec = FaultTrialSpec(**HOOK, commit=commit)
    s, tdir = _trial(env, spec, keep_topic=True)
    assert s["status"] == "complete", s["error"]
    assert s["self_kill"]["batch_len"] == 10 and s["self_kill"]["processed_in_batch"] == 3
    assert s["lost_unprocessed"] == s["expected_lost"] == lost
    assert s["redelivered"] == s["expected_redelivered"] and s["offsets_explain"] is True
    proc = pq.read_table(files.processed_path(tdir)).to_pydict()
    times = Counter(zip(proc["partition"], proc["offset"], strict=True))
    assert [times[r] for r in _victims_last_rows(proc, 3)] == [1 + (commit == "after")] * 3
    commits = pq.read_table(files.commits_path(tdir)).to_pydict()
    assert set(commits["source"]) == {"sync"}
    if commit == "before" or all(commits["ok"]):  # a failed commit-before drops its batch
        assert s["redelivered"] == dup
    else:  # a survivor's commit-after met the rebalance: its processed batch comes again too
        assert s["redelivered"] >= dup and s["failed_commits"] > 0
    d = pq.read_table(files.deliveries_path(tdir)).to_pydict()
    assert d["delivery"].count("duplicated") == s["redelivered"]
    assert d["delivery"].count("lost") == lost
    assert d["delivery"].count("once") == s["intended"] - s["redelivered"] - lost
    # The counts agree with a re-read of the topic that shares no code with the checker.
    topic = read_json(files.trial_json_path(tdir))["topic"]
    in_topic = _topic_records(env, topic, spec.partitions)
    processed = _processed(tdir)
    assert len(in_topic) == s["acked"] == s["intended"]
    assert len(in_topic - set(processed)) == lost
    assert len(processed) - len(set(processed)) == s["redelivered"]
    assert set(processed) <= in_topic


def test_a_clean_leave_moves_the_partitions_long_before_a_kill_and_at_least_once_loses_nothing(
        env: dict[str, Any]) -> None:
    kill, kdir = _trial(env, FaultTrialSpec(**GROUP, fault="kill-consumer", commit="after"))
    leave, ldir = _trial(env, FaultTrialSpec(**GROUP, fault="leave-consumer", commit="after"))
    for s in (kill, leave):
        assert s["status"] == "complete", s["error"]
        assert s["lost_unprocessed"] == 0 and s["verdict"] == "ok"
        assert s["redelivered"] == s["expected_redelivered"] and s["offsets_explain"] is True
        assert s["reread_agrees"] and s["drained"]
        assert len(s["moved_partitions"]) == 2
        assert (s["session_timeout_ms"], s["heartbeat_interval_ms"]) == (SESSION_MS, HEARTBEAT_MS)
    assert leave["redelivered"] == 0  # it finished and committed its batch before leaving
    # eager (the clients' default): the survivor gave up its own partitions too
    kept = set(range(4)) - set(leave["moved_partitions"])
    assert kept <= set(_survivor_changes(ldir, "revoked")[0]["partitions"])
    # The coordinator cannot expire a silent member before its session timeout has run out
    # since its last heartbeat; a leaving member is gone at once.
    assert kill["rebalance_pause_ms"] >= SESSION_MS - HEARTBEAT_MS
    assert leave["rebalance_pause_ms"] < kill["rebalance_pause_ms"] / 2
    lag = pq.read_table(files.group_lag_path(kdir)).to_pydict()
    assert set(lag["partition"]) == {0, 1, 2, 3} and max(lag["lag_msgs"]) > 0
    events = read_json(files.trial_json_path(kdir))["events"]
    assert events["fault_ts_ns"] > events["t0_ns"]


@pytest.mark.parametrize(("client", "rebalance"), [("confluent-kafka", "cooperative"),
                                                    ("confluent-kafka", "consumer"),
                                                    ("kafka-python", "cooperative")])
def test_an_incremental_rebalance_moves_only_the_leavers_partitions(
        env: dict[str, Any], client: str, rebalance: str) -> None:
    """Cooperative-sticky (KIP-429) and KIP-848's protocol: the survivor keeps its own
    partitions through the leave and is given only the leaver's (the events list the change,
    ``owned`` the whole); nothing is processed twice or never."""
    spec = FaultTrialSpec(**GROUP, fault="leave-consumer", commit="after", client=client,
                          rebalance=rebalance)
    s, tdir = _trial(env, spec)
    assert s["status"] == "complete", s["error"]
    assert s["rebalance"] == rebalance and s["trial_id"].endswith(
        f"-commit-after-{rebalance}-acks-1{'-kafka-python' if client == 'kafka-python' else ''}-t1")
    assert (s["redelivered"], s["lost_unprocessed"], s["verdict"]) == (0, 0, "ok")
    assert s["offsets_explain"] is True and s["reread_agrees"] and s["drained"]
    # trial 1 strikes 0.618 of a heartbeat (1 s) before fault_at_s (the phase spread)
    assert s["fault_offset_ms"] == pytest.approx(618.034, abs=0.001)
    moved = set(s["moved_partitions"])
    assert len(moved) == 2
    doc = read_json(files.trial_json_path(tdir))
    if rebalance == "consumer":  # the broker holds the session: set on the group
        assert doc["group"]["group_configs"] == {
            "consumer.session.timeout.ms": str(SESSION_MS),
            "consumer.heartbeat.interval.ms": str(HEARTBEAT_MS)}
    kept = set(range(4)) - moved
    assert not [e for e in _survivor_changes(tdir, "revoked") if set(e["partitions"]) & kept]
    assert [e for e in _survivor_changes(tdir, "assigned")
            if set(e["partitions"]) == moved and set(e["owned"]) == set(range(4))]


def test_kafka_python_members_with_auto_commit_and_a_member_that_comes_back_from_the_cli(
        env: dict[str, Any]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kafkalab.cli", "faults", "run", "--profile", "default",
         "--fault", "kill-consumer", "--commit", "auto", "--client", "kafka-python",
         "--auto-commit-interval-ms", "1000", "--rejoin-after", "8", "--consumers", "2",
         "--partitions", "4", "--rate", "50", "--duration", "18", "--warmup", "1",
         "--fault-at", "3", "--session-timeout-ms", str(SESSION_MS), "--heartbeat-ms",
         str(HEARTBEAT_MS), "--trials", "1", "--cluster-lab", str(env["clab"]),
         "--data-dir", str(env["data"]), "--json"],
        capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    (s,) = doc["trials"]
    assert s["trial_id"] == "default-kill-consumer-commit-auto-acks-1-kafka-python-t1"
    assert s["client"] == "kafka-python" and s["auto_commit_interval_ms"] == 1000
    assert s["reread_agrees"] is True
    counts = s["deliveries"]
    assert counts["once"] + counts["duplicated"] + counts["lost"] == s["read_back"] == s["intended"]
    assert s["rejoin_pause_ms"] is not None
    (tdir,) = (env["data"] / "faults").glob(f"run_date=*/run_id={s['run_id']}/trial={s['trial_id']}")
    a = pq.read_table(files.assignments_path(tdir)).to_pydict()
    back = [p for m, i, e, p in zip(a["member"], a["incarnation"], a["event"], a["partitions"], strict=True)
            if (m, i, e) == (0, 1, "assigned")]
    assert back and back[-1] != ""  # the new process of member 0 got partitions again
    commits = pq.read_table(files.commits_path(tdir)).to_pydict()
    assert "callback" in commits["source"]  # auto commits, logged through the client's callback
