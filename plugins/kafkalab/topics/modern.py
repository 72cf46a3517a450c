"""Topic admin on modern clusters (Kafka 4.x KRaft, external modern Kafka): the confluent-kafka
AdminClient (create_topics, describe_configs, incremental_alter_configs, create_partitions,
delete_topics). Configs read here are the topic's *effective* values."""

from __future__ import annotations

from typing import Any

from kafkalab.cluster.admin import admin_client
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.errors import ClusterError, ConfigError
from kafkalab.topics.metadata import topic_metadata
from kafkalab.topics.model import ExistingTopic, TopicSpec

__all__ = ["ModernTopics"]


def _result(fut: Any, what: str, timeout_s: float) -> Any:
    """The result of an admin future; a failure or timeout as ClusterError naming ``what``."""
    from confluent_kafka import KafkaException

    try:
        return fut.result(timeout=timeout_s + 5)
    except KafkaException as exc:
        raise ClusterError(f"{what} failed: {exc.args[0].str()}") from None
    except TimeoutError:
        raise ClusterError(f"{what} timed out after {timeout_s:.0f} s") from None


class ModernTopics:
    """A :class:`~kafkalab.topics.model.TopicBackend` over one AdminClient (built here; it
    connects on its first request)."""

    def __init__(self, descriptor: ClusterDescriptor, timeout_s: float) -> None:
        self._descriptor = descriptor
        self._timeout_s = timeout_s
        self.admin = admin_client(descriptor)
        self._entries: dict[str, dict[str, Any]] = {}

    def current(self, name: str) -> ExistingTopic | None:
        tm = topic_metadata(self.admin, name, self._timeout_s)
        if tm is None:
            return None
        rf = len(next(iter(tm.partitions.values())).replicas) if tm.partitions else 0
        return ExistingTopic(len(tm.partitions), rf)

    def create(self, spec: TopicSpec) -> bool:
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import NewTopic

        new = NewTopic(
            spec.name,
            num_partitions=spec.partitions,
            replication_factor=spec.replication_factor,
            config=dict(spec.configs),
        )
        t = self._timeout_s
        futs = self.admin.create_topics([new], operation_timeout=t, request_timeout=t)
        try:
            futs[spec.name].result(timeout=t + 5)
            return True
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return False
            where = self._descriptor.bootstrap_servers
            if err.code() in (
                KafkaError.INVALID_REPLICATION_FACTOR,
                KafkaError.INVALID_CONFIG,
                KafkaError.INVALID_PARTITIONS,
                KafkaError.POLICY_VIOLATION,
            ):
                raise ConfigError(
                    f"the cluster ({where}) refused topic {spec.name}: {err.str()}"
                ) from None
            raise ClusterError(
                f"creating topic {spec.name} on {where} failed: {err.str()}"
            ) from None

    def config_entries(self, name: str) -> dict[str, Any]:
        """The topic's ``ConfigEntry`` objects by name (describe_configs), remembered for
        :meth:`alter_configs`."""
        from confluent_kafka.admin import ConfigResource, ResourceType

        t = self._timeout_s
        futs = self.admin.describe_configs(
            [ConfigResource(ResourceType.TOPIC, name)], request_timeout=t
        )
        entries: dict[str, Any] = _result(next(iter(futs.values())), f"describe_configs({name})", t)
        self._entries[name] = entries
        return entries

    def configs(self, name: str) -> dict[str, str | None]:
        return {k: e.value for k, e in self.config_entries(name).items()}

    def alter_configs(self, name: str, changes: dict[str, str]) -> None:
        """IncrementalAlterConfigs; where the broker lacks it, AlterConfigs with the topic's
        other overrides kept (AlterConfigs replaces the whole set)."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import (
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            ConfigSource,
            ResourceType,
        )

        t = self._timeout_s
        res = ConfigResource(
            ResourceType.TOPIC,
            name,
            incremental_configs=[
                ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                for k, v in changes.items()
            ],
        )
        try:
            futs = self.admin.incremental_alter_configs([res], request_timeout=t)
            next(iter(futs.values())).result(timeout=t + 5)
            return
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() not in (
                err.UNSUPPORTED_VERSION,
                err._UNSUPPORTED_FEATURE,
                err.INVALID_REQUEST,
            ):
                raise ClusterError(
                    f"altering configs of topic {name} failed: {err.str()}"
                ) from None
        entries = self._entries.get(name)
        if entries is None:
            entries = self.config_entries(name)
        keep = {
            k: e.value
            for k, e in entries.items()
            if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value and e.value is not None
        }
        keep.update(changes)
        futs = self.admin.alter_configs(
            [ConfigResource(ResourceType.TOPIC, name, set_config=keep)], request_timeout=t
        )
        _result(next(iter(futs.values())), f"alter_configs({name})", t)

    def add_partitions(self, name: str, total: int) -> None:
        from confluent_kafka.admin import NewPartitions

        t = self._timeout_s
        futs = self.admin.create_partitions(
            [NewPartitions(name, total)], operation_timeout=t, request_timeout=t
        )
        _result(futs[name], f"create_partitions({name})", t)

    def delete(self, name: str) -> None:
        t = self._timeout_s
        futs = self.admin.delete_topics([name], operation_timeout=t, request_timeout=t)
        _result(futs[name], f"delete_topics({name})", t)
