"""What the spark-submit tasks submit (pure: paths from the environment)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.paths import spark_jobs_dir
from kafkalab.spark.cds import DRIVER_JAVA_OPTIONS, LAUNCHER_OPTS
from kafkalab.spark.submit import (
    DRIVER_STATIC_CONF,
    spark_application,
    spark_conf,
    spark_env,
    spark_job_args,
    spark_py_files,
)


def test_application_and_py_files_are_absolute_job_files() -> None:
    assert spark_application("aggregate") == str(spark_jobs_dir() / "aggregate_metrics.py")
    assert spark_application("validate") == str(spark_jobs_dir() / "validate_metrics.py")
    shipped = spark_py_files().split(",")
    assert [Path(f).name for f in shipped] == ["_session.py", "_gx.py", "validate_metrics.py",
                                              "validate_load.py", "validate_startup.py", "store.py",
                                              "stats.py"]
    assert Path(shipped[0]) == spark_jobs_dir() / "_session.py"
    for script in (spark_application("aggregate"), spark_application("validate"), *shipped):
        assert Path(script).is_absolute() and Path(script).is_file(), script
    with pytest.raises(ValueError, match="unknown Spark job 'x'"):
        spark_application("x")


def test_job_args_follow_the_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(tmp_path / "data"))
    data = str(tmp_path / "data")
    assert spark_job_args("aggregate", "r1") == [
        "--samples", f"{data}/samples", "--out", f"{data}/aggregates", "--run-id", "r1"]
    assert spark_job_args("validate", "r1", "s3a://bucket/lab/") == [
        "--samples", "s3a://bucket/lab/samples", "--aggregates", "s3a://bucket/lab/aggregates",
        "--run-id", "r1", "--out", "s3a://bucket/lab/validation"]
    with pytest.raises(ValueError, match="unknown Spark job"):
        spark_job_args("x", "r1")


def test_conf_and_env_bind_loopback_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKALAB_SPARK_DRIVER_HOST", raising=False)
    assert spark_conf()["spark.driver.bindAddress"] == "127.0.0.1"
    assert spark_env()["SPARK_LOCAL_IP"] == "127.0.0.1"
    monkeypatch.setenv("KAFKALAB_SPARK_DRIVER_HOST", "10.0.0.5")
    assert spark_conf()["spark.driver.host"] == "10.0.0.5"
    assert "SPARK_LOCAL_IP" not in spark_env()


def test_every_submitted_driver_starts_with_the_static_settings() -> None:
    """spark-submit (a job, the Spark Connect server) gives each driver the settings a
    running session cannot change (``DRIVER_STATIC_CONF``: PySpark's call-site capture off)."""
    assert DRIVER_STATIC_CONF == {"spark.python.sql.dataFrameDebugging.enabled": "false"}
    assert DRIVER_STATIC_CONF.items() <= spark_conf().items()
    # and a job run by plain python: the jobs' copy (they import no kafkalab.spark module)
    from spark_jobs._session import DRIVER_STATIC_CONF as jobs_copy

    assert jobs_copy == DRIVER_STATIC_CONF


def test_driver_and_launcher_jvms_start_quickly_unless_told(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKALAB_SPARK_DRIVER_JAVA_OPTIONS", raising=False)
    monkeypatch.delenv("SPARK_LAUNCHER_OPTS", raising=False)
    assert spark_conf()["spark.driver.extraJavaOptions"] == DRIVER_JAVA_OPTIONS
    assert "-XX:TieredStopAtLevel=1" in DRIVER_JAVA_OPTIONS.split()
    assert spark_env()["SPARK_LAUNCHER_OPTS"] == LAUNCHER_OPTS
    monkeypatch.setenv("KAFKALAB_SPARK_DRIVER_JAVA_OPTIONS", "-Xmx8g")
    assert spark_conf()["spark.driver.extraJavaOptions"] == "-Xmx8g"
    monkeypatch.setenv("KAFKALAB_SPARK_DRIVER_JAVA_OPTIONS", "")  # the JVM's own defaults
    assert "spark.driver.extraJavaOptions" not in spark_conf()
    monkeypatch.setenv("SPARK_LAUNCHER_OPTS", "-Xshare:off")
    assert spark_env()["SPARK_LAUNCHER_OPTS"] == "-Xshare:off"
