"""The open-loop, fixed-rate producer.

**One schedule.** Message *i* is *intended* at ``t0 + i/R``. The producer sleeps until a
message is due and sends it; when it is late (a stall, a full queue) it sends the overdue
messages back to back until it is on schedule again. It never skips a slot, and every
latency is also measured from the intended time, so catching up is never silent: the
stall shows as publish delay (``send − intended``) and in the corrected e2e latency of
every message it delayed (coordinated omission, as wrk2 and OMB measure it).

**What is timed.** The value (stamp header with seq, intended time, run nonce and producer
id, then the body) is built before the clock is read (the delivery callback is one per client). Between
the clock read (``send_ts_ns``) and ``produce()`` there is only the packing of the 16-byte
key that carries ``(seq, send_ts_ns)`` (0.9 has no headers or timestamps). The partition is
explicit, ``seq % partitions``.

**Outcomes.** Every intended message ends as exactly one of ``acked`` (the broker
confirmed it; with acks=0 the client's own confirmation), ``failed`` (a definite error),
``indeterminate`` (no answer by the end, or a timeout: the broker may have written it) or
``unsent`` (the run ended or was interrupted before its turn). Book-keeping lives in
preallocated arrays (40 bytes per intended message), written at the end.

**Transactions** (``ProducerPlan.txn_msgs``). The loop begins a transaction before the first
record of each run of ``txn_msgs`` records and ends it right after the last one is handed to
the client, in the sending thread: a commit's wait is the next records' publish delay, as it
is for an application with one producer thread. A record's outcome is its transaction's
(:meth:`SendLog.end_transaction`): ``acked`` when the commit returned (its ack time is that
return), ``aborted`` when the transaction was aborted (deliberately every
``txn_abort_every``-th by position, after a flush so its records are in the log; because the
commit failed with an abortable error; or because the client refused a record, its
transaction in an error state after one of its records failed: the loop aborts it and the
refused record opens the next), ``indeterminate`` when neither is known (a fatal error, a
commit that timed out: the coordinator may still complete it), whatever the record's own
delivery report said. ``init_transactions`` runs before the schedule's t0.
"""

from __future__ import annotations

import contextlib
import struct
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kafkalab.load.client_view import LeaderWatch
from kafkalab.payloads import stamp
from kafkalab.progress import Progress, noop
from kafkalab.scenarios.base import now_ns

SEND_KEY = struct.Struct(">qq")
"""The record key: ``(seq, send_ts_ns)``, big-endian int64 each. The seq lets the delivery
report name its message without a per-message callback object; the send time (CLOCK_MONOTONIC)
is read the instant before ``produce()``."""

SEQ_HEADER_PREFIX = "kafkalab.seq."
"""A tagged record's one header: ``kafkalab.seq.<seq>`` with an empty value
(:attr:`kafkalab.load.spec.LoadCellSpec.seq_header`). The seq is in the header's *key*
because DumpLogSegments prints header keys, not values."""

PENDING, ACKED, FAILED, INDETERMINATE, UNSENT, ABORTED = 0, 1, 2, 3, 4, 5
OUTCOME_NAMES = {ACKED: "acked", FAILED: "failed", INDETERMINATE: "indeterminate",
                 UNSENT: "unsent", PENDING: "indeterminate", ABORTED: "aborted"}

TXN_OPEN, TXN_COMMITTED, TXN_ABORTED, TXN_UNKNOWN = 0, 1, 2, 3
"""How a record's transaction ended (:attr:`SendLog.txn_state`): not (yet) ended, committed,
aborted, or unknown (a fatal error or a commit that timed out)."""
TXN_END_NAMES = {TXN_OPEN: "open", TXN_COMMITTED: "committed", TXN_ABORTED: "aborted",
                 TXN_UNKNOWN: "unknown"}
"""``sends.parquet``'s ``txn_end``, by :data:`TXN_OPEN` …"""

_TIMEOUT_ERRORS = ("_MSG_TIMED_OUT", "_TIMED_OUT", "REQUEST_TIMED_OUT", "KafkaTimeoutError")
"""Errors that leave a message's fate unknown (the broker may have written it)."""

class TransactionRefused(Exception):
    """The client refused a record because its open transaction is in an error state (a
    record of it failed, e.g. timed out during a leader's outage): the transaction must be
    aborted before anything more is sent. Raised by :meth:`Client.send`."""


