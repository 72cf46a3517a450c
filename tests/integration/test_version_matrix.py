"""The version matrix on real brokers (no mocks): one load cell on Kafka 4.1.2 and 4.4.0,
each on a fresh one-broker KRaft cluster of that release, rounds alternating, and before each
round's cell its first-message trial (a start-up run per version, its trials numbered on
across the rounds); each version's runs record the broker they measured, the matrix file
every step in order, and every cluster is stopped after. Its own lab directory and ports
(broker 25892, controller 25992)."""

from __future__ import annotations

import json
from pathlib import Path

from kafkalab.cluster import cluster_status
from kafkalab.load import files
from kafkalab.load.spec import LoadCellSpec
from kafkalab.store import LabData
from kafkalab.versions.matrix import MatrixRequest, read_matrix, run_matrix
from kafkalab.versions.spec import MatrixFaults, MatrixMaxRate, MatrixSpec, MatrixStartup

BASE_PORT, CONTROL_PORT = 25892, 25992


def test_two_releases_alternate_on_fresh_clusters(tmp_path: Path) -> None:
    clusters = tmp_path / "clusters"
    cell = LoadCellSpec(rate_msgs_per_s=200, duration_s=3, warmup_s=1)
    spec = MatrixSpec(versions=["4.1.2", "4.4.0"], rounds=2, cell=cell, base_port=BASE_PORT,
                      control_port=CONTROL_PORT, startup=MatrixStartup(protocols=["classic"]))
    data = tmp_path / "data"
    lines: list[str] = []
    doc = run_matrix(MatrixRequest(spec=spec, data_dir=data, matrix_id="vm-it",
                                   clusters=clusters), lines.append)
    assert doc["status"] == "complete", doc["steps"]
    assert [(s["round"], s["version"], s["status"]) for s in doc["steps"]] == [
        (1, "4.1.2", "complete"), (1, "4.4.0", "complete"), (2, "4.4.0", "complete"),
        (2, "4.1.2", "complete")]
    assert read_matrix(data, "vm-it") == doc
    lab = LabData(data)
    for version, run_id in doc["runs"].items():
        manifest = lab.manifest(run_id)
        assert manifest is not None and manifest["status"] == "complete"
        assert manifest["cluster"]["version"] == version
        cells = sorted(files.run_cell_dirs(data, run_id))
        assert [c.name.rsplit(".", 1)[-1] for c in cells] == ["t1", "t2"]
        for c in cells:
            meta = json.loads(files.cell_json_path(c).read_text())
            assert meta["status"] == "complete" and meta["cluster"]["version"] == version
            assert meta["summary"]["missing_msgs"] == 0
        # every round on a fresh cluster, stopped after
        assert not cluster_status(clusters / version)["processes"]
    assert sum("a fresh cluster" in line for line in lines) == 4
    # the first-message trials: round k is trial k-1 of the version's start-up run
    import pandas as pd

    from kafkalab.startup.files import run_dir

    assert all(s["startup_status"] == "complete" and s["startup_failed_probes"] == 0
               for s in doc["steps"])
    for version, run_id in doc["startup_runs"].items():
        manifest = lab.manifest(run_id)
        assert manifest is not None and manifest["status"] == "complete", manifest
        assert manifest["kind"] == "startup" and manifest["cluster"]["version"] == version
        probes = pd.read_parquet(run_dir(data, manifest["started_at"][:10], run_id) / "probes.parquet")
        assert set(probes["kafka_version"]) == {version} and set(probes["status"]) == {"ok"}
        assert sorted(set(probes["trial"])) == [0, 1]
        assert set(probes["case_key"]) == {"cold/delay=0/confluent-kafka/subscribe/classic/m1",
                                           "warm/delay=0/confluent-kafka/subscribe/classic/m1",
                                           "warm/delay=0/confluent-kafka/assign/none/m1"}
        assert not cluster_status(clusters / f"{version}-startup")["processes"]


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
