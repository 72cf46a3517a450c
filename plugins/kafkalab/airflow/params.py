"""The choices the DAGs' trigger form offers (``dags/_common.py`` builds the form from them).

The tasks re-validate every value against the lab's own lists. Profiles are listed here,
not globbed from ``include/profiles/``, so parsing a DAG reads no file (a unit test keeps
the two in step). Cheap to import: safe at DAG-parse time.
"""

from __future__ import annotations

from kafkalab.payloads import payload_names
from kafkalab.scenarios.catalog import SCENARIOS

SCENARIO_CHOICES: tuple[str, ...] = SCENARIOS
"""Every scenario of :data:`kafkalab.scenarios.catalog.CATALOG`."""

PAYLOAD_CHOICES: tuple[str, ...] = tuple(payload_names())
"""Every payload name (``100b`` … ``10mb``)."""

PROFILE_CHOICES: tuple[str, ...] = ("default", "throughput", "latency", "durability",
                                    "availability")
"""Every profile of ``include/profiles/`` (kept in step by a unit test)."""

__all__ = ["PAYLOAD_CHOICES", "PROFILE_CHOICES", "SCENARIO_CHOICES"]
