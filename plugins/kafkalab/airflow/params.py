"""The choices the DAGs' trigger forms offer (:mod:`kafkalab.airflow.forms` builds them),
and their readable labels (the form's ``values_display``: the value sent stays the name).

The tasks re-validate every value against the lab's own lists. Profiles and workloads are
listed here, not globbed from ``include/``, so parsing a DAG reads no file (a unit test,
``tests/unit/test_airflow_params.py``, keeps them in step with the YAML files). Cheap to
import: safe at DAG-parse time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkalab.catalog import CATALOG, SCENARIOS
from kafkalab.cluster.flavors import embedded_flavor, embedded_flavor_names
from kafkalab.config.loader import WORKLOAD_ALIASES
from kafkalab.errors import ConfigError
from kafkalab.load.spec import LOAD_CLIENTS
from kafkalab.payloads import IMAGE_SPECS, payload_names
from kafkalab.startup.spec import CLIENTS as STARTUP_CLIENTS
from kafkalab.startup.spec import GROUP_PROTOCOLS

SCENARIO_CHOICES: tuple[str, ...] = SCENARIOS
"""Every scenario of :data:`kafkalab.catalog.CATALOG`."""

PAYLOAD_CHOICES: tuple[str, ...] = tuple(payload_names())
"""Every payload name (``100b`` … ``10mb``)."""

PROFILE_CHOICES: tuple[str, ...] = ("default", "throughput", "latency", "durability",
                                    "availability", "durability-legacy")
"""Every profile of ``include/profiles/`` (kept in step by a unit test)."""

LOAD_CLIENT_CHOICES: tuple[str, ...] = LOAD_CLIENTS
"""The clients the load engine drives (:data:`kafkalab.load.spec.LOAD_CLIENTS`)."""

ACKS_CHOICES: tuple[str, ...] = ("0", "1", "all")
"""Producer acks of a load cell (empty in the form: the profile's)."""

FAULT_CHOICES: tuple[str, ...] = ("none", "sigkill-leader", "sigterm-leader", "sigstop-leader",
                                   "kill-follower", "lossy-leader-crash", "kill-consumer",
                                   "leave-consumer", "sigkill-controller", "sigterm-controller",
                                   "sigstop-controller", "partition-leader", "isolate-leader",
                                   "clients-cut-from-leader", "cut-consumer")
"""Every fault of :data:`kafkalab.faults.spec.FAULTS` (listed, not imported, so parsing a DAG
never imports the fault engine's package; a unit test keeps the two in step)."""

COMMIT_CHOICES: tuple[str, ...] = ("auto", "after", "before")
"""Commit strategies of the consumer faults (:data:`kafkalab.faults.spec.COMMITS`, kept in step
by a unit test)."""

REBALANCE_CHOICES: tuple[str, ...] = ("eager", "cooperative", "consumer")
"""How a consumer fault's group rebalances (:data:`kafkalab.faults.spec.REBALANCES`, kept in
step by a unit test)."""

LATENCY_CONSUMER_MODES: tuple[str, ...] = ("subscribe", "assign")
"""How a latency cell's measuring consumer gets its partition (the workload key
``consumer_mode``, :data:`kafkalab.config.models.ConsumerMode`, kept in step by a unit test)."""

CONSUMER_MODE_CHOICES: tuple[str, ...] = ("assign", "group")
"""How a load cell's consumers read: ``assign`` every partition, no group (default), or one
consumer group per consumer."""

SHARD_PLACEMENT_CHOICES: tuple[str, ...] = ("subprocess", "tasks")
"""Where a load cell's consumer shards run (:data:`kafkalab.load.placement.SHARD_PLACEMENTS`,
kept in step by a unit test): processes of the cell's task, or mapped tasks of their own."""

LATENCY_WORKLOADS: dict[str, str] = {
    "images-http-vs-kafka": "Large images through Kafka versus plain HTTP (seed 000).",
    "images-quick": "Seed 000's comparison, small counts, for the quickstart.",
    "nightly": "Nightly latency regression matrix.",
    "bench-latency": "Benchmark workload (make bench).",
}
"""The latency workloads of ``include/workloads/`` (not ``kind: load``), name -> the file's
``description`` (listed, not read, at parse time; kept in step by a unit test)."""

WORKLOAD_CHOICES: tuple[str, ...] = (*LATENCY_WORKLOADS, *WORKLOAD_ALIASES)
"""The form's ``workload`` dropdown: every latency workload, then the former names
(:data:`kafkalab.config.loader.WORKLOAD_ALIASES`) that triggers and tests still send."""

WORKLOAD_LABELS: dict[str, str] = {
    **{name: f"{name}: {text.rstrip('.')}" for name, text in LATENCY_WORKLOADS.items()},
    **{alias: f"{alias} (former name of {name})" for alias, name in WORKLOAD_ALIASES.items()},
}

SCENARIO_LABELS: dict[str, str] = {
    s.name: s.display_name if s.name in s.display_name else f"{s.display_name} [{s.name}]"
    for s in CATALOG}
"""``rest`` -> ``HTTP (rest)``: the catalog's labels, each naming its scenario."""

PAYLOAD_LABELS: dict[str, str] = {
    name: (f"{name} JPEG image" if name in IMAGE_SPECS else f"{name} random bytes")
    for name in PAYLOAD_CHOICES
}

PROFILE_LABELS: dict[str, str] = {
    "default": "default: Kafka's own defaults (the reference)",
    "throughput": "throughput: the most bytes per second",
    "latency": "latency: shortest end-to-end time per message",
    "durability": "durability: a committed message is never lost (3 brokers)",
    "availability": "availability: writable through broker failures",
    "durability-legacy": "durability-legacy: durability as Kafka 0.9 can have it (no idempotence)",
}

ACKS_LABELS: dict[str, str] = {"0": "0 (no ack)", "1": "1 (the leader's ack)",
                               "all": "all (every in-sync replica)"}

FAULT_LABELS: dict[str, str] = {
    "none": "none (the no-fault control)",
    "sigkill-leader": "SIGKILL the leader",
    "sigterm-leader": "SIGTERM the leader (controlled shutdown)",
    "sigstop-leader": "SIGSTOP the leader (a zombie leader)",
    "kill-follower": "SIGKILL a follower",
    "lossy-leader-crash": "lossy leader crash (followers stopped, then the leader killed)",
    "kill-consumer": "SIGKILL a consumer group member",
    "leave-consumer": "a consumer leaves its group cleanly",
    "sigkill-controller": "SIGKILL the active controller (KRaft)",
    "sigterm-controller": "SIGTERM the active controller (KRaft)",
    "sigstop-controller": "SIGSTOP the active controller (KRaft)",
    "partition-leader": "network partition: the leader cut from the quorum and followers",
    "isolate-leader": "network: the leader cut from everyone, clients included",
    "clients-cut-from-leader": "network: the clients cut from the leader (it stays the leader)",
    "cut-consumer": "network: a consumer group member cut from the cluster, still running",
}

COMMIT_LABELS: dict[str, str] = {"auto": "auto (the client's auto commit)",
                                 "after": "after processing (at-least-once)",
                                 "before": "before processing (at-most-once)"}

REBALANCE_LABELS: dict[str, str] = {
    "eager": "eager (classic protocol, range assignor: every member stops)",
    "cooperative": "cooperative (classic protocol, cooperative-sticky: moved partitions stop)",
    "consumer": "consumer (KIP-848 protocol, confluent-kafka only)"}

CONSUMER_MODE_LABELS: dict[str, str] = {"assign": "assign every partition (no group)",
                                        "group": "one consumer group per consumer"}

SHARD_PLACEMENT_LABELS: dict[str, str] = {
    "subprocess": "processes of the cell's task",
    "tasks": "consume_load_shard tasks of their own (needs a scheduler)",
}

STARTUP_CLIENT_CHOICES: tuple[str, ...] = STARTUP_CLIENTS
"""The clients a start-up probe uses (:data:`kafkalab.startup.spec.CLIENTS`)."""

STARTUP_FLAVOR_CHOICES: tuple[str, ...] = embedded_flavor_names()
"""The embedded flavors a start-up run's own cluster can be, the default first (the
registry's)."""

STARTUP_FLAVOR_LABELS: dict[str, str] = {name: embedded_flavor(name).label
                                         for name in STARTUP_FLAVOR_CHOICES}

GROUP_PROTOCOL_CHOICES: tuple[str, ...] = GROUP_PROTOCOLS
"""``group.protocol`` values of a start-up run's subscribe cases."""

CLIENT_LABELS: dict[str, str] = {"confluent-kafka": "confluent-kafka (librdkafka)",
                                 "kafka-python": "kafka-python"}
"""The ``clients`` params' labels (the start-up and the fault forms)."""

IDEMPOTENCE_CHOICES: tuple[str, ...] = ("on", "off")
"""The fault form's producer idempotence values (empty: the profile's)."""

IDEMPOTENCE_LABELS: dict[str, str] = {
    "on": "on (enable.idempotence=true: no duplicate or reorder from a retry; acks=all)",
    "off": "off (a retry after a lost response may write a duplicate)"}

GROUP_PROTOCOL_LABELS: dict[str, str] = {
    "classic": "classic (JoinGroup/SyncGroup; the broker's initial rebalance delay applies)",
    "consumer": "consumer (KIP-848: the broker assigns through heartbeats)",
}

CHOICE_LABELS: dict[str, dict[str, str]] = {
    "workload": WORKLOAD_LABELS, "scenarios": SCENARIO_LABELS, "payloads": PAYLOAD_LABELS,
    "payload": PAYLOAD_LABELS, "profiles": PROFILE_LABELS, "profile": PROFILE_LABELS,
    "acks": ACKS_LABELS, "faults": FAULT_LABELS, "commits": COMMIT_LABELS,
    "consumer_mode": CONSUMER_MODE_LABELS, "shard_placement": SHARD_PLACEMENT_LABELS,
    "clients": CLIENT_LABELS, "protocols": GROUP_PROTOCOL_LABELS,
    "idempotence": IDEMPOTENCE_LABELS,
    "static_membership": {"on": "on (static: group.instance.id)", "off": "off (dynamic)"},
    "rebalance": REBALANCE_LABELS,
    "flavor": STARTUP_FLAVOR_LABELS,
}
"""The ``values_display`` of each choice param of the forms, by param name."""


def refuse_undeclared(params: Mapping[str, Any], declared: Iterable[str], dag_id: str) -> None:
    """Refuse a trigger conf key the DAG does not declare as a param: Airflow merges such
    keys into ``params`` unchecked (its form and its validation know only the declared ones),
    so a lab task never reads one (``{"workload": "/some/other/load.yaml"}`` on the load DAG).

    Raises:
        ConfigError: one line naming the first undeclared key (not its value) and the DAG's
            params.
    """
    known = set(declared)
    extra = sorted(str(k) for k in params if k not in known)
    if extra:
        raise ConfigError(f"conf key {extra[0]!r} is not a param of DAG {dag_id} (its params: "
                          f"{', '.join(sorted(known))}); drop it from the trigger's conf")


def whole_param(name: str, value: Any) -> int:
    """``value`` of the param ``name`` as a whole number (``3``, ``3.0``, ``"3"``).

    Raises:
        ConfigError: ``param <name>: expected a whole number, got <value>`` (a boolean, a
            fraction, text that is no number).
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"param {name}: expected a whole number, got {value!r}")
    try:
        n = int(value)
    except ValueError:
        raise ConfigError(f"param {name}: expected a whole number, got {value!r}") from None
    if n != float(value):
        raise ConfigError(f"param {name}: expected a whole number, got {value!r}")
    return n


def bool_param(params: Mapping[str, Any], name: str, default: bool) -> bool:
    """The boolean param ``name`` of a run (``default`` when absent).

    Raises:
        ConfigError: the param is not a boolean (``param <name>: expected true or false``).
    """
    value = params.get(name, default)
    if not isinstance(value, bool):
        raise ConfigError(f"param {name}: expected true or false, got {value!r}")
    return value


__all__ = [
    "ACKS_CHOICES",
    "ACKS_LABELS",
    "CHOICE_LABELS",
    "CLIENT_LABELS",
    "COMMIT_CHOICES",
    "COMMIT_LABELS",
    "CONSUMER_MODE_CHOICES",
    "CONSUMER_MODE_LABELS",
    "FAULT_CHOICES",
    "FAULT_LABELS",
    "GROUP_PROTOCOL_CHOICES",
    "GROUP_PROTOCOL_LABELS",
    "IDEMPOTENCE_CHOICES",
    "IDEMPOTENCE_LABELS",
    "LATENCY_CONSUMER_MODES",
    "LATENCY_WORKLOADS",
    "LOAD_CLIENT_CHOICES",
    "PAYLOAD_CHOICES",
    "PAYLOAD_LABELS",
    "PROFILE_CHOICES",
    "PROFILE_LABELS",
    "REBALANCE_CHOICES",
    "REBALANCE_LABELS",
    "SCENARIO_CHOICES",
    "SCENARIO_LABELS",
    "SHARD_PLACEMENT_CHOICES",
    "SHARD_PLACEMENT_LABELS",
    "STARTUP_CLIENT_CHOICES",
    "STARTUP_FLAVOR_CHOICES",
    "STARTUP_FLAVOR_LABELS",
    "WORKLOAD_CHOICES",
    "WORKLOAD_LABELS",
    "bool_param",
    "refuse_undeclared",
    "whole_param",
]
