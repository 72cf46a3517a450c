"""Where the lab finds its files: the one path policy of the project.

Every location is derived here, from the installed package's own location, with an
environment override for each; never from the current directory. An Airflow task, a
Celery worker or a container runs in a directory of its own, and finds the same files.

| function | default | override |
|---|---|---|
| :func:`project_root` | the folder above ``plugins/`` that holds this package | ``KAFKALAB_ROOT`` |
| :func:`include_dir` | ``<root>/include`` (profiles, workloads, images, drift.yaml) | ``KAFKALAB_INCLUDE_DIR`` |
| :func:`images_dir` | ``<include>/images`` (payload JPEGs) | — |
| :func:`spark_jobs_dir` | ``<root>/spark_jobs`` | ``KAFKALAB_SPARK_JOBS_DIR`` |
| :func:`dags_dir` | ``<root>/dags`` | — |
| :func:`lab_dir` | ``<root>/.lab`` (Kafka distribution, embedded cluster, Airflow home) | ``KAFKALAB_HOME`` |
| :func:`data_dir` | ``<root>/lab-data`` (measurements; layout in :mod:`kafkalab.store`) | ``KAFKALAB_DATA_DIR`` |
| :func:`default_descriptor_path` | ``<lab_dir>/cluster.yaml`` | — |
| :func:`drift_config_path` | ``<include>/drift.yaml`` | ``KAFKALAB_DRIFT_CONFIG`` |
| :func:`airflow_home` | ``<lab_dir>/airflow`` | ``AIRFLOW_HOME`` |

The package lives at ``<root>/plugins/kafkalab`` in a checkout, in an editable install and
in an Airflow deployment whose ``plugins/`` folder sits beside ``include/`` and ``dags/``
(the Astronomer layout). Installed anywhere else (a wheel in site-packages), set
``KAFKALAB_ROOT`` to the folder that holds ``include/``.

Pure functions: they read only the environment, never the file system, so they are safe at
import and DAG-parse time. A relative override is taken as given (relative to wherever the
process runs): set absolute paths for services.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
"""``<root>/plugins/kafkalab``: the folder of this package."""


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value).expanduser().absolute() if value else None


def project_root() -> Path:
    """``$KAFKALAB_ROOT``, else two levels above this package (``plugins/kafkalab`` -> root)."""
    return _env_path("KAFKALAB_ROOT") or PACKAGE_DIR.parent.parent


def include_dir() -> Path:
    """The folder holding ``profiles/``, ``workloads/``, ``images/`` and ``drift.yaml``."""
    return _env_path("KAFKALAB_INCLUDE_DIR") or project_root() / "include"


def images_dir() -> Path:
    """``<include>/images``: the payload JPEGs (generated and sha256-verified by ``make setup``)."""
    return include_dir() / "images"


def spark_jobs_dir() -> Path:
    """The folder holding the Spark job scripts submitted with ``spark-submit``."""
    return _env_path("KAFKALAB_SPARK_JOBS_DIR") or project_root() / "spark_jobs"


def dags_dir() -> Path:
    """The folder holding the DAG files (Airflow's ``dags_folder`` for the local launcher)."""
    return project_root() / "dags"


def plugins_dir() -> Path:
    """The folder holding this package (Airflow's ``plugins_folder`` for the local launcher)."""
    return PACKAGE_DIR.parent


def lab_dir() -> Path:
    """``$KAFKALAB_HOME`` or ``<root>/.lab``: Kafka distribution, cluster state, Airflow home."""
    return _env_path("KAFKALAB_HOME") or project_root() / ".lab"


def default_data_dir() -> Path:
    """``<root>/lab-data``: the data dir when ``$KAFKALAB_DATA_DIR`` does not name another."""
    return project_root() / "lab-data"


def data_dir() -> Path:
    """``$KAFKALAB_DATA_DIR`` or :func:`default_data_dir`: every measurement the lab writes."""
    return _env_path("KAFKALAB_DATA_DIR") or default_data_dir()


def default_descriptor_path(lab: Path | None = None) -> Path:
    """``<lab_dir>/cluster.yaml``: the descriptor ``kafkalab cluster up`` writes (in the lab
    home ``lab``, default :func:`lab_dir`)."""
    return (lab if lab is not None else lab_dir()) / "cluster.yaml"


def drift_config_path() -> Path:
    """``$KAFKALAB_DRIFT_CONFIG`` or ``<include>/drift.yaml``: the drift rules."""
    return _env_path("KAFKALAB_DRIFT_CONFIG") or include_dir() / "drift.yaml"


def airflow_home() -> Path:
    """``$AIRFLOW_HOME`` or ``<lab_dir>/airflow``: the local Airflow's database, logs, secrets."""
    return _env_path("AIRFLOW_HOME") or lab_dir() / "airflow"


__all__ = [
    "PACKAGE_DIR",
    "airflow_home",
    "dags_dir",
    "data_dir",
    "default_data_dir",
    "default_descriptor_path",
    "drift_config_path",
    "images_dir",
    "include_dir",
    "lab_dir",
    "plugins_dir",
    "project_root",
    "spark_jobs_dir",
]
