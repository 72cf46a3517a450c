"""Run a version matrix: the same load cell on every version, alternating, on fresh clusters.

For each ``(round, version)`` of :func:`kafkalab.versions.spec.round_order` the matrix
starts a one-broker cluster of that version (the embedded flavor that runs it, in its own lab
directory ``<clusters>/<version>``, on the matrix's ports, its data wiped first so every round
starts from an empty broker), measures the round's cell into that version's load run
(``<matrix id>-kafka-<version>``: one load run per version, its cells the rounds, ``trial`` =
round), and stops the cluster. Only one cluster runs at a time.

Each version's load run is an ordinary load run (manifest, samples, Spark, Great
Expectations, report, drift); the matrix file ``versions/<matrix id>.json`` (written as the
matrix goes, :data:`MATRIX_SCHEMA_VERSION`) ties them together: the spec, each version's
run id, and every step in the order it ran with its status. A step that fails (a cluster
that would not start, a cell that failed) is recorded and the matrix goes on; Ctrl-C stops
it with what was measured kept and every run closed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.errors import LabError
from kafkalab.progress import Progress, noop
from kafkalab.samples import utc_now_iso
from kafkalab.store import LabData, atomic_write_json, read_json, safe_name
from kafkalab.versions.spec import MatrixSpec, round_order

__all__ = ["MATRIX_SCHEMA_VERSION", "MatrixRequest", "check_versions", "clusters_root",
           "read_matrix", "run_matrix", "version_run_id"]

MATRIX_SCHEMA_VERSION = 1
"""Version of the matrix file (``docs/versions.md``)."""


@dataclass(frozen=True)
class MatrixRequest:
    """A version matrix asked for by the CLI (or a DAG)."""

    spec: MatrixSpec
    data_dir: Path | None = None
    matrix_id: str | None = None
    clusters: Path | None = None
    """Where the versions' cluster labs go (default :func:`clusters_root`)."""
    command: str = "kafkalab versions run"
    owner_kind: str = "cli"
    """Who runs it (``cli``, ``airflow``): each version's load run records it."""
    logical_date: str | None = None
    """The DAG run's logical date (ISO 8601 UTC), recorded in each run's manifest."""


def clusters_root() -> Path:
    """``<lab home>/versions``: the matrix's cluster labs, one per version."""
    from kafkalab.paths import lab_dir

    return lab_dir() / "versions"


def version_run_id(matrix_id: str, version: str) -> str:
    """The load run that holds ``version``'s rounds of matrix ``matrix_id``."""
    return safe_name(f"{matrix_id}-kafka-{version}")


def read_matrix(data_dir: str | os.PathLike[str] | None, matrix_id: str) -> dict[str, Any]:
    """The matrix file of ``matrix_id``.

    Raises:
        ConfigError: no such matrix (or an unreadable file).
    """
    from kafkalab.errors import ConfigError

    lab = LabData(data_dir)
    doc = read_json(lab.matrix_path(matrix_id))
    if not isinstance(doc, dict):
        raise ConfigError(f"unknown version matrix {matrix_id!r}: no {lab.matrix_path(matrix_id)}")
    return doc


