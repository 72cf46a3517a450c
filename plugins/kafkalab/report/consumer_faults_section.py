"""Section 2 of a fault run's page, "Consumer faults" (``#consumer-faults``, only when the
run has ``kill-consumer`` / ``leave-consumer`` / ``cut-consumer`` trials): what a consumer group's member
failing did to the records it was processing.

Findings (commit after that left records unprocessed, a re-read that disagrees), the pauses
per fault × commit strategy beside the session timeout and heartbeat that explain them,
redelivered and lost records per strategy beside what the committed offsets predict, a table
per trial, the group's lag over time (``group_lag``) with the fault, the successor's
assignment and the rejoin marked, and what an old broker's group protocol lacks (the trials'
``group_protocol``).

A function of a :class:`~kafkalab.report.data.RunView` whose ``faults`` holds the tables;
it reads no file. Missing values show ``—`` with the reason where it is known.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from kafkalab.report.charts import PALETTE, XMark, XYSeries, svg_xy_chart
from kafkalab.report.data import RunView
from kafkalab.report.fault_data import (
    COMMIT_ORDER,
    FaultTables,
    consumer_groups,
    consumer_trials,
    is_at_least_once_loss,
    is_reread_disagreement,
    order_rank,
)
from kafkalab.report.fault_parts import (
    MAX_ALL_TIMELINES,
    by_trial_number,
    event_marks,
    field_text,
    ms_text,
    trial_emulator,
    trial_number,
    trial_rows,
)
from kafkalab.report.format import MISSING, esc, fmt_count
from kafkalab.report.notes import count_cell, percentile_cell
from kafkalab.report.page_parts import figure, scroll_table
from kafkalab.values import as_bool, as_float, is_missing

PAUSE_NOTE = (
    "rebalance_pause_ms: from the fault to the first record a surviving member read on a "
    "partition the failed member had (the longest over those partitions); "
    "successor_assigned_ms: from the fault to a survivor's assignment of one of them — after "
    "a SIGKILL the coordinator notices only when the member's session times out "
    "(session_timeout_ms; members heartbeat every heartbeat_interval_ms), after a clean leave "
    "(LeaveGroup) at once; survivors_pause_ms: the longest gap on the partitions that did "
    "not move (0.9's eager rebalance stops every member, not only the new owner); "
    "rejoin_pause_ms: the longest gap on any partition after the member came back.")
DELIVERY_NOTE = (
    "redelivered: records processed more than once (processed rows beyond the first of each "
    "partition and offset); lost: records the topic holds that no member processed. "
    "expected_*: what the committed offsets predicted when the member stopped — processed "
    "beyond the commit is processed again by the successor, committed beyond the processed "
    "is never processed; offsets explain: both predictions equal the counts. commit after "
    "(at-least-once) may redeliver but must lose nothing; commit before (at-most-once) may "
    "lose but never redelivers; auto commits whatever the client handed out every "
    "auto_commit_interval_ms, so it may do either.")
LAG_NOTE = (
    "The group's lag: Σ over the partitions of (log end − committed offset), sampled every "
    "0.5 s. It grows while the failed member's partitions wait for a new owner and falls "
    "once the successor commits.")

CONSUMER_TRIAL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("consumers", "count"), ("session_timeout_ms", "count"),
    ("heartbeat_interval_ms", "count"), ("processed_records", "count"),
    ("redelivered", "count"), ("expected_redelivered", "count"),
    ("lost_unprocessed", "count"), ("expected_lost", "count"),
    ("rebalance_pause_ms", "num"), ("successor_assigned_ms", "num"),
    ("survivors_pause_ms", "num"), ("rejoin_pause_ms", "num"),
)
"""The columns of the per-trial consumer table, after its keys."""


def _consumer_reason(r: Any, key: str) -> str | None:
    """Why a consumer trial's figure is missing, where it is known."""
    if field_text(r, "status") == "failed":
        return "trial failed"
    if key in ("rebalance_pause_ms", "successor_assigned_ms"):
        if not field_text(r, "moved_partitions"):
            return "no moved partition recorded"
        return "a moved partition never resumed" if key == "rebalance_pause_ms" else None
    if key == "rejoin_pause_ms" and is_missing(r.get("rejoin_elapsed_s")):
        return "no rejoin"
    return None


