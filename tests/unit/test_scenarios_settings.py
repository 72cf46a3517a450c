"""What each scenario records as its effective client settings (the ``client_settings``
column and the manifest): the configuration it really builds, as strings, never a secret,
without reading a secret from the environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkalab.catalog import CATALOG, LOOP_MODES, scenario_spec
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.config.mapping import setting_text, settings_view
from kafkalab.config.models import Profile, Workload
from kafkalab.redact import looks_secret
from kafkalab.scenarios import get_scenario
from kafkalab.scenarios.base import Cell
from kafkalab.scenarios.confluent import ConfluentKafkaScenario, ConfluentKafkaSerialScenario

SECRET = "s3cr3t-value"


def _cell(tmp_path: Path, consumer_mode: str = "subscribe") -> Cell:
    profile = Profile.model_validate({
        "name": "latency", "goal": "latency",
        "producer": {"linger_ms": 5, "acks": "all", "batch_size_bytes": 65536},
        "consumer": {"fetch_min_bytes": 1, "fetch_max_wait_ms": 10},
    })
    d = ClusterDescriptor(
        flavor="kafka09", protocol="legacy-0.9", bootstrap_servers="h1:9092,h2:9092",
        broker_count=2,
        client_properties={"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                           "sasl.username": "lab"},
        secret_env={"sasl.password": "KLAB_TEST_UNSET_SECRET"},
    )
    return Cell(run_id="r1", workload=Workload(name="w", consumer_mode=consumer_mode),  # type: ignore[arg-type]
                profile=profile, payload="1kb", body=b"x", topic="t", descriptor=d,
                work_dir=tmp_path)


@pytest.mark.parametrize("name", ["confluent-kafka", "confluent-kafka-serial", "kafka-python"])
def test_kafka_clients_record_their_effective_configuration_without_secrets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.delenv("KLAB_TEST_UNSET_SECRET", raising=False)  # never read: no error
    s = get_scenario(name).client_settings(_cell(tmp_path))
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in s.items())
    assert not any("password" in k for k in s)
    assert SECRET not in json.dumps(s)
    assert s["harness.loop_mode"] == scenario_spec(name).loop_mode
    assert s["harness.consumer_mode"] == "subscribe"
    if name.startswith("confluent"):
        assert s["producer.linger.ms"] == "5" and s["producer.acks"] == "-1"
        assert s["producer.batch.size"] == "65536" and s["consumer.fetch.wait.max.ms"] == "10"
        assert s["producer.security.protocol"] == "SASL_PLAINTEXT"
        assert s["consumer.group.id"] == "kafkalab-r1-<random>"
    else:
        assert s["producer.linger_ms"] == "5" and s["producer.acks"] == "all"
        assert s["consumer.fetch_max_wait_ms"] == "10"
        assert s["producer.bootstrap_servers"] == "h1:9092,h2:9092"
        assert s["producer.api_version"] == "0.9"
        # kafka-python's CRC-32C (Kafka 0.11+ batches) in C, as its docs recommend
        assert s["harness.crc32c"].startswith("crc32c ") and s["harness.crc32c"].endswith("(C)")


def test_secrets_are_left_out_even_when_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KLAB_TEST_UNSET_SECRET", SECRET)
    for name in ("confluent-kafka", "kafka-python"):
        assert SECRET not in json.dumps(get_scenario(name).client_settings(_cell(tmp_path)))


def test_assign_mode_has_no_group(tmp_path: Path) -> None:
    s = get_scenario("kafka-python").client_settings(_cell(tmp_path, "assign"))
    assert "consumer.group_id" not in s and s["harness.consumer_mode"] == "assign"
    s = get_scenario("confluent-kafka").client_settings(_cell(tmp_path, "assign"))
    assert s["consumer.group.id"] == "kafkalab-assign"


def test_rest_records_its_request_settings(tmp_path: Path) -> None:
    s = get_scenario("rest").client_settings(_cell(tmp_path))
    assert s["harness.loop_mode"] == "request" and s["http.timeout_s"] == "30.0"


def test_settings_view_and_text() -> None:
    view = settings_view({"producer": {"acks": "all", "ssl.key.password": "x", "sasl.jaas.config": "y",
                                       "token": "t", "none": None, "flag": True,
                                       "servers": ["a:1", "b:2"], "api_version": (0, 9)}},
                         secret_keys=["TOKEN"])
    assert view == {"producer.acks": "all", "producer.flag": "true",
                    "producer.servers": "a:1,b:2", "producer.api_version": "0.9"}
    assert looks_secret("sasl_plain_password") and looks_secret("ssl.key.pem")
    assert not looks_secret("sasl.username")
    assert setting_text(False) == "false" and setting_text(3) == "3"


def test_the_serial_harness_is_the_same_loop_in_another_order() -> None:
    spec = scenario_spec("confluent-kafka-serial")
    assert spec.client == "confluent-kafka" and spec.per_message and spec.uses_kafka
    assert "serial: wait for the ack, then poll" in spec.display_name
    scenario = get_scenario("confluent-kafka-serial")
    assert isinstance(scenario, ConfluentKafkaSerialScenario)
    assert isinstance(scenario, ConfluentKafkaScenario)
    assert ConfluentKafkaSerialScenario._closed_loop is ConfluentKafkaScenario._closed_loop
    assert scenario.loop_mode == "serial" and get_scenario("confluent-kafka").loop_mode == "overlapped"
    assert scenario_spec("jvm-e2e").loop_mode == "serial"
    assert {s.loop_mode for s in CATALOG} == set(LOOP_MODES)
