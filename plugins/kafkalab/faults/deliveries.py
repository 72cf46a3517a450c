"""What a consumer group did with every message, judged against a full re-read of the topic.

The ground truth is the re-read (:func:`kafkalab.faults.checker.re_read`): every record the
topic holds, by ``(partition, offset)``. Against it, the group's processed rows
(``processed.parquet``, a row per processing, copies included):

* ``redelivered``: processed rows beyond the first of the same ``(partition, offset)``, the
  records the group processed more than once;
* ``lost_unprocessed``: records the topic holds that no member ever processed;
* ``processed_not_in_topic``: processed rows whose record the re-read did not find (must be 0:
  anything else means the check disagrees with itself, ``reread_agrees`` false).

Per intended message (``deliveries.parquet``) the verdict compares the copies processed with
the copies in the topic: ``once``, ``duplicated``, ``lost``, ``not_in_topic`` or
``processed_not_in_topic`` (docs/metrics-schema.md).

The offsets tell the same story from the other side (``offsets_explain``). Each time the
group hands a partition to a member (an ``assigned`` event), the member starts at the group's
committed offset (Seed 002: offsets live in ``__consumer_offsets``; without a commit, the
next owner re-reads). What had been processed there at or past that offset is processed
again (``expected_redelivered``), as far as that owner gets before the partition's next
assignment (an owner revoked before its first fetch re-reads nothing; the next one does);
what was committed past the processed is never processed (``expected_lost``, each record
once). The committed offset is the highest of the members' logged commits and
the broker's own answers sampled in ``group_lag.parquet``, before the assignment. A
partition given back to the member that had it restarts at the committed offset under
librdkafka's eager assign; kafka-python 3 keeps its position there.
``committed_at_fault`` / ``processed_at_fault`` show the same two offsets for the member that
died, the usual cause.

The **rebalance pause** of a moved partition runs from the member's death (the fault's
instant) to the first record its successor read there; ``survivors_pause_ms`` is the longest
gap on the partitions that did not move (0.9's eager protocol stops every member during a
rebalance) and ``rejoin_pause_ms`` the longest gap on any partition after the member came back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kafkalab.faults.checker import ReRead

__all__ = ["deliveries", "expected_from_offsets", "group_summary", "longest_gap_after_ms",
           "owned_after"]


def owned_after(event: dict[str, Any]) -> list[int]:
    """The partitions a member owns after its ``assigned`` or ``revoked`` event: the event's
    ``owned`` (recorded since incremental assignments: a cooperative or KIP-848 event names
    only the change), else what an eager assignment gave (a revocation: nothing)."""
    return list(event.get("owned", event["partitions"] if event["ev"] == "assigned" else []))


def _pairs(partition: np.ndarray, offset: np.ndarray) -> np.ndarray:
    return partition.astype(np.int64) * (1 << 40) + offset.astype(np.int64)


def deliveries(n: int, is_warmup: np.ndarray, read: ReRead,
               processed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The ``deliveries.parquet`` columns for ``n`` intended messages."""
    rseq = np.asarray(read.seq, dtype=np.int64)
    rpart = np.asarray(read.partition, dtype=np.int32)
    roff = np.asarray(read.offset, dtype=np.int64)
    ok = (rseq >= 0) & (rseq < n)
    in_topic = np.bincount(rseq[ok], minlength=n)[:n].astype(np.int32)
    partition = np.full(n, -1, dtype=np.int32)
    offset = np.full(n, -1, dtype=np.int64)
    useqs, first = np.unique(rseq[ok], return_index=True)  # each message's first copy
    partition[useqs] = rpart[ok][first]
    offset[useqs] = roff[ok][first]
    pseq = processed["seq"]
    pok = (pseq >= 0) & (pseq < n)
    count = np.bincount(pseq[pok], minlength=n)[:n].astype(np.int32)
    first_member = np.full(n, -1, dtype=np.int32)
    first_ts = np.full(n, -1, dtype=np.int64)
    # processed rows are in receive order: the first row of each seq is its first processing
    useq, uidx = np.unique(pseq[pok], return_index=True)
    first_member[useq] = processed["member"][pok][uidx]
    first_ts[useq] = processed["processed_ts_ns"][pok][uidx]
    verdict = np.where((count > 0) & (in_topic == 0), "processed_not_in_topic",
              np.where(count > np.maximum(in_topic, 1), "duplicated",
              np.where(count > 0, "once",
              np.where(in_topic > 0, "lost", "not_in_topic")))).astype(object)
    return {"seq": np.arange(n, dtype=np.int64), "is_warmup": is_warmup, "partition": partition,
            "offset": offset, "in_topic": in_topic, "processed_count": count,
            "first_member": first_member, "first_processed_ts_ns": first_ts, "delivery": verdict}


