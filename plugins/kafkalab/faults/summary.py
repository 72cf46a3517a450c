"""A trial's figures from its files: the checker's counts and the availability window.

Definitions (docs/faults.md, "What a trial reports"):

* ``unavailable_ms``: the longest gap between consecutive acks (all acked messages, by ack
  time) among the gaps that end after the fault started. The no-fault control uses the same
  rule with its nominal fault instant, so control and fault are measured alike.
* ``consumer_gap_ms``: the same over the live consumer's first receipts.
* ``leader_elected_ms``: fault → the first timeline poll whose partition-0 leader is another
  broker (null when leadership did not move: a follower fault, or the control).
* ``isr_full_ms``: fault → the first poll after the heal where every partition has its full
  replication factor in sync again.
* ``lag_recovered_ms``: fault → the first lag sample after the post-fault peak at or below
  ``max(1, R × lag interval)``; 0 when the lag never rose above it.
* ``recovered``: acks kept coming after the heal (ducktape checks this before judging loss).
* ``producer_saw_new_leader_ms``: fault → the first time the producer's own client (its
  librdkafka statistics, every 100 ms) named another leader of partition 0: its metadata
  refresh, beside the cluster's election (``leader_elected_ms``). Null for a follower fault,
  the control, kafka-python (no statistics), or when it never did.
* ``heal_to_first_ack_ms`` / ``heal_to_first_receipt_ms``: the heal → the first ack (any
  record's) / the live consumer's first receipt after it: how long the clients took to work
  again once the fault was gone (reconnecting, refreshing metadata, retrying), apart from how
  long the fault itself lasted. Null without a heal or without such an ack / receipt, and for
  a consumer fault (the producer and the live consumer are not what it breaks).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np

__all__ = ["error_name", "first_after_ms", "longest_gap_ms", "trial_summary"]

_CODE = re.compile(r"(_?[A-Z][A-Z0-9_]{3,})")


def error_name(error: str | None) -> str:
    """A short name for a client error text (``_MSG_TIMED_OUT``, ``NOT_LEADER_FOR_PARTITION``)."""
    if not error:
        return "no answer"
    m = _CODE.search(error)
    return m.group(1) if m else error.split(":")[0][:40]


def longest_gap_ms(ts_ns: np.ndarray, after_ns: int | None) -> float | None:
    """The longest gap between consecutive times (sorted) that ends after ``after_ns``."""
    ts = np.sort(ts_ns[ts_ns > 0])
    if len(ts) < 2:
        return None
    gaps = np.diff(ts)
    ends = ts[1:]
    if after_ns is not None:
        gaps = gaps[ends > after_ns]
    return round(float(gaps.max()) / 1e6, 3) if len(gaps) else None


def _ms(a: int | None, b: int | None) -> float | None:
    return None if a is None or b is None else round((b - a) / 1e6, 3)


def first_after_ms(ts_ns: np.ndarray, after_ns: int | None) -> float | None:
    """``after_ns`` → the first of ``ts_ns`` later than it, in ms (None: no such time, or no
    ``after_ns``)."""
    if after_ns is None:
        return None
    later = ts_ns[ts_ns > after_ns]
    return _ms(after_ns, int(later.min())) if len(later) else None


def trial_summary(*, verdicts: dict[str, np.ndarray], sends: dict[str, np.ndarray],
                  receipts_ts_ns: np.ndarray, lag_rows: list[dict[str, Any]],
                  events: dict[str, Any], errors: list[str | None], rf: int,
                  rate_msgs_per_s: float, lag_interval_s: float,
                  in_broker_logs: dict[int, str] | None) -> dict[str, Any]:
    """The trial's counts and availability figures (the keys of the ``--json`` object that
    come from measurement)."""
    v = verdicts["verdict"]
    outcome = verdicts["outcome"]
    rc = verdicts["read_count"]
    fault = events.get("fault_ts_ns")
    heal = events.get("heal_ts_ns")
    ack_ts = sends["ack_ts_ns"][outcome == "acked"]
    after = heal if heal is not None else fault
    acks_after = int((ack_ts > after).sum()) if after is not None else len(ack_ts)
    lost_locs = in_broker_logs or {}
    in_logs = sum(1 for s in lost_locs.values() if s)
    lag_recovered = None
    if fault is not None and lag_rows:
        thresh = max(1.0, rate_msgs_per_s * lag_interval_s)
        by_ts: dict[int, int] = {}
        for r in lag_rows:
            if r["sample_ts_ns"] >= fault and r.get("lag_msgs") is not None:
                by_ts[int(r["sample_ts_ns"])] = by_ts.get(int(r["sample_ts_ns"]), 0) + int(r["lag_msgs"])
        series = sorted(by_ts.items())
        if series:
            peak_i = int(np.argmax([lag for _, lag in series]))
            if series[peak_i][1] <= thresh:
                lag_recovered = 0.0
            else:
                for ts, lag in series[peak_i:]:
                    if lag <= thresh:
                        lag_recovered = _ms(fault, ts)
                        break
    uncommitted = verdicts.get("uncommitted_read_count")
    aborted = outcome == "aborted"
    aborted_uncommitted: int | None = None
    committed_unacked: int | None = None
    if uncommitted is not None and any(c is not None for c in uncommitted):
        aborted_uncommitted = sum(1 for a, c in zip(aborted, uncommitted, strict=True) if a and c)
        txn_end = sends.get("txn_end")
        if txn_end is not None:
            committed_unacked = sum(1 for e, o in zip(txn_end, outcome, strict=True)
                                    if e == "committed" and o in ("failed", "indeterminate"))
    return {
        "intended": len(v),
        "acked": int((outcome == "acked").sum()),
        "aborted": int(aborted.sum()),
        "aborted_visible": int((v == "aborted_visible").sum()),
        "aborted_read_uncommitted": aborted_uncommitted,
        "txn_committed_unacked": committed_unacked,
        "failed": int((outcome == "failed").sum()),
        "indeterminate": int((outcome == "indeterminate").sum()),
        "unsent": int((outcome == "unsent").sum()),
        "read_back": int((rc > 0).sum()),
        "read_back_records": int(rc.sum()),
        "acked_lost": int((v == "acked_lost").sum()),
        "acked_lost_in_broker_logs": in_logs if in_broker_logs is not None else None,
        "acked_lost_absent_from_logs": (len(lost_locs) - in_logs) if in_broker_logs is not None else None,
        "failed_but_present": int((v == "failed_but_present").sum()),
        "indeterminate_present": int((v == "indeterminate_present").sum()),
        "unseen": int((v == "unseen").sum()),
        "duplicates": int(np.clip(rc - 1, 0, None).sum()),
        "reordered": int(verdicts["reordered"].sum()),
        "acks_after_fault": acks_after,
        "recovered": acks_after > 0,
        "unavailable_ms": longest_gap_ms(ack_ts, fault),
        "consumer_gap_ms": longest_gap_ms(receipts_ts_ns, fault),
        "leader_elected_ms": _ms(fault, events.get("leader_elected_ts_ns")),
        "isr_full_ms": _ms(fault, events.get("isr_full_ts_ns")),
        "controller_elected_ms": _ms(fault, events.get("controller_elected_ts_ns")),
        "old_leader_stepped_down_ms": _ms(fault, events.get("old_leader_stepped_down_ts_ns")),
        "producer_saw_new_leader_ms": _ms(fault, events.get("producer_saw_new_leader_ts_ns")),
        "lag_recovered_ms": lag_recovered,
        "heal_to_first_ack_ms": first_after_ms(ack_ts, heal),
        "heal_to_first_receipt_ms": first_after_ms(receipts_ts_ns, heal),
        "errors_by_type": dict(Counter(error_name(e) for e, o in zip(errors, outcome, strict=True)
                                       if o in ("failed", "indeterminate"))),
        "rf": rf,
    }


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}"
    return str(v)


def format_fault_table(trials: list[dict[str, Any]]) -> str:
    """One line per trial, then the median and max per profile × fault × acks × client × max
    in flight × idempotence × transaction size (a cell). The transactional columns (aborted,
    aborted records a read_committed re-read saw, and a read_uncommitted one) only when a
    trial has transactions."""
    txn = any(t.get("txn_msgs") is not None for t in trials)
    cols = [("trial_id", "trial"), ("acked", "acked"), ("acked_lost", "lost"),
            ("acked_lost_in_broker_logs", "in logs"), ("failed_but_present", "fail+present"),
            ("max_in_flight", "in-flight"), ("idempotence", "idem"), ("duplicates", "dup"),
            ("reordered", "reord"), ("unseen", "unseen"),
            *([("aborted", "aborted"), ("aborted_visible", "ab seen"),
               ("aborted_read_uncommitted", "ab uncommitted")] if txn else []),
            ("unavailable_ms", "unavail"), ("consumer_gap_ms", "rx gap"),
            ("leader_elected_ms", "leader"), ("isr_full_ms", "isr"),
            ("controller_elected_ms", "ctrl"), ("old_leader_stepped_down_ms", "old ldr"),
            ("producer_saw_new_leader_ms", "client ldr"),
            ("verdict", "verdict")]
    return _table(trials, cols, ("profile", "fault", "acks", "client", "max_in_flight",
                                 "idempotence", "txn_msgs"))


def format_consumer_table(trials: list[dict[str, Any]]) -> str:
    """One line per consumer-fault trial: the group's settings, what it processed twice or
    never, and the pauses; then the median and max per profile × fault × commit × static
    membership × rebalance protocol × client (a cell)."""
    cols = [("trial_id", "trial"), ("session_timeout_ms", "session"),
            ("heartbeat_interval_ms", "hb"), ("processed_records", "processed"),
            ("redelivered", "redeliv"), ("expected_redelivered", "exp"),
            ("lost_unprocessed", "lost"), ("expected_lost", "exp"),
            ("rebalance_pause_ms", "pause"), ("successor_assigned_ms", "assigned"),
            ("survivors_pause_ms", "others"), ("rejoin_pause_ms", "rejoin"),
            ("verdict", "verdict")]
    return _table(trials, cols, ("profile", "fault", "commit", "static_membership", "rebalance",
                                 "client"))


_SWITCH_TEXT: dict[str, tuple[str, str]] = {
    "static_membership": ("static", "dynamic"), "idempotence": ("idem-on", "idem-off")}
"""How a cell's boolean settings read in its label (True, False)."""


