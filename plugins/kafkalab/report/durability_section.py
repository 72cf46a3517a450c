"""Section 1 of a fault run's page, "Durability and availability" (``#durability``): what
the broker faults did to acknowledged messages and to the cluster's availability.

* findings: every trial of the durability profile that lost an acknowledged message,
  highlighted and explained (never hidden), and a no-fault control that lost or
  duplicated anything;
* a table per profile × fault × acks (``fault_cells``: trials, trials with loss, acked
  lost sum/median/max, duplicates, unavailability, time to a new leader and a full ISR,
  the consumer's gap; median and max over the trials);
* a table per trial (``fault_trials``: every count, the availability figures, the
  clients' errors by type, the verdict);
* timelines of acks/s and rx/s (``fault_timeline``) with the fault, the heal, the new
  leader and the full ISR marked: one chart per trial when there are few, else one
  representative trial per profile × fault × acks (and every finding), the other
  trials' events listed under it;
* what Kafka 0.9 does and does not promise (:data:`KAFKA_0_9_NOTES`), on a run of a
  broker that old (:func:`notes_apply`).

A function of a :class:`~kafkalab.report.data.RunView` whose ``faults`` holds the tables;
it reads no file. Missing values show ``—`` with the reason where it is known.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pandas as pd

from kafkalab.cluster.features import kafka_features, parse_version
from kafkalab.report.charts import PALETTE, XMark, XYSeries, svg_xy_chart
from kafkalab.report.data import RunView, emulator_mask
from kafkalab.report.fault_data import (
    AVAILABILITY_COLUMNS,
    DURABILITY_PROFILE,
    NO_FAULT,
    FaultTables,
    cell_groups,
    count,
    errors_text,
    is_control_anomaly,
    is_controller_fault,
    is_durability_loss,
    is_link_fault,
    missing_reason,
    representative_trials,
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
from kafkalab.report.format import MISSING, emu_mark, esc, fmt_count
from kafkalab.report.notes import count_cell, percentile_cell
from kafkalab.report.page_parts import figure, scroll_table
from kafkalab.values import as_bool, as_float, is_missing

CELL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("trials", "count"), ("trials_complete", "count"), ("trials_with_loss", "count"),
    ("acked_lost_sum", "count"), ("acked_lost_median", "num"), ("acked_lost_max", "count"),
    ("duplicates_median", "num"), ("duplicates_max", "count"),
    ("reordered_median", "num"), ("reordered_max", "count"),
    ("unavailable_ms_median", "num"), ("unavailable_ms_max", "num"),
    ("leader_elected_ms_median", "num"), ("leader_elected_ms_max", "num"),
    ("isr_full_ms_median", "num"), ("isr_full_ms_max", "num"),
    ("consumer_gap_ms_median", "num"), ("consumer_gap_ms_max", "num"),
    ("controller_elected_ms_median", "num"), ("controller_elected_ms_max", "num"),
    ("producer_saw_new_leader_ms_median", "num"), ("producer_saw_new_leader_ms_max", "num"),
    ("heal_to_first_ack_ms_median", "num"), ("heal_to_first_ack_ms_max", "num"),
    ("heal_to_first_receipt_ms_median", "num"), ("heal_to_first_receipt_ms_max", "num"),
    ("aborted_msgs_sum", "count"), ("aborted_visible_sum", "count"),
    ("aborted_read_uncommitted_sum", "count"),
)
"""The columns of the profile × fault × acks table (``fault_cells``), after its keys."""

TRIAL_COUNT_COLUMNS: tuple[str, ...] = (
    "intended_msgs", "acked_msgs", "failed_msgs", "indeterminate_msgs", "unsent_msgs",
    "read_back_msgs", "acked_lost", "acked_lost_in_broker_logs", "acked_lost_absent_from_logs",
    "failed_but_present", "indeterminate_present", "unseen", "duplicates", "reordered",
    "aborted_msgs", "aborted_visible", "aborted_read_uncommitted", "txn_committed_unacked",
    "acks_after_fault",
)
"""Every count of a trial (``fault_trials``), recomputed from its verdicts."""

COUNTS_NOTE = (
    "Counts are over every intended message, warm-up included (the checker judges durability, "
    "not latency): after the heal a fresh consumer re-reads every partition from offset 0. "
    "acked_lost: acknowledged, not read back (…_in_broker_logs: still in some broker's log "
    "segment, so the re-read missed it; …_absent_from_logs: in no broker's log, so the "
    "cluster lost it); failed_but_present: the producer was told it failed, yet it is on the "
    "topic; indeterminate_present: no answer (or never sent), yet on the topic; unseen: "
    "neither acked nor read; duplicates: extra copies read; reordered: read out of send order "
    "within a partition; acks_after_fault: acks received after the heal (after the fault when "
    "there is no heal) — the cluster recovered when there are any.")
TIMES_NOTE = (
    "unavailable_ms: the longest gap between consecutive acks among the gaps ending after the "
    "fault (for the no-fault control: over the whole measured window); consumer_gap_ms: the "
    "same over the live consumer's receipts; leader_elected_ms: from the fault to the first "
    "poll of the partition's metadata (every ~100 ms: ZooKeeper on Kafka 0.9, the Admin API "
    "on KRaft) naming a leader other than the faulted broker; "
    "isr_full_ms: from the fault to the first poll after the heal with every replica in the "
    "ISR; controller_elected_ms (faults of the active controller's node): from the fault to "
    "the first 10 ms poll of the nodes' quorum-state files naming a leader of the KRaft "
    "controller quorum in a newer epoch; lag_recovered_ms: from the fault until the consumer "
    "caught up; producer_saw_new_leader_ms: from the fault to the first time the producer's own "
    "client (librdkafka's statistics, every 100 ms) named another leader, its metadata refresh "
    "beside the cluster's election; heal_to_first_ack_ms and heal_to_first_receipt_ms: from the heal to the first "
    "ack and to the consumer's first receipt after it (how long the clients took to work "
    "again once the fault was gone: reconnecting, refreshing metadata, retrying).")
VERDICT_NOTE = (
    "Verdict: ok; loss (an acknowledged message was not read back); not recovered (no ack "
    "after the heal); aborted visible (transactions: a read_committed re-read found a record "
    "of an aborted transaction); failed (the trial itself failed). A loss under the durability profile "
    "is a finding: it is shown as measured, and the trial is not repeated to make it go away.")

KAFKA_0_9_NOTES: tuple[tuple[str, str], ...] = (
    ("No idempotent producer",
     "Kafka 0.9 has no idempotent producer (KIP-98 came with 0.11). A send retried after a "
     "timeout or a leader change may already be in the log: the retry writes it a second "
     "time. Duplicates under faults are therefore expected with retries, not a checker error "
     "— the no-fault control should still show none."),
    ("Unclean leader election is on by default",
     "unclean.leader.election.enable is true by default in 0.9: when no in-sync replica is "
     "left, an out-of-sync one may become leader, and what only the old leader had is lost "
     "(even when it was acknowledged). The lab's brokers set it to false; the availability "
     "profile turns it back on for its topics, trading those messages for a shorter outage."),
    ("min.insync.replicas applies only to acks=all",
     "min.insync.replicas (2 in the durability and availability profiles) is checked only for "
     "acks=all (-1). With acks 0 or 1 the leader answers whatever the ISR is, so a leader "
     "crash can lose what it acknowledged; with acks=all and too small an ISR the producer "
     "gets NotEnoughReplicas errors instead (availability given up for durability)."),
    ("Log truncation before KIP-101",
     "Before KIP-101 (leader epochs, 0.11), a restarting replica truncates its log to its own "
     "high watermark and then follows the leader. If leadership moves at the wrong moment "
     "(e.g. the old leader crashes again, or a follower with a stale high watermark is "
     "elected), messages acknowledged with acks=all can be truncated away, or replicas can "
     "diverge. A loss under the durability profile may be this known 0.9 behaviour rather "
     "than a lab bug; the broker-log lookup (acked_lost_in_broker_logs / _absent_from_logs) "
     "tells which replicas still hold the messages."),
)
"""The Kafka 0.9 behaviour a reader needs to judge the figures: (title, text)."""


# --------------------------------------------------------------------------- helpers


def _value_cell(r: Any, key: str, kind: str = "num") -> str:
    """Figure ``key`` of a trial or cell row as a table cell (``kind``: ``count`` or
    ``num``), else why it is missing (:func:`~kafkalab.report.fault_data.missing_reason`)."""
    reason = missing_reason(r, key)
    return count_cell(r.get(key), reason) if kind == "count" else percentile_cell(r.get(key),
                                                                                   reason)


def _no_table(tables: FaultTables, table: str, what: str) -> str:
    """What stands for ``table`` when it has no rows: ``No <what> (not aggregated).``"""
    return f'<p class="empty">No {what} ({esc(tables.empty_reason(table))}).</p>'


def _trial_anchor(trial_id: Any) -> str:
    return "trial-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in str(trial_id))


def _verdict(r: Any) -> str:
    verdict = field_text(r, "verdict")
    klass = "ok" if verdict == "ok" else "fail" if verdict else ""
    out = f'<span class="{klass}">{esc(verdict or MISSING)}</span>'
    if is_durability_loss(r):
        out += (' <span class="flag finding" title="an acknowledged message was lost under the '
                'durability profile">finding</span>')
    elif is_control_anomaly(r):
        out += (' <span class="flag finding" title="the no-fault control lost or duplicated '
                'messages">control</span>')
    return out


def _status(r: Any) -> str:
    status = field_text(r, "status")
    klass = "ok" if status == "complete" else "fail" if status in ("failed", "interrupted") else ""
    title = f' title="{esc(field_text(r, "error"))}"' if field_text(r, "error") else ""
    return f'<span class="{klass}"{title}>{esc(status or MISSING)}</span>'


def _who(r: Any) -> str:
    """``durability · sigkill-leader · acks all``."""
    acks = field_text(r, "acks") or "?"
    return f"{field_text(r, 'profile')} · {field_text(r, 'fault')} · acks {acks}"


# --------------------------------------------------------------------------- findings


def loss_explanation(r: Any) -> str:
    """Why a durability trial's loss matters and what the figures say about where the
    messages went (plain text)."""
    lost = count(r, "acked_lost") or 0
    in_logs = count(r, "acked_lost_in_broker_logs")
    absent = count(r, "acked_lost_absent_from_logs")
    acks = field_text(r, "acks")
    fault = field_text(r, "fault")
    bits = [f"{lost:,} acknowledged message(s) were not found when a fresh consumer re-read "
            "every partition from offset 0 after the heal."]
    if absent:
        bits.append(f"{absent:,} of them are in no broker's log: the cluster lost them after "
                    "acknowledging them.")
    if in_logs:
        bits.append(f"{in_logs:,} of them are still in some broker's log segment: the data is "
                    "on disk but was not served by the leader (above the high watermark, or "
                    "on a replica that is no longer in sync).")
    if not absent and not in_logs:
        bits.append("The brokers' logs were not searched for them, so broker loss and "
                    "consumer loss cannot be told apart here.")
    if acks and acks != "all":
        bits.append(f"This trial ran with acks={acks}, overriding the profile's acks=all: the "
                    "leader answers before any follower has the message, so losing the leader "
                    "can lose it. The durability promise holds only with acks=all.")
    else:
        bits.append("With acks=all and min.insync.replicas=2 an acknowledged message was on at "
                    "least two replicas, and unclean leader election is off in this profile: "
                    "the promise is that it survives one broker failure.")
        if fault in ("sigstop-leader", "sigkill-leader", "sigterm-leader",
                     "lossy-leader-crash"):
            bits.append("A leader change under Kafka 0.9 can still truncate acknowledged "
                        "messages (log truncation to the high watermark before KIP-101; see "
                        "the notes below).")
    if r.get("recovered") is not None and not as_bool(r.get("recovered")):
        bits.append("The producer got no ack after the heal (not recovered): part of the "
                    "loss may be the cluster still being down when the re-read ran.")
    bits.append("Shown as measured; the trial was not repeated. The validation suite fails "
                "on it (profile durability ⇒ acked_lost = 0).")
    return " ".join(bits)


def _findings(trials: pd.DataFrame) -> str:
    h = ["<h3>Findings</h3>"]
    if trials.empty:
        h.append('<p class="empty">No trials to judge.</p>')
        return "".join(h)
    rows = [r for _, r in trials.iterrows()]
    losses = [r for r in rows if is_durability_loss(r)]
    controls = [r for r in rows if is_control_anomaly(r)]
    durability = [r for r in rows if field_text(r, "profile") == DURABILITY_PROFILE]
    for r in losses:
        anchor = _trial_anchor(r.get("trial_id"))
        emu = emu_mark(trial_emulator(r))
        h.append(
            f'<div class="finding" data-trial="{esc(r.get("trial_id"))}"><strong>Finding: '
            f"acknowledged messages lost under the durability profile</strong> — "
            f'<a href="#{esc(anchor)}">{esc(r.get("trial_id"))}</a> ({esc(_who(r))}, '
            f"acked_lost {esc(fmt_count(r.get('acked_lost')))}){emu}"
            f"<p>{esc(loss_explanation(r))}</p></div>")
    for r in controls:
        h.append(
            f'<div class="finding" data-trial="{esc(r.get("trial_id"))}"><strong>Control '
            "trial not clean</strong> — "
            f'<a href="#{esc(_trial_anchor(r.get("trial_id")))}">{esc(r.get("trial_id"))}</a>: '
            f"acked_lost {esc(fmt_count(r.get('acked_lost')))}, duplicates "
            f"{esc(fmt_count(r.get('duplicates')))} with no fault injected. Nothing was broken, "
            "so the checker or the setup is suspect; the other trials' counts are to be read "
            "with that in mind.</div>")
    if not losses:
        if durability:
            h.append(f'<p class="ok">No acknowledged message lost under the durability profile '
                     f"({len(durability)} trial(s)).</p>")
        else:
            h.append('<p class="note">No trial of the durability profile in this run.</p>')
    other = [r for r in rows if (count(r, "acked_lost") or 0) > 0
             and field_text(r, "profile") != DURABILITY_PROFILE]
    if other:
        cells = sorted({_who(r) for r in other})
        h.append(f'<p class="note">Loss under other profiles ({len(other)} trial(s): '
                 f"{esc('; '.join(cells))}) is what their settings permit (acks below all, or "
                 "unclean leader election): measured, not a broken promise.</p>")
    if not controls and any(field_text(r, "fault") == NO_FAULT for r in rows):
        h.append('<p class="ok">The no-fault control lost and duplicated nothing.</p>')
    return "".join(h)


# --------------------------------------------------------------------------- (a) cells


T = TypeVar("T")


def _shown(columns: Sequence[T], rows: pd.DataFrame, key: Callable[[T], str]) -> list[T]:
    """``columns`` without the controller-fault figures when no row of ``rows`` is a fault of
    the active controller, without the old leader's step-down when no row is a link fault,
    and without the transaction counts when no row ran transactions (they would only say
    "not a controller fault" or 0 on every line)."""
    out = list(columns)
    faults = [str(f) for f in rows.get("fault", pd.Series(dtype=str))]
    if not any(is_controller_fault(f) for f in faults):
        out = [c for c in out if not key(c).startswith("controller_elected_ms")]
    if not any(is_link_fault(f) for f in faults):
        out = [c for c in out if not key(c).startswith("old_leader_stepped_down_ms")]
    if not rows.get("txn_msgs", pd.Series(dtype=float)).notna().any():
        out = [c for c in out if not key(c).startswith(("aborted_", "txn_"))]
    return out


def _producer(r: Any) -> str:
    """The producer a cell ran, as far as its row knows: ``kafka-python · in-flight 5 ·
    idempotent · transactions of 10`` (empty for rows that recorded none of it)."""
    bits = []
    client = field_text(r, "client")
    if client:
        bits.append(client)
    mif = as_float(r.get("max_in_flight"))
    if mif is not None:
        bits.append(f"in-flight {mif:g}")
    idem = r.get("idempotence")
    if not is_missing(idem):
        bits.append("idempotent" if as_bool(idem) else "not idempotent")
    txn = as_float(r.get("txn_msgs"))
    if txn is not None:
        bits.append(f"transactions of {txn:g}")
    return " · ".join(bits)


def _cells_table(tables: FaultTables, emu: bool) -> str:
    h = ["<h3>Per profile × fault × acks</h3>"]
    cells = tables.cells
    if cells.empty:
        h.append(_no_table(tables, "fault_cells", "profile × fault table"))
        return "".join(h)
    columns = _shown(CELL_COLUMNS, cells, key=lambda c: c[0])
    head = ('<th class="t">profile</th><th class="t">fault</th><th class="t">acks</th>'
            '<th class="t">producer</th>'
            + "".join(f"<th>{esc(k)}</th>" for k, _ in columns))
    rows = []
    for (profile, fault, acks), grp in cell_groups(cells):
        for _, r in grp.iterrows():
            finding = is_durability_loss(r)
            cls = ' class="finding"' if finding else ""
            commit = field_text(r, "commit")
            producer = _producer(r)
            key = (f"{profile}|{fault}|{acks}" + (f"|{commit}" if commit else "")
                   + (f"|{producer}" if producer else ""))
            shown = fault + (f" (commit {commit})" if commit else "")
            rows.append(
                f'<tr{cls} data-cell="{esc(key)}">'
                f'<td class="t">{esc(profile)}</td><td class="t">{esc(shown)}</td>'
                f'<td class="t">{esc(acks or MISSING)}</td>'
                f'<td class="t">{esc(producer or MISSING)}</td>'
                + "".join(f"<td>{_value_cell(r, k, kind)}</td>" for k, kind in columns)
                + "</tr>")
    cap = ("Trials per profile × fault × acks: median and max over the trials (ms, messages)"
           + emu_mark(emu))
    h.append(scroll_table("fault-cells", cap, head, "".join(rows)))
    return "".join(h)


# --------------------------------------------------------------------------- (b) trials


def _trials_table(tables: FaultTables) -> str:
    h = ["<h3>Trials</h3>"]
    trials = tables.trials
    if trials.empty:
        h.append(_no_table(tables, "fault_trials", "per-trial table"))
        return "".join(h)
    emu_any = bool(emulator_mask(trials).any())
    availability = _shown(AVAILABILITY_COLUMNS, trials, key=lambda c: c)
    counts = _shown(TRIAL_COUNT_COLUMNS, trials, key=lambda c: c)
    head = ('<th class="t">trial_id</th><th class="t">profile</th><th class="t">fault</th>'
            '<th class="t">acks</th><th>trial</th><th class="t">status</th>'
            '<th class="t">target</th><th class="t">broker</th>'
            + "".join(f"<th>{esc(k)}</th>" for k in counts)
            + '<th class="t">recovered</th>'
            + "".join(f"<th>{esc(k)}</th>" for k in availability)
            + '<th class="t">errors_by_type</th><th class="t">verdict</th>')
    rows = []
    failed = []
    for _, grp in cell_groups(trials):
        grp = by_trial_number(grp)
        for _, r in grp.iterrows():
            finding = is_durability_loss(r) or is_control_anomaly(r)
            cls = ' class="finding"' if finding else ""
            broker_id = count(r, "target_broker")
            target = " ".join(x for x in (
                "" if broker_id is None else f"broker {broker_id}",
                field_text(r, "target_role")) if x) or MISSING
            version = field_text(r, "broker_version")
            broker = esc(version) + emu_mark(trial_emulator(r))
            recovered = r.get("recovered")
            rec = (MISSING if is_missing(recovered)
                   else '<span class="ok">yes</span>' if as_bool(recovered)
                   else '<span class="fail">no</span>')
            rows.append(
                f'<tr{cls} id="{esc(_trial_anchor(r.get("trial_id")))}" '
                f'data-trial="{esc(r.get("trial_id"))}">'
                f'<td class="t cell-id">{esc(r.get("trial_id"))}</td>'
                f'<td class="t">{esc(field_text(r, "profile"))}</td>'
                f'<td class="t">{esc(field_text(r, "fault"))}</td>'
                f'<td class="t">{esc(field_text(r, "acks") or MISSING)}</td>'
                f"<td>{esc(trial_number(r))}</td>"
                f'<td class="t">{_status(r)}</td><td class="t">{esc(target)}</td>'
                f'<td class="t">{broker}</td>'
                + "".join(f"<td>{_value_cell(r, k, 'count')}</td>" for k in counts)
                + f'<td class="t">{rec}</td>'
                + "".join(f"<td>{_value_cell(r, k)}</td>" for k in availability)
                + f'<td class="t">{esc(errors_text(r.get("errors_by_type")) or MISSING)}</td>'
                + f'<td class="t">{_verdict(r)}</td></tr>')
            if field_text(r, "error"):
                failed.append(f'<li><span class="cell-id">{esc(r.get("trial_id"))}</span> '
                              f"({esc(field_text(r, 'status'))}): "
                              f"{esc(field_text(r, 'error'))}</li>")
    cap = ("Trials (keys as in <code>kafkalab faults run --json</code>; messages, ms)"
           + emu_mark(emu_any))
    h.append(scroll_table("fault-trials", cap, head, "".join(rows)))
    if failed:
        h.append(f'<p class="fail">Trial errors:</p><ul class="trial-errors">{"".join(failed)}</ul>')
    h.extend(f'<p class="note">{esc(n)}</p>' for n in (COUNTS_NOTE, TIMES_NOTE, VERDICT_NOTE))
    return "".join(h)


# --------------------------------------------------------------------------- (c) timelines


EVENTS: tuple[tuple[str, str, str], ...] = (
    ("fault", "fault_elapsed_s", "fault"),
    ("heal", "heal_elapsed_s", "heal"),
    ("leader", "leader_elected_elapsed_s", "new leader"),
    ("isr", "isr_full_elapsed_s", "ISR full"),
    ("controller", "controller_elected_elapsed_s", "new quorum leader"),
    ("stepdown", "old_leader_stepped_down_elapsed_s", "old leader steps down"),
)
"""The markers of a timeline: (kind, ``fault_trials`` column, label)."""

_EVENT_MS = {"leader": "leader_elected_ms", "isr": "isr_full_ms",
             "controller": "controller_elected_ms", "stepdown": "old_leader_stepped_down_ms"}


def timeline_marks(r: Any) -> tuple[list[XMark], list[str]]:
    """The vertical markers of a trial's timeline (their labels one row apart, in time
    order), and why a marker is missing (``new leader: leader did not change``)."""
    found: list[tuple[float, str, str]] = []
    absent: list[str] = []
    for kind, col, label in EVENTS:
        x = as_float(r.get(col))
        if x is None:
            fault = field_text(r, "fault")
            if fault == NO_FAULT or (kind == "controller" and not is_controller_fault(fault)) \
                    or (kind == "stepdown" and not is_link_fault(fault)):
                continue
            reason = missing_reason(r, _EVENT_MS[kind]) if kind in _EVENT_MS else None
            if kind == "heal":
                reason = "no heal recorded"
            absent.append(f"{label}: {reason or 'not recorded'}")
            continue
        found.append((x, kind, label))
    return event_marks(found), absent


def _timeline_chart(r: Any, timeline: pd.DataFrame) -> str:
    """One trial's timeline figure: acks/s, rx/s and sent/s with its events marked, its
    figures under the caption."""
    trial_id = str(r.get("trial_id"))
    rows = trial_rows(timeline, trial_id)
    emu = trial_emulator(r)
    finding = is_durability_loss(r)
    anchor = _trial_anchor(trial_id)
    title = f"{_who(r)} · trial {trial_number(r)}"
    marks, absent = timeline_marks(r)
    facts = [f"unavailable {ms_text(r, 'unavailable_ms')}",
             f"consumer gap {ms_text(r, 'consumer_gap_ms')}",
             f"new leader after {ms_text(r, 'leader_elected_ms')}",
             f"ISR full after {ms_text(r, 'isr_full_ms')}",
             *([f"new quorum leader after {ms_text(r, 'controller_elected_ms')}"]
               if is_controller_fault(field_text(r, "fault")) else []),
             f"acked_lost {fmt_count(r.get('acked_lost'))}",
             f"verdict {field_text(r, 'verdict') or MISSING}"]
    note = f'<p class="note">{esc(" · ".join(facts))}</p>'
    if absent:
        note += f'<p class="note">No marker for {esc("; ".join(absent))}.</p>'
    cls = ' class="finding"' if finding else ""
    attrs = f'{cls} id="timeline-{esc(anchor)}" data-trial="{esc(trial_id)}"'
    caption = esc(title) + emu_mark(emu) + (
        ' <span class="flag finding">finding</span>' if finding else "")
    if rows.empty:
        return figure(attrs, caption, False,
                      '<p class="empty">No timeline rows for this trial.</p>', note)
    t = pd.to_numeric(rows.get("bin_start_s"), errors="coerce")
    rows = rows.assign(_t=t).dropna(subset=["_t"]).sort_values("_t")
    series = []
    for col, name, color, dashed in (("acks_per_s", "acks/s", PALETTE[0], False),
                                     ("rx_per_s", "rx/s (live consumer)", PALETTE[2], False),
                                     ("sent_per_s", "sent/s", PALETTE[8], True)):
        if col not in rows.columns:
            continue
        ys = pd.to_numeric(rows[col], errors="coerce")
        series.append(XYSeries(name, [(float(x), as_float(y)) for x, y in
                                      zip(rows["_t"], ys, strict=True)],
                               emulator=emu, dashed=dashed, color=color))
    svg = svg_xy_chart(title, series, "s since the trial's start", "msgs/s", marks=marks,
                       note="100 ms bins; markers from ZooKeeper polls and the fault driver")
    return figure(attrs, caption, emu, svg, note)


def _other_trials(rows: list[Any]) -> str:
    """The events of the trials not drawn, as a list under the representative's chart."""
    items = []
    for r in rows:
        marks, absent = timeline_marks(r)
        events = ", ".join(m.label for m in marks) or "no events"
        if absent:
            events += f" (no {'; '.join(absent)})"
        items.append(
            f'<li data-trial="{esc(r.get("trial_id"))}"><a href="#{esc(_trial_anchor(r.get("trial_id")))}">'
            f"{esc(r.get('trial_id'))}</a>: {esc(events)}; unavailable "
            f"{esc(ms_text(r, 'unavailable_ms'))}; acked_lost "
            f"{esc(fmt_count(r.get('acked_lost')))}; verdict "
            f"{esc(field_text(r, 'verdict') or MISSING)}</li>")
    return (f"<details><summary>{len(rows)} other trial(s) of this cell</summary>"
            f'<ul class="other-trials">{"".join(items)}</ul></details>')


