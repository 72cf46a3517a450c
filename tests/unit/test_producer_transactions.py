"""The open-loop producer's transactions: a transaction per ``txn_msgs`` records, begun
before its first record and ended right after its last; every ``txn_abort_every``-th one
aborted; a record's outcome is its transaction's (committed: acked at the commit's return;
aborted: aborted; an unknown end: indeterminate, and the producer stops). The client is an
in-memory stand-in that records the calls; the real transactional producers (both clients)
run in tests/integration/test_load.py and test_faults.py."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from kafkalab.load.producer import (
    TXN_ABORTED,
    TXN_COMMITTED,
    TXN_UNKNOWN,
    ProducerPlan,
    SendLog,
    TransactionRefused,
    load_nonce,
    run_open_loop,
)
from kafkalab.scenarios.base import now_ns
from tests.unit.test_load_producer import Recorder, SimClock


class TxnRecorder(Recorder):
    """A :class:`Recorder` that also takes transactions: ``calls`` lists ``("begin", next
    seq)`` and ``("commit"|"abort", records so far)``; ``ends`` decides how the k-th
    transaction (0-based) ends, instead of as asked."""

    def __init__(self, log: SendLog, clock: SimClock, ends: dict[int, tuple[int, str]],
                 refuse_at: int | None = None) -> None:
        super().__init__(log, clock=clock)
        self.calls: list[tuple[str, int]] = []
        self.ends = ends
        self.ended = 0
        self.refuse_at = refuse_at

    def send(self, topic: str, value: bytes, key: bytes, partition: int, seq: int,
             headers: list[tuple[str, str | bytes | None]] | None = None) -> bool:
        if seq == self.refuse_at:
            self.refuse_at = None  # once: a record of the open transaction had failed
            raise TransactionRefused("produce: _STATE")
        return super().send(topic, value, key, partition, seq, headers)

    def init_transactions(self, timeout_s: float) -> None:
        self.calls.append(("init", 0))

    def begin_transaction(self) -> None:
        self.calls.append(("begin", len(self.sent)))

    def end_transaction(self, commit: bool, timeout_s: float) -> tuple[int, str | None]:
        assert self.clock is not None
        self.clock.sleep(0.004)  # a commit's round trips: the loop waits for them
        self.calls.append(("commit" if commit else "abort", len(self.sent)))
        k, self.ended = self.ended, self.ended + 1
        if k in self.ends:
            return self.ends[k]
        return (TXN_COMMITTED, None) if commit else (TXN_ABORTED, None)


def _plan(n: int, txn: int, abort_every: int | None) -> ProducerPlan:
    return ProducerPlan(topic="t", partitions=1, rate_msgs_per_s=1000.0, n=n,
                        warmup_messages=0, body=b"x" * 10, base64_body=False,
                        nonce=load_nonce(b"abcd", 0), send_deadline_s=30.0,
                        message_timeout_s=1.0, txn_msgs=txn, txn_abort_every=abort_every)


def _run(n: int, txn: int, abort_every: int | None,
         ends: dict[int, tuple[int, str]] | None = None,
         refuse_at: int | None = None) -> tuple[TxnRecorder, SendLog, dict]:
    log = SendLog(n, np.zeros(n, dtype=np.int64), transactional=True)
    clock = SimClock()
    client = TxnRecorder(log, clock, ends or {}, refuse_at)
    run_open_loop(_plan(n, txn, abort_every), client, log, clock.now() + 1_000_000,
                  clock=clock.now, sleep=clock.sleep)
    return client, log, log.columns(producer_id=0, warmup_messages=0)


def test_records_go_in_transactions_of_txn_msgs_and_every_kth_is_aborted() -> None:
    client, log, cols = _run(25, 10, 2)
    assert client.calls == [("begin", 0), ("commit", 10), ("begin", 10), ("abort", 20),
                            ("begin", 20), ("commit", 25)]  # the last, shorter one commits
    assert list(cols["outcome"]) == ["acked"] * 10 + ["aborted"] * 10 + ["acked"] * 5
    assert log.counts() == {"acked": 15, "failed": 0, "indeterminate": 0, "unsent": 0,
                            "aborted": 10}
    # an acked record's ack is its transaction's commit: one time for the whole transaction,
    # after the last record's send
    ack = np.asarray(cols["ack_ts_ns"].to_numpy(zero_copy_only=False))
    assert len(set(ack[:10])) == 1 and ack[0] > log.send_ts_ns[9]
    assert np.isnan(np.asarray(cols["ack_latency_ms"].to_numpy(zero_copy_only=False))[10:20]).all()
    assert all(e is None for e in cols["error"])
    assert cols["txn_end"] == ["committed"] * 10 + ["aborted"] * 10 + ["committed"] * 5


def test_a_commit_that_fails_abortably_is_aborted_and_says_why() -> None:
    _client, _log, cols = _run(20, 10, None, {0: (TXN_ABORTED, "commit: NOT_ENOUGH_REPLICAS")})
    assert list(cols["outcome"]) == ["aborted"] * 10 + ["acked"] * 10
    assert cols["error"][0] == "transaction: commit: NOT_ENOUGH_REPLICAS"
    assert cols["error"][10] is None


def test_an_unknown_end_is_indeterminate_and_the_producer_sends_no_more() -> None:
    client, log, cols = _run(30, 10, None, {1: (TXN_UNKNOWN, "commit: _TIMED_OUT")})
    assert client.calls[-1] == ("commit", 20)  # nothing begun after the unknown end
    assert list(cols["outcome"]) == ["acked"] * 10 + ["indeterminate"] * 10 + ["unsent"] * 10
    assert cols["error"][15] == "transaction: commit: _TIMED_OUT"
    assert log.counts()["indeterminate"] == 10
    assert cols["txn_end"] == ["committed"] * 10 + ["unknown"] * 10 + [None] * 10


def test_a_plain_log_ignores_transaction_state() -> None:
    log = SendLog(3, np.zeros(3, dtype=np.int64))
    client = Recorder(log)
    run_open_loop(replace(_plan(3, 1, None), txn_msgs=None), client, log, now_ns() + 1_000_000)
    assert log.counts()["acked"] == 3 and len(log.txn_state) == 0
    assert log.columns(0, 0)["txn_end"] == [None] * 3


def test_a_refused_record_aborts_its_transaction_and_opens_a_new_one() -> None:
    """The client refuses seq 14 (its open transaction is in an error state, e.g. a record
    of it timed out): that transaction (10-13) is aborted, seq 14 opens the next one, which
    holds 10 records (14-23); nothing is lost from the schedule."""
    client, log, cols = _run(30, 10, None, refuse_at=14)
    assert client.calls == [("begin", 0), ("commit", 10), ("begin", 10), ("abort", 14),
                            ("begin", 14), ("commit", 24), ("begin", 24), ("commit", 30)]
    assert list(cols["outcome"]) == ["acked"] * 10 + ["aborted"] * 4 + ["acked"] * 16
    assert cols["error"][10] == "transaction: produce: _STATE"
    assert log.counts()["unsent"] == 0


def test_the_last_shorter_transaction_follows_the_abort_rule() -> None:
    client, _log, cols = _run(25, 10, 3)  # the third transaction (20-24) is aborted
    assert client.calls[-1] == ("abort", 25)
    assert list(cols["outcome"]) == ["acked"] * 20 + ["aborted"] * 5
