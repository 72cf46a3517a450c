"""The fault checker, the availability figures and the trial spec, on hand-made data."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from kafkalab.faults.checker import (
    ReRead,
    judge,
    locate_lost,
    locate_lost_seqs,
    message_crc,
    parse_dump,
    parse_dump_seqs,
    sent_value,
)
from kafkalab.faults.monitor import first_full_isr, first_new_leader
from kafkalab.faults.spec import FaultTrialSpec
from kafkalab.faults.summary import error_name, format_fault_table, longest_gap_ms, trial_summary

pytestmark = pytest.mark.unit


def _read(rows: list[tuple[int, int, int]]) -> ReRead:
    r = ReRead()
    for p, off, seq in rows:
        r.partition.append(p)
        r.offset.append(off)
        r.seq.append(seq)
    return r


def test_every_message_gets_one_verdict() -> None:
    outcome = np.asarray(["acked", "acked", "failed", "failed", "indeterminate", "unsent",
                          "acked"], dtype=object)
    # seq 0 read twice (a retry's duplicate), 1 lost, 2 failed but written, 3 failed and absent,
    # 4 indeterminate and written, 5 never sent, 6 read before 4 (reordered: 4 comes later)
    read = _read([(0, 0, 0), (0, 1, 0), (0, 2, 2), (0, 3, 6), (0, 4, 4)])
    v = judge(outcome, np.zeros(7, dtype=np.int32), np.arange(7), np.zeros(7, dtype=bool), read)
    assert list(v["verdict"]) == ["ok", "acked_lost", "failed_but_present", "unseen",
                                  "indeterminate_present", "unseen", "ok"]
    assert list(v["read_count"]) == [2, 0, 1, 0, 1, 0, 1]
    assert list(v["first_read_offset"]) == [0, -1, 2, -1, 4, -1, 3]
    assert list(np.flatnonzero(v["reordered"])) == [4]


def test_reordering_is_judged_per_partition() -> None:
    outcome = np.asarray(["acked"] * 4, dtype=object)
    read = _read([(0, 0, 2), (1, 0, 1), (1, 1, 3), (0, 1, 0)])
    v = judge(outcome, np.asarray([0, 1, 0, 1], dtype=np.int32), np.full(4, -1),
              np.zeros(4, dtype=bool), read)
    assert list(np.flatnonzero(v["reordered"])) == [0]


def test_message_crc_matches_kafka_pythons_v0_records() -> None:
    """The CRC the log lookup compares against is the one Kafka stores: checked against
    kafka-python's own message-format-v0 builder (an independent implementation)."""
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    b = LegacyRecordBatchBuilder(magic=0, compression_type=0, batch_size=1 << 20)
    value = sent_value(b"x" * 100, 7, 123_456_789, b"noncenon", False)
    key = (7).to_bytes(8, "big") + (42).to_bytes(8, "big")
    assert message_crc(key, value) == b.append(0, None, key, value).crc
    assert message_crc(None, b"v") == b.append(1, None, None, b"v").crc


def test_dump_log_segments_output_is_parsed_and_lost_messages_located() -> None:
    text = ("Dumping /x/00000000000000000000.log\nStarting offset: 0\n"
            "offset: 0 position: 0 isvalid: true payloadsize: 1056 magic: 0 compresscodec: "
            "NoCompressionCodec crc: 4026127919 keysize: 16\n"
            "offset: 1 position: 1090 isvalid: true payloadsize: 1056 magic: 0 compresscodec: "
            "NoCompressionCodec crc: 707724590 keysize: 16\n")
    assert parse_dump(text) == {0: 4026127919, 1: 707724590}
    found = locate_lost([{"seq": 5, "crc": 707724590}, {"seq": 6, "crc": 1}],
                        {0: {0: 4026127919}, 2: {0: 4026127919, 1: 707724590}})
    assert found == {5: "2", 6: ""}


def _poll(ts: int, leader: int, isr: str, p: int = 0) -> dict[str, object]:
    return {"sample_ts_ns": ts, "partition": p, "leader": leader, "leader_epoch": 0,
            "isr": isr, "isr_size": len(isr.split(",")) if isr else 0, "brokers_alive": "0,1,2"}


def test_new_leader_and_full_isr_from_the_timeline() -> None:
    rows = [_poll(10, 1, "1,0,2"), _poll(20, 1, "1,0,2"),  # stale: ZooKeeper still shows it
            _poll(30, -1, "1"), _poll(40, 0, "0,2"), _poll(50, 0, "0,2"), _poll(60, 0, "0,2,1")]
    assert first_new_leader(rows, 15, old_leader=1) == 40
    assert first_full_isr(rows, 15, rf=3, partitions=1) == 60  # the stale full ISR does not count
    assert first_full_isr(rows, 15, rf=3, partitions=1, not_before_ns=61) is None
    assert first_full_isr(rows[:2], 0, rf=3, partitions=1) is None  # it never shrank
    assert first_new_leader(rows[:2], 0, old_leader=1) is None


