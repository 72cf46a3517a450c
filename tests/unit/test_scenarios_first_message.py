"""First-message probes: the modes alternate their order, the probe that had to wait for the
group coordinator's ``__consumer_offsets`` is marked cold, assign mode has no assign delay,
and every probe row goes to the cell's sink as it is measured."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import kafkalab.cluster.admin
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.config.models import Profile, Workload
from kafkalab.samples import ListSink, Sample
from kafkalab.scenarios.base import Cell
from kafkalab.scenarios.kafka_client import (
    OFFSETS_TOPIC,
    KafkaClientScenario,
    cold_start,
    offsets_topic_state,
    probe_modes,
)


def _meta(partitions: dict[int, int] | None) -> Any:
    """Metadata as confluent-kafka's list_topics returns it: partition id -> leader."""
    topics = {"klab-t": SimpleNamespace(error=None, partitions={0: SimpleNamespace(leader=0, error=None)})}
    if partitions is not None:
        topics[OFFSETS_TOPIC] = SimpleNamespace(error=None, partitions={
            p: SimpleNamespace(leader=leader, error=None) for p, leader in partitions.items()})
    return SimpleNamespace(topics=topics)


class _Admin:
    """Answers list_topics from a script of states; the last one repeats."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)

    def list_topics(self, timeout: float) -> Any:
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_probe_modes_alternate() -> None:
    assert [probe_modes(p) for p in range(3)] == [
        ("subscribe", "assign"), ("assign", "subscribe"), ("subscribe", "assign")]


def test_offsets_topic_state() -> None:
    assert offsets_topic_state(_Admin(_meta(None))) == "missing"
    assert offsets_topic_state(_Admin(_meta({0: 0, 1: 0}))) == "ready"
    assert offsets_topic_state(_Admin(_meta({0: 0, 1: -1}))) == "partial"
    assert offsets_topic_state(_Admin(TimeoutError("no answer"))) == "unknown"


def test_cold_start() -> None:
    assert cold_start("ready", "ready") is False
    assert cold_start("missing", "ready") is True and cold_start("partial", "ready") is True
    assert cold_start("missing", "partial") is True
    assert cold_start("missing", "missing") is None  # a cluster that never lists it (emulator)
    assert cold_start("unknown", "ready") is None and cold_start("missing", "unknown") is None


class _FakeClient(KafkaClientScenario, scenario="confluent-kafka"):
    """The probe skeleton with a consumer that only records the order it was asked in."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, str]] = []

    def _first_message(self, cell: Cell, producer: Any, base: dict[str, Any], mode: str,
                       probe: int) -> Sample:
        self.asked.append((probe, mode))
        return self.first_message_sample(probe, mode, 0, 10 + probe, 1_000, [1_500], 3_000, 77)


def test_probes_alternate_mark_the_cold_one_and_stream_their_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # fresh cluster: the first probe finds no offsets topic and leaves it there
    admin = _Admin(_meta(None), _meta({0: 0}), _meta({0: 0}))
    monkeypatch.setattr(kafkalab.cluster.admin, "admin_client", lambda d, *a, **k: admin)
    d = ClusterDescriptor(flavor="kafka09", protocol="legacy-0.9", bootstrap_servers="h:1",
                          broker_count=1)
    cell = Cell(run_id="r", workload=Workload(name="w", first_message_probes=2),
                profile=Profile(name="p", goal="latency"), payload="1kb", body=b"x", topic="t",
                descriptor=d, work_dir=tmp_path)
    scenario = _FakeClient()
    progress: list[str] = []
    scenario._probes(cell, None, {}, progress.append)
    assert scenario.asked == [(0, "subscribe"), (0, "assign"), (1, "assign"), (1, "subscribe")]
    assert isinstance(cell.sink, ListSink)
    rows = cell.sink.rows
    assert [(r.seq, r.consumer_mode, r.cold_start) for r in rows] == [
        (0, "subscribe", True), (0, "assign", False), (1, "assign", False), (1, "subscribe", False)]
    assert [r.assign_delay_ms for r in rows] == [500 / 1e6, None, None, 500 / 1e6]
    assert all(r.first_record_delay_ms == 2_000 / 1e6 and r.loop_mode is None for r in rows)
    assert all(r.sample_kind == "first_message" and r.wall_ts_ns == 77 for r in rows)
    assert progress == ["2 first-message probe(s) in each mode"]


def test_a_lost_probe_is_a_row() -> None:
    row = KafkaClientScenario.first_message_sample(0, "subscribe", 0, 5, 1_000, [], None)
    assert row.status == "lost" and row.first_record_delay_ms is None and row.assign_delay_ms is None
