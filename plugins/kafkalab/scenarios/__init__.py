"""The scenarios of seed 000 behind one interface: the catalog (names, clients) here, the
interface and the shared closed-loop book-keeping in ``base.py``, one module per scenario.

Importing this package is cheap (no client library, no pyarrow): the catalog is safe at
DAG-parse time.
"""

from __future__ import annotations

from kafkalab.scenarios.catalog import (
    CATALOG,
    KAFKA_CLIENT_SCENARIOS,
    KAFKA_SCENARIOS,
    MESSAGE_SCENARIOS,
    SCENARIOS,
    ScenarioSpec,
    get_scenario,
    needs_kafka,
    scenario_spec,
)

__all__ = [
    "CATALOG",
    "KAFKA_CLIENT_SCENARIOS",
    "KAFKA_SCENARIOS",
    "MESSAGE_SCENARIOS",
    "SCENARIOS",
    "ScenarioSpec",
    "get_scenario",
    "needs_kafka",
    "scenario_spec",
]