def test_longest_gap_counts_only_gaps_ending_after_the_fault() -> None:
    ts = np.asarray([1_000_000, 2_000_000, 9_000_000, 10_000_000, 10_500_000, 0], dtype=np.int64)
    assert longest_gap_ms(ts, None) == 7.0
    assert longest_gap_ms(ts, 9_500_000) == 1.0
    assert longest_gap_ms(ts[:1], None) is None


def test_trial_summary_counts_add_up() -> None:
    outcome = np.asarray(["acked", "acked", "failed", "indeterminate"], dtype=object)
    v = judge(outcome, np.zeros(4, dtype=np.int32), np.arange(4), np.zeros(4, dtype=bool),
              _read([(0, 0, 0), (0, 1, 0), (0, 2, 3)]))
    s = trial_summary(verdicts=v, sends={"ack_ts_ns": np.asarray([10, 30, 40, -1])},
                      receipts_ts_ns=np.asarray([11, 31]), lag_rows=[],
                      events={"fault_ts_ns": 20, "heal_ts_ns": 25},
                      errors=[None, None, "KafkaError{code=NOT_LEADER_FOR_PARTITION}", None],
                      rf=3, rate_msgs_per_s=100, lag_interval_s=0.5, in_broker_logs={1: ""})
    assert (s["acked"], s["failed"], s["indeterminate"], s["unsent"]) == (2, 1, 1, 0)
    assert (s["acked_lost"], s["indeterminate_present"], s["unseen"], s["duplicates"]) == (1, 1, 1, 1)
    assert s["acked_lost_absent_from_logs"] == 1 and s["acked_lost_in_broker_logs"] == 0
    assert s["acks_after_fault"] == 1 and s["recovered"] is True
    assert s["errors_by_type"] == {"NOT_LEADER_FOR_PARTITION": 1, "no answer": 1}
    assert "lost" in format_fault_table([{**s, "trial_id": "x", "verdict": "loss"}])


def test_recovery_is_timed_from_the_heal_to_the_first_ack_or_receipt_after_it() -> None:
    from kafkalab.faults.summary import first_after_ms

    ts = np.asarray([1_000_000, 9_000_000, 12_500_000, 0], dtype=np.int64)
    assert first_after_ms(ts, 10_000_000) == 2.5  # the heal at 10 ms, the first after 12.5
    assert first_after_ms(ts, 20_000_000) is None  # nothing after the heal
    assert first_after_ms(ts, None) is None  # no heal


def test_error_names() -> None:
    assert error_name("KafkaError{code=_MSG_TIMED_OUT,val=-192}") == "_MSG_TIMED_OUT"
    assert error_name(None) == "no answer"


def test_spec_refuses_a_timeline_that_cannot_show_recovery() -> None:
    with pytest.raises(ValidationError, match="too short for sigstop-leader"):
        FaultTrialSpec(fault="sigstop-leader", duration_s=12, fault_at_s=3)
    with pytest.raises(ValidationError, match="inside the warm-up"):
        FaultTrialSpec(fault="sigkill-leader", warmup_s=5, fault_at_s=3)
    s = FaultTrialSpec(profile="availability", acks=1, fault="lossy-leader-crash")
    assert s.trial_id("all") == "availability-lossy-leader-crash-acks-1-t1"
    assert s.effective_down_s == 2.0
    cell = s.load_cell()
    assert cell.consumers == 1 and cell.acks == "1" and cell.trial == 1


def test_sends_with_missing_values_are_read_as_minus_one() -> None:
    """An unanswered message has no offset and an unsent one no send time (nulls in
    sends.parquet): the checker reads them as -1, in seq order (a matrix trial once failed on
    the null offset of its one indeterminate message)."""
    from kafkalab.faults.engine import sends_by_seq

    col = sends_by_seq({"seq": [1, 0], "partition": [0, None], "offset": [None, 5],
                        "send_ts_ns": [10, None], "ack_ts_ns": [None, 20],
                        "intended_ts_ns": [9, 8], "is_warmup": [False, True],
                        "outcome": ["indeterminate", "acked"], "error": [None, "x"]})
    assert list(col["seq"]) == [0, 1] and list(col["offset"]) == [5, -1]
    assert list(col["partition"]) == [-1, 0] and list(col["send_ts_ns"]) == [-1, 10]
    assert list(col["outcome"]) == ["acked", "indeterminate"] and list(col["error"]) == ["x", None]
    v = judge(col["outcome"], col["partition"], col["offset"], col["is_warmup"], _read([(0, 5, 0)]))
    assert list(v["verdict"]) == ["ok", "unseen"]


