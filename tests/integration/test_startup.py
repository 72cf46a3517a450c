"""Start-up runs on real Kafka 4.x (KRaft): every case of a small spec measured through both
clients on the run's own cluster, the files written as documented, the cold cluster's offsets
topic dated, and the cluster gone afterwards."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkalab.cluster.embedded import cluster_status
from kafkalab.startup.engine import StartupRequest, execute_startup
from kafkalab.startup.files import PROBES_SCHEMA
from kafkalab.startup.spec import StartupSpec
from kafkalab.store import LabData, read_json

pytestmark = pytest.mark.integration

BASE_PORT = 28592
CONTROL_PORT = 28692


def _known_client_failure(r: dict[str, object]) -> bool:
    """kafka-python 3.0's own failure, seen on Kafka 4.4 in CI with one member and with two:
    as its group's leader, its range assignor found no partition metadata for the topic
    (which existed), assigned nothing, and the member got no partition in the whole 30 s
    (docs/first-message.md). A client's behaviour, not the instrument's: the run counts it as
    a timed-out probe whose row says what kafka-python logged, which is what this test
    checks; any other failure fails the test."""
    return (r["client"] == "kafka-python" and r["status"] == "timeout"
            and "No partition metadata for topic" in str(r["error"]))


def test_every_case_is_measured_and_the_files_say_how(tmp_path: Path) -> None:
    spec = StartupSpec(trials=1, delays_ms=(0,), members=(1, 2), timeout_s=30.0)
    lab = tmp_path / "startup-lab"
    result = execute_startup(StartupRequest(spec=spec, data_dir=tmp_path / "data",
                                            base_port=BASE_PORT, control_port=CONTROL_PORT,
                                            cluster_lab=lab))
    table = pq.read_table(result.run_dir / "probes.parquet")
    assert table.schema.names == PROBES_SCHEMA.names
    rows = table.to_pylist()
    assert len(rows) == spec.probe_count() == 14  # 3 cold + 9 warm subscribe members + 2 assign
    assert {r["kafka_version"] for r in rows} == {"4.4.0"} and {r["broker_flavor"] for r in rows} == {"kraft"}
    assert {r["initial_rebalance_delay_ms"] for r in rows} == {0}  # as the broker reports it
    failed = [r for r in rows if r["status"] != "ok"]
    # every other probe reached its first record; a failed one is a counted timeout row
    assert all(_known_client_failure(r) and r["first_record_ms"] is None for r in failed), failed
    assert result.failed_probes == len(failed)
    status = "complete" if not failed else "incomplete"  # the run's, the manifest's, run.json's
    assert result.status == status
    for r in (r for r in rows if r["status"] == "ok"):
        assert 0 <= r["created_ms"] <= r["first_record_ms"]
        assert r["assigned_ms"] <= r["first_record_ms"]
        # librdkafka only; a sample, not a callback: null when no 10 ms statistics snapshot
        # saw the learned broker still in INIT (once in CI under load: it was connected
        # within the first interval), never a wrong date
        assert r["metadata_ms"] is None or r["client"] == "confluent-kafka"
        if r["metadata_ms"] is not None:
            assert r["created_ms"] <= r["metadata_ms"] <= r["first_record_ms"]
        if r["metadata_ms"] is not None and r["join"] == "subscribe":  # no group without it
            assert r["metadata_ms"] <= r["assigned_ms"]
        cold = r["cluster_state"] == "cold"
        # the watcher dates the offsets topic on cold clusters only, before the first record
        assert (r["offsets_topic_ready_ms"] is not None) == cold
        assert (r["coordinator_ready_ms"] is not None) == cold
        if cold:  # the watcher dates the topic, then the coordinator (each when it saw it:
            # the consumer, which joins on its own, may be assigned before the watcher's answer)
            assert 0 <= r["offsets_topic_ready_ms"] <= r["coordinator_ready_ms"]
    dated = [r for r in rows if r["status"] == "ok" and r["client"] == "confluent-kafka"
             and r["metadata_ms"] is not None]
    assert dated  # the snapshots date it in practice (all but one probe, in every run seen)
    # kafka-python has no KIP-848 protocol: said, not measured
    assert not [r for r in rows if r["client"] == "kafka-python" and r["group_protocol"] == "consumer"]
    doc = read_json(result.run_dir / "run.json")
    assert doc["status"] == status and doc["probes"] == 14
    assert doc["failed_probes"] == len(failed)
    assert doc["unsupported"] == [{"client": "kafka-python", "group_protocol": "consumer",
                                   "reason": spec.unsupported()[0]["reason"]}]
    assert doc["clusters"] == [{"flavor": "kraft", "kafka_version": "4.4.0", "brokers": 1,
                                "group.initial.rebalance.delay.ms": 0}]
    by_case = {c["case_key"]: c for c in doc["cases"]}
    assert len(by_case) == 11
    two = by_case["warm/delay=0/confluent-kafka/subscribe/classic/m2"]
    assert two["probes"] == 2 and two["first_record_ms_n"] == 2
    for case in (c for c in doc["cases"] if c["members"] == 1):  # one probe: parts add up
        if case["failed"]:  # its one probe is a known client failure (checked above): no figure
            assert case["first_record_ms"] is None and case["failed"] == 1, case
            continue
        names = ("client_start_ms", "join_ms", "fetch_ms") if case["join"] == "subscribe" else (
            "client_start_ms", "fetch_ms")
        if case["client_start_ms"] is None:  # librdkafka's sampled metadata mark missed (above):
            # the part it bounds is null too, never folded into the next one
            assert case["client"] == "confluent-kafka", case
            assert case[names[1]] is None, case
            continue
        assert sum(case[p] for p in names) == pytest.approx(case["first_record_ms"], abs=0.01)
    assert [line.split(":")[0] for line in doc["answer"]] == ["confluent-kafka", "kafka-python"]
    manifest = LabData(tmp_path / "data").manifest(result.run_id)
    assert manifest is not None and manifest["kind"] == "startup"
    assert manifest["status"] == status and len(manifest["cells"]) == 11
    assert manifest["cluster"]["version"] == "4.4.0"
    settings = manifest["broker_settings"]["settings"]  # read back through the Admin API
    assert settings["group.initial.rebalance.delay.ms"] == "0"
    assert cluster_status(lab)["state"] == "down"


BASE_PORT_09 = 28792
ZOOKEEPER_PORT_09 = 28892


def test_the_same_decomposition_on_kafka_0_9_for_contrast(tmp_path: Path) -> None:
    """Kafka 0.9.0.1 (ZooKeeper): no initial rebalance delay to set (its groups rebalance at
    once: measured as 0), no KIP-848 protocol (listed for both clients, not measured), no
    DescribeConfigs (no broker settings in the manifest); librdkafka joins only because its
    45 s default session timeout is lowered to the broker's 30 s limit."""
    spec = StartupSpec(trials=1, delays_ms=(0,), members=(1,), timeout_s=30.0)
    lab = tmp_path / "startup-lab-09"
    result = execute_startup(StartupRequest(spec=spec, data_dir=tmp_path / "data",
                                            flavor="kafka09", base_port=BASE_PORT_09,
                                            control_port=ZOOKEEPER_PORT_09, cluster_lab=lab))
    assert result.status == "complete" and result.failed_probes == 0
    rows = pq.read_table(result.run_dir / "probes.parquet").to_pylist()
    assert {r["case_key"] for r in rows} == {
        "cold/delay=0/confluent-kafka/subscribe/classic/m1",
        "cold/delay=0/kafka-python/subscribe/classic/m1",
        "warm/delay=0/confluent-kafka/subscribe/classic/m1",
        "warm/delay=0/kafka-python/subscribe/classic/m1",
        "warm/delay=0/confluent-kafka/assign/none/m1", "warm/delay=0/kafka-python/assign/none/m1"}
    assert {(r["broker_flavor"], r["kafka_version"]) for r in rows} == {("kafka09", "0.9.0.1")}
    for r in rows:
        assert r["status"] == "ok", r
        assert r["assigned_ms"] <= r["first_record_ms"]
        if r["cluster_state"] == "cold":  # 0.9 creates __consumer_offsets too
            assert 0 <= r["offsets_topic_ready_ms"] <= r["coordinator_ready_ms"]
    doc = read_json(result.run_dir / "run.json")
    assert [(u["client"], u["group_protocol"]) for u in doc["unsupported"]] == [
        ("confluent-kafka", "consumer"), ("kafka-python", "consumer")]
    assert all("Kafka 0.9.0.1" in u["reason"] for u in doc["unsupported"])
    assert doc["clusters"] == [{"flavor": "kafka09", "kafka_version": "0.9.0.1", "brokers": 1,
                                "group.initial.rebalance.delay.ms": None}]
    assert doc["broker_default_delay_ms"] == 0
    assert all("classic (the broker has no initial rebalance delay)" in line
               for line in doc["answer"])
    manifest = LabData(tmp_path / "data").manifest(result.run_id)
    assert manifest is not None and manifest["status"] == "complete"
    assert manifest["broker_settings"] is None  # no DescribeConfigs before Kafka 0.11
    assert cluster_status(lab)["state"] == "down"



TAKEN_PORT = 28993
TAKEN_CONTROL_PORT = 28994


def test_a_taken_port_is_one_line_exit_3_and_a_closed_failed_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Someone listens on the start-up cluster's broker port: the command says so in one
    line and exits 3; the run it had opened is closed as failed with that reason, and no
    process of the cluster is left."""
    import socket

    from kafkalab.cli import main

    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path / "lab"))
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", TAKEN_PORT))
        holder.listen()
        code = main(["startup", "run", "--client", "confluent-kafka", "--delay-ms", "0",
                     "--members", "1", "--trials", "1", "--base-port", str(TAKEN_PORT),
                     "--control-port", str(TAKEN_CONTROL_PORT), "--run-id", "taken-port",
                     "--data-dir", str(tmp_path / "data")])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 3, captured.err
    assert lines[-1].startswith("kafkalab: error: ") and str(TAKEN_PORT) in lines[-1]
    assert "Traceback" not in captured.err
    manifest = LabData(tmp_path / "data").manifest("taken-port")
    assert manifest is not None and manifest["status"] == "failed"
    assert str(TAKEN_PORT) in str(manifest.get("error"))
    assert cluster_status(tmp_path / "lab" / "startup")["state"] == "down"
