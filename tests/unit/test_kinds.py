"""The run-kind registry (``kafkalab.kinds``): the one rule that reads a manifest's kind, and
every part of the lab that tells kinds apart agreeing with it."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from kafkalab import kinds
from kafkalab.drift.config import DriftConfig
from kafkalab.drift.detect import KINDS as DRIFT_SERIES
from kafkalab.export.prometheus import KINDS as EXPORT_KINDS
from kafkalab.kinds import (
    FAULTS,
    LATENCY,
    LOAD,
    RUN_KINDS,
    STARTUP,
    kind_of,
    kind_of_job,
    run_kind,
)
from kafkalab.spark.submit import SPARK_JOB_OUTPUTS, SPARK_JOBS, spark_job_args
from kafkalab.store import LabData, atomic_write_json


def test_a_manifest_says_its_kind_and_old_or_missing_ones_are_latency() -> None:
    assert kind_of({"kind": "faults"}) is FAULTS
    assert kind_of({"kind": "startup"}) is STARTUP
    assert kind_of({"kind": "load"}) is LOAD
    assert kind_of({"workload": {"kind": "load", "cells": []}}) is LOAD  # before manifests had one
    assert kind_of({"kind": "latency"}) is LATENCY
    assert kind_of({}) is kind_of(None) is kind_of({"kind": "nonsense"}) is LATENCY
    assert kinds.kind_name({"kind": "faults"}) == "faults"


def test_an_unknown_kind_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: latency, load, faults"):
        run_kind("soak")


def test_every_kind_names_spark_jobs_that_exist_and_only_its_own() -> None:
    jobs = [job for k in RUN_KINDS.values() for job in k.spark_jobs]
    assert sorted(jobs) == sorted(SPARK_JOBS)  # every job belongs to exactly one kind
    for k in RUN_KINDS.values():
        assert kind_of_job(k.aggregate_job) is k and kind_of_job(k.validate_job) is k
        assert SPARK_JOB_OUTPUTS[k.aggregate_job] == "aggregates"
        assert SPARK_JOB_OUTPUTS[k.validate_job] == "validation"
    with pytest.raises(ValueError):
        kind_of_job("nope")


def test_every_kind_names_a_report_section_that_draws_a_page() -> None:
    for k in RUN_KINDS.values():
        module, _, name = k.report_sections.partition(":")
        assert callable(getattr(importlib.import_module(module), name)), k.report_sections


def test_drift_judges_exactly_the_kinds_the_registry_says() -> None:
    judged = {k.name for k in RUN_KINDS.values() if k.drift_judged}
    assert judged == set(DRIFT_SERIES) == {"latency", "load"}
    config = DriftConfig()
    assert config.metrics_of("latency") is config.metrics
    assert config.metrics_of("load") is config.load_metrics
    assert config.metrics_of("faults") == {}


def test_the_export_labels_every_kind() -> None:
    assert EXPORT_KINDS == tuple(RUN_KINDS) == ("latency", "load", "faults", "startup")


def test_the_data_directory_places_each_kind_where_its_entry_says(tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    assert lab.measured_dir(LATENCY) == lab.samples_dir
    assert lab.measured_dir("load") == tmp_path / "load"
    assert lab.measured_dir(FAULTS) == tmp_path / "faults"
    assert lab.measured_dir(STARTUP) == tmp_path / "startup"
    assert lab.validation_path("r1", STARTUP) == tmp_path / "validation" / "r1-startup.json"
    assert lab.run_aggregates_dir("r1") == tmp_path / "aggregates" / "run_id=r1"
    assert lab.run_aggregates_dir("r1", LOAD) == tmp_path / "aggregates" / "load" / "run_id=r1"
    assert lab.validation_path("r1") == tmp_path / "validation" / "r1.json"
    assert lab.validation_path("r1", "faults") == tmp_path / "validation" / "r1-faults.json"
    assert lab.validation_html_path("r1", LOAD) == tmp_path / "validation" / "r1-load.html"


def test_the_spark_jobs_read_and_write_the_folders_of_their_kind(tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    for k in RUN_KINDS.values():
        agg = spark_job_args(k.aggregate_job, "r1", tmp_path)
        assert agg[1] == str(lab.measured_dir(k)) and agg[3] == str(lab.kind_aggregates_dir(k))
        val = spark_job_args(k.validate_job, "r1", tmp_path)
        assert val[val.index("--aggregates") + 1] == str(lab.kind_aggregates_dir(k))
        assert ("--samples" in val) is k.validate_reads_measured


def test_a_kind_reads_its_own_validation_then_a_plain_one_and_never_passes_a_broken_file(
        tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    assert lab.validation("r1", FAULTS) is None
    atomic_write_json(lab.validation_path("r1"), {"success": True})
    assert lab.validation("r1", FAULTS) == {"success": True}  # validated before suffixes
    atomic_write_json(lab.validation_path("r1", FAULTS), {"success": False})
    assert lab.validation("r1", FAULTS) == {"success": False}
    lab.validation_path("r1", LOAD).write_text("{broken")
    assert lab.validation("r1", LOAD) == {"success": None, "failed": [], "unreadable": True}


def test_a_load_runs_derived_outputs_are_found_where_load_runs_keep_them(tmp_path: Path) -> None:
    """A re-measured load cell must make the load aggregates and validation stale: they are
    under aggregates/load/ and validation/<id>-load.json, not the latency places."""
    lab = LabData(tmp_path)
    lab.write_manifest({"run_id": "r1", "kind": "load", "status": "complete"})
    assert lab.derived_outputs("r1") == []
    agg = lab.run_aggregates_dir("r1", LOAD)
    agg.mkdir(parents=True)
    (agg / "load_cells.parquet").write_bytes(b"x")
    atomic_write_json(lab.validation_path("r1", LOAD), {"success": True})
    assert lab.derived_outputs("r1") == ["aggregates", "validation"]
    assert lab.output_files("r1", "aggregates") == [agg / "load_cells.parquet"]
    assert lab.output_files("r1", "validation") == [lab.validation_path("r1", LOAD)]
    assert lab.derived_outputs("r1", LATENCY) == []


def test_a_runs_kind_from_what_it_left_when_its_manifest_does_not_say() -> None:
    """A manifest that names its kind decides; one that does not (or none at all) is read
    from the run's aggregates, the more specific kind first (a fault trial is also a load
    cell), else latency."""
    left: set[str] = set()

    def has(kind: kinds.RunKind) -> bool:
        return kind.name in left

    assert kinds.kind_of_run({"kind": "load"}, has) is LOAD
    assert kinds.kind_of_run(None, has) is LATENCY
    left.add("load")
    assert kinds.kind_of_run(None, has) is LOAD
    assert kinds.kind_of_run({"kind": "faults"}, has) is FAULTS
    left.add("faults")
    assert kinds.kind_of_run({}, has) is FAULTS  # both left: the more specific


def test_every_per_kind_table_covers_the_registry() -> None:
    """The tables that say what differs by kind outside the registry (the report's views and
    overview rows, compare's labels and columns) know every kind they must: a new kind fails
    here until it has its entries."""
    from kafkalab.compare import LABELS, SHOWN
    from kafkalab.report.data import SUMMARY_ROWS, VIEWS

    assert set(VIEWS) == set(SUMMARY_ROWS) == set(RUN_KINDS)
    judged = {k.name for k in RUN_KINDS.values() if k.drift_judged}
    assert set(LABELS) == set(SHOWN) == judged