def _timelines(tables: FaultTables) -> str:
    h = ["<h3>Timelines: acks/s and rx/s around the fault</h3>",
         '<p class="note">Acknowledged messages per second (by ack time) and messages the live '
         "consumer received per second (first receipt), in 100 ms bins; the producer's send "
         "rate dashed. Markers: the fault, the heal (restart / SIGCONT), the first poll naming "
         "a new leader, the first poll after the heal with a full ISR.</p>"]
    trials, timeline = tables.trials, tables.timeline
    if trials.empty:
        h.append('<p class="empty">No trials, so no timelines.</p>')
        return "".join(h)
    if timeline.empty:
        h.append(_no_table(tables, "fault_timeline", "timeline table"))
        return "".join(h)
    draw_all = len(trials) <= MAX_ALL_TIMELINES
    reps = representative_trials(trials)
    if not draw_all:
        h.append(f'<p class="note">{len(trials)} trials: one chart per profile × fault × acks '
                 "(the trial with the median unavailability) and one per finding; the other "
                 "trials' events are listed under each chart.</p>")
    h.append('<div class="charts">')
    for key, grp in cell_groups(trials):
        grp = by_trial_number(grp)
        rows = [r for _, r in grp.iterrows()]
        drawn = [r for r in rows if draw_all or str(r.get("trial_id")) == reps.get(key)
                 or is_durability_loss(r)]
        others = [r for r in rows if not any(r is d for d in drawn)]
        for i, r in enumerate(drawn):
            chart = _timeline_chart(r, timeline)
            if i == len(drawn) - 1 and others:  # the list goes with the cell's last chart
                chart = chart.removesuffix("</figure>") + _other_trials(others) + "</figure>"
            h.append(chart)
    h.append("</div>")
    return "".join(h)


