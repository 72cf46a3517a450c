"""The choices the DAGs' trigger form offers (``dags/_common.py`` builds the form from them).

The tasks re-validate every value against the lab's own lists. Profiles are listed here,
not globbed from ``include/profiles/``, so parsing a DAG reads no file (a unit test keeps
the two in step). Cheap to import: safe at DAG-parse time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkalab.errors import ConfigError
from kafkalab.load.spec import LOAD_CLIENTS
from kafkalab.payloads import payload_names
from kafkalab.scenarios.catalog import SCENARIOS

SCENARIO_CHOICES: tuple[str, ...] = SCENARIOS
"""Every scenario of :data:`kafkalab.scenarios.catalog.CATALOG`."""

PAYLOAD_CHOICES: tuple[str, ...] = tuple(payload_names())
"""Every payload name (``100b`` … ``10mb``)."""

PROFILE_CHOICES: tuple[str, ...] = ("default", "throughput", "latency", "durability",
                                    "availability")
"""Every profile of ``include/profiles/`` (kept in step by a unit test)."""

LOAD_CLIENT_CHOICES: tuple[str, ...] = LOAD_CLIENTS
"""The clients the load engine drives (:data:`kafkalab.load.spec.LOAD_CLIENTS`)."""

ACKS_CHOICES: tuple[str, ...] = ("0", "1", "all")
"""Producer acks of a load cell (empty in the form: the profile's)."""

FAULT_CHOICES: tuple[str, ...] = ("none", "sigkill-leader", "sigterm-leader", "sigstop-leader",
                                   "kill-follower", "lossy-leader-crash", "kill-consumer",
                                   "leave-consumer")
"""Every fault of :data:`kafkalab.faults.spec.FAULTS` (listed, not imported, so parsing a DAG
never imports the fault engine's package; a unit test keeps the two in step)."""

COMMIT_CHOICES: tuple[str, ...] = ("auto", "after", "before")
"""Commit strategies of the consumer faults (:data:`kafkalab.faults.spec.COMMITS`, kept in step
by a unit test)."""

CONSUMER_MODE_CHOICES: tuple[str, ...] = ("assign", "group")
"""How a load cell's consumers read: ``assign`` every partition, no group (default), or one
consumer group per consumer."""

SHARD_PLACEMENT_CHOICES: tuple[str, ...] = ("subprocess", "tasks")
"""Where a load cell's consumer shards run (:data:`kafkalab.load.engine.SHARD_PLACEMENTS`,
kept in step by a unit test): processes of the cell's task, or mapped tasks of their own."""

def bool_param(params: Mapping[str, Any], name: str, default: bool) -> bool:
    """The boolean param ``name`` of a run (``default`` when absent).

    Raises:
        ConfigError: the param is not a boolean (``param <name>: expected true or false``).
    """
    value = params.get(name, default)
    if not isinstance(value, bool):
        raise ConfigError(f"param {name}: expected true or false, got {value!r}")
    return value


__all__ = ["ACKS_CHOICES", "COMMIT_CHOICES", "CONSUMER_MODE_CHOICES", "FAULT_CHOICES", "LOAD_CLIENT_CHOICES",
           "PAYLOAD_CHOICES", "PROFILE_CHOICES", "SCENARIO_CHOICES", "SHARD_PLACEMENT_CHOICES",
           "bool_param"]