def longest_gap_after_ms(ts_ns: np.ndarray, after_ns: int, before_ns: int | None = None) -> float | None:
    """The longest gap between consecutive sorted times that ends after ``after_ns`` (and
    starts before ``before_ns``)."""
    ts = np.sort(ts_ns)
    if len(ts) < 2:
        return None
    gaps, starts, ends = np.diff(ts), ts[:-1], ts[1:]
    keep = ends > after_ns
    if before_ns is not None:
        keep &= starts < before_ns
    return round(float(gaps[keep].max()) / 1e6, 3) if keep.any() else None


def _victim_partitions(events: list[dict[str, Any]], victim: tuple[int, int], until_ns: int) -> list[int]:
    parts: list[int] = []
    for e in events:
        if int(e["ts_ns"]) > until_ns:
            break
        if (int(e["member"]), int(e["incarnation"])) != victim:
            continue
        if e["ev"] in ("assigned", "revoked"):  # "owned": after an incremental change too
            parts = owned_after(e)
    return sorted(parts)


def _reached(processed: dict[str, np.ndarray], partition: int, owner: tuple[int, int],
             start_ns: int, end_ns: int | None) -> int | None:
    """One past the highest offset of ``partition`` that ``owner`` processed from ``start_ns``
    until ``end_ns`` (its next assignment to anyone); None when it processed none there."""
    mask = ((processed["partition"] == partition) & (processed["member"] == owner[0])
            & (processed["incarnation"] == owner[1]) & (processed["processed_ts_ns"] >= start_ns))
    if end_ns is not None:
        mask &= processed["processed_ts_ns"] < end_ns
    return int(processed["offset"][mask].max()) + 1 if mask.any() else None


