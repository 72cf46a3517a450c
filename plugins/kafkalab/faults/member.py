"""One member of a consumer-fault trial's group: ``python -m kafkalab.faults.member PLAN MEMBER
INCARNATION``.

A process of its own, so that the fault is real: ``kill-consumer`` SIGKILLs this process and
the broker's group coordinator notices only when the member's session times out;
``leave-consumer`` sends it SIGTERM and it leaves cleanly (``close()``: a LeaveGroup request,
the group rebalances at once).

**Processing.** The member reads the trial's topic in the group (``subscribe``), gathers
records into batches (up to ``batch_msgs``, or what came within ``batch_wait_ms`` of the
batch's first record) and *processes* each record by appending one fixed-size row to its
processed log (:data:`PROCESSED_ROW`, one ``write(2)`` per record): the row is in the page
cache the moment the call returns, so a SIGKILL cannot take back a record that was
processed, and nothing unprocessed is ever written. This is the lab's side effect, the one
whose duplicates and gaps the trial counts.

**Commit strategies** (``commit`` in the plan):

* ``auto``: the client's own auto commit (``enable.auto.commit``) every
  ``auto_commit_interval_ms``; it commits what the client handed to the application, processed
  or not;
* ``after``: commit the batch's offsets (synchronously) after processing it: at-least-once;
* ``before``: commit them before processing the batch: at-most-once.

A batch is processed and committed in the member's own loop, so when the group takes
partitions away (``on_revoke``, called inside ``poll``) everything processed is already
committed. The batch still being gathered is dropped unprocessed and the client is sought back to
its first records (they go to the partitions' next owner, from the committed offset, or back
to this member, which kafka-python 3 lets keep its position: neither twice nor never), except
under
``auto``, whose client has already committed those records (librdkafka commits the stored
offsets on revoke, kafka-python auto-commits before calling the listener): that batch is
processed first. A ``before`` batch whose commit fails is dropped unprocessed for the same
reason. (kafka-python 3 refuses a blocking commit inside a rebalance listener, so the rule is
also the one both clients can follow.) A SIGKILL finishes nothing.

**Rebalance protocols** (``rebalance`` in the plan, :data:`kafkalab.faults.spec.REBALANCES`):
eager (range), cooperative (cooperative-sticky) or KIP-848's consumer protocol (librdkafka's
``group.protocol=consumer``, whose session and heartbeat the broker holds per group). Under
the last two a rebalance adds or takes away only some partitions: each ``assigned`` /
``revoked`` event lists the change and ``owned``, the member's partitions after it. A batch
being gathered when partitions are taken away is dropped whole; its records of partitions the
member keeps are sought back and read again by it (neither twice nor never).

**Events** (assignments, revocations, commits, leaving) are appended to a JSON-lines file,
one ``write(2)`` per line, with CLOCK_MONOTONIC times (the trial's processes share the host's
clock). Both files are read by :mod:`kafkalab.faults.group` after the trial.

Signals: SIGTERM leaves cleanly; SIGUSR2 arms the test hook ``die_after_records``: the
member SIGKILLs itself after processing that many records of its next batch (before that
batch's commit for ``after``, after it for ``before``), so a test knows the exact duplicates or
losses to expect.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import struct
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kafkalab.payloads import read_stamp

__all__ = ["PROCESSED_ROW", "events_path", "main", "processed_path"]

PROCESSED_ROW = struct.Struct("<qiqqq")
"""One processed record: seq, partition, offset, receive_ts_ns, processed_ts_ns."""

POLL_S = 0.05


def processed_path(group_dir: Path, member: int, incarnation: int) -> Path:
    """``<trial>/group/processed-m<member>-i<incarnation>.bin``."""
    return group_dir / f"processed-m{member}-i{incarnation}.bin"


def events_path(group_dir: Path, member: int, incarnation: int) -> Path:
    """``<trial>/group/events-m<member>-i<incarnation>.jsonl``."""
    return group_dir / f"events-m{member}-i{incarnation}.jsonl"


class _Log:
    """Append-only files written with one ``write(2)`` per row (no user-space buffer)."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, data: bytes) -> None:
        os.write(self.fd, data)

    def close(self) -> None:
        os.close(self.fd)


Record = tuple[int, int, int, int]
"""(seq, partition, offset, receive_ts_ns) of one of the trial's records."""


