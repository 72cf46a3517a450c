"""The lab's Spark standalone cluster authenticates (``spark.authenticate``) with a secret
kept in a 0600 file, and every submission the lab makes carries it as ``--properties-file``,
never on a command line (issue 26). A real cluster refusing a submission without the
secret: ``tests/integration/test_spark_standalone.py``."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from kafkalab.aggregate import spark_submit_command
from kafkalab.errors import ConfigError
from kafkalab.spark import standalone
from kafkalab.spark.spec import (
    SparkLayout,
    StandaloneSpec,
    auth_properties,
    master_properties,
    worker_properties,
)
from kafkalab.spark.submit import AUTH_FILE_ENV, auth_properties_file

MASTER = "spark://127.0.0.1:27277"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _lab_cluster(lab: Path, master: str = MASTER) -> SparkLayout:
    """A lab dir whose standalone cluster is recorded with ``master`` and has its secret."""
    layout = SparkLayout(lab)
    standalone.ensure_secret(layout)
    layout.state_path.write_text(json.dumps({"master_url": master, "processes": []}))
    return layout


def test_up_writes_one_secret_into_a_0600_file_and_every_daemons_0600_conf(
        tmp_path: Path) -> None:
    layout = SparkLayout(tmp_path)
    standalone._write_conf(layout, StandaloneSpec(workers=2))
    secret = standalone.kept_secret(layout)
    assert secret is not None and len(secret) == 64 and int(secret, 16) >= 0
    assert _mode(layout.auth_path) == 0o600
    assert layout.auth_path.read_text().endswith(
        f"spark.authenticate=true\nspark.authenticate.secret={secret}\n")
    for conf in (layout.properties("master"), layout.properties("worker", 1),
                 layout.properties("worker", 2)):
        assert _mode(conf) == 0o600, conf
        lines = conf.read_text().splitlines()
        assert "spark.authenticate=true" in lines
        assert f"spark.authenticate.secret={secret}" in lines
    assert "spark.master.rest.enabled=false" in layout.properties("master").read_text()
    # kept across starts; a file made readable by others is made 0600 again
    layout.auth_path.chmod(0o644)
    assert standalone.ensure_secret(layout) == secret and _mode(layout.auth_path) == 0o600
    # another lab, another secret
    assert standalone.ensure_secret(SparkLayout(tmp_path / "other")) != secret


def test_properties_refuse_a_secret_that_is_not_hex() -> None:
    for bad in ("", "short", "x" * 64, "AB" * 32, "ab\nspark.master=local"):
        with pytest.raises(ValueError):
            auth_properties(bad)
    assert master_properties("ab" * 32).count("spark.authenticate") == 2
    assert worker_properties("ab" * 32).count("spark.authenticate") == 2


def test_submissions_to_the_labs_cluster_carry_its_secret_file(tmp_path: Path) -> None:
    layout = _lab_cluster(tmp_path)
    assert auth_properties_file(MASTER, env={}, lab=tmp_path) == str(layout.auth_path)
    assert auth_properties_file(f" {MASTER} ", env={}, lab=tmp_path) == str(layout.auth_path)
    # not the lab's cluster: nothing (a cluster without authentication would refuse it)
    for other in ("spark://127.0.0.1:7077", "local[2]", "yarn", None, "sc://127.0.0.1:15002"):
        assert auth_properties_file(other, env={}, lab=tmp_path) is None, other
    layout.state_path.unlink()  # the cluster is down
    assert auth_properties_file(MASTER, env={}, lab=tmp_path) is None


def test_a_users_own_cluster_passes_its_secret_file(tmp_path: Path) -> None:
    own = tmp_path / "my-cluster.properties"
    own.write_text("spark.authenticate=true\nspark.authenticate.secret=s3cr3t\n")
    env = {AUTH_FILE_ENV: str(own)}
    assert auth_properties_file("spark://spark-master:7077", env=env, lab=tmp_path) == str(own)
    with pytest.raises(ConfigError, match=r"KAFKALAB_SPARK_AUTH_FILE '/no/such' is not a "):
        auth_properties_file("spark://h:7077", env={AUTH_FILE_ENV: "/no/such"}, lab=tmp_path)


def test_the_cli_spark_submit_passes_the_file_and_no_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path / "lab"))
    monkeypatch.delenv(AUTH_FILE_ENV, raising=False)
    layout = _lab_cluster(tmp_path / "lab")
    secret = standalone.kept_secret(layout)
    assert secret is not None
    cmd = spark_submit_command("aggregate", "R1", tmp_path / "data", MASTER)
    at = cmd.index("--properties-file")
    assert cmd[at + 1] == str(layout.auth_path) and cmd[cmd.index("--master") + 1] == MASTER
    assert not any(secret in arg for arg in cmd)
    assert "--properties-file" not in spark_submit_command("aggregate", "R1", tmp_path, "local[2]")
    # the lab's own executors run the lab's worker daemon; a user's cluster keeps PySpark's
    daemon = "spark.python.daemon.module=kafkalab.spark.worker_daemon"
    assert daemon in cmd and daemon in spark_submit_command("aggregate", "R1", tmp_path, "local[2]")
    assert daemon not in spark_submit_command("aggregate", "R1", tmp_path, "spark://10.0.0.5:7077")


def test_the_dags_spark_submit_passes_the_file_and_no_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The DAG's task through the ``spark_default`` connection the launcher makes from
    ``KAFKALAB_SPARK_MASTER``: the spark-submit command Airflow's hook builds."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from kafkalab.airflow import operators
    from kafkalab.airflow.launcher import spark_conn

    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "airflow-home"))
    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path / "lab"))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", spark_conn(MASTER))
    monkeypatch.delenv(AUTH_FILE_ENV, raising=False)
    layout = _lab_cluster(tmp_path / "lab")
    commands: list[list[str]] = []

    def submit(op: Any, context: Any) -> None:  # spark-submit itself is not run here
        hook = op._get_hook()
        commands.append(hook._build_spark_submit_command(op.application))

    monkeypatch.setattr(SparkSubmitOperator, "execute", submit)
    task = operators.lab_spark_task("aggregate", "aggregate", "R1", tmp_path / "data")
    operators.run_spark_job(task, {})
    [cmd] = commands
    assert cmd[cmd.index("--master") + 1] == MASTER
    assert cmd[cmd.index("--properties-file") + 1] == str(layout.auth_path)
    assert "spark.python.daemon.module=kafkalab.spark.worker_daemon" in cmd
    secret = standalone.kept_secret(layout)
    assert secret is not None and not any(secret in arg for arg in cmd)
