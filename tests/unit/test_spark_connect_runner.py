"""How a lab job runs as a Spark Connect client (:mod:`kafkalab.spark.connect`), without a
server (a bare TCP listener stands in for its port), from the process's job host and as a
``python <script>`` alike: the script runs as ``__main__`` in a
Python process of its own with its arguments and the caller's working directory, its folder first on ``sys.path`` (as
``--py-files`` gives spark-submit's driver), ``$KAFKALAB_SPARK_MASTER`` naming the server and
no PySpark session variable of the caller's; its exit code and output come back; a URL
nothing answers at is one line. The server itself, and the lab's jobs against it:
``tests/spark/test_spark_connect.py``."""

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
from kafkalab.airflow.launcher import spark_conn
from kafkalab.errors import ClusterError, RunError
from kafkalab.paths import PACKAGE_DIR
from kafkalab.spark import connect, job_host

SCRIPT = '''\
import json, os, sys
import helper_beside_the_job  # found beside the script, as a py-file
import kafkalab.stats  # the lab's package, importable as on a spark-submit driver
print(json.dumps({"argv": sys.argv[1:], "master": os.environ["KAFKALAB_SPARK_MASTER"],
                  "gx": os.environ.get("GX_ANALYTICS_ENABLED"), "name": __name__,
                  "leaked": os.environ.get("SPARK_CONNECT_MODE_ENABLED"),
                  "cwd": os.getcwd()}), flush=True)
print("an error line", file=sys.stderr, flush=True)
if sys.argv[1] == "raise":
    raise RuntimeError("a bug in the job")
if sys.argv[1] == "hang":  # the fault the timeout tests inject: a job that never ends
    import time
    time.sleep(600)
if sys.argv[1] == "killed":  # ended by a signal that is not the caller's timeout
    import signal
    os.kill(os.getpid(), signal.SIGKILL)
if __name__ == "__main__":
    sys.exit(int(sys.argv[1]))
'''


@pytest.fixture(params=["job host", "python <script>"])
def runner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each job from the process's job host (:mod:`kafkalab.spark.job_host`), or as a
    ``python <script>`` of its own (``$KAFKALAB_SPARK_JOB_HOST=off``): the same behaviour."""
    monkeypatch.setattr(job_host, "_wanted", False)  # restored after the test
    if request.param == "job host":
        job_host.prestart()
        assert job_host.active()
    else:
        monkeypatch.setenv(job_host.JOB_HOST_ENV, "off")
    return str(request.param)


@pytest.fixture
def url() -> Iterator[str]:
    """An ``sc://`` URL whose port accepts connections (what a server's readiness is)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield connect.connect_url(listener.getsockname()[1])


@pytest.fixture
def job(tmp_path: Path) -> Path:
    folder = tmp_path / "jobs"
    folder.mkdir()
    (folder / "helper_beside_the_job.py").write_text("VALUE = 1\n")
    script = folder / "the_job.py"
    script.write_text(SCRIPT)
    return script


def test_the_script_runs_as_a_driver_program_and_its_exit_code_comes_back(
        runner: str, job: Path, url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")  # a session of the caller's
    monkeypatch.chdir(tmp_path)
    lines: list[str] = []

    code = connect.run_job(job, ["3", "--run-id", "r1"], url, out=lines.append)

    assert code == 3
    seen = json.loads(lines[0])
    assert seen == {"argv": ["3", "--run-id", "r1"], "master": url, "gx": "false",
                    "name": "__main__", "leaked": None, "cwd": str(tmp_path)}
    assert lines[1:] == ["an error line"]


def test_a_job_longer_than_its_timeout_is_killed_and_one_line(runner: str, job: Path,
                                                              url: str) -> None:
    lines: list[str] = []
    with pytest.raises(RunError, match=r"^the_job.py ran longer than 1 s$"):
        connect.run_job(job, ["hang"], url, out=lines.append, timeout_s=1)
    assert json.loads(lines[0])["argv"] == ["hang"]  # it ran, and was stopped


def test_a_job_killed_by_another_signal_within_its_timeout_is_not_called_a_timeout(
        runner: str, job: Path, url: str) -> None:
    """A job ended by SIGKILL (the kernel's OOM killer, an operator) well within its
    timeout: its exit code says the signal; it is not reported as having run too long (the
    timer's own end, when cancelled, once was taken for its firing)."""
    lines: list[str] = []
    assert connect.run_job(job, ["killed"], url, out=lines.append, timeout_s=600) == -9
    assert json.loads(lines[0])["argv"] == ["killed"]


def test_kill_after_fires_only_when_the_block_outlives_it() -> None:
    killed: list[bool] = []
    with procs.kill_after(600, lambda: killed.append(True)) as fired:
        pass
    assert not fired.is_set() and not killed
    with procs.kill_after(0.05, lambda: killed.append(True)) as fired:
        assert fired.wait(60)  # a hang, not a speed check
    assert killed == [True]
    with procs.kill_after(None, lambda: killed.append(True)) as fired:
        pass
    assert not fired.is_set() and killed == [True]


def test_the_job_host_ends_with_the_process_that_started_it(job: Path, url: str,
                                                            tmp_path: Path) -> None:
    """A process runs a job from its host and exits: the host (its child, idle) ends too,
    and removes its socket's folder. Before that, its first host is killed between two jobs
    (SIGKILL: it cannot clean up): the next job starts a new host and runs, and the killed
    one's folder is removed."""
    run = f"connect.run_job(Path({str(job)!r}), ['0'], {url!r}, out=lambda _l: None) == 0"
    code = (f"import os, signal; from pathlib import Path; from kafkalab.spark import connect, job_host\n"
            f"job_host.prestart()\n"
            f"assert {run}\n"
            f"killed = job_host._host\n"
            f"os.kill(killed.proc.pid, signal.SIGKILL); killed.proc.wait()\n"
            f"assert killed.folder.exists()\n"
            f"assert {run}\n"
            f"assert job_host._host is not killed and not killed.folder.exists()\n"
            f"print(job_host._host.folder, job_host._host.proc.pid)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ,
                                                          "PYTHONPATH": str(PACKAGE_DIR.parent)})
    assert done.returncode == 0, done.stderr
    folder, host_pid = done.stdout.split()[-2], int(done.stdout.split()[-1])
    deadline = time.monotonic() + 30  # a hang, not a speed check
    while (Path(f"/proc/{host_pid}").exists() and _state(host_pid) != "Z") \
            or Path(folder).exists():
        assert time.monotonic() < deadline, f"job host {host_pid} outlived its caller"
        time.sleep(0.1)