SEND_GRACE_MIN_S = 2.0
"""After the schedule's end the producer may still send overdue messages for this long (or
10 % of the duration if longer); the rest are ``unsent``."""


def load_nonce(run_nonce: bytes, producer_id: int) -> bytes:
    """The stamp's 8 nonce bytes in a load cell: 4 bytes of the cell's nonce + the producer
    id (uint32, big-endian)."""
    return run_nonce[:4] + producer_id.to_bytes(4, "big")


def split_nonce(nonce: bytes) -> tuple[bytes, int]:
    """``(cell nonce prefix, producer id)`` from a stamp's nonce."""
    return nonce[:4], int.from_bytes(nonce[4:8], "big")


@dataclass
class SendLog:
    """What happened to every intended message (indexed by seq)."""

    n: int
    intended_ts_ns: np.ndarray
    send_ts_ns: np.ndarray = field(init=False)
    ack_ts_ns: np.ndarray = field(init=False)
    outcome: np.ndarray = field(init=False)
    partition: np.ndarray = field(init=False)
    offset: np.ndarray = field(init=False)
    errors: dict[int, str] = field(default_factory=dict)
    reports: deque[tuple[int, int, Any, int, int]] = field(default_factory=deque)
    """Delivery reports not yet filed into the arrays (see :meth:`report`)."""
    key_reports: deque[tuple[bytes, int, Any, int, int]] = field(default_factory=deque)
    """Delivery reports named by their record key (:data:`SEND_KEY`), from the client-wide
    callback of :class:`ConfluentClient`."""
    transactional: bool = False
    """The records are sent in transactions: their outcome is their transaction's."""
    _absorbing: threading.Lock = field(default_factory=threading.Lock, repr=False)
    txn_state: np.ndarray = field(init=False)
    """Per seq, how its transaction ended (:data:`TXN_OPEN` …); only read when
    ``transactional``."""
    txn_end_ts_ns: np.ndarray = field(init=False)
    """Per seq, when its transaction's commit or abort returned (-1: not ended)."""
    txn_errors: dict[int, tuple[int, str]] = field(default_factory=dict)
    """A transaction that did not commit as asked: its first seq -> (its end, why)."""

    def __post_init__(self) -> None:
        self.send_ts_ns = np.full(self.n, -1, dtype=np.int64)
        self.ack_ts_ns = np.full(self.n, -1, dtype=np.int64)
        self.outcome = np.zeros(self.n, dtype=np.int8)
        self.partition = np.full(self.n, -1, dtype=np.int32)
        self.offset = np.full(self.n, -1, dtype=np.int64)
        self.txn_state = np.zeros(self.n if self.transactional else 0, dtype=np.int8)
        self.txn_end_ts_ns = np.full(self.n if self.transactional else 0, -1, dtype=np.int64)

    def end_transaction(self, first: int, end: int, state: int, ts_ns: int,
                        error: str | None = None) -> None:
        """Seqs ``first`` … ``end - 1`` were one transaction, which ended in ``state`` at
        ``ts_ns`` (``error``: why it did not commit)."""
        self.txn_state[first:end] = state
        self.txn_end_ts_ns[first:end] = ts_ns
        if error is not None:
            self.txn_errors[first] = (end, error)

    def final_outcomes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(outcome codes, ack_ts_ns)`` per seq: the delivery reports' for a plain producer;
        for a transactional one each sent record's transaction decides (module docstring)."""
        if not self.transactional:
            return self.outcome, self.ack_ts_ns
        outcome = self.outcome.copy()
        ack = self.ack_ts_ns.copy()
        sent = outcome != UNSENT
        committed = sent & (self.txn_state == TXN_COMMITTED) & (outcome == ACKED)
        ack[committed] = self.txn_end_ts_ns[committed]
        aborted = sent & (self.txn_state == TXN_ABORTED)
        outcome[aborted] = ABORTED
        ack[aborted] = -1  # never acknowledged to a reader: no ack time
        undecided = sent & ((self.txn_state == TXN_UNKNOWN) | (self.txn_state == TXN_OPEN))
        outcome[undecided & (outcome != FAILED)] = INDETERMINATE
        ack[undecided] = -1
        return outcome, ack

    def record(self, seq: int, ack_ts_ns: int, error: str | None, partition: int | None,
               offset: int | None) -> None:
        """A delivery report (called from the client's callback thread)."""
        self.ack_ts_ns[seq] = ack_ts_ns
        if error is None:
            self.outcome[seq] = ACKED
            if offset is not None and offset >= 0:
                self.offset[seq] = offset
        else:
            self.outcome[seq] = INDETERMINATE if any(t in error for t in _TIMEOUT_ERRORS) else FAILED
            self.errors[seq] = error
        if partition is not None and partition >= 0:
            self.partition[seq] = partition

    def report(self, seq: int, ack_ts_ns: int, err: Any, msg: Any) -> None:
        """A confluent-kafka delivery report, queued (the cheapest thing a callback can do:
        one deque append; the message itself is not kept, its payload could be megabytes);
        :meth:`absorb` files it."""
        self.reports.append((seq, ack_ts_ns, err, msg.partition(), msg.offset()))

    def acked_log_ends(self) -> dict[int, int]:
        """Per partition, one past the highest offset a delivery report gave (reports not yet
        filed are filed first): where a consumer must get to to have every acknowledged
        record. Partitions with no known offset (acks=0) are absent."""
        self.absorb()
        known = (self.offset >= 0) & (self.partition >= 0) & (self.outcome == ACKED)
        ends: dict[int, int] = {}
        for part, off in zip(self.partition[known].tolist(), self.offset[known].tolist(),
                             strict=True):
            if off + 1 > ends.get(part, 0):
                ends[part] = off + 1
        return ends

    def absorb(self) -> int:
        """File the queued delivery reports into the arrays, vectorised (safe while reports
        arrive: ``deque.popleft`` is atomic and only the first ``n`` are taken; one caller at
        a time, the pump thread and a progress tick may both call it); returns how many."""
        with self._absorbing:
            return self._absorb()

    def _absorb(self) -> int:
        items: list[tuple[int, int, Any, int, int]] = []
        n = len(self.reports)
        if n:
            pop = self.reports.popleft
            items = [pop() for _ in range(n)]
        k = len(self.key_reports)
        if k:
            kpop = self.key_reports.popleft
            keyed = [kpop() for _ in range(k)]
            seqs = np.frombuffer(b"".join(r[0] for r in keyed), dtype=">i8")[::2].astype(np.int64)
            items += [(int(q), t, e, p, o) for q, (_key, t, e, p, o) in zip(seqs, keyed, strict=True)]
        if not items:
            return 0
        # partition() / offset() are None when unknown (acks=0 has no offset): -1 here
        ok = [(q, t, -1 if p is None else p, -1 if o is None else o)
              for q, t, e, p, o in items if e is None]
        if ok:
            a = np.array(ok, dtype=np.int64)
            seq_idx = a[:, 0]
            self.ack_ts_ns[seq_idx] = a[:, 1]
            self.outcome[seq_idx] = ACKED
            has_p, has_o = a[:, 2] >= 0, a[:, 3] >= 0
            self.partition[seq_idx[has_p]] = a[has_p, 2]
            self.offset[seq_idx[has_o]] = a[has_o, 3]
        if len(ok) < len(items):
            for q, t, e, p, o in items:
                if e is not None:
                    self.record(q, t, str(e.name() or e), p, o)
        return len(items)

    def counts(self) -> dict[str, int]:
        """Outcomes so far (files what is queued first; the pump keeps the queue short)."""
        self.absorb()
        out = {name: 0 for name in ("acked", "failed", "indeterminate", "unsent", "aborted")}
        for code, k in zip(*np.unique(self.final_outcomes()[0], return_counts=True), strict=True):
            out[OUTCOME_NAMES[int(code)]] += int(k)
        return out

    def columns(self, producer_id: int, warmup_messages: int) -> dict[str, Any]:
        """The ``sends.parquet`` columns (see :data:`kafkalab.load.files.SENDS_SCHEMA`)."""
        import pyarrow as pa

        self.absorb()
        outcome, ack_ts_ns = self.final_outcomes()
        sent = self.send_ts_ns >= 0
        answered = ack_ts_ns >= 0
        seq = np.arange(self.n, dtype=np.int64)
        names = np.array([OUTCOME_NAMES[i] for i in range(len(OUTCOME_NAMES))], dtype=object)
        publish = np.where(sent, (self.send_ts_ns - self.intended_ts_ns) / 1e6, np.nan)
        ack_lat = np.where(sent & answered, (ack_ts_ns - self.send_ts_ns) / 1e6, np.nan)
        errors: list[str | None] = [None] * self.n
        for s, e in self.errors.items():
            errors[s] = e
        for first, (end, why) in self.txn_errors.items():
            for s in range(first, end):
                errors[s] = f"{errors[s]}; transaction: {why}" if errors[s] else \
                    f"transaction: {why}"
        return {
            "seq": seq,
            "producer_id": np.full(self.n, producer_id, dtype=np.int32),
            "is_warmup": seq < warmup_messages,
            "intended_ts_ns": self.intended_ts_ns,
            "send_ts_ns": pa.array(self.send_ts_ns, mask=~sent),
            "ack_ts_ns": pa.array(ack_ts_ns, mask=~answered),
            "outcome": names[outcome.astype(np.int64)],
            "error": errors,
            "partition": pa.array(self.partition, mask=self.partition < 0),
            "offset": pa.array(self.offset, mask=self.offset < 0),
            "publish_delay_ms": pa.array(publish, mask=~sent),
            "ack_latency_ms": pa.array(ack_lat, mask=~(sent & answered)),
            "txn_end": self._txn_end_names(sent),
        }

    def _txn_end_names(self, sent: np.ndarray) -> list[str | None]:
        """Per seq, how its transaction ended (null: a plain producer, or never sent)."""
        if not self.transactional:
            return [None] * self.n
        names = np.array([TXN_END_NAMES[i] for i in range(len(TXN_END_NAMES))], dtype=object)
        out = names[self.txn_state.astype(np.int64)]
        out[~sent] = None
        return list(out)


