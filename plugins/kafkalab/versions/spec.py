"""What a version matrix measures (:class:`MatrixSpec`), validated once here.

A matrix is a list of Kafka versions (the first is the baseline every other is judged
against), a number of rounds, one load cell's settings (:class:`kafkalab.load.spec.
LoadCellSpec`: the same workload on every version) and, each round, the first-message delay
of new consumers (:class:`MatrixStartup`: start-up cases of :mod:`kafkalab.startup`, on
fresh clusters of the version, before the round's load cell) and, when asked for, the
maximum sustainable rate (:class:`MatrixMaxRate`: :mod:`kafkalab.load.maxrate`'s search,
after the cell, on its cluster) and broker-fault trials (:class:`MatrixFaults`:
:mod:`kafkalab.faults`' trials on a fresh 3-broker cluster of the version, last in the
round). Each version must be one an embedded
flavor runs (:func:`kafkalab.cluster.flavors.flavor_for_version`: a pinned Kafka 4.x release
of the KRaft flavor, or the legacy broker's 0.9.0.1); a cell a version's broker cannot take
(a feature it lacks) is refused before anything starts.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kafkalab.load.spec import LoadCellSpec

__all__ = ["DEFAULT_BASE_PORT", "DEFAULT_CONTROL_PORT", "MAX_ROUNDS", "MatrixFaults",
           "MatrixMaxRate", "MatrixSpec", "MatrixStartup", "round_order"]

MAX_ROUNDS = 20
"""Rounds one matrix may ask for."""

DEFAULT_BASE_PORT = 19892
"""The broker port of the matrix's clusters (one runs at a time): apart from the lab's
cluster (19292), the fault cluster (19392-19394), the start-up runs' (19492) and the
SASL_SSL listeners (19792)."""

DEFAULT_CONTROL_PORT = 19992
"""The controller (KRaft) or ZooKeeper (Kafka 0.9) port of the matrix's clusters."""


class MatrixStartup(BaseModel):
    """The first-message delay measured each round (start-up cases with the cell's client)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trials: int = Field(1, ge=0, le=10)
    """Trials of every case each round (0: no first-message delay in the matrix)."""
    protocols: list[str] = Field(default_factory=lambda: ["classic", "consumer"], min_length=1)
    """``group.protocol`` values of the subscribe cases (KIP-848's ``consumer`` is listed as
    unsupported where the broker or the client lacks it: a series only some versions have)."""
    delays_ms: list[int] = Field(default_factory=lambda: [0], min_length=1)
    """The broker's ``group.initial.rebalance.delay.ms`` values (0 runs on every version;
    Kafka 0.9 has no such setting)."""
    members: list[int] = Field(default_factory=lambda: [1], min_length=1)


class MatrixMaxRate(BaseModel):
    """The maximum sustainable rate searched each round (:func:`kafkalab.load.maxrate.
    find_max_rate`: the cell's client, payload, profile, acks, partitions and consumers; its
    pass rule), after the round's cell on the same fresh cluster."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    enabled: bool = False
    start_rate: float | None = Field(None, gt=0, le=1_000_000)
    """The search's first rate (default the cell's rate)."""
    step_duration_s: float = Field(6.0, ge=2.0, le=120.0)
    """Each step's cell, its warm-up (the cell's ``warmup_s``) included."""
    objective_p99_ms: float = Field(100.0, gt=0)
    repeats: int = Field(1, ge=0, le=5)
    """Repeats of the found rate, each must pass (0: the search's last pass is reported)."""
    max_steps: int = Field(14, ge=1, le=40)
    """Steps of the bracketing search (the repeats and the 1.1× check come on top)."""


