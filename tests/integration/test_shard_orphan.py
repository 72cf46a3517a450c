"""A consumer shard whose producer died without a word (its process killed: no stop file
will ever come) ends on its own, failed and saying why, instead of waiting forever. Found
after a SIGTERMed fault run left a shard running for half an hour. Against the session's
real KRaft node."""

from __future__ import annotations

import time
from pathlib import Path

from kafkalab.load.cell import (
    cell_clients,
    plan_cell,
    prepare_cell_dir,
    provision_topic,
    shard_plan,
)
from kafkalab.load.placement import spawn_shards
from kafkalab.load.shard import plan_path, ready_path, result_path, start_path, stop_bound_s
from kafkalab.load.spec import LoadCellSpec
from kafkalab.scenarios.base import now_ns
from kafkalab.store import LabData, atomic_write_json, read_json


def test_an_orphaned_shard_gives_up_after_the_producers_longest_time(
        desc: Path, tmp_path: Path) -> None:
    spec = LoadCellSpec(rate_msgs_per_s=10, duration_s=2, warmup_s=1, message_timeout_s=1)
    cell = tmp_path / "cell"
    setup = plan_cell(LabData(tmp_path / "data"), "orphan", "2026-11-29", spec, desc,
                      topic=None, cell_path=cell, placement="subprocess", placement_token=None)
    provision_topic(setup)
    prepare_cell_dir(setup)
    atomic_write_json(plan_path(cell), shard_plan(setup, cell_clients(setup)))
    (proc,) = spawn_shards(spec, cell, setup.logs)
    try:
        deadline = time.monotonic() + 60
        while read_json(ready_path(cell, 0)) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert read_json(ready_path(cell, 0)) is not None, "the shard never got ready"
        # the producer "started" longer ago than it could possibly take, and then died
        t0 = now_ns() - int((stop_bound_s(spec) + 1) * 1e9)
        atomic_write_json(start_path(cell), {"t0_ns": t0})
        assert proc.wait(timeout=60) == 1  # it wrote its failed result and ended
    finally:
        if proc.poll() is None:
            proc.kill()
    result = read_json(result_path(cell, 0))
    assert isinstance(result, dict) and result["status"] == "failed"
    assert "the producer never announced its stop" in result["error"]
