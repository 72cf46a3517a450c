"""Spark Connect for real (:mod:`kafkalab.spark.connect`): one server of its own, started by
``kafkalab spark connect --port 30712`` (log and working directory under the test's
temporary lab home) and stopped by SIGTERM, and the lab's jobs run against it as clients by
``kafkalab aggregate`` with ``KAFKALAB_SPARK_MASTER=sc://…``, as ``make demo`` runs them. (In a process of their own: PySpark refuses a Connect session in a
process that has a classic one, and the other Spark tests share one here.)

- a latency run: aggregated and validated in one session; the aggregate rows equal those a
  classic local session computes from the same samples;
- a fault run: both jobs; its tables are swapped in whole (no staging folder left behind);
- bad input is the job's own one line and exit 2, as under spark-submit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kafkalab.paths import project_root
from kafkalab.procs import port_free
from kafkalab.store import LabData
from spark_jobs import aggregate_metrics
from tools.fake_fault_samples import write_fake_fault_run
from tools.fake_samples import write_cli_manifest, write_fake_samples

PORT = 30712
RUN = "20261122T030405Z-c0c0a1"
FAULT_RUN = "20261122T040506Z-c0c0a2"
CELL = ["scenario", "client", "payload", "profile"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``kafkalab spark connect --port 30712`` in the foreground, as a user runs it: yields
    the URL from its export line; SIGTERM stops it (exit 0) and frees the port."""
    home = tmp_path_factory.mktemp("spark-connect")
    env = {**os.environ, "KAFKALAB_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab.cli", "spark", "connect",
                             "--port", str(PORT)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=project_root())
    assert proc.stdout is not None and proc.stderr is not None
    lines = [proc.stdout.readline(), proc.stdout.readline()]  # `# ...`, then the export line
    try:
        url = f"sc://localhost:{PORT}"
        assert lines[0].startswith(f"# Spark Connect server on {url} "), lines
        assert lines[1] == f"export KAFKALAB_SPARK_MASTER={url}\n", lines
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    assert f"stopped the server on {url}" in proc.stderr.read()
    assert port_free(PORT)
    from kafkalab.spark.connect import token_path

    assert not token_path(PORT).exists()   # the token goes with its server
    assert (home / "logs" / f"spark-connect-{PORT}.log").is_file()


def aggregate(data: Path, run_id: str, url: str, home: Path,
              *extra: str) -> subprocess.CompletedProcess[str]:
    """``kafkalab aggregate --json`` of one run with ``KAFKALAB_SPARK_MASTER=url``; its logs
    under ``home``."""
    env = {**os.environ, "KAFKALAB_HOME": str(home), "KAFKALAB_SPARK_MASTER": url}
    env.pop("KAFKALAB_DATA_DIR", None)
    return subprocess.run([sys.executable, "-m", "kafkalab.cli", "aggregate", "--data-dir",
                           str(data), "--run-id", run_id, "--json", *extra],
                          capture_output=True, text=True, env=env, cwd=project_root(),
                          timeout=600, check=False)


