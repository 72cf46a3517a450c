"""What a topic should be (:class:`TopicSpec`), what it is (:class:`ExistingTopic`), and what a
topic admin backend can do (:class:`TopicBackend`: Kafka 0.9's TopicCommand or the modern
AdminClient)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kafkalab.cluster.descriptor import string_properties

__all__ = ["ExistingTopic", "TopicBackend", "TopicSpec"]

_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


class TopicSpec(BaseModel):
    """A topic as a profile wants it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    partitions: int = Field(default=1, ge=1)
    replication_factor: int = Field(default=1, ge=1)
    configs: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _valid_name(cls, v: str) -> str:
        if not _TOPIC_RE.match(v) or v in (".", ".."):
            raise ValueError(f"{v!r} is not a valid Kafka topic name ([A-Za-z0-9._-], 1-249 chars)")
        return v

    @field_validator("configs", mode="before")
    @classmethod
    def _stringify(cls, v: Any) -> Any:
        return string_properties(v)


@dataclass(frozen=True)
class ExistingTopic:
    """The layout of a topic the cluster already has."""

    partitions: int
    replication_factor: int


class TopicBackend(Protocol):
    """The topic operations provisioning needs, one implementation per protocol."""

    def current(self, name: str) -> ExistingTopic | None:
        """The topic's layout, None when the cluster does not have it."""
        ...

    def create(self, spec: TopicSpec) -> bool:
        """Create the topic; False when it appeared concurrently (it exists now)."""
        ...

    def configs(self, name: str) -> dict[str, str | None]:
        """The topic's config values, as far as the backend can compare them with a spec."""
        ...

    def alter_configs(self, name: str, changes: dict[str, str]) -> None:
        """Set ``changes`` on the topic, keeping its other settings."""
        ...

    def add_partitions(self, name: str, total: int) -> None:
        """Grow the topic to ``total`` partitions."""
        ...

    def delete(self, name: str) -> None:
        """Ask the cluster to delete the topic (it may linger in metadata for a moment)."""
        ...
