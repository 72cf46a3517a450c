"""One consumer-fault trial (``kill-consumer``, ``leave-consumer``, ``cut-consumer``), called by
:func:`kafkalab.faults.engine.run_fault_trial` once the topic has its full ISR:

1. the group's members start and settle (:func:`kafkalab.faults.group.start_group`); the
   :class:`~kafkalab.faults.group.OffsetMonitor` samples the group's committed offsets;
2. the load engine runs the fixed-rate producer (and its one live consumer, outside the
   group) while the :class:`~kafkalab.faults.group.GroupInjector` kills member 0, makes it
   leave or cuts its links (at ``fault_at_s``, less a fraction of a heartbeat interval that
   differs per trial: :func:`~kafkalab.faults.group.fault_phase_offset_s`), and optionally
   brings it back (a cut member comes back at the heal);
3. after the producer stops, the group may drain until it has committed every partition's log
   end (up to the session timeout + 30 s), then every member leaves cleanly;
4. the topic is re-read from offset 0 (the broker-side checker, ``verdicts.parquet``) and every
   message is judged against what the group processed (``deliveries.parquet``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.cluster.flavors import flavor_of
from kafkalab.cluster.links import Links, links_for
from kafkalab.config.models import Profile
from kafkalab.errors import RunError
from kafkalab.faults import files, group
from kafkalab.faults.checker import ReRead
from kafkalab.faults.deliveries import deliveries, group_summary
from kafkalab.faults.spec import FaultTrialSpec
from kafkalab.load import files as load_files
from kafkalab.load.cell import run_load_cell
from kafkalab.progress import Progress

__all__ = ["DRAIN_MARGIN_S", "check_rebalance", "group_protocol_note", "run_group_trial"]

DRAIN_MARGIN_S = 30.0
"""After the producer stops, the group may take the session timeout plus this long to commit
the log end (a member killed late is noticed only after its session timeout)."""

STATIC_MEMBERSHIP_SINCE = (2, 3)
"""Static group membership (KIP-345) came with Kafka 2.3, cooperative rebalancing (KIP-429)
with 2.4: a broker before them rebalances eagerly."""

REBALANCE_SINCE: dict[str, tuple[int, int]] = {"cooperative": (2, 4), "consumer": (4, 0)}
"""The first Kafka release of each rebalance protocol but eager (KIP-429; KIP-848's GA)."""


def check_rebalance(rebalance: str | None, version: tuple[int, ...] | None) -> None:
    """Refuse a rebalance protocol the trial's broker does not have (of unknown version: try).

    Raises:
        RunError: naming the protocol and the release it came with.
    """
    since = REBALANCE_SINCE.get(rebalance or "eager")
    if since is not None and version is not None and version < since:
        raise RunError(f"rebalance={rebalance}: Kafka {'.'.join(str(v) for v in version[:2])} "
                       f"has no such group protocol (it came with Kafka {since[0]}.{since[1]})")


def group_protocol_note(version: tuple[int, ...] | None) -> str | None:
    """What the trial's group protocol lacks on an old broker (eager rebalancing only), for
    the trial's summary; None on a broker of Kafka 2.3 or later, or of unknown version."""
    if version is None or version >= STATIC_MEMBERSHIP_SINCE:
        return None
    return (f"Kafka {'.'.join(str(v) for v in version[:2])}'s group protocol: eager "
            "rebalancing (every member gives up every partition on each rebalance), no static "
            "membership, no cooperative rebalancing (those came with Kafka 2.3 and 2.4)")


def _member_links(spec: FaultTrialSpec, descriptor_path: Path) -> Links | None:
    """The fault cluster's links for ``cut-consumer`` (None for another fault).

    Raises:
        RunError: the cluster has none (it was not started with ``--links``).
    """
    if spec.fault != "cut-consumer":
        return None
    links = links_for(descriptor_path)
    if links is None:
        raise RunError("cut-consumer needs the fault cluster started with degradable links "
                       "(kafkalab faults starts it so; a cluster of your own: cluster up --links)")
    return links


def run_group_trial(lab_root: Path, run_id: str, d: ClusterDescriptor, descriptor_path: Path,
                    tdir: Path, topic: str, spec: FaultTrialSpec, prof: Profile,
                    doc: dict[str, Any], summary: dict[str, Any], progress: Progress,
                    check: Callable[[dict[str, Any]], ReRead]) -> None:
    """Run the trial, fill ``doc`` (events, actions, group settings) and ``summary``.

    Raises:
        RunError: the group could not be started or the injection failed (files kept).
    """
    version = flavor_of(d).features(d).version
    check_rebalance(spec.rebalance, version)
    session_ms = spec.effective_session_timeout_ms(prof.consumer.session_timeout_ms)
    heartbeat_ms = spec.effective_heartbeat_ms(session_ms)
    fault_offset_s = group.fault_phase_offset_s(spec.trial, heartbeat_ms / 1000,
                                                spec.fault_at_s - spec.warmup_s)
    settings = {"commit": spec.effective_commit, "client": spec.client,
                "consumers": spec.consumers, "session_timeout_ms": session_ms,
                "heartbeat_interval_ms": heartbeat_ms,
                "auto_commit_interval_ms": spec.auto_commit_interval_ms if spec.effective_commit == "auto" else None,
                "batch_msgs": spec.batch_msgs, "batch_wait_ms": spec.batch_wait_ms,
                "rejoin_after_s": spec.rejoin_after_s, "partitions": spec.partitions,
                "static_membership": bool(spec.static_membership),
                "rebalance": spec.rebalance, "fault_offset_ms": round(fault_offset_s * 1000, 3),
                "group_protocol": group_protocol_note(version)}
    summary.update(settings)
    doc["group"] = dict(settings)
    gdir = group.group_dir(tdir)
    links = _member_links(spec, descriptor_path)
    if links is not None:
        links.heal()  # whatever an earlier, interrupted trial left on the links
        settings["cut_s"] = spec.cut_s(session_ms)
        # the cut's length is the fault's down time (the default one is the session's)
        summary["cut_s"] = summary["down_s"] = doc["group"]["cut_s"] = settings["cut_s"]
    plan = group.member_plan(spec, d, descriptor_path, topic, gdir, session_ms, heartbeat_ms, prof,
                             links.layout.solo_bootstrap() if links is not None else None)
    doc["group"]["group_id"] = plan["group_id"]
    if spec.rebalance == "consumer":
        doc["group"]["group_configs"] = group.configure_consumer_group(
            d, plan["group_id"], session_ms, heartbeat_ms)
    members = group.start_group(spec, plan, tdir, progress)
    monitor = group.OffsetMonitor(d, topic, plan["group_id"], spec.partitions).start()
    injector = group.GroupInjector(spec, members, progress, fault_offset_s=fault_offset_s,
                                   links=links, cut_s=float(settings.get("cut_s") or 0.0))
    lag_rows: list[dict[str, Any]] = []
    try:
        try:
            run_load_cell(lab_root, run_id, spec.load_cell(), descriptor_path, progress,
                          provision=False, topic=topic, cell_path=tdir, on_start=injector.arm)
        except RunError as exc:
            doc["error"] = str(exc)  # the live consumer's trouble; the checker still judges
        injector.join(spec.duration_s + 60)
        ends = {int(r["partition"]): int(r["log_end_offset"] or 0) for r in monitor.sample()}
        timeout_s = session_ms / 1000 + DRAIN_MARGIN_S
        progress(f"  the group drains to the log end (up to {timeout_s:.0f} s), then leaves")
        drained = group.drain_and_stop(members, monitor, ends, timeout_s, progress)
        lag_rows = monitor.stop()
        events: dict[str, Any] = {**injector.events, "drained": drained["caught_up"],
                                  "stopped_ts_ns": drained["stopped_ts_ns"],
                                  "leader_elected_ts_ns": None, "isr_full_ts_ns": None}
        doc["events"], doc["actions"] = events, injector.actions
        if injector.error:
            raise RunError(f"{summary['trial_id']}: fault injection failed: {injector.error}")
    finally:
        # an early end (Ctrl-C, a cluster error): a cut member's links are healed by the
        # injector's own thread once it stops waiting, before anything else runs
        injector.abort()
        injector.join(30)
        members.stop(10)
        if not lag_rows:
            lag_rows = monitor.stop()
        got = group.collect(tdir, injector.events.get("t0_ns"), lag_rows)
    progress("  re-reading the topic from offset 0")
    read = check(events)
    # the producer and the live consumer timed from a heal are not what a consumer fault
    # breaks (a cut member's own return is rejoin_pause_ms)
    summary["heal_to_first_ack_ms"] = summary["heal_to_first_receipt_ms"] = None
    cell = spec.load_cell()
    n = cell.intended_messages
    cols = deliveries(n, np.arange(n) < cell.warmup_messages, read, got["processed"])
    load_files.write_table(files.deliveries_path(tdir), cols, files.DELIVERIES_SCHEMA)
    gs = group_summary(read=read, processed=got["processed"], events=got["events"],
                       fault_ts_ns=events.get("fault_ts_ns"), rejoin_ts_ns=events.get("rejoin_ts_ns"),
                       fault=spec.fault, lag_rows=lag_rows,
                       keeps_position=spec.client == "kafka-python",
                       commits_logged=not (spec.client == "kafka-python"
                                           and spec.effective_commit == "auto"))
    events["victim_end_ts_ns"] = gs.pop("victim_end_ts_ns")  # an event time, not a figure
    gs["drained"] = drained["caught_up"]
    gs["deliveries"] = {k: int((cols["delivery"] == k).sum()) for k in files.DELIVERIES}
    summary.update(gs)
