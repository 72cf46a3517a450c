"""The Airflow pool that keeps two DAGs from loading one Kafka cluster at once.

``max_active_tis_per_dag=1`` serialises the cells of one DAG only: a ``latency_experiment``
triggered while ``nightly_latency_regression`` measures would measure the same broker at the
same time, and each would see the other's load as latency. Every task that loads the
cluster (:data:`CLUSTER_TASKS`: topic provisioning and measuring) of every DAG takes a slot
of :data:`MEASURE_POOL`, which has one slot, so they run one at a time across DAGs.

The pool is created by the lab's Airflow set-up (:func:`ensure_measure_pool`, called by
``python -m kafkalab.airflow.launcher up`` and ``dags-test`` after ``airflow db migrate``).
A scheduler does not start tasks of a pool that does not exist (they wait, logged as
"non-existent pool"); ``airflow dags test`` runs tasks one at a time in-process and does not
check pools.

A second pool, :data:`SHARD_POOL`, holds the consumer shard tasks of a load cell (shard
placement ``tasks``): they run beside the cell's producer, which holds the measuring slot.

Cheap to import (the constants are read while a DAG file is parsed); only
:func:`ensure_measure_pool` starts a process.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

MEASURE_POOL = "kafkalab_measure"
"""Name of the pool every cluster-loading task runs in."""

MEASURE_POOL_SLOTS = 1
"""One slot: one cluster-loading task at a time, whichever DAG it belongs to."""

MEASURE_POOL_DESCRIPTION = ("Kafka Latency Lab: one task at a time may provision or measure "
                            "the cluster (across every DAG)")

CLUSTER_TASKS: tuple[str, ...] = ("prepare_run", "measure_cell", "start_load_run",
                                   "run_load_cell", "start_fault_run", "run_fault_trial",
                                   "run_startup", "run_matrix")
"""The task ids that load the cluster and therefore run in :data:`MEASURE_POOL` (a DAG has
those of its chains): ``prepare_run`` creates and alters topics, ``measure_cell`` measures a
latency cell, ``start_load_run`` checks the cluster for a load run, ``run_load_cell``
provisions its topic and measures a load cell (its consumer shards included),
``start_fault_run`` starts (or reuses) the 3-broker fault cluster, ``run_fault_trial`` runs
one fault trial on it, ``run_startup`` starts the start-up cluster and times new consumers
on it, ``run_matrix`` measures a version matrix on fresh clusters of each version. The
fault, start-up and matrix clusters are clusters of their own, but they share the host's
cores: a trial or a probe measured beside a latency cell would distort both."""


SHARD_POOL = "kafkalab_shards"
"""Name of the pool of the consumer shard tasks (``consume_load_shard``; shard placement
``tasks``). They run *beside* the cell's producer, which holds :data:`MEASURE_POOL`'s slot, so
they cannot share that pool."""

SHARD_POOL_SLOTS = 16
"""Slots of :data:`SHARD_POOL`: the most shard tasks one cell may have (a cell with more is
refused by ``start_load_run``). A waiting shard task is rescheduled and holds no slot."""

SHARD_POOL_DESCRIPTION = ("Kafka Latency Lab: consumer shard tasks of a load cell, beside its "
                          "producer (shard placement 'tasks').")


def write_pools_file(directory: Path) -> Path:
    """Write ``<directory>/pools.json``, the lab's two pools as ``airflow pools import``
    reads them (:data:`MEASURE_POOL`, one slot; :data:`SHARD_POOL`); returns its path."""
    pools = {MEASURE_POOL: {"slots": MEASURE_POOL_SLOTS, "description": MEASURE_POOL_DESCRIPTION},
             SHARD_POOL: {"slots": SHARD_POOL_SLOTS, "description": SHARD_POOL_DESCRIPTION}}
    path = directory / "pools.json"
    path.write_text(json.dumps(pools))
    return path


def ensure_measure_pool(env: Mapping[str, str], airflow_bin: str = "airflow",
                        timeout_s: float = 120) -> None:
    """Create (or reset to one slot) :data:`MEASURE_POOL`, and create (or reset)
    :data:`SHARD_POOL`, in the metadata DB of ``env``.

    Runs ``airflow pools import`` of both (idempotent, ~2 s); the DB must be migrated first.

    Args:
        env: the environment of the lab's Airflow processes (``AIRFLOW_HOME`` etc.).
        airflow_bin: the ``airflow`` executable.
        timeout_s: how long the command may take.

    Raises:
        subprocess.CalledProcessError: the command failed (its stderr is in the exception).
    """
    with tempfile.TemporaryDirectory(prefix="kafkalab-pools-") as tmp:
        path = write_pools_file(Path(tmp))
        subprocess.run([airflow_bin, "pools", "import", str(path)],
                       env=dict(env), check=True, capture_output=True, text=True,
                       timeout=timeout_s)


__all__ = [
    "CLUSTER_TASKS",
    "MEASURE_POOL",
    "MEASURE_POOL_DESCRIPTION",
    "MEASURE_POOL_SLOTS",
    "SHARD_POOL",
    "SHARD_POOL_DESCRIPTION",
    "SHARD_POOL_SLOTS",
    "ensure_measure_pool",
    "write_pools_file",
]
