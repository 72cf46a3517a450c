"""The broker-flavor registry (``kafkalab.cluster.flavors``) and what a flavor says its
clusters can do (``kafkalab.cluster.features``): no services."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kafkalab.cluster.descriptor import librdkafka_config
from kafkalab.cluster.features import KafkaTools, kafka_features, parse_version
from kafkalab.cluster.flavors import (
    DEFAULT_EMBEDDED,
    FAULT_CLUSTER,
    FLAVORS,
    EmbeddedFlavor,
    embedded_flavor,
    embedded_flavor_names,
    flavor_of,
    get_flavor,
    load_descriptor,
    parse_descriptor,
)
from kafkalab.errors import ClusterError, ConfigError

BASE: dict[str, Any] = {"name": "t", "bootstrap_servers": "127.0.0.1:9092", "broker_count": 1}


def test_the_registry_names_each_flavor_once_and_the_defaults_are_embedded() -> None:
    assert set(FLAVORS) == {"kraft", "kafka09", "external"}
    assert not any(f.emulator for f in FLAVORS.values())  # noida-db was retired
    assert all(name == f.name for name, f in FLAVORS.items())
    assert embedded_flavor_names()[0] == DEFAULT_EMBEDDED.name
    assert set(embedded_flavor_names()) == {n for n, f in FLAVORS.items() if f.embedded}
    assert isinstance(FAULT_CLUSTER, EmbeddedFlavor) and FAULT_CLUSTER.hosts_faults
    assert FAULT_CLUSTER.max_brokers >= 3
    for f in FLAVORS.values():
        assert f.label and f.protocols


def test_unknown_and_not_embedded_flavors_are_one_line_each() -> None:
    with pytest.raises(ConfigError, match=r"unknown cluster flavor 'kafka4' \(known: "):
        get_flavor("kafka4")
    with pytest.raises(ConfigError, match="unknown cluster flavor 'external': use "):
        embedded_flavor("external")


@pytest.mark.parametrize(("doc", "problem"), [
    ({"flavor": "kafka09", "protocol": "modern"}, "flavor kafka09 needs protocol legacy-0.9"),
    ({"flavor": "kraft", "protocol": "legacy-0.9"}, "flavor kraft needs protocol modern"),
    ({"flavor": "noida", "protocol": "modern"}, "flavor 'noida': the noida-db emulator was retired"),
    ({"flavor": "kafka4", "protocol": "modern"}, "invalid flavor: 'kafka4' is not one of"),
    ({"flavor": "external", "protocol": "v2"}, "invalid protocol: Input should be"),
])
def test_a_descriptor_its_flavor_refuses_is_one_line_naming_the_file(
        doc: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_descriptor({**BASE, **doc}, "my.yaml")
    text = str(err.value)
    assert text.startswith("cluster descriptor my.yaml: ") and problem in text
    assert "\n" not in text


def test_a_missing_descriptor_file_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="run `kafkalab cluster up` or pass --cluster FILE"):
        load_descriptor(tmp_path / "cluster.yaml")


def test_what_the_embedded_kafka09_can_do() -> None:
    d = parse_descriptor({**BASE, "flavor": "kafka09", "protocol": "legacy-0.9",
                          "version": "whatever it says"})
    f = flavor_of(d).features(d)
    assert f.version == (0, 9, 0, 1) and f.topic_admin == "zookeeper"
    assert f.partition_state == "zookeeper"
    assert not (f.record_headers or f.record_timestamps or f.idempotence or f.transactions
                or f.zstd or f.emulator)
    assert f.group_protocols == ("classic",)
    assert f.tools.end_to_end_latency == "kafka.tools.EndToEndLatency"
    assert f.tools.topic_command == "kafka.admin.TopicCommand"
    # what librdkafka needs to talk to it comes from its protocol, not its name
    conf = librdkafka_config(d)
    assert conf["api.version.request"] == "false" and conf["broker.version.fallback"] == "0.9.0.1"


def test_an_external_clusters_features_follow_its_version() -> None:
    def features(version: str) -> Any:
        d = parse_descriptor({**BASE, "flavor": "external", "protocol": "modern",
                              "version": version})
        return flavor_of(d).features(d)

    assert features("0.10.0").topic_admin == "zookeeper"  # CreateTopics came with 0.10.1
    assert features("0.10.1").topic_admin == "admin-api"
    assert not features("0.10.2").record_headers and features("0.11.0").record_headers
    assert features("0.11.0").idempotence and features("0.11.0").transactions
    assert not features("2.0.1").zstd and features("2.1.0").zstd
    assert features("3.9.1").group_protocols == ("classic",)
    assert features("4.0.0").group_protocols == ("classic", "consumer")
    assert features("4.2").tools.dump_log_segments == "kafka.tools.DumpLogSegments"
    assert features("4.3.0").tools.dump_log_segments == "org.apache.kafka.tools.DumpLogSegments"
    assert features("4.1.0").tools.end_to_end_latency == "org.apache.kafka.tools.EndToEndLatency"
    assert features("4.1.0").tools.topic_command is None  # no --zookeeper without ZooKeeper
    # EndToEndLatency: positional arguments up to 4.1, named ones from 4.2 (KIP-1147)
    old = features("4.1.2").tools.end_to_end_latency_args("b:1", "t", 5, "all", 100, "p")
    new = features("4.4.0").tools.end_to_end_latency_args("b:1", "t", 5, "all", 100, "p")
    assert old == ["b:1", "t", "5", "all", "100", "p"]
    assert new == ["--bootstrap-server", "b:1", "--topic", "t", "--num-records", "5",
                   "--producer-acks", "all", "--record-size", "100", "--command-config", "p"]
    unknown = features("unknown")
    assert unknown.version is None and unknown.record_headers and not unknown.at_least(0, 9)
    assert "api.version.request" not in kafka_features("modern", None).librdkafka_defaults


def test_an_emulator_says_so_in_its_features() -> None:
    d = parse_descriptor({**BASE, "flavor": "external", "protocol": "modern",
                          "version": "redpanda 24.1", "is_emulator": True})
    f = flavor_of(d).features(d)
    assert f.emulator and f.version is None and parse_version(d.version) is None
    assert not flavor_of(d).embedded


def test_versions_parse_as_kafka_writes_them() -> None:
    assert parse_version("3.8.0") == (3, 8, 0) and parse_version("v4.1") == (4, 1)
    assert parse_version("4.2.0-rc1") == (4, 2, 0)
    assert parse_version("unknown") is None and parse_version("redpanda 24.1") is None


@pytest.mark.parametrize(("flavor", "brokers", "ports", "problem"), [
    ("kraft", 6, (None, None), "--brokers: kraft runs at most 5 brokers"),
    ("kafka09", 10, (None, None), "--brokers: kafka09 runs at most 9 brokers"),
    ("kafka09", 0, (None, None), "--brokers must be a positive integer"),
    ("kafka09", 1, (80, None), "--base-port 80 is outside 1024..65534"),
    ("kafka09", 3, (None, 65534), "--control-port 65534 is outside 1024..65532"),
])
def test_an_embedded_flavor_refuses_what_it_cannot_start(
        flavor: str, brokers: int, ports: tuple[int | None, int | None], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem.replace(".", r"\.")):
        embedded_flavor(flavor).check_request(brokers, *ports)


def test_the_default_tools_are_kafka_0_9s() -> None:
    assert KafkaTools().dump_log_segments == "kafka.tools.DumpLogSegments"
