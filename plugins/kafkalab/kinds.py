"""The kinds of run the lab makes: the one registry of what differs between them.

A *run* is a manifest (``runs/<run_id>.json``) plus the files its engine measured. Four
kinds exist today:

| kind | engine | measured files | aggregates | validation | drift |
|---|---|---|---|---|---|
| ``latency`` | :mod:`kafkalab.runner` (closed loop) | ``samples/`` | ``aggregates/run_id=<id>/`` | ``validation/<id>.json`` | ``metrics`` |
| ``load`` | :mod:`kafkalab.load` (open loop, fan-out) | ``load/`` | ``aggregates/load/run_id=<id>/`` | ``validation/<id>-load.json`` | ``load_metrics`` |
| ``faults`` | :mod:`kafkalab.faults` (broker and consumer faults) | ``faults/`` | ``aggregates/faults/run_id=<id>/`` | ``validation/<id>-faults.json`` | not judged |
| ``startup`` | :mod:`kafkalab.startup` (a new consumer's first record) | ``startup/`` | ``aggregates/startup/run_id=<id>/`` | ``validation/<id>-startup.json`` | not judged |

Everything that must tell the kinds apart asks this module — the data directory's paths
(:class:`kafkalab.store.LabData`), ``kafkalab aggregate`` and the DAGs (which Spark jobs),
the report (which page sections), drift (which metrics), the Prometheus export and
``kafkalab compare`` — and never compares a kind's name or looks into a manifest itself.
:func:`kind_of` is the one rule that reads a manifest's kind.

Adding a kind is one :class:`RunKind` in :data:`RUN_KINDS` plus its engine, its Spark jobs
(named in :data:`kafkalab.spark.submit.SPARK_JOBS`) and its report section (the function
:attr:`RunKind.report_sections` names); ``docs/architecture.md`` has the checklist.

This module imports only the standard library: :mod:`kafkalab.store`, which ships to Spark
nodes as a lone file, imports it lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunKind:
    """One kind of run: where its files are and which parts of the lab handle it."""

    name: str
    """The manifest's ``kind`` (``latency``, ``load``, ``faults``): also the ``kind`` label of
    exports and ``--json`` documents."""
    label: str
    """How pages and tables name it (``latency``, ``load``, ``broker and consumer faults``)."""
    measured_dir: str
    """The data directory's folder of its measured files (``samples``, ``load``, ``faults``),
    partitioned ``run_date=<day>/run_id=<id>/``."""
    aggregates_subdir: str
    """Its folder under ``aggregates/`` (``""``: the latency runs' partitions lie directly
    in ``aggregates/``, as ``run_id=<id>/``)."""
    validation_suffix: str
    """``validation/<run_id><suffix>.json`` is its Great Expectations result (``""``,
    ``-load``, ``-faults``)."""
    aggregate_job: str
    """Its aggregation Spark job (a key of :data:`kafkalab.spark.submit.SPARK_JOBS`)."""
    validate_job: str
    """Its validation Spark job (a key of :data:`kafkalab.spark.submit.SPARK_JOBS`)."""
    validate_reads_measured: bool
    """Whether its validation job also reads the measured files (``--samples``: the
    latency suite checks the raw samples as well as the aggregates)."""
    drift_metrics: str | None
    """The drift rules' list of metrics that judges it (a field of
    :class:`kafkalab.drift.config.DriftConfig`: ``metrics``, ``load_metrics``); None: its
    runs are not judged for drift."""
    report_sections: str
    """``module:function`` that draws its run page's sections (imported when a page of this
    kind is drawn): ``function(view, context) -> list[str]``."""
    marks_stale: bool
    """Whether its Spark jobs clear the run's ``stale_outputs`` entries when they recompute
    them (latency and load runs keep ``stale_outputs``; a fault run has none)."""
    validates_in_session: bool
    """Whether its aggregation job can also validate the run in its own Spark session
    (``--validate-out``, :func:`kafkalab.spark.submit.one_session_args`: one JVM start
    instead of two)."""
    measured_unit: str
    """What one row of its aggregates measured, as pages count them (``cell``: a latency
    or load cell; ``trial``: a fault trial), e.g. "3 cell(s) of this run ran on an emulator
    broker"."""

    @property
    def spark_jobs(self) -> tuple[str, str]:
        """(aggregation, validation) Spark jobs, in the order they run."""
        return (self.aggregate_job, self.validate_job)

    @property
    def drift_judged(self) -> bool:
        """True when its runs are judged for drift."""
        return self.drift_metrics is not None


LATENCY = RunKind(
    name="latency", label="latency", measured_dir="samples", aggregates_subdir="",
    validation_suffix="", aggregate_job="aggregate", validate_job="validate",
    validate_reads_measured=True, drift_metrics="metrics", report_sections="kafkalab.report.latency_sections:latency_sections",
    marks_stale=True, validates_in_session=True, measured_unit="cell")