# --------------------------------------------------------------------------- (d) notes


def notes_apply(v: RunView) -> bool:
    """Whether the run's brokers are as old as the notes (no idempotent producer: before
    Kafka 0.11), from the cluster its manifest records; a run that records none is one of
    the lab's first (Kafka 0.9)."""
    cluster = (v.manifest or {}).get("cluster")
    if not isinstance(cluster, dict) or not cluster.get("protocol"):
        return True
    features = kafka_features(str(cluster["protocol"]),
                              parse_version(str(cluster.get("version") or "")))
    return not features.idempotence


def _kafka_0_9_notes(v: RunView) -> str:
    if not notes_apply(v):
        return ""
    items = "".join(f"<li><strong>{esc(title)}.</strong> {esc(text)}</li>"
                    for title, text in KAFKA_0_9_NOTES)
    return f'<h3>Kafka 0.9: what it does and does not promise</h3><ul class="kafka-0-9">{items}</ul>'


def _run_facts(trials: pd.DataFrame) -> str:
    """One line: rate, duration, fault time and down time of the trials (when uniform)."""
    if trials.empty:
        return ""
    bits = []
    for col, label, unit in (("rate_msgs_per_s", "rate", "msg/s"), ("duration_s", "duration", "s"),
                             ("fault_at_s", "fault at", "s"), ("down_s", "down for", "s")):
        if col not in trials.columns:
            continue
        values = sorted({f"{v:g}" for v in pd.to_numeric(trials[col], errors="coerce").dropna()})
        if values:
            bits.append(f"{label} {'/'.join(values)} {unit}")
    return f'<p class="note">Trials: {esc("; ".join(bits))}.</p>' if bits else ""


