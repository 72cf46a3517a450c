"""The HTML sections of a fault run's page (broker faults: durability and availability).

1. **Durability and availability** (``#durability``):

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
   * what Kafka 0.9 does and does not promise (:data:`KAFKA09_NOTES`).

2. **Consumer faults** (``#consumer-faults``, only when the run has ``kill-consumer`` /
   ``leave-consumer`` trials): findings (commit after that left records unprocessed, a
   re-read that disagrees), the pauses per fault × commit strategy beside the session
   timeout and heartbeat that explain them, redelivered and lost records per strategy beside
   what the committed offsets predict, a table per trial, the group's lag over time
   (``group_lag``) with the fault, the successor's assignment and the rejoin marked, and
   what Kafka 0.9's group protocol lacks (the trials' ``group_protocol``).

3. **Run state and validation** (``#checks``): as on a load run's page, without drift (2.
   when there is no consumer fault).

Each is a function of a :class:`~kafkalab.report.data.RunView` whose ``faults`` holds the
tables; none reads a file. Missing values show ``—`` with the reason where it is known.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from kafkalab.report.charts import PALETTE, XMark, XYSeries, svg_xy_chart
from kafkalab.report.checks_section import section_checks
from kafkalab.report.data import RunView, emulator_mask
from kafkalab.report.fault_data import (
    COMMIT_ORDER,
    DURABILITY_PROFILE,
    FAULT_ORDER,
    NO_FAULT,
    FaultTables,
    cell_groups,
    consumer_trials,
    count,
    errors_text,
    is_at_least_once_loss,
    is_control_anomaly,
    is_durability_loss,
    is_reread_disagreement,
    missing_reason,
    representative_trials,
)
from kafkalab.report.format import MISSING, emu_banner, emu_span, esc, fmt_num
from kafkalab.report.notes import percentile_cell
from kafkalab.values import as_bool, as_float, is_missing

MAX_ALL_TIMELINES = 12
"""Up to this many trials, every trial's timeline is drawn; beyond, one per profile × fault
× acks (and every finding)."""

CELL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("trials", "count"), ("trials_complete", "count"), ("trials_with_loss", "count"),
    ("acked_lost_sum", "count"), ("acked_lost_median", "num"), ("acked_lost_max", "count"),
    ("duplicates_median", "num"), ("duplicates_max", "count"),
    ("unavailable_ms_median", "num"), ("unavailable_ms_max", "num"),
    ("leader_elected_ms_median", "num"), ("leader_elected_ms_max", "num"),
    ("isr_full_ms_median", "num"), ("isr_full_ms_max", "num"),
    ("consumer_gap_ms_median", "num"), ("consumer_gap_ms_max", "num"),
)
"""The columns of the profile × fault × acks table (``fault_cells``), after its keys."""

TRIAL_COUNT_COLUMNS: tuple[str, ...] = (
    "intended_msgs", "acked_msgs", "failed_msgs", "indeterminate_msgs", "unsent_msgs",
    "read_back_msgs", "acked_lost", "acked_lost_in_broker_logs", "acked_lost_absent_from_logs",
    "failed_but_present", "indeterminate_present", "unseen", "duplicates", "reordered",
    "acks_after_fault",
)
"""Every count of a trial (``fault_trials``), recomputed from its verdicts."""

TRIAL_TIME_COLUMNS: tuple[str, ...] = ("unavailable_ms", "consumer_gap_ms", "leader_elected_ms",
                                       "isr_full_ms", "lag_recovered_ms")
"""The availability figures of a trial (ms)."""

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
    "ZooKeeper poll (every ~100 ms) naming a leader other than the faulted broker; "
    "isr_full_ms: from the fault to the first poll after the heal with every replica in the "
    "ISR; lag_recovered_ms: from the fault until the consumer caught up.")
VERDICT_NOTE = (
    "Verdict: ok; loss (an acknowledged message was not read back); not recovered (no ack "
    "after the heal); failed (the trial itself failed). A loss under the durability profile "
    "is a finding: it is shown as measured, and the trial is not repeated to make it go away.")

KAFKA09_NOTES: tuple[tuple[str, str], ...] = (
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

MARK_COLORS = {"fault": "#b3261e", "heal": "#ff7f0e", "leader": "#9467bd", "isr": "#1e7b34",
               "assigned": "#9467bd", "rejoin": "#1e7b34"}
"""Colours of the timeline's markers."""


