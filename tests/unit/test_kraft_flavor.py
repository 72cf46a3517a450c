"""The ``kraft`` flavor's pieces that need no running broker: the pinned jar list and its
check, the Kafka version setting, the nodes' configs, the quorum leader read from
``quorum-state`` files (real files in a temporary folder)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import uuid
from pathlib import Path

import pytest

from kafkalab.cluster.flavors import FLAVORS, embedded_flavor
from kafkalab.cluster.flavors.kraft import distribution, launcher, quorum
from kafkalab.errors import ClusterError, ConfigError


def test_the_default_version_is_pinned_jar_by_jar() -> None:
    versions = distribution.locked_versions()
    assert distribution.DEFAULT_KAFKA_VERSION in versions
    for version in versions:
        jars = distribution.read_lock(version)
        names = set(jars)
        assert f"kafka_2.13-{version}.jar" in names and f"kafka-tools-{version}.jar" in names
        assert any(n.startswith("log4j-slf4j-impl-") for n in names)
        assert all(re.fullmatch(r"[0-9a-f]{64}", d) for d in jars.values())


def test_a_version_without_a_pinned_list_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(distribution.KAFKA_VERSION_ENV, "4.9.9")
    with pytest.raises(ConfigError) as err:
        distribution.kafka_version()
    assert "no pinned jar list for Kafka 4.9.9" in str(err.value)
    assert "tools.lock_kafka 4.9.9" in str(err.value) and "\n" not in str(err.value)
    monkeypatch.setenv(distribution.KAFKA_VERSION_ENV, distribution.DEFAULT_KAFKA_VERSION)
    assert distribution.kafka_version() == distribution.DEFAULT_KAFKA_VERSION


def _libs(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    libs = tmp_path / "libs"
    libs.mkdir()
    expected = {}
    for name in ("a-1.jar", "b-2.jar"):
        (libs / name).write_bytes(name.encode())
        expected[name] = hashlib.sha256(name.encode()).hexdigest()
    return libs, expected


def test_verify_jars_accepts_exactly_the_pinned_bytes(tmp_path: Path) -> None:
    libs, expected = _libs(tmp_path)
    distribution.verify_jars(libs, expected)


@pytest.mark.parametrize(("damage", "problem"), [
    ("missing", "1 pinned jar(s) missing, e.g. b-2.jar"),
    ("extra", "1 jar(s) not in the pinned list, e.g. c-3.jar"),
    ("altered", "checksum mismatch for b-2.jar"),
])
def test_verify_jars_names_the_first_bad_jar(tmp_path: Path, damage: str, problem: str) -> None:
    libs, expected = _libs(tmp_path)
    if damage == "missing":
        (libs / "b-2.jar").unlink()
    elif damage == "extra":
        (libs / "c-3.jar").write_bytes(b"c")
    else:
        (libs / "b-2.jar").write_bytes(b"tampered")
    with pytest.raises(ClusterError) as err:
        distribution.verify_jars(libs, expected)
    assert problem in str(err.value) and "\n" not in str(err.value)


def test_a_malformed_lock_line_names_file_and_line(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "jars-9.9.9.sha256"
    bad.write_text("# comment\nnot-a-digest  x.jar\n")
    monkeypatch.setattr(distribution, "lock_path", lambda v: bad)
    with pytest.raises(ConfigError, match=r"jars-9.9.9.sha256:2: expected"):
        distribution.read_lock("9.9.9")


def test_java_17_or_newer_is_found() -> None:
    assert distribution.java_major(shutil.which("java") or "java") >= distribution.MIN_JAVA


def test_three_nodes_form_one_quorum_each_with_its_own_ports_and_dirs(tmp_path: Path) -> None:
    props = [launcher.node_properties(i, 33092 + i, [33192, 33193, 33194], tmp_path / f"n{i}")
             for i in range(3)]
    voters = {p["controller.quorum.voters"] for p in props}
    assert voters == {"0@127.0.0.1:33192,1@127.0.0.1:33193,2@127.0.0.1:33194"}
    assert [p["node.id"] for p in props] == [0, 1, 2]
    assert props[1]["listeners"] == "PLAINTEXT://127.0.0.1:33093,CONTROLLER://127.0.0.1:33193"
    assert props[1]["advertised.listeners"] == "PLAINTEXT://127.0.0.1:33093"
    assert len({str(p["log.dirs"]) for p in props}) == 3
    assert all(p["offsets.topic.replication.factor"] == 3 for p in props)
    assert all(p[k] == v for p in props for k, v in launcher.LAB_OVERRIDES.items())
    one = launcher.node_properties(0, 33092, [33192], tmp_path / "n0")
    assert one["offsets.topic.replication.factor"] == 1 and one["transaction.state.log.min.isr"] == 1
    assert all("127.0.0.1" in str(p["listeners"]) and "0.0.0.0" not in str(p["listeners"])
               for p in props)


def test_a_cluster_id_looks_like_kafkas() -> None:
    ids = {launcher.new_cluster_id() for _ in range(20)}
    assert len(ids) == 20 and all(re.fullmatch(r"[A-Za-z0-9_-]{22}", i) for i in ids)


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    # 0xF8 encodes to a leading "-" in URL-safe base64: the storage tool would read it as an option
    draws = iter([uuid.UUID(bytes=b"\xf8" + b"\x01" * 15), uuid.UUID(bytes=b"\x10" * 16)])
    monkeypatch.setattr(launcher.uuid, "uuid4", lambda: next(draws))
    assert launcher.new_cluster_id() == base64.urlsafe_b64encode(b"\x10" * 16).decode().rstrip("=")


def _quorum_state(data_dir: Path, leader: int, epoch: int) -> None:
    path = quorum.quorum_state_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"clusterId": "", "leaderId": leader, "leaderEpoch": epoch,
                                "votedId": -1, "appliedOffset": 0, "data_version": 0}))


def test_the_quorum_leader_is_the_newest_epochs(tmp_path: Path) -> None:
    dirs = [tmp_path / f"node{i}" for i in range(3)]
    assert quorum.leader(dirs) is None
    _quorum_state(dirs[0], 0, 3)   # the killed old leader still names itself
    _quorum_state(dirs[1], 2, 4)
    _quorum_state(dirs[2], 2, 4)
    assert quorum.leader(dirs) == quorum.QuorumLeader(node_id=2, epoch=4)
    _quorum_state(dirs[1], -1, 5)  # an election under way
    assert quorum.leader(dirs) is None
    quorum.quorum_state_path(dirs[2]).write_text("{half")
    assert quorum.leader(dirs[2:]) is None


def test_the_kraft_flavor_is_registered_and_hosts_faults() -> None:
    kraft = embedded_flavor("kraft")
    assert FLAVORS["kraft"] is kraft and kraft.hosts_faults and kraft.max_brokers >= 3
    assert kraft.protocols == ("modern",) and kraft.stop_together
    assert kraft.default_base_port != kraft.default_control_port


def test_a_sasl_ssl_listener_is_a_third_listener_with_scram_and_the_labs_keystore(
        tmp_path: Path) -> None:
    from kafkalab.cluster.tls import TlsMaterial

    tls = TlsMaterial(tmp_path / "ca.pem", tmp_path / "broker.p12", "ks-pass")
    p = launcher.node_properties(1, 33093, [33192, 33193], tmp_path / "n1", (33893, tls))
    assert p["listeners"] == ("PLAINTEXT://127.0.0.1:33093,SASL_SSL://127.0.0.1:33893,"
                              "CONTROLLER://127.0.0.1:33193")
    assert p["advertised.listeners"] == "PLAINTEXT://127.0.0.1:33093,SASL_SSL://127.0.0.1:33893"
    assert p["listener.security.protocol.map"].endswith(",SASL_SSL:SASL_SSL")
    assert p["inter.broker.listener.name"] == "PLAINTEXT"
    assert p["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert "ScramLoginModule required;" in \
        p["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"]
    assert p["listener.name.sasl_ssl.ssl.keystore.location"] == tmp_path / "broker.p12"
    assert p["listener.name.sasl_ssl.ssl.keystore.type"] == "PKCS12"


def test_the_sasl_ssl_descriptor_is_external_and_names_the_password_variable_only(
        tmp_path: Path) -> None:
    from kafkalab.cluster.descriptor import save_descriptor
    from kafkalab.cluster.flavors import load_descriptor
    from kafkalab.cluster.flavors.kraft import security

    d = security.secure_descriptor([33892, 33893], tmp_path / "ca.pem", "4.4.0", tmp_path)
    path = save_descriptor(d, tmp_path / "cluster-sasl-ssl.yaml")
    back = load_descriptor(path)
    assert back.flavor == "external" and back.bootstrap_servers == "127.0.0.1:33892,127.0.0.1:33893"
    assert back.secret_env == {"sasl.password": security.PASSWORD_ENV}
    assert back.client_properties["sasl.mechanism"] == "SCRAM-SHA-512"
    assert back.client_properties["ssl.ca.location"] == str(tmp_path / "ca.pem")


def test_sasl_ssl_needs_the_password_variable_and_the_kraft_flavor(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KAFKALAB_SASL_PASSWORD", raising=False)
    with pytest.raises(ConfigError, match=r"^--sasl-ssl: set KAFKALAB_SASL_PASSWORD "):
        embedded_flavor("kraft").start(tmp_path, 1, 33092, 33192, {}, lambda _m: None,
                                       sasl_ssl_port=33892)
    assert not (tmp_path / "cluster").exists()
    with pytest.raises(ConfigError, match=r"^--sasl-ssl: the kafka09 flavor has no SASL_SSL"):
        embedded_flavor("kafka09").check_request(1, None, None, 33892)
    from kafkalab.cluster.flavors.kraft import security

    with pytest.raises(ClusterError, match="port 33193 is also a broker or controller port"):
        security.check_ports(33192, 2, [33092, 33193])


def test_broker_settings_come_last_and_never_replace_what_the_lab_owns(tmp_path: Path) -> None:
    props = launcher.node_properties(0, 33092, [33192], tmp_path / "n0", None,
                                     {"group.initial.rebalance.delay.ms": "0",
                                      "message.max.bytes": "2097152"})
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert props["message.max.bytes"] == "2097152"  # over the lab's own override too
    assert launcher.broker_setting_problem({"num.partitions": "3"}) is None
    for key in ("node.id", "listeners", "log.dirs", "controller.quorum.voters",
                "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"):
        problem = launcher.broker_setting_problem({key: "x"})
        assert problem is not None and "set by the lab" in problem, key
    assert "line break" in str(launcher.broker_setting_problem({"num.partitions": "3\nx=y"}))
