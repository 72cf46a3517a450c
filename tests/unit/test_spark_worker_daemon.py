"""``kafkalab.spark.worker_daemon`` (which zips it takes off a Python worker's path) and
``kafkalab.spark.submit.with_worker_daemon`` (which jobs get it); a real Spark session's
workers run it in ``tests/spark/test_session.py``."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest

from kafkalab.spark import worker_daemon
from kafkalab.spark.spec import SparkLayout
from kafkalab.spark.submit import WORKER_DAEMON, WORKER_DAEMON_CONF, with_worker_daemon


def _zip(path: Path, *names: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name in names:
            z.writestr(name, "")
    return str(path)


@pytest.fixture()
def layout(tmp_path: Path) -> dict[str, str]:
    """A pip-style site folder: pyspark (with its python/lib zips) and py4j installed."""
    site = tmp_path / "site"
    (site / "pyspark").mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    (site / "py4j").mkdir()
    (site / "py4j" / "__init__.py").write_text("")
    lib = site / "pyspark" / "python" / "lib"
    return {
        "site": str(site),
        "pyspark_zip": _zip(lib / "pyspark.zip", "pyspark/__init__.py", "pyspark/sql/x.py"),
        "py4j_zip": _zip(lib / "py4j-0.10.9.9-src.zip", "py4j/__init__.py"),
        "other_zip": _zip(lib / "extra.zip", "notinstalled/__init__.py"),
        "elsewhere_zip": _zip(tmp_path / "elsewhere" / "pyspark.zip", "pyspark/__init__.py"),
    }


def test_only_zips_the_installation_copies_are_redundant(layout: dict[str, str]) -> None:
    """PySpark's own zips go; a zip in the same folder holding a package the path lacks
    stays, and so does a zip anywhere else."""
    path = [layout["pyspark_zip"], layout["py4j_zip"], layout["other_zip"],
            layout["elsewhere_zip"], layout["site"]]
    assert worker_daemon.redundant_zips(path) == [layout["pyspark_zip"], layout["py4j_zip"]]


def test_a_path_whose_pyspark_is_only_zipped_keeps_its_zips(layout: dict[str, str]) -> None:
    """A Spark distribution's workers (PySpark only in the zips) keep them all."""
    assert worker_daemon.redundant_zips([layout["pyspark_zip"], layout["py4j_zip"]]) == []


def test_dropping_clears_the_path_and_the_import_caches(
        layout: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = [layout["pyspark_zip"], layout["py4j_zip"], layout["site"]]
    monkeypatch.setattr(sys, "path", list(path))
    monkeypatch.setattr(sys, "path_importer_cache", {p: object() for p in path[:2]})
    assert worker_daemon.drop_redundant_zips() == path[:2]
    assert sys.path == [layout["site"]]
    assert not set(path[:2]) & set(sys.path_importer_cache)


def test_jobs_whose_executors_run_from_the_labs_venv_get_the_daemon(tmp_path: Path) -> None:
    """local masters and the lab's own standalone master get it; a user's cluster, YARN or
    no master at all (spark-submit's default of the connection) keep PySpark's; a daemon the
    conf already names is kept."""
    layout = SparkLayout(tmp_path)
    layout.state_path.parent.mkdir(parents=True, exist_ok=True)
    layout.state_path.write_text(json.dumps({"master_url": "spark://127.0.0.1:7077"}))
    conf = {"spark.ui.enabled": "false"}
    for master in ("local", "local[2]", "local[*]", "spark://127.0.0.1:7077"):
        assert with_worker_daemon(conf, master, lab=tmp_path) == {
            **conf, WORKER_DAEMON_CONF: WORKER_DAEMON}, master
    for master in (None, "", "yarn", "spark://10.0.0.5:7077", "sc://127.0.0.1:15002"):
        assert with_worker_daemon(conf, master, lab=tmp_path) == conf, master
    mine = {WORKER_DAEMON_CONF: "my.daemon"}
    assert with_worker_daemon(mine, "local[2]", lab=tmp_path) == mine
