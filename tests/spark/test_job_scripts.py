"""Every Spark job as a script, the way spark-submit and a Spark Connect task start it: run by
path (no package: its helpers ``_session.py`` and ``_gx.py`` are imported from beside it),
in a bare environment and another working directory.

Its command line answers ``--help`` and refuses a missing input path with its own one line
and exit 2, before any JVM starts. The jobs' work through spark-submit itself is tested by
``test_aggregate_metrics.py`` (with and without ``--py-files``), ``test_validate_metrics.py``,
``test_cli_aggregate.py`` (``kafkalab aggregate``) and ``test_spark_cds_archive.py``, and
by the DAGs' tasks in the scheduler tests (``tests/e2e``); the other job files run their
command lines in the tests' shared session.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.spark.submit import SPARK_JOBS, spark_application

MISSING_INPUT = {
    "aggregate_metrics": ["--samples", "{missing}", "--out", "{out}"],
    "aggregate_load": ["--load", "{missing}", "--out", "{out}", "--run-id", "r"],
    "aggregate_faults": ["--faults", "{missing}", "--out", "{out}", "--run-id", "r"],
    "aggregate_startup": ["--startup", "{missing}", "--out", "{out}", "--run-id", "r"],
    "validate_metrics": ["--samples", "{missing}", "--aggregates", "{missing}",
                         "--run-id", "r", "--out", "{out}"],
    "validate_load": ["--aggregates", "{missing}", "--run-id", "r", "--out", "{out}"],
    "validate_faults": ["--aggregates", "{missing}", "--run-id", "r", "--out", "{out}"],
    "validate_startup": ["--aggregates", "{missing}", "--run-id", "r", "--out", "{out}"],
}
"""Each job script's name (its ``prog``) and a command line whose input path does not exist."""


def _script(job: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The job's script (``spark_application``) run by python from ``cwd`` with ``args`` and
    nothing in the environment but PATH and HOME."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run([sys.executable, spark_application(job), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_every_job_has_a_command_line_here() -> None:
    """A job added to ``SPARK_JOBS`` without a row here fails, instead of going untested."""
    assert {Path(script).stem for script in SPARK_JOBS.values()} == set(MISSING_INPUT)


@pytest.mark.parametrize("job", sorted(SPARK_JOBS))
def test_a_job_run_as_a_script_has_its_command_line(job: str, tmp_path: Path) -> None:
    prog = Path(SPARK_JOBS[job]).stem
    helped = _script(job, "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert helped.stdout.startswith(f"usage: {prog} ")
    args = [a.format(missing=tmp_path / "missing", out=tmp_path / "out")
            for a in MISSING_INPUT[prog]]
    refused = _script(job, *args, cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(f"{prog}: error: ")
    assert f"path not found: {tmp_path / 'missing'}" in refused.stderr
    assert not (tmp_path / "out").exists()
