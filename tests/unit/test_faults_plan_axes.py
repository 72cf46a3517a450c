"""The fault planner's producer axes (clients, idempotence, max in flight): every cell of
the grid, trial by trial, with a trial id that names what makes it a different experiment,
and the producer each trial's effective profile gives both clients."""

from __future__ import annotations

import pytest

from kafkalab.config.mapping import confluent_producer_config, kafka_python_producer_config
from kafkalab.faults.engine import trial_profiles
from kafkalab.faults.spec import FaultPlan, plan_trials

pytestmark = pytest.mark.unit


def test_clients_and_idempotence_make_a_cell_each_trial_by_trial() -> None:
    plan = FaultPlan(profiles=["durability"], faults=["sigkill-leader"],
                     clients=["confluent-kafka", "kafka-python"], idempotence=[True, False],
                     max_in_flight=[5], trials=2)
    trials = plan_trials(plan)
    assert [t.trial_id("all") for t in trials] == [
        f"durability-sigkill-leader-acks-all{client}-mif5-idem-{idem}-t{k}"
        for k in (1, 2) for client in ("", "-kafka-python") for idem in ("on", "off")]
    profiles = trial_profiles(trials)
    for spec, prof in zip(trials, profiles, strict=True):
        want = "true" if spec.idempotence else "false"
        assert prof.producer_properties["enable.idempotence"] == want
        assert prof.producer.max_in_flight == 5 and prof.producer.acks == "all"
        # both clients run the same producer
        assert str(confluent_producer_config({}, prof)["enable.idempotence"]) == want
        assert kafka_python_producer_config({}, prof)["enable_idempotence"] is spec.idempotence


def test_no_axis_keeps_the_profile_and_the_old_trial_ids() -> None:
    (trial,) = plan_trials(FaultPlan(profiles=["durability"], faults=["sigkill-leader"]))
    assert trial.client == "confluent-kafka" and trial.idempotence is None
    assert trial.trial_id("all") == "durability-sigkill-leader-acks-all-t1"
    (prof,) = trial_profiles([trial])
    assert prof.producer_properties["enable.idempotence"] == "true"  # the profile's