class _Matrix:
    """One matrix while it runs: its file, and which versions' runs were started."""

    def __init__(self, req: MatrixRequest, matrix_id: str, progress: Progress) -> None:
        self.req, self.spec, self.progress = req, req.spec, progress
        self.lab = LabData(req.data_dir)
        self.clusters = req.clusters or clusters_root()
        self.runs = {v: version_run_id(matrix_id, v) for v in self.spec.versions}
        self.started: set[str] = set()
        self.doc: dict[str, Any] = {
            "schema_version": MATRIX_SCHEMA_VERSION, "matrix_id": matrix_id, "status": "running",
            "spec": self.spec.summary(), "baseline": self.spec.versions[0], "runs": self.runs,
            "steps": [], "command": req.command, "started_at": utc_now_iso(), "ended_at": None}

    def write(self) -> None:
        path = self.lab.matrix_path(str(self.doc["matrix_id"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, self.doc)

    def step(self, round_no: int, version: str) -> None:
        """Measure one round of one version on a fresh cluster; record the step."""
        step: dict[str, Any] = {"round": round_no, "version": version,
                                "run_id": self.runs[version], "status": "failed",
                                "error": None, "started_at": utc_now_iso()}
        self.progress(f"round {round_no}, Kafka {version}: a fresh cluster")
        lab = self.clusters / safe_name(version)
        try:
            descriptor = self._fresh_cluster(version, lab)
            self._start_run(version, descriptor)
            from kafkalab.load.cell import run_load_cell

            summary = run_load_cell(self.lab.root, self.runs[version],
                                    self.spec.round_cell(round_no), descriptor, self.progress)
            step["status"] = summary.get("status")
            step["cell_id"] = summary.get("cell_id")
        except LabError as exc:
            step["error"] = str(exc)
            self.progress(f"round {round_no}, Kafka {version}: {exc}")
        finally:
            from kafkalab.cluster.embedded import cluster_down

            try:
                cluster_down(lab, wipe_data=True)
            except LabError as exc:  # recorded; the next step's up stops it again
                step["error"] = f"{step['error'] + '; ' if step['error'] else ''}down: {exc}"
            step["ended_at"] = utc_now_iso()
            self.doc["steps"].append(step)
            self.write()

    def _fresh_cluster(self, version: str, lab: Path) -> Path:
        """Start a one-broker cluster of ``version`` in ``lab`` with empty data; its
        descriptor's path."""
        from kafkalab.cluster.embedded import cluster_down, cluster_up
        from kafkalab.cluster.flavors import flavor_for_version
        from kafkalab.paths import default_descriptor_path

        flavor = flavor_for_version(version)
        cluster_down(lab, wipe_data=True)  # a crashed earlier matrix's cluster, its data
        lab.mkdir(parents=True, exist_ok=True)
        with flavor.running_version(version):
            cluster_up(flavor.name, 1, lab_dir=lab, base_port=self.spec.base_port,
                       control_port=self.spec.control_port, progress=self.progress)
        return default_descriptor_path(lab)

    def _start_run(self, version: str, descriptor: Path) -> None:
        """Open ``version``'s load run (every round's cell planned) the first time."""
        if version in self.started:
            return
        from kafkalab.load.run import LoadRequest, start_load_run

        start_load_run(LoadRequest(cells=self.spec.cells(), data_dir=self.req.data_dir,
                                   descriptor_path=descriptor, run_id=self.runs[version],
                                   command=self.req.command, owner_kind=self.req.owner_kind,
                                   logical_date=self.req.logical_date,
                                   workload_name=f"version-matrix {self.doc['matrix_id']}"),
                       self.progress)
        self.started.add(version)

    def close(self, error: str | None) -> None:
        """Close every started run and the matrix file (``complete`` when every step
        completed, ``failed`` when none did, else ``incomplete``)."""
        from kafkalab.load.run import finish_load_run

        for version in self.started:
            finish_load_run(self.lab.root, self.runs[version], error)
        done = [s for s in self.doc["steps"] if s["status"] == "complete"]
        planned = len(self.spec.versions) * self.spec.rounds
        self.doc["status"] = ("complete" if len(done) == planned and error is None
                              else "failed" if not done else "incomplete")
        self.doc["error"] = error
        self.doc["ended_at"] = utc_now_iso()
        self.write()


def check_versions(spec: MatrixSpec) -> None:
    """Refuse, before any cluster starts, a cell one of the versions' brokers cannot take (a
    property the broker predates, e.g. idempotence or transactions on Kafka 0.9), as the
    load run of that version would refuse it.

    Raises:
        ConfigError: one line naming the version and the problem.
    """
    from kafkalab.cluster.descriptor import ClusterDescriptor
    from kafkalab.cluster.flavors import flavor_for_version
    from kafkalab.errors import ConfigError
    from kafkalab.load.run import validate_cells

    for version in spec.versions:
        flavor = flavor_for_version(version)
        d = ClusterDescriptor(flavor=flavor.name, protocol=flavor.protocols[0], version=version,
                              bootstrap_servers=f"127.0.0.1:{spec.base_port}", broker_count=1)
        try:
            validate_cells(spec.cells()[:1], d)
        except ConfigError as exc:
            raise ConfigError(f"Kafka {version}: {exc}") from None


def run_matrix(req: MatrixRequest, progress: Progress = noop) -> dict[str, Any]:
    """Run the matrix ``req`` asks for; returns its matrix file's content.

    Raises:
        ConfigError: a cell a version cannot take (:func:`check_versions`; nothing started).
        KeyboardInterrupt: Ctrl-C (the runs and the matrix file are closed first).
    """
    from kafkalab.run_ids import new_run_id

    check_versions(req.spec)
    m = _Matrix(req, req.matrix_id or new_run_id(), progress)
    m.write()
    error: str | None = None
    try:
        for round_no, version in round_order(req.spec.versions, req.spec.rounds):
            m.step(round_no, version)
    except KeyboardInterrupt:
        error = "interrupted (Ctrl-C): what was measured is kept"
        raise
    except BaseException as exc:  # an Airflow task killed, a bug: the runs say so
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        m.close(error)
    return m.doc
