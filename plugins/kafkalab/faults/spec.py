"""What one fault trial does (:class:`FaultTrialSpec`), validated once here.

A trial is one open-loop, fixed-rate load cell (one producer, one live consumer) on a fresh
topic of the 3-broker fault cluster, with one fault injected at ``fault_at_s`` and healed
``down_s`` later (:mod:`kafkalab.faults.inject`), then checked by re-reading the topic
(:mod:`kafkalab.faults.checker`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kafkalab.config.models import acks_as_text
from kafkalab.load.spec import LoadCellSpec
from kafkalab.store import safe_name

__all__ = ["DEFAULT_DOWN_S", "FAULTS", "FAULT_HELP", "RECOVERY_MARGIN_S", "FaultTrialSpec"]

FaultName = Literal["none", "sigkill-leader", "sigterm-leader", "sigstop-leader",
                    "kill-follower", "lossy-leader-crash"]

FAULTS: tuple[str, ...] = ("none", "sigkill-leader", "sigterm-leader", "sigstop-leader",
                           "kill-follower", "lossy-leader-crash")
"""Every fault a trial can inject (``none`` is the no-fault control)."""

FAULT_HELP = {
    "none": "no fault: the control (must show 0 lost, 0 duplicates)",
    "sigkill-leader": "SIGKILL the partition leader (a crash); restart it after down_s",
    "sigterm-leader": "SIGTERM the leader (controlled shutdown moves leadership first); restart after down_s",
    "sigstop-leader": "SIGSTOP the leader for down_s, longer than ZooKeeper's 6 s session: a zombie leader; then SIGCONT",
    "kill-follower": "SIGKILL one in-sync follower; restart it after down_s",
    "lossy-leader-crash": "SIGSTOP both followers for down_s while the leader keeps taking writes, then SIGKILL "
                          "the leader and SIGCONT the followers (restart the leader 3 s later): acks=1 loses "
                          "what only the leader had; acks=all must not",
}

DEFAULT_DOWN_S = {"none": 0.0, "sigkill-leader": 4.0, "sigterm-leader": 4.0,
                  "sigstop-leader": 8.0, "kill-follower": 4.0, "lossy-leader-crash": 2.0}
"""How long the fault lasts before it is healed, by fault (sigstop: beyond the brokers'
``zookeeper.session.timeout.ms`` of 6 s, so the controller elects a new leader)."""

LOSSY_RESTART_AFTER_S = 3.0
"""lossy-leader-crash: the killed leader is started again this long after the kill."""

RECOVERY_MARGIN_S = 4.0
"""The schedule must go on at least this long after the heal, so the trial sees acks resume."""

NEEDS_FOLLOWER = ("kill-follower", "lossy-leader-crash")


class FaultTrialSpec(BaseModel):
    """One trial: a profile, a fault, a rate and a timeline."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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

    @field_validator("acks", mode="before")
    @classmethod
    def _acks_as_text(cls, value: object) -> object:
        return acks_as_text(value)

    @model_validator(mode="after")
    def _timeline(self) -> FaultTrialSpec:
        if self.fault_at_s < self.warmup_s:
            raise ValueError(f"fault_at_s={self.fault_at_s:g} is inside the warm-up "
                             f"(warmup_s={self.warmup_s:g})")
        end = self.fault_at_s + self.effective_down_s + RECOVERY_MARGIN_S
        if self.fault == "lossy-leader-crash":
            end += LOSSY_RESTART_AFTER_S
        if self.fault != "none" and self.duration_s < end:
            raise ValueError(
                f"duration_s={self.duration_s:g} is too short for {self.fault} at "
                f"{self.fault_at_s:g} s lasting {self.effective_down_s:g} s: it needs at least "
                f"{end:g} s, so the trial sees the cluster recover")
        if self.duration_s <= self.warmup_s:
            raise ValueError(f"duration_s={self.duration_s:g} must be longer than the warm-up")
        return self

    @property
    def effective_down_s(self) -> float:
        """``down_s``, or the fault's default."""
        return self.down_s if self.down_s is not None else DEFAULT_DOWN_S[self.fault]

    def effective_acks(self, profile_acks: str) -> str:
        return self.acks if self.acks is not None else profile_acks

    def trial_id(self, profile_acks: str) -> str:
        """The trial's directory name: ``<profile>-<fault>-acks-<a>-t<k>``."""
        return safe_name(f"{self.profile}-{self.fault}-acks-{self.effective_acks(profile_acks)}"
                         f"-t{self.trial}")

    def load_cell(self) -> LoadCellSpec:
        """The load cell the trial runs: one producer, one live consumer (assign mode)."""
        return LoadCellSpec(client=self.client, payload=self.payload, profile=self.profile,
                            acks=self.acks, consumers=1, rate_msgs_per_s=self.rate_msgs_per_s,
                            duration_s=self.duration_s, warmup_s=self.warmup_s,
                            partitions=self.partitions, drain_s=10.0,
                            message_timeout_s=self.message_timeout_s, trial=self.trial,
                            lag_interval_s=0.5)
