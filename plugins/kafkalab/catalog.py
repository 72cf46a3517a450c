"""The scenarios the lab knows: the one list of their names, clients and capabilities.

Everything that needs a scenario's name (workload validation, the Airflow trigger form, the
report's ordering, synthetic data) reads it from :data:`CATALOG`; the implementation
classes get their ``name`` and ``client`` from their :class:`ScenarioSpec`, and
:func:`kafkalab.scenarios.get_scenario` builds one from its :attr:`ScenarioSpec.impl`. This
module is data: it imports nothing of the lab but its errors (so configuration, the report
and a DAG file at parse time may all read it).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalab.errors import ConfigError


@dataclass(frozen=True)
class ScenarioSpec:
    """What the lab knows about a scenario before running it."""

    name: str
    """The scenario's name in workloads, samples and reports (``confluent-kafka``)."""
    client: str
    """The client library or tool it measures (``requests``, ``kafka.tools.EndToEndLatency``)."""
    uses_kafka: bool
    """True when it needs a Kafka cluster (and a topic)."""
    per_message: bool
    """True when it writes one ``message`` sample per message (the JVM tool only prints a
    summary)."""
    impl: str
    """``module:Class`` of the implementation, imported on first use."""
    label: str = ""
    """How tables and charts name it beside the others (default: its name)."""
    loop_mode: str | None = None
    """How its loop orders a message's steps (the ``loop_mode`` column): ``overlapped`` (send,
    then poll at once; the ack arrives meanwhile), ``serial`` (wait for the ack, then poll:
    EndToEndLatency's order), ``request`` (one HTTP request: no broker ack)."""

    @property
    def display_name(self) -> str:
        """:attr:`label`, or the name when there is none."""
        return self.label or self.name


LOOP_MODES: tuple[str, ...] = ("overlapped", "serial", "request")
"""Every value of the ``loop_mode`` column (see :attr:`ScenarioSpec.loop_mode`)."""

CATALOG: tuple[ScenarioSpec, ...] = (
    ScenarioSpec("rest", "requests", uses_kafka=False, per_message=True,
                 impl="kafkalab.scenarios.rest:RestScenario", label="HTTP (rest)",
                 loop_mode="request"),
    ScenarioSpec("kafka-python", "kafka-python", uses_kafka=True, per_message=True,
                 impl="kafkalab.scenarios.kafka_python:KafkaPythonScenario",
                 loop_mode="overlapped"),
    ScenarioSpec("confluent-kafka", "confluent-kafka", uses_kafka=True, per_message=True,
                 impl="kafkalab.scenarios.confluent:ConfluentKafkaScenario",
                 loop_mode="overlapped"),
    ScenarioSpec("confluent-kafka-serial", "confluent-kafka", uses_kafka=True, per_message=True,
                 impl="kafkalab.scenarios.confluent:ConfluentKafkaSerialScenario",
                 label="confluent-kafka (serial: wait for the ack, then poll — "
                       "EndToEndLatency's order)",
                 loop_mode="serial"),
    ScenarioSpec("jvm-e2e", "kafka.tools.EndToEndLatency", uses_kafka=True, per_message=False,
                 impl="kafkalab.scenarios.jvm_e2e:JvmEndToEndScenario",
                 label="Kafka tool (EndToEndLatency)", loop_mode="serial"),
)
"""Every scenario, in the order seed 000 ran them; the serial harness sits beside the tool
whose order it copies."""

SCENARIOS: tuple[str, ...] = tuple(s.name for s in CATALOG)
"""Every scenario name, in seed 000's order."""

KAFKA_SCENARIOS: tuple[str, ...] = tuple(s.name for s in CATALOG if s.uses_kafka)
"""The scenarios that need a Kafka cluster."""

MESSAGE_SCENARIOS: tuple[str, ...] = tuple(s.name for s in CATALOG if s.per_message)
"""The scenarios that write one row per message."""

KAFKA_CLIENT_SCENARIOS: tuple[str, ...] = tuple(
    s.name for s in CATALOG if s.uses_kafka and s.per_message)
"""The Kafka client libraries driven by the harness (they also measure first-message delay)."""


def scenario_spec(name: str) -> ScenarioSpec:
    """The spec of scenario ``name``.

    Raises:
        ConfigError: ``unknown scenario 'x' (known: rest, kafka-python, ...)``.
    """
    for spec in CATALOG:
        if spec.name == name:
            return spec
    raise ConfigError(f"unknown scenario {name!r} (known: {', '.join(SCENARIOS)})")


def needs_kafka(scenarios: list[str] | tuple[str, ...]) -> bool:
    """True when any of ``scenarios`` needs a Kafka cluster."""
    return any(s in KAFKA_SCENARIOS for s in scenarios)


__all__ = [
    "CATALOG",
    "KAFKA_CLIENT_SCENARIOS",
    "KAFKA_SCENARIOS",
    "LOOP_MODES",
    "MESSAGE_SCENARIOS",
    "SCENARIOS",
    "ScenarioSpec",
    "needs_kafka",
    "scenario_spec",
]