@dataclass
class ProducerPlan:
    """Everything the producer loop needs (the engine builds it)."""

    topic: str
    partitions: int
    rate_msgs_per_s: float
    n: int
    warmup_messages: int
    body: bytes
    base64_body: bool
    nonce: bytes
    """8 bytes: :func:`load_nonce`."""
    send_deadline_s: float
    """Seconds after t0 past which no message is sent any more (the rest are unsent)."""
    message_timeout_s: float
    seq_header: bool = False
    """Tag each record with a :data:`SEQ_HEADER_PREFIX` header."""
    txn_msgs: int | None = None
    """Records per transaction (None: no transactions; the client was made transactional)."""
    txn_abort_every: int | None = None
    """Abort every k-th transaction (after flushing its records) instead of committing it."""


class Client:
    """The two calls the loop makes: ``produce`` and ``serve`` (delivery reports)."""

    def send(self, topic: str, value: bytes, key: bytes, partition: int, seq: int,
             headers: list[tuple[str, str | bytes | None]] | None = None) -> bool:
        """Hand one message to the client (with ``headers`` when given); False when its
        queue is full (retry later)."""
        raise NotImplementedError

    def serve(self, timeout_s: float) -> None:
        """Serve delivery reports (confluent-kafka: ``poll``)."""

    def flush(self, timeout_s: float) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def init_transactions(self, timeout_s: float) -> None:
        """Register the transactional id with its coordinator (before the schedule)."""
        raise NotImplementedError

    def begin_transaction(self) -> None:
        raise NotImplementedError

    def end_transaction(self, commit: bool, timeout_s: float) -> tuple[int, str | None]:
        """Commit (``commit``) or abort the open transaction; returns how it ended
        (:data:`TXN_COMMITTED`, :data:`TXN_ABORTED` or :data:`TXN_UNKNOWN`) and, unless it
        committed as asked, why. An abort flushes first, so the aborted records are in the
        log. A commit that fails with an abortable error is aborted; one that fails fatally
        or times out is unknown, and the producer can send no more."""
        raise NotImplementedError


