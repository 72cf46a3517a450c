"""The version matrix on real brokers (no mocks), run directly (``run_matrix``, no Airflow):
Kafka 4.4.0 against 0.9.0.1, the legacy flavor, with the first-message trial, the
maximum-rate search and a fault trial each round; each version's runs record the broker they
measured, and every cluster is stopped after. Its own lab directory and ports (broker 25892,
controller 25992).

Two 4.x releases alternating over two rounds on fresh clusters, their start-up trials
numbered on across the rounds, are tested end to end through the ``version_matrix`` DAG
(``tests/e2e/test_airflow_dags_test.py::test_version_matrix_end_to_end``); a test here ran
the same two rounds without Airflow until 2026-12-07 (95 CPU-s on eight fresh clusters) and
was retired for the suite's time budget."""

from __future__ import annotations

from pathlib import Path

from kafkalab.cluster import cluster_status
from kafkalab.load import files
from kafkalab.load.spec import LoadCellSpec
from kafkalab.store import LabData
from kafkalab.versions.matrix import MatrixRequest, run_matrix
from kafkalab.versions.spec import MatrixFaults, MatrixMaxRate, MatrixSpec, MatrixStartup

BASE_PORT, CONTROL_PORT = 25892, 25992


def test_the_legacy_point_a_maximum_rate_search_and_a_fault_trial_each_round(
        tmp_path: Path) -> None:
    """Kafka 4.4.0 against 0.9.0.1 (ZooKeeper, the legacy flavor), one round: the first-
    message trial runs on both (the classic protocol: 0.9 has no other); the maximum-rate
    search runs after the cell on the same cluster as a load run of its own, and an
    objective no step can meet makes it end without a passing rate, recorded as a null, not
    as a failure; last, a leader kill under the legacy durability profile on a fresh 3-broker
    cluster of each version (brokers 25892-25894), into each version's fault run."""
    clusters = tmp_path / "clusters"
    cell = LoadCellSpec(rate_msgs_per_s=200, duration_s=3, warmup_s=1)
    spec = MatrixSpec(versions=["4.4.0", "0.9.0.1"], rounds=1, cell=cell, base_port=BASE_PORT,
                      control_port=CONTROL_PORT, startup=MatrixStartup(protocols=["classic"]),
                      max_rate=MatrixMaxRate(enabled=True, step_duration_s=3.0,
                                             objective_p99_ms=0.001, repeats=0, max_steps=2),
                      faults=MatrixFaults(trials=1, profile="durability-legacy",
                                          rate_msgs_per_s=50, duration_s=14))
    data = tmp_path / "data"
    doc = run_matrix(MatrixRequest(spec=spec, data_dir=data, matrix_id="vm-legacy",
                                   clusters=clusters), lambda _line: None)
    assert doc["status"] == "complete", doc["steps"]
    lab = LabData(data)
    for step in doc["steps"]:
        assert step["startup_status"] == "complete", step
        assert step["max_rate_status"] == "complete" and step["max_rate_msgs_per_s"] is None
        assert step["max_rate_capped"] is False  # no rate found: nothing bounded by the cap
        assert step["max_rate_run_id"] == f"vm-legacy-maxrate-{step['version']}-r1"
        search = lab.manifest(step["max_rate_run_id"])
        assert search is not None and search["cluster"]["version"] == step["version"]
        assert len(files.run_cell_dirs(data, step["max_rate_run_id"])) == 2  # max_steps
        assert lab.manifest(doc["startup_runs"][step["version"]])["status"] == "complete"
        assert not cluster_status(clusters / step["version"])["processes"]
        assert step["faults_status"] == "complete", step
        (trial,) = step["faults_trials"]
        assert trial["status"] == "complete" and trial["trial_id"].endswith("t1"), trial
        faults = lab.manifest(doc["faults_runs"][step["version"]])
        assert faults is not None and faults["status"] == "complete"
        assert faults["cluster"]["version"] == step["version"]
        assert faults["cluster"]["broker_count"] == 3
        assert not cluster_status(clusters / f"{step['version']}-faults")["processes"]
