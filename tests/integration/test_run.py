"""`kafkalab run` end to end against the real embedded brokers and a real HTTP server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kafkalab.cluster.descriptor import ClusterDescriptor, save_descriptor
from kafkalab.samples import SAMPLE_SCHEMA, read_samples
from kafkalab.store import LabData

KAFKALAB = [sys.executable, "-m", "kafkalab.cli"]
ELSEWHERE = Path(tempfile.gettempdir())
"""The CLI runs from a directory outside the checkout: no location depends on the cwd."""


def read_manifest(data: Path, run_id: str) -> dict[str, Any]:
    m = LabData(data).manifest(run_id)
    assert m is not None, f"no manifest of {run_id} in {data}"
    return m


def kafkalab(*args: str, env_extra: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([*KAFKALAB, *args], capture_output=True, text=True, cwd=ELSEWHERE,
                          env=env, timeout=timeout)


@pytest.fixture(scope="module")
def broker_file(kraft_cluster: ClusterDescriptor, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default broker: a real Kafka 4.x KRaft node."""
    path = tmp_path_factory.mktemp("desc") / "kraft.yaml"
    save_descriptor(kraft_cluster, path)
    return path


@pytest.fixture(scope="module")
def kafka09_file(kafka09_cluster: ClusterDescriptor, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The legacy tier: Kafka 0.9.0.1 (the field notes' era)."""
    path = tmp_path_factory.mktemp("desc") / "kafka09.yaml"
    save_descriptor(kafka09_cluster, path)
    return path


@pytest.fixture(scope="module")
def emulator_file(kraft_cluster: ClusterDescriptor, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ``external`` descriptor that says its broker is an emulator (``is_emulator``), as a
    user's descriptor of Redpanda or WarpStream would; it reaches the KRaft node (only the
    labels are under test; no Kafka installation, so Kafka's own tool is skipped)."""
    path = tmp_path_factory.mktemp("desc") / "emulator.yaml"
    save_descriptor(kraft_cluster.model_copy(update={
        "name": "emulator", "flavor": "external", "version": "redpanda 24.1",
        "is_emulator": True, "kafka_home": None}), path)
    return path


@pytest.fixture(scope="module")
def full_run(broker_file: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    data = tmp_path_factory.mktemp("data")
    proc = kafkalab("run", "--scenario", "rest,kafka-python,confluent-kafka,confluent-kafka-serial,jvm-e2e",
                    "--payload", "1kb,1mb", "--profile", "latency", "--messages", "8", "--warmup", "2",
                    "--run-id", "itest-run", "--cluster", str(broker_file), "--data-dir", str(data))
    return proc, data


def test_run_prints_table_and_writes_every_cell(full_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    proc, data = full_run
    assert proc.returncode == 0, proc.stderr[-2000:]
    for scenario in ("rest", "kafka-python", "confluent-kafka", "jvm-e2e"):
        assert scenario in proc.stdout
    assert "p50 ms" in proc.stdout and "1st sub ms" in proc.stdout
    assert "[confluent-kafka 1mb latency]" in proc.stderr  # progress while it runs
    table = read_samples(data, "itest-run")
    assert set(SAMPLE_SCHEMA.names) <= set(table.column_names)
    rows = table.to_pylist()
    msgs = [r for r in rows if r["sample_kind"] == "message"]
    for scenario in ("rest", "kafka-python", "confluent-kafka", "confluent-kafka-serial"):
        for payload in ("1kb", "1mb"):
            cell = [r for r in msgs if r["scenario"] == scenario and r["payload"] == payload]
            assert len(cell) == 10, (scenario, payload)
            assert sum(r["is_warmup"] for r in cell) == 2
            assert all(r["status"] == "ok" for r in cell)
            assert all(r["e2e_latency_ms"] > 0 for r in cell)
            assert all(r["broker_is_emulator"] is False for r in cell)
            assert sorted(r["seq"] for r in cell) == list(range(10))
            assert all(r["planned_messages"] == 8 and r["client_settings"].startswith("{") for r in cell)
            assert all(r["wall_ts_ns"] > 1.7e18 for r in cell)          # a wall-clock label
            assert all(r["send_ts_ns"] < r["receive_ts_ns"] for r in cell)
    modes = {r["scenario"]: r["loop_mode"] for r in msgs}
    assert modes == {"rest": "request", "kafka-python": "overlapped", "confluent-kafka": "overlapped",
                     "confluent-kafka-serial": "serial"}
    serial = [r for r in msgs if r["scenario"] == "confluent-kafka-serial"]
    assert all(r["ack_ts_ns"] <= r["receive_ts_ns"] for r in serial)  # the ack came before the poll
    kafka_msgs = [r for r in msgs if r["scenario"] != "rest"]
    assert all(r["publish_latency_ms"] is not None and r["publish_latency_ms"] > 0 for r in kafka_msgs)
    assert all(r["offset"] is not None and r["topic"] == "klab-images-http-vs-kafka-latency" for r in kafka_msgs)
    assert all(r["cluster_flavor"] == "kraft" and r["broker_version"].startswith("4.") for r in kafka_msgs)
    rest = [r for r in msgs if r["scenario"] == "rest"]
    assert all(r["round_trip_ms"] >= r["e2e_latency_ms"] for r in rest)
    assert all(r["publish_latency_ms"] is None for r in rest)          # no broker, no ack
    assert "What e2e measures: rest = client → HTTP server process" in proc.stdout
    assert all(r["cluster_flavor"] == "http" for r in rest)
    # bytes on the wire: 32-byte stamp header + body; images-http-vs-kafka (seed000) sends base64 (1024 B -> 1368 B)
    assert {r["payload_bytes"] for r in msgs if r["payload"] == "1kb"} == {1368 + 32}
    assert {r["payload_encoding"] for r in msgs} == {"base64"}


def test_first_message_delay_in_both_modes(full_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, data = full_run
    rows = [r for r in read_samples(data, "itest-run").to_pylist() if r["sample_kind"] == "first_message"]
    for client in ("kafka-python", "confluent-kafka"):
        modes = {r["consumer_mode"]: r for r in rows if r["scenario"] == client and r["payload"] == "1kb"}
        assert set(modes) == {"subscribe", "assign"}
        for r in modes.values():
            assert r["status"] == "ok" and r["first_record_delay_ms"] > 0
            assert r["e2e_latency_ms"] is None  # never mixed into per-message latencies
            assert isinstance(r["cold_start"], bool)
        sub = modes["subscribe"]
        assert 0 <= sub["assign_delay_ms"] <= sub["first_record_delay_ms"]
        assert modes["assign"]["assign_delay_ms"] is None  # assign() is a local call


def test_jvm_tool_results_are_parsed(full_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, data = full_run
    rows = [r for r in read_samples(data, "itest-run").to_pylist() if r["scenario"] == "jvm-e2e"]
    stats = {(r["payload"], r["statistic"]): r for r in rows}
    assert {s for _, s in stats} == {"avg", "p50", "p99", "p99.9"}
    for payload in ("1kb", "1mb"):
        assert stats[(payload, "p50")]["e2e_latency_ms"] <= stats[(payload, "p99")]["e2e_latency_ms"]
        assert stats[(payload, "p50")]["latency_resolution_ms"] == 1.0
        assert stats[(payload, "avg")]["e2e_latency_ms"] > 0
    assert all(r["sample_kind"] == "tool_summary" for r in rows)
    settings = json.loads(rows[0]["client_settings"])
    assert settings["producer.linger.ms"] == "0" and settings["consumer.fetch.max.wait.ms"] == "0"
    assert all(r["loop_mode"] == "serial" for r in rows)


def test_manifest_and_rerun_never_duplicates(full_run: tuple[subprocess.CompletedProcess[str], Path],
                                             broker_file: Path) -> None:
    _, data = full_run
    m = read_manifest(data, "itest-run")
    assert m["status"] == "complete" and m["schema_version"] == 2
    assert m["cluster"]["flavor"] == "kraft" and m["versions"]["confluent-kafka"]
    assert m["versions"]["java"] != "missing" and m["environment"]["cpu_count"] >= 1
    assert m["owner"]["kind"] == "cli" and "confluent-kafka/latency" in m["client_settings"]
    # the broker's settings in effect, read through the Admin API when the run started
    b = m["broker_settings"]
    assert b["settings"]["message.max.bytes"] == "16777216"
    assert b["sources"]["message.max.bytes"] == "static_broker_config"
    assert b["settings"]["group.initial.rebalance.delay.ms"] == "3000"  # Kafka's default
    assert len(m["cells"]) == 10 and all(c["status"] == "complete" for c in m["cells"])
    before = read_samples(data, "itest-run").to_pylist()
    # re-run one cell under the same run id: its rows replace its old ones, every other cell stays
    proc = kafkalab("run", "--scenario", "rest", "--payload", "1kb", "--messages", "8", "--warmup", "2",
                    "--run-id", "itest-run", "--data-dir", str(data))
    assert proc.returncode == 0, proc.stderr
    after = read_samples(data, "itest-run").to_pylist()
    assert len(after) == len(before)

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["scenario"], r["payload"], r["sample_kind"], r["seq"], r["statistic"],
                r["consumer_mode"], r["status"], r["send_ts_ns"])

    others = sorted(key(r) for r in before if (r["scenario"], r["payload"]) != ("rest", "1kb"))
    assert sorted(key(r) for r in after if (r["scenario"], r["payload"]) != ("rest", "1kb")) == others
    old_cell = {r["send_ts_ns"] for r in before if (r["scenario"], r["payload"]) == ("rest", "1kb")}
    new_cell = {r["send_ts_ns"] for r in after if (r["scenario"], r["payload"]) == ("rest", "1kb")}
    assert len(new_cell) == 10 and not old_cell & new_cell      # that cell was measured anew
    m = read_manifest(data, "itest-run")
    assert m["status"] == "complete" and len(m["cells"]) == 10 and len(m["reopened_at"]) == 1
    files = list((data / "samples").rglob("*.parquet"))
    assert all(pq.read_schema(f).names == SAMPLE_SCHEMA.names for f in files)


def test_json_says_why_p99_is_undefined(broker_file: Path, tmp_path: Path) -> None:
    proc = kafkalab("run", "--scenario", "confluent-kafka", "--payload", "1kb", "--messages", "20",
                    "--warmup", "2", "--json", "--cluster", str(broker_file), "--data-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    cell = json.loads(proc.stdout)["cells"][0]
    assert cell["p99_ms"] is None and cell["p99_ms_reason"] == "n<100 (20 in the population)"
    assert cell["p50_ms"] > 0 and cell["p50_ms_ci95"][0] <= cell["p50_ms"] <= cell["p50_ms_ci95"][1]


def test_profile_needing_three_brokers_is_refused_before_sending(broker_file: Path, tmp_path: Path) -> None:
    proc = kafkalab("run", "--scenario", "confluent-kafka", "--payload", "1kb", "--profile", "durability",
                    "--cluster", str(broker_file), "--data-dir", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "kafkalab: error: profile durability asks for replication.factor=3 but the cluster has "
        "1 broker(s); start 3 with `kafkalab cluster up --brokers 3`"
    ]
    assert not (tmp_path / "runs").exists()


def test_payload_larger_than_max_message_bytes_is_refused(broker_file: Path, tmp_path: Path) -> None:
    prof = tmp_path / "tiny.yaml"
    prof.write_text("name: tiny\ngoal: latency\ntopic: {max_message_bytes: 100000}\n")
    proc = kafkalab("run", "--scenario", "confluent-kafka", "--payload", "1mb", "--profile", str(prof),
                    "--cluster", str(broker_file), "--data-dir", str(tmp_path))
    assert proc.returncode == 2
    assert "max.message.bytes=100000" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_unreachable_broker_names_the_address(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nobody listens there
    desc = tmp_path / "gone.yaml"
    desc.write_text(f"name: gone\nflavor: external\nprotocol: modern\nbootstrap_servers: 127.0.0.1:{port}\n"
                    "broker_count: 1\n")
    proc = kafkalab("run", "--scenario", "confluent-kafka", "--payload", "1kb", "--cluster", str(desc),
                    "--data-dir", str(tmp_path))
    assert proc.returncode == 3
    assert f"cannot reach Kafka at 127.0.0.1:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_taken_http_port_fails_that_cell_and_keeps_the_rest(broker_file: Path, tmp_path: Path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        proc = kafkalab("run", "--scenario", "confluent-kafka,rest", "--payload", "1kb", "--messages", "3",
                        "--warmup", "0", "--http-port", str(port), "--run-id", "half",
                        "--cluster", str(broker_file), "--data-dir", str(tmp_path))
    assert proc.returncode == 4
    assert f"port {port} on 127.0.0.1 is already in use" in proc.stdout + proc.stderr
    m = read_manifest(tmp_path, "half")
    assert m["status"] == "incomplete"
    assert {c["scenario"]: c["status"] for c in m["cells"]} == {"confluent-kafka": "complete", "rest": "failed"}
    kept = read_samples(tmp_path, "half").to_pylist()
    assert {r["scenario"] for r in kept} == {"confluent-kafka"}  # what was measured is kept


def test_a_run_on_an_emulator_is_labelled_emulator(emulator_file: Path, tmp_path: Path) -> None:
    proc = kafkalab("run", "--scenario", "confluent-kafka,kafka-python,jvm-e2e", "--payload", "1kb",
                    "--messages", "5", "--warmup", "1", "--run-id", "emu",
                    "--cluster", str(emulator_file), "--data-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "EMULATOR" in proc.stdout and "EMULATOR" in proc.stderr
    rows = read_samples(tmp_path, "emu").to_pylist()
    assert rows and all(r["broker_is_emulator"] for r in rows)
    assert {r["scenario"] for r in rows} == {"confluent-kafka", "kafka-python"}
    m = read_manifest(tmp_path, "emu")
    assert m["cluster"]["is_emulator"] is True
    assert next(c for c in m["cells"] if c["scenario"] == "jvm-e2e")["status"] == "skipped"


def test_throughput_profile_runs_with_lz4_on_kafka09(kafka09_file: Path, tmp_path: Path) -> None:
    # lz4 on a 0.9 broker: kafka-python needs the lz4 and xxhash packages for the old framing
    proc = kafkalab("run", "--scenario", "kafka-python,confluent-kafka", "--payload", "1kb",
                    "--profile", "throughput", "--messages", "3", "--warmup", "0", "--run-id", "thr",
                    "--cluster", str(kafka09_file), "--data-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [r for r in read_samples(tmp_path, "thr").to_pylist() if r["sample_kind"] == "message"]
    assert len(rows) == 6 and all(r["status"] == "ok" for r in rows)
    # fetch.min.bytes=100000 with a 500 ms wait: a lone 1 KB record waits for the timeout
    assert all(r["e2e_latency_ms"] > 100 for r in rows)
