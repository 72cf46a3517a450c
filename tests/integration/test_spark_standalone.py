"""A real Spark standalone cluster (a master and two workers from the installed PySpark's
``spark-class``) runs a DAG run's Spark work, submitted exactly as the DAG submits it with
the param ``one_spark_session`` on: Airflow's ``SparkSubmitHook`` with the ``spark_default``
connection that ``KAFKALAB_SPARK_MASTER`` becomes (``launcher.spark_conn``) and the DAG's own
application, arguments (``--validate-out``: the aggregation validates the run in its own
session), py-files, conf and env (``kafkalab.spark.submit``; the conf with the Spark tests'
:data:`tests.spark_settings.INTERPRETED`, as the local reference's session). The aggregates
equal a
``local[2]`` run of the same job cell by cell (the job's ``run`` in a local session of this
process: the Spark tests' one when they ran before in the same pytest, else its own), and
the master and the workers' work dirs show that the executors really ran on the workers.

One application, not the DAG's default two (aggregate, then validate), since 2026-12-07:
each is a driver and an executor on each worker (the module used 216 CPU-s with two, 174
with one), and the second tested nothing the first does not (the same submission path,
master and workers); ``validate_metrics.py`` as an application of its own is spark-submitted
by ``tests/spark/test_validate_metrics.py``.

The cluster authenticates: a submission with the lab's secret file runs (the DAG test's
application, submitted with it as every lab submission is), one without it is refused by
the master (issue 26).

Own ports (master 27077, workers 27078-27079; web UIs 28180-28182) and lab dir; the module
fixture stops everything it started, also when a test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pandas as pd
import pytest

from kafkalab import procs
from kafkalab.airflow.launcher import spark_conn
from kafkalab.paths import project_root
from kafkalab.spark import spark_down, spark_status
from kafkalab.spark.master_api import MasterView, fetch_master
from kafkalab.spark.submit import (
    auth_properties_file,
    one_session_args,
    spark_application,
    spark_conf,
    spark_env,
    spark_job_args,
    spark_py_files,
)
from kafkalab.store import AGGREGATES_DIR, VALIDATION_DIR
from tests.spark_settings import INTERPRETED, local_test_session
from tools.fake_samples import write_fake_samples

MASTER_PORT = 27077
WEBUI_PORT = 28180
"""Workers use 27078-27079 and 28181-28182 (``StandaloneSpec``'s rule: port + i)."""
MASTER_URL = f"spark://127.0.0.1:{MASTER_PORT}"
RUN = "20261122T030405Z-5a5a5a"
ROWS = 3000
CELL_KEYS = ["run_id", "scenario", "client", "payload", "profile"]
VENV_BIN = project_root() / ".venv" / "bin"
APP_NAME = "kafkalab-aggregate-metrics"
"""The name the DAG gives its aggregation's spark-submit task
(:mod:`kafkalab.airflow.chains.latency`)."""


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalab.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300, check=False)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``kafkalab spark up`` in a lab dir of its own; stopped (by PID) after the module."""
    lab = tmp_path_factory.mktemp("lab-spark")
    env = {**os.environ, "KAFKALAB_HOME": str(lab), "SPARK_LOCAL_IP": "127.0.0.1"}
    try:
        up = _cli("spark", "up", "--port", str(MASTER_PORT), "--webui-port", str(WEBUI_PORT),
                  env=env)
        assert up.returncode == 0, up.stdout + up.stderr[-3000:]
        yield {"lab": lab, "env": env, "up": up, "status": spark_status(lab)}
    finally:
        spark_down(lab)


@contextlib.contextmanager
def _as_airflow_task(master: str, airflow_home: Path) -> Iterator[None]:
    """The environment an Airflow worker gives a SparkSubmitOperator task: the connection
    from ``KAFKALAB_SPARK_MASTER`` (``launcher.spark_conn``), the venv's ``spark-submit``
    first on ``PATH``."""
    with mock.patch.dict(os.environ, {
        "AIRFLOW_HOME": str(airflow_home),
        "AIRFLOW_CONN_SPARK_DEFAULT": spark_conn(master),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }):
        yield


def _hook(master: str, data: Path, lab: Path) -> Any:
    """The ``SparkSubmitHook`` of the aggregation of run :data:`RUN` over ``data`` as the
    DAG's task builds it with ``one_spark_session`` on (``--validate-out``; the cluster's
    secret file as ``--properties-file``: ``operators.run_spark_job``); call inside
    :func:`_as_airflow_task`."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    hook = SparkSubmitHook(
        conn_id="spark_default",
        application_args=[*spark_job_args("aggregate", RUN, data), *one_session_args(data)],
        py_files=spark_py_files(), conf={**spark_conf(), **INTERPRETED}, env_vars=spark_env(),
        name=APP_NAME, properties_file=auth_properties_file(master, env={}, lab=lab))
    assert hook._connection["master"] == master  # the switch reached spark-submit
    return hook


