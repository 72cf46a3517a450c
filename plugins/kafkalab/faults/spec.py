"""What one fault trial does (:class:`FaultTrialSpec`), validated once here.

A trial is one open-loop, fixed-rate load cell (one producer, one live consumer) on a fresh
topic of the 3-broker fault cluster, with one fault injected at ``fault_at_s`` and healed
``down_s`` later (:mod:`kafkalab.faults.inject`), then checked by re-reading the topic
(:mod:`kafkalab.faults.checker`).

The consumer faults (``kill-consumer``, ``leave-consumer``, ``cut-consumer``; seed 002) add a
consumer group of ``consumers`` members, each a process of its own
(:mod:`kafkalab.faults.member`), that processes the same stream with a commit strategy
(``commit``); one member is killed, leaves, or is cut from the cluster (its links, on a
cluster with degradable links) at ``fault_at_s`` and optionally comes back ``rejoin_after_s``
later (:mod:`kafkalab.faults.group`); a cut member comes back by itself at the heal.

A fault run's trials are planned once, here (:class:`FaultPlan`, :func:`plan_trials`), for
``kafkalab faults run`` (:mod:`kafkalab.cli.faults`), the ``resilience_experiment`` DAG and the
nightly's fault trial (:func:`kafkalab.airflow.fault_tasks.fault_trials`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kafkalab.cluster.flavors import FAULT_CLUSTER
from kafkalab.config.models import acks_as_text
from kafkalab.load.spec import LoadCellSpec, PlanRefused, check_txn_axis
from kafkalab.store import safe_name

__all__ = [
    "COMMITS",
    "CONSUMER_FAULTS",
    "CONTROLLER_FAULTS",
    "CUT_BEYOND_SESSION_S",
    "DEFAULT_DOWN_S",
    "FAULTS",
    "FAULT_HELP",
    "LINKED_FAULTS",
    "LINK_FAULTS",
    "REBALANCES",
    "RECOVERY_MARGIN_S",
    "FaultPlan",
    "FaultTrialSpec",
    "broker_fault_duration_s",
    "group_duration_s",
    "plan_trials",
]

FaultName = Literal["none", "sigkill-leader", "sigterm-leader", "sigstop-leader",
                    "kill-follower", "lossy-leader-crash", "kill-consumer", "leave-consumer",
                    "sigkill-controller", "sigterm-controller", "sigstop-controller",
                    "partition-leader", "isolate-leader", "clients-cut-from-leader",
                    "cut-consumer"]

FAULTS: tuple[str, ...] = ("none", "sigkill-leader", "sigterm-leader", "sigstop-leader",
                           "kill-follower", "lossy-leader-crash", "kill-consumer",
                           "leave-consumer", "sigkill-controller", "sigterm-controller",
                           "sigstop-controller", "partition-leader", "isolate-leader",
                           "clients-cut-from-leader", "cut-consumer")
"""Every fault a trial can inject (``none`` is the no-fault control)."""

LINK_FAULTS: tuple[str, ...] = ("partition-leader", "isolate-leader", "clients-cut-from-leader")
"""Faults of the network, not of a process: the leader's links are cut
(:mod:`kafkalab.cluster.links`), so the fault cluster runs with degradable links."""

LINKED_FAULTS: tuple[str, ...] = (*LINK_FAULTS, "cut-consumer")
"""Every fault that needs the fault cluster with degradable links: the leader's link faults
and ``cut-consumer`` (a group member whose every link is its own, the ``solo`` plane)."""

CUT_BEYOND_SESSION_S = 4.0
"""``cut-consumer`` without ``down_s`` lasts the group's session timeout and this long: the
coordinator has given the cut member's partitions to the others before the heal."""

CONSUMER_FAULTS: tuple[str, ...] = ("kill-consumer", "leave-consumer", "cut-consumer")

CONTROLLER_FAULTS: tuple[str, ...] = ("sigkill-controller", "sigterm-controller",
                                      "sigstop-controller")