def expected_from_offsets(events: list[dict[str, Any]], processed: dict[str, np.ndarray],
                          lag_rows: list[dict[str, Any]] | None = None,
                          keeps_position: bool = False) -> tuple[int, int]:
    """``(expected_redelivered, expected_lost)`` by the rule of the module's docstring.

    An owner that starts a partition at the committed offset ``c`` with ``done`` records
    already processed there processes ``[c, done)`` again, as far as it gets before the
    partition's next assignment: an owner revoked before it read anything re-reads nothing,
    and the next owner, starting at the same commit, re-reads those records once (counted
    there, not twice; a starved machine rebalances a second time before the first owner's
    first fetch). Records a commit skipped (``[done, c)``) are counted once however many owners
    start past them.

    ``keeps_position``: the client keeps its position on a partition a rebalance gives back
    to the same member (kafka-python 3 preserves the partition's state); librdkafka's eager
    assign starts every assigned partition at the committed offset."""
    marks: list[tuple[int, int, str, Any]] = []  # (ts, order, kind, payload)
    for e in events:
        if e["ev"] == "commit" and e.get("ok"):
            marks.append((int(e["ts_ns"]), 0, "commit",
                          {int(p): int(o) for p, o in (e.get("offsets") or {}).items()}))
        elif e["ev"] == "assigned":
            marks.append((int(e["ts_ns"]), 1, "assigned",
                          ((int(e["member"]), int(e["incarnation"])), list(e["partitions"]))))
    for r in lag_rows or []:
        if r.get("committed_offset") is not None:
            marks.append((int(r["sample_ts_ns"]), 0, "commit",
                          {int(r["partition"]): int(r["committed_offset"])}))
    marks.sort(key=lambda m: (m[0], m[1]))
    # Which assignments restart a partition at the commit: all, but a partition given back
    # to its owner by a client that keeps its position there.
    restarts: list[tuple[int, int, bool]] = []  # (mark, partition, restarts there)
    owner: dict[int, tuple[int, int]] = {}
    for i, (_ts, _order, kind, payload) in enumerate(marks):
        if kind == "assigned":
            member, parts = payload
            for p in parts:
                restarts.append((i, p, not (keeps_position and owner.get(p) == member)))
                owner[p] = member
    # Each restart's owner reads until the partition's next restart (anyone's).
    next_restart: dict[tuple[int, int], int | None] = {}  # (mark, partition) -> ts
    upcoming: dict[int, int] = {}
    for i, p, restart in reversed(restarts):
        if restart:
            next_restart[(i, p)] = upcoming.get(p)
            upcoming[p] = marks[i][0]
    committed: dict[int, int] = {}
    skipped_to: dict[int, int] = {}  # partition -> end of the skipped offsets already counted
    dup = lost = 0
    for i, (ts, _order, kind, payload) in enumerate(marks):
        if kind == "commit":
            for p, o in payload.items():
                committed[p] = max(committed.get(p, 0), o)
            continue
        member, parts = payload
        for p in parts:
            if (i, p) not in next_restart:
                continue  # given back to a client that keeps its position there
            mask = (processed["partition"] == p) & (processed["processed_ts_ns"] < ts)
            done = int(processed["offset"][mask].max()) + 1 if mask.any() else 0
            c = committed.get(p, 0)
            if done > c:
                reached = _reached(processed, p, member, ts, next_restart[(i, p)])
                dup += max(0, min(done, reached if reached is not None else c) - c)
            lost += max(0, c - max(done, skipped_to.get(p, 0)))
            skipped_to[p] = max(skipped_to.get(p, 0), c)
    return dup, lost


