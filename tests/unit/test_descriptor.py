"""Cluster descriptor: parsing, client configs, secrets hygiene, classpath (no services)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkalab.cluster.descriptor import (
    ClusterDescriptor,
    jvm_classpath,
    kafka_python_config,
    librdkafka_config,
    public_view,
    save_descriptor,
)
from kafkalab.cluster.flavors import load_descriptor
from kafkalab.errors import ClusterError, ConfigError

DOC_YAML = """\
name: embedded            # free text
flavor: kafka09           # kraft | kafka09 | external
protocol: legacy-0.9      # legacy-0.9 | modern
version: 0.9.0.1          # broker version, as far as known
is_emulator: false        # true for a broker that is not Apache Kafka
bootstrap_servers: 127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094
broker_count: 3
zookeeper: 127.0.0.1:12181            # legacy only: topic admin goes through ZooKeeper
kafka_home: .lab/kafka/kafka_2.11-0.9.0.1   # a Kafka installation whose libs/ hold the JVM tools; optional
client_properties:        # librdkafka properties added to every client (SASL/SSL etc.)
  security.protocol: SASL_SSL
  sasl.mechanism: PLAIN
  sasl.username: lab
secret_env:               # librdkafka property -> environment variable holding its value
  sasl.password: KAFKALAB_SASL_PASSWORD
