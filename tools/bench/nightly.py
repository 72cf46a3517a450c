"""Bench part (d): wall time of one ``nightly_latency_regression`` run, split by task.

Runs ``airflow dags test`` in a throw-away ``AIRFLOW_HOME`` and data directory (the lab's
embedded kafka09 cluster must be up), then reads the task instances' durations from that
home's SQLite metadata database. Mapped tasks (one per cell) are summed and counted. The
nightly's fault trial runs on a fault cluster of the bench's own (``faults-lab`` in the work
dir, ports 25981 / 38992-38994), stopped and wiped afterwards.
"""

from __future__ import annotations

import sqlite3
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH_FAULTS_ZK_PORT, BENCH_FAULTS_BASE_PORT = 25981, 38992
"""Ports of the bench's own fault cluster (the nightly's sigkill-leader trial)."""


def bench_nightly_run(work_dir: Path, logical_date: str | None = None) -> dict[str, Any]:
    """Run the nightly DAG once and return its wall time and per-task durations (seconds)."""
    from kafkalab.airflow.launcher import dags_test

    work_dir.mkdir(parents=True, exist_ok=True)
    home = work_dir / "airflow-home"
    date = logical_date or datetime.now(UTC).strftime("%Y-%m-%dT00:00:00+00:00")
    t0 = time.perf_counter()
    faults_lab = work_dir / "faults-lab"
    # the nightly's fault trial runs on a fault cluster of the bench's own (lab dir and ports)
    env = {"KAFKALAB_DATA_DIR": str(work_dir / "lab-data"), "KAFKALAB_FAULTS_HOME": str(faults_lab),
           "KAFKALAB_FAULTS_ZK_PORT": str(BENCH_FAULTS_ZK_PORT),
           "KAFKALAB_FAULTS_BASE_PORT": str(BENCH_FAULTS_BASE_PORT)}
    try:
        rc = dags_test("nightly_latency_regression", date, home=home, extra_env=env)
    finally:
        from kafkalab.cluster import cluster_down

        cluster_down(faults_lab, wipe_data=True)
    wall_s = time.perf_counter() - t0
    tasks: dict[str, dict[str, Any]] = defaultdict(lambda: {"duration_s": 0.0, "instances": 0, "states": set()})
    db = home / "airflow.db"
    if db.exists():
        with sqlite3.connect(db) as con:
            rows = con.execute(
                "SELECT task_id, duration, state FROM task_instance WHERE dag_id = ? AND run_id = "
                "(SELECT run_id FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1)",
                ("nightly_latency_regression", "nightly_latency_regression"),
            ).fetchall()
        for task_id, duration, state in rows:
            t = tasks[task_id]
            t["duration_s"] += float(duration or 0.0)
            t["instances"] += 1
            t["states"].add(str(state))
    return {
        "exit_code": rc, "wall_s": wall_s, "logical_date": date,
        "tasks": sorted(({"task_id": k, "duration_s": v["duration_s"], "instances": v["instances"],
                          "states": sorted(v["states"])} for k, v in tasks.items()),
                        key=lambda r: -float(r["duration_s"])),
    }
