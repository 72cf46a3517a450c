"""What the two Kafka client scenarios share: first-message probes, then a closed loop.

:class:`KafkaClientScenario.run` is the skeleton (probes in both consumer modes, then the
measured loop); ``confluent.py`` and ``kafka_python.py`` fill in how their client produces,
consumes and closes.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafkalab.progress import Progress
from kafkalab.samples import Sample
from kafkalab.scenarios.base import CatalogScenario, Cell, ms_between, now_ns

FIRST_MESSAGE_MODES: tuple[str, ...] = ("subscribe", "assign")
"""How a first-message probe's consumer gets its partition: a consumer group, or by hand."""

PROBE_SEQ_BASE = 1_000_000
"""Probe messages carry ``PROBE_SEQ_BASE + probe`` as their seq (never a measured seq)."""

ASSIGN_TIMEOUT_S = 60.0
"""How long the measuring consumer may wait for its partitions."""


class KafkaClientScenario(CatalogScenario):
    """A Kafka client library measured by the harness (producer and consumer in-process)."""

    def run(self, cell: Cell, progress: Progress) -> list[Sample]:
        """First-message probes (``first_message_probes`` × both modes), then the closed loop."""
        base = self._base(cell)
        producer = self._open_producer(cell, base)
        samples: list[Sample] = []
        try:
            for probe in range(cell.workload.first_message_probes):
                for mode in FIRST_MESSAGE_MODES:
                    samples.append(self._first_message(cell, producer, base, mode, probe))
            samples.extend(self._closed_loop(cell, producer, base, progress))
        finally:
            self._close_producer(producer)
        return samples

    # -- what each client fills in ------------------------------------------------------

    def _base(self, cell: Cell) -> dict[str, Any]:
        """The client's connection settings from the cell's cluster descriptor."""
        raise NotImplementedError

    def _open_producer(self, cell: Cell, base: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _close_producer(self, producer: Any) -> None:
        raise NotImplementedError

    def _first_message(self, cell: Cell, producer: Any, base: dict[str, Any], mode: str,
                       probe: int) -> Sample:
        raise NotImplementedError

    def _closed_loop(self, cell: Cell, producer: Any, base: dict[str, Any],
                     progress: Progress) -> list[Sample]:
        raise NotImplementedError

    # -- shared pieces ---------------------------------------------------------------------

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
    def first_message_sample(probe: int, mode: str, partition: int, offset: int, t0_ns: int,
                             assigned_ns: list[int], first_ns: int | None) -> Sample:
        """The row of one probe: consumer start → assignment → first record."""
        return Sample(
            sample_kind="first_message", seq=probe, status="ok" if first_ns else "lost",
            partition=partition, offset=offset, consumer_mode=mode,
            assign_delay_ms=ms_between(t0_ns, assigned_ns[0]) if assigned_ns else None,
            first_record_delay_ms=ms_between(t0_ns, first_ns) if first_ns else None,
        )

    @staticmethod
    def progress_due(seq: int, total: int) -> bool:
        """True at every quarter of a closed loop and at its last message."""
        return (seq + 1) % max(1, total // 4) == 0 or seq + 1 == total

    @staticmethod
    def grace_deadline_ns(cell: Cell) -> int:
        """When the loop stops waiting for late arrivals and duplicates (at most 2 s)."""
        return now_ns() + int(min(2.0, cell.workload.message_timeout_s) * 1e9)


__all__ = ["ASSIGN_TIMEOUT_S", "FIRST_MESSAGE_MODES", "PROBE_SEQ_BASE", "KafkaClientScenario"]