"""

SECRET = "s3cr3t-value-never-shown"


@pytest.fixture
def doc_descriptor(tmp_path: Path) -> ClusterDescriptor:
    p = tmp_path / "cluster.yaml"
    p.write_text(DOC_YAML)
    return load_descriptor(p)


def test_doc_example_loads(doc_descriptor: ClusterDescriptor) -> None:
    d = doc_descriptor
    assert d.flavor == "kafka09" and d.protocol == "legacy-0.9" and d.version == "0.9.0.1"
    assert d.broker_count == 3 and len(d.servers) == 3
    assert d.zookeeper == "127.0.0.1:12181"
    assert d.kafka_home is not None and Path(d.kafka_home).is_absolute()
    assert d.secret_env == {"sasl.password": "KAFKALAB_SASL_PASSWORD"}


def test_a_missing_lab_descriptor_is_a_cluster_not_up(tmp_path: Path) -> None:
    with pytest.raises(ClusterError) as ei:
        load_descriptor(tmp_path / "cluster.yaml")
    assert str(ei.value) == (
        f"cluster not up: no descriptor at {tmp_path / 'cluster.yaml'}; "
        "run `kafkalab cluster up` or pass --cluster FILE"
    )


def test_a_missing_descriptor_of_the_users_is_their_error(tmp_path: Path) -> None:
    """A file of another name (``--cluster prod.yaml``, a DAG's ``cluster_descriptor``) that
    is not there is a typo: exit 2, not "cluster not up" (issue 26)."""
    with pytest.raises(ConfigError) as ei:
        load_descriptor(tmp_path / "nope.yaml")
    assert str(ei.value) == f"cluster descriptor {tmp_path / 'nope.yaml'}: no such file"


def test_unknown_key_names_the_key(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(DOC_YAML + "brokers: 3\n")
    with pytest.raises(ConfigError, match=r"invalid brokers: unknown key"):
        load_descriptor(p)


def test_invalid_values_name_the_key(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(DOC_YAML.replace("flavor: kafka09", "flavor: kafka4"))
    with pytest.raises(ConfigError, match=r"invalid flavor: "):
        load_descriptor(p)
    p.write_text(
        DOC_YAML.replace("bootstrap_servers: 127.0.0.1:19092,", "bootstrap_servers: nohost,")
    )
    with pytest.raises(ConfigError, match=r"invalid bootstrap_servers: "):
        load_descriptor(p)
    p.write_text("name: x\n")
    with pytest.raises(ConfigError, match=r"invalid flavor: missing required key"):
        load_descriptor(p)


def test_bad_yaml(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match=r"line \d+, column \d+: malformed YAML"):
        load_descriptor(p)
    p.write_text("- a list\n")
    with pytest.raises(ConfigError, match="expected a mapping at the top level, got list"):
        load_descriptor(p)


def test_inline_secret_refused_without_echo(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(
        DOC_YAML.replace(
            "  sasl.username: lab\n", f"  sasl.username: lab\n  sasl.password: {SECRET}\n"
        )
    )
    with pytest.raises(ConfigError) as ei:
        load_descriptor(p)
    assert "sasl.password" in str(ei.value) and "secret_env" in str(ei.value)
    assert SECRET not in str(ei.value)


def test_save_roundtrip_atomic(tmp_path: Path, doc_descriptor: ClusterDescriptor) -> None:
    out = tmp_path / "sub" / "cluster.yaml"
    save_descriptor(doc_descriptor, out)
    assert load_descriptor(out) == doc_descriptor
    assert [p.name for p in out.parent.iterdir()] == ["cluster.yaml"]  # no temp leftovers


def test_librdkafka_config_legacy_and_secrets(
    monkeypatch: pytest.MonkeyPatch, doc_descriptor: ClusterDescriptor
) -> None:
    monkeypatch.setenv("KAFKALAB_SASL_PASSWORD", SECRET)
    conf = librdkafka_config(doc_descriptor)
    assert conf["bootstrap.servers"] == doc_descriptor.bootstrap_servers
    assert conf["api.version.request"] == "false"
    assert conf["broker.version.fallback"] == "0.9.0.1"
    assert conf["security.protocol"] == "SASL_SSL" and conf["sasl.username"] == "lab"
    assert conf["sasl.password"] == SECRET


def test_missing_secret_env_names_variable(
    monkeypatch: pytest.MonkeyPatch, doc_descriptor: ClusterDescriptor
) -> None:
    monkeypatch.delenv("KAFKALAB_SASL_PASSWORD", raising=False)
    with pytest.raises(ConfigError, match="environment variable KAFKALAB_SASL_PASSWORD is not set"):
        librdkafka_config(doc_descriptor)
    with pytest.raises(ConfigError, match="KAFKALAB_SASL_PASSWORD"):
        kafka_python_config(doc_descriptor)


def test_modern_has_no_legacy_settings() -> None:
    d = ClusterDescriptor(
        flavor="external",
        protocol="modern",
        version="redpanda 24.1",
        is_emulator=True,
        bootstrap_servers="127.0.0.1:19192",
        broker_count=1,
    )
    assert librdkafka_config(d) == {"bootstrap.servers": "127.0.0.1:19192"}
    assert kafka_python_config(d) == {"bootstrap_servers": ["127.0.0.1:19192"]}


def test_kafka_python_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PW", SECRET)
    d = ClusterDescriptor(
        flavor="external",
        protocol="modern",
        bootstrap_servers="b1:9093,b2:9093",
        broker_count=2,
        client_properties={
            "security.protocol": "sasl_ssl",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "u",
            "ssl.ca.location": "/ca.pem",
            "ssl.certificate.location": "/c.pem",
            "ssl.key.location": "/k.pem",
            "ssl.endpoint.identification.algorithm": "none",
        },
        secret_env={"sasl.password": "PW"},
    )
    kp = kafka_python_config(d)
    assert kp == {
        "bootstrap_servers": ["b1:9093", "b2:9093"],
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "u",
        "sasl_plain_password": SECRET,
        "ssl_cafile": "/ca.pem",
        "ssl_certfile": "/c.pem",
        "ssl_keyfile": "/k.pem",
        "ssl_check_hostname": False,
    }
    legacy = d.model_copy(update={"protocol": "legacy-0.9"})
    assert kafka_python_config(legacy)["api_version"] == (0, 9)


def test_public_view_and_repr_never_leak(
    monkeypatch: pytest.MonkeyPatch, doc_descriptor: ClusterDescriptor
) -> None:
    monkeypatch.setenv("KAFKALAB_SASL_PASSWORD", SECRET)
    librdkafka_config(doc_descriptor)  # reading the secret does not store it
    view = public_view(doc_descriptor)
    assert view["secret_env"] == {"sasl.password": "KAFKALAB_SASL_PASSWORD"}
    for k in ("flavor", "bootstrap_servers", "protocol", "version", "is_emulator"):
        assert k in view
    for text in (
        str(view),
        repr(doc_descriptor),
        str(doc_descriptor),
        doc_descriptor.model_dump_json(),
    ):
        assert SECRET not in text


def test_jvm_classpath_filters(tmp_path: Path) -> None:
    libs = tmp_path / "libs"
    libs.mkdir()
    keep = ["kafka_2.11-0.9.0.1.jar", "zookeeper-3.4.6.jar", "kafka-clients-0.9.0.1.jar"]
    drop = [
        "kafka_2.11-0.9.0.1-javadoc.jar",
        "kafka_2.11-0.9.0.1-scaladoc.jar",
        "kafka_2.11-0.9.0.1-sources.jar",
        "kafka_2.11-0.9.0.1-test.jar",
        "kafka_2.11-0.9.0.1.jar.asc",
        "README",
    ]
    for n in keep + drop:
        (libs / n).write_text("")
    cp = jvm_classpath(tmp_path).split(os.pathsep)
    assert sorted(Path(x).name for x in cp) == sorted(keep)
    with pytest.raises(ClusterError, match="libs"):
        jvm_classpath(tmp_path / "nowhere")
