"""``make screenshots``' Airflow part (tools/screenshots.py), without a real Airflow run.

The api-server's environment and command, the "no runs yet" detection on real SQLite
files, stopping a real process group, and the whole command on a home without runs
(report pictures only, one line, exit 0; needs Chromium like the rest of tests/browser).
The pictures of the real UI are taken by ``make screenshots`` after ``make demo``.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tools import screenshots as shots


def _dag_run_db(home: Path, dag_ids: list[str]) -> Path:
    """A SQLite ``airflow.db`` in ``home`` with a minimal ``dag_run`` table and these runs."""
    home.mkdir(parents=True, exist_ok=True)
    db = home / "airflow.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE dag_run (id INTEGER PRIMARY KEY, dag_id TEXT, run_id TEXT)")
        conn.executemany("INSERT INTO dag_run (dag_id, run_id) VALUES (?, ?)",
                         [(d, f"manual__{i}") for i, d in enumerate(dag_ids)])
    conn.close()
    return db


def test_no_database_and_no_table_count_as_no_runs(tmp_path: Path) -> None:
    assert shots.count_dag_runs(tmp_path / "missing-home") == 0
    sqlite3.connect(tmp_path / "airflow.db").close()  # an empty database: not migrated yet
    assert shots.count_dag_runs(tmp_path) == 0


def test_runs_are_counted_per_dag(tmp_path: Path) -> None:
    _dag_run_db(tmp_path, [shots.GRID_DAG, "latency_experiment", shots.GRID_DAG])
    assert shots.count_dag_runs(tmp_path) == 2
    assert shots.count_dag_runs(tmp_path, "latency_experiment") == 1
    assert shots.count_dag_runs(tmp_path, "load_experiment") == 0


def test_a_home_without_runs_raises_before_starting_anything(tmp_path: Path) -> None:
    _dag_run_db(tmp_path, ["latency_experiment"])
    with pytest.raises(shots.NoAirflowRuns, match=r"no Airflow runs in .*: run make demo first"):
        shots.take_airflow(None, tmp_path, tmp_path / "out")
    assert list(tmp_path.iterdir()) == [tmp_path / "airflow.db"]  # no secrets, no log


def test_api_server_env_is_loopback_on_its_own_port_without_login(tmp_path: Path) -> None:
    base = {"PATH": os.environ.get("PATH", ""), "KAFKALAB_AIRFLOW_PORT": "8080",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "postgresql://elsewhere/airflow"}
    env = shots.api_server_env(tmp_path, port=28123, base=base)
    assert env["AIRFLOW_HOME"] == str(tmp_path)
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1"
    assert env["AIRFLOW__API__PORT"] == "28123"
    assert env["AIRFLOW__API__BASE_URL"] == "http://127.0.0.1:28123"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:28123/execution/"
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS"] == "True"
    # the database `airflow dags test` wrote, not one from the caller's environment
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == f"sqlite:///{tmp_path}/airflow.db"
    cmd = shots.api_server_cmd(env)
    assert Path(cmd[0]).name == "airflow"
    assert cmd[1:] == ["api-server", "-H", "127.0.0.1", "-p", "28123", "-w", "1"]


def test_the_option_the_env_relies_on_exists_in_the_installed_airflow() -> None:
    """``[core] simple_auth_manager_all_admins`` (read from Airflow's config template, as
    importing Airflow would write an ``airflow.cfg``)."""
    import importlib.util

    import yaml

    spec = importlib.util.find_spec("airflow")
    assert spec is not None and spec.origin is not None, "no Airflow: run make setup"
    template = Path(spec.origin).parent / "config_templates" / "config.yml"
    options = yaml.safe_load(template.read_text())["core"]["options"]
    assert "simple_auth_manager_all_admins" in options


def _live_states(pgid: int) -> list[str]:
    """``ps``' states of the processes of group ``pgid`` that are not zombies."""
    out = subprocess.run(["ps", "-e", "-o", "pgid=,stat="], capture_output=True, text=True,
                         check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()]
    return [st for pg, st in rows if pg == str(pgid) and not st.startswith("Z")]


@pytest.mark.parametrize("ignores_term", [False, True])
def test_stop_group_ends_the_whole_process_group(ignores_term: bool) -> None:
    """The leader and its child both go: by SIGTERM, or by SIGKILL when TERM is ignored (the
    orphaned child's zombie, left for the container's init to reap, does not count)."""
    trap = "trap '' TERM; " if ignores_term else ""
    proc = subprocess.Popen(["sh", "-c", f"{trap}sleep 60 & sleep 60"],
                            start_new_session=True)
    deadline = time.monotonic() + 10.0  # until the shell has forked both sleeps
    while len(_live_states(proc.pid)) < 3:
        assert time.monotonic() < deadline, f"the group never had 3 processes: {proc.pid}"
        time.sleep(0.02)
    shots.stop_group(proc, timeout_s=1.0)
    assert _live_states(proc.pid) == []
    assert proc.returncode == (-signal.SIGKILL if ignores_term else -signal.SIGTERM)


def test_the_command_without_airflow_runs_takes_the_report_only(tmp_path: Path) -> None:
    """``python -m tools.screenshots`` on a report and an empty Airflow home: one line says
    there is nothing to photograph in Airflow, the report's pictures are written, exit 0."""
    assert os.path.exists(shots.CHROMIUM) or shutil.which(shots.CHROMIUM), \
        f"no Chromium at {shots.CHROMIUM}: run make setup"
    from kafkalab.report.build import build_report
    from tests.unit.test_report import write_lab_data

    data_dir = tmp_path / "lab-data"
    write_lab_data(data_dir)
    build_report(data_dir)
    home, out = tmp_path / "airflow", tmp_path / "images"
    result = subprocess.run(
        [sys.executable, "-m", "tools.screenshots", "--data-dir", str(data_dir),
         "--out", str(out), "--airflow-home", str(home)],
        capture_output=True, text=True, timeout=180,
        cwd=Path(shots.__file__).resolve().parents[1])
    assert result.returncode == 0, result.stderr
    assert f"screenshots: no Airflow runs in {home}: run make demo first" in result.stdout
    assert sorted(p.name for p in out.iterdir()) == ["report-run.png", "report.png"]
    assert not home.exists()