def _key_text(field: str, value: Any) -> str:
    """A group key's part as the label shows it: nothing for an unset value, ``mif5``,
    ``static`` / ``dynamic``, ``idem-on`` / ``idem-off``, else the value."""
    if value is None:
        return ""
    if field in _SWITCH_TEXT:
        return _SWITCH_TEXT[field][0 if value else 1]
    if field == "max_in_flight":
        return f"mif{value}"
    if field == "txn_msgs":
        return f"txn{value}"
    return str(value)


def _table(trials: list[dict[str, Any]], cols: list[tuple[str, str]],
           group_by: tuple[str, ...]) -> str:
    rows = [[_fmt(t.get(k)) for k, _ in cols] for t in trials]
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for t in trials:
        key = tuple(_key_text(k, t.get(k)) for k in group_by)
        groups.setdefault(tuple(k for k in key if k), []).append(t)
    for key, ts in groups.items():
        if len(ts) < 2:
            continue
        for label, agg in (("median", np.median), ("max", np.max)):
            row = [f"{'-'.join(key)} {label} ({len(ts)})"]
            for k, _ in cols[1:-1]:
                vals = [float(t[k]) for t in ts if isinstance(t.get(k), int | float)
                        and not isinstance(t.get(k), bool)]
                row.append(_fmt(float(agg(vals))) if vals else "—")
            row.append("")
            rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, (_, h) in enumerate(cols)]
    line = "  ".join(h.ljust(w) if i == 0 else h.rjust(w)
                     for i, ((_, h), w) in enumerate(zip(cols, widths, strict=True)))
    out = [line, "-" * len(line)]
    for r in rows:
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(r, widths, strict=True))))
    return "\n".join(out)
