"""The start-up run's Airflow task functions (``kafkalab.airflow.startup_tasks``), run as a
worker runs them (a directory of its own, no Airflow services): the form read into the
engine's spec, bad params refused before any cluster starts, and the run's verdict read from
its files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kafkalab.airflow import startup_tasks
from kafkalab.errors import ConfigError, RunError
from kafkalab.kinds import STARTUP
from kafkalab.startup.spec import StartupSpec
from kafkalab.store import LabData, atomic_write_json
from tests.unit.test_airflow_tasks import as_a_task

FORM: dict[str, Any] = {"clients": ["confluent-kafka", "kafka-python"], "delays_ms": [0, 3000],
                        "protocols": ["classic", "consumer"], "members": [1, 3], "trials": 5,
                        "timeout_s": 30.0, "flavor": "kraft", "base_port": 19492,
                        "control_port": 19692}
"""The DAG's form as Airflow hands it over (its defaults)."""


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> LabData:
    return as_a_task(monkeypatch, tmp_path)


def test_the_form_defaults_are_the_cli_defaults() -> None:
    assert startup_tasks.startup_spec(FORM) == StartupSpec()


def test_the_form_values_reach_the_spec() -> None:
    spec = startup_tasks.startup_spec({**FORM, "clients": ["kafka-python"], "delays_ms": ["250"],
                                       "protocols": ["classic"], "members": [2],
                                       "trials": 2.0, "timeout_s": 12})
    assert spec == StartupSpec(clients=("kafka-python",), delays_ms=(250,),
                               protocols=("classic",), members=(2,), trials=2, timeout_s=12.0)


@pytest.mark.parametrize(("key", "value", "named"), [
    ("clients", ["kafka-go"], "param clients: must be some of"),
    ("clients", [], "param clients: give at least one value"),
    ("protocols", ["eager"], "param protocols: must be some of"),
    ("members", [9], "param members: must be values in 1..8"),
    ("members", [1.5], "param members: expected a whole number"),
    ("delays_ms", [-1], "param delays_ms: must be values in 0..60000"),
    ("delays_ms", [0, 0], "param delays_ms: repeats a value"),
    ("trials", "many", "param trials: expected a whole number"),
    ("trials", True, "param trials: expected a whole number"),
    ("timeout_s", "soon", "param timeout_s:"),
    ("timeout_s", 0.5, "param timeout_s: must be in 1..600 s"),
])
def test_a_bad_param_is_one_line_naming_it(key: str, value: Any, named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        startup_tasks.startup_spec({**FORM, key: value})
    assert str(caught.value).startswith(named)
    assert "\n" not in str(caught.value)


def test_kafka_python_alone_with_the_consumer_protocol_is_refused() -> None:
    with pytest.raises(ConfigError, match="param protocols: leave no client"):
        startup_tasks.startup_spec({**FORM, "clients": ["kafka-python"],
                                    "protocols": ["consumer"]})


@pytest.mark.parametrize(("change", "named"), [
    ({"base_port": 80}, "param base_port: 80 is not a port"),
    ({"control_port": 19492}, "params base_port and control_port"),
    ({"members": [0]}, "param members"),
    ({"flavor": "redpanda"}, "param flavor: 'redpanda' is not one of kraft, kafka09"),
    ({"flavor": "kafka09"}, "Kafka 0.9.0.1 has no group.initial.rebalance.delay.ms"),
])
def test_run_startup_refuses_bad_params_before_anything_starts(
        lab: LabData, change: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        startup_tasks.run_startup({**FORM, **change}, "startup-x")
    assert not lab.root.exists()  # no manifest, no cluster, no folder
    assert not (Path.cwd().parent / "lab" / "startup").exists()


def _closed_run(lab: LabData, status: str, success: bool | None) -> None:
    lab.write_manifest({"run_id": "startup-x", "kind": "startup", "status": status,
                        "cells": []})
    if success is not None:
        atomic_write_json(lab.validation_path("startup-x", STARTUP),
                          {"run_id": "startup-x", "success": success, "suites": {},
                           "failed_expectations": [] if success else [{"summary": "x"}]})


def test_the_verdict_of_a_complete_validated_run(lab: LabData) -> None:
    _closed_run(lab, "complete", True)
    assert startup_tasks.verify_startup_outcome("startup-x") == {
        "run_id": "startup-x", "status": "complete", "validation_success": True}
    assert startup_tasks.judge_startup_validation("startup-x")["success"] is True


@pytest.mark.parametrize(("status", "success", "named"), [
    ("incomplete", True, "run is incomplete"),
    ("complete", False, "validation failed"),
    ("complete", None, "no validation result"),
])
def test_the_verdict_names_what_is_wrong(lab: LabData, status: str, success: bool | None,
                                         named: str) -> None:
    _closed_run(lab, status, success)
    with pytest.raises(RunError, match=f"start-up run startup-x: .*{named}"):
        startup_tasks.verify_startup_outcome("startup-x")