def group_summary(*, read: ReRead, processed: dict[str, np.ndarray], events: list[dict[str, Any]],
                  fault_ts_ns: int | None, rejoin_ts_ns: int | None, fault: str,
                  victim: tuple[int, int] = (0, 0),
                  lag_rows: list[dict[str, Any]] | None = None,
                  keeps_position: bool = False, commits_logged: bool = True) -> dict[str, Any]:
    """The consumer-side figures of a trial (keys of ``trial.json``'s summary).

    ``commits_logged`` false: some of the group's commits leave no trace the lab can read
    (kafka-python's auto commit before a rebalance calls no callback), so the offsets are not
    asked to explain the counts."""
    rpairs = _pairs(np.asarray(read.partition, dtype=np.int64), np.asarray(read.offset, dtype=np.int64))
    ppairs = _pairs(processed["partition"], processed["offset"])
    uniq = np.unique(ppairs)
    topic_set = np.unique(rpairs)
    redelivered = int(len(ppairs) - len(uniq))
    lost = len(np.setdiff1d(topic_set, uniq, assume_unique=True))
    not_in_topic = len(np.setdiff1d(uniq, topic_set, assume_unique=True))
    out: dict[str, Any] = {
        "processed_records": len(ppairs), "processed_unique": len(uniq),
        "redelivered": redelivered, "lost_unprocessed": lost,
        "processed_not_in_topic": not_in_topic, "reread_agrees": not_in_topic == 0,
        "victim_end_ts_ns": None, "moved_partitions": [], "rebalance_pause_ms": None,
        "rebalance_pause_by_partition": {}, "successor_assigned_ms": None,
        "survivors_pause_ms": None, "rejoin_pause_ms": None,
        "committed_at_fault": {}, "processed_at_fault": {},
        "expected_redelivered": None, "expected_lost": None, "offsets_explain": None,
        "self_kill": None, "failed_commits": None, "dropped_records": None,
    }
    if fault_ts_ns is None:
        return out
    end = fault_ts_ns
    for e in events:
        if (int(e["member"]), int(e["incarnation"])) != victim:
            continue
        if e["ev"] == "self_kill":
            end = int(e["ts_ns"])
            out["self_kill"] = {k: e.get(k) for k in ("batch_len", "processed_in_batch",
                                                      "batch_committed", "batch_offsets")}
        elif e["ev"] == "closed" and fault == "leave-consumer":
            end = int(e["ts_ns"])
    out["victim_end_ts_ns"] = end
    moved = _victim_partitions(events, victim, fault_ts_ns)  # a leaver revokes its own on close
    out["moved_partitions"] = moved
    vm = (processed["member"] == victim[0]) & (processed["incarnation"] == victim[1])
    others = ~vm
    pauses: dict[str, float | None] = {}
    for p in moved:
        rx = processed["receive_ts_ns"][others & (processed["partition"] == p)
                                        & (processed["receive_ts_ns"] > fault_ts_ns)]
        pauses[str(p)] = round(float(rx.min() - fault_ts_ns) / 1e6, 3) if len(rx) else None
    out["rebalance_pause_by_partition"] = pauses
    known = [v for v in pauses.values() if v is not None]
    out["rebalance_pause_ms"] = max(known) if known and len(known) == len(pauses) else None
    assigned_after = [int(e["ts_ns"]) for e in events
                      if e["ev"] == "assigned" and int(e["ts_ns"]) > fault_ts_ns
                      and (int(e["member"]), int(e["incarnation"])) != victim
                      and set(e["partitions"]) & set(moved)]
    out["successor_assigned_ms"] = (round((min(assigned_after) - fault_ts_ns) / 1e6, 3)
                                    if assigned_after else None)
    survivor_gaps = [longest_gap_after_ms(processed["receive_ts_ns"][processed["partition"] == p],
                                          fault_ts_ns, rejoin_ts_ns)
                     for p in np.unique(processed["partition"]) if int(p) not in moved]
    survivor_known = [g for g in survivor_gaps if g is not None]
    out["survivors_pause_ms"] = max(survivor_known) if survivor_known else None
    if rejoin_ts_ns is not None:  # gaps that start after the rejoin (not the kill's own)
        rx = processed["receive_ts_ns"]
        rg = [longest_gap_after_ms(rx[(processed["partition"] == p) & (rx >= rejoin_ts_ns)], rejoin_ts_ns)
              for p in np.unique(processed["partition"])]
        rk = [g for g in rg if g is not None]
        out["rejoin_pause_ms"] = max(rk) if rk else None
    committed: dict[str, int] = {}
    done: dict[str, int] = {}
    for p in moved:
        offs = [int(e["offsets"][str(p)]) for e in events
                if e["ev"] == "commit" and e.get("ok") and int(e["ts_ns"]) <= end
                and str(p) in (e.get("offsets") or {})]
        committed[str(p)] = max(offs) if offs else 0
        po = processed["offset"][(processed["partition"] == p) & (processed["processed_ts_ns"] <= end)]
        done[str(p)] = int(po.max()) + 1 if len(po) else 0
    out["committed_at_fault"], out["processed_at_fault"] = committed, done
    out["failed_commits"] = sum(1 for e in events if e["ev"] == "commit" and not e.get("ok"))
    out["dropped_records"] = sum(int(e.get("records") or 0) for e in events if e["ev"] == "dropped")
    if not commits_logged:
        return out  # the offsets cannot tell: expected_* and offsets_explain stay null
    exp_dup, exp_lost = expected_from_offsets(events, processed, lag_rows, keeps_position)
    out["expected_redelivered"], out["expected_lost"] = exp_dup, exp_lost
    out["offsets_explain"] = exp_dup == redelivered and exp_lost == lost
    return out
