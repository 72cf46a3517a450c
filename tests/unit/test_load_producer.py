"""The open-loop schedule: message i is due at t0 + i/R, no slot is skipped, a stall shows
as publish delay, the four outcomes add up. The client here is an in-memory stand-in for
the schedule's logic only; the real producer is exercised in tests/integration/test_load.py."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from kafkalab.load.files import SENDS_SCHEMA
from kafkalab.load.producer import (
    ACKED,
    SEND_KEY,
    Client,
    ProducerPlan,
    SendLog,
    load_nonce,
    run_open_loop,
    split_nonce,
)
from kafkalab.payloads import read_stamp
from kafkalab.scenarios.base import now_ns


class SimClock:
    """Simulated CLOCK_MONOTONIC: time moves only when the producer's loop sleeps or waits,
    so what a test asserts about the schedule holds however busy the machine is."""

    def __init__(self) -> None:
        self.ns = now_ns()
        self.loop_thread = threading.current_thread()

    def now(self) -> int:
        return self.ns

    def sleep(self, seconds: float) -> None:
        self.ns += max(0, int(seconds * 1e9))


class Recorder(Client):
    """Accepts every message (optionally refusing while ``full`` is set) and acks it. With a
    :class:`SimClock`, a wait for queue space in the loop's thread advances simulated time
    (the delivery-report thread's waits do not)."""

    def __init__(self, log: SendLog, stall_at: int | None = None, stall_s: float = 0.0,
                 ack: bool = True, clock: SimClock | None = None) -> None:
        self.log, self.stall_at, self.stall_s, self.ack = log, stall_at, stall_s, ack
        self.clock = clock
        self.sent: list[tuple[int, bytes, bytes, int]] = []
        self.headers: list[list[tuple[str, str | bytes | None]] | None] = []
        self.full_until = 0

    def now(self) -> int:
        return self.clock.now() if self.clock is not None else now_ns()

    def send(self, topic: str, value: bytes, key: bytes, partition: int, seq: int,
             headers: list[tuple[str, str | bytes | None]] | None = None) -> bool:
        self.headers.append(headers)
        if seq == self.stall_at and not self.full_until:
            self.full_until = self.now() + int(self.stall_s * 1e9)
        if self.now() < self.full_until:
            return False  # queue full: the loop must wait, never skip
        self.sent.append((seq, value, key, partition))
        if self.ack:
            self.log.record(seq, self.now(), None, partition, seq)
        return True

    def serve(self, timeout_s: float) -> None:
        if self.clock is not None and threading.current_thread() is self.clock.loop_thread:
            self.clock.sleep(timeout_s)
        else:
            time.sleep(timeout_s)

    def flush(self, timeout_s: float) -> None:
        pass


def _plan(n: int, rate: float, deadline_s: float = 30.0, partitions: int = 2) -> ProducerPlan:
    return ProducerPlan(topic="t", partitions=partitions, rate_msgs_per_s=rate, n=n,
                        warmup_messages=2, body=b"x" * 10, base64_body=False,
                        nonce=load_nonce(b"abcd", 7), send_deadline_s=deadline_s,
                        message_timeout_s=1.0)


def test_every_slot_is_sent_in_order_with_its_intended_time_and_send_time() -> None:
    log = SendLog(50, np.zeros(50, dtype=np.int64))
    client = Recorder(log)
    t0 = now_ns() + 5_000_000
    stop = run_open_loop(_plan(50, 1000.0), client, log, t0)
    assert [s for s, *_ in client.sent] == list(range(50))
    assert list(log.intended_ts_ns) == [t0 + int(i * 1e6) for i in range(50)]
    assert (log.send_ts_ns >= log.intended_ts_ns).all()
    assert stop >= int(log.send_ts_ns.max())
    for seq, value, key, partition in client.sent:
        stamp = read_stamp(value)
        assert stamp is not None
        assert stamp[0] == seq and stamp[1] == log.intended_ts_ns[seq]
        assert split_nonce(stamp[2]) == (b"abcd", 7)
        assert SEND_KEY.unpack(key) == (seq, log.send_ts_ns[seq])
        assert partition == seq % 2
    assert log.counts() == {"acked": 50, "failed": 0, "indeterminate": 0, "unsent": 0,
                            "aborted": 0}


def test_records_carry_their_seq_header_only_when_asked() -> None:
    from dataclasses import replace

    from kafkalab.load.producer import SEQ_HEADER_PREFIX

    for tag in (False, True):
        log = SendLog(5, np.zeros(5, dtype=np.int64))
        client = Recorder(log)
        run_open_loop(replace(_plan(5, 1000.0), seq_header=tag), client, log, now_ns() + 1_000_000)
        want = [[(f"{SEQ_HEADER_PREFIX}{i}", b"")] if tag else None for i in range(5)]
        assert client.headers == want


def test_a_stall_is_publish_delay_and_the_overdue_messages_go_back_to_back() -> None:
    n, rate = 60, 200.0  # 5 ms apart; a 100 ms stall at message 20 makes 20 overdue
    log = SendLog(n, np.zeros(n, dtype=np.int64))
    clock = SimClock()
    client = Recorder(log, stall_at=20, stall_s=0.1, clock=clock)
    run_open_loop(_plan(n, rate), client, log, clock.now() + 5_000_000, clock=clock.now,
                  sleep=clock.sleep)
    delay_ms = (log.send_ts_ns - log.intended_ts_ns) / 1e6
    assert [s for s, *_ in client.sent] == list(range(n))  # never skipped
    assert delay_ms[20] >= 95  # the stalled message waited the whole stall
    assert delay_ms[20:30].min() > delay_ms[:20].max()  # its successors were overdue too
    # caught up afterwards, without pretending the overdue ones were on time
    assert delay_ms[-1] < 5


def test_messages_past_the_deadline_are_unsent_and_the_outcomes_add_up() -> None:
    n = 100
    log = SendLog(n, np.zeros(n, dtype=np.int64))
    clock = SimClock()
    client = Recorder(log, stall_at=10, stall_s=5.0, clock=clock)
    run_open_loop(_plan(n, 1000.0, deadline_s=0.2), client, log, clock.now(), clock=clock.now,
                  sleep=clock.sleep)
    counts = log.counts()
    assert counts["acked"] == 10
    assert counts["unsent"] == 90
    assert sum(counts.values()) == n
    assert (log.intended_ts_ns[10:] > 0).all()  # the unsent keep their scheduled times


def test_an_unanswered_message_is_indeterminate_and_a_timeout_too() -> None:
    n = 5
    log = SendLog(n, np.zeros(n, dtype=np.int64))
    run_open_loop(_plan(n, 1000.0), Recorder(log, ack=False), log, now_ns())
    log.record(0, now_ns(), None, 0, 0)
    log.record(1, now_ns(), "_MSG_TIMED_OUT", 0, None)
    log.record(2, now_ns(), "MSG_SIZE_TOO_LARGE", 0, None)
    assert log.counts() == {"acked": 1, "failed": 1, "indeterminate": 3, "unsent": 0,
                            "aborted": 0}
    assert log.outcome[0] == ACKED
    cols = log.columns(producer_id=0, warmup_messages=2)
    assert list(cols["outcome"]) == ["acked", "indeterminate", "failed", "indeterminate",
                                     "indeterminate"]
    assert cols["error"][2] == "MSG_SIZE_TOO_LARGE"
    assert list(cols["is_warmup"]) == [True, True, False, False, False]
    assert set(cols) == set(SENDS_SCHEMA.names)


def test_stop_event_ends_the_schedule_within_a_second_and_leaves_the_rest_unsent() -> None:
    n = 3000  # 3 s at 1,000 msg/s; stop is asked after 50 ms and honoured at the 1 s tick
    log = SendLog(n, np.zeros(n, dtype=np.int64))
    stop = threading.Event()
    threading.Timer(0.05, stop.set).start()
    run_open_loop(_plan(n, 1000.0), Recorder(log), log, now_ns(), stop=stop)
    counts = log.counts()
    assert 0 < counts["unsent"] < n
    assert counts["acked"] + counts["unsent"] == n


@pytest.mark.parametrize("producer_id", [0, 1, 2**32 - 1])
def test_nonce_carries_the_producer_id(producer_id: int) -> None:
    assert split_nonce(load_nonce(b"\x01\x02\x03\x04\x05", producer_id)) == (b"\x01\x02\x03\x04", producer_id)


class _Msg:
    def __init__(self, partition: int, offset: int) -> None:
        self._p, self._o = partition, offset

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o


class _Err:
    def __init__(self, name: str) -> None:
        self._n = name

    def name(self) -> str:
        return self._n


def test_queued_delivery_reports_are_filed_before_anything_reads_the_log() -> None:
    log = SendLog(3, np.zeros(3, dtype=np.int64))
    log.report(0, 10, None, _Msg(1, 41))
    log.report(1, 11, _Err("_MSG_TIMED_OUT"), _Msg(1, -1))
    log.report(2, 12, _Err("NOT_LEADER_FOR_PARTITION"), _Msg(0, -1))
    assert log.counts() == {"acked": 1, "failed": 1, "indeterminate": 1, "unsent": 0,
                            "aborted": 0}
    assert not log.reports
    cols = log.columns(producer_id=0, warmup_messages=0)
    assert cols["offset"].to_pylist() == [41, None, None]
    assert cols["error"] == [None, "_MSG_TIMED_OUT", "NOT_LEADER_FOR_PARTITION"]


def test_keyed_delivery_reports_find_their_message_by_the_key() -> None:
    log = SendLog(4, np.zeros(4, dtype=np.int64))
    log.key_reports.append((SEND_KEY.pack(3, 100), 200, None, 0, 7))
    log.key_reports.append((SEND_KEY.pack(1, 101), 201, _Err("_MSG_TIMED_OUT"), 0, -1))
    assert log.absorb() == 2
    assert log.outcome[3] == ACKED and log.ack_ts_ns[3] == 200 and log.offset[3] == 7
    assert log.counts() == {"acked": 1, "failed": 0, "indeterminate": 3, "unsent": 0,
                            "aborted": 0}
    assert log.errors == {1: "_MSG_TIMED_OUT"}


def test_reports_without_an_offset_are_filed_and_a_failing_pump_fails_the_loop() -> None:
    log = SendLog(2, np.zeros(2, dtype=np.int64))
    log.key_reports.append((SEND_KEY.pack(0, 5), 6, None, None, None))  # acks=0: no offset
    log.absorb()
    assert log.outcome[0] == ACKED and log.offset[0] == -1 and log.partition[0] == -1

    class Broken(Recorder):
        def serve(self, timeout_s: float) -> None:
            raise ValueError("boom")

    log = SendLog(5000, np.zeros(5000, dtype=np.int64))
    with pytest.raises(RuntimeError, match="delivery reports could not be filed: ValueError: boom"):
        run_open_loop(_plan(5000, 1000.0), Broken(log), log, now_ns())
    assert log.counts()["unsent"] > 0  # it stopped instead of running on blind


def test_the_acked_log_ends_are_one_past_each_partitions_last_acknowledged_offset() -> None:
    import numpy as np

    from kafkalab.load.producer import SendLog

    log = SendLog(4, np.arange(4, dtype=np.int64))
    log.record(0, 10, None, 0, 7)
    log.record(1, 11, None, 1, 3)
    log.record(2, 12, None, 0, 9)
    log.record(3, 13, "timed out", 1, None)  # failed: no offset, nothing to drain to
    assert log.acked_log_ends() == {0: 10, 1: 4}
    assert SendLog(2, np.arange(2, dtype=np.int64)).acked_log_ends() == {}  # acks=0: none known
