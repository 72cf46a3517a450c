"""Profiles, workloads and their mapping to client settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.cluster.descriptor import kafka_python_config, librdkafka_config
from kafkalab.cluster.flavors import parse_descriptor
from kafkalab.config import known_names, load_profile, load_workload
from kafkalab.config.loader import WORKLOAD_ALIASES
from kafkalab.config.mapping import (
    confluent_consumer_config,
    confluent_producer_config,
    jvm_tool_properties,
    kafka_python_consumer_config,
    kafka_python_producer_config,
)
from kafkalab.errors import ConfigError

LEGACY = parse_descriptor({
    "name": "t", "flavor": "kafka09", "protocol": "legacy-0.9", "version": "0.9.0.1",
    "bootstrap_servers": "127.0.0.1:19092", "broker_count": 1,
})
MODERN = parse_descriptor({
    "name": "t", "flavor": "external", "protocol": "modern", "version": "3.7",
    "bootstrap_servers": "k1:9092,k2:9092", "broker_count": 3,
})


def test_the_five_profiles_of_seed_004_exist() -> None:
    assert {"default", "throughput", "latency", "durability", "availability"} <= set(known_names("profiles"))


def test_profiles_carry_seed_004_values() -> None:
    thr, lat, dur, ava = (load_profile(n) for n in ("throughput", "latency", "durability", "availability"))
    assert thr.producer.compression == "lz4" and thr.producer.batch_size_bytes >= 100_000
    assert thr.producer.linger_ms >= 10 and thr.consumer.fetch_min_bytes == 100_000
    assert lat.producer.linger_ms == 0 and lat.producer.compression == "none"
    assert lat.producer.acks == "1" and lat.consumer.fetch_min_bytes == 1
    assert dur.producer.acks == "all" and dur.producer.max_in_flight == 1
    assert dur.topic.replication_factor == 3 and dur.topic.min_insync_replicas == 2
    assert dur.topic.unclean_leader_election_enable is False and dur.consumer.enable_auto_commit is False
    assert ava.topic.unclean_leader_election_enable is True and ava.topic.min_insync_replicas == 2


def test_confluent_mapping_uses_librdkafka_names_and_legacy_extras() -> None:
    prof = load_profile("durability")
    prod = confluent_producer_config(librdkafka_config(LEGACY), prof)
    assert prod["acks"] == "-1" and prod["max.in.flight.requests.per.connection"] == 1
    assert prod["api.version.request"] == "false" and prod["broker.version.fallback"] == "0.9.0.1"
    assert prod["message.max.bytes"] > prof.topic.max_message_bytes
    cons = confluent_consumer_config(librdkafka_config(LEGACY), prof, "g")
    assert cons["enable.auto.commit"] is False and cons["fetch.min.bytes"] == 1
    assert cons["max.partition.fetch.bytes"] > prof.topic.max_message_bytes
    modern = confluent_producer_config(librdkafka_config(MODERN), prof)
    assert "api.version.request" not in modern and modern["bootstrap.servers"] == "k1:9092,k2:9092"


def test_kafka_python_mapping() -> None:
    prof = load_profile("throughput")
    prod = kafka_python_producer_config(kafka_python_config(LEGACY), prof)
    assert prod["api_version"] == (0, 9) and prod["compression_type"] == "lz4" and prod["acks"] == 1
    assert prod["max_request_size"] > prof.topic.max_message_bytes
    cons = kafka_python_consumer_config(kafka_python_config(MODERN), prof, None)
    assert cons["group_id"] is None and cons["enable_auto_commit"] is False
    assert "api_version" not in cons
    # every key must be one the clients accept
    from kafka import KafkaConsumer, KafkaProducer

    assert set(prod) <= set(KafkaProducer.DEFAULT_CONFIG)
    assert set(cons) <= set(KafkaConsumer.DEFAULT_CONFIG)


def test_jvm_tool_properties_raise_size_limits() -> None:
    props = jvm_tool_properties(load_profile("latency"))
    assert int(props["max.request.size"]) > 16_000_000
    assert int(props["max.partition.fetch.bytes"]) == int(props["max.request.size"])


def test_workloads_load() -> None:
    w = load_workload("images-http-vs-kafka")
    assert w.payloads == ["1mb", "3mb", "5mb", "10mb"] and w.encoding == "base64"
    assert w.topic_for("latency") == "klab-images-http-vs-kafka-latency"
    assert {"images-http-vs-kafka", "images-quick", "nightly", "bench-latency"} <= set(
        known_names("workloads"))


def test_former_workload_names_are_aliases() -> None:
    for old, new in WORKLOAD_ALIASES.items():
        assert load_workload(old) == load_workload(new)
        assert load_workload(old).name == new


def test_open_loop_rate_is_refused_at_the_edge(tmp_path: Path) -> None:
    bad = tmp_path / "rate.yaml"
    bad.write_text("name: rated\nrate_msgs_per_s: 100\n")
    with pytest.raises(ConfigError, match=r"rate\.yaml: invalid .*rate_msgs_per_s: a latency "
                       r"workload is closed loop; fixed-rate load is a load workload"):
        load_workload(str(bad))


def test_a_load_workload_is_pointed_at_kafkalab_load() -> None:
    with pytest.raises(ConfigError, match=r"this is a load workload; run it with `kafkalab load"):
        load_workload("hydra-local")


def test_unknown_names_are_refused_with_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown profile 'fast' \(known: availability"):
        load_profile("fast")
    with pytest.raises(ConfigError, match="unknown workload"):
        load_workload("nope")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\ngoal: latency\nproducer: {linger_ms: -1}\n", "producer.linger_ms"),
        ("name: x\ngoal: latency\nproducer: {lingerms: 5}\n", "producer.lingerms: unknown key"),
        ("name: x\ngoal: fastest\n", "goal"),
        ("name: x\ngoal: latency\ntopic: {replication_factor: 1, min_insync_replicas: 2}\n",
         "min_insync_replicas=2 is larger than replication_factor=1"),
        ("name: x\ngoal: [latency\n", "malformed YAML"),
        ("- just\n- a list\n", "expected a mapping"),
    ],
)
def test_invalid_profile_yaml_names_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_profile(str(path))
    assert message in str(err.value) and str(path) in str(err.value)


def test_workload_scenario_names_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("name: w\nscenarios: [rest, grpc]\n")
    with pytest.raises(ConfigError, match="scenarios: unknown scenario 'grpc'"):
        load_workload(str(path))


def test_acks_accepts_yaml_int_and_minus_one(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: x\ngoal: durability\nproducer: {acks: -1}\n")
    assert load_profile(str(path)).producer.acks == "all"
    path.write_text("name: x\ngoal: latency\nproducer: {acks: 1}\n")
    assert load_profile(str(path)).producer.acks == "1"


def test_airflow_form_offers_exactly_the_lab_profiles() -> None:
    from kafkalab.airflow.params import PROFILE_CHOICES

    assert sorted(PROFILE_CHOICES) == known_names("profiles")
