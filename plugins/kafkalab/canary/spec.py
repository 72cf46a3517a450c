"""The canary's settings, validated once at the edge (the CLI builds a :class:`CanarySpec`).

Every duration carries its unit in its name. The defaults suit a production cluster (one
record per partition per second); the tests run faster intervals on the lab's own cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["DEFAULT_METRICS_PORT", "DEFAULT_TOPIC", "CanarySpec"]

DEFAULT_TOPIC = "kafkalab-canary"
"""The canary's own topic (one partition led by each broker)."""

DEFAULT_METRICS_PORT = 9464
"""The ``/metrics`` port by default (bound to 127.0.0.1 unless ``metrics_address`` says)."""


class CanarySpec(BaseModel):
    """What one canary process does (docs/canary.md, "Settings")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    topic: str = Field(DEFAULT_TOPIC, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._-]+$")
    interval_ms: int = Field(1000, ge=10, le=600_000)
    """One record per partition every ``interval_ms``, on a fixed schedule."""
    record_bytes: int = Field(100, ge=32, le=1_000_000)
    """The size of each record's value (its stamp, then padding)."""
    acks: Literal["all", "1"] = "all"
    """``all`` (with the idempotent producer) or ``1``."""
    replication_factor: int | None = Field(None, ge=1)
    """Of a topic the canary creates (default: min(3, brokers))."""
    produce_timeout_ms: int = Field(5000, ge=1000)
    """librdkafka's ``message.timeout.ms``: a record not acked by then failed."""
    consume_deadline_ms: int = Field(5000, ge=100)
    """A record counts as consumed in time when read by its intended time + this."""
    lost_after_s: float = Field(60.0, ge=5.0)
    """An acked record not read by its intended time + this is lost (and forgotten)."""
    warmup_s: float = Field(5.0, ge=0.0)
    """Records intended in the first ``warmup_s`` are sent and read but counted apart
    (``warmup_records``), out of every figure: the clients' first connections, the idempotent
    producer's id and the consumer's first fetches are not the cluster's steady state."""
    topic_check_s: float = Field(30.0, ge=1.0)
    """How often the brokers are re-checked for one that leads no canary partition."""
    report_interval_s: float = Field(10.0, ge=1.0)
    """How often ``summary.json`` is rewritten and an interval histogram is logged."""
    metrics_address: str = "127.0.0.1"
    metrics_port: int = Field(DEFAULT_METRICS_PORT, ge=0, le=65535)
    """0: no HTTP endpoint (the figures still go to ``summary.json``)."""
    out_dir: Path
    """Where ``summary.json`` (and the HdrHistogram log) go."""
    hdr_log: bool = False
    """Also write each interval's histograms to ``<out_dir>/latency.hlog``."""
    duration_s: float | None = Field(None, gt=0)
    """Stop after this long (tests, one-off checks); None: until SIGTERM or Ctrl-C."""

    @model_validator(mode="after")
    def _deadlines(self) -> CanarySpec:
        if self.lost_after_s * 1000 <= self.produce_timeout_ms:
            raise ValueError("lost_after_s must be longer than produce_timeout_ms: a record's "
                             "send has an outcome before it can be lost")
        if self.lost_after_s * 1000 <= self.consume_deadline_ms:
            raise ValueError("lost_after_s must be longer than consume_deadline_ms: a record is "
                             "late before it is lost")
        return self

    @property
    def settle_ms(self) -> int:
        """How long after its receipt a record waits before its latency is filed: long
        enough for a leader change that delayed it to be seen (:mod:`kafkalab.canary.book`)."""
        return 2 * self.stats_interval_ms + 200

    @property
    def stats_interval_ms(self) -> int:
        """librdkafka's ``statistics.interval.ms``: how fast the producer's view of each
        partition's leader is sampled."""
        return max(100, min(1000, self.interval_ms))
