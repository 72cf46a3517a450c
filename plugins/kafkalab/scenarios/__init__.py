"""The four scenarios of seed 000, behind one interface (see base.py)."""

from __future__ import annotations

from kafkalab.config.models import SCENARIOS
from kafkalab.errors import ConfigError
from kafkalab.scenarios.base import Cell, Scenario, Skipped


def get_scenario(name: str) -> Scenario:
    """A fresh scenario object by name."""
    from kafkalab.scenarios.confluent import ConfluentKafkaScenario
    from kafkalab.scenarios.jvm_e2e import JvmEndToEndScenario
    from kafkalab.scenarios.kafka_python import KafkaPythonScenario
    from kafkalab.scenarios.rest import RestScenario

    registry: dict[str, type] = {
        "rest": RestScenario,
        "kafka-python": KafkaPythonScenario,
        "confluent-kafka": ConfluentKafkaScenario,
        "jvm-e2e": JvmEndToEndScenario,
    }
    if name not in registry:
        raise ConfigError(f"unknown scenario {name!r} (known: {', '.join(SCENARIOS)})")
    scenario: Scenario = registry[name]()
    return scenario


__all__ = ["Cell", "Scenario", "Skipped", "get_scenario"]
