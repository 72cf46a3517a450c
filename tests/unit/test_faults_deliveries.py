"""The consumer-fault judge: every message against the re-read, the offsets at the death, the
rebalance pause, and the group's stable-assignment rule (synthetic, exactly known inputs)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kafkalab.faults.checker import ReRead
from kafkalab.faults.deliveries import (
    deliveries,
    expected_from_offsets,
    group_summary,
    longest_gap_after_ms,
)
from kafkalab.faults.group import read_events, stable_assignment
from kafkalab.faults.spec import FaultTrialSpec

pytestmark = pytest.mark.unit

MS = 1_000_000


def _reread(parts: dict[int, list[int]]) -> ReRead:
    """Partition -> seqs in offset order (offset = index)."""
    r = ReRead()
    for p, seqs in parts.items():
        for off, seq in enumerate(seqs):
            r.partition.append(p)
            r.offset.append(off)
            r.seq.append(seq)
    return r


def _processed(rows: list[tuple[int, int, int, int, int]]) -> dict[str, np.ndarray]:
    """rows: (member, seq, partition, offset, receive_ms) in receive order."""
    a = np.array(rows, dtype=np.int64).reshape(-1, 5)
    return {"member": a[:, 0].astype(np.int32), "incarnation": np.zeros(len(a), dtype=np.int32),
            "seq": a[:, 1], "partition": a[:, 2].astype(np.int32), "offset": a[:, 3],
            "receive_ts_ns": a[:, 4] * MS, "processed_ts_ns": a[:, 4] * MS + 1}


def _ev(ev: str, member: int, ms: int, **kw: object) -> dict[str, object]:
    return {"ev": ev, "member": member, "incarnation": 0, "ts_ns": ms * MS, **kw}


# Partition 0 (member 0, the victim) holds seqs 0,2,4,6,8,10; partition 1 (member 1) 1,3,5,7,9,11.
READ = _reread({0: [0, 2, 4, 6, 8, 10], 1: [1, 3, 5, 7, 9, 11]})
EVENTS = [
    _ev("assigned", 0, 0, partitions=[0]), _ev("assigned", 1, 0, partitions=[1]),
    _ev("commit", 0, 15, offsets={"0": 2}, ok=True),  # member 0 committed offsets 0-1
    _ev("revoked", 1, 500, partitions=[1]), _ev("assigned", 1, 520, partitions=[0, 1]),
]


def test_after_processing_a_death_before_the_commit_redelivers_exactly_what_was_uncommitted() -> None:
    # Member 0 processed offsets 0-3 of partition 0, committed only up to 2, died at 100 ms;
    # member 1 takes partition 0 over and starts again at the commit: offsets 2 and 3 twice.
    proc = _processed([
        (0, 0, 0, 0, 10), (1, 1, 1, 0, 11), (0, 2, 0, 1, 12), (0, 4, 0, 2, 20), (1, 3, 1, 1, 21),
        (0, 6, 0, 3, 30), (1, 5, 1, 2, 31),
        (1, 7, 1, 3, 530), (1, 4, 0, 2, 600), (1, 6, 0, 3, 601), (1, 8, 0, 4, 602),
        (1, 10, 0, 5, 603), (1, 9, 1, 4, 604), (1, 11, 1, 5, 605),
    ])
    events = [*EVENTS, _ev("commit", 1, 35, offsets={"1": 3}, ok=True)]  # member 1's own batch
    s = group_summary(read=READ, processed=proc, events=events, fault_ts_ns=100 * MS,
                      rejoin_ts_ns=None, fault="kill-consumer")
    assert (s["redelivered"], s["lost_unprocessed"]) == (2, 0)
    assert s["committed_at_fault"] == {"0": 2} and s["processed_at_fault"] == {"0": 4}
    assert (s["expected_redelivered"], s["expected_lost"], s["offsets_explain"]) == (2, 0, True)
    assert s["moved_partitions"] == [0]
    assert s["rebalance_pause_by_partition"] == {"0": 500.0} and s["rebalance_pause_ms"] == 500.0
    assert s["successor_assigned_ms"] == 420.0
    assert s["survivors_pause_ms"] == 499.0  # partition 1: 31 ms -> 530 ms (eager rebalance)
    assert s["reread_agrees"] is True
    d = deliveries(12, np.zeros(12, dtype=bool), READ, proc)
    assert list(d["delivery"]).count("duplicated") == 2
    assert d["processed_count"][[4, 6]].tolist() == [2, 2]
    assert d["first_member"][4] == 0 and d["first_member"][8] == 1


def test_before_processing_a_death_after_the_commit_loses_exactly_what_was_committed_unprocessed() -> None:
    # Member 0 committed up to offset 5 (a batch of offsets 2-4), processed only offset 2, died.
    events = [*EVENTS, _ev("commit", 0, 40, offsets={"0": 5}, ok=True),
              _ev("commit", 1, 41, offsets={"1": 1}, ok=True)]
    proc = _processed([
        (0, 0, 0, 0, 10), (0, 2, 0, 1, 12), (1, 1, 1, 0, 11), (0, 4, 0, 2, 41),
        (1, 3, 1, 1, 530), (1, 10, 0, 5, 600),
        (1, 5, 1, 2, 601), (1, 7, 1, 3, 602), (1, 9, 1, 4, 603), (1, 11, 1, 5, 604),
    ])
    s = group_summary(read=READ, processed=proc, events=events, fault_ts_ns=100 * MS,
                      rejoin_ts_ns=None, fault="kill-consumer")
    assert (s["redelivered"], s["lost_unprocessed"]) == (0, 2)  # offsets 3 and 4 (seqs 6, 8)
    assert (s["expected_redelivered"], s["expected_lost"], s["offsets_explain"]) == (0, 2, True)
    d = deliveries(12, np.zeros(12, dtype=bool), READ, proc)
    assert sorted(np.flatnonzero(d["delivery"] == "lost").tolist()) == [6, 8]


def test_a_processed_record_the_reread_lacks_means_the_check_disagrees() -> None:
    proc = _processed([(0, 0, 0, 0, 10), (0, 2, 0, 9, 11)])  # offset 9 is not in the topic
    s = group_summary(read=READ, processed=proc, events=EVENTS, fault_ts_ns=None,
                      rejoin_ts_ns=None, fault="kill-consumer")
    assert s["processed_not_in_topic"] == 1 and s["reread_agrees"] is False
    assert s["rebalance_pause_ms"] is None  # no fault instant: no pause is made up


def test_a_message_the_producer_never_wrote_is_not_counted_as_lost_by_the_group() -> None:
    read = _reread({0: [0, 1]})
    d = deliveries(3, np.zeros(3, dtype=bool), read, _processed([(0, 0, 0, 0, 1), (0, 1, 0, 1, 2)]))
    assert d["delivery"].tolist() == ["once", "once", "not_in_topic"]
    assert d["in_topic"].tolist() == [1, 1, 0] and d["offset"].tolist() == [0, 1, -1]


def test_longest_gap_counts_only_gaps_that_end_after_the_instant() -> None:
    ts = np.array([0, 10, 20, 500, 510], dtype=np.int64) * MS
    assert longest_gap_after_ms(ts, 25 * MS) == 480.0
    assert longest_gap_after_ms(ts, 505 * MS) == 10.0
    assert longest_gap_after_ms(ts, 600 * MS) is None
    assert longest_gap_after_ms(ts, 0, before_ns=15 * MS) == 10.0


def test_the_group_is_stable_only_with_disjoint_full_coverage_by_every_live_member() -> None:
    live = [(0, 0), (1, 0)]
    assert stable_assignment(EVENTS[:2], live, 2) == {(0, 0): [0], (1, 0): [1]}
    assert stable_assignment(EVENTS[:1], live, 2) is None  # member 1 has nothing yet
    revoked = [*EVENTS[:2], _ev("revoked", 0, 5, partitions=[0])]
    assert stable_assignment(revoked, live, 2) is None  # mid-rebalance
    assert stable_assignment(EVENTS[:2], live, 3) is None  # partition 2 unowned


def test_events_read_back_in_time_order_and_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "events-m0-i0.jsonl").write_text(
        json.dumps(_ev("assigned", 0, 5, partitions=[0])) + "\n" + '{"ev": "comm')
    (tmp_path / "events-m1-i0.jsonl").write_text(json.dumps(_ev("started", 1, 1)) + "\n")
    assert [e["ev"] for e in read_events(tmp_path)] == ["started", "assigned"]


@pytest.mark.parametrize(("kw", "message"), [
    ({"fault": "sigkill-leader", "commit": "after"}, "commit applies to the consumer faults"),
    ({"fault": "kill-consumer", "consumers": 3, "partitions": 2}, "fewer than the group's 3 consumers"),
    ({"fault": "leave-consumer", "partitions": 6, "victim_dies_after_records": 2}, "use it with kill-consumer"),
    ({"fault": "kill-consumer", "partitions": 6, "batch_msgs": 5, "victim_dies_after_records": 9},
     "more than a batch"),
    ({"fault": "cut-consumer", "partitions": 6, "rejoin_after_s": 5}, "rejoins at the heal"),
    ({"fault": "cut-consumer", "partitions": 6, "down_s": 0}, "cuts nothing"),
])
def test_consumer_fault_spec_refuses_what_cannot_be_measured(kw: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FaultTrialSpec(**kw)  # type: ignore[arg-type]


def test_consumer_fault_ids_name_the_strategy_client_and_in_flight() -> None:
    s = FaultTrialSpec(fault="kill-consumer", partitions=6, commit="before", client="kafka-python")
    assert s.trial_id("all") == "durability-kill-consumer-commit-before-acks-all-kafka-python-t1"
    assert FaultTrialSpec(fault="leave-consumer", partitions=6).effective_commit == "after"
    assert FaultTrialSpec(max_in_flight=5).trial_id("all") == "durability-sigkill-leader-acks-all-mif5-t1"
    assert FaultTrialSpec().effective_commit is None
    with pytest.raises(ValueError, match="needs at least 22 s"):
        FaultTrialSpec(fault="kill-consumer", partitions=6).check_group_timeline(10_000)
    FaultTrialSpec(fault="leave-consumer", partitions=6).check_group_timeline(10_000)


def test_a_cut_member_is_cut_past_its_session_unless_told_and_the_schedule_sees_it_back() -> None:
    from kafkalab.faults.spec import FaultPlan, plan_trials

    cut = FaultTrialSpec(fault="cut-consumer", partitions=6, duration_s=30)
    assert cut.needs_links and not cut.is_link_fault and cut.is_consumer_fault
    assert cut.cut_s(6_000) == 10.0  # the session timeout + 4 s: the partitions have moved
    assert cut.model_copy(update={"down_s": 3.0}).cut_s(6_000) == 3.0
    # fault at 6 s + a 10 s cut + 6 s of the group going on after the heal
    with pytest.raises(ValueError, match="needs at least 22 s"):
        cut.model_copy(update={"duration_s": 20}).check_group_timeline(6_000)
    (planned,) = plan_trials(FaultPlan(profiles=["availability"], faults=["cut-consumer"]))
    assert planned.duration_s == 22.0 and planned.partitions == 6


def test_a_leaving_member_moves_what_it_held_at_the_fault_though_it_revokes_on_close() -> None:
    # SIGTERM at 100 ms: member 0 finishes its batch, commits it, revokes on close at 105 ms.
    events = [*EVENTS[:2], _ev("commit", 1, 50, offsets={"1": 1}, ok=True),
              _ev("commit", 0, 104, offsets={"0": 4}, ok=True),
              _ev("revoked", 0, 105, partitions=[0]), _ev("closed", 0, 106),
              _ev("revoked", 1, 300, partitions=[1]), _ev("assigned", 1, 320, partitions=[0, 1])]
    proc = _processed([
        (0, 0, 0, 0, 10), (0, 2, 0, 1, 12), (1, 1, 1, 0, 11), (0, 4, 0, 2, 90), (0, 6, 0, 3, 91),
        (1, 3, 1, 1, 330), (1, 8, 0, 4, 340), (1, 10, 0, 5, 341),
        (1, 5, 1, 2, 342), (1, 7, 1, 3, 343), (1, 9, 1, 4, 344), (1, 11, 1, 5, 345),
    ])
    s = group_summary(read=READ, processed=proc, events=events, fault_ts_ns=100 * MS,
                      rejoin_ts_ns=None, fault="leave-consumer")
    assert s["moved_partitions"] == [0] and s["rebalance_pause_ms"] == 240.0
    assert (s["redelivered"], s["lost_unprocessed"], s["offsets_explain"]) == (0, 0, True)
    assert s["committed_at_fault"] == {"0": 4} == s["processed_at_fault"]


def test_an_incremental_rebalance_moves_only_the_victims_partition_and_keeps_the_others() -> None:
    # cooperative / KIP-848: events list the change, ``owned`` the whole; member 1 keeps
    # partition 1 throughout and is only given partition 0 (at 320 ms), from its commit
    events = [_ev("assigned", 0, 0, partitions=[0], owned=[0]),
              _ev("assigned", 1, 0, partitions=[1], owned=[1]),
              _ev("commit", 1, 50, offsets={"1": 1}, ok=True),
              _ev("commit", 0, 104, offsets={"0": 4}, ok=True),
              _ev("revoked", 0, 105, partitions=[0], owned=[]), _ev("closed", 0, 106),
              _ev("assigned", 1, 320, partitions=[0], owned=[0, 1])]
    proc = _processed([
        (0, 0, 0, 0, 10), (0, 2, 0, 1, 12), (1, 1, 1, 0, 11), (0, 4, 0, 2, 90), (0, 6, 0, 3, 91),
        (1, 3, 1, 1, 150), (1, 5, 1, 2, 200), (1, 8, 0, 4, 340), (1, 10, 0, 5, 341),
        (1, 7, 1, 3, 342), (1, 9, 1, 4, 344), (1, 11, 1, 5, 345),
    ])
    s = group_summary(read=READ, processed=proc, events=events, fault_ts_ns=100 * MS,
                      rejoin_ts_ns=None, fault="leave-consumer")
    assert s["moved_partitions"] == [0] and s["rebalance_pause_ms"] == 240.0
    assert s["successor_assigned_ms"] == 220.0
    assert s["survivors_pause_ms"] == 142.0  # partition 1 read on through the rebalance
    assert (s["redelivered"], s["lost_unprocessed"], s["offsets_explain"]) == (0, 0, True)
    live = [(0, 0), (1, 0)]
    # a member that gave up some partitions but kept others still counts as assigned
    partial = [*events[:2], _ev("revoked", 0, 5, partitions=[], owned=[0])]
    assert stable_assignment(partial, live, 2) == {(0, 0): [0], (1, 0): [1]}
    assert stable_assignment(events, [(1, 0)], 2) == {(1, 0): [0, 1]}
    assert stable_assignment(events[:6], [(1, 0)], 2) is None  # partition 0 unowned


def test_the_consumer_table_shows_each_trial_and_the_median_and_max_per_strategy() -> None:
    from kafkalab.faults.summary import format_consumer_table

    base = {"profile": "default", "fault": "kill-consumer", "session_timeout_ms": 6000,
            "heartbeat_interval_ms": 2000, "processed_records": 4000, "expected_redelivered": 0,
            "lost_unprocessed": 0, "expected_lost": 0, "successor_assigned_ms": 5400.0,
            "survivors_pause_ms": 150.0, "rejoin_pause_ms": None, "verdict": "ok"}
    trials = [{**base, "trial_id": f"t{k}", "commit": "after", "redelivered": k,
               "rebalance_pause_ms": 5000.0 + 1000 * k} for k in (1, 2, 3)]
    lines = format_consumer_table(trials).splitlines()
    assert lines[0].split()[:3] == ["trial", "session", "hb"]
    assert [ln.split()[0] for ln in lines[2:5]] == ["t1", "t2", "t3"]
    median = next(ln for ln in lines if ln.startswith("default-kill-consumer-after median (3)"))
    maximum = next(ln for ln in lines if ln.startswith("default-kill-consumer-after max (3)"))
    assert "7,000" in median and "8,000" in maximum and "—" in median  # no rejoin: no figure


def test_a_message_the_producer_wrote_twice_is_placed_at_its_first_copy() -> None:
    read = _reread({0: [0, 1, 1]})  # a retry wrote seq 1 again at offset 2
    d = deliveries(2, np.zeros(2, dtype=bool), read,
                   _processed([(0, 0, 0, 0, 1), (0, 1, 0, 1, 2), (0, 1, 0, 2, 3)]))
    assert d["offset"].tolist() == [0, 1] and d["in_topic"].tolist() == [1, 2]
    assert d["delivery"].tolist() == ["once", "once"]  # each copy in the topic processed once


def test_a_survivors_failed_commit_is_predicted_by_the_offsets_too() -> None:
    # Member 1 processed partition 1's offsets 0-2 but its commit of them failed; after the
    # rebalance it starts partition 1 again at 0: three records twice, as the offsets say.
    events = [*EVENTS, _ev("commit", 1, 35, offsets={"1": 3}, ok=False, error="REBALANCE_IN_PROGRESS"),
              _ev("commit", 0, 36, offsets={"0": 4}, ok=True)]
    proc = _processed([
        (0, 0, 0, 0, 10), (1, 1, 1, 0, 11), (0, 2, 0, 1, 12), (1, 3, 1, 1, 21), (0, 4, 0, 2, 22),
        (1, 5, 1, 2, 31), (0, 6, 0, 3, 32),
        (1, 1, 1, 0, 530), (1, 3, 1, 1, 531), (1, 5, 1, 2, 532), (1, 7, 1, 3, 533),
        (1, 8, 0, 4, 600), (1, 10, 0, 5, 601), (1, 9, 1, 4, 602), (1, 11, 1, 5, 603),
    ])
    s = group_summary(read=READ, processed=proc, events=events, fault_ts_ns=100 * MS,
                      rejoin_ts_ns=None, fault="kill-consumer")
    assert (s["redelivered"], s["expected_redelivered"], s["offsets_explain"]) == (3, 3, True)
    assert s["failed_commits"] == 1
    # the broker's own committed offsets, sampled, count as commits the log may have missed
    lag = [{"sample_ts_ns": 400 * MS, "partition": 1, "committed_offset": 3}]
    assert expected_from_offsets(events, proc, lag) == (0, 0)


@pytest.mark.parametrize(("keeps_position", "expected"), [(False, (2, 0)), (True, (0, 0))])
def test_a_partition_given_back_to_its_member_restarts_at_the_commit_only_where_the_client_does(
        keeps_position: bool, expected: tuple[int, int]) -> None:
    # Member 0 processed offsets 0-3 of partition 0 and committed 2; a rebalance gives
    # partition 0 back to member 0: librdkafka starts at the commit (2 again), kafka-python 3
    # keeps its position.
    events = [_ev("assigned", 0, 0, partitions=[0]), _ev("commit", 0, 15, offsets={"0": 2}, ok=True),
              _ev("revoked", 0, 50, partitions=[0]), _ev("assigned", 0, 60, partitions=[0])]
    first = [(0, 0, 0, 0, 10), (0, 2, 0, 1, 11), (0, 4, 0, 2, 20), (0, 6, 0, 3, 21)]
    again = [(0, 4, 0, 2, 70), (0, 6, 0, 3, 71)] if not keeps_position else []
    proc = _processed([*first, *again, (0, 8, 0, 4, 72)])
    assert expected_from_offsets(events, proc, keeps_position=keeps_position) == expected


def test_an_owner_revoked_before_its_first_fetch_leaves_the_re_reading_to_the_next_one() -> None:
    # Member 0 processed offsets 0-3 of partition 0, committed 2 and died. On a starved machine
    # the group rebalanced twice: member 1 was given partition 0 at 500 ms and revoked before it
    # read anything; member 2, given it at 700 ms, starts at the commit: offsets 2 and 3 come
    # again once, not once per assignment. A commit that skipped records counts them once too.
    events = [_ev("assigned", 0, 0, partitions=[0]), _ev("commit", 0, 15, offsets={"0": 2}, ok=True),
              _ev("assigned", 1, 500, partitions=[0]), _ev("revoked", 1, 600, partitions=[0]),
              _ev("assigned", 2, 700, partitions=[0])]
    proc = _processed([(0, 0, 0, 0, 10), (0, 2, 0, 1, 11), (0, 4, 0, 2, 20), (0, 6, 0, 3, 21),
                       (2, 4, 0, 2, 710), (2, 6, 0, 3, 711), (2, 8, 0, 4, 712)])
    assert expected_from_offsets(events, proc) == (2, 0)
    # member 1 re-read offset 2 before it was revoked: offset 2 comes a third time at member 2
    proc1 = _processed([(0, 0, 0, 0, 10), (0, 2, 0, 1, 11), (0, 4, 0, 2, 20), (0, 6, 0, 3, 21),
                        (1, 4, 0, 2, 510), (2, 4, 0, 2, 710), (2, 6, 0, 3, 711)])
    assert expected_from_offsets(events, proc1) == (3, 0)
    skipped = [_ev("assigned", 0, 0, partitions=[0]), _ev("commit", 0, 15, offsets={"0": 5}, ok=True),
               _ev("assigned", 1, 500, partitions=[0]), _ev("assigned", 2, 700, partitions=[0])]
    proc2 = _processed([(0, 0, 0, 0, 10), (0, 2, 0, 1, 11), (2, 10, 0, 5, 710)])
    assert expected_from_offsets(skipped, proc2) == (0, 3)
    # a client that keeps its position (kafka-python 3): given the partition back before its
    # first fetch, member 1 still re-reads from the commit it started at
    again = [*events[:3], _ev("revoked", 1, 505, partitions=[0]), _ev("assigned", 1, 510, partitions=[0])]
    proc3 = _processed([(0, 0, 0, 0, 10), (0, 2, 0, 1, 11), (0, 4, 0, 2, 20), (0, 6, 0, 3, 21),
                        (1, 4, 0, 2, 600), (1, 6, 0, 3, 601)])
    assert expected_from_offsets(again, proc3, keeps_position=True) == (2, 0)


def test_when_some_commits_leave_no_trace_the_offsets_are_not_asked_to_explain() -> None:
    s = group_summary(read=READ, processed=_processed([(0, 0, 0, 0, 10)]), events=EVENTS,
                      fault_ts_ns=100 * MS, rejoin_ts_ns=None, fault="kill-consumer",
                      commits_logged=False)
    assert (s["expected_redelivered"], s["expected_lost"], s["offsets_explain"]) == (None, None, None)


def _member(tmp_path: Path, commit: str) -> Any:
    from kafkalab.faults.member import Member

    plan = {"group_dir": str(tmp_path), "commit": commit, "batch_msgs": 10, "batch_wait_ms": 5000,
            "intended": 100, "client": "confluent-kafka"}
    return Member(plan, 0, 0)


def _value(seq: int) -> bytes:
    from kafkalab.payloads import HEADER, HEADER_VERSION, MAGIC

    return HEADER.pack(MAGIC, HEADER_VERSION, 0, seq, 0, b"\0" * 8) + b"x"


@pytest.mark.parametrize("commit", ["after", "before"])
def test_a_revoked_member_drops_its_unprocessed_batch_and_seeks_back_to_it(tmp_path: Path, commit: str) -> None:
    m = _member(tmp_path, commit)
    m.take([(_value(5), 1, 40), (_value(6), 2, 7), (_value(7), 1, 41)])
    rewound: list[dict[int, int]] = []
    m.on_revoke([1, 2], rewound.append)
    assert rewound == [{1: 40, 2: 7}] and m.pending == [] and m.processed_count == 0
    events = read_events(tmp_path)
    assert [e["ev"] for e in events] == ["dropped", "revoked"]
    assert events[0]["records"] == 3 and events[0]["rewound_to"] == {"1": 40, "2": 7}


def test_under_auto_commit_a_revoked_member_processes_its_batch_the_client_already_committed(
        tmp_path: Path) -> None:
    m = _member(tmp_path, "auto")
    m.take([(_value(5), 1, 40), (_value(7), 1, 41)])
    m.on_revoke([1], lambda _first: pytest.fail("nothing to seek back to"))
    assert m.processed_count == 2 and m.pending == []


def test_a_before_batch_whose_commit_fails_is_not_processed(tmp_path: Path) -> None:
    m = _member(tmp_path, "before")
    m.take([(_value(k), 0, 10 + k) for k in range(10)])
    rewound: list[dict[int, int]] = []
    m.flush(lambda _offsets: False, rewound.append)
    assert m.processed_count == 0 and rewound == [{0: 10}]


def test_the_rejoin_pause_is_a_gap_that_starts_after_the_rejoin_not_the_kills() -> None:
    # kill at 100 ms: partition 1 stalls until 520 ms; the member rejoins at 700 ms and
    # partition 1 stalls again from 710 to 900 ms.
    proc = _processed([(1, 1, 1, 0, 10), (1, 3, 1, 1, 520), (1, 5, 1, 2, 710), (1, 7, 1, 3, 900)])
    s = group_summary(read=READ, processed=proc, events=EVENTS, fault_ts_ns=100 * MS,
                      rejoin_ts_ns=700 * MS, fault="kill-consumer")
    assert s["rejoin_pause_ms"] == 190.0


def test_the_fault_phase_spreads_over_one_heartbeat_within_the_room_after_the_warm_up() -> None:
    from kafkalab.faults.group import PHASE_STEP, fault_phase_offset_s

    offsets = [fault_phase_offset_s(k, 3.0, 4.0) for k in range(1, 11)]
    assert offsets[0] == pytest.approx(3.0 * PHASE_STEP, abs=1e-6)
    assert all(0.0 <= o < 3.0 for o in offsets) and len(set(offsets)) == 10
    # ten trials leave no gap of more than a fifth of the interval unsampled
    edges = sorted([0.0, *offsets, 3.0])
    assert max(b - a for a, b in itertools.pairwise(edges)) < 3.0 / 5
    assert fault_phase_offset_s(1, 3.0, 1.0) == pytest.approx(PHASE_STEP, abs=1e-6)  # the room
    assert fault_phase_offset_s(1, 3.0, -1.0) == 0.0
