"""The drift rules: ``include/drift.yaml`` validated into typed settings.

Each metric that is checked has a :class:`MetricRule`; thresholds it leaves out come from
:class:`DriftDefaults` (including ``recovery_runs``: how many consecutive good runs end an
alert); :meth:`DriftConfig.rule` gives the :class:`ResolvedRule` the
detection (:mod:`kafkalab.drift.detect`) applies. :class:`AlertSettings` holds the alert
de-duplication margin (:mod:`kafkalab.alerts`), :class:`BusyHostRule` when a cell counts as
measured on a busy host. The file's keys are documented in
``docs/drift-and-alerts.md``; its default location is :func:`kafkalab.paths.drift_config_path`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kafkalab.errors import ConfigError
from kafkalab.paths import drift_config_path
from kafkalab.yamlio import parse_model, read_yaml

Direction = Literal["higher_is_worse", "lower_is_worse"]
"""Which way a metric gets worse."""


class DriftDefaults(BaseModel):
    """Default thresholds, used for every metric that does not override them."""

    model_config = ConfigDict(extra="forbid")

    window_runs: int = Field(default=7, ge=1)
    min_baseline_runs: int = Field(default=3, ge=1)
    k_mad: float = Field(default=3.0, gt=0)
    min_relative_change: float = Field(default=0.2, ge=0)
    min_absolute_change: float = Field(default=0.0, ge=0)
    recovery_runs: int = Field(default=3, ge=1)


class MetricRule(BaseModel):
    """Per-metric settings; any threshold left out falls back to :class:`DriftDefaults`."""

    model_config = ConfigDict(extra="forbid")

    direction: Direction = "higher_is_worse"
    window_runs: int | None = Field(default=None, ge=1)
    min_baseline_runs: int | None = Field(default=None, ge=1)
    k_mad: float | None = Field(default=None, gt=0)
    min_relative_change: float | None = Field(default=None, ge=0)
    min_absolute_change: float | None = Field(default=None, ge=0)
    recovery_runs: int | None = Field(default=None, ge=1)


class ResolvedRule(BaseModel):
    """A metric's rule with every threshold filled in."""

    model_config = ConfigDict(frozen=True)

    metric: str
    direction: Direction
    window_runs: int
    min_baseline_runs: int
    k_mad: float
    min_relative_change: float
    min_absolute_change: float
    recovery_runs: int


