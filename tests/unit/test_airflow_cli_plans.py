"""The command line and the DAGs plan an experiment with the same code: the same parameters,
given as ``kafkalab`` options (parsed by the CLI's own parser) and as a DAG's trigger form
(its defaults with the trigger's conf laid over, validated as Airflow does), make the same
plan — the same run request for a latency run, the same cells for a load run, the same
trials in the same order for a fault run."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import Param
from airflow.sdk.definitions.param import ParamsDict

from kafkalab.airflow import fault_tasks, forms, load_tasks, tasks
from kafkalab.catalog import SCENARIOS
from kafkalab.cli import build_parser
from kafkalab.cli.faults import fault_request
from kafkalab.cli.load import load_request
from kafkalab.cli.run import run_request
from kafkalab.config.loader import DEFAULT_WORKLOAD
from tests.unit.test_airflow_tasks import as_a_task


@pytest.fixture
def data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """One data directory for both paths: the CLI's ``--data-dir``, the tasks' (run as a
    task runs)."""
    return as_a_task(monkeypatch, tmp_path).root


def dag_params(form: dict[str, Param], conf: dict[str, Any]) -> dict[str, Any]:
    """The params a task of the DAG receives: the form's defaults, the trigger's conf laid
    over them, validated against the form."""
    params = ParamsDict(copy.deepcopy(form))  # the update sets the Params' values
    params.update(conf)
    return dict(params.validate())


def cli_args(*argv: str) -> Any:
    return build_parser().parse_args(list(argv))


LATENCY_FORM = forms.run_params(workload=DEFAULT_WORKLOAD, scenarios=list(SCENARIOS),
                                payloads=["1mb"], profiles=["latency"], messages=20)
"""``latency_experiment``'s form (``dags/latency_experiment.py``)."""


@pytest.mark.parametrize(("argv", "conf"), [
    (["--workload", "images-quick", "--scenario", "rest", "--payload", "1kb,10kb",
      "--profile", "latency,default", "--messages", "30", "--warmup", "3"],
     {"workload": "images-quick", "scenarios": ["rest"], "payloads": ["1kb", "10kb"],
      "profiles": ["latency", "default"], "messages": 30, "warmup_messages": 3}),
    (["--scenario", "rest", "--payload", "1mb", "--profile", "latency", "--messages", "20"],
     {"scenarios": ["rest"]}),  # the form's defaults
])
def test_a_latency_run_is_planned_alike(argv: list[str], conf: dict[str, Any],
                                        data_dir: Path) -> None:
    cli = run_request(cli_args("run", *argv, "--data-dir", str(data_dir)))
    dag = tasks.build_request(dag_params(LATENCY_FORM, conf), "latency-x")
    assert (cli.workload, cli.scenarios, cli.payloads, cli.profiles, cli.data_dir) == (
        dag.workload, dag.scenarios, dag.payloads, dag.profiles, dag.data_dir)


LOAD_FORM = forms.load_params(consumers=[1, 5], rates=[100.0, 500.0], duration_s=10.0,
                              warmup_s=2.0)
"""``load_experiment``'s form (``dags/load_experiment.py``)."""


@pytest.mark.parametrize(("argv", "conf"), [
    (["--consumers", "1,5", "--rate", "100,250.5", "--acks", "0,1", "--duration", "6",
      "--warmup", "1", "--payload", "10kb", "--profile", "latency", "--client", "kafka-python",
      "--partitions", "2", "--consumer-mode", "group", "--consumers-per-process", "4",
      "--pause-at", "2", "--pause-for", "1"],
     {"consumers": [1, 5], "rates": [100, 250.5], "acks": ["0", "1"], "duration_s": 6,
      "warmup_s": 1, "payload": "10kb", "profile": "latency", "client": "kafka-python",
      "partitions": 2, "consumer_mode": "group", "consumers_per_shard": 4, "pause_at_s": 2,
      "pause_for_s": 1}),
    (["--consumers", "1,5", "--rate", "100,500", "--acks", "1"], {}),  # the form's defaults
    (["--consumers", "1", "--rate", "100", "--acks", "all", "--profile", "durability",
      "--txn-msgs", "0,10,100", "--txn-abort-every", "3"],
     {"consumers": [1], "rates": [100], "acks": ["all"], "profile": "durability",
      "txn_msgs": [0, 10, 100], "txn_abort_every": 3}),
    (["--consumers", "1", "--rate", "50", "--acks", "all,1", "--profile", "availability",
      "--link-delay-ms", "0,1,5"],
     {"consumers": [1], "rates": [50], "acks": ["all", "1"], "profile": "availability",
      "link_delay_ms": [0, 1, 5]}),
    (["--consumers", "1", "--rate", "50", "--acks", "1", "--profile", "availability",
      "--client-link-delay-ms", "0,20", "--fetch-from", "leader,follower"],
     {"consumers": [1], "rates": [50], "acks": ["1"], "profile": "availability",
      "client_link_delay_ms": [0, 20], "fetch_from": ["leader", "follower"]}),
    (["--consumers", "3", "--rate", "200", "--acks", "1", "--thin-consumer", "0",
      "--thin-link-kbps", "80", "--thin-link-delay-ms", "5"],
     {"consumers": [3], "rates": [200], "acks": ["1"], "thin_consumer": 0,
      "thin_link_kbps": 80, "thin_link_delay_ms": 5}),
    (["--workload", "nightly-fanout"], {"workload": "nightly-fanout"}),  # the nightly's cell
])
def test_a_load_run_is_planned_alike(argv: list[str], conf: dict[str, Any],
                                     data_dir: Path) -> None:
    cli = load_request(cli_args("load", *argv, "--data-dir", str(data_dir)))
    params = (load_tasks.NIGHTLY_FANOUT if conf.get("workload")
              else dag_params(LOAD_FORM, conf))
    dag = load_tasks.build_load_request(params, "load-x")
    assert cli.cells and cli.cells == dag.cells


