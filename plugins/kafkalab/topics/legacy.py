"""Topic admin on Kafka 0.9 (``legacy-0.9`` protocol): Kafka's TopicCommand via ZooKeeper.

Configs read here are the topic's *overrides* (what ZooKeeper holds), not its effective
values: 0.9 has no DescribeConfigs API.
"""

from __future__ import annotations

from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.topics.model import ExistingTopic, TopicSpec
from kafkalab.topics.topic_command import (
    TopicDescription,
    literal_topic_regex,
    parse_describe,
    run_topic_command,
)

__all__ = ["LegacyTopics"]


class LegacyTopics:
    """A :class:`~kafkalab.topics.model.TopicBackend` for Kafka 0.9.

    Every topic is described once (one JVM start), on the first question about any topic;
    nothing runs in the constructor.
    """

    def __init__(self, descriptor: ClusterDescriptor, timeout_s: float) -> None:
        self._descriptor = descriptor
        self._timeout_s = timeout_s
        self._described: dict[str, TopicDescription] | None = None

    def _run(self, args: list[str]) -> str:
        return run_topic_command(self._descriptor, args, self._timeout_s)

    def describe_all(self) -> dict[str, TopicDescription]:
        """Every topic of the cluster as TopicCommand describes it (read once)."""
        if self._described is None:
            self._described = parse_describe(self._run(["--describe"]))
        return self._described

    def overrides(self, name: str) -> dict[str, str]:
        """The topic's config overrides ({} when it has none or does not exist)."""
        found = self.describe_all().get(name)
        return dict(found.configs) if found else {}

    def current(self, name: str) -> ExistingTopic | None:
        found = self.describe_all().get(name)
        return ExistingTopic(found.partitions, found.replication_factor) if found else None

    def create(self, spec: TopicSpec) -> bool:
        args = [
            "--create",
            "--topic",
            spec.name,
            "--partitions",
            str(spec.partitions),
            "--replication-factor",
            str(spec.replication_factor),
        ]
        for k, v in spec.configs.items():
            args += ["--config", f"{k}={v}"]
        self._run(args)
        return True

    def configs(self, name: str) -> dict[str, str | None]:
        return dict(self.overrides(name))

    def alter_configs(self, name: str, changes: dict[str, str]) -> None:
        args = ["--alter", "--topic", literal_topic_regex(name)]
        for k, v in changes.items():
            args += ["--config", f"{k}={v}"]
        self._run(args)

    def add_partitions(self, name: str, total: int) -> None:
        self._run(["--alter", "--topic", literal_topic_regex(name), "--partitions", str(total)])

    def delete(self, name: str) -> None:
        self._run(["--delete", "--topic", literal_topic_regex(name)])
