"""Where a series stands after a run: in alert, recovered, or clear (pure).

A drift opens an **alert**. The series stays in alert until ``recovery_runs`` consecutive
*good* runs judge it ``ok`` or ``improved`` (a good run: complete, validated, no stale
outputs; see :mod:`kafkalab.drift.detect`), or until a person accepts the new level
(:mod:`kafkalab.drift.acceptances`). Another drift during the alert starts the count again;
``undefined`` and ``insufficient_history`` verdicts, and ok verdicts of runs that are not
good, neither count nor break it.

The standing is recomputed from the stored verdicts of every earlier run each time a run is
judged, so a validation that arrives late, or a re-judged run, is taken into account the
next time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafkalab.drift.records import AlertStatus

GOOD_VERDICTS: frozenset[str] = frozenset({"ok", "improved"})
"""Verdicts that count towards a recovery (when the run is a good run)."""


@dataclass(frozen=True)
class Step:
    """One judged run of a series, in run order."""

    run_id: str
    position: int
    """The run's index in :func:`kafkalab.drift.history.run_order`."""
    verdict: str
    good_run: bool
    """The run is complete, validated and has no stale outputs."""


@dataclass(frozen=True)
class Standing:
    """The alert standing of a series after its last step."""

    alert_status: AlertStatus
    good_runs: int
    """Consecutive good ok/improved runs since the last drift of the current alert (the
    recovery count; ``recovery_runs`` on the run that recovers, 0 when clear)."""
    alert_since_run_id: str | None
    """The first drifting run of the current alert (None when not in alert)."""


def standing(steps: Sequence[Step], recovery_runs: int,
             accepted: tuple[int, int] | None = None) -> Standing:
    """Walk a series' steps (oldest first) and return where it stands after the last one.

    Args:
        steps: the judged runs of the series, oldest first; the last is the run being judged.
        recovery_runs: consecutive good ok/improved runs that end an alert (>= 1).
        accepted: positions ``(from, through)`` of an accepted level: steps in that range
            clear any alert and count as clear (their drifts were the new level).

    Returns:
        The :class:`Standing` after the last step (``clear`` when there are no steps).
    """
    in_alert = False
    streak = 0
    since: str | None = None
    status: AlertStatus = "clear"
    for s in steps:
        if not in_alert:
            streak = 0
        if accepted is not None and accepted[0] <= s.position <= accepted[1]:
            in_alert, streak, since, status = False, 0, None, "clear"
            continue
        if s.verdict == "drift":
            if not in_alert:
                since = s.run_id
            in_alert, streak, status = True, 0, "drifting"
        elif in_alert and s.verdict in GOOD_VERDICTS and s.good_run:
            streak += 1
            if streak >= recovery_runs:
                in_alert, since, status = False, None, "recovered"
            else:
                status = "alerting"
        else:
            status = "alerting" if in_alert else "clear"
    return Standing(alert_status=status, good_runs=streak if status != "clear" else 0,
                    alert_since_run_id=since)


__all__ = ["GOOD_VERDICTS", "Standing", "Step", "standing"]
