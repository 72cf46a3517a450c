"""The load run's Airflow task functions (``kafkalab.airflow.load_tasks``), run as a worker
runs them: from a directory of its own, without Airflow services or a broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.airflow import load_tasks, tasks
from kafkalab.attempts import attempt_path
from kafkalab.errors import ConfigError, RunError
from kafkalab.paths import spark_jobs_dir
from kafkalab.spark.submit import SPARK_JOB_OUTPUTS, spark_application, spark_job_args
from kafkalab.store import LabData, atomic_write_json
from tests.unit.test_airflow_tasks import as_a_task


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> LabData:
    return as_a_task(monkeypatch, tmp_path)


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
    req = load_tasks.build_load_request({**FORM, "cluster_descriptor": str(desc)}, "load-x",
                                        logical_date="2026-11-18T00:00:00+00:00")
    assert req.logical_date == "2026-11-18T00:00:00+00:00"  # for the manifest
    assert req.data_dir == lab.root and req.run_id == "load-x"
    assert req.owner_kind == "airflow" and req.descriptor_path == desc
    assert len(req.cells) == 8


def test_start_and_measure_call_the_engine(lab: LabData, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    import kafkalab.load.cell as cell_engine
    import kafkalab.load.run as run_engine

    seen: dict[str, object] = {}

    def start(req: run_engine.LoadRequest, progress: object = None) -> dict[str, object]:
        seen["start"] = req
        return {"run_id": req.run_id, "run_date": "2026-11-21",
                "cells": [c.model_dump() for c in req.cells]}

    def run(data_dir: object, run_id: str, spec: dict[str, object], descriptor: object = None,
            progress: object = None, **kwargs: object) -> dict[str, object]:
        seen["run"] = (data_dir, run_id, spec)
        seen["placement"] = kwargs
        return {"cell_id": "c", "status": "complete", "e2e_p99_ms": 3.0}

    monkeypatch.setattr(run_engine, "start_load_run", start)
    monkeypatch.setattr(cell_engine, "run_load_cell", run)
    cells = load_tasks.start_load({**FORM, "consumers": [5], "rates": [200], "acks": ["1"]},
                                  "load-x", command="airflow dag load_experiment run m1")
    assert len(cells) == 1 and cells[0]["label"] == "5 consumers × 200 msg/s, acks 1, 1kb"
    assert cells[0]["spec"]["consumers"] == 5
    out = load_tasks.measure_load_cell(FORM, "load-x", cells[0])
    assert out["status"] == "complete"
    assert seen["run"] == (lab.root, "load-x", cells[0]["spec"])
    assert seen["placement"] == {"shard_placement": "subprocess", "placement_token": None}
    load_tasks.measure_load_cell({**FORM, "shard_placement": "tasks"}, "load-x", cells[0],
                                 token="manual__1")
    assert seen["placement"] == {"shard_placement": "tasks", "placement_token": "manual__1"}
    monkeypatch.setattr(cell_engine, "run_load_cell", lambda *a, **k: {
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


# ---------------------------------------------------------------- shard placement "tasks"


def test_shard_placement_param_is_checked() -> None:
    assert load_tasks.shard_placement({}) == "subprocess"
    assert load_tasks.shard_placement({"shard_placement": "tasks"}) == "tasks"
    with pytest.raises(ConfigError, match=r"param shard_placement: 'hosts' is not one of "
                                          r"subprocess, tasks"):
        load_tasks.shard_placement({"shard_placement": "hosts"})


def test_the_form_choices_are_the_engines() -> None:
    from kafkalab.airflow.params import SHARD_PLACEMENT_CHOICES
    from kafkalab.load.placement import SHARD_PLACEMENTS

    assert SHARD_PLACEMENT_CHOICES == SHARD_PLACEMENTS


def test_one_shard_task_per_shard_of_every_cell_in_cell_order() -> None:
    form = {**FORM, "consumers": [3, 1], "rates": [100], "acks": ["1"],
            "consumers_per_shard": 2}
    cells = [{"spec": c.model_dump(), "label": load_tasks.cell_label(c.model_dump())}
             for c in load_tasks.load_cells(form)]
    assert load_tasks.shard_slots(form, cells) == []  # subprocess: the mapped task is skipped
    slots = load_tasks.shard_slots({**form, "shard_placement": "tasks"}, cells)
    assert [(s["cell_id"], s["shard"]) for s in slots] == [
        ("confluent-kafka.1kb.default.acks-1.c3.r100.p2", 0),
        ("confluent-kafka.1kb.default.acks-1.c3.r100.p2", 1),
        ("confluent-kafka.1kb.default.acks-1.c1.r100.p2", 0)]
    assert slots[1]["label"] == "3 consumers × 100 msg/s, acks 1, 1kb · shard 2/2"
    assert slots[2]["spec"] == cells[1]["spec"]


def test_a_cell_needing_more_task_slots_than_there_are_is_refused_before_it_runs() -> None:
    cells = load_tasks.load_cells({**FORM, "consumers": [6], "rates": [100], "acks": ["1"],
                                   "consumers_per_shard": 2})  # 3 shards + the producer
    load_tasks.check_task_slots(cells, parallelism=4, pool_slots=16)
    with pytest.raises(ConfigError, match=r"needs 4 tasks at once \(its producer and 3 shard "
                                          r"tasks\) but \[core\] parallelism is 3"):
        load_tasks.check_task_slots(cells, parallelism=3, pool_slots=16)
    with pytest.raises(ConfigError, match=r"3 shard tasks at once but the pool "
                                          r"kafkalab_shards has 2 slots"):
        load_tasks.check_task_slots(cells, parallelism=32, pool_slots=2)


def _slot(cell_id: str = "c1", shard: int = 0) -> dict[str, object]:
    return {"cell_id": cell_id, "shard": shard, "spec": {}, "label": "c1 · shard 1/1"}


def _started_run(lab: LabData, status: str = "running") -> Path:
    from kafkalab.load import files

    atomic_write_json(lab.manifest_path("load-r1"), {
        "run_id": "load-r1", "started_at": "2026-11-22T00:00:00Z", "command": "t",
        "workload": {}, "profiles": {}, "scenarios": [], "payloads": [], "cluster": {},
        "versions": {}, "status": status, "run_date": "2026-11-22", "kind": "load"})
    # a cell is measured in its attempt directory (kafkalab.attempts)
    return attempt_path(files.cell_dir(lab.root, "2026-11-22", "load-r1", "c1"))


def test_a_shard_task_waits_while_its_cell_has_not_started(lab: LabData) -> None:
    """No run yet, or the run running but this attempt's plan not up (an earlier cell
    measures, or an older DAG run's plan is there): None, the sensor is rescheduled."""
    from kafkalab.load.shard import plan_path

    assert load_tasks.consume_load_shard("load-r1", _slot(), token="run-2") is None
    cell = _started_run(lab)
    assert load_tasks.consume_load_shard("load-r1", _slot(), token="run-2") is None
    cell.mkdir(parents=True)
    atomic_write_json(cell / "cell.json", {"status": "complete", "placement_token": "run-1"})
    atomic_write_json(plan_path(cell), {"placement_token": "run-1"})
    assert load_tasks.consume_load_shard("load-r1", _slot(), token="run-2") is None