class BusyHostRule(BaseModel):
    """When a cell counts as measured on a busy host (``busy_host`` in the drift config;
    figures of :mod:`kafkalab.host`, rule applied by :mod:`kafkalab.drift.busy`).

    A cell is busy when *any* set limit is reached: other processes' CPU
    (``host_other_cpu_pct``, percent of all cores' capacity over the cell's window), the
    hypervisor's steal (``steal_pct``), or the run queue per core (``run_queue_avg`` /
    ``cpu_count``; off by default: it is read at two instants, not integrated). A busy cell
    is kept out of every baseline and is never judged (verdict ``busy_host``); ``enabled:
    false`` judges every cell as before."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    max_other_cpu_pct: float | None = Field(default=30.0, ge=0, le=100)
    max_steal_pct: float | None = Field(default=10.0, ge=0, le=100)
    max_run_queue_per_cpu: float | None = Field(default=None, ge=0)


class AlertSettings(BaseModel):
    """Settings of the alert de-duplication (see :mod:`kafkalab.alerts`)."""

    model_config = ConfigDict(extra="forbid")

    worsen_margin_pct: float = Field(default=10.0, ge=0)


def _default_metrics() -> dict[str, MetricRule]:
    """The shipped metrics (as in ``include/drift.yaml``). The message rate is left out: in
    a closed loop it is about 1 / mean latency, the same cause as the latency metrics."""
    return {
        "e2e_latency_ms_p50": MetricRule(),
        "e2e_latency_ms_p99": MetricRule(min_relative_change=0.25),
        "publish_latency_ms_p99": MetricRule(min_relative_change=0.25),
        "first_message_subscribe_ms": MetricRule(),
        "lost_count": MetricRule(min_absolute_change=0.0),
    }


def _default_load_metrics() -> dict[str, MetricRule]:
    """The shipped load-cell metrics (as in ``include/drift.yaml``, columns of
    ``aggregates/load/run_id=<id>/load_cells.parquet``)."""
    return {
        "e2e_p99_ms": MetricRule(min_relative_change=0.25),
        "service_e2e_p99_ms": MetricRule(min_relative_change=0.25),
        "publish_delay_p99_ms": MetricRule(min_relative_change=0.25),
        "achieved_rate_msgs_per_s": MetricRule(direction="lower_is_worse",
                                               min_relative_change=0.05),
        "rx_rate_msgs_per_s_avg": MetricRule(direction="lower_is_worse",
                                             min_relative_change=0.05),
        "loss_pct": MetricRule(min_absolute_change=0.0),
    }


class DriftConfig(BaseModel):
    """The validated content of ``include/drift.yaml``: ``metrics`` are judged on the
    latency cells' aggregates, ``load_metrics`` on the load cells' (``load_cells``)."""

    model_config = ConfigDict(extra="forbid")

    defaults: DriftDefaults = Field(default_factory=DriftDefaults)
    metrics: dict[str, MetricRule] = Field(default_factory=_default_metrics)
    load_metrics: dict[str, MetricRule] = Field(default_factory=_default_load_metrics)
    alerts: AlertSettings = Field(default_factory=AlertSettings)
    busy_host: BusyHostRule = Field(default_factory=BusyHostRule)

    def metrics_of(self, kind: str) -> dict[str, MetricRule]:
        """The metrics judged for a kind of run (its :attr:`kafkalab.kinds.RunKind.drift_metrics`:
        ``latency`` -> ``metrics``, ``load`` -> ``load_metrics``); none for a kind drift
        does not judge (``faults``)."""
        from kafkalab.kinds import run_kind

        field = run_kind(kind).drift_metrics
        rules: dict[str, MetricRule] = getattr(self, field) if field else {}
        return rules

    def rule(self, metric: str) -> ResolvedRule:
        """Return the rule of ``metric`` (from ``metrics``, else ``load_metrics``) with
        defaults filled in."""
        m = self.metrics[metric] if metric in self.metrics else self.load_metrics[metric]
        d = self.defaults

        def pick(name: str) -> Any:
            value = getattr(m, name)
            return getattr(d, name) if value is None else value

        return ResolvedRule(
            metric=metric,
            direction=m.direction,
            window_runs=pick("window_runs"),
            min_baseline_runs=pick("min_baseline_runs"),
            k_mad=pick("k_mad"),
            min_relative_change=pick("min_relative_change"),
            min_absolute_change=pick("min_absolute_change"),
            recovery_runs=pick("recovery_runs"),
        )


def parse_drift_config(data: Mapping[str, Any] | None, source: str = "drift config") -> DriftConfig:
    """Validate a mapping (the parsed YAML) into a :class:`DriftConfig`.

    Raises:
        ConfigError: naming the offending key, e.g. ``metrics.lost_count.k_mad``.
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: expected a mapping at the top level, "
                          f"got {type(data).__name__}")
    return parse_model(DriftConfig, dict(data), source)


def load_drift_config(path: str | os.PathLike[str] | None = None) -> DriftConfig:
    """Load and validate the drift config YAML at ``path`` (default: :func:`kafkalab.paths.drift_config_path`).

    Raises:
        ConfigError: the file is missing, is not YAML, or has a bad key or value.
    """
    p = Path(path) if path is not None else drift_config_path()
    return parse_drift_config(read_yaml(p), source=str(p))


def load_drift_config_or_default(path: str | os.PathLike[str] | None = None) -> DriftConfig:
    """Like :func:`load_drift_config`, but built-in defaults when the default file
    (:func:`kafkalab.paths.drift_config_path`: ``$KAFKALAB_DRIFT_CONFIG`` or
    ``include/drift.yaml``) does not exist. A ``path`` given explicitly (``--config``) must
    exist: a typo is a :class:`ConfigError`, never silently the built-in rules."""
    if path is not None:
        return load_drift_config(path)
    p = drift_config_path()
    if not p.exists():
        return DriftConfig()
    return load_drift_config(p)
