"""Profiles' ``producer_properties``, ``consumer_properties`` and ``topic_configs``: validated
at load, mapped per client (refused where a client does not know a property), zstd only
where the cluster supports it, and the property tables checked against the real clients."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafkalab.cluster.features import parse_version
from kafkalab.cluster.flavors import flavor_of, parse_descriptor
from kafkalab.config import load_profile
from kafkalab.config.mapping import (
    check_profile,
    confluent_consumer_config,
    confluent_producer_config,
    kafka_python_consumer_config,
    kafka_python_producer_config,
    setting_origins,
    unapplied_settings,
)
from kafkalab.config.models import Profile
from kafkalab.config.properties import (
    CONSUMER_PROPERTIES,
    PRODUCER_PROPERTIES,
    KafkaProperty,
    check_codec,
    check_topic_configs,
)
from kafkalab.errors import ConfigError

LEGACY = parse_descriptor({
    "name": "t", "flavor": "kafka09", "protocol": "legacy-0.9", "version": "0.9.0.1",
    "bootstrap_servers": "127.0.0.1:19092", "broker_count": 1,
})
MODERN = parse_descriptor({
    "name": "t", "flavor": "external", "protocol": "modern", "version": "3.8.0",
    "bootstrap_servers": "127.0.0.1:19093", "broker_count": 3,
})
EMULATOR = parse_descriptor({
    "name": "t", "flavor": "external", "protocol": "modern", "version": "redpanda 24.1",
    "is_emulator": True, "bootstrap_servers": "127.0.0.1:19094", "broker_count": 1,
})


def _load(tmp_path: Path, **extra: Any) -> Profile:
    """A profile file written to ``tmp_path`` and loaded the way the CLI loads one."""
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"name": "latency", "goal": "latency", **extra}))
    return load_profile(str(path))


def _refusal(tmp_path: Path, **extra: Any) -> str:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, **extra)
    return str(err.value)


# -- validated at load -------------------------------------------------------------------


def test_values_become_kafka_text(tmp_path: Path) -> None:
    p = _load(tmp_path, producer_properties={"delivery.timeout.ms": 30000},
              consumer_properties={"check.crcs": False},
              topic_configs={"retention.ms": 60000, "message.timestamp.type": "LogAppendTime"})
    assert p.producer_properties == {"delivery.timeout.ms": "30000"}
    assert p.consumer_properties == {"check.crcs": "false"}
    assert p.topic.kafka_configs()["retention.ms"] == "60000"
    assert p.topic.kafka_configs()["message.timestamp.type"] == "LogAppendTime"


def test_unknown_property_names_the_file_the_key_and_the_known_names(tmp_path: Path) -> None:
    msg = _refusal(tmp_path, producer_properties={"linger.millis": 5})
    assert msg.startswith(str(tmp_path / "p.yaml"))
    assert "producer_properties: 'linger.millis' is not a producer property the lab maps" in msg
    assert "linger.ms" in msg and "\n" not in msg


def test_wrong_types_are_refused(tmp_path: Path) -> None:
    assert "'linger.ms': expected an integer, got 'soon'" in _refusal(
        tmp_path, producer_properties={"linger.ms": "soon"})
    assert "'check.crcs': expected true or false, got 'yes please'" in _refusal(
        tmp_path, consumer_properties={"check.crcs": "yes please"})
    assert "expected one of CreateTime, LogAppendTime" in _refusal(
        tmp_path, topic_configs={"message.timestamp.type": "Now"})
    assert "expected a single value, got list" in _refusal(
        tmp_path, producer_properties={"retries": [1, 2]})
    assert "expected a mapping of Kafka property names" in _refusal(
        tmp_path, topic_configs=["retention.ms"])


def test_lab_owned_and_connection_properties_are_refused(tmp_path: Path) -> None:
    assert "'group.id' is set by the lab" in _refusal(
        tmp_path, consumer_properties={"group.id": "mine"})
    assert "belongs in the cluster descriptor" in _refusal(
        tmp_path, producer_properties={"sasl.password": "x"})


def test_a_property_naming_a_knob_sets_the_knob(tmp_path: Path) -> None:
    p = _load(tmp_path, producer_properties={"linger.ms": 7, "acks": -1},
              consumer_properties={"fetch.max.wait.ms": 3},
              topic={"replication_factor": 3}, topic_configs={"min.insync.replicas": 2})
    assert p.producer.linger_ms == 7 and p.producer.acks == "all"
    assert p.consumer.fetch_max_wait_ms == 3 and p.topic.min_insync_replicas == 2
    # the knob reaches each client by its own name
    assert confluent_producer_config({}, p)["linger.ms"] == 7
    assert confluent_consumer_config({}, p, "g")["fetch.wait.max.ms"] == 3
    assert kafka_python_producer_config({}, p)["acks"] == "all"
    # a dump (the run manifest's copy) loads back to the same profile
    assert Profile.model_validate(p.model_dump()) == p


def test_a_property_contradicting_a_knob_is_refused(tmp_path: Path) -> None:
    msg = _refusal(tmp_path, producer={"linger_ms": 0}, producer_properties={"linger.ms": 5})
    assert "invalid producer: producer_properties sets linger.ms=5 but producer.linger_ms is 0" \
        in msg
    # the same value in both places is no contradiction
    assert _load(tmp_path, producer={"acks": "all"},
                 producer_properties={"acks": "-1"}).producer.acks == "all"


def test_topic_configs_still_meet_the_topic_rules(tmp_path: Path) -> None:
    assert "min_insync_replicas=2 is larger than replication_factor=1" in _refusal(
        tmp_path, topic_configs={"min.insync.replicas": 2})
    assert "write topic-level configs under the profile's topic_configs" in _refusal(
        tmp_path, topic={"configs": {"retention.ms": "1"}})


def test_idempotence_needs_acks_all(tmp_path: Path) -> None:
    msg = _refusal(tmp_path, producer_properties={"enable.idempotence": True})
    assert "enable.idempotence=true, which needs acks=all" in msg and "acks=1" in msg
    p = _load(tmp_path, producer={"acks": "all", "retries": 3},
              producer_properties={"enable.idempotence": True})
    assert confluent_producer_config({}, p)["enable.idempotence"] == "true"
    assert kafka_python_producer_config({}, p)["enable_idempotence"] is True


def test_both_clients_get_the_same_idempotence_unless_a_profile_asks() -> None:
    """kafka-python 3 turns idempotence on by itself when acks is all (KIP-679); the lab sets
    it off for both clients, so an acks=all profile (availability) compares the same
    producers, and a profile that asks for it (durability) turns it on for both."""
    availability = load_profile("availability")
    assert availability.producer.acks == "all"
    assert confluent_producer_config({}, availability)["enable.idempotence"] is False
    assert kafka_python_producer_config({}, availability)["enable_idempotence"] is False
    durability = load_profile("durability")
    assert confluent_producer_config({}, durability)["enable.idempotence"] == "true"
    assert kafka_python_producer_config({}, durability)["enable_idempotence"] is True


# -- mapped per client -------------------------------------------------------------------


def test_each_client_gets_its_own_names_and_types(tmp_path: Path) -> None:
    p = _load(tmp_path, producer_properties={"send.buffer.bytes": 131072,
                                             "delivery.timeout.ms": 30000},
              consumer_properties={"heartbeat.interval.ms": 1000, "check.crcs": True})
    cp = confluent_producer_config({"bootstrap.servers": "h:1"}, p)
    assert cp["socket.send.buffer.bytes"] == "131072" and cp["delivery.timeout.ms"] == "30000"
    assert cp["bootstrap.servers"] == "h:1"
    cc = confluent_consumer_config({}, p, "g")
    assert cc["heartbeat.interval.ms"] == "1000" and cc["check.crcs"] == "true"
    kp = kafka_python_producer_config({}, p)
    assert kp["send_buffer_bytes"] == 131072 and kp["delivery_timeout_ms"] == 30000
    kc = kafka_python_consumer_config({}, p, "g")
    # the explicit property wins over the heartbeat the lab derives from the session timeout
    assert kc["heartbeat_interval_ms"] == 1000 and kc["check_crcs"] is True


def test_a_property_a_client_does_not_know_is_refused_per_client(tmp_path: Path) -> None:
    p = _load(tmp_path, consumer_properties={"max.poll.records": 10})
    check_profile(p, ["kafka-python", "rest", "jvm-e2e"], MODERN)  # kafka-python knows it
    with pytest.raises(ConfigError) as err:
        check_profile(p, ["kafka-python", "confluent-kafka"], MODERN)
    msg = str(err.value)
    assert msg.startswith("profile latency: consumer_properties: 'max.poll.records' is not "
                          "supported by confluent-kafka; librdkafka 2.16 accepts the name, "
                          "but confluent-kafka's Consumer.poll() returns one message: it would "
                          "change nothing (known: ")
    assert "fetch.max.wait.ms" in msg and "\n" not in msg
    with pytest.raises(ConfigError, match="not supported by confluent-kafka"):
        confluent_consumer_config({}, p, "g")  # the mapping refuses it too (load, faults)

    q = _load(tmp_path, producer_properties={"buffer.memory": 67108864})
    assert confluent_producer_config({}, q)["queue.buffering.max.kbytes"] == 65536
    with pytest.raises(ConfigError, match=r"^profile latency: producer_properties: "
                                          r"'buffer.memory' is not supported by kafka-python"):
        check_profile(q, ["kafka-python"], MODERN)


def test_properties_newer_than_the_broker_are_refused(tmp_path: Path) -> None:
    p = _load(tmp_path, producer={"acks": "all", "retries": 1},
              producer_properties={"enable.idempotence": True})
    check_profile(p, ["confluent-kafka", "kafka-python"], MODERN)
    with pytest.raises(ConfigError, match=re.escape("'enable.idempotence' needs Kafka 0.11 or later; "
                                          "the cluster is Kafka 0.9.0.1")):
        check_profile(p, ["confluent-kafka"], LEGACY)
    t = _load(tmp_path, topic_configs={"message.timestamp.type": "LogAppendTime"})
    with pytest.raises(ConfigError, match=re.escape("topic_configs: 'message.timestamp.type' needs "
                                          "Kafka 0.10")):
        check_profile(t, ["kafka-python"], LEGACY)


# -- zstd --------------------------------------------------------------------------------


def test_zstd_is_refused_below_kafka_2_1(tmp_path: Path) -> None:
    p = _load(tmp_path, producer={"compression": "zstd"})
    with pytest.raises(ConfigError) as err:
        check_profile(p, ["confluent-kafka"], LEGACY)
    assert str(err.value) == ("profile latency: compression zstd needs Kafka 2.1 or later "
                              "(produce API v7); the cluster is Kafka 0.9.0.1")
    check_profile(p, ["confluent-kafka", "kafka-python"], MODERN)
    check_profile(p, ["confluent-kafka"], EMULATOR)  # version unknown: not refused
    assert confluent_producer_config({}, p)["compression.type"] == "zstd"
    assert kafka_python_producer_config({}, p)["compression_type"] == "zstd"
    old = parse_descriptor({**MODERN.model_dump(), "version": "2.0.1"})
    with pytest.raises(ConfigError, match=re.escape("the cluster is Kafka 2.0.1")):
        check_profile(p, ["kafka-python"], old)
    with pytest.raises(ConfigError, match="EndToEndLatency"):
        check_profile(p, ["jvm-e2e"], MODERN)


def test_zstd_as_a_property_or_topic_config(tmp_path: Path) -> None:
    p = _load(tmp_path, producer_properties={"compression.type": "zstd"},
              topic_configs={"compression.type": "zstd"})
    assert p.producer.compression == "zstd"
    with pytest.raises(ConfigError, match=re.escape("compression zstd needs Kafka 2.1")):
        check_profile(p, ["kafka-python"], LEGACY)
    t = _load(tmp_path, topic_configs={"compression.type": "zstd"})
    with pytest.raises(ConfigError, match=re.escape("topic_configs: compression.type=zstd needs Kafka 2.1")):
        check_profile(t, ["confluent-kafka"], LEGACY)
    # the topic provisioner refuses it as well (load and fault runs provision through it)
    with pytest.raises(ConfigError) as err:
        check_topic_configs("klab-x", t.topic.kafka_configs(),
                            flavor_of(LEGACY).broker_version(LEGACY))
    assert str(err.value) == ("topic klab-x: compression.type=zstd needs Kafka 2.1 or later; "
                              "the cluster is Kafka 0.9.0.1")
    check_topic_configs("klab-x", t.topic.kafka_configs(), flavor_of(MODERN).broker_version(MODERN))


def test_kafka_python_codecs_are_checked_against_what_is_installed() -> None:
    from kafka import codec

    check_codec("p", "zstd", "confluent-kafka")  # librdkafka carries its codecs
    for compression, present in (("zstd", codec.has_zstd()), ("lz4", codec.has_lz4()),
                                 ("snappy", codec.has_snappy())):
        if present:
            check_codec("p", compression, "kafka-python")
        else:
            with pytest.raises(ConfigError, match=f"compression {compression} needs the .* "
                                                  "package for kafka-python"):
                check_codec("p", compression, "kafka-python")


def test_broker_versions() -> None:
    assert parse_version("3.8.0") == (3, 8, 0) and parse_version("2.1") == (2, 1)
    assert flavor_of(LEGACY.model_copy(update={"version": "whatever"})).broker_version(
        LEGACY) == (0, 9, 0, 1)  # the embedded 0.9 flavor is 0.9.0.1 whatever it says
    assert parse_version("redpanda 24.1") is None and parse_version("unknown") is None
    assert flavor_of(EMULATOR).broker_version(EMULATOR) is None


# -- origins -----------------------------------------------------------------------------


def test_origins_say_where_each_value_came_from(tmp_path: Path) -> None:
    p = _load(tmp_path, producer={"acks": "all"}, producer_properties={"linger.ms": 5,
                                                                      "client.id": "me"})
    o = setting_origins("confluent-kafka", p)
    assert o["producer.linger.ms"] == "producer_properties linger.ms"
    assert o["producer.acks"] == "profile producer.acks"
    assert o["producer.client.id"] == "producer_properties client.id"
    assert o["producer.message.max.bytes"] == "profile topic.max_message_bytes (derived)"
    assert o["consumer.auto.offset.reset"] == "lab"
    k = setting_origins("kafka-python", p)
    assert k["producer.linger_ms"] == "producer_properties linger.ms"
    assert "profile producer.buffer_memory_bytes" in unapplied_settings("kafka-python", p)
    j = unapplied_settings("jvm-e2e", p)
    assert j["producer_properties linger.ms"] == "the tool forces linger.ms=0"
    assert "producer_properties client.id" in j
    assert setting_origins("rest", p) == {}


# -- the tables against the real clients --------------------------------------------------

_SAMPLES = {"fetch.max.bytes": "52428800", "session.timeout.ms": "6000",
            "max.poll.interval.ms": "300000", "reconnect.backoff.max.ms": "10000"}


def _sample(prop: KafkaProperty) -> str:
    if prop.kind == "enum":
        return prop.choices[0]
    if prop.kind == "bool":
        return "false"
    if prop.kind == "text":
        return "kafkalab-test"
    return _SAMPLES.get(prop.name, "1000")


@pytest.mark.parametrize("prop", [PRODUCER_PROPERTIES[n] for n in sorted(PRODUCER_PROPERTIES)],
                         ids=lambda p: str(getattr(p, "name", p)))
def test_librdkafka_knows_every_producer_name_it_is_given_and_not_the_refused(prop: KafkaProperty) -> None:
    from confluent_kafka import KafkaException, Producer

    # building a client with an unknown property raises at once; no broker is contacted
    if prop.librdkafka is None:  # refused by the lab: librdkafka does not know the Java name
        with pytest.raises(KafkaException, match="No such configuration property"):
            Producer({"bootstrap.servers": "127.0.0.1:9", prop.name: _sample(prop)})
        return
    producer = Producer({"bootstrap.servers": "127.0.0.1:9", prop.librdkafka: _sample(prop)})
    producer.flush(0)


@pytest.mark.parametrize("prop", [CONSUMER_PROPERTIES[n] for n in sorted(CONSUMER_PROPERTIES)],
                         ids=lambda p: str(getattr(p, "name", p)))
def test_librdkafka_knows_every_consumer_name_it_is_given_and_not_the_refused(prop: KafkaProperty) -> None:
    from confluent_kafka import Consumer, KafkaException

    if prop.librdkafka is None and "accepts the name" in prop.note:
        Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g",
                  prop.name: _sample(prop)}).close()  # known, refused as ineffective
        return
    if prop.librdkafka is None:
        with pytest.raises(KafkaException, match="No such configuration property"):
            Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g",
                      prop.name: _sample(prop)})
        return
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g",
                         prop.librdkafka: _sample(prop)})
    consumer.close()


def test_kafka_python_knows_every_keyword_it_is_given() -> None:
    from kafka import KafkaConsumer, KafkaProducer

    assert {p.kafka_python for p in PRODUCER_PROPERTIES.values() if p.kafka_python} \
        <= set(KafkaProducer.DEFAULT_CONFIG)
    assert {p.kafka_python for p in CONSUMER_PROPERTIES.values() if p.kafka_python} \
        <= set(KafkaConsumer.DEFAULT_CONFIG)


def test_shipped_profiles_use_properties_every_client_and_0_9_take() -> None:
    """Every shipped profile runs on Kafka 0.9 too, but durability: its idempotent producer
    needs 0.11 (refused in one line), and durability-legacy is its 0.9 form."""
    from kafkalab.config import known_names

    for name in known_names("profiles"):
        p = load_profile(name)
        check_profile(p, ["confluent-kafka", "kafka-python", "jvm-e2e", "rest"], MODERN)
        if name == "durability":
            with pytest.raises(ConfigError, match=r"enable\.idempotence"):
                check_profile(p, ["confluent-kafka"], LEGACY)
            continue
        check_profile(p, ["confluent-kafka", "kafka-python", "jvm-e2e", "rest"], LEGACY)
    assert load_profile("durability").producer_properties == {"enable.idempotence": "true"}
    assert "enable.idempotence" not in load_profile("durability-legacy").producer_properties
    assert load_profile("availability").consumer_properties == {"heartbeat.interval.ms": "2000"}
    assert load_profile("latency").topic.kafka_configs()["retention.ms"] == "3600000"