"""Faults of the node that leads the KRaft controller quorum (the active controller): on
the lab's combined nodes it is a broker too, so the trial also sees what that broker's
partitions did. Only a cluster with a controller quorum can take them."""
"""Faults of a consumer-group member, not of a broker (seed 002)."""

COMMITS: tuple[str, ...] = ("auto", "after", "before")
"""Commit strategies of the group's members: ``auto`` (the client commits what it handed
to the application every ``auto_commit_interval_ms``), ``after`` (commit a batch after
processing it: at-least-once), ``before`` (commit a batch before processing it:
at-most-once)."""

CommitName = Literal["auto", "after", "before"]

REBALANCES: dict[str, str] = {
    "eager": "the classic group protocol with the range assignor: every member gives up every "
             "partition at each rebalance (the clients' default)",
    "cooperative": "the classic protocol with the cooperative-sticky assignor (KIP-429, Kafka "
                   "2.4): only the partitions that move are given up, over two rebalances",
    "consumer": "KIP-848's consumer group protocol (Kafka 4.0): the broker assigns, members learn "
                "of a change at their next heartbeat (confluent-kafka only)",
}
"""How a consumer fault's group rebalances, a cell each (``--rebalance``)."""

RebalanceName = Literal["eager", "cooperative", "consumer"]

SESSION_TIMEOUT_MS_RANGE = (1000, 30000)
"""Session timeouts the lab's brokers accept (``group.min.session.timeout.ms`` = 1000 in the
embedded cluster, ``group.max.session.timeout.ms`` = 30000, Kafka 0.9's default)."""

REBALANCE_MARGIN_S = 6.0
"""A consumer fault's schedule must go on at least this long after the group can have noticed
(the session timeout for a kill, at once for a leave), so the trial sees the successor read."""

FAULT_HELP = {
    "none": "no fault: the control (must show 0 lost, 0 duplicates)",
    "sigkill-leader": "SIGKILL the partition leader (a crash); restart it after down_s",
    "sigterm-leader": "SIGTERM the leader (controlled shutdown moves leadership first); restart after down_s",
    "sigstop-leader": "SIGSTOP the leader for down_s, longer than the fault cluster's broker session "
                      "(KRaft's broker.session.timeout.ms, 9 s): a zombie leader; then SIGCONT",
    "kill-follower": "SIGKILL one in-sync follower; restart it after down_s",
    "lossy-leader-crash": "SIGSTOP both followers for down_s while the leader keeps taking writes, then SIGKILL "
                          "the leader and SIGCONT the followers (restart the leader 3 s later): acks=1 loses "
                          "what only the leader had; acks=all must not",
    "sigkill-controller": "SIGKILL the node leading the KRaft controller quorum; time until "
                          "another node leads it; restart it after down_s",
    "sigterm-controller": "SIGTERM the active controller's node (a clean shutdown); time until "
                          "another node leads the quorum; restart it after down_s",
    "sigstop-controller": "SIGSTOP the active controller's node for down_s (longer than the "
                          "quorum's 2 s fetch timeout: the others elect a new leader); then SIGCONT",
    "partition-leader": "cut the partition leader's replication and controller links to every other "
                        "node for down_s while clients still reach it (a network partition: the "
                        "controllers fence it after broker.session.timeout.ms and elect another "
                        "leader; acks=1 writes it takes meanwhile are truncated at the heal)",
    "isolate-leader": "cut every link of the partition leader, clients' included, for down_s (the "
                      "node is unreachable but alive); then heal",
    "clients-cut-from-leader": "cut the clients' links to the partition leader for down_s while it "
                               "still reaches its followers and the quorum (it stays the leader: "
                               "the producer and consumer wait, time out and retry); then heal",
    "kill-consumer": "SIGKILL one member of a consumer group (its partitions move after the session "
                     "timeout); count what the group processed twice or never, per --commit",
    "cut-consumer": "cut every link of one member of a consumer group for down_s (default: the "
                    "session timeout + 4 s) while it keeps running: its partitions move once "
                    "the coordinator stops hearing it, it rejoins after the heal; count what "
                    "the group processed twice or never, per --commit",
    "leave-consumer": "one member of a consumer group closes cleanly (LeaveGroup: its partitions move "
                      "at once); count what the group processed twice or never, per --commit",
}

