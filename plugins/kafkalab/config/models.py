"""Typed configuration: profiles (how clients, topics and brokers are tuned) and workloads
(what is sent). Both are YAML files under ``include/``, validated once here, at the edge.

A *profile* follows seed 004's four goals (throughput, latency, durability, availability);
a *workload* follows OpenMessaging Benchmark: it says what to send, never how to tune.
A run is always the pair (workload, profile) times a scenario.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from kafkalab.catalog import SCENARIOS
from kafkalab.config.properties import KNOB_OF, validate_properties, value_text
from kafkalab.yamlio import scalar_texts


def acks_as_text(value: object) -> object:
    """YAML reads ``acks: 1`` as an int and ``acks: all`` as text (and -1 means all): accept
    each, give the text form (``"0"``, ``"1"``, ``"all"``); anything else is left for the
    field's own validation to refuse."""
    if value in (-1, "-1"):
        return "all"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


MAX_MESSAGES = 100_000
"""The most measured messages a latency cell may ask for: a closed loop sends one at a time
(at 50 ms a 10 MB round trip, ~1.4 h); more belongs to ``kafkalab load``."""

MAX_WARMUP_MESSAGES = 10_000
"""The most warm-up messages a latency cell may send."""

MAX_FIRST_MESSAGE_PROBES = 100
"""The most first-message probes a client cell may run (each starts a fresh consumer)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ProducerSettings(_Strict):
    """Producer tuning (seed 004). Names carry units; mapping.py turns them into client keys."""

    batch_size_bytes: int = Field(16384, ge=0)
    linger_ms: int = Field(0, ge=0)
    compression: Literal["none", "gzip", "snappy", "lz4", "zstd"] = "none"
    """zstd needs Kafka 2.1 or later (refused on an older cluster before a run starts)."""
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
    configs: dict[str, str] = Field(default_factory=dict, exclude=True)
    """The profile's ``topic_configs`` that are not one of the knobs above (filled from
    :attr:`Profile.topic_configs`, never written in YAML; left out of a dump, which keeps
    ``topic_configs``)."""

    @model_validator(mode="after")
    def _isr_fits_rf(self) -> TopicSettings:
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(
                f"min_insync_replicas={self.min_insync_replicas} is larger than "
                f"replication_factor={self.replication_factor}"
            )
        return self

    def kafka_configs(self) -> dict[str, str]:
        """The topic configs, with Kafka's own names and text values: the knobs, then the
        profile's other ``topic_configs``."""
        return {
            "min.insync.replicas": str(self.min_insync_replicas),
            "unclean.leader.election.enable": str(self.unclean_leader_election_enable).lower(),
            "max.message.bytes": str(self.max_message_bytes),
            **self.configs,
        }


def _knob_text(value: object) -> str:
    """A knob's or a property's value as comparable text (``acks: -1`` is ``all``)."""
    return value_text(acks_as_text(value))


def fold_properties(section: str, value: object, data: dict[str, Any]) -> object:
    """The raw ``producer``/``consumer``/``topic`` mapping of a profile with its knobs set
    from the Kafka properties that name them (``producer_properties: {linger.ms: 5}`` sets
    ``producer.linger_ms``): an explicit property overrides a knob's default, and a knob
    the profile sets to another value is a contradiction. ``topic`` also gets the other
    ``topic_configs`` as ``configs``.

    Raises:
        ValueError: a property and the knob it names disagree.
    """
    if isinstance(value, BaseModel):  # the default: only what was set counts
        value = value.model_dump(exclude_unset=True)
    if not isinstance(value, dict):
        return value  # the section's own validation refuses it
    out = dict(value)
    if section == "topic" and "configs" in out:
        raise ValueError("configs: write topic-level configs under the profile's "
                         "topic_configs")
    for key, knobs in KNOB_OF.items():
        props: dict[str, str] = data.get(key) or {}
        for name, (where, knob) in knobs.items():
            if where != section or name not in props:
                continue
            if knob in out and _knob_text(out[knob]) != _knob_text(props[name]):
                raise ValueError(f"{key} sets {name}={props[name]} but {section}.{knob} is "
                                 f"{_knob_text(out[knob])}: set it in one place")
            out[knob] = props[name]
    if section == "topic":
        knob_names = KNOB_OF["topic_configs"]
        out["configs"] = {k: v for k, v in (data.get("topic_configs") or {}).items()
                          if k not in knob_names}
    return out


