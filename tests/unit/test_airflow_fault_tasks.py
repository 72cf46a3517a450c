"""The fault run's Airflow task functions (``kafkalab.airflow.fault_tasks``), run as a worker
runs them: from a directory of its own, without Airflow services, a broker or the fault
cluster (the engine's entry points are replaced by stand-ins where a test calls them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafkalab.airflow import fault_tasks
from kafkalab.airflow.connections import AlertWebhookConnection
from kafkalab.airflow.params import FAULT_CHOICES
from kafkalab.errors import ConfigError, RunError
from kafkalab.paths import spark_jobs_dir
from kafkalab.spark.submit import SPARK_JOB_OUTPUTS, spark_application, spark_job_args
from kafkalab.store import LabData, atomic_write_json
from tests.unit.test_airflow_tasks import as_a_task


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> LabData:
    monkeypatch.setattr(AlertWebhookConnection, "get_connection", lambda self: None)
    return as_a_task(monkeypatch, tmp_path)


FORM: dict[str, Any] = {"profiles": ["durability", "availability"],
                        "faults": ["none", "sigkill-leader"], "acks": [], "trials": 3,
                        "rate_msgs_per_s": 200, "duration_s": 14}


def test_the_form_makes_every_cell_trials_times_trial_by_trial() -> None:
    specs = fault_tasks.fault_trials(FORM)
    assert len(specs) == 2 * 2 * 3
    cells = {(s.profile, s.fault) for s in specs}
    assert cells == {(p, f) for p in ("durability", "availability")
                     for f in ("none", "sigkill-leader")}
    # every cell's trial 1 first, then trial 2...: drift of the machine spreads over the cells
    assert [s.trial for s in specs] == [1] * 4 + [2] * 4 + [3] * 4
    assert all(s.acks is None for s in specs)  # the profile's
    assert all(s.rate_msgs_per_s == 200.0 and s.duration_s == 14.0 for s in specs)
    with_acks = fault_tasks.fault_trials({**FORM, "trials": 1, "acks": ["1", "all"]})
    assert sorted((s.profile, s.fault, s.acks) for s in with_acks) == sorted(
        (p, f, a) for p in ("durability", "availability") for f in ("none", "sigkill-leader")
        for a in ("1", "all"))


def test_empty_rate_and_duration_are_the_engines_defaults() -> None:
    from kafkalab.faults.spec import FaultTrialSpec

    (spec,) = fault_tasks.fault_trials({"profiles": ["durability"], "faults": ["sigkill-leader"],
                                        "trials": 1, "rate_msgs_per_s": None,
                                        "duration_s": None})
    default = FaultTrialSpec()
    assert (spec.rate_msgs_per_s, spec.duration_s) == (default.rate_msgs_per_s,
                                                       default.duration_s)


@pytest.mark.parametrize(("change", "message"), [
    ({"faults": []}, r"^params profiles and faults: give at least one value each$"),
    ({"profiles": None}, r"^params profiles and faults"),
    ({"faults": ["sigkill"]}, r"^param faults: unknown fault 'sigkill' \(known: none, "
                              r"sigkill-leader, .*\)$"),
    ({"profiles": ["fast"]}, r"^param profiles: unknown profile 'fast' \(known: default, "),
    ({"faults": ["none", "none"]}, r"^param faults: .* repeats a value$"),
    ({"trials": 0}, r"^param trials: must be between 1 and 50, got 0$"),
    ({"trials": 51}, r"^param trials: must be between 1 and 50, got 51$"),
    ({"trials": 2.5}, r"^param trials: expected a whole number, got 2.5$"),
    ({"trials": "many"}, r"^param trials: expected a whole number, got 'many'$"),
    ({"rate_msgs_per_s": 0}, r"^param rate_msgs_per_s: Input should be greater than 0 "
                             r"\(trial durability none #1\)$"),
    ({"acks": ["2"]}, r"^param acks: "),
    ({"duration_s": 9}, r"^params: duration_s=9 is too short for sigkill-leader .*"
                        r"\(trial durability sigkill-leader #1\)$"),
])
def test_bad_form_values_are_one_clear_line(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        fault_tasks.fault_trials({**FORM, **change})
    assert "\n" not in str(err.value)


def test_a_whole_number_of_trials_may_come_as_text_or_float() -> None:
    one = {**FORM, "profiles": ["durability"], "faults": ["none"]}
    assert len(fault_tasks.fault_trials({**one, "trials": "2"})) == 2
    assert len(fault_tasks.fault_trials({**one, "trials": 2.0})) == 2


def test_mapped_trials_have_readable_names() -> None:
    assert fault_tasks.trial_label({"profile": "durability", "fault": "sigkill-leader",
                                    "acks": None, "trial": 1}) == "durability sigkill-leader #1"
    assert fault_tasks.trial_label({"profile": "default", "fault": "kill-follower",
                                    "acks": "all", "trial": 3}
                                   ) == "default kill-follower acks all #3"
    assert fault_tasks.trial_label({"profile": "durability", "fault": "sigkill-leader",
                                    "acks": None, "client": "kafka-python", "max_in_flight": 5,
                                    "idempotence": False, "trial": 2}
                                   ) == "durability sigkill-leader kafka-python in-flight 5 idempotence off #2"


def test_the_form_s_clients_and_idempotence_make_cells() -> None:
    specs = fault_tasks.fault_trials({"profiles": ["durability"], "faults": ["sigkill-leader"],
                                      "clients": ["confluent-kafka", "kafka-python"],
                                      "idempotence": ["on", "off"], "trials": 1})
    assert [(s.client, s.idempotence) for s in specs] == [
        ("confluent-kafka", True), ("confluent-kafka", False), ("kafka-python", True),
        ("kafka-python", False)]
    with pytest.raises(ConfigError, match="param idempotence: 'maybe' is not on or off"):
        fault_tasks.fault_trials({"profiles": ["durability"], "faults": ["none"],
                                  "idempotence": ["maybe"]})


def test_the_forms_fault_choices_are_the_engines() -> None:
    from kafkalab.airflow.params import COMMIT_CHOICES
    from kafkalab.faults.spec import COMMITS, FAULTS

    assert FAULT_CHOICES == FAULTS
    assert COMMIT_CHOICES == COMMITS


def test_the_form_crosses_consumer_faults_with_commit_strategies_and_leaves_broker_faults_alone() -> None:
    specs = fault_tasks.fault_trials({
        "profiles": ["availability"], "faults": ["sigkill-leader", "kill-consumer", "leave-consumer"],
        "commits": ["after", "before"], "consumers": 2, "session_timeout_ms": 6000, "trials": 1,
        "duration_s": 20})
    assert [(s.fault, s.commit) for s in specs] == [
        ("sigkill-leader", None), ("kill-consumer", "after"), ("kill-consumer", "before"),
        ("leave-consumer", "after"), ("leave-consumer", "before")]
    group = [s for s in specs if s.commit]
    assert {(s.consumers, s.partitions, s.session_timeout_ms) for s in group} == {(2, 4, 6000)}
    assert fault_tasks.trial_label(specs[2].model_dump()) == "availability kill-consumer commit before #1"
    from kafkalab.faults.engine import validate_trials

    short = fault_tasks.fault_trials({"profiles": ["durability"], "faults": ["kill-consumer"],
                                      "trials": 1, "duration_s": 12})
    with pytest.raises(ConfigError, match="too short for kill-consumer"):
        validate_trials(short)  # what start_fault_run does first: one line, nothing started


def test_the_nightly_fault_is_one_sigkill_leader_trial_of_durability() -> None:
    (spec,) = fault_tasks.fault_trials(fault_tasks.NIGHTLY_FAULT)
    assert (spec.profile, spec.fault, spec.trial, spec.acks) == (
        "durability", "sigkill-leader", 1, None)
    assert fault_tasks.nightly_fault_on({}) is True
    assert fault_tasks.nightly_fault_on({"fault_trial": False}) is False
    with pytest.raises(ConfigError, match=r"^param fault_trial: expected true or false"):
        fault_tasks.nightly_fault_on({"fault_trial": "off"})


def test_request_is_owned_by_airflow_in_the_data_dir(lab: LabData) -> None:
    req = fault_tasks.build_fault_request(FORM, "faults-x", command="airflow dag r run m1",
                                          logical_date="2026-11-18T00:00:00+00:00")
    assert req.logical_date == "2026-11-18T00:00:00+00:00"  # for the manifest
    assert req.data_dir == lab.root and req.run_id == "faults-x"
    assert req.owner_kind == "airflow" and req.command == "airflow dag r run m1"
    assert req.cluster_lab is None  # the engine's fault cluster, <lab>/faults
    assert len(req.trials) == 12


def test_start_and_run_call_the_engine(lab: LabData, monkeypatch: pytest.MonkeyPatch) -> None:
    import kafkalab.faults.engine as engine

    seen: dict[str, Any] = {}

    def start(req: Any, progress: Any = None) -> dict[str, Any]:
        seen["start"] = req
        return {"run_id": req.run_id, "run_date": "2026-11-21",
                "trials": [t.model_dump() for t in req.trials]}

    def run(data_dir: Any, run_id: str, spec: dict[str, Any], cluster_lab: Any = None,
            progress: Any = None) -> dict[str, Any]:
        seen["run"] = (data_dir, run_id, spec)
        return {"trial_id": "durability-sigkill-leader-acks-all-t1", "status": "complete",
                "verdict": "ok", "acked_lost": 0}

    monkeypatch.setattr(engine, "start_fault_run", start)
    monkeypatch.setattr(engine, "run_fault_trial", run)
    form = {**FORM, "profiles": ["durability"], "faults": ["sigkill-leader"], "trials": 2}
    trials = fault_tasks.start_faults(form, "faults-x", command="airflow dag r run m1")
    assert [t["label"] for t in trials] == ["durability sigkill-leader #1",
                                            "durability sigkill-leader #2"]
    assert trials[1]["spec"]["trial"] == 2 and trials[1]["spec"]["fault"] == "sigkill-leader"
    assert seen["start"].owner_kind == "airflow"
    out = fault_tasks.run_trial("faults-x", trials[0])
    assert out["status"] == "complete"
    assert seen["run"] == (lab.root, "faults-x", trials[0]["spec"])


def test_a_trial_that_found_loss_succeeds_and_a_failed_trial_fails(
        lab: LabData, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loss is a finding for validate_faults to judge, never a task failure to retry away."""
    import kafkalab.faults.engine as engine

    trial = {"spec": {"profile": "durability", "fault": "sigkill-leader", "trial": 1},
             "label": "durability sigkill-leader #1"}
    monkeypatch.setattr(engine, "run_fault_trial", lambda *a, **k: {
        "trial_id": "t", "status": "complete", "verdict": "loss", "acked_lost": 7})
    assert fault_tasks.run_trial("faults-x", trial)["acked_lost"] == 7
    monkeypatch.setattr(engine, "run_fault_trial", lambda *a, **k: {
        "trial_id": "t", "status": "failed", "verdict": "failed",
        "error": "broker 1 did not come back"})
    with pytest.raises(RunError, match=r"^trial t failed: broker 1 did not come back$"):
        fault_tasks.run_trial("faults-x", trial)