# --------------------------------------------------------------------------- helpers


def _text(r: Any, key: str) -> str:
    value = r.get(key)
    return "" if is_missing(value) else str(value)


def _count_cell(r: Any, key: str) -> str:
    n = count(r, key)
    return esc(f"{n:,}") if n is not None else percentile_cell(None, missing_reason(r, key))


def _num_cell(r: Any, key: str) -> str:
    return percentile_cell(r.get(key), missing_reason(r, key))


def _value_cell(r: Any, key: str, kind: str) -> str:
    return _count_cell(r, key) if kind == "count" else _num_cell(r, key)


def _count_text(r: Any, key: str) -> str:
    n = count(r, key)
    return MISSING if n is None else f"{n:,}"


def _ms_text(r: Any, key: str) -> str:
    """``412 ms``, else ``—`` with the reason where it is known (``— (no fault)``)."""
    f = as_float(r.get(key))
    if f is not None:
        return f"{fmt_num(f)} ms"
    reason = missing_reason(r, key)
    return f"{MISSING} ({reason})" if reason else MISSING


def _trial_anchor(trial_id: Any) -> str:
    return "trial-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in str(trial_id))


def _verdict(r: Any) -> str:
    verdict = _text(r, "verdict")
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
    status = _text(r, "status")
    klass = "ok" if status == "complete" else "fail" if status in ("failed", "interrupted") else ""
    title = f' title="{esc(_text(r, "error"))}"' if _text(r, "error") else ""
    return f'<span class="{klass}"{title}>{esc(status or MISSING)}</span>'


def _who(r: Any) -> str:
    """``durability · sigkill-leader · acks all``."""
    return f"{_text(r, 'profile')} · {_text(r, 'fault')} · acks {_text(r, 'acks') or '?'}"


def _trial_emulator(r: Any) -> bool:
    return as_bool(r.get("broker_is_emulator"))


# --------------------------------------------------------------------------- findings


def loss_explanation(r: Any) -> str:
    """Why a durability trial's loss matters and what the figures say about where the
    messages went (plain text)."""
    lost = count(r, "acked_lost") or 0
    in_logs = count(r, "acked_lost_in_broker_logs")
    absent = count(r, "acked_lost_absent_from_logs")
    acks = _text(r, "acks")
    fault = _text(r, "fault")
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
    durability = [r for r in rows if _text(r, "profile") == DURABILITY_PROFILE]
    for r in losses:
        anchor = _trial_anchor(r.get("trial_id"))
        emu = f" {emu_span()}" if _trial_emulator(r) else ""
        h.append(
            f'<div class="finding" data-trial="{esc(r.get("trial_id"))}"><strong>Finding: '
            f"acknowledged messages lost under the durability profile</strong> — "
            f'<a href="#{esc(anchor)}">{esc(r.get("trial_id"))}</a> ({esc(_who(r))}, '
            f"acked_lost {esc(_count_text(r, 'acked_lost'))}){emu}"
            f"<p>{esc(loss_explanation(r))}</p></div>")
    for r in controls:
        h.append(
            f'<div class="finding" data-trial="{esc(r.get("trial_id"))}"><strong>Control '
            "trial not clean</strong> — "
            f'<a href="#{esc(_trial_anchor(r.get("trial_id")))}">{esc(r.get("trial_id"))}</a>: '
            f"acked_lost {esc(_count_text(r, 'acked_lost'))}, duplicates "
            f"{esc(_count_text(r, 'duplicates'))} with no fault injected. Nothing was broken, "
            "so the checker or the setup is suspect; the other trials' counts are to be read "
            "with that in mind.</div>")
    if not losses:
        if durability:
            h.append(f'<p class="ok">No acknowledged message lost under the durability profile '
                     f"({len(durability)} trial(s)).</p>")
        else:
            h.append('<p class="note">No trial of the durability profile in this run.</p>')
    other = [r for r in rows if (count(r, "acked_lost") or 0) > 0
             and _text(r, "profile") != DURABILITY_PROFILE]
    if other:
        cells = sorted({_who(r) for r in other})
        h.append(f'<p class="note">Loss under other profiles ({len(other)} trial(s): '
                 f"{esc('; '.join(cells))}) is what their settings permit (acks below all, or "
                 "unclean leader election): measured, not a broken promise.</p>")
    if not controls and any(_text(r, "fault") == NO_FAULT for r in rows):
        h.append('<p class="ok">The no-fault control lost and duplicated nothing.</p>')
    return "".join(h)


