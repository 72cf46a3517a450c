"""What one load cell measures (:class:`LoadCellSpec`), the one planner of a load run's
cells (:class:`LoadPlan`, :func:`plan_cells`), load workloads from YAML
(:class:`LoadWorkload`), and the client budget that refuses a cell the machine cannot carry.

A load cell is one open-loop, fixed-rate producer fanning out to ``consumers`` consumers
(seed 003's HYDRA) for ``duration_s`` seconds, the first ``warmup_s`` of which are warm-up
(recorded, excluded from every figure). Validated once here; everything downstream trusts it.

``kafkalab load`` (:mod:`kafkalab.cli.load`), the ``load_experiment`` DAG
(:func:`kafkalab.airflow.load_tasks.load_cells`) and a load workload's sweep
(:meth:`LoadWorkload.cells`) all plan their cells with :func:`plan_cells`, so the same grid
gives the same cells in the same order wherever it comes from.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kafkalab.config.models import acks_as_text
from kafkalab.errors import ConfigError
from kafkalab.store import safe_name
from kafkalab.yamlio import describe_validation_error

LOAD_CLIENTS = ("confluent-kafka", "kafka-python")
"""Producers (and consumers) the load engine drives."""

MAX_CONSUMERS = 1000
"""More consumers than this in one cell is refused outright (seed 003's sweep stops at 500)."""

DELIVERIES_PER_CLIENT_CORE_PER_S = 20_000.0
"""Deliveries per second (records handed to the lab's consumers, 1 KB) that one core beyond
the first carries on this kind of machine, with the embedded broker sharing it. Measured with
``kafkalab load`` on the 2-core machine (docs/load.md, "CPU and the client budget"): 10
consumers × 2,000 msg/s kept up (host 95 % busy, the broker using 0.95 of a core to serve the
fetches), 25 × 500 still kept up, 25 × 2,000 fell behind (rx min 1,470 msg/s, e2e p50 0.4 s).
The budget check scales it by the cores available to clients (all but one)."""

SINGLE_CONSUMER_DELIVERIES_PER_CORE_PER_S = 60_000.0
"""The same for a cell with one consumer: records come in large fetches and the broker serves
one fetcher, so a delivery costs a third as much (``make bench``, part load: one harness
consumer at 20,000 msg/s, 59-62 k deliveries per consumer core second, e2e p50 2.1-2.4 ms)."""

PRODUCER_MSGS_PER_S_MAX = 120_000.0
"""The harness producer's measured ceiling back to back (1 KB, acks=1, linger 5 ms: 125-172 k
msg/s over three ``make bench`` runs, part ``load``): a higher target rate cannot be honoured
by one producer process and is refused."""

MAX_RATE_MSGS_PER_S = 1_000_000.0
"""The highest target rate a cell may name (far above what one producer sends,
:data:`PRODUCER_MSGS_PER_S_MAX`, which the budget check then refuses with the reason)."""

MAX_GRID_VALUES = 50
"""The most values one axis of a load grid (consumers, rates) may list."""

MAX_TXN_MSGS = 100_000
"""The most records one transaction may hold (``txn_msgs``)."""

MAX_DURATION_S = 3600.0
"""The longest cell (warm-up included) and drain: one hour."""

MAX_INTENDED_MESSAGES = 20_000_000
"""The most messages one cell's schedule holds (the producer keeps ~40 bytes of timing per
message in memory: ~800 MB at this bound)."""

BUDGET_ENV = "KAFKALAB_LOAD_BUDGET_DELIVERIES_PER_S"
"""Environment override of the whole deliveries-per-second budget (a bigger client host)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class LoadCellSpec(_Strict):
    """One load cell: a producer at ``rate_msgs_per_s`` → ``consumers`` consumers."""

    client: Literal["confluent-kafka", "kafka-python"] = "confluent-kafka"
    payload: str = "1kb"
    encoding: Literal["raw", "base64"] = "raw"
    profile: str = "default"
    acks: Literal["0", "1", "all"] | None = None
    """Overrides the profile's ``producer.acks`` (None: the profile's)."""
    max_in_flight: int | None = Field(None, ge=1, le=5)
    """Overrides the profile's ``producer.max_in_flight`` (None: the profile's)."""
    idempotence: bool | None = None
    """Overrides the profile's ``producer_properties`` ``enable.idempotence`` for both clients
    (None: the profile's, else the lab's off)."""
    txn_msgs: int | None = Field(None, ge=1, le=MAX_TXN_MSGS)
    """Transactions (KIP-98, Kafka 0.11): the producer sends in transactions of this many
    records (begun before a transaction's first record, committed right after its last one is
    handed to the client), and the consumers read ``read_committed``. A record is ``acked``
    when its transaction's commit returned, so its ack latency runs from its send to that
    commit. None: no transactions."""
    txn_abort_every: int | None = Field(None, ge=2, le=1000)
    """With ``txn_msgs``: every k-th transaction (the k-th, 2k-th, …) is aborted instead of
    committed, after its records were written to the log (a flush first), so the log holds
    aborted records a ``read_committed`` reader must never see (outcome ``aborted``)."""
    consumers: int = Field(1, ge=1, le=MAX_CONSUMERS)
    rate_msgs_per_s: float = Field(100.0, gt=0, le=MAX_RATE_MSGS_PER_S)
    duration_s: float = Field(10.0, gt=0, le=MAX_DURATION_S)
    """Total length of the producing schedule, warm-up included."""
    warmup_s: float = Field(2.0, ge=0)
    partitions: int = Field(1, ge=1, le=64)
    consumer_mode: Literal["assign", "group"] = "assign"
    """assign: every consumer assigns every partition, no group (default); group: one
    consumer group per consumer (each still receives every message)."""
    consumers_per_shard: int = Field(10, ge=1, le=200)
    """Consumers per consumer process (threads in one process)."""
    drain_s: float = Field(5.0, ge=0, le=MAX_DURATION_S)
    """After the producer stops, how long consumers may still catch up (bounded)."""
    pause_at_s: float | None = Field(None, ge=0)
    pause_for_s: float | None = Field(None, gt=0)
    lag_interval_s: float = Field(1.0, gt=0, le=60)
    e2e_p99_objective_ms: float = Field(1000.0, gt=0)
    """The workload's latency objective (the maximum-rate search's pass criterion)."""
    message_timeout_s: float = Field(30.0, gt=0, le=3600)
    """How long the producer waits for its last acks before calling them indeterminate."""
    trial: int = Field(0, ge=0)
    """Repeat number of an otherwise identical cell (maxrate's repeats, fault trials)."""
    slow_consumer: int | None = Field(None, ge=0)
    """Fault injection: the index of one consumer that sleeps ``slow_consumer_ms_per_record``
    after each record (a client that cannot keep up; it must end up ``failing``)."""
    slow_consumer_ms_per_record: float = Field(0.0, ge=0, le=60_000)
    link_delay_ms: float | None = Field(None, ge=0, le=10_000)
    """One-way delay (ms) put on every replication link between the cluster's nodes while
    the cell measures (``--link-delay-ms``; a cluster started with ``cluster up --links``):
    what a replica in another zone costs. None: the links are left as they are; 0: the
    cell runs on the proxied links with nothing added (the curve's baseline)."""
    client_link_delay_ms: float | None = Field(None, ge=0, le=10_000)
    """The clients sit in the rack of one follower of partition 0 (its *near* node, chosen
    when the cell starts): their links to every other node are delayed this much one way
    while the cell measures (``--client-link-delay-ms``; a cluster started with ``--links``,
    where every node is a rack of its own). None: the clients' links are left as they are."""
    fetch_from_follower: bool = False
    """The consumers name the near node's rack (``client.rack``), so the brokers' rack-aware
    replica selector serves them from that follower instead of the leader (KIP-392,
    ``--fetch-from follower``); needs ``client_link_delay_ms``."""
    thin_consumer: int | None = Field(None, ge=0)
    """HYDRA on a thin pipe: the index of one consumer bootstrapped to the cluster's ``solo``
    plane (:mod:`kafkalab.cluster.links.layout`), so every link it has goes through proxies
    of its own and ``thin_link_kbps`` / ``thin_link_delay_ms`` degrade its link alone while
    the others keep theirs (``--thin-consumer``; a cluster started with ``--links``). None:
    every consumer on the shared client links."""
    thin_link_kbps: int | None = Field(None, ge=1, le=10_000_000)
    """The thin consumer's link carries at most this many KB/s each way while the cell
    measures (None: no bandwidth limit)."""
    thin_link_delay_ms: float | None = Field(None, gt=0, le=10_000)
    """The thin consumer's link is delayed this much one way while the cell measures (None:
    no delay added)."""
    watch_leader: bool = False
    """The producer (confluent-kafka) records its own view of partition 0's leader from
    librdkafka's statistics every 100 ms (``cell.json``'s ``producer_leader_view``): when the
    client learned of a new leader. Set by the fault engine; not part of the cell id."""
    seq_header: bool = False
    """Each record carries a header named ``kafkalab.seq.<seq>`` (empty value): set by a
    fault trial on brokers whose logs keep no per-record CRC (Kafka 0.11 and later), so that
    Kafka's DumpLogSegments, which prints header keys, can tell which records a log holds
    (:data:`kafkalab.load.producer.SEQ_HEADER_PREFIX`)."""

    @model_validator(mode="after")
    def _follower_needs_a_near_node(self) -> LoadCellSpec:
        if self.fetch_from_follower and self.client_link_delay_ms is None:
            raise ValueError("fetching from the follower (fetch_from follower) reads from the "
                             "clients' near follower: give a client link delay too "
                             "(client_link_delay_ms, 0: the links as they are)")
        return self

    @model_validator(mode="after")
    def _whole_milliseconds(self) -> LoadCellSpec:
        for name in ("link_delay_ms", "client_link_delay_ms", "thin_link_delay_ms"):
            value = getattr(self, name)
            if value is not None and value != int(value):
                raise ValueError(f"{name}={value:g}: the link proxies delay whole "
                                 "milliseconds (Toxiproxy's unit); give a whole number")
        return self

    @model_validator(mode="after")
    def _thin_link_needs_its_consumer(self) -> LoadCellSpec:
        thin = self.thin_link_kbps is not None or self.thin_link_delay_ms is not None
        if thin and self.thin_consumer is None:
            raise ValueError("a thin link (thin_link_kbps, thin_link_delay_ms) is one "
                             "consumer's: name it with thin_consumer")
        if self.thin_consumer is not None and self.thin_consumer >= self.consumers:
            raise ValueError(f"thin_consumer={self.thin_consumer} is not one of the "
                             f"{self.consumers} consumers (0-based)")
        if self.thin_consumer is not None and self.client_link_delay_ms is not None:
            raise ValueError("thin_consumer and client_link_delay_ms: the thin consumer's links "
                             "are its own, not the clients' beside a follower; measure them "
                             "in cells of their own")
        if self.thin_consumer is not None and self.consumers < 2:
            raise ValueError("thin_consumer: a thin pipe is measured against the others on "
                             "theirs; give at least 2 consumers")
        return self

    @field_validator("acks", mode="before")
    @classmethod
    def _acks_as_text(cls, value: object) -> object:
        return acks_as_text(value)

    @model_validator(mode="after")
    def _consistent(self) -> LoadCellSpec:
        from kafkalab.payloads import payload_names

        if self.payload not in payload_names():
            raise ValueError(f"unknown payload {self.payload!r} (known: {', '.join(payload_names())})")
        if self.duration_s <= self.warmup_s:
            raise ValueError(f"duration_s={self.duration_s:g} must be longer than the warm-up "
                             f"(warmup_s={self.warmup_s:g}): nothing would be measured")
        if (self.pause_at_s is None) != (self.pause_for_s is None):
            raise ValueError("pause_at_s and pause_for_s go together")
        if self.pause_at_s is not None and self.pause_at_s >= self.duration_s:
            raise ValueError(f"pause_at_s={self.pause_at_s:g} is after the end of the run "
                             f"(duration_s={self.duration_s:g})")
        if self.slow_consumer is not None and self.slow_consumer >= self.consumers:
            raise ValueError(f"slow_consumer={self.slow_consumer} is not one of the "
                             f"{self.consumers} consumers (0-based)")
        if self.txn_abort_every is not None and self.txn_msgs is None:
            raise ValueError("txn_abort_every aborts transactions: give txn_msgs too")
        if self.txn_msgs is not None and self.idempotence is False:
            raise ValueError("txn_msgs: a transactional producer is idempotent (KIP-98); "
                             "idempotence off cannot go with transactions")
        if self.intended_messages > MAX_INTENDED_MESSAGES:
            raise ValueError(f"rate {self.rate_msgs_per_s:g} msg/s × {self.duration_s:g} s is "
                             f"{self.intended_messages:,} messages, more than one cell holds "
                             f"({MAX_INTENDED_MESSAGES:,}): lower the rate or the duration")
        if self.measured_messages < 1:
            raise ValueError(f"rate {self.rate_msgs_per_s:g} msg/s × {self.window_s:g} s "
                             "measures no message")
        return self

    @property
    def window_s(self) -> float:
        """The measured window: the schedule after the warm-up."""
        return self.duration_s - self.warmup_s

    @property
    def intended_messages(self) -> int:
        """Messages in the schedule (warm-up included): message i is due at t0 + i/R."""
        return max(1, round(self.rate_msgs_per_s * self.duration_s))

    @property
    def warmup_messages(self) -> int:
        return min(round(self.rate_msgs_per_s * self.warmup_s), self.intended_messages - 1)

    @property
    def measured_messages(self) -> int:
        return self.intended_messages - self.warmup_messages

    @property
    def interval_ns(self) -> float:
        """The send interval 1/R in ns."""
        return 1e9 / self.rate_msgs_per_s

    @property
    def shards(self) -> int:
        """Consumer processes: ``ceil(consumers / consumers_per_shard)``."""
        return math.ceil(self.consumers / self.consumers_per_shard)

    def shard_consumers(self, shard: int) -> list[int]:
        """Global consumer indexes of one shard (consumers are dealt in contiguous blocks)."""
        per = math.ceil(self.consumers / self.shards)
        return list(range(shard * per, min(self.consumers, (shard + 1) * per)))

    def effective_acks(self, profile_acks: str) -> str:
        return self.acks if self.acks is not None else profile_acks

    def cell_id(self, profile_acks: str) -> str:
        """The cell's directory name: every setting that makes it a different experiment."""
        acks = self.effective_acks(profile_acks)
        pause = (f".pause{self.pause_at_s:g}-{self.pause_for_s:g}"
                 if self.pause_at_s is not None else "")
        mode = ".group" if self.consumer_mode == "group" else ""
        trial = f".t{self.trial}" if self.trial else ""
        slow = f".slow{self.slow_consumer}" if self.slow_consumer is not None else ""
        mif = f".mif{self.max_in_flight}" if self.max_in_flight is not None else ""
        idem = "" if self.idempotence is None else (".idem-on" if self.idempotence
                                                     else ".idem-off")
        txn = "" if self.txn_msgs is None else f".txn{self.txn_msgs}"
        if self.txn_abort_every is not None:
            txn += f"-abort{self.txn_abort_every}"
        link = "" if self.link_delay_ms is None else f".link{self.link_delay_ms:g}ms"
        if self.client_link_delay_ms is not None:
            link += f".near{self.client_link_delay_ms:g}ms"
        if self.fetch_from_follower:
            link += ".ffollower"
        if self.thin_consumer is not None:
            link += f".thin{self.thin_consumer}"
            if self.thin_link_kbps is not None:
                link += f"-{self.thin_link_kbps}kBps"
            if self.thin_link_delay_ms is not None:
                link += f"-{self.thin_link_delay_ms:g}ms"
        return safe_name(f"{self.client}.{self.payload}.{self.profile}.acks-{acks}{mif}{idem}{txn}."
                         f"c{self.consumers}.r{self.rate_msgs_per_s:g}.p{self.partitions}"
                         f"{link}{mode}{pause}{slow}{trial}")


class LoadWorkload(_Strict):
    """A load sweep from ``include/workloads/*.yaml`` (``kind: load``): consumers × rates
    (× acks × payloads) with one set of cell settings."""

    kind: Literal["load"]
    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    description: str = ""
    consumers: list[int] = Field(min_length=1)
    rates_msgs_per_s: list[float] = Field(min_length=1)
    acks: list[Literal["0", "1", "all"]] = Field(default_factory=lambda: ["1"])  # type: ignore[arg-type]
    payloads: list[str] = Field(default_factory=lambda: ["1kb"])
    profile: str = "default"
    client: Literal["confluent-kafka", "kafka-python"] = "confluent-kafka"
    duration_s: float = 10.0
    warmup_s: float = 2.0
    partitions: int = 1
    consumers_per_shard: int = 10
    drain_s: float = 5.0
    e2e_p99_objective_ms: float = 1000.0
    for_real_cluster: bool = False
    """True for sweeps sized for a real cluster (seed 003's 500 consumers): the budget check
    refuses their big cells on a small machine, by design."""

    @field_validator("acks", mode="before")
    @classmethod
    def _acks_as_text(cls, value: object) -> object:
        return [acks_as_text(v) for v in value] if isinstance(value, list) else value

    def plan(self) -> LoadPlan:
        """The sweep as a :class:`LoadPlan`."""
        return LoadPlan(consumers=self.consumers, rates_msgs_per_s=self.rates_msgs_per_s,
                        acks=list(self.acks), payloads=self.payloads, client=self.client,
                        profile=self.profile, duration_s=self.duration_s,
                        warmup_s=self.warmup_s, partitions=self.partitions,
                        consumers_per_shard=self.consumers_per_shard, drain_s=self.drain_s,
                        e2e_p99_objective_ms=self.e2e_p99_objective_ms)

    def cells(self) -> list[LoadCellSpec]:
        """Every cell of the sweep, in the order they run (:func:`plan_cells`)."""
        return plan_cells(self.plan())


class PlanRefused(ConfigError):
    """A cell (or a fault trial) of a plan that its model refused.

    ``error`` is pydantic's; ``cell`` the plan's coordinates of the refused one (``payload``,
    ``acks``, ``consumers``, ``rate_msgs_per_s``; a trial's ``profile``, ``fault``, ``commit``,
    ``acks``, ``max_in_flight``, ``trial``). Its text is the first problem as ``field:
    message``; the CLI and the Airflow tasks word it under their own name for the field (an
    option, a param)."""

    def __init__(self, error: ValidationError, cell: Mapping[str, Any]) -> None:
        super().__init__(describe_validation_error(error))
        self.error = error
        self.cell = dict(cell)


class LoadPlan(_Strict):
    """What one load run measures: the grid ``payloads × acks × consumers × rates`` and the
    settings every cell shares, as ``kafkalab load``'s options, the ``load_experiment`` form
    or a load workload give them.

    An empty ``payloads`` is the cell's default payload, an empty ``acks`` the profile's, a
    None setting the cell's default (:class:`LoadCellSpec`). Only the grid's shape is checked
    here; every value is validated once, by :class:`LoadCellSpec`, in :func:`plan_cells`.
    """

    consumers: list[int] = Field(min_length=1, max_length=MAX_GRID_VALUES)
    rates_msgs_per_s: list[float] = Field(min_length=1, max_length=MAX_GRID_VALUES)
    acks: list[str | int] = Field(default_factory=list)
    """``0``, ``1`` or ``all`` (empty: the profile's)."""
    payloads: list[str] = Field(default_factory=list)
    txn_msgs: list[int] = Field(default_factory=list, max_length=MAX_GRID_VALUES)
    """Records per transaction, a cell each; 0 is the plain (non-transactional) producer
    (empty: no transactions)."""
    txn_abort_every: int | None = None
    link_delay_ms: list[float] = Field(default_factory=list, max_length=MAX_GRID_VALUES)
    """One-way replication-link delays, a cell each (empty: the links are not touched)."""
    client_link_delay_ms: list[float] = Field(default_factory=list, max_length=MAX_GRID_VALUES)
    """One-way delays on the clients' links to every node but their near follower, a cell
    each (empty: the clients' links are not touched)."""
    fetch_from: list[Literal["leader", "follower"]] = Field(default_factory=list, max_length=2)
    """Where the consumers read, a cell each (``follower``: the near one, by ``client.rack``);
    empty: the leader."""
    thin_consumer: int | None = None
    thin_link_kbps: int | None = None
    thin_link_delay_ms: float | None = None
    client: str | None = None
    encoding: str | None = None
    profile: str | None = None
    duration_s: float | None = None
    warmup_s: float | None = None
    partitions: int | None = None
    consumer_mode: str | None = None
    consumers_per_shard: int | None = None
    drain_s: float | None = None
    pause_at_s: float | None = None
    pause_for_s: float | None = None
    e2e_p99_objective_ms: float | None = None

    @model_validator(mode="after")
    def _abort_needs_transactions(self) -> LoadPlan:
        check_txn_axis(self.txn_msgs, self.txn_abort_every)
        return self


def check_txn_axis(txn_msgs: list[int], txn_abort_every: int | None) -> None:
    """Refuse a plan that aborts transactions without a transaction size (the load and the
    fault plans).

    Raises:
        ValueError: ``txn_abort_every`` given, and no size in ``txn_msgs`` but 0.
    """
    if txn_abort_every is not None and not any(txn_msgs):
        raise ValueError("txn_abort_every aborts transactions: give txn_msgs too (a size "
                         "other than 0)")


_GRID = ("consumers", "rates_msgs_per_s", "acks", "payloads", "txn_msgs", "link_delay_ms",
         "client_link_delay_ms", "fetch_from")
"""The fields of :class:`LoadPlan` that span the grid (the others are every cell's)."""


def plan_cells(plan: LoadPlan) -> list[LoadCellSpec]:
    """The cells of ``plan``, in the order they run: payloads, then acks, then transaction
    sizes, then link delays, then consumers, rates inner (a sweep that overloads the machine
    fails at its end).

    Raises:
        PlanRefused: the first cell :class:`LoadCellSpec` refuses, with its coordinates.
    """
    shared = {k: v for k, v in plan.model_dump(exclude=set(_GRID)).items() if v is not None}
    payloads: list[str | None] = [*plan.payloads] or [None]
    acks_list: list[str | int | None] = [*plan.acks] or [None]
    txns: list[int | None] = [t or None for t in plan.txn_msgs] or [None]
    delays: list[float | None] = [*plan.link_delay_ms] or [None]
    client_delays: list[float | None] = [*plan.client_link_delay_ms] or [None]
    reads: list[bool | None] = [f == "follower" for f in plan.fetch_from] or [None]
    near = list(itertools.product(client_delays, reads))
    cells = []
    for payload, acks, txn, delay, (client_delay, follower), consumers, rate in itertools.product(
            payloads, acks_list, txns, delays, near, plan.consumers, plan.rates_msgs_per_s):
        grid = {"payload": payload, "acks": acks, "txn_msgs": txn, "link_delay_ms": delay,
                "client_link_delay_ms": client_delay, "fetch_from_follower": follower,
                "consumers": consumers, "rate_msgs_per_s": rate}
        cell = {**shared, **{k: v for k, v in grid.items() if v is not None}}
        if txn is None:
            cell.pop("txn_abort_every", None)  # the plain producer's cell aborts nothing
        try:
            cells.append(LoadCellSpec(**cell))
        except ValidationError as exc:
            raise PlanRefused(exc, grid) from None
    return cells


def deliveries_budget_per_s(cpu_count: int | None = None, consumers: int = 2) -> tuple[float, str]:
    """The deliveries per second the client side of this machine can measure honestly, and
    where the figure comes from. One core is left to the producer and the broker; a cell
    with one consumer gets the single-consumer figure."""
    override = os.environ.get(BUDGET_ENV)
    if override:
        try:
            return float(override), f"${BUDGET_ENV}"
        except ValueError:
            raise ConfigError(f"{BUDGET_ENV}={override!r} is not a number") from None
    cores = max(1, (cpu_count or os.cpu_count() or 1) - 1)
    per_core = (SINGLE_CONSUMER_DELIVERIES_PER_CORE_PER_S if consumers == 1
                else DELIVERIES_PER_CLIENT_CORE_PER_S)
    kind = "one consumer" if consumers == 1 else "fan-out"
    return (per_core * cores, f"{per_core:,.0f}/s per client core ({kind}, measured) × {cores} core(s)")


def check_budget(spec: LoadCellSpec, wire_bytes: int, cpu_count: int | None = None) -> None:
    """Refuse, before it runs, a cell whose deliveries would saturate the measuring clients
    (it would measure the harness, not Kafka).

    Raises:
        ConfigError: one line naming the cell, its demand and the budget.
    """
    budget, source = deliveries_budget_per_s(cpu_count, spec.consumers)
    # Large messages cost the client per byte, not per record: count every 64 KiB as one
    # more delivery (a 1 MB record weighs ~16 small ones).
    weight = max(1.0, wire_bytes / 65536)
    demand = spec.consumers * spec.rate_msgs_per_s * weight
    if demand > budget:
        raise ConfigError(
            f"cell {spec.consumers} consumers × {spec.rate_msgs_per_s:g} msg/s ({spec.payload}) "
            f"needs ~{demand:,.0f} deliveries/s; this machine's client budget is {budget:,.0f}/s "
            f"({source}); lower the rate or the consumers, or set {BUDGET_ENV} for a bigger "
            "client host")
    if spec.rate_msgs_per_s * weight > PRODUCER_MSGS_PER_S_MAX:
        raise ConfigError(f"rate {spec.rate_msgs_per_s:g} msg/s ({spec.payload}) is above what one "
                          f"producer process sends (~{PRODUCER_MSGS_PER_S_MAX:,.0f}/s, make bench)")