DEFAULT_DOWN_S = {"none": 0.0, "sigkill-leader": 4.0, "sigterm-leader": 4.0,
                  "sigstop-leader": FAULT_CLUSTER.broker_session_timeout_s + 2.0,
                  "kill-follower": 4.0, "lossy-leader-crash": 2.0,
                  "kill-consumer": 0.0, "leave-consumer": 0.0, "cut-consumer": 0.0,
                  "sigkill-controller": 6.0, "sigterm-controller": 4.0,
                  "sigstop-controller": 6.0,
                  "partition-leader": FAULT_CLUSTER.broker_session_timeout_s + 8.0,
                  "isolate-leader": FAULT_CLUSTER.broker_session_timeout_s + 8.0,
                  "clients-cut-from-leader": 6.0}
"""How long the fault lasts before it is healed, by fault (sigstop: 2 s beyond the fault
cluster's broker session — KRaft's ``broker.session.timeout.ms`` of 9 s, Kafka 0.9's
ZooKeeper session of 6 s — so the controller elects a new leader; a cut leader's links 8 s
beyond it: when the cut node also leads the controller quorum, the others first elect a new
active controller, whose broker session timer then starts afresh — seen: 5 s to the new
controller, so a cut of 11 s healed before anyone fenced the old leader — and the trial
still sees the new leader take writes before the heal)."""

LOSSY_RESTART_AFTER_S = 3.0
"""lossy-leader-crash: the killed leader is started again this long after the kill."""

RECOVERY_MARGIN_S = 4.0
"""The schedule must go on at least this long after the heal, so the trial sees acks resume."""

NEEDS_FOLLOWER = ("kill-follower", "lossy-leader-crash")


MAX_TRIALS = 50
"""Trials of one profile × fault × acks cell a fault run may ask for (each takes ~30 s)."""

