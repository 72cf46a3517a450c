"""Bench part (e): wall time of one ``nightly_latency_regression`` run, split by task.

Runs ``airflow dags test`` in a throw-away ``AIRFLOW_HOME`` and data directory (the lab's
embedded cluster must be up: :func:`check_nightly_cluster` refuses the part, before
the DAG starts, when its descriptor is missing or its brokers do not answer), then reads
the task instances' durations from that home's SQLite metadata database. Mapped tasks (one
per cell) are summed and counted. The nightly's fault trial runs on a fault cluster of the
bench's own (``faults-lab`` in the work dir, ports 25981 / 31992-31994), stopped and wiped
afterwards.

The result's ``spark_share`` is issue 13's figure: the Spark + Great Expectations tasks (the
spark-submits: aggregate and validate, latency, load and fault runs) as a share of the DAG
run's wall time, against :data:`SPARK_SHARE_GOAL`.
"""

from __future__ import annotations

import sqlite3
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafkalab.errors import ClusterError, LabError
from tools.bench import cluster_facts

BENCH_FAULTS_ZK_PORT, BENCH_FAULTS_BASE_PORT = 25981, 31992
"""Ports of the bench's own fault cluster (the nightly's sigkill-leader trial)."""

SPARK_SHARE_GOAL = 0.25
"""Issue 13: Spark + Great Expectations take at most this share of the nightly's wall time."""


def spark_task_ids() -> tuple[str, ...]:
    """The task ids of the DAGs' spark-submits (:mod:`kafkalab.airflow.chains.latency`:
    ``aggregate`` and ``validate`` are ``<job>_metrics``, every other job keeps its name)."""
    from kafkalab.spark.submit import SPARK_JOBS

    return tuple(f"{job}_metrics" if job in ("aggregate", "validate") else job
                 for job in SPARK_JOBS)


def spark_share(tasks: list[dict[str, Any]], dag_wall_s: float) -> dict[str, Any]:
    """The Spark + GX tasks' summed duration as a share of ``dag_wall_s`` (the DAG run's
    wall time), with the goal and whether it is met. The tasks run one after another in
    ``airflow dags test``, so their sum is wall time spent in Spark."""
    ids = spark_task_ids()
    by_task = {t["task_id"]: float(t["duration_s"]) for t in tasks if t["task_id"] in ids}
    spark_s = sum(by_task.values())
    share = spark_s / dag_wall_s if dag_wall_s > 0 else None
    return {"spark_s": spark_s, "dag_wall_s": dag_wall_s, "share": share,
            "goal": SPARK_SHARE_GOAL, "met": share is not None and share <= SPARK_SHARE_GOAL,
            "by_task_s": by_task}


def format_spark_share(share: dict[str, Any]) -> str:
    """One line: ``Spark + GX: 41.2 s of 300.0 s = 13.7 % (goal <= 25 %: met)``."""
    if share["share"] is None:
        return "Spark + GX: no DAG wall time to compare with"
    verdict = ("met" if share["met"]
               else f"missed by {100 * (share['share'] - share['goal']):.1f} points")
    return (f"Spark + GX: {share['spark_s']:.1f} s of {share['dag_wall_s']:.1f} s = "
            f"{100 * share['share']:.1f} % (goal <= {100 * share['goal']:.0f} %: {verdict}); "
            + ", ".join(f"{k} {v:.1f} s" for k, v in share["by_task_s"].items()))


def _dag_run_wall_s(con: sqlite3.Connection, dag_id: str) -> float | None:
    """First task start to last task end of the DAG's latest run, from the metadata database
    (None if unknown). Not the run's own ``start_date``: ``airflow dags test`` sets it to the
    logical date (midnight), which made a 15-minute run look 19 hours long."""
    row = con.execute("SELECT MIN(start_date), MAX(end_date) FROM task_instance "
                      "WHERE dag_id = ? AND run_id = (SELECT run_id FROM dag_run "
                      "WHERE dag_id = ? ORDER BY id DESC LIMIT 1)", (dag_id, dag_id)).fetchone()
    if not row or not row[0] or not row[1]:
        return None
    try:
        start, end = (datetime.fromisoformat(str(v)) for v in row)
        return (end - start).total_seconds()
    except (TypeError, ValueError):  # a date format this reader does not know
        return None


CLUSTER_UP_HINT = 'run "kafkalab cluster up" first'
"""The advice of :func:`check_nightly_cluster`'s refusals."""


