"""``make test``: the whole suite, in phases of lanes that run side by side.

On two cores the suite spends much of its time in one process waiting for a JVM, a broker or
Airflow's task runner, so two lanes at once finish sooner than one. Only lanes whose tests
assert nothing that CPU contention can change run side by side:

1. ``integration`` (``tests/integration`` but the Spark standalone test) runs **alone**: its
   tests measure rates and latencies on real brokers (a load step that passes, a maximum
   rate that repeats), which another lane's CPU load would change.
2. ``compute`` (``tests/unit``, ``tests/spark``, ``tests/browser`` and the Spark standalone
   test) and ``airflow`` (``tests/e2e``) run **together**: exact results of Spark, Great
   Expectations and Airflow runs with generous time-outs, and no shared port, data dir or
   fixture between them (every module that starts a server has ports of its own, listed in
   the tests' docstrings).

Each lane is one ``pytest`` process with its own ``--basetemp`` (under
``/tmp/kafkalab-test-lanes``) and no cache; its output goes to ``<lab_dir>/test-lanes/
<lane>.log`` and is printed whole when the lane ends, under a header with its exit code and
wall time. The exit code is 0 only when every lane passed; every lane runs even when an
earlier one failed, so one failure never hides another. Extra arguments go to every pytest
(``python -m tools.run_tests -x``).

Every test file of ``tests/`` must be in exactly one lane, through its folder or by name
(checked first): a new file or folder is never silently left out or run twice.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from kafkalab.paths import lab_dir, project_root

SPARK_STANDALONE = "tests/integration/test_spark_standalone.py"
PHASES: tuple[tuple[tuple[str, tuple[str, ...]], ...], ...] = (
    (("integration", ("tests/integration",)),),
    (("compute", ("tests/unit", "tests/spark", "tests/browser", SPARK_STANDALONE)),
     ("airflow", ("tests/e2e",))),
)
"""Phases in order; the lanes of one phase run at the same time: (name, test folders and
files). A file named in one lane is left out of its folder's lane (``--ignore``)."""

BASETEMP = Path("/tmp/kafkalab-test-lanes")


def test_files(root: Path) -> list[str]:
    """Every ``test_*.py`` under ``root/tests``, as ``tests/…`` paths."""
    return sorted(p.relative_to(root).as_posix() for p in (root / "tests").rglob("test_*.py"))


def _named_files() -> set[str]:
    return {p for phase in PHASES for _, paths in phase for p in paths if p.endswith(".py")}


def _lanes_of(path: str) -> list[str]:
    """The lanes that would run the test file ``path``."""
    named = _named_files()
    return [name for phase in PHASES for name, paths in phase
            if path in paths or (path not in named
                                 and any(path.startswith(p + "/") for p in paths))]


def check_lanes(root: Path) -> list[str]:
    """Problems with :data:`PHASES`: a test file in no lane or in two, a lane path that does
    not exist. Empty when the lanes cover the suite exactly once."""
    problems = []
    for f in test_files(root):
        lanes = _lanes_of(f)
        if not lanes:
            problems.append(f"{f} is in no lane of tools/run_tests.py")
        elif len(lanes) > 1:
            problems.append(f"{f} is in two lanes: {', '.join(lanes)}")
    problems += [f"{p} (in a lane) does not exist" for phase in PHASES for _, paths in phase
                 for p in paths if not (root / p).exists()]
    return problems


def _ignores(paths: Sequence[str]) -> list[str]:
    """``--ignore`` for each file another lane names inside one of ``paths``' folders."""
    return [f"--ignore={f}" for f in sorted(_named_files())
            if f not in paths and any(f.startswith(p + "/") for p in paths)]


def _start(name: str, folders: Sequence[str], extra: Sequence[str], root: Path,
           log_dir: Path) -> tuple[subprocess.Popen[bytes], Path, float]:
    log = log_dir / f"{name}.log"
    cmd = [sys.executable, "-m", "pytest", "-q", "--durations=15", "-p", "no:cacheprovider",
           f"--basetemp={BASETEMP / name}", *_ignores(folders), *extra, *folders]
    out = log.open("wb")
    out.write(f"+ {' '.join(cmd)}\n".encode())
    out.flush()
    proc = subprocess.Popen(cmd, cwd=root, stdout=out, stderr=subprocess.STDOUT)
    out.close()  # the child holds its own descriptor
    return proc, log, time.monotonic()


def run(extra: Sequence[str] = ()) -> int:
    """Run every phase; returns 0 when every lane passed, else 1 (2: bad lanes)."""
    root = project_root()
    problems = check_lanes(root)
    if problems:
        for p in problems:
            print(f"test lanes: {p}", file=sys.stderr)
        return 2
    log_dir = lab_dir() / "test-lanes"
    log_dir.mkdir(parents=True, exist_ok=True)
    BASETEMP.mkdir(parents=True, exist_ok=True)  # pytest makes --basetemp, not its parents
    failed: list[str] = []
    t_all = time.monotonic()
    for phase in PHASES:
        names = " + ".join(n for n, _ in phase)
        print(f"=== test lanes: {names} {'side by side' if len(phase) > 1 else 'alone'}",
              flush=True)
        running = {name: _start(name, folders, extra, root, log_dir) for name, folders in phase}
        while running:
            for name, (proc, log, t0) in list(running.items()):
                rc = proc.poll()
                if rc is None:
                    continue
                del running[name]
                wall_s = time.monotonic() - t0
                sys.stdout.write(log.read_text(errors="replace"))
                print(f"=== lane {name}: exit {rc} after {wall_s:.0f} s (log {log})", flush=True)
                if rc != 0:
                    failed.append(name)
            time.sleep(0.5)
    total_s = time.monotonic() - t_all
    verdict = f"FAILED lanes: {', '.join(failed)}" if failed else "every lane passed"
    print(f"=== test lanes: {verdict}; {total_s / 60:.1f} min in all", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
