"""The lab's PostgreSQL for Airflow: paths, password, URL, checks (no server is started;
tests/e2e/test_airflow_scheduler.py starts a real one)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kafkalab.airflow import postgres
from kafkalab.errors import ClusterError, ConfigError


def test_url_uses_a_generated_password_kept_private(tmp_path: Path) -> None:
    url = postgres.sqlalchemy_url(tmp_path, 35432)
    pw = (tmp_path / "password").read_text().strip()
    assert url == f"postgresql+psycopg2://airflow:{pw}@127.0.0.1:35432/airflow"
    assert len(pw) >= 20
    assert stat.S_IMODE((tmp_path / "password").stat().st_mode) == 0o600
    assert postgres.sqlalchemy_url(tmp_path, 35432) == url  # kept, not regenerated


def test_default_port_and_override() -> None:
    assert postgres.pg_port({}) == postgres.DEFAULT_PORT
    assert postgres.pg_port({"KAFKALAB_POSTGRES_PORT": "25432"}) == 25432


def test_missing_server_names_make_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(postgres.shutil, "which", lambda name: None)
    with pytest.raises(ClusterError, match="make setup"):
        postgres.pg_bin("initdb")


@pytest.mark.skipif(os.geteuid() != 0, reason="the check applies when the lab runs as root")
def test_as_root_a_private_parent_is_one_clear_error(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(ConfigError, match="not searchable by the postgres user"):
        postgres.pg_up(private / "pg", port=35498)


def test_status_and_down_of_a_dir_never_started(tmp_path: Path) -> None:
    st = postgres.pg_status(tmp_path / "pg", 35497)
    assert st["pid"] is None and st["alive"] is False and st["answers"] is False
    assert postgres.pg_down(tmp_path / "pg") is None


def test_an_exit_is_explained_by_its_fatal_line_not_the_last_one(tmp_path: Path) -> None:
    log = tmp_path / "postgres.log"
    log.write_text("LOG:  starting PostgreSQL 15\n"
                   'FATAL:  could not create any TCP/IP sockets\n'
                   "LOG:  database system is shut down\n")
    assert postgres._why_exited(log) == "FATAL:  could not create any TCP/IP sockets"
    log.write_text("LOG:  starting\nLOG:  database system is shut down\n")
    assert postgres._why_exited(log) == "last line: LOG:  database system is shut down"
    assert postgres._why_exited(tmp_path / "missing.log") == "no log"
