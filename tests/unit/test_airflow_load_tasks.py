"""The load run's Airflow task functions (``kafkalab.airflow.load_tasks``), run as a worker
runs them: from a directory of its own, without Airflow services or a broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.airflow import load_tasks, tasks
from kafkalab.airflow.connections import ClusterConnection
from kafkalab.airflow.spark_submit import SPARK_JOB_OUTPUTS, spark_application, spark_job_args
from kafkalab.errors import ConfigError, RunError
from kafkalab.paths import spark_jobs_dir
from kafkalab.store import LabData, atomic_write_json


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> LabData:
    data = LabData(tmp_path / "data")
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(data.root))
    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path / "lab"))
    monkeypatch.setattr(ClusterConnection, "get_connection", lambda self: None)
    elsewhere = tmp_path / "task-cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return data


FORM = {"consumers": [1, 5], "rates": [100, 500.0], "acks": ["0", "1"], "duration_s": 6,
        "warmup_s": 1, "payload": "1kb", "profile": "default", "client": "confluent-kafka",
        "partitions": 2, "consumer_mode": "assign", "pause_at_s": None, "pause_for_s": None,
        "cluster_descriptor": None}


def test_the_form_makes_the_grid_consumers_x_rates_x_acks() -> None:
    cells = load_tasks.load_cells(FORM)
    assert len(cells) == 8
    assert {(c.acks, c.consumers, c.rate_msgs_per_s) for c in cells} == {
        (a, c, r) for a in ("0", "1") for c in (1, 5) for r in (100.0, 500.0)}
    assert all(c.partitions == 2 and c.duration_s == 6 and c.warmup_s == 1 for c in cells)
    assert all(c.pause_at_s is None for c in cells)
    no_acks = load_tasks.load_cells({**FORM, "acks": []})
    assert {c.acks for c in no_acks} == {None}  # the profile's
    paused = load_tasks.load_cells({**FORM, "pause_at_s": 2, "pause_for_s": 1})
    assert {(c.pause_at_s, c.pause_for_s) for c in paused} == {(2.0, 1.0)}


@pytest.mark.parametrize(("change", "message"), [
    ({"rates": [0]}, r"param rate_msgs_per_s: .*greater than 0"),
    ({"warmup_s": 6}, r"longer than the warm-up"),
    ({"consumers": []}, r"consumers and rates"),
    ({"pause_at_s": 2}, r"pause_at_s and pause_for_s go together"),
    ({"payload": "7kb"}, r"unknown payload '7kb'"),
])
def test_bad_form_values_are_one_clear_line(change: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_tasks.load_cells({**FORM, **change})


def test_the_nightly_fanout_cell_comes_from_its_workload() -> None:
    (cell,) = load_tasks.load_cells(load_tasks.NIGHTLY_FANOUT)
    assert (cell.consumers, cell.rate_msgs_per_s, cell.duration_s) == (5, 200.0, 10.0)
    assert (cell.payload, cell.consumer_mode, cell.acks) == ("1kb", "assign", "1")


def test_mapped_cells_have_readable_names() -> None:
    assert load_tasks.cell_label({"consumers": 5, "rate_msgs_per_s": 200.0, "acks": "1",
                                  "payload": "1kb"}) == "5 consumers × 200 msg/s, acks 1, 1kb"


def test_request_is_owned_by_airflow_in_the_data_dir(lab: LabData, tmp_path: Path) -> None:
    desc = tmp_path / "cluster.yaml"
    req = load_tasks.build_load_request({**FORM, "cluster_descriptor": str(desc)}, "load-x")
    assert req.data_dir == lab.root and req.run_id == "load-x"
    assert req.owner_kind == "airflow" and req.descriptor_path == desc
    assert len(req.cells) == 8


def test_start_and_measure_call_the_engine(lab: LabData, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    import kafkalab.load.engine as engine

    seen: dict[str, object] = {}

    def start(req: engine.LoadRequest, progress: object = None) -> dict[str, object]:
        seen["start"] = req
        return {"run_id": req.run_id, "run_date": "2026-11-21",
                "cells": [c.model_dump() for c in req.cells]}

    def run(data_dir: object, run_id: str, spec: dict[str, object], descriptor: object = None,
            progress: object = None) -> dict[str, object]:
        seen["run"] = (data_dir, run_id, spec)
        return {"cell_id": "c", "status": "complete", "e2e_p99_ms": 3.0}

    monkeypatch.setattr(engine, "start_load_run", start)
    monkeypatch.setattr(engine, "run_load_cell", run)
    cells = load_tasks.start_load({**FORM, "consumers": [5], "rates": [200], "acks": ["1"]},
                                  "load-x", command="airflow dag load_experiment run m1")
    assert len(cells) == 1 and cells[0]["label"] == "5 consumers × 200 msg/s, acks 1, 1kb"
    assert cells[0]["spec"]["consumers"] == 5
    out = load_tasks.measure_load_cell(FORM, "load-x", cells[0])
    assert out["status"] == "complete"
    assert seen["run"] == (lab.root, "load-x", cells[0]["spec"])
    monkeypatch.setattr(engine, "run_load_cell", lambda *a, **k: {
        "cell_id": "c", "status": "failed", "error": "shard 0 died"})
    with pytest.raises(RunError, match="cell c failed: shard 0 died"):
        load_tasks.measure_load_cell(FORM, "load-x", cells[0])


def test_closing_a_run_that_never_started_holds_nothing_up(lab: LabData) -> None:
    assert load_tasks.close_load("load-none")["status"] == "not started"


@pytest.mark.parametrize(("status", "success", "problem"), [
    ("complete", True, None),
    ("incomplete", True, r"run is incomplete$"),
    ("complete", False, r"validation failed \(see .*validation/load-r1-load\.json\)$"),
    ("complete", None, r"no validation result$"),
])
def test_verify_load_outcome(lab: LabData, status: str, success: bool | None,
                             problem: str | None) -> None:
    lab.write_manifest({"run_id": "load-r1", "kind": "load", "status": status, "cells": []})
    if success is not None:
        atomic_write_json(lab.validation_path("load-r1-load"), {"success": success})
    if problem is None:
        assert load_tasks.verify_load_outcome("load-r1")["validation_success"] is True
    else:
        with pytest.raises(RunError, match=problem):
            load_tasks.verify_load_outcome("load-r1")


def test_spark_jobs_of_a_load_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(tmp_path / "d"))
    d = str(tmp_path / "d")
    assert spark_application("aggregate_load") == str(spark_jobs_dir() / "aggregate_load.py")
    assert spark_job_args("aggregate_load", "r1") == [
        "--load", f"{d}/load", "--out", f"{d}/aggregates/load", "--run-id", "r1"]
    assert spark_job_args("validate_load", "r1") == [
        "--aggregates", f"{d}/aggregates/load", "--run-id", "r1", "--out", f"{d}/validation"]
    assert SPARK_JOB_OUTPUTS["aggregate_load"] == "aggregates"
    assert SPARK_JOB_OUTPUTS["validate_load"] == "validation"


def test_a_failed_load_validation_that_wrote_its_result_is_fresh(lab: LabData) -> None:
    import time

    lab.write_manifest({"run_id": "load-r1", "kind": "load", "status": "complete",
                        "cells": [], "stale_outputs": ["validation"]})
    t0 = time.time() - 1
    assert not tasks.mark_recomputed("load-r1", "validation", written_since_s=t0)
    atomic_write_json(lab.validation_path("load-r1-load"), {"success": False})
    assert tasks.mark_recomputed("load-r1", "validation", written_since_s=t0)
    manifest = lab.manifest("load-r1")
    assert manifest is not None and manifest["stale_outputs"] == []
