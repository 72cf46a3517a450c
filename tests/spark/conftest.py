"""Shared fixtures of the Spark tests: one local SparkSession, a spark-submit runner."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kafkalab.paths import project_root
from tests.spark_settings import INTERPRETED, local_test_session

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")

VENV_BIN = project_root() / ".venv" / "bin"




@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A loopback-only local[2] SparkSession shared by all Spark tests (the jobs' builder,
    with :data:`tests.spark_settings.INTERPRETED`)."""
    session = local_test_session()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _spark_submit(script: str | Path, *args: str, py_files: Sequence[Path] = (),
                  timeout_s: float = 300.0,
                  java_options: str = "") -> subprocess.CompletedProcess[str]:
    """Run ``script`` (relative to the repo, or absolute) through the venv's spark-submit on
    local[2] with the DAGs' settings (``runtime_conf(spark_conf())``, ``spark_env()``: what a
    nightly task submits, the class-data archive included; two shuffle partitions for two
    cores; :data:`tests.spark_settings.INTERPRETED`); ``py_files`` are shipped with ``--py-files``;
    ``java_options`` are added to the driver's JVM options."""
    from kafkalab.spark.submit import runtime_conf, spark_conf, spark_env, with_worker_daemon

    python = VENV_BIN / "python"
    py = str(python) if python.exists() else sys.executable
    env = {
        **os.environ,
        **spark_env(),
        "PYSPARK_PYTHON": py,
        "PYSPARK_DRIVER_PYTHON": py,
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for leaked in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET"):
        env.pop(leaked, None)
    conf = {**with_worker_daemon(runtime_conf(spark_conf()), "local[2]"),
            "spark.sql.shuffle.partitions": "2", **INTERPRETED}
    if java_options:
        key = "spark.driver.extraJavaOptions"
        conf[key] = f"{conf.get(key, '')} {java_options}".strip()
    shipped = ["--py-files", ",".join(str(p) for p in py_files)] if py_files else []
    cmd = [
        str(VENV_BIN / "spark-submit"), "--master", "local[2]",
        *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")),
        *shipped,
        str(project_root() / script), *args,
    ]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s,
                          cwd=project_root(), check=False)


@pytest.fixture(scope="session")
def spark_submit() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``spark_submit(script, *args, py_files=())`` -> CompletedProcess (text stdout/stderr)."""
    if not (VENV_BIN / "spark-submit").exists():
        pytest.skip("spark-submit not found in .venv/bin")
    return _spark_submit
