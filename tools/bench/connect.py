"""Bench part (i), ``--connect``: one night's Spark work through spark-submit against the same
work through a warm Spark Connect server (:mod:`kafkalab.spark.connect`).

The run is a demo night's size (fake samples: HTTP and confluent-kafka at 1 KB, 210 rows a
cell), aggregated and validated in one session, as ``kafkalab aggregate --one-session`` does,
in a process of its own each time (``kafkalab aggregate --json``; the only difference between
the two sides is ``KAFKALAB_SPARK_MASTER``: ``local[*]`` or the server's ``sc://`` URL).
Rounds alternate the two sides; the server's start and its first (cold) job are timed apart
and left out of the warm figures. Both sides' aggregate rows are compared.

Per side: the wall time of the whole command (Python start, imports, the job, drift and the
report) and the job's own seconds (``jobs[0].seconds``: the spark-submit process, or the
client's job in-process: the Great Expectations import of that fresh process included).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from kafkalab.paths import project_root
from kafkalab.spark import connect
from kafkalab.store import LabData
from tools.fake_samples import write_cli_manifest, write_fake_samples

PORT = 25712
"""The bench's own Spark Connect port (not the demo's 15102, not a test's)."""

RUN = "20261121T000000Z-be0c01"
CELL = ["scenario", "client", "payload", "profile"]


def _manifest(lab: LabData) -> None:
    """The run's manifest as a fresh CLI run's (every output stale), before each round."""
    write_cli_manifest(lab.root, RUN, started_at="2026-11-21T00:00:00+00:00",
                       ended_at="2026-11-21T00:01:00+00:00", command="bench")


def _aggregate(data: Path, home: Path, master: str) -> tuple[float, float, dict[str, Any]]:
    """``kafkalab aggregate --one-session --json`` of the bench's run on ``master``:
    (wall s, the job's own s, its JSON document)."""
    env = {**os.environ, "KAFKALAB_HOME": str(home), "KAFKALAB_SPARK_MASTER": master}
    env.pop("KAFKALAB_DATA_DIR", None)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kafkalab.cli", "aggregate", "--data-dir",
                           str(data), "--run-id", RUN, "--one-session", "--json"],
                          capture_output=True, text=True, env=env, cwd=project_root(),
                          timeout=900, check=False)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"kafkalab aggregate on {master} exited {proc.returncode}: "
                           f"{proc.stderr.strip().splitlines()[-1:]}")
    doc = json.loads(proc.stdout)
    return wall, float(doc["jobs"][0]["seconds"]), doc


def _rows(data: Path) -> pd.DataFrame:
    df = pd.read_parquet(LabData(data).aggregates_dir / f"run_id={RUN}")
    return df.sort_values(CELL).reset_index(drop=True)[sorted(df.columns)]


def bench_connect(work: Path, rounds: int = 3) -> dict[str, Any]:
    """Run part (i) under ``work`` (removed after); returns its result document."""
    data, home = work / "data", work / "home"
    if work.exists():
        shutil.rmtree(work)
    write_fake_samples(data, 420, RUN, seed=21, scenarios=["rest", "confluent-kafka"],
                       payloads=["1kb"], profiles=["latency"])
    lab = LabData(data)
    sides: dict[str, dict[str, list[float]]] = {"spark_submit": {"wall_s": [], "job_s": []},
                                                "connect": {"wall_s": [], "job_s": []}}
    t0 = time.monotonic()
    server = connect.start_server(PORT, work / "connect-server.log", work / "connect-work")
    start_s = time.monotonic() - t0
    try:
        _manifest(lab)
        first_wall, first_job, _ = _aggregate(data, home, server.url)
        connected_rows = _rows(data)
        for _ in range(rounds):
            for side, master in (("spark_submit", "local[*]"), ("connect", server.url)):
                _manifest(lab)
                wall, job, _ = _aggregate(data, home, master)
                sides[side]["wall_s"].append(round(wall, 3))
                sides[side]["job_s"].append(round(job, 3))
                if side == "spark_submit":
                    submitted_rows = _rows(data)
    finally:
        connect.stop_server(server)
    same = connected_rows.equals(submitted_rows)
    medians = {side: {k: round(statistics.median(v), 3) for k, v in figures.items()}
               for side, figures in sides.items()}
    shutil.rmtree(work, ignore_errors=True)
    return {
        "run": "2 cells (rest, confluent-kafka) x 1 KB x 420 rows, aggregate + validate in "
               "one session, kafkalab aggregate --one-session in a fresh process each",
        "rounds": rounds, "server_start_s": round(start_s, 3),
        "first_connect": {"wall_s": round(first_wall, 3), "job_s": round(first_job, 3)},
        "samples": sides, "median": medians,
        "connect_over_submit": {
            k: round(medians["connect"][k] / medians["spark_submit"][k], 3)
            for k in ("wall_s", "job_s")},
        "same_aggregates": bool(same),
    }


def print_connect(result: dict[str, Any]) -> None:
    """Part (i)'s lines."""
    m, r = result["median"], result["connect_over_submit"]
    print("\n(i) one night's Spark work: spark-submit vs a warm Spark Connect server "
          f"(median of {result['rounds']} alternating rounds)")
    print(f"  spark-submit   job {m['spark_submit']['job_s']:6.1f} s   "
          f"command {m['spark_submit']['wall_s']:6.1f} s")
    print(f"  Spark Connect  job {m['connect']['job_s']:6.1f} s   "
          f"command {m['connect']['wall_s']:6.1f} s   "
          f"(ratio job {r['job_s']:.2f}, command {r['wall_s']:.2f})")
    print(f"  server start {result['server_start_s']:.1f} s; its first job "
          f"{result['first_connect']['job_s']:.1f} s (cold, not in the medians); "
          f"aggregates {'equal' if result['same_aggregates'] else 'DIFFER'}")
