"""The local Airflow launcher's environment (no Airflow process is started)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from kafkalab.airflow import launcher
from kafkalab.airflow.launcher import airflow_env, airflow_status
from kafkalab.paths import dags_dir, plugins_dir


def test_env_honours_airflow_home_and_paths(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "af"))
    monkeypatch.chdir(tmp_path)
    base = {"PATH": "/usr/bin", "PYTHONPATH": "/extra", "KAFKALAB_DATA_DIR": "/data/lab",
            "PYSPARK_GATEWAY_PORT": "1"}
    env = airflow_env(base=base, with_secrets=False)
    assert env["AIRFLOW_HOME"] == str(tmp_path / "af")
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(dags_dir())
    # the library is on PYTHONPATH, not in the plugins folder (whose files Airflow would
    # execute as top-level modules named by their stem)
    assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == str(tmp_path / "af" / "plugins")
    assert env["PYTHONPATH"].split(os.pathsep) == [str(plugins_dir()), "/extra"]
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert env["KAFKALAB_DATA_DIR"] == "/data/lab"  # kept
    assert env["PYSPARK_PYTHON"] == sys.executable
    assert "PYSPARK_GATEWAY_PORT" not in env
    assert not (tmp_path / "af").exists()  # no secrets asked: nothing written


def test_env_secrets_are_private_and_stable(tmp_path: Path) -> None:
    home = tmp_path / "af"
    first = airflow_env(home, base={})
    second = airflow_env(home, base={})
    assert first["AIRFLOW__API_AUTH__JWT_SECRET"] == second["AIRFLOW__API_AUTH__JWT_SECRET"]
    assert stat.S_IMODE((home / "secrets.json").stat().st_mode) == 0o600


def test_status_of_a_home_without_pid_files(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setattr(launcher, "health", lambda timeout_s=2.0, port=None: None)  # no API asked
    monkeypatch.setenv("KAFKALAB_AIRFLOW_PORT", "18080")
    st = airflow_status(tmp_path / "af")
    assert st["status"] == "down" and st["airflow_home"] == str(tmp_path / "af")
    assert st["url"] == "http://127.0.0.1:18080"
    assert all(c["pid"] is None and c["alive"] is False for c in st["components"].values())
    assert st["postgres"]["pid"] is None and st["postgres"]["alive"] is False
    assert st["postgres"]["data"] == str(tmp_path / "af" / "postgres" / "data")


@pytest.mark.parametrize("bad", ["http", "80", "70000"])
def test_a_bad_port_is_one_clear_error(bad: str) -> None:
    from kafkalab.airflow import postgres
    from kafkalab.errors import ConfigError

    with pytest.raises(ConfigError, match="KAFKALAB_AIRFLOW_PORT"):
        launcher.api_port({"KAFKALAB_AIRFLOW_PORT": bad})
    with pytest.raises(ConfigError, match="KAFKALAB_POSTGRES_PORT"):
        postgres.pg_port({"KAFKALAB_POSTGRES_PORT": bad})


def test_env_ports_and_db_url(tmp_path: Path) -> None:
    env = airflow_env(tmp_path, base={"KAFKALAB_AIRFLOW_PORT": "18080"}, with_secrets=False,
                      db_url="postgresql+psycopg2://airflow:pw@127.0.0.1:15432/airflow")
    assert env["AIRFLOW__API__PORT"] == "18080"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:18080/execution/"
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://")
    assert "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN" not in airflow_env(tmp_path, base={},
                                                                     with_secrets=False)


@pytest.mark.parametrize(
    ("master", "conn"),
    [
        (None, {"conn_type": "spark", "host": "local[*]"}),
        ("", {"conn_type": "spark", "host": "local[*]"}),
        ("local[2]", {"conn_type": "spark", "host": "local[2]"}),
        ("spark://127.0.0.1:7077", {"conn_type": "spark", "host": "spark://127.0.0.1", "port": 7077}),
        ("yarn", {"conn_type": "spark", "host": "yarn"}),
        ("k8s://https://10.0.0.1:6443", {"conn_type": "spark", "host": "k8s://https://10.0.0.1:6443"}),
        ("sc://127.0.0.1:15102", {"conn_type": "spark_connect", "host": "127.0.0.1", "port": 15102}),
        ("sc://spark-connect.internal", {"conn_type": "spark_connect",
                                         "host": "spark-connect.internal"}),
        ("sc://h:15002/;user_id=lab;token=s3cr%3Bt;use_ssl=true",
         {"conn_type": "spark_connect", "host": "h", "port": 15002, "login": "lab",
          "password": "s3cr;t", "extra": {"use_ssl": True}}),
    ],
)
def test_spark_conn_from_the_master_switch(master: str | None, conn: dict[str, object]) -> None:
    assert json.loads(launcher.spark_conn(master)) == conn


def test_the_master_switch_sets_spark_default_unless_it_is_given(tmp_path: Path) -> None:
    env = launcher.airflow_env(tmp_path, base={"KAFKALAB_SPARK_MASTER": "spark://127.0.0.1:7177"},
                               with_secrets=False)
    assert json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"])["port"] == 7177
    given = '{"conn_type": "spark", "host": "yarn"}'
    env = launcher.airflow_env(tmp_path, base={"KAFKALAB_SPARK_MASTER": "spark://h:1",
                                               "AIRFLOW_CONN_SPARK_DEFAULT": given},
                               with_secrets=False)
    assert env["AIRFLOW_CONN_SPARK_DEFAULT"] == given


def test_main_answers_a_bad_port_with_one_line(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "af"))
    monkeypatch.setenv("KAFKALAB_AIRFLOW_PORT", "eighty")
    assert launcher.main(["status"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["airflow status: error: KAFKALAB_AIRFLOW_PORT='eighty' is not a port number "
                   "in 1024..65535"]


@pytest.mark.parametrize(("given", "env", "want"), [
    (None, {}, "local"),
    ("celery", {}, "celery"),
    (None, {"KAFKALAB_AIRFLOW_EXECUTOR": "Celery"}, "celery"),
    ("local", {"KAFKALAB_AIRFLOW_EXECUTOR": "celery"}, "local"),  # the flag wins
])
def test_executor_choice(given: str | None, env: dict[str, str], want: str) -> None:
    assert launcher.executor_choice(given, env) == want


def test_an_unknown_executor_is_one_clear_error() -> None:
    from kafkalab.errors import ConfigError

    with pytest.raises(ConfigError, match="'kubernetes' is not one of local, celery"):
        launcher.executor_choice(None, {"KAFKALAB_AIRFLOW_EXECUTOR": "kubernetes"})


def test_celery_adds_a_worker_and_its_broker(tmp_path: Path) -> None:
    assert list(launcher.components("local")) == list(launcher.COMPONENTS)
    assert list(launcher.components("celery")) == [*launcher.COMPONENTS, "celery-worker"]
    assert launcher._component_args("celery-worker", 8080)[:3] == [
        "celery", "worker", "--skip-serve-logs"]  # its log server would bind 0.0.0.0
    local = airflow_env(tmp_path, base={}, with_secrets=False)
    assert local["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert not any(k.startswith("AIRFLOW__CELERY__") for k in local)
    celery = airflow_env(tmp_path, base={}, with_secrets=False,
                         db_url="postgresql+psycopg2://airflow:pw@127.0.0.1:15432/airflow",
                         celery_broker_url="redis://:pw@127.0.0.1:16379/0")
    assert celery["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert celery["AIRFLOW__CELERY__BROKER_URL"] == "redis://:pw@127.0.0.1:16379/0"
    assert celery["AIRFLOW__CELERY__WORKER_CONCURRENCY"] == "4"


def test_status_names_the_executor_from_the_worker_pid_file(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(launcher, "health", lambda timeout_s=2.0, port=None: None)
    home = tmp_path / "af"
    assert airflow_status(home)["executor"] == "local"
    home.mkdir()
    (home / "celery-worker.pid").write_text("999999999\n")  # a pid that cannot exist
    st = airflow_status(home)
    assert st["executor"] == "celery" and st["status"] == "down"
    assert st["components"]["celery-worker"]["alive"] is False
    assert st["redis"]["alive"] is False and st["redis"]["port"] == 16379


def test_main_answers_an_unknown_executor_with_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "af"))
    monkeypatch.setenv("KAFKALAB_AIRFLOW_EXECUTOR", "dask")
    assert launcher.main(["up"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("airflow up: error: executor 'dask'"), err
    assert not (tmp_path / "af" / "postgres").exists()  # refused before anything started


def test_install_plugins_links_the_report_plugin_into_airflows_folder(tmp_path: Path) -> None:
    """Airflow's plugins folder gets the lab's plugin file (a link), nothing else; again is a
    no-op, and a stale copy is replaced."""
    home = tmp_path / "airflow"
    (link,) = launcher.install_plugins(home)
    env = airflow_env(home, base={}, with_secrets=False)
    assert link.parent == Path(env["AIRFLOW__CORE__PLUGINS_FOLDER"])
    assert link.is_symlink() and link.resolve() == (plugins_dir() / link.name).resolve()
    assert sorted(p.name for p in link.parent.iterdir()) == ["kafkalab_report_plugin.py"]
    assert launcher.install_plugins(home) == [link] and link.is_symlink()
    link.unlink()
    link.write_text("# an old copy")
    launcher.install_plugins(home)
    assert link.is_symlink() and "class KafkaLabReportPlugin" in link.read_text()


def test_up_prints_the_password_files_path_never_the_password(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``airflow_up``'s whole run with its processes stood in for: what it prints (make's
    and CI's logs) names the 0600 password file, not the password (issue 26)."""
    home = tmp_path / "af"
    monkeypatch.setattr(launcher.postgres, "pg_up", lambda *a, **k: {"port": 15999})
    monkeypatch.setattr(launcher.postgres, "sqlalchemy_url", lambda *a: "postgresql://x")
    for name in ("prepare_db", "install_plugins"):
        monkeypatch.setattr(launcher, name, lambda *a, **k: None)
    started: list[list[str]] = []
    monkeypatch.setattr(launcher.procs, "spawn", lambda cmd, *a, **k: started.append(cmd) or 4242)
    monkeypatch.setattr(launcher, "_runs", lambda h, name: any(name in c for c in started))
    monkeypatch.setattr(launcher, "health", lambda **k: {
        "metadatabase": {"status": "healthy"}, "scheduler": {"status": "healthy"}})
    monkeypatch.setattr(launcher, "airflow_status", lambda *a: {"status": "up"})
    printed: list[str] = []
    launcher.airflow_up(home, progress=printed.append, base_env={"PATH": "/usr/bin"},
                        executor="local")
    password = launcher.admin_password(home)
    assert password and len(started) == 4
    assert not any(password in line for line in printed)
    path = home / launcher.PASSWORD_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert printed[-1] == (f"Airflow UI: http://127.0.0.1:8080  login: admin, password in "
                           f"{path} (mode 0600)  (executor: LocalExecutor)")