def _consumer_cell(r: Any, key: str, kind: str) -> str:
    """Figure ``key`` of a consumer trial as a table cell (``kind``: ``count`` or ``num``),
    else why it is missing (:func:`_consumer_reason`)."""
    reason = _consumer_reason(r, key)
    return count_cell(r.get(key), reason) if kind == "count" else percentile_cell(r.get(key),
                                                                                   reason)


def _stat(grp: pd.DataFrame, col: str, how: str) -> float | None:
    if col not in grp.columns:
        return None
    values = pd.to_numeric(grp[col], errors="coerce").dropna()
    if values.empty:
        return None
    return float({"median": values.median, "max": values.max, "sum": values.sum}[how]())


def _values_text(grp: pd.DataFrame, col: str) -> str:
    """The distinct values of a setting (``6000`` or ``1500 / 6000``)."""
    if col not in grp.columns:
        return MISSING
    values = sorted({int(v) for v in pd.to_numeric(grp[col], errors="coerce").dropna()})
    return " / ".join(f"{v:,}" for v in values) or MISSING


def _agree_text(grp: pd.DataFrame, col: str) -> str:
    known = [as_bool(v) for v in grp.get(col, pd.Series(dtype=object)) if not is_missing(v)]
    return f"{sum(known)} of {len(known)}" if known else MISSING


def _consumer_findings(trials: pd.DataFrame) -> str:
    h = []
    for _, r in trials.iterrows():
        tid = esc(r.get("trial_id"))
        if is_at_least_once_loss(r):
            h.append(
                f'<div class="finding" data-trial="{tid}"><strong>Finding: commit after '
                f"(at-least-once) left records unprocessed</strong> — {tid}: lost "
                f"{esc(fmt_count(r.get('lost_unprocessed')))} (the offsets predicted "
                f"{esc(fmt_count(r.get('expected_lost')))}). Committing after processing may "
                "process a record twice but must never skip one; the validation suite fails "
                "on it.</div>")
        if is_reread_disagreement(r):
            h.append(
                f'<div class="finding" data-trial="{tid}"><strong>The re-read disagrees'
                f"</strong> — {tid}: the group processed records the re-read from offset 0 did "
                "not find (processed_not_in_topic "
                f"{esc(fmt_count(r.get('processed_not_in_topic')))}); the check disagrees with "
                "itself, so this trial's counts are suspect.</div>")
    if not h:
        after = [r for _, r in trials.iterrows() if field_text(r, "commit") == "after"]
        if after:
            h.append(f'<p class="ok">Commit after (at-least-once) lost no record '
                     f"({len(after)} trial(s)); every re-read agrees.</p>")
        else:
            h.append('<p class="ok">Every re-read agrees with what the group processed.</p>')
    return "".join(h)


def _pause_table(trials: pd.DataFrame) -> str:
    head = ('<th class="t">fault</th><th class="t">commit</th><th>trials</th>'
            "<th>session_timeout_ms</th><th>heartbeat_interval_ms</th>"
            "<th>successor_assigned_ms median</th><th>rebalance_pause_ms median</th>"
            "<th>rebalance_pause_ms max</th><th>survivors_pause_ms median</th>"
            "<th>survivors_pause_ms max</th><th>rejoin_pause_ms max</th>")
    rows = []
    for (fault, commit), grp in consumer_groups(trials):
        def num(col: str, how: str, g: pd.DataFrame = grp) -> str:
            return percentile_cell(_stat(g, col, how), None)

        rows.append(
            f'<tr data-group="{esc(fault)}|{esc(commit)}"><td class="t">{esc(fault)}</td>'
            f'<td class="t">{esc(commit)}</td><td>{len(grp)}</td>'
            f"<td>{esc(_values_text(grp, 'session_timeout_ms'))}</td>"
            f"<td>{esc(_values_text(grp, 'heartbeat_interval_ms'))}</td>"
            f"<td>{num('successor_assigned_ms', 'median')}</td>"
            f"<td>{num('rebalance_pause_ms', 'median')}</td>"
            f"<td>{num('rebalance_pause_ms', 'max')}</td>"
            f"<td>{num('survivors_pause_ms', 'median')}</td>"
            f"<td>{num('survivors_pause_ms', 'max')}</td>"
            f"<td>{num('rejoin_pause_ms', 'max')}</td></tr>")
    return ("<h3>Pauses per fault × commit strategy</h3>"
            + scroll_table("consumer-pauses", "Rebalance pauses (ms) beside the session "
                           "timeout and heartbeat that explain them", head, "".join(rows))
            + f'<p class="note">{esc(PAUSE_NOTE)}</p>')