def test_a_latency_run_gives_the_rows_a_classic_session_gives(
        server: str, spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_fake_samples(data, 600, RUN, seed=11, scenarios=["confluent-kafka", "rest"],
                       payloads=["1kb"], profiles=["latency"])
    write_cli_manifest(data, RUN)
    lab = LabData(data)

    proc = aggregate(data, RUN, server, tmp_path / "home", "--one-session")

    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    outcome = json.loads(proc.stdout)
    assert outcome["master"] == server
    assert [(j["job"], j["exit_code"], j["in_session"]) for j in outcome["jobs"]] == [
        ("aggregate", 0, False), ("validate", 0, True)]
    assert outcome["validation_success"] and (lab.validation(RUN) or {}).get("success") is True
    assert "spark-submit" not in proc.stderr
    first = Path(outcome["jobs"][0]["log"]).read_text().splitlines()[0]
    assert first.startswith(f"Spark Connect {server}: ") and "aggregate_metrics.py" in first
    assert (lab.manifest(RUN) or {}).get("stale_outputs") == []

    connected = pd.read_parquet(lab.aggregates_dir / f"run_id={RUN}")
    classic_out = tmp_path / "classic"
    aggregate_metrics.run(spark, str(data / "samples"), str(classic_out), [RUN])
    classic = pd.read_parquet(classic_out / f"run_id={RUN}")
    assert len(connected) == 2
    pd.testing.assert_frame_equal(
        connected.sort_values(CELL).reset_index(drop=True)[sorted(connected.columns)],
        classic.sort_values(CELL).reset_index(drop=True)[sorted(classic.columns)],
        check_dtype=False)


def test_a_fault_run_swaps_its_tables_in_whole(server: str,
                                               tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_fake_fault_run(data, FAULT_RUN)

    proc = aggregate(data, FAULT_RUN, server, tmp_path / "home")

    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    outcome = json.loads(proc.stdout)
    assert outcome["kind"] == "faults"
    assert [(j["job"], j["exit_code"]) for j in outcome["jobs"]] == [
        ("aggregate_faults", 0), ("validate_faults", 0)]
    out = data / "aggregates" / "faults"
    assert sorted(p.name for p in out.iterdir()) == [f"run_id={FAULT_RUN}"]  # no staging left
    tables = {p.name for p in (out / f"run_id={FAULT_RUN}").iterdir()}
    assert {"fault_trials.parquet", "fault_cells.parquet", "fault_timeline.parquet"} <= tables
    trials = pd.read_parquet(out / f"run_id={FAULT_RUN}" / "fault_trials.parquet")
    assert len(trials) == len(list((data / "faults").glob("run_date=*/run_id=*/trial=*")))


def test_a_run_without_samples_is_the_jobs_one_line(server: str,
                                                     tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_fake_samples(data, 50, RUN, seed=1, scenarios=["rest"], payloads=["1kb"],
                       profiles=["latency"])
    other = "20261122T000000Z-0e0e0e"
    write_cli_manifest(data, other, started_at="2026-11-22T00:00:00+00:00", ended_at=None)

    proc = aggregate(data, other, server, tmp_path / "home")

    assert proc.returncode == 2, proc.stdout + proc.stderr[-3000:]
    errors = [ln for ln in proc.stderr.splitlines() if "error" in ln]
    assert len(errors) == 1 and "aggregate_metrics: error: " in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (data / "aggregates" / f"run_id={other}").exists()


def test_a_client_without_the_servers_token_is_refused(server: str) -> None:
    """The server runs any code a client sends: only the lab's clients, which read its token
    from the 0600 file, get in; the token is on no command line."""
    from kafkalab.spark.connect import token_path

    token_file = token_path(PORT)
    assert token_file.stat().st_mode & 0o777 == 0o600
    token = token_file.read_text().strip()
    code = ("from pyspark.sql import SparkSession\n"
            f"print(SparkSession.builder.remote({server!r}).create().range(3).count())")
    env = {k: v for k, v in os.environ.items() if k != "SPARK_CONNECT_AUTHENTICATE_TOKEN"}
    refused = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=120)
    assert refused.returncode != 0 and "UNAUTHENTICATED" in refused.stderr
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            assert token.encode() not in cmdline.read_bytes(), cmdline
        except OSError:  # a process that ended meanwhile
            continue


def test_the_servers_sessions_start_without_pysparks_call_site_capture(server: str) -> None:
    """The server's driver starts with ``kafkalab.spark.submit.DRIVER_STATIC_CONF`` (as every
    lab driver does): a client's session reads the call-site capture off, so a job's
    DataFrame calls do not inspect the Python stack one by one."""
    from kafkalab.spark.connect import token_path
    from kafkalab.spark.submit import DRIVER_STATIC_CONF

    code = ("from pyspark.sql import SparkSession\n"
            f"s = SparkSession.builder.remote({server!r}).create()\n"
            f"print(repr({{k: s.conf.get(k) for k in {sorted(DRIVER_STATIC_CONF)!r}}}))")
    env = {**os.environ, "SPARK_CONNECT_AUTHENTICATE_TOKEN": token_path(PORT).read_text().strip()}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == repr(DRIVER_STATIC_CONF)
