"""The scenarios of seed 000 behind one interface.

- :data:`kafkalab.catalog.CATALOG`: the one list of scenarios (names, clients,
  capabilities, implementation classes); :func:`get_scenario` here builds one;
- ``base.py``: the interface (:class:`~kafkalab.scenarios.base.Scenario`), the cell, and the
  closed loop's book-keeping (``Tracker``);
- ``kafka_client.py``: what the two Kafka client scenarios share;
- one module per scenario: ``rest.py`` (with ``http_server.py``), ``kafka_python.py``,
  ``confluent.py``, ``jvm_e2e.py``.

This ``__init__`` imports nothing heavy: an implementation's module is imported when
:func:`get_scenario` first builds it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from kafkalab.catalog import scenario_spec

if TYPE_CHECKING:
    from kafkalab.scenarios.base import Scenario


def get_scenario(name: str) -> Scenario:
    """A fresh implementation object of scenario ``name`` (imports its module on first use).

    Raises:
        ConfigError: an unknown scenario (:func:`kafkalab.catalog.scenario_spec`).
    """
    spec = scenario_spec(name)
    module, _, cls_name = spec.impl.partition(":")
    cls = getattr(importlib.import_module(module), cls_name)
    scenario: Scenario = cls()
    return scenario


__all__ = ["get_scenario"]