def _state(pid: int) -> str:
    """The process state letter of ``pid`` (``Z``: ended, not yet reaped), or "" if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def test_output_to_a_file_exit_0_and_a_job_that_raises(runner: str, job: Path, url: str,
                                                      tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    with log.open("w") as fh:
        assert connect.run_job(job, ["0"], url, out=fh) == 0
    assert '"argv": ["0"]' in log.read_text() and "an error line" in log.read_text()
    lines: list[str] = []
    assert connect.run_job(job, ["raise"], url, out=lines.append) == 1
    assert lines[-1] == "RuntimeError: a bug in the job"


def test_a_url_nothing_answers_at_is_one_line(job: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]  # bound, not listening: refuses connections
        with pytest.raises(ClusterError, match=rf"^no Spark Connect server answers at "
                                               rf"sc://localhost:{free}: start one"):
            connect.run_job(job, ["0"], connect.connect_url(free))


def test_urls_and_the_airflow_connection() -> None:
    assert connect.is_connect_url("sc://127.0.0.1:15102")
    assert not connect.is_connect_url("local[*]") and not connect.is_connect_url(None)
    assert connect.connect_url(30799) == "sc://localhost:30799"
    assert json.loads(spark_conn(connect.connect_url(30799))) == {
        "conn_type": "spark_connect", "host": "localhost", "port": 30799}


def test_a_taken_port_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ClusterError, match=rf"^port {port} on 127.0.0.1 is already in use"):
            connect.start_server(port, tmp_path / "server.log", tmp_path / "work")
    assert not (tmp_path / "server.log").exists()


def test_the_server_command_binds_loopback_on_its_port() -> None:
    cmd = connect.server_command(30799)
    assert cmd[0].endswith("/bin/spark-submit") and connect.SERVER_CLASS in cmd
    assert "spark.connect.grpc.binding.address=127.0.0.1" in cmd
    assert "spark.connect.grpc.binding.port=30799" in cmd
    assert "spark.ui.enabled=false" in cmd
    assert "spark.python.daemon.module=kafkalab.spark.worker_daemon" in cmd  # local[2]
    assert not [a for a in cmd if a.startswith("spark.sql.codegen")]
    # extra settings are added; they never move the service off its address and port
    extra = connect.server_command(30799, {"spark.sql.codegen.wholeStage": "false",
                                           "spark.connect.grpc.binding.port": "1"})
    assert "spark.sql.codegen.wholeStage=false" in extra
    assert "spark.connect.grpc.binding.port=30799" in extra
    assert "spark.connect.grpc.binding.port=1" not in extra


def test_a_lab_client_gets_its_servers_token_through_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv(connect.TOKEN_ENV, "a-stale-token-of-the-caller")
    assert connect.client_url("sc://127.0.0.1:30798") == ("sc://127.0.0.1:30798", None)
    path = connect.token_path(30798)
    assert path.is_relative_to(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("tok\n")
    for given in ("sc://127.0.0.1:30798", "sc://localhost:30798", "sc://localhost:30798/"):
        url, token = connect.client_url(given)
        assert token == "tok" and url.startswith("sc://localhost:30798"), given
    # a server of the user's: its own URL, its own parameters, nothing added
    for other in ("sc://spark.example:30798", "sc://localhost:30798/;token=theirs",
                  "sc://localhost:15002"):
        assert connect.client_url(other) == (other, None)
    env = connect.job_env("sc://127.0.0.1:30798")
    assert env["KAFKALAB_SPARK_MASTER"] == "sc://localhost:30798"
    assert env[connect.TOKEN_ENV] == "tok"
    assert connect.TOKEN_ENV not in connect.job_env("sc://spark.example:1")   # never leaked
