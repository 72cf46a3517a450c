"""The closed loop's book-keeping (scenarios.base.Tracker): every sent message ends as one
row with its status, whatever order and thread the events come from."""

from __future__ import annotations

import threading
from pathlib import Path

from kafkalab.config.models import Profile, Workload
from kafkalab.scenarios.base import Cell, Tracker


def _cell(tmp_path: Path, messages: int = 4, warmup: int = 1) -> Cell:
    w = Workload(name="t", messages=messages, warmup_messages=warmup, message_timeout_s=1.0)
    return Cell(run_id="r", workload=w, profile=Profile(name="p", goal="latency"), payload="1kb",
                body=b"x" * 10, topic="t", descriptor=None, work_dir=tmp_path)


def test_every_outcome_is_a_row(tmp_path: Path) -> None:
    cell = _cell(tmp_path)
    t = Tracker(cell)
    t0 = 1_000_000_000
    for seq in range(5):
        t.on_send(seq, t0 + seq)
    t.on_ack(0, t0 + 10)
    assert t.on_receive(cell.message(0, t0), t0 + 100, 0, 7) == 0          # in time
    assert t.on_receive(cell.message(1, t0), t0 + 2_000_000_000, 0, 8) == 1  # after the timeout
    assert t.on_receive(cell.message(0, t0), t0 + 200, 0, 7) == 0          # again: duplicate
    t.on_send_error(2, "BufferError: queue full")
    t.on_ack(3, t0 + 50, "KafkaError: _MSG_TIMED_OUT")
    other = Cell(**{**cell.__dict__, "nonce": b"\0" * 8})
    assert t.on_receive(other.message(4, t0), t0 + 300, 0, 9) is None       # not this cell's
    rows = t.samples()
    assert [(r.seq, r.status) for r in rows] == [
        (0, "ok"), (1, "late"), (2, "error"), (3, "error"), (4, "lost"), (0, "duplicate")]
    assert rows[0].is_warmup and not rows[1].is_warmup
    assert rows[0].e2e_latency_ms == 100 / 1e6 and rows[0].publish_latency_ms == 10 / 1e6
    assert t.foreign_records == 1 and not t.all_received()


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
            t.on_receive(cell.message(seq, seq), seq + 9, 0, seq)

    threads = [threading.Thread(target=acks), threading.Thread(target=receipts)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    rows = t.samples()
    assert len(rows) == 2000 and t.all_received()
    assert all(r.status == "ok" and r.ack_ts_ns == r.seq + 5 for r in rows)
