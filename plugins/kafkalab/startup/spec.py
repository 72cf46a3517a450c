"""What a start-up experiment measures: its settings (:class:`StartupSpec`) and the cases they
make (:class:`StartupCase`).

A *case* is one way a new consumer gets to its first record, on a cluster in a given state:

* ``client``: ``confluent-kafka`` (librdkafka) or ``kafka-python``;
* ``join``: ``subscribe`` (a consumer group of its own, found through the group coordinator)
  or ``assign`` (partitions by hand, no group);
* ``group_protocol``: ``classic`` (JoinGroup/SyncGroup, the broker's
  ``group.initial.rebalance.delay.ms`` applies) or ``consumer`` (KIP-848: the broker assigns
  through heartbeats); ``none`` for ``assign``;
* ``members``: how many consumers of the same new group start at the same moment;
* ``cluster_state``: ``cold`` (the cluster's very first group: the broker creates
  ``__consumer_offsets`` while the consumer waits) or ``warm`` (that topic exists);
* ``initial_rebalance_delay_ms``: the broker's ``group.initial.rebalance.delay.ms`` (a static
  broker setting, so each value is a cluster of its own).

A combination a client cannot do (kafka-python has no KIP-848 protocol) is not a case: it is
listed by :meth:`StartupSpec.unsupported` with its reason, and the run says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalab.errors import ConfigError
from kafkalab.startup_figures import KAFKA_DEFAULT_INITIAL_REBALANCE_DELAY_MS

__all__ = [
    "CLIENTS",
    "DEFAULT_BASE_PORT",
    "DEFAULT_CONTROL_PORT",
    "GROUP_PROTOCOLS",
    "KAFKA_DEFAULT_INITIAL_REBALANCE_DELAY_MS",
    "StartupCase",
    "StartupSpec",
]

CLIENTS: tuple[str, ...] = ("confluent-kafka", "kafka-python")
"""The clients a start-up probe can use."""

GROUP_PROTOCOLS: tuple[str, ...] = ("classic", "consumer")
"""``group.protocol`` values of a ``subscribe`` probe."""

_UNSUPPORTED: dict[tuple[str, str], str] = {
    ("kafka-python", "consumer"): "kafka-python speaks only the classic group protocol "
    "(KIP-848's consumer protocol is in librdkafka and the Java client)",
}

DEFAULT_BASE_PORT = 19492
"""The start-up cluster's broker port (the lab's other clusters: 19292, 19392-19394)."""
DEFAULT_CONTROL_PORT = 19692
"""The start-up cluster's KRaft controller port."""

MAX_TRIALS = 100
MAX_MEMBERS = 8
MAX_DELAY_MS = 60_000


@dataclass(frozen=True)
class StartupCase:
    """One way to reach the first record; see the module docstring for each field."""

    client: str
    join: str
    group_protocol: str
    members: int
    cluster_state: str
    initial_rebalance_delay_ms: int

    @property
    def key(self) -> str:
        """A stable name of the case, e.g. ``warm/delay=3000/confluent-kafka/subscribe/classic/m1``."""
        return (f"{self.cluster_state}/delay={self.initial_rebalance_delay_ms}/{self.client}/"
                f"{self.join}/{self.group_protocol}/m{self.members}")