class ConfluentClient(Client):
    """confluent-kafka with one client-wide delivery callback: it stamps the time and queues
    ``(key, time, error, partition, offset)``; :meth:`SendLog.absorb` reads the seq from the
    key. No callback object is made per message."""

    def __init__(self, config: dict[str, Any], log: SendLog,
                 watch: LeaderWatch | None = None) -> None:
        from confluent_kafka import Producer

        append = log.key_reports.append  # the deque is never replaced: safe to bind

        def on_delivery(err: Any, msg: Any) -> None:
            append((msg.key(), now_ns(), err, msg.partition(), msg.offset()))

        extra = watch.librdkafka_settings() if watch is not None else {}
        self._p = Producer({**config, **extra, "on_delivery": on_delivery})
        self._log = log

    def send(self, topic: str, value: bytes, key: bytes, partition: int, seq: int,
             headers: list[tuple[str, str | bytes | None]] | None = None) -> bool:
        from confluent_kafka import KafkaException

        try:
            if headers is None:
                self._p.produce(topic, value, key, partition)
            else:
                self._p.produce(topic, value, key, partition, headers=headers)
        except BufferError:
            return False
        except KafkaException as exc:  # a transactional producer in an error state
            raise TransactionRefused(f"produce: {exc.args[0].name()}") from None
        return True

    def serve(self, timeout_s: float) -> None:
        self._p.poll(timeout_s)

    def flush(self, timeout_s: float) -> None:
        self._p.flush(timeout_s)

    def init_transactions(self, timeout_s: float) -> None:
        self._p.init_transactions(timeout_s)

    def begin_transaction(self) -> None:
        self._p.begin_transaction()

    def end_transaction(self, commit: bool, timeout_s: float) -> tuple[int, str | None]:
        why: str | None = None
        if commit:
            err = _retried(self._p.commit_transaction, timeout_s)
            if err is None:
                return TXN_COMMITTED, None
            why = f"commit: {err.name()}"
            if not err.txn_requires_abort():
                return TXN_UNKNOWN, why
        else:
            self._p.flush(timeout_s)
        err = _retried(self._p.abort_transaction, timeout_s)  # its own budget, after a flush
        if err is None:
            return TXN_ABORTED, why
        return TXN_UNKNOWN, f"{why + '; ' if why else ''}abort: {err.name()}"


