"""What the Kafka client scenarios share: first-message probes, then a closed loop.

:class:`KafkaClientScenario.run` is the skeleton (probes in both consumer modes, then the
measured loop); ``confluent.py`` and ``kafka_python.py`` fill in how their client produces,
consumes and closes.

**First-message delay**, defined once: a probe record is produced and acknowledged first;
then the clock starts, a fresh consumer is created and given the record's partition
(``subscribe``: by joining a new consumer group; ``assign``: by hand, positioned at the
record) and ``first_record_delay_ms`` is the time until that record is in hand. It measures
consumer cold start → first *existing* record. ``assign_delay_ms`` is the group join (start →
partitions assigned) and exists for ``subscribe`` probes only (in assign mode it would be the
local ``assign()`` call). Probes alternate the mode order (probe 0: subscribe first, probe
1: assign first, ...), so neither mode always pays for the other's warm-up. Before each probe
the cluster is asked whether the group coordinator's ``__consumer_offsets`` topic is ready;
a probe that found it missing (or leaderless) and left it there is ``cold_start``: it paid
for creating it (the statistic reports it apart). When the cluster never lists the topic
(an emulator), ``cold_start`` is null (unknown).
"""

from __future__ import annotations

import uuid
from collections import deque
from typing import Any

from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.config.mapping import check_profile, settings_view
from kafkalab.errors import ClusterError
from kafkalab.progress import Progress
from kafkalab.samples import Sample
from kafkalab.scenarios.base import (
    CatalogScenario,
    Cell,
    Tracker,
    heap_setting,
    ms_between,
    now_ns,
    steady_heap,
)

FIRST_MESSAGE_MODES: tuple[str, ...] = ("subscribe", "assign")
"""How a first-message probe's consumer gets its partition: a consumer group, or by hand."""

PROBE_SEQ_BASE = 1_000_000
"""Probe messages carry ``PROBE_SEQ_BASE + probe`` as their seq (never a measured seq)."""

ASSIGN_TIMEOUT_S = 60.0
"""How long the measuring consumer may wait for its partitions."""

OFFSETS_TOPIC = "__consumer_offsets"
"""The group coordinator's topic; Kafka creates it when a group first needs it."""

METADATA_TIMEOUT_S = 10.0
"""How long a metadata request (the cold-start check) may take."""


Acks = deque[tuple[int, int, str | None]]
"""Delivery reports waiting for the tracker, ``(seq, ack_ts_ns, error or None)``: a client's
callback thread only appends (the ack time read first); the loop hands them over."""


def hand_over(acks: Acks, tracker: Tracker) -> None:
    """Give the tracker every delivery report that arrived (call it outside any timed
    interval: after a receipt, or at the end)."""
    while acks:
        seq, ack_ns, error = acks.popleft()
        tracker.on_ack(seq, ack_ns, error)


def probe_modes(probe: int) -> tuple[str, ...]:
    """The order of the modes in probe ``probe``: subscribe first on even probes, assign
    first on odd ones."""
    return FIRST_MESSAGE_MODES if probe % 2 == 0 else tuple(reversed(FIRST_MESSAGE_MODES))


def offsets_topic_state(admin: Any) -> str:
    """``ready`` (``__consumer_offsets`` exists and every partition has a leader),
    ``partial`` (exists, some partition has none yet), ``missing`` or ``unknown`` (the
    metadata request failed)."""
    try:
        meta = admin.list_topics(timeout=METADATA_TIMEOUT_S)
    except Exception:  # a metadata failure must not fail the probe: the state is unknown
        return "unknown"
    topic = meta.topics.get(OFFSETS_TOPIC)
    if topic is None or topic.error is not None or not topic.partitions:
        return "missing"
    if all(p.leader >= 0 and p.error is None for p in topic.partitions.values()):
        return "ready"
    return "partial"


def cold_start(before: str, after: str) -> bool | None:
    """Whether a probe paid for creating ``__consumer_offsets``: it was not ready before the
    probe and exists after it. None when that cannot be told (the metadata request failed, or
    the cluster never lists the topic)."""
    if before == "ready":
        return False
    if "unknown" in (before, after) or after == "missing":
        return None
    return True