def _not_aggregated(v: RunView) -> str:
    m = v.manifest or {}
    listed = m.get("trials") or m.get("cells") or []
    n = len(listed) if isinstance(listed, list) else 0
    planned = f" Its manifest lists {n} trial(s)." if n else ""
    return (f'<p class="empty not-aggregated">Run not aggregated yet: there are no fault '
            f"aggregates for this run (<code>aggregates/faults/run_id={esc(v.run_id)}/</code>)."
            f"{esc(planned)} Run <code>spark_jobs/aggregate_faults.py</code> (the DAG's "
            "aggregate_faults task), then rebuild this report.</p>")


# --------------------------------------------------------------------------- the section


def section_durability(v: RunView) -> str:
    """(1) Durability and availability: findings, the profile × fault table, the trials,
    the timelines and the Kafka 0.9 notes."""
    tables = v.faults or FaultTables()
    h = ['<section id="durability"><h2>1. Durability and availability</h2>',
         '<p class="note">Each trial runs a fixed-rate producer and one live consumer on the '
         "3-broker cluster, breaks a broker at a set time, heals it, waits for a full ISR, then "
         "re-reads every partition from offset 0 and judges every intended message.</p>"]
    if not tables.aggregated:
        h.append(_not_aggregated(v))
        h.append(_kafka_0_9_notes(v))
        h.append("</section>")
        return "".join(h)
    if tables.missing:
        h.append(f'<p class="note">Missing tables: {esc(", ".join(tables.missing))} (shown as '
                 "missing below).</p>")
    h.append(_run_facts(tables.trials))
    h.append(_findings(tables.trials))
    h.append(_cells_table(tables, v.emulator))
    h.append(_trials_table(tables))
    h.append(_timelines(tables))
    h.append(_kafka_0_9_notes(v))
    h.append("</section>")
    return "".join(h)


__all__ = [
    "CELL_COLUMNS",
    "EVENTS",
    "KAFKA_0_9_NOTES",
    "TRIAL_COUNT_COLUMNS",
    "loss_explanation",
    "notes_apply",
    "section_durability",
    "timeline_marks",
]