# --------------------------------------------------------------------------- (a) cells


def _cells_table(tables: FaultTables, emu: bool) -> str:
    h = ["<h3>Per profile × fault × acks</h3>"]
    cells = tables.cells
    if cells.empty:
        why = ("not aggregated" if "fault_cells" in tables.missing else "no rows")
        h.append(f'<p class="empty">No profile × fault table ({esc(why)}).</p>')
        return "".join(h)
    head = ('<th class="t">profile</th><th class="t">fault</th><th class="t">acks</th>'
            + "".join(f"<th>{esc(k)}</th>" for k, _ in CELL_COLUMNS))
    rows = []
    for (profile, fault, acks), grp in cell_groups(cells):
        for _, r in grp.iterrows():
            finding = is_durability_loss(r)
            cls = ' class="finding"' if finding else ""
            commit = _text(r, "commit")
            key = f"{profile}|{fault}|{acks}" + (f"|{commit}" if commit else "")
            shown = fault + (f" (commit {commit})" if commit else "")
            rows.append(
                f'<tr{cls} data-cell="{esc(key)}">'
                f'<td class="t">{esc(profile)}</td><td class="t">{esc(shown)}</td>'
                f'<td class="t">{esc(acks or MISSING)}</td>'
                + "".join(f"<td>{_value_cell(r, k, kind)}</td>" for k, kind in CELL_COLUMNS)
                + "</tr>")
    cap = "Trials per profile × fault × acks: median and max over the trials (ms, messages)"
    cap += f" {emu_span()}" if emu else ""
    h.append(f'<div class="scroll"><table class="fault-cells"><caption>{cap}</caption>'
             f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")
    return "".join(h)


# --------------------------------------------------------------------------- (b) trials


def _trials_table(tables: FaultTables) -> str:
    h = ["<h3>Trials</h3>"]
    trials = tables.trials
    if trials.empty:
        why = ("not aggregated" if "fault_trials" in tables.missing else "no rows")
        h.append(f'<p class="empty">No per-trial table ({esc(why)}).</p>')
        return "".join(h)
    emu_any = bool(emulator_mask(trials).any())
    head = ('<th class="t">trial_id</th><th class="t">profile</th><th class="t">fault</th>'
            '<th class="t">acks</th><th>trial</th><th class="t">status</th>'
            '<th class="t">target</th><th class="t">broker</th>'
            + "".join(f"<th>{esc(k)}</th>" for k in TRIAL_COUNT_COLUMNS)
            + '<th class="t">recovered</th>'
            + "".join(f"<th>{esc(k)}</th>" for k in TRIAL_TIME_COLUMNS)
            + '<th class="t">errors_by_type</th><th class="t">verdict</th>')
    rows = []
    failed = []
    for _, grp in cell_groups(trials):
        grp = grp.assign(_n=pd.to_numeric(grp.get("trial"), errors="coerce")
                         if "trial" in grp.columns else 0.0).sort_values(["_n"])
        for _, r in grp.iterrows():
            finding = is_durability_loss(r) or is_control_anomaly(r)
            cls = ' class="finding"' if finding else ""
            broker_id = count(r, "target_broker")
            target = " ".join(x for x in (
                "" if broker_id is None else f"broker {broker_id}",
                _text(r, "target_role")) if x) or MISSING
            version = _text(r, "broker_version")
            broker = esc(version) + (f" {emu_span()}" if _trial_emulator(r) else "")
            recovered = r.get("recovered")
            rec = (MISSING if is_missing(recovered)
                   else '<span class="ok">yes</span>' if as_bool(recovered)
                   else '<span class="fail">no</span>')
            n = count(r, "trial")
            rows.append(
                f'<tr{cls} id="{esc(_trial_anchor(r.get("trial_id")))}" '
                f'data-trial="{esc(r.get("trial_id"))}">'
                f'<td class="t cell-id">{esc(r.get("trial_id"))}</td>'
                f'<td class="t">{esc(_text(r, "profile"))}</td>'
                f'<td class="t">{esc(_text(r, "fault"))}</td>'
                f'<td class="t">{esc(_text(r, "acks") or MISSING)}</td>'
                f"<td>{esc(MISSING if n is None else n)}</td>"
                f'<td class="t">{_status(r)}</td><td class="t">{esc(target)}</td>'
                f'<td class="t">{broker}</td>'
                + "".join(f"<td>{_count_cell(r, k)}</td>" for k in TRIAL_COUNT_COLUMNS)
                + f'<td class="t">{rec}</td>'
                + "".join(f"<td>{_num_cell(r, k)}</td>" for k in TRIAL_TIME_COLUMNS)
                + f'<td class="t">{esc(errors_text(r.get("errors_by_type")) or MISSING)}</td>'
                + f'<td class="t">{_verdict(r)}</td></tr>')
            if _text(r, "error"):
                failed.append(f'<li><span class="cell-id">{esc(r.get("trial_id"))}</span> '
                              f"({esc(_text(r, 'status'))}): {esc(_text(r, 'error'))}</li>")
    cap = "Trials (keys as in <code>kafkalab faults run --json</code>; messages, ms)"
    cap += f" {emu_span()}" if emu_any else ""
    h.append(f'<div class="scroll"><table class="fault-trials"><caption>{cap}</caption>'
             f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")
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
)
"""The markers of a timeline: (kind, ``fault_trials`` column, label)."""

_EVENT_MS = {"leader": "leader_elected_ms", "isr": "isr_full_ms"}


def timeline_marks(r: Any) -> tuple[list[XMark], list[str]]:
    """The vertical markers of a trial's timeline (their labels one row apart, in time
    order), and why a marker is missing (``new leader: leader did not change``)."""
    found: list[tuple[float, str, str]] = []
    absent: list[str] = []
    for kind, col, label in EVENTS:
        x = as_float(r.get(col))
        if x is None:
            if _text(r, "fault") == NO_FAULT:
                continue
            reason = missing_reason(r, _EVENT_MS[kind]) if kind in _EVENT_MS else None
            if kind == "heal":
                reason = "no heal recorded"
            absent.append(f"{label}: {reason or 'not recorded'}")
            continue
        found.append((x, kind, label))
    found.sort()
    marks = [XMark(x, f"{label} {x:.1f} s", color=MARK_COLORS[kind], row=i, kind=kind)
             for i, (x, kind, label) in enumerate(found)]
    return marks, absent


def _timeline_chart(r: Any, timeline: pd.DataFrame) -> str:
    trial_id = str(r.get("trial_id"))
    rows = timeline[timeline["trial_id"].astype(str) == trial_id] if (
        "trial_id" in timeline.columns) else timeline.iloc[0:0]
    emu = _trial_emulator(r)
    finding = is_durability_loss(r)
    anchor = _trial_anchor(trial_id)
    n = count(r, "trial")
    title = f"{_who(r)} · trial {MISSING if n is None else n}"
    marks, absent = timeline_marks(r)
    facts = [f"unavailable {_ms_text(r, 'unavailable_ms')}",
             f"consumer gap {_ms_text(r, 'consumer_gap_ms')}",
             f"new leader after {_ms_text(r, 'leader_elected_ms')}",
             f"ISR full after {_ms_text(r, 'isr_full_ms')}",
             f"acked_lost {_count_text(r, 'acked_lost')}",
             f"verdict {_text(r, 'verdict') or MISSING}"]
    note = f'<p class="note">{esc(" · ".join(facts))}</p>'
    if absent:
        note += f'<p class="note">No marker for {esc("; ".join(absent))}.</p>'
    cls = ' class="finding"' if finding else ""
    attrs = f'{cls} id="timeline-{esc(anchor)}" data-trial="{esc(trial_id)}"'
    caption = esc(title) + (f" {emu_span()}" if emu else "") + (
        ' <span class="flag finding">finding</span>' if finding else "")
    banner = emu_banner() if emu else ""
    if rows.empty:
        return (f"<figure{attrs}><figcaption>{caption}</figcaption>{note}"
                '<p class="empty">No timeline rows for this trial.</p></figure>')
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
    return f"<figure{attrs}><figcaption>{caption}</figcaption>{note}{banner}{svg}</figure>"


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
            f"{esc(_ms_text(r, 'unavailable_ms'))}; acked_lost "
            f"{esc(_count_text(r, 'acked_lost'))}; verdict {esc(_text(r, 'verdict') or MISSING)}"
            "</li>")
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
        why = "not aggregated" if "fault_timeline" in tables.missing else "no rows"
        h.append(f'<p class="empty">No timeline table ({esc(why)}).</p>')
        return "".join(h)
    draw_all = len(trials) <= MAX_ALL_TIMELINES
    reps = representative_trials(trials)
    if not draw_all:
        h.append(f'<p class="note">{len(trials)} trials: one chart per profile × fault × acks '
                 "(the trial with the median unavailability) and one per finding; the other "
                 "trials' events are listed under each chart.</p>")
    h.append('<div class="charts">')
    for key, grp in cell_groups(trials):
        grp = grp.assign(_n=pd.to_numeric(grp.get("trial"), errors="coerce")
                         if "trial" in grp.columns else 0.0).sort_values(["_n"])
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