def check_nightly_cluster(descriptor_path: Path | None = None, timeout_s: float = 10.0) -> Path:
    """The descriptor the nightly run will use (default
    :func:`kafkalab.paths.default_descriptor_path`, the embedded cluster's), after checking
    that it exists and that its brokers answer metadata (:func:`load_descriptor` and
    :func:`check_reachable`, as the DAG's ``check_cluster`` task does).

    Raises:
        ClusterError: one line starting ``nightly:`` naming the path and the reason (no
            descriptor; the brokers do not answer; the descriptor is invalid or needs a
            secret that is not set), so ``python -m tools.bench`` refuses the part without
            starting the DAG.
    """
    from kafkalab.cluster import check_reachable, load_descriptor
    from kafkalab.paths import default_descriptor_path

    path = descriptor_path if descriptor_path is not None else default_descriptor_path()
    if not path.is_file():
        raise ClusterError(f"nightly: no cluster at {path}; {CLUSTER_UP_HINT}")
    try:
        check_reachable(load_descriptor(path), timeout_s=timeout_s)
    except ClusterError as exc:
        raise ClusterError(f"nightly: the cluster of {path} does not answer ({exc}); "
                           f"{CLUSTER_UP_HINT}") from None
    except LabError as exc:  # a malformed descriptor, a secret's variable not set
        raise ClusterError(f"nightly: cluster {path}: {exc}") from None
    return path


def bench_nightly_run(work_dir: Path, logical_date: str | None = None,
                      descriptor_path: Path | None = None) -> dict[str, Any]:
    """Run the nightly DAG once on the cluster of ``descriptor_path`` (checked first by
    :func:`check_nightly_cluster`, then given to the DAG as its ``cluster_descriptor``
    param) and return its wall time, per-task durations (seconds) and the Spark + GX share
    (printed too: the line of :func:`format_spark_share`).

    Raises:
        ClusterError: the cluster is not there (nothing is started).
    """
    cluster = check_nightly_cluster(descriptor_path)
    from kafkalab.airflow.launcher import dags_test

    dag_id = "nightly_latency_regression"
    work_dir.mkdir(parents=True, exist_ok=True)
    home = work_dir / "airflow-home"
    date = logical_date or datetime.now(UTC).strftime("%Y-%m-%dT00:00:00+00:00")
    t0 = time.perf_counter()
    faults_lab = work_dir / "faults-lab"
    # the nightly's fault trial runs on a fault cluster of the bench's own (lab dir and ports)
    env = {"KAFKALAB_DATA_DIR": str(work_dir / "lab-data"), "KAFKALAB_FAULTS_HOME": str(faults_lab),
           "KAFKALAB_FAULTS_CONTROL_PORT": str(BENCH_FAULTS_ZK_PORT),
           "KAFKALAB_FAULTS_BASE_PORT": str(BENCH_FAULTS_BASE_PORT)}
    try:
        rc = dags_test(dag_id, date, {"cluster_descriptor": str(cluster)}, home=home,
                       extra_env=env)
    finally:
        from kafkalab.cluster import cluster_down

        cluster_down(faults_lab, wipe_data=True)
    wall_s = time.perf_counter() - t0
    tasks: dict[str, dict[str, Any]] = defaultdict(lambda: {"duration_s": 0.0, "instances": 0, "states": set()})
    dag_wall_s: float | None = None
    db = home / "airflow.db"
    if db.exists():
        with sqlite3.connect(db) as con:
            rows = con.execute(
                "SELECT task_id, duration, state FROM task_instance WHERE dag_id = ? AND run_id = "
                "(SELECT run_id FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1)",
                (dag_id, dag_id),
            ).fetchall()
            dag_wall_s = _dag_run_wall_s(con, dag_id)
        for task_id, duration, state in rows:
            t = tasks[task_id]
            t["duration_s"] += float(duration or 0.0)
            t["instances"] += 1
            t["states"].add(str(state))
    task_rows = sorted(({"task_id": k, "duration_s": v["duration_s"], "instances": v["instances"],
                         "states": sorted(v["states"])} for k, v in tasks.items()),
                       key=lambda r: -float(r["duration_s"]))
    share = spark_share(task_rows, dag_wall_s if dag_wall_s is not None else wall_s)
    print(format_spark_share(share))
    from kafkalab.cluster import load_descriptor

    return {
        "exit_code": rc, "cluster_descriptor": str(cluster),
        "cluster": cluster_facts(load_descriptor(cluster)), "wall_s": wall_s,
        "dag_wall_s": dag_wall_s, "logical_date": date, "tasks": task_rows, "spark_share": share,
    }