def _retried(call: Callable[[float], object], timeout_s: float) -> Any:
    """``call(remaining s)`` (librdkafka's commit or abort) again while it fails with a
    retriable error, for at most ``timeout_s``; None when it returned, else its last
    ``KafkaError``."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            call(max(0.1, deadline - time.monotonic()))
            return None
        except KafkaException as exc:
            err = exc.args[0]
            if not (err.retriable() and time.monotonic() < deadline):
                return err


class KafkaPythonClient(Client):
    """kafka-python: a future per message with callbacks."""

    def __init__(self, config: dict[str, Any], log: SendLog) -> None:
        from kafka import KafkaProducer

        self._p = KafkaProducer(**config)
        self._log = log

    def send(self, topic: str, value: bytes, key: bytes, partition: int, seq: int,
             headers: list[tuple[str, str | bytes | None]] | None = None) -> bool:
        from kafka.errors import KafkaError, KafkaTimeoutError

        log = self._log
        try:
            fut = self._p.send(topic, value=value, key=key, partition=partition, headers=headers)
        except KafkaTimeoutError:  # the buffer stayed full for max_block_ms
            return False
        except KafkaError as exc:  # a transactional producer in an error state
            raise TransactionRefused(f"send: {type(exc).__name__}") from None
        fut.add_callback(lambda md: log.record(seq, now_ns(), None, md.partition, md.offset))
        fut.add_errback(lambda exc: log.record(seq, now_ns(), type(exc).__name__ + f": {exc}",
                                               None, None))
        return True

    def serve(self, timeout_s: float) -> None:
        time.sleep(timeout_s)  # kafka-python's sender thread serves the callbacks

    def flush(self, timeout_s: float) -> None:
        from kafka.errors import KafkaTimeoutError

        with contextlib.suppress(KafkaTimeoutError):
            self._p.flush(timeout=timeout_s)

    def close(self) -> None:
        from kafka.errors import KafkaTimeoutError

        # kafka-python's close flushes first and raises when that times out (a producer
        # wedged by a transaction that never ended): what it did not deliver is counted.
        with contextlib.suppress(KafkaTimeoutError):
            self._p.close(timeout=1)

    def init_transactions(self, timeout_s: float) -> None:
        self._p.init_transactions()

    def begin_transaction(self) -> None:
        self._p.begin_transaction()

    def end_transaction(self, commit: bool, timeout_s: float) -> tuple[int, str | None]:
        # kafka-python's commit and abort wait without a timeout (seen here: > 120 s after a
        # leader kill, until delivery_timeout_ms expired a batch) and raise the transaction's
        # error: each is waited for at most timeout_s, in a helper thread.
        why: str | None = None
        if commit:
            failed = _within(self._p.commit_transaction, timeout_s)
            if failed is None:
                return TXN_COMMITTED, None
            why = f"commit: {failed}"
            if failed.startswith(_NO_ANSWER):  # still committing: it cannot be aborted
                return TXN_UNKNOWN, why
        else:
            self.flush(timeout_s)
        failed = _within(self._p.abort_transaction, timeout_s)
        if failed is not None:
            return TXN_UNKNOWN, f"{why + '; ' if why else ''}abort: {failed}"
        return TXN_ABORTED, why


_NO_ANSWER = "no answer in"


def _within(call: Callable[[], object], timeout_s: float) -> str | None:
    """Run ``call`` in a helper thread for at most ``timeout_s``: None when it returned, its
    error's name when it raised, ``no answer in <t> s`` when it is still running (the thread
    is left to finish on its own; the producer is not used again)."""
    raised: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            raised.append(None)
        except BaseException as exc:  # handed to the caller by name
            raised.append(exc)

    helper = threading.Thread(target=run, name="kafkalab-txn-end", daemon=True)
    helper.start()
    helper.join(timeout_s)
    if helper.is_alive() or not raised:
        return f"{_NO_ANSWER} {timeout_s:g} s"
    exc = raised[0]
    return None if exc is None else type(exc).__name__


class _Transactions:
    """The open-loop producer's transactions (``plan.txn_msgs``; with none, every method does
    nothing): which one is open, when it ends and how (module docstring)."""

    def __init__(self, plan: ProducerPlan, client: Client, log: SendLog,
                 clock: Callable[[], int], progress: Progress) -> None:
        self.size = plan.txn_msgs or 0
        self.abort_every = plan.txn_abort_every or 0
        self.timeout_s = plan.message_timeout_s
        self.client, self.log, self.clock, self.progress = client, log, clock, progress
        self.first = -1
        """The first seq of the open transaction (-1: none open)."""

    def before(self, seq: int) -> None:
        """Open a transaction for ``seq`` when none is open."""
        if self.size and self.first < 0:
            self.client.begin_transaction()
            self.first = seq

    def after(self, seq: int) -> bool:
        """``seq`` records were sent: end the open transaction when it is full; False when
        the producer can send no more."""
        if self.size and seq - self.first >= self.size:
            return self.end(seq, self.aborts(self.first))
        return True

    def refused(self, seq: int, why: str) -> bool:
        """The client refused ``seq``: a record of the open transaction failed. Abort it (its
        records are aborted) and open the next one for ``seq``; False when the abort's fate
        is unknown (the producer can send no more)."""
        if not self.end(seq, True, why_abort=why):
            return False
        self.before(seq)
        return True

    def close(self, seq: int, interrupted: bool) -> None:
        """End the last, shorter transaction (aborted after Ctrl-C, with a short wait)."""
        if self.first >= 0:
            self.end(seq, interrupted or self.aborts(self.first),
                     min(self.timeout_s, 3.0) if interrupted else self.timeout_s)

    def aborts(self, first: int) -> bool:
        """The transaction that began at ``first`` is one of every ``abort_every``-th (by
        position: ``first // txn_msgs + 1``)."""
        return self.abort_every > 0 and (first // self.size + 1) % self.abort_every == 0

    def end(self, end: int, abort: bool, timeout_s: float | None = None,
            why_abort: str | None = None) -> bool:
        """End the open transaction (seqs first … end-1); False when its fate is unknown.
        ``why_abort``: the client refused a record (the abort's reason)."""
        first, self.first = self.first, -1  # ended once, even if Ctrl-C comes in between
        state, why = self.client.end_transaction(
            not abort, self.timeout_s if timeout_s is None else timeout_s)
        if why_abort is not None:
            why = f"{why_abort}; {why}" if why else why_abort
        self.log.end_transaction(first, end, state, self.clock(), why)
        if state == TXN_UNKNOWN:
            self.progress(f"  the transaction of seqs {first}-{end - 1} ended unknown ({why}): "
                          "the transactional producer can send no more")
        return state != TXN_UNKNOWN


def run_open_loop(plan: ProducerPlan, client: Client, log: SendLog, t0_ns: int,
                  progress: Progress = noop, stop: threading.Event | None = None,
                  on_tick: Callable[[int, int], None] | None = None,
                  clock: Callable[[], int] = now_ns,
                  sleep: Callable[[float], None] = time.sleep) -> int:
    """Send the schedule; returns ``stop_ts_ns`` (when the producer stopped sending).

    Messages still due when ``plan.send_deadline_s`` passes, or when ``stop`` is set or the
    loop is interrupted (KeyboardInterrupt propagates after the log is consistent), stay
    ``unsent``. Delivery reports are served by a helper thread while the loop runs.

    ``clock`` (CLOCK_MONOTONIC in ns) and ``sleep`` are the loop's time: a test gives a
    simulated one, so what it asserts about the schedule does not depend on how busy the
    machine is.
    """
    stop = stop or threading.Event()
    pump_stop = threading.Event()

    pump_errors: list[BaseException] = []

    def pump() -> None:
        try:
            while not pump_stop.is_set():
                client.serve(0.05)
                log.absorb()  # file the reports here, never in the sending thread
        except BaseException as exc:  # the loop stops and the cell fails, naming it
            pump_errors.append(exc)
            stop.set()

    pump_thread = threading.Thread(target=pump, name="kafkalab-delivery-reports", daemon=True)
    pump_thread.start()
    interval = 1e9 / plan.rate_msgs_per_s
    deadline = t0_ns + int(plan.send_deadline_s * 1e9)
    topic, partitions, body, b64, nonce = (plan.topic, plan.partitions, plan.body,
                                           plan.base64_body, plan.nonce)
    pack = SEND_KEY.pack
    tag = plan.seq_header
    txns = _Transactions(plan, client, log, clock, progress)
    # The schedule is filled vectorised up front (the same double arithmetic as the loop's
    # t0 + int(seq × interval)); send times go to a plain int64 array.array, whose item
    # assignment costs a third of numpy's, copied into the log when the loop ends.
    log.intended_ts_ns[:] = t0_ns + (np.arange(plan.n, dtype=np.int64) * interval).astype(np.int64)
    send_ts = array("q", bytes(8 * plan.n))
    next_report = t0_ns + 1_000_000_000
    seq = 0
    interrupted = False
    try:
        while seq < plan.n:
            intended = t0_ns + int(seq * interval)
            value = stamp(body, seq, nonce, b64, intended)
            part = seq % partitions
            now = clock()
            if now < intended:
                sleep((intended - now) / 1e9)
            elif now > deadline or stop.is_set():
                break
            headers: list[tuple[str, str | bytes | None]] | None = \
                [(f"{SEQ_HEADER_PREFIX}{seq}", b"")] if tag else None
            txns.before(seq)
            while True:
                t = clock()
                try:
                    if client.send(topic, value, pack(seq, t), part, seq, headers):
                        break
                except TransactionRefused as refused:
                    if not txns.refused(seq, str(refused)):
                        t = -1
                        break
                    continue
                client.serve(0.001)  # queue full: the wait is publish delay, never hidden
                if clock() > deadline or stop.is_set():
                    t = -1
                    break
            if t < 0:
                break
            send_ts[seq] = t
            seq += 1
            if not txns.after(seq):
                break  # the transaction's fate is unknown and the producer unusable
            if t >= next_report:
                next_report = t + 1_000_000_000
                if stop.is_set():  # asked to stop (or the pump failed): checked once a second
                    break
                if on_tick is not None:
                    on_tick(seq, t)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        stop_ts = clock()
        log.send_ts_ns[:seq] = np.frombuffer(send_ts, dtype=np.int64, count=seq)
        # The rest of the schedule is unsent (it keeps its intended times).
        if seq < plan.n:
            log.outcome[seq:] = UNSENT
        try:  # after Ctrl-C, wait only briefly for the acks still due
            txns.close(seq, interrupted)
            client.flush(min(plan.message_timeout_s, 3.0) if interrupted else plan.message_timeout_s)
        finally:
            pump_stop.set()
            pump_thread.join(timeout=5)
            client.close()
            log.absorb()
    if pump_errors:
        exc = pump_errors[0]
        raise RuntimeError(f"delivery reports could not be filed: {type(exc).__name__}: {exc}") from exc
    return stop_ts