"""Closed-loop latency runs (``kafkalab run``, the latency DAGs)."""

LOAD = RunKind(
    name="load", label="load", measured_dir="load", aggregates_subdir="load",
    validation_suffix="-load", aggregate_job="aggregate_load", validate_job="validate_load",
    validate_reads_measured=False, drift_metrics="load_metrics", report_sections="kafkalab.report.load_sections:load_sections",
    marks_stale=True, validates_in_session=True, measured_unit="cell")
"""Open-loop load runs (``kafkalab load``, ``load_experiment``, the nightly's fan-out cell)."""

FAULTS = RunKind(
    name="faults", label="broker and consumer faults", measured_dir="faults",
    aggregates_subdir="faults", validation_suffix="-faults", aggregate_job="aggregate_faults",
    validate_job="validate_faults", validate_reads_measured=False, drift_metrics=None,
    report_sections="kafkalab.report.fault_sections:fault_sections", marks_stale=False,
    validates_in_session=False, measured_unit="trial")
"""Fault runs (``kafkalab faults run``, ``resilience_experiment``, the nightly's trial)."""

STARTUP = RunKind(
    name="startup", label="consumer start-up", measured_dir="startup",
    aggregates_subdir="startup", validation_suffix="-startup", aggregate_job="aggregate_startup",
    validate_job="validate_startup", validate_reads_measured=False, drift_metrics=None,
    report_sections="kafkalab.report.startup_sections:startup_sections", marks_stale=False,
    validates_in_session=True, measured_unit="case")
"""Start-up runs: seed 000's first-message delay per case (``kafkalab startup run``)."""

RUN_KINDS: dict[str, RunKind] = {k.name: k for k in (LATENCY, LOAD, FAULTS, STARTUP)}
"""Every kind by name, in the order pages and exports list them."""

DEFAULT_KIND = LATENCY
"""The kind of a manifest that names none (the lab's first runs had no ``kind``)."""


def run_kind(name: str) -> RunKind:
    """The kind named ``name``.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    try:
        return RUN_KINDS[name]
    except KeyError:
        raise ValueError(f"unknown run kind {name!r} (known: {', '.join(RUN_KINDS)})") from None


def kind_of(manifest: Mapping[str, Any] | None) -> RunKind:
    """The kind of a run from its manifest: its ``kind``, else its workload's ``kind`` (a
    load run written before manifests had one), else :data:`DEFAULT_KIND` (latency; also for
    a missing manifest). An unknown ``kind`` is latency too: such a run has no other
    reader."""
    m = manifest or {}
    for value in (m.get("kind"), _workload_kind(m)):
        if isinstance(value, str) and value in RUN_KINDS:
            return RUN_KINDS[value]
    return DEFAULT_KIND


def _workload_kind(manifest: Mapping[str, Any]) -> Any:
    workload = manifest.get("workload")
    return workload.get("kind") if isinstance(workload, Mapping) else None


def kind_of_run(manifest: Mapping[str, Any] | None,
                left_data: Callable[[RunKind], bool]) -> RunKind:
    """The kind of a run from its manifest and from what it left (``left_data(kind)``: the
    run has that kind's aggregates), for readers of runs whose manifest is missing or was
    written before manifests named a kind (which reads as latency).

    The kinds other than :data:`DEFAULT_KIND` are tried from the last entry of
    :data:`RUN_KINDS` back: a later kind builds on an earlier one (a fault trial is a load
    cell and a fault), so the more specific answer wins; a run that is neither is latency.
    """
    declared = kind_of(manifest)
    for kind in reversed(tuple(RUN_KINDS.values())):
        if kind is not DEFAULT_KIND and (declared is kind or left_data(kind)):
            return kind
    return DEFAULT_KIND


def kind_name(manifest: Mapping[str, Any] | None) -> str:
    """``kind_of(manifest).name``: ``latency``, ``load``, ``faults`` or ``startup``."""
    return kind_of(manifest).name


def kind_of_job(job: str) -> RunKind:
    """The kind whose aggregation or validation Spark job is ``job``.

    Raises:
        ValueError: no kind runs ``job``.
    """
    for k in RUN_KINDS.values():
        if job in k.spark_jobs:
            return k
    raise ValueError(f"no run kind runs the Spark job {job!r}")


__all__ = [
    "DEFAULT_KIND",
    "FAULTS",
    "LATENCY",
    "LOAD",
    "RUN_KINDS",
    "STARTUP",
    "RunKind",
    "kind_name",
    "kind_of",
    "kind_of_job",
    "kind_of_run",
    "run_kind",
]