def _kafka09_notes() -> str:
    items = "".join(f"<li><strong>{esc(title)}.</strong> {esc(text)}</li>"
                    for title, text in KAFKA09_NOTES)
    return f'<h3>Kafka 0.9: what it does and does not promise</h3><ul class="kafka09">{items}</ul>'


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


# --------------------------------------------------------------------------- (2) consumer faults

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
    if _text(r, "status") == "failed":
        return "trial failed"
    if key in ("rebalance_pause_ms", "successor_assigned_ms"):
        if not _text(r, "moved_partitions"):
            return "no moved partition recorded"
        return "a moved partition never resumed" if key == "rebalance_pause_ms" else None
    if key == "rejoin_pause_ms" and is_missing(r.get("rejoin_elapsed_s")):
        return "no rejoin"
    return None


def _consumer_cell(r: Any, key: str, kind: str) -> str:
    if kind == "count":
        n = count(r, key)
        if n is not None:
            return esc(f"{n:,}")
    elif as_float(r.get(key)) is not None:
        return percentile_cell(r.get(key), None)
    return percentile_cell(None, _consumer_reason(r, key))


def _consumer_groups(trials: pd.DataFrame) -> list[tuple[tuple[str, str], pd.DataFrame]]:
    """Consumer trials grouped by (fault, commit), faults and strategies in page order."""
    def rank(value: str, order: tuple[str, ...]) -> tuple[int, str]:
        return (order.index(value) if value in order else len(order), value)

    groups: dict[tuple[str, str], list[Any]] = {}
    for idx, r in trials.iterrows():
        groups.setdefault((_text(r, "fault"), _text(r, "commit")), []).append(idx)
    keys = sorted(groups, key=lambda k: (rank(k[0], FAULT_ORDER), rank(k[1], COMMIT_ORDER)))
    return [(k, trials.loc[groups[k]]) for k in keys]


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
                f"{esc(_count_text(r, 'lost_unprocessed'))} (the offsets predicted "
                f"{esc(_count_text(r, 'expected_lost'))}). Committing after processing may "
                "process a record twice but must never skip one; the validation suite fails "
                "on it.</div>")
        if is_reread_disagreement(r):
            h.append(
                f'<div class="finding" data-trial="{tid}"><strong>The re-read disagrees'
                f"</strong> — {tid}: the group processed records the re-read from offset 0 did "
                "not find (processed_not_in_topic "
                f"{esc(_count_text(r, 'processed_not_in_topic'))}); the check disagrees with "
                "itself, so this trial's counts are suspect.</div>")
    if not h:
        after = [r for _, r in trials.iterrows() if _text(r, "commit") == "after"]
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
    for (fault, commit), grp in _consumer_groups(trials):
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
    return ('<h3>Pauses per fault × commit strategy</h3><div class="scroll">'
            '<table class="consumer-pauses"><caption>Rebalance pauses (ms) beside the session '
            "timeout and heartbeat that explain them</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
            f'<p class="note">{esc(PAUSE_NOTE)}</p>')


