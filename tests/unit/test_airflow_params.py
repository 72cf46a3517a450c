"""The trigger forms' choices and labels stay in step with the lab's files and catalogs
(the lists are written out so that parsing a DAG reads no file)."""

from __future__ import annotations

import pytest
import yaml

from kafkalab.airflow import params
from kafkalab.config.loader import DEFAULT_WORKLOAD, WORKLOAD_ALIASES, load_workload
from kafkalab.paths import include_dir


def test_the_workload_dropdown_lists_every_latency_workload_with_its_description() -> None:
    docs = {f.stem: yaml.safe_load(f.read_text())
            for f in sorted((include_dir() / "workloads").glob("*.yaml"))}
    latency = {name: doc["description"] for name, doc in docs.items() if doc.get("kind") != "load"}
    assert latency == params.LATENCY_WORKLOADS
    assert (*params.LATENCY_WORKLOADS, *WORKLOAD_ALIASES) == params.WORKLOAD_CHOICES
    assert params.WORKLOAD_CHOICES[0] == DEFAULT_WORKLOAD  # the dropdown starts at seed 000
    for name in params.WORKLOAD_CHOICES:  # every choice loads (aliases included)
        assert load_workload(name).name in latency


def test_the_start_up_flavors_are_the_embedded_ones() -> None:
    from kafkalab.cluster.flavors import embedded_flavor_names

    assert embedded_flavor_names() == params.STARTUP_FLAVOR_CHOICES


def test_every_choice_has_a_readable_label() -> None:
    choices = {"workload": params.WORKLOAD_CHOICES, "scenarios": params.SCENARIO_CHOICES,
               "payloads": params.PAYLOAD_CHOICES, "payload": params.PAYLOAD_CHOICES,
               "profiles": params.PROFILE_CHOICES, "profile": params.PROFILE_CHOICES,
               "acks": params.ACKS_CHOICES, "faults": params.FAULT_CHOICES,
               "commits": params.COMMIT_CHOICES,
               "consumer_mode": params.CONSUMER_MODE_CHOICES,
               "shard_placement": params.SHARD_PLACEMENT_CHOICES,
               "clients": params.STARTUP_CLIENT_CHOICES,
               "protocols": params.GROUP_PROTOCOL_CHOICES,
               "flavor": params.STARTUP_FLAVOR_CHOICES,
               "idempotence": params.IDEMPOTENCE_CHOICES,
               "static_membership": params.IDEMPOTENCE_CHOICES,
               "rebalance": params.REBALANCE_CHOICES}
    assert set(params.CHOICE_LABELS) == set(choices)
    for name, values in choices.items():
        labels = params.CHOICE_LABELS[name]
        assert set(labels) == set(values), name
        assert len(set(labels.values())) == len(labels), name  # no two alike
    assert params.SCENARIO_LABELS["jvm-e2e"] == "Kafka tool (EndToEndLatency) [jvm-e2e]"
    assert params.PAYLOAD_LABELS["1mb"] == "1mb JPEG image"
    assert params.WORKLOAD_LABELS["seed000"] == "seed000 (former name of images-http-vs-kafka)"


def test_fault_labels_cover_the_fault_engine() -> None:
    from kafkalab.faults.spec import FAULTS, REBALANCES

    assert set(params.FAULT_LABELS) == set(FAULTS)
    assert tuple(REBALANCES) == params.REBALANCE_CHOICES


def test_latency_consumer_modes_are_the_workload_models() -> None:
    from typing import get_args

    from kafkalab.config.models import ConsumerMode

    assert get_args(ConsumerMode) == params.LATENCY_CONSUMER_MODES


def test_an_undeclared_conf_key_is_refused_by_name_not_value() -> None:
    from kafkalab.airflow.params import refuse_undeclared
    from kafkalab.errors import ConfigError

    refuse_undeclared({"consumers": [1]}, ["consumers", "rates"], "load_experiment")
    with pytest.raises(ConfigError) as err:
        refuse_undeclared({"consumers": [1], "workload": "/etc/x.yaml"}, ["consumers"],
                          "load_experiment")
    assert str(err.value) == ("conf key 'workload' is not a param of DAG load_experiment (its "
                              "params: consumers); drop it from the trigger's conf")
