"""The producer's own view of a partition's leader, from librdkafka's statistics documents."""

from __future__ import annotations

import json

import pytest

from kafkalab.load.client_view import STATS_INTERVAL_MS, LeaderWatch

pytestmark = pytest.mark.unit


def _stats(leader: int | None, topic: str = "t") -> str:
    parts = {} if leader is None else {"0": {"partition": 0, "leader": leader},
                                       "-1": {"partition": -1, "leader": -1}}
    return json.dumps({"name": "rdkafka#producer-1", "topics": {topic: {"partitions": parts}}})


def test_only_changes_of_the_leader_are_kept_in_order() -> None:
    w = LeaderWatch("t")
    for doc in (_stats(None), "not json", _stats(2, topic="other"), _stats(2), _stats(2),
                _stats(-1), _stats(0), _stats(0)):
        w.on_stats(doc)
    assert [leader for _, leader in w.changes] == [2, -1, 0]
    stamps = [ts for ts, _ in w.changes]
    assert stamps == sorted(stamps)
    settings = w.librdkafka_settings()
    assert settings["statistics.interval.ms"] == STATS_INTERVAL_MS
    assert settings["stats_cb"] == w.on_stats
