"""Typed configuration: profiles (how clients, topics and brokers are tuned) and workloads
(what is sent). Both are YAML files under ``include/``, validated once here, at the edge.

A *profile* follows seed 004's four goals (throughput, latency, durability, availability);
a *workload* follows OpenMessaging Benchmark: it says what to send, never how to tune.
A run is always the pair (workload, profile) times a scenario.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kafkalab.scenarios.catalog import SCENARIOS


def acks_as_text(value: object) -> object:
    """YAML reads ``acks: 1`` as an int and ``acks: all`` as text (and -1 means all): accept
    each, give the text form (``"0"``, ``"1"``, ``"all"``); anything else is left for the
    field's own validation to refuse."""
    if value in (-1, "-1"):
        return "all"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProducerSettings(_Strict):
    """Producer tuning (seed 004). Names carry units; mapping.py turns them into client keys."""

    batch_size_bytes: int = Field(16384, ge=0)
    linger_ms: int = Field(0, ge=0)
    compression: Literal["none", "gzip", "snappy", "lz4"] = "none"
    acks: Literal["0", "1", "all"] = "1"
    retries: int = Field(0, ge=0)
    max_in_flight: int = Field(5, ge=1)
    buffer_memory_bytes: int = Field(33554432, ge=1024)

    @field_validator("acks", mode="before")
    @classmethod
    def _acks_as_text(cls, value: object) -> object:
        return acks_as_text(value)


class ConsumerSettings(_Strict):
    """Consumer tuning (seed 004)."""

    fetch_min_bytes: int = Field(1, ge=1)
    fetch_max_wait_ms: int = Field(100, ge=0)
    enable_auto_commit: bool = True
    session_timeout_ms: int = Field(10000, ge=1000)


class TopicSettings(_Strict):
    """Topic-level settings the profile asks the provisioner for."""

    replication_factor: int = Field(1, ge=1)
    min_insync_replicas: int = Field(1, ge=1)
    unclean_leader_election_enable: bool = False
    max_message_bytes: int = Field(16777216, ge=1024)

    @model_validator(mode="after")
    def _isr_fits_rf(self) -> TopicSettings:
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(
                f"min_insync_replicas={self.min_insync_replicas} is larger than "
                f"replication_factor={self.replication_factor}"
            )
        return self

    def kafka_configs(self) -> dict[str, str]:
        """The topic configs, with Kafka's own names and text values."""
        return {
            "min.insync.replicas": str(self.min_insync_replicas),
            "unclean.leader.election.enable": str(self.unclean_leader_election_enable).lower(),
            "max.message.bytes": str(self.max_message_bytes),
        }


class Profile(_Strict):
    """One tuning profile: producer, consumer, topic, and the broker settings it assumes.

    ``broker_assumptions`` are documentation: the lab cannot change a running broker, so the
    report shows them next to the figures they shaped.
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    goal: Literal["default", "throughput", "latency", "durability", "availability"]
    description: str = ""
    producer: ProducerSettings = Field(default_factory=ProducerSettings)
    consumer: ConsumerSettings = Field(default_factory=ConsumerSettings)
    topic: TopicSettings = Field(default_factory=TopicSettings)
    broker_assumptions: dict[str, str] = Field(default_factory=dict)

    @field_validator("broker_assumptions", mode="before")
    @classmethod
    def _values_as_text(cls, value: object) -> object:
        if isinstance(value, dict):
            return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
        return value


ConsumerMode = Literal["subscribe", "assign"]


class Workload(_Strict):
    """What to send: payloads, counts, warm-up, the consumer mode. Not how to tune."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    description: str = ""
    scenarios: list[str] = Field(default_factory=lambda: list(SCENARIOS))
    payloads: list[str] = Field(default_factory=lambda: ["1mb"])
    profiles: list[str] = Field(default_factory=lambda: ["default"])
    encoding: Literal["raw", "base64"] = "base64"
    partitions: int = Field(1, ge=1)
    messages: int = Field(20, ge=1)
    warmup_messages: int = Field(2, ge=0)
    consumer_mode: ConsumerMode = "subscribe"
    first_message_probes: int = Field(1, ge=0)
    message_timeout_s: float = Field(30.0, gt=0)
    topic_prefix: str = Field("klab", pattern=r"^[A-Za-z0-9._-]+$")

    @model_validator(mode="before")
    @classmethod
    def _closed_loop_only(cls, data: object) -> object:
        if isinstance(data, dict) and "rate_msgs_per_s" in data:
            raise ValueError("rate_msgs_per_s: a latency workload is closed loop; fixed-rate "
                             "load is a load workload ('kind: load', run by `kafkalab load`)")
        if isinstance(data, dict) and data.get("kind") == "load":
            raise ValueError("kind: this is a load workload; run it with "
                             "`kafkalab load --workload NAME`")
        return data

    @field_validator("scenarios")
    @classmethod
    def _known_scenarios(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in SCENARIOS]
        if unknown:
            raise ValueError(f"unknown scenario {unknown[0]!r} (known: {', '.join(SCENARIOS)})")
        return value

    def topic_for(self, profile: str) -> str:
        """The topic a (workload, profile) pair writes to."""
        return f"{self.topic_prefix}-{self.name}-{profile}"