def test_closing_a_run_that_never_started_holds_nothing_up(lab: LabData) -> None:
    assert not fault_tasks.fault_run_started("faults-none")
    assert fault_tasks.close_faults("faults-none")["status"] == "not started"


def test_closing_a_started_run_calls_the_engine(lab: LabData,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import kafkalab.faults.engine as engine

    lab.write_manifest({"run_id": "faults-r1", "kind": "faults", "status": "running",
                        "trials": []})
    monkeypatch.setattr(engine, "finish_fault_run", lambda data_dir, run_id, error=None: {
        "run_id": run_id, "status": "complete", "trials": [{"trial_id": "t"}]})
    assert fault_tasks.fault_run_started("faults-r1")
    assert fault_tasks.close_faults("faults-r1") == {
        "run_id": "faults-r1", "status": "complete", "trials": [{"trial_id": "t"}]}


LOST = "durability-sigkill-leader-acks-all-t1"
FAILED = {"success": False, "failed_expectations": [
    {"check": "profile durability: no acked message is lost (acked_lost = 0)",
     "column": "acked_lost", "summary": f"acked_lost = 0 under durability fails for {LOST}"}],
    "durability": {"check": "profile durability: no acked message is lost (acked_lost = 0)",
                   "success": False, "acked_lost": 3,
                   "trials": [{"trial_id": LOST, "acked_lost": 3}]}}
"""A fault validation that found acked messages lost under the durability profile (the
shape ``spark_jobs/validate_faults.py`` writes)."""


@pytest.mark.parametrize(("status", "validation", "problem"), [
    ("complete", {"success": True}, None),
    ("incomplete", {"success": True}, r"^fault run faults-r1: run is incomplete$"),
    ("complete", FAILED, r"^fault run faults-r1: DURABILITY BROKEN: 3 acked message\(s\) lost "
                         r"under the durability profile \(durability-sigkill-leader-acks-all-t1"
                         r"\); validation failed \(acked_lost = 0 under durability fails for "
                         r"durability-sigkill-leader-acks-all-t1\) \(see "
                         r".*validation/faults-r1-faults\.json\)$"),
    ("complete", None, r"^fault run faults-r1: no validation result$"),
    (None, None, r"^fault run faults-r1: no run manifest; no validation result$"),
])
def test_verify_fault_outcome(lab: LabData, status: str | None,
                              validation: dict[str, Any] | None, problem: str | None) -> None:
    if status is not None:
        lab.write_manifest({"run_id": "faults-r1", "kind": "faults", "status": status,
                            "trials": []})
    if validation is not None:
        atomic_write_json(lab.validation_path("faults-r1", "faults"), validation)
    if problem is None:
        assert fault_tasks.verify_fault_outcome("faults-r1")["validation_success"] is True
    else:
        with pytest.raises(RunError, match=problem):
            fault_tasks.verify_fault_outcome("faults-r1")


def test_lost_acked_messages_under_durability_are_announced_critical(
        lab: LabData, monkeypatch: pytest.MonkeyPatch) -> None:
    import kafkalab.alerts.notify as notify
    from kafkalab.alerts.webhook import AlertWebhook

    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(notify, "send_alert", lambda url, body, timeout_s=10: sent.append(body))
    atomic_write_json(lab.validation_path("faults-r1", "faults"), {"success": True})
    assert fault_tasks.send_fault_alerts("faults-r1")["reason"] == "validation passed"
    atomic_write_json(lab.validation_path("faults-r1", "faults"), FAILED)
    out = fault_tasks.send_fault_alerts("faults-r1")
    assert (out["sent"], out["severity"]) == (False, "critical")  # no webhook: logged
    assert sent == []
    hook = AlertWebhook(url="http://127.0.0.1:9/hook", fmt="generic")
    monkeypatch.setattr(AlertWebhookConnection, "settings", lambda self: hook)
    out = fault_tasks.send_fault_alerts("faults-r1", dag_id="resilience_experiment")
    assert (out["sent"], out["severity"], out["acked_lost"]) == (True, "critical", 3)
    (body,) = sent
    assert (body["run_id"], body["dag_id"], body["severity"]) == (
        "faults-r1", "resilience_experiment", "critical")
    assert LOST in json.dumps(body)


def test_spark_jobs_of_a_fault_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(tmp_path / "d"))
    d = str(tmp_path / "d")
    assert spark_application("aggregate_faults") == str(spark_jobs_dir() / "aggregate_faults.py")
    assert spark_application("validate_faults") == str(spark_jobs_dir() / "validate_faults.py")
    assert spark_job_args("aggregate_faults", "r1") == [
        "--faults", f"{d}/faults", "--out", f"{d}/aggregates/faults", "--run-id", "r1"]
    assert spark_job_args("validate_faults", "r1") == [
        "--aggregates", f"{d}/aggregates/faults", "--run-id", "r1", "--out", f"{d}/validation"]
    assert SPARK_JOB_OUTPUTS["aggregate_faults"] == "aggregates"
    assert LabData(tmp_path / "d").run_aggregates_dir("r1", "faults") == (
        tmp_path / "d" / "aggregates" / "faults" / "run_id=r1")