def _delivery_table(trials: pd.DataFrame) -> str:
    head = ('<th class="t">commit</th><th class="t">fault</th><th>trials</th>'
            "<th>redelivered sum</th><th>redelivered max</th><th>expected_redelivered sum</th>"
            "<th>lost sum</th><th>lost max</th><th>expected_lost sum</th>"
            '<th class="t">offsets explain</th><th class="t">re-read agrees</th>')
    keyed = sorted(_consumer_groups(trials),
                   key=lambda kv: (COMMIT_ORDER.index(kv[0][1]) if kv[0][1] in COMMIT_ORDER
                                   else len(COMMIT_ORDER), kv[0][1]))
    rows = []
    for (fault, commit), grp in keyed:
        def total(col: str, how: str = "sum", g: pd.DataFrame = grp) -> str:
            v = _stat(g, col, how)
            return esc(f"{int(v):,}") if v is not None else percentile_cell(None, None)

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
    return ('<h3>Redelivered and lost per commit strategy</h3><div class="scroll">'
            '<table class="consumer-deliveries"><caption>Records processed twice or never, '
            "and what the committed offsets predicted</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
            f'<p class="note">{esc(DELIVERY_NOTE)}</p>')


def _consumer_trials_table(trials: pd.DataFrame) -> str:
    head = ('<th class="t">trial_id</th><th class="t">fault</th><th class="t">commit</th>'
            "<th>trial</th>" + "".join(f"<th>{esc(k)}</th>" for k, _ in CONSUMER_TRIAL_COLUMNS)
            + '<th class="t">moved</th>')
    rows = []
    for _, grp in _consumer_groups(trials):
        grp = grp.assign(_n=pd.to_numeric(grp.get("trial"), errors="coerce")
                         if "trial" in grp.columns else 0.0).sort_values(["_n"])
        for _, r in grp.iterrows():
            finding = is_at_least_once_loss(r) or is_reread_disagreement(r)
            cls = ' class="finding"' if finding else ""
            n = count(r, "trial")
            rows.append(
                f'<tr{cls} data-trial="{esc(r.get("trial_id"))}">'
                f'<td class="t cell-id">{esc(r.get("trial_id"))}</td>'
                f'<td class="t">{esc(_text(r, "fault"))}</td>'
                f'<td class="t">{esc(_text(r, "commit"))}</td>'
                f"<td>{esc(MISSING if n is None else n)}</td>"
                + "".join(f"<td>{_consumer_cell(r, k, kind)}</td>"
                          for k, kind in CONSUMER_TRIAL_COLUMNS)
                + f'<td class="t">{esc(_text(r, "moved_partitions") or MISSING)}</td></tr>')
    return ('<h3>Consumer trials</h3><div class="scroll"><table class="consumer-trials">'
            "<caption>Per trial (messages, ms)</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def lag_marks(r: Any) -> list[XMark]:
    """The markers of a consumer trial's lag chart, in time order: the fault, the
    successor's assignment (fault + successor_assigned_ms) and the member's rejoin."""
    fault = as_float(r.get("fault_elapsed_s"))
    assigned_ms = as_float(r.get("successor_assigned_ms"))
    found = [(x, kind, label) for x, kind, label in (
        (fault, "fault", _text(r, "fault") or "fault"),
        (None if fault is None or assigned_ms is None else fault + assigned_ms / 1000,
         "assigned", "successor assigned"),
        (as_float(r.get("rejoin_elapsed_s")), "rejoin", "rejoin")) if x is not None]
    found.sort()
    return [XMark(x, f"{label} {x:.1f} s", color=MARK_COLORS[kind], row=i, kind=kind)
            for i, (x, kind, label) in enumerate(found)]


def _lag_chart(r: Any, group_lag: pd.DataFrame) -> str:
    trial_id = str(r.get("trial_id"))
    rows = (group_lag[group_lag["trial_id"].astype(str) == trial_id]
            if "trial_id" in group_lag.columns else group_lag.iloc[0:0])
    n = count(r, "trial")
    title = (f"{_text(r, 'fault')} · commit {_text(r, 'commit')} · trial "
             f"{MISSING if n is None else n}")
    facts = [f"rebalance pause {_ms_text(r, 'rebalance_pause_ms')}",
             f"redelivered {_count_text(r, 'redelivered')}",
             f"lost {_count_text(r, 'lost_unprocessed')}"]
    attrs = f' class="lag" data-trial="{esc(trial_id)}"'
    caption = esc(title)
    note = f'<p class="note">{esc(" · ".join(facts))}</p>'
    if rows.empty or "lag_msgs" not in rows.columns:
        return (f"<figure{attrs}><figcaption>{caption}</figcaption>{note}"
                '<p class="empty">No group_lag rows for this trial.</p></figure>')
    t = pd.to_numeric(rows.get("elapsed_s"), errors="coerce")
    lag = (rows.assign(_t=t, _lag=pd.to_numeric(rows["lag_msgs"], errors="coerce"))
           .dropna(subset=["_t"]).groupby("_t")["_lag"].sum(min_count=1).sort_index())
    series = [XYSeries("group lag (msgs)", [(float(x), as_float(y)) for x, y in lag.items()],
                       emulator=_trial_emulator(r), color=PALETTE[0])]
    svg = svg_xy_chart(title, series, "s since the trial's start", "msgs", marks=lag_marks(r),
                       note="Σ lag_msgs over the partitions, every 0.5 s")
    return f"<figure{attrs}><figcaption>{caption}</figcaption>{note}{svg}</figure>"


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
    for _, grp in _consumer_groups(trials):
        grp = grp.assign(_n=pd.to_numeric(grp.get("trial"), errors="coerce")
                         if "trial" in grp.columns else 0.0).sort_values(["_n"])
        for i, (_, r) in enumerate(grp.iterrows()):
            if draw_all or i == 0 or is_at_least_once_loss(r):
                h.append(_lag_chart(r, tables.group_lag))
    h.append("</div>")
    return "".join(h)


def _group_protocol_note(trials: pd.DataFrame) -> str:
    notes = sorted({_text(r, "group_protocol") for _, r in trials.iterrows()} - {""})
    items = "".join(f"<li>{esc(n)}.</li>" for n in notes)
    if not items:
        return ""
    return ("<h3>Kafka 0.9's group protocol</h3>"
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
         "fixed-rate stream with a commit strategy; member 0 is SIGKILLed (kill-consumer) or "
         "closes cleanly (leave-consumer) at the fault, and may come back. Every message is "
         "judged against a full re-read of the topic.</p>",
         _consumer_findings(trials), _pause_table(trials), _delivery_table(trials),
         _consumer_trials_table(trials), _lag_charts(tables, trials),
         _group_protocol_note(trials), "</section>"]
    return "".join(h)


# --------------------------------------------------------------------------- page body


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
        h.append(_kafka09_notes())
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
    h.append(_kafka09_notes())
    h.append("</section>")
    return "".join(h)


def fault_sections(v: RunView, page_dir: Path) -> str:
    """The sections of a fault run's page (the caller adds the banners)."""
    consumer = section_consumer(v, number=2)
    return (section_durability(v) + consumer
            + section_checks(v, page_dir, number=3 if consumer else 2, drift=False))


__all__ = [
    "CELL_COLUMNS",
    "KAFKA09_NOTES",
    "MAX_ALL_TIMELINES",
    "TRIAL_COUNT_COLUMNS",
    "TRIAL_TIME_COLUMNS",
    "fault_sections",
    "lag_marks",
    "loss_explanation",
    "section_consumer",
    "section_durability",
    "timeline_marks",
]
