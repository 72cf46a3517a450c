"""TopicSpec: what a profile asks of a topic (validated before anything is sent)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kafkalab.topics import TopicSpec


def test_config_values_become_kafka_strings() -> None:
    spec = TopicSpec(name="lat.x", configs={"unclean.leader.election.enable": False, "x": 3})  # type: ignore[dict-item]
    assert spec.configs == {"unclean.leader.election.enable": "false", "x": "3"}


@pytest.mark.parametrize("name", ["", ".", "..", "has space", "a/b", "x" * 250])
def test_invalid_topic_names_are_refused(name: str) -> None:
    with pytest.raises(ValidationError, match=r"is not a valid Kafka topic name"):
        TopicSpec(name=name)


def test_defaults_and_bounds() -> None:
    spec = TopicSpec(name="lat_1-a.b")
    assert (spec.partitions, spec.replication_factor, spec.configs) == (1, 1, {})
    with pytest.raises(ValidationError):
        TopicSpec(name="t", partitions=0)
    with pytest.raises(ValidationError):
        TopicSpec(name="t", unknown=1)  # type: ignore[call-arg]