def test_a_shard_task_of_a_run_that_closed_without_its_cell_is_skipped(lab: LabData) -> None:
    from airflow.sdk.exceptions import AirflowSkipException

    _started_run(lab, status="incomplete")
    with pytest.raises(AirflowSkipException, match="load run load-r1 closed: cell c1 never"):
        load_tasks.consume_load_shard("load-r1", _slot(), token="run-2")


def test_a_shard_task_whose_cell_ended_without_it_is_skipped(lab: LabData) -> None:
    from airflow.sdk.exceptions import AirflowSkipException

    from kafkalab.load.shard import plan_path

    cell = _started_run(lab)
    cell.mkdir(parents=True)
    atomic_write_json(cell / "cell.json", {"status": "failed", "placement_token": "run-2"})
    atomic_write_json(plan_path(cell), {"placement_token": "run-2"})
    with pytest.raises(AirflowSkipException, match="cell c1 ended before shard 0 joined"):
        load_tasks.consume_load_shard("load-r1", _slot(), token="run-2")


def test_a_shard_task_that_already_ran_returns_its_result(lab: LabData) -> None:
    """A re-poke after the shard ended (a worker lost the poke's answer) neither runs the
    shard again nor loses its verdict."""
    from kafkalab.load.shard import plan_path, ready_path, result_path

    cell = _started_run(lab)
    cell.mkdir(parents=True)
    atomic_write_json(cell / "cell.json", {"status": "complete", "placement_token": "run-2"})
    atomic_write_json(plan_path(cell), {"placement_token": "run-2"})
    atomic_write_json(ready_path(cell, 0), {"pid": 1})
    atomic_write_json(result_path(cell, 0), {"shard": 0, "status": "complete", "unique": {"0": 9}})
    assert load_tasks.consume_load_shard("load-r1", _slot(), token="run-2") == {
        "shard": 0, "status": "complete", "unique": {"0": 9}}
    atomic_write_json(result_path(cell, 0), {"shard": 0, "status": "failed", "error": "boom"})
    with pytest.raises(RunError, match="shard 0 of cell c1 failed: boom"):
        load_tasks.consume_load_shard("load-r1", _slot(), token="run-2")


