"""The one path policy: locations come from the package's place and the environment,
never from the current directory."""

from __future__ import annotations

from pathlib import Path

import pytest

import kafkalab
from kafkalab import paths

REPO = Path(kafkalab.__file__).resolve().parents[2]
ENV = ("KAFKALAB_ROOT", "KAFKALAB_INCLUDE_DIR", "KAFKALAB_SPARK_JOBS_DIR", "KAFKALAB_HOME",
       "KAFKALAB_DATA_DIR", "KAFKALAB_DRIFT_CONFIG", "AIRFLOW_HOME")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_defaults_come_from_the_package_not_the_cwd(clean_env: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    # a directory that looks like another checkout must not be picked up
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "kafkalab"\n')
    clean_env.chdir(tmp_path)
    assert paths.project_root() == REPO
    assert paths.include_dir() == REPO / "include"
    assert (paths.include_dir() / "profiles" / "latency.yaml").is_file()
    assert paths.spark_jobs_dir() == REPO / "spark_jobs"
    assert (paths.spark_jobs_dir() / "aggregate_metrics.py").is_file()
    assert paths.images_dir() == REPO / "include" / "images"
    assert paths.dags_dir() == REPO / "dags"
    assert paths.plugins_dir() == REPO / "plugins"
    assert paths.lab_dir() == REPO / ".lab"
    assert paths.data_dir() == REPO / "lab-data"
    assert paths.default_descriptor_path() == REPO / ".lab" / "cluster.yaml"
    assert paths.drift_config_path() == REPO / "include" / "drift.yaml"
    assert paths.airflow_home() == REPO / ".lab" / "airflow"


def test_environment_overrides_each_location(clean_env: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    clean_env.setenv("KAFKALAB_ROOT", str(tmp_path / "root"))
    assert paths.include_dir() == tmp_path / "root" / "include"
    assert paths.lab_dir() == tmp_path / "root" / ".lab"
    assert paths.airflow_home() == tmp_path / "root" / ".lab" / "airflow"
    overrides = {
        "KAFKALAB_INCLUDE_DIR": paths.include_dir, "KAFKALAB_SPARK_JOBS_DIR": paths.spark_jobs_dir,
        "KAFKALAB_HOME": paths.lab_dir, "KAFKALAB_DATA_DIR": paths.data_dir,
        "KAFKALAB_DRIFT_CONFIG": paths.drift_config_path, "AIRFLOW_HOME": paths.airflow_home,
    }
    for name, fn in overrides.items():
        clean_env.setenv(name, str(tmp_path / name.lower()))
        assert fn() == tmp_path / name.lower(), name
    assert paths.default_descriptor_path() == tmp_path / "kafkalab_home" / "cluster.yaml"


def test_a_profile_loads_from_any_working_directory(clean_env: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    from kafkalab.config import load_profile, load_workload

    clean_env.chdir(tmp_path)
    assert load_profile("latency").name == "latency"
    assert load_workload("nightly").name == "nightly"