class Profile(_Strict):
    """One tuning profile: producer, consumer, topic, and the broker settings it assumes.

    ``broker_assumptions`` are documentation: the lab cannot change a running broker, so the
    report shows them next to the figures they shaped.

    ``producer_properties``, ``consumer_properties`` and ``topic_configs`` take Kafka's own
    names (docs/profiles.md, the tables in ``config/properties.py``); they are declared
    before the knobs so that the knobs' validators can fold them in (:func:`fold_properties`).
    Which client knows which property is checked per run (``config.mapping.check_profile``).
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    goal: Literal["default", "throughput", "latency", "durability", "availability"]
    description: str = ""
    producer_properties: dict[str, str] = Field(default_factory=dict)
    consumer_properties: dict[str, str] = Field(default_factory=dict)
    topic_configs: dict[str, str] = Field(default_factory=dict)
    producer: ProducerSettings = Field(default_factory=ProducerSettings, validate_default=True)
    consumer: ConsumerSettings = Field(default_factory=ConsumerSettings, validate_default=True)
    topic: TopicSettings = Field(default_factory=TopicSettings, validate_default=True)
    broker_assumptions: dict[str, str] = Field(default_factory=dict)

    @field_validator("producer_properties", "consumer_properties", "topic_configs",
                     mode="before")
    @classmethod
    def _known_properties(cls, value: object, info: ValidationInfo) -> object:
        assert info.field_name is not None
        return validate_properties(info.field_name, value)

    @field_validator("producer", "consumer", "topic", mode="before")
    @classmethod
    def _fold_properties(cls, value: object, info: ValidationInfo) -> object:
        assert info.field_name is not None
        return fold_properties(info.field_name, value, info.data)

    @field_validator("producer")
    @classmethod
    def _idempotence_fits(cls, value: ProducerSettings, info: ValidationInfo) -> ProducerSettings:
        props = info.data.get("producer_properties") or {}
        if props.get("enable.idempotence") == "true" and (
                value.acks != "all" or value.retries < 1 or value.max_in_flight > 5):
            raise ValueError("producer_properties sets enable.idempotence=true, which needs "
                             "acks=all, retries >= 1 and max_in_flight <= 5 (the profile has "
                             f"acks={value.acks}, retries={value.retries}, "
                             f"max_in_flight={value.max_in_flight})")
        return value

    @field_validator("broker_assumptions", mode="before")
    @classmethod
    def _values_as_text(cls, value: object) -> object:
        return scalar_texts(value)


ConsumerMode = Literal["subscribe", "assign"]


class Workload(_Strict):
    """What to send: payloads, counts, warm-up, the consumer mode. Not how to tune."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    description: str = ""
    scenarios: list[str] = Field(default_factory=lambda: list(SCENARIOS))
    payloads: list[str] = Field(default_factory=lambda: ["1mb"])
    profiles: list[str] = Field(default_factory=lambda: ["default"])
    encoding: Literal["raw", "base64"] = "base64"
    partitions: int = Field(1, ge=1, le=1024)
    messages: int = Field(20, ge=1, le=MAX_MESSAGES)
    warmup_messages: int = Field(2, ge=0, le=MAX_WARMUP_MESSAGES)
    consumer_mode: ConsumerMode = "subscribe"
    first_message_probes: int = Field(1, ge=0, le=MAX_FIRST_MESSAGE_PROBES)
    first_message_probes_at: Literal["every-payload", "first-payload"] = "every-payload"
    """Which Kafka cells take the probes: every payload's, or only those of the first payload
    the run (or a re-run of some of its cells) is given, per scenario and profile: a new
    consumer's wait for its group is the same at every size, and each subscribe probe waits
    the broker's initial rebalance delay."""
    message_timeout_s: float = Field(30.0, gt=0, le=3600)
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
