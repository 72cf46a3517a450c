"""The fault planner's producer axes (clients, idempotence, max in flight): every cell of
the grid, trial by trial, with a trial id that names what makes it a different experiment,
and the producer each trial's effective profile gives both clients."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.config.mapping import confluent_producer_config, kafka_python_producer_config
from kafkalab.errors import RunError
from kafkalab.faults.engine import trial_profiles
from kafkalab.faults.spec import FaultPlan, FaultTrialSpec, plan_trials

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


def test_static_membership_is_a_consumer_fault_cell_and_names_each_member() -> None:
    from kafkalab.cluster.descriptor import ClusterDescriptor
    from kafkalab.faults.group import member_plan

    plan = FaultPlan(profiles=["durability"], faults=["kill-consumer", "sigkill-leader"],
                     static_membership=[True, False], rejoin_after_s=3.0, trials=1)
    trials = plan_trials(plan)
    assert [t.trial_id("all") for t in trials] == [
        "durability-kill-consumer-commit-after-static-acks-all-t1",
        "durability-kill-consumer-commit-after-dynamic-acks-all-t1",
        "durability-sigkill-leader-acks-all-t1"]  # a broker fault has no membership
    assert trials[2].static_membership is None
    d = ClusterDescriptor(name="x", flavor="kraft", version="4.4.0",
                          bootstrap_servers="127.0.0.1:1", protocol="modern", broker_count=1)
    (prof,) = trial_profiles([trials[0]])
    static = member_plan(trials[0], d, Path("c.yaml"), "t", Path("g"), 10000, 3000, prof)
    dynamic = member_plan(trials[1], d, Path("c.yaml"), "t", Path("g"), 10000, 3000, prof)
    assert static["group_instance_prefix"] == f"{static['group_id']}-m"
    assert dynamic["group_instance_prefix"] is None
    with pytest.raises(ValueError, match="static_membership applies to the consumer faults"):
        FaultTrialSpec(fault="sigkill-leader", static_membership=True)


def test_the_rebalance_protocol_is_a_consumer_fault_cell_refused_where_the_client_lacks_it() -> None:
    from kafkalab.faults.group_trial import check_rebalance

    plan = FaultPlan(profiles=["durability"], faults=["leave-consumer", "sigkill-leader"],
                     rebalance=["eager", "cooperative", "consumer"], trials=1)
    trials = plan_trials(plan)
    assert [t.trial_id("all") for t in trials] == [
        "durability-leave-consumer-commit-after-eager-acks-all-t1",
        "durability-leave-consumer-commit-after-cooperative-acks-all-t1",
        "durability-leave-consumer-commit-after-consumer-acks-all-t1",
        "durability-sigkill-leader-acks-all-t1"]  # a broker fault has no group
    assert [t.rebalance for t in trials] == ["eager", "cooperative", "consumer", None]
    with pytest.raises(ValueError, match="rebalance applies to the consumer faults"):
        FaultTrialSpec(fault="sigkill-leader", rebalance="cooperative")
    with pytest.raises(ValueError, match="kafka-python has no KIP-848 consumer protocol"):
        FaultTrialSpec(fault="kill-consumer", partitions=6, client="kafka-python",
                       rebalance="consumer")
    FaultTrialSpec(fault="kill-consumer", partitions=6, client="kafka-python",
                   rebalance="cooperative", duration_s=30)
    check_rebalance("consumer", (4, 0, 0))
    check_rebalance("eager", (0, 9, 0))
    check_rebalance("cooperative", None)  # a broker of unknown version: tried
    with pytest.raises(RunError, match=r"rebalance=consumer: Kafka 3.9 has no such group "
                                       r"protocol \(it came with Kafka 4.0\)"):
        check_rebalance("consumer", (3, 9, 1))
    with pytest.raises(RunError, match=r"it came with Kafka 2\.4"):
        check_rebalance("cooperative", (0, 9, 0, 1))


def test_transaction_sizes_make_a_cell_each_for_broker_faults_only() -> None:
    plan = FaultPlan(profiles=["durability"], faults=["sigkill-leader", "kill-consumer"],
                     txn_msgs=[0, 10], txn_abort_every=3)
    trials = plan_trials(plan)
    ids = [t.trial_id("all") for t in trials]
    assert ids == ["durability-sigkill-leader-acks-all-t1",
                   "durability-sigkill-leader-acks-all-txn10-abort3-t1",
                   "durability-kill-consumer-commit-after-acks-all-t1"]
    assert [(t.txn_msgs, t.txn_abort_every) for t in trials] == [(None, None), (10, 3),
                                                                 (None, None)]
    cell = trials[1].load_cell()
    assert (cell.txn_msgs, cell.txn_abort_every) == (10, 3)
    (prof,) = trial_profiles([trials[1]])
    assert prof.producer_properties["enable.idempotence"] == "true"


def test_transactions_are_refused_where_they_cannot_run() -> None:
    from pydantic import ValidationError

    from kafkalab.errors import ConfigError

    with pytest.raises(ValidationError, match="txn_msgs applies to the broker faults"):
        FaultTrialSpec(fault="kill-consumer", txn_msgs=10, partitions=6)
    with pytest.raises(ValidationError, match="give txn_msgs too"):
        FaultTrialSpec(txn_abort_every=3)
    with pytest.raises(ConfigError, match="needs acks=all, not acks=1"):
        trial_profiles([FaultTrialSpec(profile="availability", acks="1", txn_msgs=10)])


def test_aborting_without_a_transaction_size_is_refused() -> None:
    from pydantic import ValidationError

    from kafkalab.load.spec import LoadPlan

    for plan in (lambda: FaultPlan(profiles=["durability"], faults=["sigkill-leader"],
                                   txn_msgs=[0], txn_abort_every=3),
                 lambda: LoadPlan(consumers=[1], rates_msgs_per_s=[10.0], txn_abort_every=3)):
        with pytest.raises(ValidationError, match="give txn_msgs too"):
            plan()
