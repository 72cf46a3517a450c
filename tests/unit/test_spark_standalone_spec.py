"""The Spark standalone cluster without a JVM: spec and refusals, command lines and
environment, the master's JSON, state handling (stale, foreign pids), the CLI's one-line
errors. The real cluster: tests/integration/test_spark_standalone.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab import procs
from kafkalab.cli import build_parser, main
from kafkalab.errors import ClusterError, ConfigError
from kafkalab.spark import StandaloneSpec, export_line, spark_down, spark_status, spark_up
from kafkalab.spark.master_api import fetch_master, parse_master_json
from kafkalab.spark.spec import (
    MASTER_CLASS,
    WORKER_CLASS,
    SparkLayout,
    daemon_env,
    master_command,
    memory_mb,
    spark_home,
    worker_command,
)
from kafkalab.spark.standalone import SparkState

MASTER_JSON = {
    "url": "spark://127.0.0.1:7077",
    "workers": [
        {"id": "worker-20261122151100-127.0.0.1-7078", "host": "127.0.0.1", "port": 7078,
         "webuiaddress": "http://127.0.0.1:8181", "cores": 1, "coresused": 0, "coresfree": 1,
         "memory": 1024, "memoryused": 0, "memoryfree": 1024, "state": "DEAD",
         "lastheartbeat": 1795360260000},
        {"id": "worker-20261122151246-127.0.0.1-7078", "host": "127.0.0.1", "port": 7078,
         "webuiaddress": "http://127.0.0.1:8181", "cores": 1, "coresused": 1, "coresfree": 0,
         "memory": 1024, "memoryused": 1024, "memoryfree": 0, "state": "ALIVE",
         "lastheartbeat": 1795360366000},
        {"id": "worker-20261122151246-127.0.0.1-7079", "host": "127.0.0.1", "port": 7079,
         "cores": 1, "coresused": 0, "memory": 1024, "memoryused": 0, "state": "ALIVE"},
    ],
    "aliveworkers": 2, "cores": 2, "coresused": 1, "memory": 2048, "memoryused": 1024,
    "activeapps": [{"id": "app-20261122151300-0001", "name": "kafkalab-validate-metrics",
                    "cores": 1, "state": "RUNNING", "duration": 2000}],
    "completedapps": [{"id": "app-20261122151250-0000", "name": "kafkalab-aggregate-metrics",
                       "cores": 2, "state": "FINISHED", "duration": 9000}],
    "activedrivers": [], "completeddrivers": [], "status": "ALIVE",
}
"""The shape of a master's ``/json/`` (Spark 4.1), with a worker that was restarted."""


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lab dir of its own, also for the CLI (``KAFKALAB_HOME``)."""
    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path / "lab"))
    return tmp_path / "lab"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------- spec


def test_default_spec_ports_urls_and_export_line() -> None:
    spec = StandaloneSpec().validate()
    assert spec.master_url == "spark://127.0.0.1:7077"
    assert spec.webui_url == "http://127.0.0.1:8180"
    assert spec.ports() == {"master": 7077, "master UI": 8180, "worker 1": 7078,
                            "worker 1 UI": 8181, "worker 2": 7079, "worker 2 UI": 8182}
    assert 8080 not in spec.ports().values()  # Airflow's UI
    assert export_line(spec.master_url) == "export KAFKALAB_SPARK_MASTER=spark://127.0.0.1:7077"
    assert StandaloneSpec.from_dict({**spec.as_dict(), "future_key": 1}) == spec
    assert (memory_mb("1g"), memory_mb("1536m"), memory_mb("2G")) == (1024, 1536, 2048)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"workers": 0}, "--workers must be 1..8, got 0"),
    ({"workers": 9}, "--workers must be 1..8, got 9"),
    ({"worker_cores": 0}, "--worker-cores must be at least 1, got 0"),
    ({"worker_memory": "lots"}, "--worker-memory 'lots' is not like 1g or 1536m"),
    ({"worker_memory": "512m"}, "--worker-memory 512m is below 1g"),
    ({"master_port": 80}, "--port 80: the cluster needs 80..82, which must lie in 1024..65535"),
    ({"webui_port": 65534}, "--webui-port 65534: the cluster needs 65534..65536"),
    ({"webui_port": 7078}, "overlap: master UI and worker 1 would both use port 7078"),
    ({"master_port": 8179}, "overlap: master UI and worker 1 would both use port 8180"),
])
def test_spec_refusals_name_the_option(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        StandaloneSpec(**kwargs).validate()  # type: ignore[arg-type]
    assert message in str(err.value)


def test_commands_bind_loopback_and_carry_their_marker(tmp_path: Path) -> None:
    home, layout, spec = spark_home(), SparkLayout(tmp_path), StandaloneSpec(master_port=27077,
                                                                            webui_port=28180)
    assert (home / "bin" / "spark-class").is_file() and (home / "jars").is_dir()
    m = master_command(home, spec, layout)
    assert m[:2] == [str(home / "bin" / "spark-class"), MASTER_CLASS]
    assert m[2:] == ["--host", "127.0.0.1", "--port", "27077", "--webui-port", "28180",
                     "--properties-file", str(tmp_path / "spark/conf/master.properties")]
    w = worker_command(home, spec, layout, 2)
    assert w[1:3] == [WORKER_CLASS, "spark://127.0.0.1:27077"]
    assert w[3:] == ["--host", "127.0.0.1", "--port", "27079", "--webui-port", "28182",
                     "--cores", "1", "--memory", "1g",
                     "--work-dir", str(tmp_path / "spark/work/worker-2"),
                     "--properties-file", str(tmp_path / "spark/conf/worker-2.properties")]
    env = daemon_env(home, layout, {"PATH": "/bin", "PYSPARK_GATEWAY_PORT": "1",
                                    "PYSPARK_GATEWAY_SECRET": "s"})
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1" and env["SPARK_HOME"] == str(home)
    assert env["SPARK_CONF_DIR"] == str(tmp_path / "spark/conf")
    assert env["SPARK_WORKER_DIR"] == str(tmp_path / "spark/work")
    assert "PYSPARK_GATEWAY_PORT" not in env and "PYSPARK_GATEWAY_SECRET" not in env
    assert env["PATH"] == "/bin" and env["PYSPARK_PYTHON"] == sys.executable


# --------------------------------------------------------------------------- master JSON


def test_master_json_alive_workers_by_port_and_apps() -> None:
    view = parse_master_json(MASTER_JSON)
    assert view.status == "ALIVE" and view.url == "spark://127.0.0.1:7077"
    w1 = view.alive_on("127.0.0.1", 7078)  # the restarted one, not the DEAD entry
    assert w1 is not None and w1.worker_id.endswith("151246-127.0.0.1-7078")
    assert (w1.cores, w1.cores_used, w1.memory_mb, w1.memory_used_mb) == (1, 1, 1024, 1024)
    assert view.alive_on("127.0.0.1", 7080) is None
    assert [a.name for a in view.active_apps] == ["kafkalab-validate-metrics"]
    done = view.completed_apps[0]
    assert (done.app_id, done.state, done.cores, done.duration_ms) == (
        "app-20261122151250-0000", "FINISHED", 2, 9000)
    empty = parse_master_json({})
    assert empty.workers == () and empty.completed_apps == () and empty.status == ""


def test_fetch_master_is_none_when_nothing_answers() -> None:
    assert fetch_master(f"http://127.0.0.1:{_free_port()}", 0.5) is None


# --------------------------------------------------------------------------- state


def _write_state(lab: Path, state: SparkState) -> None:
    layout = SparkLayout(lab)
    layout.root.mkdir(parents=True, exist_ok=True)
    layout.state_path.write_text(json.dumps(state))


def _record(role: str, i: int | None, pid: int, marker: str, port: int) -> dict[str, object]:
    return {"role": role, "id": i, "pid": pid, "port": port, "webui_port": port + 1,
            "marker": marker, "log": "/nonexistent.log", "cmdline": ["x"], "cwd": "/"}


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A process whose command line carries a marker, as a recorded daemon's does."""
    marker = str(tmp_path / "lab" / "spark" / "conf" / "master.properties")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker],
                            start_new_session=True)
    deadline = time.monotonic() + 5
    while not procs.runs(proc.pid, marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def test_nothing_up_status_down_and_cli(lab: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert spark_status(lab)["status"] == "down" and spark_down(lab) == []
    assert main(["spark", "status"]) == 1
    assert "spark standalone: down" in capsys.readouterr().out
    assert main(["spark", "down"]) == 0
    assert capsys.readouterr().out == "spark down: nothing was running\n"
    assert main(["spark", "status", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "down"


def test_stale_state_is_down_and_a_foreign_pid_is_never_signalled(lab: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _write_state(lab, {"spec": StandaloneSpec().as_dict(), "processes": [
        _record("master", None, os.getpid(), "/no/such/marker.properties", 7077),  # recycled pid
        _record("worker", 1, dead.pid, "/w1.properties", 7078),
    ]})  # type: ignore[typeddict-item]
    st = spark_status(lab)
    assert st["status"] == "down" and st["master"]["alive"] is False
    assert [w["alive"] for w in st["workers"]] == [False]
    actions = {r["role"]: r["action"] for r in spark_down(lab)}
    assert actions == {"master": "skipped (pid now belongs to another process)",
                       "worker": "not-running"}
    assert not SparkLayout(lab).state_path.exists() and procs.pid_alive(os.getpid())


def test_a_different_cluster_up_is_refused_and_down_stops_the_recorded_pid(
        lab: Path, stand_in: subprocess.Popen[bytes]) -> None:
    marker = str(lab / "spark" / "conf" / "master.properties")
    _write_state(lab, {"spec": StandaloneSpec().as_dict(),
                       "processes": [_record("master", None, stand_in.pid, marker, 7077)]})  # type: ignore[typeddict-item]
    with pytest.raises(ClusterError, match="already up here with master spark://127.0.0.1:7077 "
                       r"\(web UI port 8180, 2 worker\(s\) × 1 core\(s\), 1g\); run "
                       "`kafkalab spark down` first"):
        spark_up(StandaloneSpec(master_port=27077), lab_dir=lab)
    assert spark_status(lab)["status"] == "degraded"  # ours and alive, but no master answers
    [report] = spark_down(lab)
    assert report["action"] == "stopped" and report["pid"] == stand_in.pid
    assert stand_in.wait(5) is not None and not SparkLayout(lab).state_path.exists()


def test_a_taken_port_refuses_before_anything_starts(
        lab: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = int(s.getsockname()[1])
        code = main(["spark", "up", "--port", str(port), "--webui-port", str(port + 2),
                     "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 3
    assert err == f"kafkalab: error: port {port} on 127.0.0.1 is already in use (by pid {os.getpid()})\n"
    assert not SparkLayout(lab).state_path.exists() and spark_status(lab)["status"] == "down"


# --------------------------------------------------------------------------- CLI


@pytest.mark.parametrize(("argv", "message"), [
    (["spark", "up", "--workers", "0"], "kafkalab: error: --workers must be 1..8, got 0"),
    (["spark", "up", "--worker-memory", "lots"],
     "kafkalab: error: --worker-memory 'lots' is not like 1g or 1536m"),
    (["spark", "up", "--port", "7077", "--webui-port", "7078"],
     "kafkalab: error: --port 7077 and --webui-port 7078 overlap"),
])
def test_bad_input_is_one_line_and_exit_2(lab: Path, argv: list[str], message: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
    assert not SparkLayout(lab).state_path.exists()


def test_argparse_errors_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["spark", "up", "--port", "x"])
    assert exit_.value.code == 2
    assert "argument --port: invalid int value: 'x'" in capsys.readouterr().err
    for argv in (["spark"], ["spark", "up"], ["spark", "status"], ["spark", "down"]):
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args([*argv, "--help"])
        assert exit_.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith("usage: kafkalab spark")