def _delivery_table(trials: pd.DataFrame) -> str:
    head = ('<th class="t">commit</th><th class="t">fault</th><th>trials</th>'
            "<th>redelivered sum</th><th>redelivered max</th><th>expected_redelivered sum</th>"
            "<th>lost sum</th><th>lost max</th><th>expected_lost sum</th>"
            '<th class="t">offsets explain</th><th class="t">re-read agrees</th>')
    keyed = sorted(consumer_groups(trials),
                   key=lambda kv: order_rank(kv[0][1].split(" · ")[0], COMMIT_ORDER))
    rows = []
    for (fault, commit), grp in keyed:
        def total(col: str, how: str = "sum", g: pd.DataFrame = grp) -> str:
            return count_cell(_stat(g, col, how))

        finding = any(is_at_least_once_loss(r) for _, r in grp.iterrows())
        cls = ' class="finding"' if finding else ""
        rows.append(
            f'<tr{cls} data-group="{esc(fault)}|{esc(commit)}"><td class="t">{esc(commit)}</td>'
            f'<td class="t">{esc(fault)}</td><td>{len(grp)}</td>'
            f"<td>{total('redelivered')}</td><td>{total('redelivered', 'max')}</td>"
            f"<td>{total('expected_redelivered')}</td><td>{total('lost_unprocessed')}</td>"
            f"<td>{total('lost_unprocessed', 'max')}</td><td>{total('expected_lost')}</td>"
            f'<td class="t">{esc(_agree_text(grp, "offsets_explain"))}</td>'
            f'<td class="t">{esc(_agree_text(grp, "reread_agrees"))}</td></tr>')
    return ("<h3>Redelivered and lost per commit strategy</h3>"
            + scroll_table("consumer-deliveries", "Records processed twice or never, and what "
                           "the committed offsets predicted", head, "".join(rows))
            + f'<p class="note">{esc(DELIVERY_NOTE)}</p>')


def _consumer_trials_table(trials: pd.DataFrame) -> str:
    head = ('<th class="t">trial_id</th><th class="t">fault</th><th class="t">commit</th>'
            "<th>trial</th>" + "".join(f"<th>{esc(k)}</th>" for k, _ in CONSUMER_TRIAL_COLUMNS)
            + '<th class="t">moved</th>')
    rows = []
    for _, grp in consumer_groups(trials):
        grp = by_trial_number(grp)
        for _, r in grp.iterrows():
            finding = is_at_least_once_loss(r) or is_reread_disagreement(r)
            cls = ' class="finding"' if finding else ""
            rows.append(
                f'<tr{cls} data-trial="{esc(r.get("trial_id"))}">'
                f'<td class="t cell-id">{esc(r.get("trial_id"))}</td>'
                f'<td class="t">{esc(field_text(r, "fault"))}</td>'
                f'<td class="t">{esc(field_text(r, "commit"))}</td>'
                f"<td>{esc(trial_number(r))}</td>"
                + "".join(f"<td>{_consumer_cell(r, k, kind)}</td>"
                          for k, kind in CONSUMER_TRIAL_COLUMNS)
                + f'<td class="t">{esc(field_text(r, "moved_partitions") or MISSING)}</td></tr>')
    return ("<h3>Consumer trials</h3>"
            + scroll_table("consumer-trials", "Per trial (messages, ms)", head, "".join(rows)))


def lag_marks(r: Any) -> list[XMark]:
    """The markers of a consumer trial's lag chart, in time order: the fault, the
    successor's assignment (fault + successor_assigned_ms) and the member's rejoin."""
    fault = as_float(r.get("fault_elapsed_s"))
    assigned_ms = as_float(r.get("successor_assigned_ms"))
    found = [(x, kind, label) for x, kind, label in (
        (fault, "fault", field_text(r, "fault") or "fault"),
        (None if fault is None or assigned_ms is None else fault + assigned_ms / 1000,
         "assigned", "successor assigned"),
        (as_float(r.get("rejoin_elapsed_s")), "rejoin", "rejoin")) if x is not None]
    return event_marks(found)