class Member:
    """The member's loop, independent of the client (:class:`_Confluent`, :class:`_KafkaPython`)."""

    def __init__(self, plan: dict[str, Any], member: int, incarnation: int) -> None:
        self.plan = plan
        self.member, self.incarnation = member, incarnation
        gdir = Path(plan["group_dir"])
        self.processed = _Log(processed_path(gdir, member, incarnation))
        self.events = _Log(events_path(gdir, member, incarnation))
        self.commit_mode: str = plan["commit"]
        self.batch_msgs: int = plan["batch_msgs"]
        self.batch_wait_ns = int(plan["batch_wait_ms"] * 1e6)
        self.n: int = plan["intended"]
        self.die_after: int | None = plan.get("die_after_records")
        self.armed = False
        self.leaving = False
        self.pending: list[Record] = []
        self.foreign = 0
        self.processed_count = 0
        self.owned: set[int] = set()

    # -- events -------------------------------------------------------------------------
    def event(self, ev: str, **fields: Any) -> None:
        doc = {"ev": ev, "ts_ns": time.monotonic_ns(), "member": self.member,
               "incarnation": self.incarnation, **fields}
        self.events.write((json.dumps(doc, separators=(",", ":")) + "\n").encode())

    def on_assign(self, partitions: list[int]) -> None:
        """``partitions``: what the rebalance gave (eager: the whole assignment; cooperative
        and KIP-848: the added ones only); ``owned`` in the event: the whole after it."""
        self.owned |= set(partitions)
        self.event("assigned", partitions=sorted(partitions), owned=sorted(self.owned))

    def on_revoke(self, partitions: list[int], rewind: Callable[[dict[int, int]], None]) -> None:
        if self.commit_mode == "auto":
            while self.pending:
                self.flush(lambda _offsets: True)
        elif self.pending:
            self.drop(self.pending, "revoked", rewind)
            self.pending = []
        self.owned -= set(partitions)
        self.event("revoked", partitions=sorted(partitions), owned=sorted(self.owned))

    def drop(self, batch: list[Record], why: str, rewind: Callable[[dict[int, int]], None]) -> None:
        """Give up a batch unprocessed and uncommitted: the client is moved back to its first
        record on each partition, so whoever reads the partition next (this member, if a
        rebalance gives it back: kafka-python 3 keeps the position there) reads it again."""
        first: dict[int, int] = {}
        for _seq, part, off, _t in batch:
            first[part] = min(first.get(part, off), off)
        self.event("dropped", records=len(batch), why=why,
                   rewound_to={str(p): o for p, o in sorted(first.items())})
        rewind(first)

    def on_commit(self, offsets: dict[int, int], error: str | None, source: str) -> bool:
        self.event("commit", offsets={str(p): o for p, o in sorted(offsets.items())},
                   ok=error is None, error=error, source=source)
        return error is None

    # -- the loop -----------------------------------------------------------------------
    def take(self, values: list[tuple[bytes | None, int, int]]) -> None:
        """Add ``(value, partition, offset)`` of received records to the batch."""
        t = time.monotonic_ns()
        for value, part, off in values:
            st = read_stamp(value)
            if st is None or not 0 <= st[0] < self.n:  # not a stamped record of this trial
                self.foreign += 1
                continue
            self.pending.append((st[0], part, off, t))

    def batch_due(self) -> bool:
        if not self.pending:
            return False
        return (len(self.pending) >= self.batch_msgs
                or time.monotonic_ns() - self.pending[0][3] >= self.batch_wait_ns)

    def flush(self, commit: Callable[[dict[int, int]], bool],
              rewind: Callable[[dict[int, int]], None] = lambda _first: None) -> None:
        """Finish the batch by the commit strategy (the hook may end the process here)."""
        batch, self.pending = self.pending[: self.batch_msgs], self.pending[self.batch_msgs:]
        if not batch:
            return
        offsets: dict[int, int] = {}
        for _seq, part, off, _t in batch:
            offsets[part] = max(offsets.get(part, 0), off + 1)
        dying = self.armed and self.die_after is not None
        if self.commit_mode == "before" and not commit(offsets):
            self.drop(batch + self.pending, "commit failed", rewind)
            self.pending = []
            return
        for k, (seq, part, off, t) in enumerate(batch):
            if dying and k == self.die_after:
                self._die(len(batch), k, offsets)
            self.processed.write(PROCESSED_ROW.pack(seq, part, off, t, time.monotonic_ns()))
            self.processed_count += 1
        if dying:
            self._die(len(batch), len(batch), offsets)
        if self.commit_mode == "after":
            commit(offsets)

    def _die(self, batch_len: int, processed: int, offsets: dict[int, int]) -> None:
        self.event("self_kill", batch_len=batch_len, processed_in_batch=processed,
                   batch_committed=self.commit_mode == "before",
                   batch_offsets={str(p): o for p, o in sorted(offsets.items())})
        os.kill(os.getpid(), signal.SIGKILL)

    def run(self, client: _Client) -> None:
        self.event("started", pid=os.getpid(), client=self.plan["client"], commit=self.commit_mode)
        client.subscribe(self)
        while not self.leaving:
            client.poll_into(self)
            while self.batch_due():
                self.flush(client.commit, client.rewind)
        self.event("leaving", pending=len(self.pending))
        while self.pending:
            self.flush(client.commit, client.rewind)
        client.close()
        self.event("closed", processed=self.processed_count, foreign=self.foreign)


