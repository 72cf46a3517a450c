"""``make test``'s lanes (tools/run_tests.py) cover the suite exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.paths import project_root
from tools import run_tests


def test_the_lanes_cover_every_test_file_once() -> None:
    assert run_tests.check_lanes(project_root()) == []
    assert "tests/integration/test_load.py" in run_tests.test_files(project_root())
    # the load-timing tests run alone, after the lanes (the module doc says why); the rest
    # of the load engine's tests beside the other integration tests
    assert run_tests._steps_of("tests/integration/test_load_timing.py") == ["alone"]
    assert run_tests._steps_of("tests/integration/test_loss.py") == ["alone"]
    assert run_tests._steps_of("tests/integration/test_load.py") == ["integration"]
    assert run_tests._steps_of("tests/integration/test_run.py") == ["integration"]
    # the Airflow end-to-end tests are split over two lanes: the scheduler's at once, the
    # dags-test ones after the integration tests
    assert run_tests._steps_of(run_tests.SCHEDULER_E2E) == ["e2e-scheduler"]
    assert run_tests._steps_of("tests/e2e/test_airflow_dags_test.py") == ["e2e-dags"]
    # the demo last in the scheduler lane, which starts with the unit tests beside the set-up
    # (in the spark lane, after the dags-test ones, it ended last)
    assert run_tests._steps_of(run_tests.DEMO_E2E) == ["e2e-demo"]
    assert run_tests.LANES[0][1][-1] == ("e2e-demo", (run_tests.DEMO_E2E,))
    assert len(run_tests.LANES) == 3
    # the Spark standalone test runs in the integration step (the spark lane ended last)
    assert run_tests._steps_of("tests/integration/test_spark_standalone.py") == ["integration"]
    assert run_tests._steps_of("tests/integration/test_sasl_ssl.py") == ["integration"]
    # the degradable links' tests in the scheduler lane, after the unit tests
    assert [run_tests._steps_of(f) for f in run_tests.LINKS_IT] == [["links"], ["links"]]
    assert run_tests._ignores(("tests/integration",)) == [
        *(f"--ignore={f}" for f in sorted(run_tests.LINKS_IT)),
        f"--ignore={run_tests.LOAD_TIMING_IT}", f"--ignore={run_tests.LOSS_IT}"]
    assert run_tests._ignores(("tests/unit", run_tests.LOSS_IT)) == []
    names = [name for name, _ in run_tests.steps()]
    assert len(names) == len(set(names))  # one log file a step
    assert run_tests.SETUP_STEP not in names  # its log too
    # the unit tests need only the venv: first in their lane, beside the assets' set-up
    assert run_tests.LANES[0][1][0] == ("unit", ("tests/unit",))
    assert sorted(run_tests.WITHOUT_ASSETS) == ["unit"]


class _FailedSetUp(run_tests._Assets):
    def ready(self) -> bool:
        return False


def test_a_failed_set_up_runs_only_the_steps_without_assets(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    started: list[str] = []
    monkeypatch.setattr(run_tests, "_run_step", lambda name, *_args: started.append(name) or 0)
    report = run_tests._Report()
    lane = (("unit", ("tests/unit",)), ("e2e-scheduler", (run_tests.SCHEDULER_E2E,)))
    run_tests._run_lane(lane, (), tmp_path, tmp_path, report, _FailedSetUp())
    assert started == ["unit"]
    assert report.failed == ["e2e-scheduler"]  # not run: a failure, never a silent skip


def test_a_new_folder_outside_every_lane_is_named(tmp_path: Path) -> None:
    for name in ("unit", "spark", "browser", "integration", "e2e", "chaos"):
        (tmp_path / "tests" / name).mkdir(parents=True)
        (tmp_path / "tests" / name / "test_x.py").write_text("")
    for named in ("integration/test_spark_standalone.py", "e2e/test_airflow_scheduler.py",
                  "e2e/test_make_demo.py", "integration/test_load_timing.py",
                  "integration/test_loss.py", "integration/test_sasl_ssl.py",
                  "integration/test_links.py", "integration/test_link_faults.py"):
        (tmp_path / "tests" / named).write_text("")
    (tmp_path / "tests" / "fixtures").mkdir()  # no test files: nothing to run
    assert run_tests.check_lanes(tmp_path) == [
        "tests/chaos/test_x.py is in no lane of tools/run_tests.py"]


def test_a_steps_cpu_counts_a_child_it_never_waited_for() -> None:
    """The step's group holds every process its pytest starts: a grandchild left to run on
    its own (as a test's server is) is counted, and an emptied group is removed. Needs a
    writable ``cpuacct`` hierarchy (root, as ``make test`` runs in CI); without one the
    group is None and the step falls back to its pytest's rusage."""
    import os
    import subprocess
    import sys
    import time

    group = run_tests._CpuGroup.make(f"unit-probe-{os.getpid()}")
    if group is None:
        assert not os.access(run_tests._CpuGroup.ROOT.parent, os.W_OK) or not os.path.isdir(
            run_tests._CpuGroup.ROOT.parent)
        return
    # a shell that starts a busy loop of ~0.3 CPU-s in the background and exits at once
    burn = (f"{sys.executable} -c 'import time\nt=time.process_time()\n"
            f"while time.process_time()-t<0.3: pass' & echo $!")
    proc = subprocess.Popen(["sh", "-c", f"sleep 0.2; {burn}"], stdout=subprocess.PIPE,
                            text=True)
    assert group.join(proc.pid)
    out, _ = proc.communicate(timeout=30)
    grandchild = Path(f"/proc/{int(out.split()[-1])}/stat")
    deadline = time.monotonic() + 30
    while _running(grandchild):  # its own end (a zombie or gone), not a guessed sleep
        assert time.monotonic() < deadline, "the busy loop never ended"
        time.sleep(0.05)
    cpu_s = group.close()
    assert cpu_s >= 0.3, cpu_s
    assert not group.path.exists()


def test_a_process_still_ending_is_waited_for_and_one_left_running_is_named(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The step's pytest has exited but a process of its group is still ending (a JVM, a
    Spark worker): ``close`` waits for it, counts it and removes the group, with no "left
    running" line. A process that outlives the wait is named with its command line and its
    group is kept (it cannot be removed while a process is in it)."""
    import os
    import subprocess
    import time

    group = run_tests._CpuGroup.make(f"unit-ending-{os.getpid()}")
    if group is None:  # no writable cpuacct hierarchy: see the test above
        return
    ending = subprocess.Popen(["sleep", "0.5"])
    assert group.join(ending.pid)
    group.close()
    ending.wait(timeout=30)
    assert not group.path.exists()
    assert "left running" not in capsys.readouterr().out

    group = run_tests._CpuGroup.make(f"unit-left-{os.getpid()}")
    assert group is not None
    staying = subprocess.Popen(["sleep", "30"])
    try:
        assert group.join(staying.pid)
        group.close(wait_s=0.3)
        assert f"left running: {staying.pid} sleep 30" in capsys.readouterr().out
        assert group.path.exists()
    finally:
        staying.kill()
        staying.wait(timeout=30)
    deadline = time.monotonic() + 30
    while group.path.exists():  # removed once its last process has ended
        try:
            group.path.rmdir()
        except OSError:
            assert time.monotonic() < deadline, "the killed process stayed in its group"
            time.sleep(0.05)


def _running(stat: Path) -> bool:
    """The process of ``/proc/<pid>/stat`` exists and is not a zombie."""
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