def _submit(master: str, data: Path, airflow_home: Path, lab: Path) -> None:
    """The aggregation of run :data:`RUN` over ``data``, validating in its session, submitted
    as the DAG's task submits it."""
    with _as_airflow_task(master, airflow_home):
        _hook(master, data, lab).submit(spark_application("aggregate"))


@pytest.fixture(scope="module")
def local_session() -> Iterator[Any]:
    """The tests' ``local[2]`` session (:func:`tests.spark_settings.local_test_session`): the
    one the Spark tests share when they ran before in this process (left running), else one
    of this module's, stopped after it."""
    from pyspark import SparkContext

    owned = SparkContext._active_spark_context is None
    session = local_test_session()
    yield session
    if owned:
        session.stop()


def _aggregates(data: Path) -> pd.DataFrame:
    df = pd.read_parquet(data / AGGREGATES_DIR / f"run_id={RUN}")
    df["run_id"] = df["run_id"].astype(str) if "run_id" in df else RUN
    return df.sort_values(CELL_KEYS).reset_index(drop=True)[sorted(df.columns)]


def _listen_addresses(pid: int) -> set[str]:
    """Local addresses of the TCP sockets ``pid`` listens on (``/proc/net/tcp*``)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            inodes.add(os.readlink(fd))
    out = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and f"socket:[{cols[9]}]" in inodes:
                out.add(cols[1].rsplit(":", 1)[0])
    return out


def test_up_starts_a_master_and_two_registered_workers_on_loopback(
        standalone: dict[str, Any]) -> None:
    up = standalone["up"]
    assert up.stdout.strip().splitlines()[-1] == f"export KAFKALAB_SPARK_MASTER={MASTER_URL}"
    st = standalone["status"]
    assert st["status"] == "up" and st["master"]["status"] == "ALIVE"
    assert [(w["id"], w["port"], w["registered"], w["cores"], w["memory_mb"])
            for w in st["workers"]] == [(1, 27078, "ALIVE", 1, 1024), (2, 27079, "ALIVE", 1, 1024)]
    pids = [st["master"]["pid"], *(w["pid"] for w in st["workers"])]
    # every listener of every daemon (RPC and web UI) is on 127.0.0.1 only
    loopback = {"0100007F", "0000000000000000FFFF00000100007F"}
    for pid in pids:
        addresses = _listen_addresses(pid)
        assert len(addresses) >= 1 and addresses <= loopback, (pid, addresses)
    # up again: the same cluster, nothing started
    again = _cli("spark", "up", "--port", str(MASTER_PORT), "--webui-port", str(WEBUI_PORT),
                 env=standalone["env"])
    assert again.returncode == 0 and "already up" in again.stderr
    assert [spark_status(standalone["lab"])["master"]["pid"],
            *(w["pid"] for w in spark_status(standalone["lab"])["workers"])] == pids


def test_a_dag_runs_spark_jobs_on_the_workers_with_local_modes_aggregates(
        standalone: dict[str, Any], local_session: Any, tmp_path: Path) -> None:
    on_cluster, local = tmp_path / "cluster-data", tmp_path / "local-data"
    write_fake_samples(on_cluster, ROWS, RUN, seed=21)
    shutil.copytree(on_cluster / "samples", local / "samples")

    lab = standalone["lab"]
    _submit(MASTER_URL, on_cluster, tmp_path / "airflow", lab)
    # the local[2] reference: the same job's ``run`` in a local session (the switch set to
    # local[2] reaches the hook's master; the job itself runs in-process, no third JVM)
    with _as_airflow_task("local[2]", tmp_path / "airflow"):
        _hook("local[2]", local, lab)
    from spark_jobs import aggregate_metrics

    aggregate_metrics.run(local_session, str(local / "samples"), str(local / AGGREGATES_DIR),
                          [RUN])

    # the same aggregates, cell by cell (the exact percentiles exactly)
    got, want = _aggregates(on_cluster), _aggregates(local)
    assert len(got) > 10 and list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-12)
    # validated in the aggregation's session, on the cluster
    doc = json.loads((on_cluster / VALIDATION_DIR / f"{RUN}.json").read_text())
    assert doc["success"] is True and doc["failed_expectations"] == []
    assert doc["suites"]["aggregates"]["statistics"]["evaluated_expectations"] > 10

    # the application ran on the standalone master, with both workers' cores ...
    view = fetch_master(f"http://127.0.0.1:{WEBUI_PORT}")
    assert isinstance(view, MasterView)
    apps = {a.name: a for a in view.completed_apps}
    assert APP_NAME in apps, apps
    assert apps[APP_NAME].state == "FINISHED" and apps[APP_NAME].cores == 2
    # ... and each worker ran an executor of it, which ran tasks
    for worker in standalone["status"]["workers"]:
        executor_logs = list((Path(worker["work_dir"]) / apps[APP_NAME].app_id).glob("*/stderr"))
        assert executor_logs, worker["work_dir"]
        assert any("Finished task" in p.read_text(errors="replace") for p in executor_logs)


PROBE = "from pyspark.sql import SparkSession\n" \
        "spark = SparkSession.builder.getOrCreate()\n" \
        "print('PROBE RAN', spark.range(7).count(), flush=True)\n"
REFUSED = ("Failed to connect to master", "All masters are unresponsive")


def _probe(script: Path, name: str, env: dict[str, str], *extra: str,
           wait_s: float = 240.0) -> tuple[int | None, list[str]]:
    """``spark-submit`` of a tiny job to the cluster; its output until it exits, or until it
    says the master refused it (then it is stopped: the driver would retry for a minute)."""
    cmd = [str(VENV_BIN / "spark-submit"), "--master", MASTER_URL, "--name", name,
           "--conf", "spark.ui.enabled=false", *extra, str(script)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    lines: list[str] = []
    over = threading.Event()  # the master refused it, or its output ended (it exited)

    def read() -> None:
        for line in proc.stdout or []:
            lines.append(line)
            if any(r in line for r in REFUSED):
                over.set()
        over.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    over.wait(wait_s)
    if not any(r in line for line in lines for r in REFUSED):
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)  # its output ended: let it exit
    code = proc.poll()
    if code is None:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    reader.join(10)
    return code, lines


def test_the_master_refuses_a_submission_without_the_secret(
        standalone: dict[str, Any], tmp_path: Path) -> None:
    lab = standalone["lab"]
    secret_file = auth_properties_file(MASTER_URL, env={}, lab=lab)
    assert secret_file == str(lab / "spark" / "auth.properties")
    assert (Path(secret_file).stat().st_mode & 0o777) == 0o600
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    env = {**{k: v for k, v in standalone["env"].items() if not k.startswith("PYSPARK_GATEWAY")},
           **spark_env(), "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    # without the secret: the driver never reaches the master, the job never runs
    _, out = _probe(script, "kafkalab-probe-no-secret", env)
    assert not any("PROBE RAN" in line for line in out), out[-20:]
    assert any(r in line for line in out for r in REFUSED), out[-20:]
    # with it, as every lab submission passes it, a job runs on the cluster: the DAG test's
    # application (submitted with this file) FINISHED there
    view = fetch_master(f"http://127.0.0.1:{WEBUI_PORT}")
    assert isinstance(view, MasterView)
    names = {a.name for a in [*view.active_apps, *view.completed_apps]}
    assert "kafkalab-probe-no-secret" not in names


def test_down_stops_exactly_what_up_started(standalone: dict[str, Any]) -> None:
    st = spark_status(standalone["lab"])
    pids = [st["master"]["pid"], *(w["pid"] for w in st["workers"])]
    down = _cli("spark", "down", env=standalone["env"])
    assert down.returncode == 0, down.stderr
    assert down.stdout.splitlines() == [
        f"worker 2 pid {pids[2]}: stopped", f"worker 1 pid {pids[1]}: stopped",
        f"master pid {pids[0]}: stopped"]
    assert not any(procs.pid_alive(p) for p in pids)
    for port in (27077, 27078, 27079, 28180, 28181, 28182):
        assert not procs.port_in_use(port), port
    # no executor or daemon of this lab is left
    left = subprocess.run(["pgrep", "-f", str(standalone["lab"])], capture_output=True, text=True)
    assert left.stdout.strip() == ""
    assert spark_status(standalone["lab"])["status"] == "down"
    status = _cli("spark", "status", env=standalone["env"])
    assert status.returncode == 1 and "down" in status.stdout