class MatrixFaults(BaseModel):
    """Broker-fault trials each round (:class:`kafkalab.faults.spec.FaultTrialSpec`: the
    cell's client and payload; the fault's own profile, rate and schedule)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    trials: int = Field(0, ge=0, le=10)
    """Trials each round (0: no fault figures in the matrix)."""
    fault: str = "sigkill-leader"
    """A broker fault of :mod:`kafkalab.faults` (``sigkill-leader``, ``sigstop-leader``, …)."""
    profile: str = "durability"
    rate_msgs_per_s: float = Field(500.0, gt=0, le=20_000)
    duration_s: float | None = Field(None, gt=0, le=3600)
    """Each trial's schedule (None: the fault's own default, :func:`kafkalab.faults.spec.
    broker_fault_duration_s`: 20 s, or longer when the fault and its heal need it)."""


class MatrixSpec(BaseModel):
    """One version matrix: ``versions`` × ``rounds`` measurements of ``cell``."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    versions: list[str] = Field(min_length=2, max_length=6)
    """Kafka versions, the baseline first (``4.1.2,4.4.0``; ``0.9.0.1`` the legacy point)."""
    rounds: int = Field(3, ge=1, le=MAX_ROUNDS)
    """Each version is measured this many times, each time on a fresh cluster."""
    cell: LoadCellSpec
    """The workload: one load cell (its ``trial`` is set per round)."""
    startup: MatrixStartup = Field(default_factory=MatrixStartup)
    """The first-message delay measured each round (``trials`` 0: none)."""
    max_rate: MatrixMaxRate = Field(default_factory=MatrixMaxRate)
    """The maximum sustainable rate searched each round (off unless ``enabled``)."""
    faults: MatrixFaults = Field(default_factory=MatrixFaults)
    """Broker-fault trials each round (``trials`` 0: none)."""
    base_port: int = Field(DEFAULT_BASE_PORT, ge=1024, le=65000)
    control_port: int = Field(DEFAULT_CONTROL_PORT, ge=1024, le=65000)

    @field_validator("versions")
    @classmethod
    def _known_versions(cls, versions: list[str]) -> list[str]:
        from kafkalab.cluster.flavors import flavor_for_version

        if len(set(versions)) != len(versions):
            raise ValueError(f"{','.join(versions)} repeats a version")
        for v in versions:
            flavor_for_version(v)  # ConfigError: a version no embedded flavor runs
        return versions

    @model_validator(mode="after")
    def _cell(self) -> MatrixSpec:
        if self.cell.trial:
            raise ValueError("cell.trial is the round's: leave it 0")
        if self.base_port == self.control_port:
            raise ValueError("base_port and control_port must differ")
        from kafkalab.startup.spec import MAX_TRIALS

        if self.max_rate.enabled and self.max_rate.step_duration_s <= self.cell.warmup_s:
            raise ValueError(f"max_rate.step_duration_s ({self.max_rate.step_duration_s:g} s) "
                             f"must exceed the cell's warm-up ({self.cell.warmup_s:g} s)")
        if self.faults.trials:
            from pydantic import ValidationError

            from kafkalab.yamlio import describe_validation_error

            try:
                self.fault_trials(1)  # a trial the fault engine refuses, refused now
            except ValidationError as exc:
                text = describe_validation_error(exc).removeprefix("(top level): ")
                raise ValueError(f"faults: {text}") from None
        if self.startup.trials * self.rounds > MAX_TRIALS:
            raise ValueError(f"startup.trials × rounds is at most {MAX_TRIALS} start-up "
                             f"trials a version, got {self.startup.trials} × {self.rounds}")
        return self

    def round_cell(self, round_no: int) -> LoadCellSpec:
        """The cell of round ``round_no`` (1-based): the workload with ``trial`` = the round."""
        return self.cell.model_copy(update={"trial": round_no})

    def cells(self) -> list[LoadCellSpec]:
        """Every round's cell, as each version's load run plans them."""
        return [self.round_cell(k) for k in range(1, self.rounds + 1)]

    def startup_spec(self) -> Any:
        """The start-up spec of each version's start-up run (all rounds' trials; the cell's
        client), before the broker's features narrow it (None when ``startup.trials`` is 0).

        Raises:
            ConfigError: settings the start-up experiment refuses, named.
        """
        from kafkalab.startup.spec import StartupSpec

        st = self.startup
        if not st.trials:
            return None
        return StartupSpec(clients=(self.cell.client,), delays_ms=tuple(st.delays_ms),
                           protocols=tuple(st.protocols), members=tuple(st.members),
                           trials=st.trials * self.rounds)

    def fault_trials(self, round_no: int) -> list[Any]:
        """Round ``round_no``'s fault trials (:class:`~kafkalab.faults.spec.FaultTrialSpec`),
        numbered on across the rounds (round k: trials (k−1)·T+1 … k·T); none when
        ``faults.trials`` is 0.

        Raises:
            ValueError: settings the fault engine refuses (a pydantic error, named).
        """
        from kafkalab.faults.spec import FaultTrialSpec, broker_fault_duration_s

        f, per = self.faults, self.faults.trials
        duration_s = f.duration_s if f.duration_s is not None else \
            broker_fault_duration_s(f.fault)
        return [FaultTrialSpec(profile=f.profile, fault=f.fault,  # type: ignore[arg-type]
                               rate_msgs_per_s=f.rate_msgs_per_s, duration_s=duration_s,
                               payload=self.cell.payload, client=self.cell.client,
                               trial=(round_no - 1) * per + k)
                for k in range(1, per + 1)]

    def all_fault_trials(self) -> list[Any]:
        """Every round's fault trials (what each version's fault run plans)."""
        return [t for k in range(1, self.rounds + 1) for t in self.fault_trials(k)]

    def summary(self) -> dict[str, Any]:
        """The spec as the matrix file records it."""
        return self.model_dump(mode="json")


def round_order(versions: list[str], rounds: int) -> list[tuple[int, str]]:
    """``(round, version)`` in the order they run: the versions in order in odd rounds and
    reversed in even ones (A B, B A, A B …), so a slow drift of the machine over the matrix
    (heat, a neighbour, the page cache) weighs on every version alike instead of on the last
    one measured."""
    out: list[tuple[int, str]] = []
    for k in range(1, rounds + 1):
        order = versions if k % 2 else list(reversed(versions))
        out += [(k, v) for v in order]
    return out