FAULT_FORM = forms.fault_params(profiles=["durability"], faults=["none", "sigkill-leader"],
                                trials=5, rate_msgs_per_s=500.0, duration_s=None)
"""``resilience_experiment``'s form (``dags/resilience_experiment.py``)."""


@pytest.mark.parametrize(("argv", "conf"), [
    (["--profile", "durability,availability", "--fault", "none,sigkill-leader,kill-consumer",
      "--commit", "after,before", "--acks", "1,all", "--trials", "2", "--rate", "200",
      "--consumers", "2", "--session-timeout-ms", "6000"],
     {"profiles": ["durability", "availability"],
      "faults": ["none", "sigkill-leader", "kill-consumer"], "commits": ["after", "before"],
      "acks": ["1", "all"], "trials": 2, "rate_msgs_per_s": 200, "consumers": 2,
      "session_timeout_ms": 6000}),
    # no duration: 20 s, a kill-consumer under durability's 10 s session timeout 22 s
    (["--fault", "sigkill-leader,kill-consumer,leave-consumer", "--trials", "3"],
     {"faults": ["sigkill-leader", "kill-consumer", "leave-consumer"], "trials": 3}),
    (["--fault", "sigstop-leader", "--duration", "30", "--trials", "1"],
     {"faults": ["sigstop-leader"], "duration_s": 30, "trials": 1}),
    (["--fault", "none,sigkill-leader"], {}),  # the form's defaults
    (["--fault", "sigkill-leader,kill-consumer", "--txn-msgs", "0,10", "--txn-abort-every",
      "3", "--client", "confluent-kafka,kafka-python", "--trials", "2"],
     {"faults": ["sigkill-leader", "kill-consumer"], "txn_msgs": [0, 10],
      "txn_abort_every": 3, "clients": ["confluent-kafka", "kafka-python"], "trials": 2}),
    (["--fault", "sigkill-leader", "--trials", "1"], None),  # the nightly's fault trial
])
def test_a_fault_run_is_planned_alike(argv: list[str], conf: dict[str, Any] | None,
                                      data_dir: Path) -> None:
    cli = fault_request(cli_args("faults", "run", *argv, "--data-dir", str(data_dir)))
    params = fault_tasks.NIGHTLY_FAULT if conf is None else dag_params(FAULT_FORM, conf)
    dag = fault_tasks.build_fault_request(params, "faults-x")
    assert cli.trials and cli.trials == dag.trials


def test_fault_trials_run_trial_by_trial_with_a_duration_that_fits_the_group() -> None:
    """The one order of both paths (every cell's trial 1, then every cell's trial 2) and the
    one default duration (a consumer fault lengthened past its session timeout)."""
    trials = fault_tasks.fault_trials({"profiles": ["durability"], "trials": 2,
                                       "faults": ["sigkill-leader", "kill-consumer"]})
    assert [(t.fault, t.trial) for t in trials] == [
        ("sigkill-leader", 1), ("kill-consumer", 1), ("sigkill-leader", 2), ("kill-consumer", 2)]
    assert [(t.duration_s, t.partitions) for t in trials[:2]] == [(20.0, 1), (22.0, 6)]
