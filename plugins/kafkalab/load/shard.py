"""A consumer shard: one process holding several consumers of a load cell (HYDRA's SUBs).

Run as ``python -m kafkalab.load.shard PLAN_JSON SHARD``; the engine starts one per
``consumers_per_shard`` consumers. Each consumer is its own confluent-kafka client (its own
librdkafka threads; ``queued.min.messages`` is lowered so N clients do not each pre-fetch
100k messages) and its own Python thread.

**Start barrier.** Every consumer is positioned at the log end *by offset*: the shard reads
each partition's high watermark from the broker and assigns exactly that offset (or, in
``group`` mode, does so in the group's assignment callback). Every message the producer
sends afterwards is therefore one each consumer must receive. Only when all its consumers
are positioned does the shard write its ``.ready-NNN`` file; the producer starts when every
shard is ready.

**Coordination** through hidden files in the cell directory (so shards may also run on other
hosts that share the data directory): ``.plan.json`` (in), ``.start.json`` (t0),
``.stop.json`` (the producer stopped; the log-end offsets to drain to), ``.shard-NNN.json``
(out: CPU, counts, errors).

**Drain.** After the stop, each consumer reads until its position reaches the log end the
engine announced on every partition, or ``drain_s`` passes: what is still missing then is
missing. A record counts as received when the consumer takes it (a slowed consumer takes
each only after working on the one before); once the drain is over a consumer takes no
further record, even one already fetched in the batch it is working through. So a consumer
too slow to catch up within the drain is *failing* (records missing), and one that catches
up within it is *late but complete* (``late_msgs`` > 0, nothing missing, not failing),
whatever its batches looked like.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafkalab.load.clock import domain as clock_domain
from kafkalab.load.clock import offset_to
from kafkalab.load.cpu import cpu_seconds
from kafkalab.load.files import (
    LAG_SCHEMA,
    RECEIPTS_SCHEMA,
    CellFile,
    ShardFile,
    lag_path,
    open_stream,
    receipts_path,
)
from kafkalab.load.producer import SEND_KEY
from kafkalab.load.spec import LoadCellSpec
from kafkalab.payloads import read_stamp
from kafkalab.scenarios.base import now_ns
from kafkalab.store import atomic_write_json, read_json

CONSUME_BATCH = 500
HANDOFF_ROWS = 2000
HANDOFF_S = 0.25
POLL_S = 0.05
BARRIER_POLL_S = 0.02


ready_path = ShardFile(".ready", "")
"""Written by a shard once all its consumers are positioned (the start barrier waits for
every shard's)."""
result_path = ShardFile(".shard", ".json")
"""A shard's result: CPU, counts, errors, its clock (the engine reads it when it ends)."""
plan_path = CellFile(".plan.json")
"""The cell's plan for its shards (written by the engine before any shard starts)."""
start_path = CellFile(".start.json")
"""``t0_ns``: the producer passed the barrier."""
stop_path = CellFile(".stop.json")
"""The producer stopped: ``stop_ts_ns`` and the log-end offsets to drain to."""


class _Receiver:
    """One consumer: its client, its thread's loop and its counters."""

    def __init__(self, index: int, shard: _Shard, client: Any, start_offsets: dict[int, int]) -> None:
        self.index = index
        self.shard = shard
        self.client = client
        self.next_offset = dict(start_offsets)
        """The application's position per partition: last received offset + 1."""
        self.seen = bytearray(shard.n)
        self.unique = 0
        self.errors: dict[str, int] = {}
        self.foreign = 0
        self.done = False
        self.paused = False
        self.thread = threading.Thread(target=self.loop, name=f"consumer-{index}", daemon=True)

    def loop(self) -> None:
        sh = self.shard
        spec = sh.spec
        slow_s = (spec_slow_ms(spec, self.index) or 0.0) / 1000.0
        warm = sh.warmup_messages
        prefix = sh.nonce_prefix
        unpack_key = SEND_KEY.unpack
        index, shard_no, seen, next_offset = self.index, sh.shard, self.seen, self.next_offset
        n = sh.n
        rows: list[tuple[int, ...]] = []
        clock = sh.now
        handed_at = time.monotonic()
        while not sh.finished.is_set():
            self._pause_if_due()
            # consume(n, timeout) waits for n records or the timeout, whichever is first: it
            # would hold early records back. Take what is queued (timeout 0); when nothing is,
            # block in poll(), which returns the moment one record arrives.
            msgs = self.client.consume(CONSUME_BATCH, 0)
            if not msgs:
                one = self.client.poll(POLL_S)
                if one is not None:
                    msgs = [one, *self.client.consume(CONSUME_BATCH - 1, 0)]
            t = clock()
            for m in msgs:
                if sh.finished.is_set():
                    # The drain is over: a record still in hand is one the consumer never
                    # took (it is missing), whatever the batch it came in.
                    break
                err = m.error()
                if err is not None:
                    name = str(err.name() or err)
                    self.errors[name] = self.errors.get(name, 0) + 1
                    continue
                st = read_stamp(m.value())
                if st is None or st[2][:4] != prefix or not 0 <= st[0] < n:
                    self.foreign += 1
                    continue
                seq, intended, nonce = st
                key = m.key()
                send = unpack_key(key)[1] if key is not None and len(key) == 16 else -1
                part, off = m.partition(), m.offset()
                dup = seen[seq]
                if not dup:
                    seen[seq] = 1
                    self.unique += 1
                if off >= next_offset.get(part, 0):
                    next_offset[part] = off + 1
                if slow_s:
                    # The deliberately slow consumer (a test's fault): it takes each record
                    # only after working on the one before, so that is when it receives it.
                    time.sleep(slow_s)
                    t = clock()
                rows.append((seq, int.from_bytes(nonce[4:8], "big"), part, off, intended,
                             send, t, dup))
            # Rows are handed to the shard's writer in batches (an Arrow batch per record
            # would cost more than receiving it): every HANDOFF_ROWS rows or HANDOFF_S.
            if rows and (len(rows) >= HANDOFF_ROWS or time.monotonic() - handed_at >= HANDOFF_S):
                sh.write_receipts(index, shard_no, rows, warm)
                rows = []
                handed_at = time.monotonic()
            if sh.targets is not None and self.caught_up(sh.targets):
                self.done = True
                if sh.all_done():
                    break
        if rows:
            sh.write_receipts(index, shard_no, rows, warm)

    def caught_up(self, targets: dict[int, int]) -> bool:
        """The consumer reached the announced log end on every partition."""
        if all(self.next_offset.get(p, 0) >= end for p, end in targets.items()):
            return True
        if self.shard.spec.txn_msgs is None:
            return False
        # A read_committed consumer is handed neither the transaction markers (each takes an
        # offset) nor aborted records, so its last record + 1 stays short of the log end: the
        # client's position, which moves past them, says whether it got there.
        from confluent_kafka import TopicPartition

        topic = self.shard.topic
        positions = self.client.position([TopicPartition(topic, p) for p in targets])
        return all(tp.offset >= targets[tp.partition] for tp in positions)

    def _pause_if_due(self) -> None:
        sh = self.shard
        if sh.pause_window is None:
            return
        start, end = sh.pause_window
        now = sh.now()
        want = start <= now < end
        if want != self.paused:
            parts = self.client.assignment()
            if want:
                self.client.pause(parts)
            else:
                self.client.resume(parts)
            self.paused = want


def stop_bound_s(spec: LoadCellSpec) -> float:
    """The longest a producer can take from t0 to its stop announcement: the schedule and its
    send grace, then a commit begun at the deadline, the last transaction's end and the
    flush (each up to the message timeout), reading the log end of every partition (up to
    10 s each while a broker is down), and a minute of margin. A shard still waiting after
    this is orphaned."""
    return (spec.duration_s + max(2.0, 0.1 * spec.duration_s) + 3 * spec.message_timeout_s
            + 10.0 * spec.partitions + 70.0)


def spec_slow_ms(spec: LoadCellSpec, consumer: int) -> float | None:
    """Per-record delay of the deliberately slowed consumer (``slow_consumer``), else None."""
    if spec.slow_consumer is not None and spec.slow_consumer == consumer:
        return spec.slow_consumer_ms_per_record
    return None


class _Shard:
    def __init__(self, plan: dict[str, Any], shard: int) -> None:
        self.plan = plan
        self.shard = shard
        self.spec = LoadCellSpec(**plan["spec"])
        self.cell = Path(plan["cell_dir"])
        self.topic: str = plan["topic"]
        self.partitions: int = plan["partitions"]
        self.n = self.spec.intended_messages
        self.warmup_messages = self.spec.warmup_messages
        self.nonce_prefix = bytes.fromhex(plan["nonce"])[:4]
        self.finished = threading.Event()
        self.targets: dict[int, int] | None = None
        self.pause_window: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self.receipts = open_stream(receipts_path(self.cell, shard), RECEIPTS_SCHEMA)
        self.lag = open_stream(lag_path(self.cell, shard), LAG_SCHEMA)
        self.receivers: list[_Receiver] = []
        self.probe: Any = None
        self.clock_offset_ns, self.clock_basis = offset_to(plan.get("clock"))

    def now(self) -> int:
        """Now on the producer's clock (CLOCK_MONOTONIC ns of its host; see
        :mod:`kafkalab.load.clock`)."""
        return now_ns() + self.clock_offset_ns

    def write_receipts(self, consumer: int, shard: int, rows: Sequence[tuple[int, ...]],
                       warmup_messages: int) -> None:
        """Rows ``(seq, producer_id, partition, offset, intended, send, receive, dup)`` of one
        consumer, made columns (latencies computed here, vectorised, outside the receive loop)."""
        import numpy as np
        import pyarrow as pa

        a = np.array(rows, dtype=np.int64)
        seq, intended, send, receive = a[:, 0], a[:, 4], a[:, 5], a[:, 6]
        no_send = send < 0
        k = len(rows)
        cols = {
            "consumer": np.full(k, consumer, dtype=np.int32),
            "shard": np.full(k, shard, dtype=np.int32),
            "seq": seq, "producer_id": a[:, 1].astype(np.int32),
            "partition": a[:, 2].astype(np.int32), "offset": a[:, 3],
            "intended_ts_ns": intended, "send_ts_ns": pa.array(send, mask=no_send),
            "receive_ts_ns": receive, "e2e_latency_ms": (receive - intended) / 1e6,
            "service_e2e_latency_ms": pa.array((receive - send) / 1e6, mask=no_send),
            "duplicate": a[:, 7].astype(bool), "is_warmup": seq < warmup_messages,
        }
        with self._lock:
            self.receipts.extend(cols)

    def all_done(self) -> bool:
        return all(r.done for r in self.receivers)

    # -- set-up -----------------------------------------------------------------------

    def open(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        cfg = dict(self.plan["consumer_config"])
        cfg.update(_secrets(self.plan))
        # A client of its own asks the broker for the log-end offsets (a consumer busy in
        # consume() on another thread does not answer watermark queries promptly).
        probe = self.probe = Consumer({**cfg, "group.id": f"kafkalab-load-{self.plan['nonce']}-probe"})
        for idx in self.spec.shard_consumers(self.shard):
            c_cfg = dict(cfg)
            c_cfg["group.id"] = f"kafkalab-load-{self.plan['nonce']}-{idx}"
            if idx == self.spec.thin_consumer:
                # the thin consumer learns only the solo plane's addresses: every link it
                # opens is its own (kafkalab.cluster.links.layout)
                if not self.plan.get("solo_bootstrap"):
                    raise RuntimeError(f"consumer {idx} is the thin one but the plan has no "
                                       "solo_bootstrap")
                c_cfg["bootstrap.servers"] = self.plan["solo_bootstrap"]
            client = Consumer(c_cfg)
            ends = {}
            for p in range(self.partitions):
                _lo, hi = probe.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10,
                                                      cached=False)
                ends[p] = hi
            tps = [TopicPartition(self.topic, p, off) for p, off in ends.items()]
            if self.spec.consumer_mode == "group":
                assigned = threading.Event()

                def on_assign(c: Any, parts: list[Any], _ends: dict[int, int] = ends,
                              _ev: threading.Event = assigned) -> None:
                    c.assign([TopicPartition(tp.topic, tp.partition, _ends.get(tp.partition, tp.offset))
                              for tp in parts])
                    _ev.set()

                client.subscribe([self.topic], on_assign=on_assign)
                deadline = time.monotonic() + 60
                while not assigned.is_set():
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"consumer {idx}: no group assignment within 60 s")
                    msgs = client.consume(1, 0.1)
                    if msgs:
                        raise RuntimeError(f"consumer {idx}: got a record before its assignment")
            else:
                client.assign(tps)
            self.receivers.append(_Receiver(idx, self, client, ends))

    # -- the run ----------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        cell = self.cell
        cpu0 = cpu_seconds()
        wall0 = time.monotonic()
        for r in self.receivers:
            r.thread.start()
        atomic_write_json(ready_path(cell, self.shard), {"pid": os.getpid(), "ts_ns": self.now()})
        start = _wait_file(start_path(cell), timeout_s=self.plan["barrier_timeout_s"] + 30)
        if start is None:
            raise RuntimeError("the producer never started (no .start.json)")
        t0 = int(start["t0_ns"])
        cpu_start, wall_start = cpu_seconds(), time.monotonic()
        if self.spec.pause_at_s is not None and self.spec.pause_for_s is not None:
            ps = t0 + int(self.spec.pause_at_s * 1e9)
            self.pause_window = (ps, ps + int(self.spec.pause_for_s * 1e9))
        interval_ns = int(self.spec.lag_interval_s * 1e9)
        next_sample = t0
        drain_deadline: float | None = None
        cpu_stop = wall_stop = None
        stop_due = time.monotonic() + (t0 - self.now()) / 1e9 + stop_bound_s(self.spec)
        while True:
            now = self.now()
            if now >= next_sample:
                if now - next_sample > 2 * interval_ns:
                    # The evidence of a stalled shard (its pause figures then say "no peak").
                    print(f"shard {self.shard}: the lag sample due at +{(next_sample - t0) / 1e9:.2f} s "
                          f"was taken at +{(now - t0) / 1e9:.2f} s", file=sys.stderr, flush=True)
                self.sample_lag(now, t0)
                next_sample += interval_ns * max(1, (now - next_sample) // interval_ns + 1)
            if self.targets is None:
                stop = read_json(stop_path(cell))
                if isinstance(stop, dict):
                    cpu_stop, wall_stop = cpu_seconds(), time.monotonic()
                    self.targets = {int(p): int(o) for p, o in stop["targets"].items()}
                    drain_deadline = time.monotonic() + self.spec.drain_s
            if self.targets is not None and (
                    self.all_done() or (drain_deadline is not None and time.monotonic() > drain_deadline)):
                break
            if not any(r.thread.is_alive() for r in self.receivers) and self.targets is None:
                raise RuntimeError("every consumer thread stopped before the producer did")
            if self.targets is None and time.monotonic() > stop_due:
                # the producer died without a word (its process killed): never wait forever
                raise RuntimeError(f"the producer never announced its stop (no .stop.json "
                                   f"{stop_bound_s(self.spec):.0f} s after t0)")
            time.sleep(min(0.05, max(0.0, (next_sample - self.now()) / 1e9)))
        self.sample_lag(self.now(), t0)
        self.finished.set()
        for r in self.receivers:
            r.thread.join(timeout=10)
        measured_cpu = (cpu_stop if cpu_stop is not None else cpu_seconds()) - cpu_start
        measured_wall = (wall_stop if wall_stop is not None else time.monotonic()) - wall_start
        return {
            "shard": self.shard, "pid": os.getpid(), "host": socket.gethostname(),
            "role": "consumer-shard", "consumers": [r.index for r in self.receivers],
            "cpu_s": round(measured_cpu, 4), "wall_s": round(measured_wall, 4),
            "cpu_frac": round(measured_cpu / measured_wall, 4) if measured_wall > 0 else None,
            "cpu_total_s": round(cpu_seconds() - cpu0, 4),
            "wall_total_s": round(time.monotonic() - wall0, 4),
            "unique": {str(r.index): r.unique for r in self.receivers},
            "caught_up": {str(r.index): r.done for r in self.receivers},
            "errors": {str(r.index): r.errors for r in self.receivers if r.errors},
            "foreign_records": sum(r.foreign for r in self.receivers),
            "clock": {"domain": clock_domain(), "basis": self.clock_basis,
                      "offset_ns": self.clock_offset_ns},
        }

    def sample_lag(self, now: int, t0: int) -> None:
        from confluent_kafka import TopicPartition

        if not self.receivers or self.probe is None:
            return
        probe = self.probe
        ends = {}
        for p in range(self.partitions):
            try:
                _lo, hi = probe.get_watermark_offsets(TopicPartition(self.topic, p), timeout=2,
                                                      cached=False)
                ends[p] = hi
            except Exception:  # a broker that does not answer now: the sample says so (null)
                ends[p] = None
        cols: dict[str, list[Any]] = {n: [] for n in LAG_SCHEMA.names}
        for r in self.receivers:
            for p in range(self.partitions):
                pos = r.next_offset.get(p)
                end = ends[p]
                cols["consumer"].append(r.index)
                cols["shard"].append(self.shard)
                cols["partition"].append(p)
                cols["sample_ts_ns"].append(now)
                cols["elapsed_s"].append((now - t0) / 1e9)
                cols["log_end_offset"].append(end)
                cols["position"].append(pos)
                cols["lag_msgs"].append(None if end is None or pos is None else max(0, end - pos))
                cols["received_msgs"].append(r.unique)
                cols["paused"].append(r.paused)
        with self._lock:
            self.lag.extend(cols)

    def close(self, ok: bool) -> None:
        self.finished.set()
        for r in self.receivers:  # never close a client while its thread is in consume()
            if r.thread.is_alive():
                r.thread.join(timeout=5)
        with self._lock:
            for w in (self.receipts, self.lag):
                w.close()
        for client in [*(r.client for r in self.receivers), self.probe]:
            if client is None:
                continue
            with contextlib.suppress(Exception):  # a dead broker can fail a close; rows are saved
                client.close()
        _ = ok


def _secrets(plan: dict[str, Any]) -> dict[str, str]:
    """Secret client settings are never written into the plan: read them from the
    descriptor here."""
    path = plan.get("descriptor_path")
    if not path:
        return {}
    from kafkalab.cluster.descriptor import librdkafka_config
    from kafkalab.cluster.flavors import load_descriptor

    full = librdkafka_config(load_descriptor(path))
    return {k: v for k, v in full.items() if k not in plan["consumer_config"]}


def _wait_file(path: Path, timeout_s: float) -> dict[str, Any] | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        doc = read_json(path)
        if isinstance(doc, dict):
            return doc
        time.sleep(BARRIER_POLL_S)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``python -m kafkalab.load.shard PLAN_JSON SHARD``."""
    import faulthandler

    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID` dumps every thread to the log
    args = list(sys.argv[1:] if argv is None else argv)
    plan = json.loads(Path(args[0]).read_text())
    shard_no = int(args[1])
    sh = _Shard(plan, shard_no)
    cell = Path(plan["cell_dir"])
    result: dict[str, Any] = {"shard": shard_no, "pid": os.getpid(), "status": "failed"}
    ok = False
    try:
        sh.open()
        result = sh.run()
        result["status"] = "complete"
        ok = True
    except KeyboardInterrupt:
        result["status"] = "interrupted"
        result["error"] = "interrupted"
    except Exception as exc:  # reported to the engine through the result file, rows kept
        result["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        sh.finished.set()
        try:
            sh.close(ok)
        finally:
            atomic_write_json(result_path(cell, shard_no), result)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
