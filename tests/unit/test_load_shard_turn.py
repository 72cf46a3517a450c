"""Shard placement "tasks" in the load engine, without a broker: when a shard started
elsewhere joins a cell (shard_turn), and how the producer's barrier fails when one does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.errors import ConfigError, RunError
from kafkalab.load import placement
from kafkalab.load.cell import run_load_cell
from kafkalab.load.shard import plan_path, ready_path, result_path, start_path
from kafkalab.load.spec import LoadCellSpec
from kafkalab.store import atomic_write_json

SPEC = LoadCellSpec(consumers=2, consumers_per_shard=1, rate_msgs_per_s=10, duration_s=3,
                    warmup_s=1)


def _cell(tmp_path: Path, status: str = "running", token: str = "t1") -> Path:
    cell = tmp_path / "cell"
    cell.mkdir(exist_ok=True)
    atomic_write_json(cell / "cell.json", {"status": status, "placement_token": token})
    atomic_write_json(plan_path(cell), {"placement_token": token})
    return cell


def test_a_shard_joins_only_this_attempts_running_cell_before_its_start(tmp_path: Path) -> None:
    assert placement.shard_turn(tmp_path / "nothing", 0, "t1") == "wait"
    cell = _cell(tmp_path)
    assert placement.shard_turn(cell, 0, "t2") == "wait"  # another DAG run's plan
    assert placement.shard_turn(cell, 0, "t1") == "join"
    atomic_write_json(ready_path(cell, 0), {"pid": 1})
    assert placement.shard_turn(cell, 0, "t1") == "ended"  # joined, never finished
    atomic_write_json(result_path(cell, 0), {"status": "complete"})
    assert placement.shard_turn(cell, 0, "t1") == "done"
    assert placement.shard_turn(cell, 1, "t1") == "join"
    atomic_write_json(start_path(cell), {"t0_ns": 1})
    assert placement.shard_turn(cell, 1, "t1") == "ended"  # the barrier passed without it


@pytest.mark.parametrize("status", ["failed", "complete", "interrupted"])
def test_a_cell_that_ended_is_not_joined(tmp_path: Path, status: str) -> None:
    assert placement.shard_turn(_cell(tmp_path, status=status), 0, "t1") == "ended"


def test_the_barrier_names_the_shard_tasks_that_did_not_join(tmp_path: Path) -> None:
    cell = _cell(tmp_path)
    atomic_write_json(ready_path(cell, 0), {"pid": 1})
    with pytest.raises(RunError, match=r"consumer shard task\(s\) 1 did not join within 0 s "
                                       r"\(start barrier\): shard placement 'tasks' needs a "
                                       r"running scheduler with 3 free task slots"):
        placement.await_barrier(SPEC, cell, [], tmp_path, timeout_s=0.05, external=True)


def test_a_shard_task_that_failed_before_it_was_ready_fails_the_cell_at_once(
        tmp_path: Path) -> None:
    cell = _cell(tmp_path)
    atomic_write_json(result_path(cell, 1), {"shard": 1, "status": "failed",
                                             "error": "KafkaException: no broker"})
    with pytest.raises(RunError, match="consumer shard 1 stopped before it was ready: "
                                       "KafkaException: no broker"):
        placement.await_barrier(SPEC, cell, [], tmp_path, timeout_s=60, external=True)


def test_an_unknown_placement_is_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"shard placement 'hosts': choose one of "
                                          r"subprocess, tasks"):
        run_load_cell(tmp_path, "r1", SPEC, shard_placement="hosts")