def test_a_shard_task_finds_its_result_after_the_attempt_took_the_cells_place(
        lab: LabData) -> None:
    from kafkalab.attempts import settle
    from kafkalab.load.shard import plan_path, ready_path, result_path

    cell = _started_run(lab)
    cell.mkdir(parents=True)
    atomic_write_json(cell / "cell.json", {"status": "complete", "placement_token": "run-2"})
    atomic_write_json(plan_path(cell), {"placement_token": "run-2"})
    atomic_write_json(ready_path(cell, 0), {"pid": 1})
    atomic_write_json(result_path(cell, 0), {"shard": 0, "status": "complete"})
    final = cell.with_name("cell=c1")
    settle(final, replace=True)
    assert not cell.exists() and (final / "cell.json").is_file()
    assert load_tasks.shard_state("load-r1", _slot(), "run-2", lab.root) == ("done", final)
    assert load_tasks.consume_load_shard("load-r1", _slot(), token="run-2") == {
        "shard": 0, "status": "complete"}


def test_the_trigger_fires_once_the_shard_may_join_and_round_trips(lab: LabData) -> None:
    """ShardTurnTrigger (run by the triggerer) polls until this DAG run's plan is up."""
    import asyncio

    from kafkalab.airflow.shards import ShardTurnTrigger
    from kafkalab.load.shard import plan_path

    cell = _started_run(lab)
    trigger = ShardTurnTrigger("load-r1", _slot(), "run-2", str(lab.root), poll_s=0.01)
    path, kwargs = trigger.serialize()
    assert path == "kafkalab.airflow.shards.ShardTurnTrigger"
    assert ShardTurnTrigger(**kwargs).serialize() == (path, kwargs)

    async def first_event() -> object:
        gen = trigger.run()
        task = asyncio.ensure_future(gen.__anext__())
        await asyncio.sleep(0.05)
        assert not task.done()  # no plan yet: still waiting
        cell.mkdir(parents=True)
        atomic_write_json(cell / "cell.json", {"status": "running", "placement_token": "run-2"})
        atomic_write_json(plan_path(cell), {"placement_token": "run-2"})
        return await asyncio.wait_for(task, timeout=30)

    event = asyncio.run(first_event())
    assert event.payload == {"state": "join"}  # type: ignore[attr-defined]