class KafkaClientScenario(CatalogScenario):
    """A Kafka client library measured by the harness (producer and consumer in-process)."""

    def run(self, cell: Cell, progress: Progress) -> None:
        """First-message probes (``first_message_probes`` × both modes), then the closed
        loop; every row goes to ``cell.sink``.

        Raises:
            ConfigError: the profile sets what this client or the cluster cannot take
                (:func:`kafkalab.config.mapping.check_profile`; a run refuses it earlier, this
                guards a cell measured on its own).
        """
        check_profile(cell.profile, [self.name], cell.descriptor)
        steady_heap()
        base = self._base(cell)
        producer = self._open_producer(cell, base)
        try:
            self._probes(cell, producer, base, progress)
            self._closed_loop(cell, producer, base, progress)
        finally:
            self._close_producer(producer)

    def client_settings(self, cell: Cell) -> dict[str, str]:
        """The producer's and the measuring consumer's effective configuration
        (``producer.<key>``, ``consumer.<key>``; no secrets) plus ``harness.loop_mode``,
        ``harness.consumer_mode`` and ``harness.heap``."""
        base = self._base(cell, secrets=False)
        secret = cell.descriptor.secret_env if cell.descriptor is not None else {}
        out = settings_view(self._configs(cell, base), secret)
        out["harness.loop_mode"] = str(self.loop_mode)
        out["harness.consumer_mode"] = cell.workload.consumer_mode
        out["harness.heap"] = heap_setting()
        return out

    # -- what each client fills in ------------------------------------------------------

    def _base(self, cell: Cell, secrets: bool = True) -> dict[str, Any]:
        """The client's connection settings from the cell's cluster descriptor (without the
        ``secret_env`` values when ``secrets`` is false)."""
        raise NotImplementedError

    def _configs(self, cell: Cell, base: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """``{"producer": ..., "consumer": ...}``: the measuring clients' configuration."""
        raise NotImplementedError

    def _open_producer(self, cell: Cell, base: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _close_producer(self, producer: Any) -> None:
        raise NotImplementedError

    def _first_message(self, cell: Cell, producer: Any, base: dict[str, Any], mode: str,
                       probe: int) -> Sample:
        raise NotImplementedError

    def _closed_loop(self, cell: Cell, producer: Any, base: dict[str, Any],
                     progress: Progress) -> None:
        raise NotImplementedError

    # -- shared pieces ---------------------------------------------------------------------

    def _probes(self, cell: Cell, producer: Any, base: dict[str, Any],
                progress: Progress) -> None:
        """Every first-message probe, in alternating mode order, each row written as soon as
        it is measured."""
        from kafkalab.cluster.admin import admin_client

        probes = cell.workload.first_message_probes
        if probes == 0 or cell.descriptor is None:
            return
        admin = admin_client(cell.descriptor)
        for probe in range(probes):
            for mode in probe_modes(probe):
                before = offsets_topic_state(admin)
                row = self._first_message(cell, producer, base, mode, probe)
                row.cold_start = cold_start(before, "ready" if before == "ready"
                                            else offsets_topic_state(admin))
                cell.sink.write(row)
        progress(f"{probes} first-message probe(s) in each mode")

    @staticmethod
    def descriptor(cell: Cell, secrets: bool = True) -> ClusterDescriptor:
        """The cell's cluster descriptor; with ``secrets=False`` a copy without
        ``secret_env`` (so building a configuration from it reads no secret).

        Raises:
            ClusterError: the cell has no cluster (a Kafka scenario needs one).
        """
        d = cell.descriptor
        if d is None:
            raise ClusterError("no cluster descriptor: a Kafka scenario needs a cluster")
        return d if secrets else d.model_copy(update={"secret_env": {}})

    @staticmethod
    def probe_group_id(mode: str) -> str | None:
        """A fresh consumer group for a ``subscribe`` probe (none for ``assign``)."""
        return f"kafkalab-probe-{uuid.uuid4().hex[:12]}" if mode == "subscribe" else None

    @staticmethod
    def measuring_group_id(cell: Cell) -> str | None:
        """The measuring consumer's group in ``subscribe`` mode (none for ``assign``)."""
        if cell.workload.consumer_mode != "subscribe":
            return None
        return f"kafkalab-{cell.run_id}-{uuid.uuid4().hex[:8]}"

    @staticmethod
    def settings_group_id(cell: Cell) -> str | None:
        """How :meth:`client_settings` shows the measuring consumer's group (its name is
        random per cell)."""
        if cell.workload.consumer_mode != "subscribe":
            return None
        return f"kafkalab-{cell.run_id}-<random>"

    @staticmethod
    def first_message_sample(probe: int, mode: str, partition: int, offset: int, t0_ns: int,
                             assigned_ns: list[int], first_ns: int | None,
                             wall_ts_ns: int | None = None) -> Sample:
        """The row of one probe: consumer start → assignment (``subscribe`` only) → first
        record. ``wall_ts_ns``: the wall clock when the probe's consumer was started."""
        return Sample(
            sample_kind="first_message", seq=probe, status="ok" if first_ns else "lost",
            partition=partition, offset=offset, consumer_mode=mode,
            assign_delay_ms=(ms_between(t0_ns, assigned_ns[0])
                             if assigned_ns and mode == "subscribe" else None),
            first_record_delay_ms=ms_between(t0_ns, first_ns) if first_ns else None,
            wall_ts_ns=wall_ts_ns,
        )

    @staticmethod
    def progress_due(seq: int, total: int) -> bool:
        """True at every quarter of a closed loop and at its last message."""
        return (seq + 1) % max(1, total // 4) == 0 or seq + 1 == total

    @staticmethod
    def grace_deadline_ns(cell: Cell) -> int:
        """When the loop stops waiting for late arrivals and duplicates (at most 2 s)."""
        return now_ns() + int(min(2.0, cell.workload.message_timeout_s) * 1e9)


__all__ = ["ASSIGN_TIMEOUT_S", "FIRST_MESSAGE_MODES", "OFFSETS_TOPIC", "PROBE_SEQ_BASE",
           "Acks", "KafkaClientScenario", "cold_start", "hand_over", "offsets_topic_state",
           "probe_modes"]
