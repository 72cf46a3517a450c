"""The closed loop's book-keeping (scenarios.base.Tracker): every sent message ends as one
row with its status, whatever order and thread the events come from, and each row reaches
the cell's sink as soon as it is final."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest

from kafkalab.config.models import Profile, Workload
from kafkalab.samples import ListSink, Sample
from kafkalab.scenarios.base import Cell, Tracker

S = 1_000_000_000
"""One second in ns."""


def _cell(tmp_path: Path, messages: int = 4, warmup: int = 1) -> Cell:
    w = Workload(name="t", messages=messages, warmup_messages=warmup, message_timeout_s=1.0)
    return Cell(run_id="r", workload=w, profile=Profile(name="p", goal="latency"), payload="1kb",
                body=b"x" * 10, topic="t", descriptor=None, work_dir=tmp_path)


def _rows(cell: Cell) -> list[tuple[int, str]]:
    sink = cell.sink
    assert isinstance(sink, ListSink)
    return [(r.seq, r.status) for r in sink.rows]


def test_every_outcome_is_a_row(tmp_path: Path) -> None:
    cell = _cell(tmp_path)
    t = Tracker(cell, loop_mode="overlapped")
    assert cell.trackers == [t]
    t0 = 1_000 * S
    for seq in range(5):
        t.on_send(seq, t0 + seq, wall_ts_ns=7)
    t.on_ack(0, t0 + 10)
    t.on_ack(1, t0 + 20)
    assert t.on_receive(cell.message(0), t0 + 100, 0, 7) == 0          # in time
    assert t.on_receive(cell.message(1), t0 + 2 * S, 0, 8) == 1        # after the timeout
    assert t.on_receive(cell.message(0), t0 + 200, 0, 7) == 0          # again: duplicate
    t.on_send_error(2, "BufferError: queue full")
    t.on_ack(3, t0 + 50, "KafkaError: _MSG_TIMED_OUT")
    other = Cell(**{**cell.__dict__, "nonce": b"\0" * 8, "trackers": []})
    assert t.on_receive(other.message(4), t0 + 300, 0, 9) is None       # not this cell's
    assert t.on_receive(b"KLAB but far too short", t0 + 300, 0, 9) is None
    assert not t.all_received()
    t.finish()
    rows = t.samples()
    assert [(r.seq, r.status) for r in rows] == [
        (0, "ok"), (1, "late"), (0, "duplicate"), (2, "error"), (3, "error"), (4, "lost")]
    assert _rows(cell) == [(r.seq, r.status) for r in rows]
    ok, late, dup = rows[0], rows[1], rows[2]
    assert ok.is_warmup and not late.is_warmup
    assert ok.e2e_latency_ms == 100 / 1e6 and ok.publish_latency_ms == 10 / 1e6
    assert late.e2e_latency_ms == pytest.approx(2000 - 1 / 1e6)
    assert dup.send_ts_ns == ok.send_ts_ns and dup.receive_ts_ns == t0 + 200 and dup.is_warmup
    assert rows[3].error == "BufferError: queue full"
    assert rows[4].error == "KafkaError: _MSG_TIMED_OUT" and rows[4].ack_ts_ns is None
    assert all(r.loop_mode == "overlapped" for r in rows)
    assert all(r.wall_ts_ns == 7 for r in rows if r.status != "duplicate")
    assert t.foreign_records == 2
    assert t.status_counts == Counter(ok=1, late=1, duplicate=1, error=2, lost=1)


def test_a_row_is_written_the_moment_it_is_final(tmp_path: Path) -> None:
    cell = _cell(tmp_path, messages=3, warmup=0)
    t = Tracker(cell)
    for seq in range(3):
        t.on_send(seq, seq * S)
    t.on_receive(cell.message(0), 100, 0, 0)    # received, ack not in yet: held
    assert _rows(cell) == []
    t.on_ack(0, 50)                             # now final
    assert _rows(cell) == [(0, "ok")]
    t.on_ack(1, S + 50)                         # acked first, then received
    assert _rows(cell) == [(0, "ok")]
    t.on_receive(cell.message(1), S + 100, 0, 1)
    assert _rows(cell) == [(0, "ok"), (1, "ok")]
    t.on_receive(cell.message(0), 300, 0, 0)    # a duplicate goes out at once
    assert _rows(cell)[-1] == (0, "duplicate")
    assert t.received(1) and not t.received(2)
    # message 2 is never received: held until finish (it could still arrive late)
    assert (2, "lost") not in _rows(cell)
    t.finish()
    assert _rows(cell)[-1] == (2, "lost")
    before = list(_rows(cell))
    t.finish()                                  # idempotent
    t.on_receive(cell.message(2), 9 * S, 0, 2)  # after finish: ignored
    t.on_ack(2, 9 * S)
    assert _rows(cell) == before


def test_received_but_never_acked_is_written_by_finish(tmp_path: Path) -> None:
    cell = _cell(tmp_path, messages=1, warmup=0)
    t = Tracker(cell)
    t.on_send(0, 0)
    t.on_receive(cell.message(0), 100, 0, 0)
    assert t.all_received() and _rows(cell) == []
    t.finish()
    (row,) = t.samples()
    assert row.status == "ok" and row.ack_ts_ns is None and row.publish_latency_ms is None


def test_an_ack_that_overtakes_on_send_is_kept(tmp_path: Path) -> None:
    cell = _cell(tmp_path, messages=1, warmup=0)
    t = Tracker(cell)
    t.on_ack(0, 40)            # the client's thread was faster than the loop
    t.on_send(0, 10)
    t.on_receive(cell.message(0), 90, 0, 0)
    (row,) = t.samples()
    assert row.status == "ok" and row.publish_latency_ms == 30 / 1e6


def test_a_failed_delivery_is_written_at_once_and_a_later_receipt_is_not_a_duplicate(
        tmp_path: Path) -> None:
    cell = _cell(tmp_path, messages=2, warmup=0)
    t = Tracker(cell)
    t.on_send(0, 0)
    t.on_ack(0, 5 * S, "KafkaError: _MSG_TIMED_OUT")
    assert _rows(cell) == [(0, "error")] and t.failed(0)
    t.on_receive(cell.message(0), 6 * S, 0, 0)
    assert _rows(cell) == [(0, "error")] and t.received_after_error == 1
    with pytest.raises(ValueError, match="already sent"):
        t.on_send(0, 7 * S)


def test_without_acks_a_receipt_is_final_and_keeps_the_round_trip(tmp_path: Path) -> None:
    cell = _cell(tmp_path, messages=2, warmup=0)
    t = Tracker(cell, expects_ack=False, loop_mode="request")
    t.on_send(0, 1_000)
    t.on_receipt(0, 1_400, round_trip_ms=0.002)
    t.on_send(1, 2_000)
    t.on_send_error(1, "ReadTimeout: read timed out")
    assert _rows(cell) == [(0, "ok"), (1, "error")]
    ok, err = t.samples()
    assert ok.publish_latency_ms is None and ok.round_trip_ms == 0.002
    assert ok.e2e_latency_ms == 400 / 1e6 and err.send_ts_ns == 2_000


def test_sent_equals_received_plus_lost_plus_error(tmp_path: Path) -> None:
    cell = _cell(tmp_path, messages=40, warmup=0)
    t = Tracker(cell)
    for seq in range(40):
        t.on_send(seq, seq * S)
        if seq % 5 == 0:
            t.on_send_error(seq, "refused")
            continue
        t.on_ack(seq, seq * S + 10)
        if seq % 7 == 0:
            continue                                            # lost
        late = seq % 3 == 0
        t.on_receive(cell.message(seq), seq * S + (2 * S if late else 100), 0, seq)
        if seq % 11 == 0:
            t.on_receive(cell.message(seq), seq * S + 200, 0, seq)  # duplicate
    t.finish()
    n = Counter(r.status for r in t.samples())
    assert n["ok"] + n["late"] + n["lost"] + n["error"] == 40
    assert n["lost"] == 4 and n["error"] == 8  # lost: 7, 14, 21, 28 and n["late"] > 0 and n["duplicate"] > 0


def test_concurrent_acks_and_receipts_lose_nothing(tmp_path: Path) -> None:
    cell = _cell(tmp_path, messages=2000, warmup=0)
    t = Tracker(cell)
    for seq in range(2000):
        t.on_send(seq, seq)

    def acks() -> None:
        for seq in range(2000):
            t.on_ack(seq, seq + 5)

    def receipts() -> None:
        for seq in range(2000):
            t.on_receive(cell.message(seq), seq + 9, 0, seq)

    threads = [threading.Thread(target=acks), threading.Thread(target=receipts)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    rows = t.samples()
    assert len(rows) == 2000 and t.all_received()
    assert len(cell.sink.rows) == 2000  # type: ignore[attr-defined]  # every row already written
    assert all(r.status == "ok" and r.ack_ts_ns == r.seq + 5 for r in rows)


class _CountingSink:
    def __init__(self) -> None:
        self.n = 0

    def write(self, sample: Sample) -> None:
        self.n += 1


def test_a_streaming_sink_gets_every_row_and_the_tracker_keeps_none(tmp_path: Path) -> None:
    cell = _cell(tmp_path, messages=3, warmup=0)
    sink = _CountingSink()
    cell.sink = sink
    t = Tracker(cell)
    for seq in range(3):
        t.on_send(seq, seq)
        t.on_ack(seq, seq + 1)
    t.on_receive(cell.message(0), 10, 0, 0)
    assert sink.n == 1
    t.finish()
    assert sink.n == 3
    with pytest.raises(RuntimeError, match="ListSink"):
        t.samples()