# DumpLogSegments of Kafka 4.4.0 on a v2 log, as printed (one batch of three records; a record
# of another producer without the header)
DUMP_V2 = """\
Dumping /data/node0/hdr-0/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 3 count: 4 baseSequence: 0 lastSequence: 2 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1795768910354 size: 205 magic: 2 compresscodec: none crc: 1891956082 isvalid: true
| offset: 0 CreateTime: 1795768910354 keySize: 16 valueSize: 7 sequence: 0 headerKeys: [kafkalab.seq.5]
| offset: 1 CreateTime: 1795768910354 keySize: 16 valueSize: 7 sequence: 1 headerKeys: [kafkalab.seq.200]
| offset: 2 CreateTime: 1795768910354 keySize: 16 valueSize: 7 sequence: 2 headerKeys: [trace-id, kafkalab.seq.70000]
| offset: 3 CreateTime: 1795768910354 keySize: -1 valueSize: 7 sequence: -1 headerKeys: []
"""


def test_a_v2_dump_gives_each_tagged_records_seq() -> None:
    assert parse_dump_seqs(DUMP_V2) == {0: 5, 1: 200, 2: 70000}
    assert parse_dump(DUMP_V2) == {}  # the v0 CRC lines are not there: no false match


def test_lost_seqs_are_located_in_the_logs_that_hold_them() -> None:
    held = {0: {1, 2, 3}, 1: {2, 3}, 2: set()}
    assert locate_lost_seqs([1, 2, 9], held) == {1: "0", 2: "0,1", 9: ""}


def test_an_aborted_record_a_committed_reader_sees_is_judged_visible() -> None:
    """The transactional verdicts: an aborted record the read_committed re-read did not find
    is ``aborted``, one it found is ``aborted_visible`` (the isolation failed); the
    read_uncommitted re-read's copies are counted apart, so the summary can say the aborted
    records were in the log."""
    outcome = np.asarray(["acked", "aborted", "aborted", "aborted"], dtype=object)
    committed = _read([(0, 0, 0), (0, 2, 2)])  # seq 2 aborted, yet read: a violation
    uncommitted = _read([(0, 0, 0), (0, 1, 1), (0, 2, 2)])  # seq 3's records never written
    v = judge(outcome, np.zeros(4, dtype=np.int32), np.arange(4), np.zeros(4, dtype=bool),
              committed, uncommitted)
    assert list(v["verdict"]) == ["ok", "aborted", "aborted_visible", "aborted"]
    assert list(v["uncommitted_read_count"]) == [1, 1, 1, 0]
    s = trial_summary(verdicts=v, sends={"ack_ts_ns": np.asarray([10, -1, -1, -1]),
                                         "txn_end": np.asarray(["committed", "aborted",
                                                                "aborted", "aborted"])},
                      receipts_ts_ns=np.asarray([11]), lag_rows=[], events={}, errors=[None] * 4,
                      rf=3, rate_msgs_per_s=100, lag_interval_s=0.5, in_broker_logs={})
    assert (s["aborted"], s["aborted_visible"], s["aborted_read_uncommitted"]) == (3, 1, 2)
    assert s["txn_committed_unacked"] == 0
    plain = judge(outcome[:1], np.zeros(1, dtype=np.int32), np.arange(1),
                  np.zeros(1, dtype=bool), committed)
    assert list(plain["uncommitted_read_count"]) == [None]
    assert trial_summary(verdicts=plain, sends={"ack_ts_ns": np.asarray([10])},
                         receipts_ts_ns=np.asarray([11]), lag_rows=[], events={},
                         errors=[None], rf=3, rate_msgs_per_s=100, lag_interval_s=0.5,
                         in_broker_logs={})["aborted_read_uncommitted"] is None


def test_a_committed_transaction_missing_a_failed_record_is_counted() -> None:
    """The producer was told a transaction committed while one of its records had failed
    (kafka-python 3.0.12 did so after a leader kill): the record is indeterminate, the
    summary counts it in ``txn_committed_unacked``."""
    outcome = np.asarray(["acked", "indeterminate"], dtype=object)
    v = judge(outcome, np.zeros(2, dtype=np.int32), np.arange(2), np.zeros(2, dtype=bool),
              _read([(0, 0, 0)]), _read([(0, 0, 0)]))
    s = trial_summary(verdicts=v, sends={"ack_ts_ns": np.asarray([10, -1]),
                                         "txn_end": np.asarray(["committed", "committed"])},
                      receipts_ts_ns=np.asarray([11]), lag_rows=[], events={},
                      errors=[None, "KafkaTimeoutError: Expiring 1 record(s)"], rf=3,
                      rate_msgs_per_s=100, lag_interval_s=0.5, in_broker_logs={})
    assert s["txn_committed_unacked"] == 1 and s["unseen"] == 1