def _lag_chart(r: Any, group_lag: pd.DataFrame) -> str:
    """One consumer trial's figure of the group's lag, its events marked, its figures under
    the caption. (The chart's badge marks an emulator trial; the figure has no banner.)"""
    trial_id = str(r.get("trial_id"))
    rows = trial_rows(group_lag, trial_id)
    title = (f"{field_text(r, 'fault')} · commit {field_text(r, 'commit')} · trial "
             f"{trial_number(r)}")
    facts = [f"rebalance pause {ms_text(r, 'rebalance_pause_ms')}",
             f"redelivered {fmt_count(r.get('redelivered'))}",
             f"lost {fmt_count(r.get('lost_unprocessed'))}"]
    attrs = f' class="lag" data-trial="{esc(trial_id)}"'
    note = f'<p class="note">{esc(" · ".join(facts))}</p>'
    if rows.empty or "lag_msgs" not in rows.columns:
        return figure(attrs, esc(title), False,
                      '<p class="empty">No group_lag rows for this trial.</p>', note)
    t = pd.to_numeric(rows.get("elapsed_s"), errors="coerce")
    lag = (rows.assign(_t=t, _lag=pd.to_numeric(rows["lag_msgs"], errors="coerce"))
           .dropna(subset=["_t"]).groupby("_t")["_lag"].sum(min_count=1).sort_index())
    series = [XYSeries("group lag (msgs)", [(float(x), as_float(y)) for x, y in lag.items()],
                       emulator=trial_emulator(r), color=PALETTE[0])]
    svg = svg_xy_chart(title, series, "s since the trial's start", "msgs", marks=lag_marks(r),
                       note="Σ lag_msgs over the partitions, every 0.5 s")
    return figure(attrs, esc(title), False, svg, note)


def _lag_charts(tables: FaultTables, trials: pd.DataFrame) -> str:
    h = ["<h3>The group's lag around the fault</h3>", f'<p class="note">{esc(LAG_NOTE)}</p>']
    if tables.group_lag.empty:
        h.append('<p class="empty">No group_lag table (not aggregated, or aggregated before '
                 "it existed).</p>")
        return "".join(h)
    draw_all = len(trials) <= MAX_ALL_TIMELINES
    if not draw_all:
        h.append(f'<p class="note">{len(trials)} trials: one chart per fault × commit strategy '
                 "(its first trial) and one per finding.</p>")
    h.append('<div class="charts">')
    for _, grp in consumer_groups(trials):
        grp = by_trial_number(grp)
        for i, (_, r) in enumerate(grp.iterrows()):
            if draw_all or i == 0 or is_at_least_once_loss(r):
                h.append(_lag_chart(r, tables.group_lag))
    h.append("</div>")
    return "".join(h)


def _group_protocol_note(trials: pd.DataFrame) -> str:
    notes = sorted({field_text(r, "group_protocol") for _, r in trials.iterrows()} - {""})
    items = "".join(f"<li>{esc(n)}.</li>" for n in notes)
    if not items:
        return ""
    return ("<h3>What the brokers' group protocol lacks</h3>"
            f'<ul class="group-protocol">{items}<li>So a member that dies stalls its '
            "partitions for up to the session timeout, every rebalance pauses every member, "
            "and a member that comes back is a new member: another rebalance.</li></ul>")


def section_consumer(v: RunView, number: int = 2) -> str:
    """(2) Consumer faults: findings, pauses, redelivered/lost per strategy, the trials,
    the group's lag and the group-protocol note; ``""`` when the run has no consumer
    fault."""
    tables = v.faults or FaultTables()
    trials = consumer_trials(tables.trials)
    if trials.empty:
        return ""
    h = [f'<section id="consumer-faults"><h2>{number}. Consumer faults</h2>',
         '<p class="note">A consumer group of several member processes consumes the '
         "fixed-rate stream with a commit strategy; member 0 is SIGKILLed (kill-consumer), "
         "closes cleanly (leave-consumer) or is cut from the cluster while it keeps running "
         "(cut-consumer: every link of its own, healed after cut_s, when it rejoins) at the "
         "fault, and may come back. Every message is "
         "judged against a full re-read of the topic.</p>",
         _consumer_findings(trials), _pause_table(trials), _delivery_table(trials),
         _consumer_trials_table(trials), _lag_charts(tables, trials),
         _group_protocol_note(trials), "</section>"]
    return "".join(h)


__all__ = ["CONSUMER_TRIAL_COLUMNS", "lag_marks", "section_consumer"]
