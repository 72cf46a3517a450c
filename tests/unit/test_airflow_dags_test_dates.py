"""Several ``airflow dags test`` dates in one process: the step protocol between the child
(kafkalab.airflow.dags_test_dates) and the launcher, and its bad input. The child runs for
real (Airflow's CLI, several dates) in tests/e2e/test_make_demo.py through ``kafkalab demo``."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafkalab.airflow import dags_test_dates as child
from kafkalab.airflow import launcher
from kafkalab.demo import demo_airflow_home


def test_a_failed_dag_run_reads_as_exit_1() -> None:
    assert child._exit_code(SystemExit("DagRun failed")) == 1
    assert child._exit_code(SystemExit(None)) == 0
    assert child._exit_code(SystemExit(3)) == 3
    assert child.date_marker("nightly_latency_regression", "2026-11-18") == \
        "===== nightly_latency_regression 2026-11-18 ====="


@pytest.mark.parametrize(("argv", "message"), [
    (["d", "--dates", " , "], "--dates: no date given"),
    (["d", "--dates", "2026-11-18", "--conf", "{nope"], "--conf is not valid JSON"),
])
def test_bad_arguments_exit_2_with_one_line(argv: list[str], message: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "kafkalab.airflow.dags_test_dates", *argv],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


class _FakeChild:
    """What ``subprocess.Popen`` returns: status lines on stdout, then an exit code."""

    def __init__(self, lines: list[str], code: int) -> None:
        self.stdout = io.StringIO("".join(lines))
        self.returncode = code

    def wait(self) -> int:
        return self.returncode

    def poll(self) -> int:
        return self.returncode

    def kill(self) -> None:
        pass


def _steps(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, lines: list[str],
           dates: list[str]) -> tuple[list[launcher.TestStep], list[Any]]:
    cmds: list[Any] = []

    def popen(cmd: list[str], **kwargs: Any) -> _FakeChild:
        cmds.append(cmd)
        return _FakeChild(lines, 1)

    monkeypatch.setattr(launcher.subprocess, "Popen", popen)
    out = io.StringIO()
    steps = list(launcher.dags_test_dates("nightly_latency_regression", dates, {"messages": 5},
                                          out, home=tmp_path / "home"))
    return steps, cmds


def test_each_step_is_yielded_and_an_unreported_one_reads_as_minus_1(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    lines = [json.dumps({"step": "prepare", "name": "prepare", "exit_code": 0, "wall_s": 2.5}),
             "not a status line",
             json.dumps({"step": "date", "name": "2026-11-18", "exit_code": 1, "wall_s": 30.0})]
    steps, cmds = _steps(monkeypatch, tmp_path, [line + "\n" for line in lines],
                         ["2026-11-18", "2026-11-19"])
    assert steps == [launcher.TestStep("prepare", "prepare", 0, 2.5),
                     launcher.TestStep("date", "2026-11-18", 1, 30.0),
                     launcher.TestStep("date", "2026-11-19", -1, 0.0)]  # the child died
    (cmd,) = cmds
    assert cmd[1:4] == ["-m", "kafkalab.airflow.dags_test_dates", "nightly_latency_regression"]
    assert cmd[cmd.index("--dates") + 1] == "2026-11-18,2026-11-19"
    assert json.loads(cmd[cmd.index("--conf") + 1]) == {"messages": 5}
    assert "--prepare" in cmd


def test_the_demo_gets_an_airflow_home_per_data_dir(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    """The DAGs' assets carry the data dir: a second data dir in one Airflow DB would make
    them inactive, so a data dir other than the default gets a home of its own."""
    from kafkalab.paths import airflow_home, data_dir

    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path / "lab"))
    monkeypatch.delenv("AIRFLOW_HOME", raising=False)
    assert demo_airflow_home(data_dir()) == airflow_home()
    one, two = demo_airflow_home(tmp_path / "a"), demo_airflow_home(tmp_path / "b")
    assert one != two and one.parent == tmp_path / "lab"
    assert one.name.startswith("airflow-demo-")
    assert demo_airflow_home(tmp_path / "a") == one  # stable
    # a data dir named by $KAFKALAB_DATA_DIR gets its own home too (it shared the default one,
    # whose assets carry the default data dir's URIs: every asset-writing task failed)
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(tmp_path / "a"))
    assert demo_airflow_home(data_dir()) == one != airflow_home()


class _GatedChild(_FakeChild):
    """A child started with --gate: it takes the go on standard input."""

    def __init__(self, lines: list[str], code: int) -> None:
        super().__init__(lines, code)
        self.stdin = io.StringIO()
        self.killed = False

    def kill(self) -> None:
        self.killed = True


def test_meanwhile_runs_while_the_child_waits_at_its_gate_then_the_go(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The caller's work runs once the child is spawned (with --gate), before any step is
    read; then the child gets its go and the steps follow."""
    events: list[str] = []
    children: list[_GatedChild] = []

    def popen(cmd: list[str], **kwargs: Any) -> _GatedChild:
        assert "--gate" in cmd and kwargs["stdin"] == subprocess.PIPE
        events.append("spawned")
        child = _GatedChild([json.dumps({"step": "prepare", "name": "prepare", "exit_code": 0,
                                         "wall_s": 1.0}) + "\n"], 0)
        child.stdin.close = lambda: events.append("go: " + child.stdin.getvalue())  # type: ignore[method-assign]
        children.append(child)
        return child

    monkeypatch.setattr(launcher.subprocess, "Popen", popen)
    steps = launcher.dags_test_dates("d", [], None, io.StringIO(), home=tmp_path / "home",
                                     meanwhile=lambda: events.append("meanwhile"))
    assert next(steps) == launcher.TestStep("prepare", "prepare", 0, 1.0)
    assert events == ["spawned", "meanwhile", "go: go\n"]

    def fails() -> None:
        raise RuntimeError("the caller's work failed")

    with pytest.raises(RuntimeError, match="caller's work failed"):
        list(launcher.dags_test_dates("d", [], None, io.StringIO(), home=tmp_path / "home",
                                      meanwhile=fails))
    assert children[-1].killed  # no child left waiting at its gate


def test_the_gate_opens_on_a_line_and_end_of_input_is_no_go() -> None:
    assert child.wait_for_gate(io.StringIO("go\n")) is True
    assert child.wait_for_gate(io.StringIO("")) is False


def test_only_the_dag_test_loops_sleep_is_shortened(monkeypatch: pytest.MonkeyPatch) -> None:
    """poll_dag_test_faster shortens the sleeps of one function's own code (DAG.test's loop;
    here a stand-in): a sleep called from any other code (a task's) keeps its length."""
    import time

    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # restored after the test

    def loop() -> None:
        time.sleep(1)

    def a_task() -> None:
        time.sleep(1)

    assert child.poll_dag_test_faster(0.05, loop_code=loop.__code__) is True
    loop()
    a_task()
    assert slept == [0.05, 1]
    monkeypatch.setattr(time, "sleep", slept.append)
    assert child.poll_dag_test_faster() is True  # Airflow's DAG.test is found