class _Client:
    """What :class:`Member` needs of a consumer client."""

    def subscribe(self, m: Member) -> None:
        raise NotImplementedError

    def poll_into(self, m: Member) -> None:
        raise NotImplementedError

    def commit(self, offsets: dict[int, int]) -> bool:
        """Commit synchronously; True when the broker took it."""
        raise NotImplementedError

    def rewind(self, first: dict[int, int]) -> None:
        """Seek each partition still assigned back to ``first[partition]`` (a partition no
        longer assigned cannot be sought: its next owner starts at the committed offset)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


def own_bootstrap(plan: dict[str, Any], member: int) -> str | None:
    """The bootstrap servers of a member with links of its own (the plan's
    ``member_bootstrap``: the victim of ``cut-consumer``, on the ``solo`` plane); None for a
    member on the shared client links."""
    return (plan.get("member_bootstrap") or {}).get(str(member))


class _Confluent(_Client):
    def __init__(self, plan: dict[str, Any], member: Member) -> None:
        from confluent_kafka import Consumer

        self.topic = plan["topic"]
        self.m = member
        cfg = dict(plan["client_config"])
        cfg.update(_secrets(plan, "librdkafka"))
        own = own_bootstrap(plan, member.member)
        if own:
            cfg["bootstrap.servers"] = own
        auto = plan["commit"] == "auto"
        cfg.update({
            "group.id": plan["group_id"], "enable.auto.commit": auto,
            "auto.commit.interval.ms": plan["auto_commit_interval_ms"],
            "session.timeout.ms": plan["session_timeout_ms"],
            "heartbeat.interval.ms": plan["heartbeat_interval_ms"],
            "auto.offset.reset": "earliest", "enable.partition.eof": False,
            "on_commit": self._on_commit,
        })
        if plan.get("group_instance_prefix"):
            cfg["group.instance.id"] = f"{plan['group_instance_prefix']}{member.member}"
        rebalance = plan.get("rebalance")
        if rebalance == "consumer":  # KIP-848: the broker owns the session and the heartbeat
            for classic_only in ("session.timeout.ms", "heartbeat.interval.ms",
                                 "partition.assignment.strategy"):
                cfg.pop(classic_only, None)
            cfg["group.protocol"] = "consumer"
        elif rebalance is not None:
            cfg["partition.assignment.strategy"] = ("cooperative-sticky"
                                                    if rebalance == "cooperative" else "range")
        self.c = Consumer(cfg)

    def _on_commit(self, err: Any, parts: list[Any]) -> None:
        if err is not None and getattr(err, "code", lambda: None)() == -168:  # _NO_OFFSET: nothing to commit
            return
        offsets = {int(tp.partition): int(tp.offset) for tp in parts if tp.offset >= 0}
        error = str(err) if err is not None else next((str(tp.error) for tp in parts if tp.error), None)
        if offsets or error:
            self.m.on_commit(offsets, error, "callback")

    def subscribe(self, m: Member) -> None:
        def assigned(_c: Any, parts: list[Any]) -> None:
            m.on_assign([int(tp.partition) for tp in parts])

        def revoked(_c: Any, parts: list[Any]) -> None:
            m.on_revoke([int(tp.partition) for tp in parts], self.rewind)

        self.c.subscribe([self.topic], on_assign=assigned, on_revoke=revoked)

    def poll_into(self, m: Member) -> None:
        msgs = self.c.consume(m.batch_msgs, 0)
        if not msgs:
            one = self.c.poll(POLL_S)
            msgs = [one] if one is not None else []
        m.take([(x.value(), int(x.partition() or 0), int(x.offset() or 0))
                for x in msgs if x.error() is None])

    def commit(self, offsets: dict[int, int]) -> bool:
        from confluent_kafka import KafkaException, TopicPartition

        try:
            self.c.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in offsets.items()],
                          asynchronous=False)
        except KafkaException as exc:
            return self.m.on_commit(offsets, str(exc), "sync")
        return self.m.on_commit(offsets, None, "sync")

    def rewind(self, first: dict[int, int]) -> None:
        from confluent_kafka import TopicPartition

        for p, off in first.items():
            with contextlib.suppress(Exception):  # not assigned any more
                self.c.seek(TopicPartition(self.topic, p, off))

    def close(self) -> None:
        self.c.close()


class _KafkaPython(_Client):
    def __init__(self, plan: dict[str, Any], member: Member) -> None:
        from kafka import KafkaConsumer

        self.topic = plan["topic"]
        self.m = member
        cfg = dict(plan["client_config"])
        cfg.update(_secrets(plan, "kafka-python"))
        own = own_bootstrap(plan, member.member)
        if own:
            cfg["bootstrap_servers"] = own.split(",")
        if isinstance(cfg.get("api_version"), list):  # a tuple before the plan's JSON
            cfg["api_version"] = tuple(cfg["api_version"])
        self.auto = plan["commit"] == "auto"
        cfg.update({
            "group_id": plan["group_id"], "enable_auto_commit": self.auto,
            "auto_commit_interval_ms": plan["auto_commit_interval_ms"],
            "session_timeout_ms": plan["session_timeout_ms"],
            "heartbeat_interval_ms": plan["heartbeat_interval_ms"],
            "auto_offset_reset": "earliest",
            "default_offset_commit_callback": self._on_auto_commit,
        })
        if plan.get("group_instance_prefix"):
            cfg["group_instance_id"] = f"{plan['group_instance_prefix']}{member.member}"
        if plan.get("rebalance") is not None:  # eager or cooperative (no KIP-848: refused)
            from kafka.coordinator.assignors.cooperative_sticky import (
                CooperativeStickyAssignor,
            )
            from kafka.coordinator.assignors.range import RangePartitionAssignor

            cfg["partition_assignment_strategy"] = [
                CooperativeStickyAssignor if plan["rebalance"] == "cooperative"
                else RangePartitionAssignor]
        self.c = KafkaConsumer(**cfg)

    def _on_auto_commit(self, offsets: dict[Any, Any], res_or_exc: Any) -> None:
        error = str(res_or_exc) if isinstance(res_or_exc, Exception) else None
        self.m.on_commit({int(tp.partition): int(om.offset) for tp, om in offsets.items()}, error,
                         "callback")

    def subscribe(self, m: Member) -> None:
        from kafka import ConsumerRebalanceListener

        outer = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                m.on_revoke([int(tp.partition) for tp in revoked], outer.rewind)

            def on_partitions_assigned(self, assigned: Any) -> None:
                m.on_assign([int(tp.partition) for tp in assigned])

        self.c.subscribe([self.topic], listener=Listener())

    def poll_into(self, m: Member) -> None:
        got = self.c.poll(timeout_ms=int(POLL_S * 1000), max_records=m.batch_msgs)
        m.take([(r.value, int(tp.partition), int(r.offset)) for tp, recs in got.items() for r in recs])

    def commit(self, offsets: dict[int, int]) -> bool:
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        try:
            self.c.commit({TopicPartition(self.topic, p): OffsetAndMetadata(o, "", -1)
                           for p, o in offsets.items()})
        except Exception as exc:  # CommitFailedError and friends: logged, the loop goes on
            return self.m.on_commit(offsets, f"{type(exc).__name__}: {exc}", "sync")
        return self.m.on_commit(offsets, None, "sync")

    def rewind(self, first: dict[int, int]) -> None:
        from kafka import TopicPartition

        for p, off in first.items():
            with contextlib.suppress(ValueError):  # "Unassigned partition"
                self.c.seek(TopicPartition(self.topic, p), off)

    def close(self) -> None:
        self.c.close(autocommit=self.auto)


def _secrets(plan: dict[str, Any], kind: str) -> dict[str, Any]:
    """Secret client settings are never written into the plan: read them from the descriptor."""
    path = plan.get("descriptor_path")
    if not path:
        return {}
    from kafkalab.cluster.descriptor import kafka_python_config, librdkafka_config
    from kafkalab.cluster.flavors import load_descriptor

    d = load_descriptor(path)
    full = librdkafka_config(d) if kind == "librdkafka" else kafka_python_config(d)
    return {k: v for k, v in full.items() if k not in plan["client_config"]}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``python -m kafkalab.faults.member PLAN_JSON MEMBER INCARNATION``."""
    import faulthandler

    faulthandler.register(signal.SIGUSR1)
    args = list(sys.argv[1:] if argv is None else argv)
    plan = json.loads(Path(args[0]).read_text())
    m = Member(plan, int(args[1]), int(args[2]))

    def leave(_sig: int, _frame: Any) -> None:
        m.leaving = True

    def arm(_sig: int, _frame: Any) -> None:
        m.armed = True
        m.event("armed", die_after_records=m.die_after)

    signal.signal(signal.SIGTERM, leave)
    signal.signal(signal.SIGUSR2, arm)
    try:
        client: _Client = (_KafkaPython(plan, m) if plan["client"] == "kafka-python"
                           else _Confluent(plan, m))
        m.run(client)
    except Exception as exc:  # reported through the events file; the trial reads it
        m.event("error", error=f"{type(exc).__name__}: {exc}")
        return 1
    finally:
        m.processed.close()
        m.events.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