@dataclass(frozen=True)
class StartupSpec:
    """The settings of a start-up run (``kafkalab startup run``), checked when made.

    Raises:
        ConfigError: a value out of range or unknown, named by its field.
    """

    clients: tuple[str, ...] = CLIENTS
    delays_ms: tuple[int, ...] = (0, KAFKA_DEFAULT_INITIAL_REBALANCE_DELAY_MS)
    protocols: tuple[str, ...] = GROUP_PROTOCOLS
    members: tuple[int, ...] = (1, 3)
    trials: int = 5
    """Probes of each case; a cold case needs a fresh cluster per probe."""
    timeout_s: float = 30.0
    """How long a probe waits for its first record before it is counted as timed out."""
    broker_protocols: tuple[str, ...] = GROUP_PROTOCOLS
    """The group protocols the run's broker serves (its flavor's features; Kafka 0.9-3.x:
    ``classic`` only); a protocol it lacks is listed as unsupported, not measured."""
    broker: str = "Kafka 4.x"
    """The broker as reasons name it (``Kafka 0.9.0.1``)."""

    def __post_init__(self) -> None:
        def need(ok: bool, field: str, what: str) -> None:
            if not ok:
                raise ConfigError(f"startup: {field} {what}")

        need(bool(self.clients) and all(c in CLIENTS for c in self.clients), "clients",
             f"must be some of {', '.join(CLIENTS)}, got {', '.join(self.clients) or 'none'}")
        need(bool(self.protocols) and all(p in GROUP_PROTOCOLS for p in self.protocols),
             "protocols", f"must be some of {', '.join(GROUP_PROTOCOLS)}, got "
             f"{', '.join(self.protocols) or 'none'}")
        need(bool(self.delays_ms) and all(0 <= d <= MAX_DELAY_MS for d in self.delays_ms),
             "delays_ms", f"must be values in 0..{MAX_DELAY_MS}, got {list(self.delays_ms)}")
        need(bool(self.members) and all(1 <= m <= MAX_MEMBERS for m in self.members),
             "members", f"must be values in 1..{MAX_MEMBERS}, got {list(self.members)}")
        need(1 <= self.trials <= MAX_TRIALS, "trials", f"must be in 1..{MAX_TRIALS}, got "
             f"{self.trials}")
        need(1.0 <= self.timeout_s <= 600.0, "timeout_s", f"must be in 1..600 s, got "
             f"{self.timeout_s}")
        for name in ("clients", "protocols", "delays_ms", "members"):
            values = getattr(self, name)
            need(len(set(values)) == len(values), name, f"repeats a value: {list(values)}")
        need(any(self._supported(c, p) for c in self.clients for p in self.protocols),
             "protocols", f"leave no client a group protocol both it and the broker "
             f"({self.broker}) speak")

    def _supported(self, client: str, protocol: str) -> bool:
        return (client, protocol) not in _UNSUPPORTED and protocol in self.broker_protocols

    def _reason(self, client: str, protocol: str) -> str:
        if protocol not in self.broker_protocols:
            return (f"the broker ({self.broker}) serves only the "
                    f"{' and '.join(self.broker_protocols)} group protocol (KIP-848's consumer "
                    "protocol came with Kafka 4.0)")
        return _UNSUPPORTED[(client, protocol)]

    def _subscribe(self, state: str, delay_ms: int, members: tuple[int, ...]) -> list[StartupCase]:
        return [StartupCase(c, "subscribe", p, m, state, delay_ms)
                for c in self.clients for p in self.protocols if self._supported(c, p)
                for m in members]

    def cold_cases(self, delay_ms: int) -> list[StartupCase]:
        """The cases that need a cluster's first group (one member each: what a cold cluster
        costs is the same for one member or several)."""
        return self._subscribe("cold", delay_ms, (1,))

    def warm_cases(self, delay_ms: int) -> list[StartupCase]:
        """Every ``subscribe`` case on a warm cluster, then ``assign`` for each client (one
        member: ``assign`` has no group, so more members change nothing)."""
        return self._subscribe("warm", delay_ms, self.members) + [
            StartupCase(c, "assign", "none", 1, "warm", delay_ms) for c in self.clients]

    @property
    def max_members(self) -> int:
        """The most members any case starts (the topic's partition count)."""
        return max(self.members)

    def unsupported(self) -> list[dict[str, str]]:
        """The (client, group protocol) pairs asked for that the client cannot do, with why."""
        return [{"client": c, "group_protocol": p, "reason": self._reason(c, p)}
                for c in self.clients for p in self.protocols if not self._supported(c, p)]

    def probe_count(self) -> int:
        """How many probes the run makes (each member of a case counts once)."""
        per_delay = sum(1 for _ in self.cold_cases(0)) + sum(
            case.members for case in self.warm_cases(0))
        return per_delay * self.trials * len(self.delays_ms)