class FaultTrialSpec(BaseModel):
    """One trial: a profile, a fault, a rate and a timeline."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    profile: str = "durability"
    fault: FaultName = "sigkill-leader"
    acks: Literal["0", "1", "all"] | None = None
    """Overrides the profile's ``producer.acks`` (None: the profile's)."""
    trial: int = Field(1, ge=1)
    rate_msgs_per_s: float = Field(500.0, gt=0, le=20_000)
    duration_s: float = Field(20.0, gt=0, le=3600)
    """The whole producing schedule, warm-up included."""
    warmup_s: float = Field(2.0, ge=0)
    fault_at_s: float = Field(6.0, ge=0)
    """When the fault starts, seconds after the schedule's start."""
    down_s: float | None = Field(None, ge=0)
    """How long the fault lasts (None: :data:`DEFAULT_DOWN_S` of the fault)."""
    payload: str = "1kb"
    partitions: int = Field(1, ge=1, le=16)
    client: Literal["confluent-kafka", "kafka-python"] = "confluent-kafka"
    message_timeout_s: float = Field(30.0, gt=0)
    """How long the producer keeps a message before calling it indeterminate (librdkafka's
    ``message.timeout.ms``): longer than the longest outage, so an outage shows as delay."""
    max_in_flight: int | None = Field(None, ge=1, le=5)
    """Overrides the profile's ``producer.max_in_flight`` (None: the profile's): 1 keeps order
    through retries, 5 may reorder under a leader failover (seed 002)."""
    idempotence: bool | None = None
    """Overrides the profile's ``enable.idempotence`` for the trial's producer (None: the
    profile's, else the lab's off): on, a retry after a lost response cannot write a
    duplicate or reorder (KIP-98, Kafka 0.11); it needs acks=all."""
    txn_msgs: int | None = Field(None, ge=1, le=100_000)
    """The producer sends in transactions of this many records and the live consumer reads
    ``read_committed`` (:attr:`kafkalab.load.spec.LoadCellSpec.txn_msgs`); the checker
    re-reads both ``read_committed`` and ``read_uncommitted``. Broker faults only; None: no
    transactions."""
    txn_abort_every: int | None = Field(None, ge=2, le=1000)
    """With ``txn_msgs``: every k-th transaction is aborted after its records were written."""
    # -- consumer faults only -------------------------------------------------------------
    commit: CommitName | None = None
    """The group's commit strategy (consumer faults; None there means ``after``)."""
    consumers: int = Field(3, ge=2, le=12)
    """Members of the consumer group (consumer faults)."""
    session_timeout_ms: int | None = Field(None, ge=SESSION_TIMEOUT_MS_RANGE[0],
                                           le=SESSION_TIMEOUT_MS_RANGE[1])
    """The members' ``session.timeout.ms`` (None: the profile's ``consumer.session_timeout_ms``)."""
    heartbeat_interval_ms: int | None = Field(None, ge=100)
    """The members' ``heartbeat.interval.ms`` (None: a third of the session timeout)."""
    auto_commit_interval_ms: int = Field(5000, ge=100)
    """``auto.commit.interval.ms`` of the ``auto`` strategy (the clients' default, 5 s)."""
    batch_msgs: int = Field(100, ge=1, le=10_000)
    """A member processes (and, for after/before, commits) records in batches of up to this
    many."""
    batch_wait_ms: int = Field(100, ge=1, le=60_000)
    """... or what arrived within this long of the batch's first record."""
    rejoin_after_s: float | None = Field(None, gt=0)
    """The failed member comes back (a new process, same group) this long after the fault."""
    static_membership: bool | None = None
    """Static membership (KIP-345, Kafka 2.3): each member has a ``group.instance.id`` of its
    own, kept by a member that comes back, so its return within the session timeout causes
    no rebalance (and a static member leaving sends no LeaveGroup). None: off, as before."""
    rebalance: RebalanceName | None = None
    """How the group rebalances (:data:`REBALANCES`). The session timeout and heartbeat
    interval are the same under every value: the classic protocol's are the members' own, the
    consumer protocol's are set on the group (``consumer.session.timeout.ms``,
    ``consumer.heartbeat.interval.ms``). None: the clients' default, ``eager``, as before."""
    victim_dies_after_records: int | None = Field(None, ge=0)
    """Test hook for exact counts: instead of being killed from outside, the victim kills
    itself (SIGKILL) right after processing this many records of the first batch it takes at
    or after ``fault_at_s``: before that batch's commit (after), after it (before)."""

    @field_validator("acks", mode="before")
    @classmethod
    def _acks_as_text(cls, value: object) -> object:
        return acks_as_text(value)

    @model_validator(mode="after")
    def _timeline(self) -> FaultTrialSpec:
        consumer_only = {"commit": self.commit, "rejoin_after_s": self.rejoin_after_s,
                         "victim_dies_after_records": self.victim_dies_after_records,
                         "static_membership": self.static_membership,
                         "rebalance": self.rebalance}
        if self.is_consumer_fault and self.txn_msgs is not None:
            raise ValueError(f"txn_msgs applies to the broker faults, not to {self.fault} (the "
                             "group's members do not read transactionally)")
        if self.txn_abort_every is not None and self.txn_msgs is None:
            raise ValueError("txn_abort_every aborts transactions: give txn_msgs too")
        if not self.is_consumer_fault:
            given = [k for k, v in consumer_only.items() if v is not None]
            if given:
                raise ValueError(f"{given[0]} applies to the consumer faults "
                                 f"({', '.join(CONSUMER_FAULTS)}), not to {self.fault}")
        else:
            if self.partitions < self.consumers:
                raise ValueError(f"partitions={self.partitions} is fewer than the group's "
                                 f"{self.consumers} consumers: a member would have nothing to "
                                 "lose (give at least one partition per consumer)")
            if self.rebalance == "consumer" and self.client == "kafka-python":
                raise ValueError("rebalance=consumer: kafka-python has no KIP-848 consumer "
                                 "protocol (confluent-kafka has; kafka-python does eager and "
                                 "cooperative)")
            if self.victim_dies_after_records is not None and self.fault != "kill-consumer":
                raise ValueError("victim_dies_after_records is a kill: use it with kill-consumer")
            if self.fault == "cut-consumer" and self.down_s == 0:
                raise ValueError("down_s=0: a cut of 0 s cuts nothing (leave it out: the "
                                 "session timeout + 4 s)")
            if self.rejoin_after_s is not None and self.fault == "cut-consumer":
                raise ValueError("rejoin_after_s starts a new process of the member: a cut "
                                 "member is still running and rejoins at the heal (down_s)")
            if (self.victim_dies_after_records is not None
                    and self.victim_dies_after_records > self.batch_msgs):
                raise ValueError(f"victim_dies_after_records={self.victim_dies_after_records} is "
                                 f"more than a batch (batch_msgs={self.batch_msgs})")
            if self.heartbeat_interval_ms is not None and self.session_timeout_ms is not None \
                    and self.heartbeat_interval_ms >= self.session_timeout_ms:
                raise ValueError(f"heartbeat_interval_ms={self.heartbeat_interval_ms} must be "
                                 f"shorter than session_timeout_ms={self.session_timeout_ms}")
        if self.fault_at_s < self.warmup_s:
            raise ValueError(f"fault_at_s={self.fault_at_s:g} is inside the warm-up "
                             f"(warmup_s={self.warmup_s:g})")
        end = self.fault_at_s + self.effective_down_s + RECOVERY_MARGIN_S
        if self.fault == "lossy-leader-crash":
            end += LOSSY_RESTART_AFTER_S
        if self.fault != "none" and not self.is_consumer_fault and self.duration_s < end:
            raise ValueError(
                f"duration_s={self.duration_s:g} is too short for {self.fault} at "
                f"{self.fault_at_s:g} s lasting {self.effective_down_s:g} s: it needs at least "
                f"{end:g} s, so the trial sees the cluster recover")
        if self.duration_s <= self.warmup_s:
            raise ValueError(f"duration_s={self.duration_s:g} must be longer than the warm-up")
        return self

    @property
    def is_consumer_fault(self) -> bool:
        return self.fault in CONSUMER_FAULTS

    @property
    def is_controller_fault(self) -> bool:
        return self.fault in CONTROLLER_FAULTS

    @property
    def is_link_fault(self) -> bool:
        """The fault cuts the partition leader's links (:data:`LINK_FAULTS`)."""
        return self.fault in LINK_FAULTS

    @property
    def needs_links(self) -> bool:
        """The fault cluster needs degradable links for it (:data:`LINKED_FAULTS`)."""
        return self.fault in LINKED_FAULTS

    def cut_s(self, session_ms: int) -> float:
        """How long ``cut-consumer`` cuts its member: ``down_s``, else the session timeout
        and :data:`CUT_BEYOND_SESSION_S`."""
        return self.down_s if self.down_s is not None else session_ms / 1000 + CUT_BEYOND_SESSION_S

    @property
    def effective_commit(self) -> str | None:
        """The commit strategy of a consumer fault (``after`` unless given); None otherwise."""
        return (self.commit or "after") if self.is_consumer_fault else None

    def effective_session_timeout_ms(self, profile_ms: int) -> int:
        return self.session_timeout_ms if self.session_timeout_ms is not None else profile_ms

    def effective_heartbeat_ms(self, session_ms: int) -> int:
        return (self.heartbeat_interval_ms if self.heartbeat_interval_ms is not None
                else max(100, session_ms // 3))

    def check_group_timeline(self, session_ms: int) -> None:
        """Refuse a consumer fault whose schedule ends before the group can have moved the
        victim's partitions (and, with ``rejoin_after_s``, taken the member back).

        Raises:
            ValueError: naming the shortest duration that works.
        """
        if not self.is_consumer_fault:
            return
        end = group_duration_s(self.fault, self.fault_at_s, session_ms, self.rejoin_after_s,
                               self.down_s)
        if self.duration_s < end:
            raise ValueError(
                f"duration_s={self.duration_s:g} is too short for {self.fault} at "
                f"{self.fault_at_s:g} s with a {session_ms} ms session timeout: it needs at "
                f"least {end:g} s, so the trial sees the successor read")

    @property
    def effective_down_s(self) -> float:
        """``down_s``, or the fault's default."""
        return self.down_s if self.down_s is not None else DEFAULT_DOWN_S[self.fault]

    def effective_acks(self, profile_acks: str) -> str:
        return self.acks if self.acks is not None else profile_acks

    def trial_id(self, profile_acks: str) -> str:
        """The trial's directory name: ``<profile>-<fault>-acks-<a>-t<k>``; a consumer fault
        adds ``-commit-<strategy>`` after the fault (and ``-static``/``-dynamic``, ``-<rebalance>``
        when given), a client other than confluent-kafka and
        a ``max_in_flight`` and an ``idempotence`` override and a transaction size
        (``-txn<n>``, ``-abort<k>``) add theirs before the trial number."""
        commit = f"-commit-{self.effective_commit}" if self.is_consumer_fault else ""
        client = "-kafka-python" if self.client == "kafka-python" else ""
        mif = f"-mif{self.max_in_flight}" if self.max_in_flight is not None else ""
        idem = "" if self.idempotence is None else (
            "-idem-on" if self.idempotence else "-idem-off")
        static = "" if self.static_membership is None else (
            "-static" if self.static_membership else "-dynamic")
        rebalance = "" if self.rebalance is None else f"-{self.rebalance}"
        txn = "" if self.txn_msgs is None else f"-txn{self.txn_msgs}"
        if self.txn_abort_every is not None:
            txn += f"-abort{self.txn_abort_every}"
        return safe_name(f"{self.profile}-{self.fault}{commit}{static}{rebalance}-acks-"
                         f"{self.effective_acks(profile_acks)}{client}{mif}{idem}{txn}"
                         f"-t{self.trial}")

    def load_cell(self) -> LoadCellSpec:
        """The load cell the trial runs: one producer, one live consumer (assign mode); a
        broker fault's confluent-kafka producer (the control's too) watches its own view of
        the leader (``watch_leader``)."""
        return LoadCellSpec(client=self.client, payload=self.payload, profile=self.profile,
                            acks=self.acks, consumers=1, rate_msgs_per_s=self.rate_msgs_per_s,
                            duration_s=self.duration_s, warmup_s=self.warmup_s,
                            partitions=self.partitions, drain_s=10.0,
                            message_timeout_s=self.message_timeout_s, trial=self.trial,
                            lag_interval_s=0.5, max_in_flight=self.max_in_flight,
                            idempotence=self.idempotence, txn_msgs=self.txn_msgs,
                            txn_abort_every=self.txn_abort_every,
                            watch_leader=(not self.is_consumer_fault
                                          and self.client == "confluent-kafka"))


def group_duration_s(fault: str, fault_at_s: float, session_ms: int,
                     rejoin_after_s: float | None = None, down_s: float | None = None) -> float:
    """The shortest schedule in which a consumer fault at ``fault_at_s`` shows the successor
    reading: past the session timeout for a kill, and past the rejoin if any (for a cut, the
    heal: ``down_s``, else the session timeout and :data:`CUT_BEYOND_SESSION_S`)."""
    notice_s = session_ms / 1000 if fault == "kill-consumer" else 0.0
    if fault == "cut-consumer":
        notice_s = down_s if down_s is not None else session_ms / 1000 + CUT_BEYOND_SESSION_S
    end = fault_at_s + notice_s + REBALANCE_MARGIN_S
    if rejoin_after_s is not None:
        end = max(end, fault_at_s + rejoin_after_s + REBALANCE_MARGIN_S)
    return end


class FaultPlan(BaseModel):
    """What one fault run measures, as ``kafkalab faults run``'s options, the
    ``resilience_experiment`` form or the nightly's fault trial give it: every profile ×
    fault (× commit strategy × membership × rebalance protocol, for a consumer fault) × acks
    × client × idempotence × max in flight cell, ``trials`` times, with the settings every
    trial shares.

    An empty list is the default (acks, idempotence and max in flight: the profile's;
    clients: confluent-kafka; commit strategies: ``after``), a None setting the trial's
    default (:class:`FaultTrialSpec`), with two rules of the planner's own:

    - ``duration_s`` None: 20 s, and for a consumer fault at least the shortest schedule
      that shows the successor reading (:func:`group_duration_s`: the fault, the session
      timeout (``session_timeout_ms``, else the profile's), 6 s more, and the rejoin). A
      default the engine would refuse is no default: a kill under the profiles' 10 s session
      timeout needs 22 s.
    - ``partitions`` None: 1, and for a consumer fault two per group member.

    Only the grid's shape is checked here; every value is validated once, by
    :class:`FaultTrialSpec`, in :func:`plan_trials`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    profiles: list[str] = Field(min_length=1)
    faults: list[str] = Field(min_length=1)
    acks: list[str | int] = Field(default_factory=list)
    max_in_flight: list[int] = Field(default_factory=list)
    idempotence: list[bool] = Field(default_factory=list)
    """The producer's idempotence, a cell each (empty: the profile's)."""
    clients: list[str] = Field(default_factory=list)
    """The producer's and the group members' client, a cell each (empty: confluent-kafka)."""
    commits: list[str] = Field(default_factory=list)
    """The consumer faults' commit strategies (broker faults have none)."""
    static_membership: list[bool] = Field(default_factory=list)
    """The consumer faults' group membership, static or dynamic, a cell each (empty:
    dynamic; broker faults have none)."""
    rebalance: list[str] = Field(default_factory=list)
    """The consumer faults' rebalance protocols (:data:`REBALANCES`), a cell each (empty: the
    clients' default, eager)."""
    txn_msgs: list[int] = Field(default_factory=list)
    """Records per transaction, a cell each; 0 is the plain producer (empty: no transactions;
    broker faults only)."""
    txn_abort_every: int | None = None
    """Every transactional cell aborts every k-th transaction (None: none)."""
    trials: int = Field(1, ge=1, le=MAX_TRIALS)
    rate_msgs_per_s: float | None = None
    duration_s: float | None = None
    warmup_s: float | None = None
    fault_at_s: float | None = None
    down_s: float | None = None
    payload: str | None = None
    partitions: int | None = None
    # -- consumer faults only ---------------------------------------------------------------
    consumers: int | None = None
    session_timeout_ms: int | None = None
    heartbeat_interval_ms: int | None = None
    auto_commit_interval_ms: int | None = None
    batch_msgs: int | None = None
    rejoin_after_s: float | None = None

    @model_validator(mode="after")
    def _abort_needs_transactions(self) -> FaultPlan:
        check_txn_axis(self.txn_msgs, self.txn_abort_every)
        return self


_SHARED = ("rate_msgs_per_s", "warmup_s", "fault_at_s", "down_s", "payload")
"""The :class:`FaultPlan` settings every trial takes as they are."""

_GROUP = ("consumers", "session_timeout_ms", "heartbeat_interval_ms", "auto_commit_interval_ms",
          "batch_msgs", "rejoin_after_s")
"""The settings only a consumer fault's trials take."""


def _default(field: str) -> Any:
    return FaultTrialSpec.model_fields[field].default


def broker_fault_duration_s(fault: str, fault_at_s: float | None = None,
                            down_s: float | None = None) -> float:
    """A broker fault's default schedule: the trial's default duration, or longer when the
    fault, its heal and :data:`RECOVERY_MARGIN_S` of recovery need it (a sigstop on KRaft:
    21 s; a cut leader: 23 s)."""
    duration_s: float = _default("duration_s")
    at = fault_at_s if fault_at_s is not None else _default("fault_at_s")
    down = down_s if down_s is not None else DEFAULT_DOWN_S.get(fault, 0.0)
    extra = LOSSY_RESTART_AFTER_S if fault == "lossy-leader-crash" else 0.0
    return max(duration_s, at + down + RECOVERY_MARGIN_S + extra)


def _duration_s(plan: FaultPlan, profile: str, fault: str) -> float:
    """A trial's schedule: ``plan.duration_s``, else the rule of :class:`FaultPlan`."""
    if plan.duration_s is not None:
        return plan.duration_s
    duration_s: float = _default("duration_s")
    fault_at_s = plan.fault_at_s if plan.fault_at_s is not None else _default("fault_at_s")
    if fault not in CONSUMER_FAULTS:
        return broker_fault_duration_s(fault, fault_at_s, plan.down_s)
    session_ms = plan.session_timeout_ms
    if session_ms is None:
        from kafkalab.config.loader import load_profile

        session_ms = load_profile(profile).consumer.session_timeout_ms
    return max(duration_s, group_duration_s(fault, fault_at_s, session_ms, plan.rejoin_after_s,
                                            plan.down_s))


def _cells(plan: FaultPlan) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Every cell of the plan, in order: ``(coordinates, the trial's fields)``."""
    shared = {k: getattr(plan, k) for k in _SHARED if getattr(plan, k) is not None}
    group = {k: getattr(plan, k) for k in _GROUP if getattr(plan, k) is not None}
    acks: list[str | int | None] = [*plan.acks] or [None]
    in_flight: list[int | None] = [*plan.max_in_flight] or [None]
    idempotence: list[bool | None] = [*plan.idempotence] or [None]
    clients: list[str | None] = [*plan.clients] or [None]
    txns: list[int | None] = [t or None for t in plan.txn_msgs] or [None]
    for profile in plan.profiles:
        for fault in plan.faults:
            consumer_fault = fault in CONSUMER_FAULTS
            commits: list[str | None] = [*(plan.commits or ["after"])] if consumer_fault else [None]
            statics: list[bool | None] = ([*plan.static_membership] or [None]) if consumer_fault \
                else [None]
            rebalances: list[str | None] = ([*plan.rebalance] or [None]) if consumer_fault \
                else [None]
            partitions = plan.partitions
            if partitions is None and consumer_fault:
                partitions = 2 * int(group.get("consumers", _default("consumers")))
            fields = {**shared, "profile": profile, "fault": fault,
                      "duration_s": _duration_s(plan, profile, fault),
                      **({} if partitions is None else {"partitions": partitions}),
                      **(group if consumer_fault else {})}
            cell_txns = [None] if consumer_fault else txns
            for commit, static, rebalance, a, client, idem, mif, txn in itertools.product(
                    commits, statics, rebalances, acks, clients, idempotence, in_flight,
                    cell_txns):
                coords = {"profile": profile, "fault": fault, "commit": commit,
                          "static_membership": static, "rebalance": rebalance, "acks": a,
                          "client": client,
                          "idempotence": idem, "max_in_flight": mif, "txn_msgs": txn}
                abort = ({"txn_abort_every": plan.txn_abort_every}
                         if txn is not None and plan.txn_abort_every is not None else {})
                yield coords, {**fields, **abort,
                               **{k: v for k, v in coords.items() if v is not None}}


def _trial(coords: dict[str, Any], fields: dict[str, Any], trial: int) -> FaultTrialSpec:
    try:
        return FaultTrialSpec(**fields, trial=trial)
    except ValidationError as exc:
        raise PlanRefused(exc, {**coords, "trial": trial}) from None


def plan_trials(plan: FaultPlan) -> list[FaultTrialSpec]:
    """The trials of ``plan``, in the order they run: trial by trial — every cell's trial 1,
    then every cell's trial 2, … — so a slow drift of the machine (heat, page cache, a
    neighbour) spreads over the cells instead of landing on the last one, and a run cut
    short still has a trial of every cell. Within a round: profiles, then faults, then a
    consumer fault's commit strategies, then acks, clients, idempotence, max in flight,
    transaction size inner.

    Raises:
        PlanRefused: the first trial :class:`FaultTrialSpec` refuses, with its coordinates.
        ConfigError: a consumer fault's profile that does not exist (its session timeout
            sets the default duration).
    """
    cells = [(coords, fields, _trial(coords, fields, 1)) for coords, fields in _cells(plan)]
    trials = [first for _, _, first in cells]
    for k in range(2, plan.trials + 1):
        trials += [_trial(coords, fields, k) for coords, fields, _ in cells]
    return trials
