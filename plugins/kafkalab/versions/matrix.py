"""Run a version matrix: the same load cell on every version, alternating, on fresh clusters.

For each ``(round, version)`` of :func:`kafkalab.versions.spec.round_order` the matrix
starts a one-broker cluster of that version (the embedded flavor that runs it, in its own lab
directory ``<clusters>/<version>``, on the matrix's ports, its data wiped first so every round
starts from an empty broker), measures the round's cell into that version's load run
(``<matrix id>-kafka-<version>``: one load run per version, its cells the rounds, ``trial`` =
round), and stops the cluster. Before the cell, unless the spec's ``startup.trials`` is 0, the
round's first-message trials run into that version's start-up run
(``<matrix id>-startup-<version>``, :mod:`kafkalab.startup`: its trials numbered on across
the rounds, round ``k`` holding trials ``(k−1)·T … k·T−1``), on fresh clusters of the version
in ``<clusters>/<version>-startup`` on the same ports. After the cell, when the spec's
``max_rate`` is enabled, the round's maximum-rate search runs on the same cluster
(:func:`kafkalab.load.maxrate.find_max_rate`, a load run of its own per round,
``<matrix id>-maxrate-<version>-r<round>``; its result in the step). Last, when the spec's
``faults.trials`` is not 0, the round's broker-fault trials run on a fresh 3-broker cluster
of the version (``<clusters>/<version>-faults``, brokers from the matrix's base port, its
controllers or ZooKeeper from its control port) into that version's fault run
(``<matrix id>-faults-<version>``, :mod:`kafkalab.faults`: its trials numbered on across the
rounds). Only one cluster runs at a time.

Each version's load run is an ordinary load run (manifest, samples, Spark, Great
Expectations, report, drift); the matrix file ``versions/<matrix id>.json`` (written as the
matrix goes, :data:`MATRIX_SCHEMA_VERSION`) ties them together: the spec, each version's
run ids, and every step in the order it ran with its status. A step that fails (a cluster
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
           "faults_run_id", "max_rate_run_id", "measured_runs", "read_matrix", "run_matrix", "startup_run_id", "step_complete", "version_run_id"]

MATRIX_SCHEMA_VERSION = 2
"""Version of the matrix file (``docs/versions.md``; 2 added the start-up runs and each
step's ``startup_*`` fields)."""


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


def max_rate_run_id(matrix_id: str, version: str, round_no: int) -> str:
    """The load run of round ``round_no``'s maximum-rate search of ``version``."""
    return safe_name(f"{matrix_id}-maxrate-{version}-r{round_no}")


def faults_run_id(matrix_id: str, version: str) -> str:
    """The fault run that holds ``version``'s fault trials of matrix ``matrix_id``."""
    return safe_name(f"{matrix_id}-faults-{version}")


def startup_run_id(matrix_id: str, version: str) -> str:
    """The start-up run that holds ``version``'s first-message trials of matrix ``matrix_id``."""
    return safe_name(f"{matrix_id}-startup-{version}")


def step_complete(step: dict[str, Any]) -> bool:
    """A step whose load cell completed and whose start-up trials and maximum-rate search
    (where asked for) were measured."""
    return (step.get("status") == "complete"
            and all(step.get(f"{part}_status") in (None, "complete")
                    for part in ("startup", "max_rate", "faults")))


def measured_runs(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """``(run id, kind)`` of every run of the matrix file ``doc`` with something to aggregate:
    a version's load run with a complete round, its start-up run and its fault run with a
    measured round (:class:`kafkalab.kinds.RunKind`: what aggregates it)."""
    from kafkalab.kinds import FAULTS, LOAD, STARTUP

    steps = doc.get("steps") or []
    out = [(r, LOAD) for r in (doc.get("runs") or {}).values()
           if any(s.get("run_id") == r and s.get("status") == "complete" for s in steps)]
    for part, kind in (("startup", STARTUP), ("faults", FAULTS)):
        out += [(r, kind) for r in (doc.get(f"{part}_runs") or {}).values()
                if any(s.get(f"{part}_run_id") == r and s.get(f"{part}_status") == "complete"
                       for s in steps)]
    return out


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


def _stop(lab: Path, step: dict[str, Any], error_key: str) -> None:
    """Stop and wipe the cluster in ``lab``; a failure is added to the step's ``error_key``
    (the next step's start stops it again)."""
    from kafkalab.cluster.embedded import cluster_down

    try:
        cluster_down(lab, wipe_data=True)
    except LabError as exc:
        step[error_key] = "; ".join(x for x in (step.get(error_key), f"down: {exc}") if x)


class _Matrix:
    """One matrix while it runs: its file, and which versions' runs were started."""

    def __init__(self, req: MatrixRequest, matrix_id: str, progress: Progress) -> None:
        self.req, self.spec, self.progress = req, req.spec, progress
        self.lab = LabData(req.data_dir)
        self.clusters = req.clusters or clusters_root()
        self.runs = {v: version_run_id(matrix_id, v) for v in self.spec.versions}
        self.started: set[str] = set()
        self.startup_runs = ({v: startup_run_id(matrix_id, v) for v in self.spec.versions}
                             if self.spec.startup.trials else {})
        self.startups: dict[str, Any] = {}
        self.faults_runs = ({v: faults_run_id(matrix_id, v) for v in self.spec.versions}
                            if self.spec.faults.trials else {})
        self.faults_started: set[str] = set()
        """Each version's open start-up run (:class:`kafkalab.startup.engine.StartupRun`)."""
        self.doc: dict[str, Any] = {
            "schema_version": MATRIX_SCHEMA_VERSION, "matrix_id": matrix_id, "status": "running",
            "spec": self.spec.summary(), "baseline": self.spec.versions[0], "runs": self.runs,
            "startup_runs": self.startup_runs, "faults_runs": self.faults_runs, "steps": [], "command": req.command, "started_at": utc_now_iso(), "ended_at": None}

    def write(self) -> None:
        path = self.lab.matrix_path(str(self.doc["matrix_id"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, self.doc)

    def step(self, round_no: int, version: str) -> None:
        """Measure one round of one version (its first-message trials, its cell on a fresh
        cluster with the maximum-rate search, its fault trials); record the step, also when
        it was interrupted."""
        step: dict[str, Any] = {"round": round_no, "version": version,
                                "run_id": self.runs[version], "status": "failed",
                                "error": None, "started_at": utc_now_iso()}
        try:
            if self.startup_runs:
                self._startup_round(round_no, version, step)
            self._load_round(round_no, version, step)
            if self.faults_runs:
                self._fault_round(round_no, version, step)
        finally:
            step["ended_at"] = utc_now_iso()
            self.doc["steps"].append(step)
            self.write()

    def _load_round(self, round_no: int, version: str, step: dict[str, Any]) -> None:
        """The round's cell (and maximum-rate search) on a fresh one-broker cluster of
        ``version``, stopped after; the step records ``status``, ``cell_id`` and ``error``."""
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
            if self.spec.max_rate.enabled:
                self._max_rate(round_no, version, descriptor, step)
        except LabError as exc:
            step["error"] = str(exc)
            self.progress(f"round {round_no}, Kafka {version}: {exc}")
        finally:
            _stop(lab, step, "error")

    def _startup_round(self, round_no: int, version: str, step: dict[str, Any]) -> None:
        """Round ``round_no``'s first-message trials of ``version`` (every case, each delay)
        into its start-up run; the step records ``startup_status``, ``startup_failed_probes``
        (probes of the round that timed out or failed) and ``startup_error``."""
        from kafkalab.cluster.flavors import flavor_for_version
        from kafkalab.startup.engine import measure_trial, stop_cluster

        step.update(startup_run_id=self.startup_runs[version], startup_status="failed",
                    startup_error=None)
        first = len(self.startups[version].rows) if version in self.startups else 0
        per_round = self.spec.startup.trials
        trials = range((round_no - 1) * per_round, round_no * per_round)
        flavor = flavor_for_version(version)
        try:
            with flavor.running_version(version):
                run = self._startup_run(version)
                try:
                    for delay in run.spec.delays_ms:
                        for trial in trials:
                            measure_trial(run, delay, trial)
                    step["startup_status"] = "complete"
                except LabError as exc:
                    run.trial_errors.append(f"round {round_no}: {exc}")
                    raise
                finally:
                    stop_cluster(run)
        except LabError as exc:
            step["startup_error"] = str(exc)
            self.progress(f"round {round_no}, Kafka {version}: first message: {exc}")
        rows = self.startups[version].rows[first:] if version in self.startups else []
        step["startup_failed_probes"] = sum(1 for r in rows if r["status"] != "ok")

    def _max_rate(self, round_no: int, version: str, descriptor: Path,
                  step: dict[str, Any]) -> None:
        """Round ``round_no``'s maximum-rate search of ``version`` on its cluster; the step
        records ``max_rate_run_id``, ``max_rate_status``, ``max_rate_msgs_per_s`` (null: no
        passing rate), ``max_rate_limited_by``, ``max_rate_budget_cap_msgs_per_s``,
        ``max_rate_capped`` (the search never failed below the client budget's cap: a lower
        bound of the broker's) and ``max_rate_error``."""
        from kafkalab.load.maxrate import MaxRateRequest, find_max_rate

        mr, cell = self.spec.max_rate, self.spec.cell
        run_id = max_rate_run_id(str(self.doc["matrix_id"]), version, round_no)
        step.update(max_rate_run_id=run_id, max_rate_status="failed", max_rate_msgs_per_s=None,
                    max_rate_limited_by=None, max_rate_error=None)
        self.progress(f"round {round_no}, Kafka {version}: maximum-rate search")
        try:
            result = find_max_rate(MaxRateRequest(
                payload=cell.payload, encoding=cell.encoding, acks=cell.acks,
                profile=cell.profile, partitions=cell.partitions, consumers=cell.consumers,
                start_rate=mr.start_rate or cell.rate_msgs_per_s,
                step_duration_s=mr.step_duration_s, warmup_s=cell.warmup_s,
                objective_p99_ms=mr.objective_p99_ms, repeats=mr.repeats,
                max_steps=mr.max_steps, client=cell.client, data_dir=self.lab.root,
                descriptor_path=descriptor, run_id=run_id), self.progress)
        except LabError as exc:
            step["max_rate_error"] = str(exc)
            self.progress(f"round {round_no}, Kafka {version}: maximum rate: {exc}")
            return
        found = result.get("max_rate_msgs_per_s")
        # the bracketing search passed at the client budget's cap and never failed: the rate
        # found bounds the broker's from below and says nothing about the release
        capped = found is not None and bool(result.get("capped_by_budget"))
        step.update(max_rate_status="complete", max_rate_msgs_per_s=found,
                    max_rate_limited_by=result.get("limited_by"),
                    max_rate_budget_cap_msgs_per_s=result.get("budget_cap_msgs_per_s"),
                    max_rate_capped=capped)

    def _fault_round(self, round_no: int, version: str, step: dict[str, Any]) -> None:
        """Round ``round_no``'s fault trials of ``version`` on a fresh 3-broker cluster of
        it, into its fault run (opened the first time); the step records ``faults_run_id``,
        ``faults_status`` (``complete``: every trial completed, whatever it found),
        ``faults_trials`` (each trial's id, status and verdict) and ``faults_error``."""
        from kafkalab.cluster.embedded import cluster_down, cluster_up
        from kafkalab.cluster.flavors import flavor_for_version
        from kafkalab.faults.engine import FaultRequest, run_fault_trial, start_fault_run
        from kafkalab.faults.inject import FAULT_BROKERS

        run_id = self.faults_runs[version]
        lab = self.clusters / f"{safe_name(version)}-faults"
        step.update(faults_run_id=run_id, faults_status="failed", faults_trials=[],
                    faults_error=None)
        flavor = flavor_for_version(version)
        self.progress(f"round {round_no}, Kafka {version}: a fresh {FAULT_BROKERS}-broker "
                      "cluster for the fault trials")
        try:
            with flavor.running_version(version):
                cluster_down(lab, wipe_data=True)
                lab.mkdir(parents=True, exist_ok=True)
                trials = self.spec.fault_trials(round_no)
                cluster_up(flavor.name, FAULT_BROKERS, lab_dir=lab,
                           base_port=self.spec.base_port, control_port=self.spec.control_port,
                           progress=self.progress,
                           links=any(t.needs_links for t in trials))
                if version not in self.faults_started:
                    start_fault_run(FaultRequest(
                        trials=self.spec.all_fault_trials(), data_dir=self.lab.root,
                        run_id=run_id, cluster_lab=lab, command=self.req.command,
                        owner_kind=self.req.owner_kind, logical_date=self.req.logical_date),
                        self.progress)
                    self.faults_started.add(version)
                for trial in trials:
                    summary = run_fault_trial(self.lab.root, run_id, trial, cluster_lab=lab,
                                              progress=self.progress)
                    step["faults_trials"].append({k: summary.get(k) for k in (
                        "trial_id", "status", "verdict", "acked_lost", "duplicates")})
            if all(t["status"] == "complete" for t in step["faults_trials"]):
                step["faults_status"] = "complete"
        except LabError as exc:
            step["faults_error"] = str(exc)
            self.progress(f"round {round_no}, Kafka {version}: fault trials: {exc}")
        finally:
            _stop(lab, step, "faults_error")

    def _startup_run(self, version: str) -> Any:
        """``version``'s start-up run, opened the first time (inside its
        ``running_version``). A matrix run again under its id (a night of the nightly run
        twice: one lab run per night) re-measures every round, so an earlier start-up run of
        that id is measured anew (``supersede``), as its load runs are re-opened."""
        if version not in self.startups:
            from kafkalab.cluster.flavors import flavor_for_version
            from kafkalab.startup.engine import StartupRequest, open_startup

            self.startups[version] = open_startup(StartupRequest(
                spec=self.spec.startup_spec(), data_dir=self.req.data_dir,
                run_id=self.startup_runs[version], base_port=self.spec.base_port,
                control_port=self.spec.control_port, flavor=flavor_for_version(version).name,
                cluster_lab=self.clusters / f"{safe_name(version)}-startup",
                command=self.req.command, owner_kind=self.req.owner_kind,
                logical_date=self.req.logical_date, supersede=True), self.progress)
        return self.startups[version]

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

    def close(self, exc: BaseException | None, error: str | None) -> None:
        """Close every started run (``exc``: what stopped the matrix, ``error`` its line) and
        the matrix file (``complete`` when every step completed (:func:`step_complete`),
        ``failed`` when none did, else ``incomplete``)."""
        from kafkalab.faults.engine import finish_fault_run
        from kafkalab.load.run import finish_load_run
        from kafkalab.startup.engine import finish_startup

        for version in self.started:
            finish_load_run(self.lab.root, self.runs[version], error)
        for version in self.faults_started:
            finish_fault_run(self.lab.root, self.faults_runs[version], error)
        for run in self.startups.values():
            finish_startup(run, exc)
        done = [s for s in self.doc["steps"] if step_complete(s)]
        planned = len(self.spec.versions) * self.spec.rounds
        self.doc["status"] = ("complete" if len(done) == planned and error is None
                              else "failed" if not done else "incomplete")
        self.doc["error"] = error
        self.doc["ended_at"] = utc_now_iso()
        self.write()


def check_versions(spec: MatrixSpec) -> None:
    """Refuse, before any cluster starts, a cell one of the versions' brokers cannot take (a
    property the broker predates, e.g. idempotence or transactions on Kafka 0.9), as the
    load run of that version would refuse it, and start-up settings it cannot serve (a
    rebalance delay on Kafka 0.9, no group protocol left).

    Raises:
        ConfigError: one line naming the version and the problem.
    """
    from kafkalab.cluster.descriptor import ClusterDescriptor
    from kafkalab.cluster.flavors import flavor_for_version
    from kafkalab.errors import ConfigError
    from kafkalab.load.run import validate_cells
    from kafkalab.startup.engine import broker_spec

    startup = spec.startup_spec()  # ConfigError: start-up settings refused, named
    for version in spec.versions:
        flavor = flavor_for_version(version)
        d = ClusterDescriptor(flavor=flavor.name, protocol=flavor.protocols[0], version=version,
                              bootstrap_servers=f"127.0.0.1:{spec.base_port}", broker_count=1)
        try:
            validate_cells(spec.cells()[:1], d)
            if spec.faults.trials:
                from kafkalab.faults.inject import FAULT_BROKERS

                trials = spec.fault_trials(1)
                validate_cells([t.load_cell() for t in trials],
                               d.model_copy(update={"broker_count": FAULT_BROKERS}))
                if any(t.needs_links for t in trials) and not flavor.has_links:
                    raise ConfigError(f"fault {spec.faults.fault} cuts links, which the "
                                      f"{flavor.name} flavor cannot degrade")
            if startup is not None:
                with flavor.running_version(version):
                    broker_spec(startup, flavor, flavor.embedded_features())
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
    stopped: BaseException | None = None
    try:
        for round_no, version in round_order(req.spec.versions, req.spec.rounds):
            m.step(round_no, version)
    except KeyboardInterrupt as exc:
        stopped, error = exc, "interrupted (Ctrl-C): what was measured is kept"
        raise
    except BaseException as exc:  # an Airflow task killed, a bug: the runs say so
        stopped, error = exc, f"{type(exc).__name__}: {exc}"
        raise
    finally:
        m.close(stopped, error)
    return m.doc
