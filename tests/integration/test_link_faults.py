"""Network partitions on the real 3-node Kafka 4.x KRaft fault cluster, started with degradable
links: the partition leader cut from the controller quorum and its followers while clients
still reach it (``partition-leader``). Under the durability profile (acks=all,
``min.insync.replicas=2``) no acknowledged record is lost over five trials, while the partition
window and the leader's successor are reported; under acks=1 the old leader keeps
acknowledging writes the new leader never gets, and the checker counts them (whatever the
count is) in the same terms.

Own lab dir and ports (controllers 24281-24283, proxies' API 24311, brokers 24381-24383 behind
their proxies), so it never touches another test's cluster; nothing is left running."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalab import procs
from kafkalab.cluster import cluster_down
from kafkalab.cluster.embedded import running_cluster
from kafkalab.cluster.links import Links
from kafkalab.cluster.links.layout import LinkLayout
from kafkalab.cluster.processes import own_port
from kafkalab.faults.engine import FaultRequest, run_fault_trial, start_fault_run
from kafkalab.faults.spec import FaultTrialSpec

pytestmark = pytest.mark.integration

LINK_FAULTS_CONTROL_PORT, LINK_FAULTS_BASE_PORT = 24281, 24381
TRIALS = 5

PARTITION = FaultTrialSpec(profile="durability", fault="partition-leader", rate_msgs_per_s=50,
                           duration_s=24, warmup_s=1, fault_at_s=3)
"""Cut for the default 17 s: beyond the brokers' 9 s session even when the cut leader also led
the controller quorum (the others first elect a new active controller, whose session timer
starts afresh: with an 11 s cut the first trial once healed before anyone fenced it)."""
PARTITION_ACKS_1 = PARTITION.model_copy(update={"profile": "availability", "acks": "1"})
CLIENTS_CUT = FaultTrialSpec(profile="durability", fault="clients-cut-from-leader",
                             rate_msgs_per_s=50, duration_s=14, warmup_s=1, fault_at_s=3,
                             down_s=6)
CUT_CONSUMER = FaultTrialSpec(profile="availability", fault="cut-consumer", rate_msgs_per_s=50,
                              duration_s=20, warmup_s=1, fault_at_s=3, consumers=2,
                              partitions=4)
"""A group member cut from the cluster for the availability profile's 6 s session timeout and
4 s more (the default), while it keeps running."""


@pytest.fixture(scope="module")
def linked_faults(tmp_path_factory: pytest.TempPathFactory, make_lab: Any) -> Iterator[dict[str, Any]]:
    lab = make_lab(tmp_path_factory.mktemp("lab-link-faults"))
    data = tmp_path_factory.mktemp("data-link-faults")
    mp = pytest.MonkeyPatch()
    mp.setenv("KAFKALAB_HOME", str(lab))
    mp.setenv("KAFKALAB_FAULTS_CONTROL_PORT", str(LINK_FAULTS_CONTROL_PORT))
    mp.setenv("KAFKALAB_FAULTS_BASE_PORT", str(LINK_FAULTS_BASE_PORT))
    clab = lab / "faults"
    trials = [PARTITION.model_copy(update={"trial": k}) for k in range(1, TRIALS + 1)]
    try:
        started = start_fault_run(FaultRequest(trials=[*trials, PARTITION_ACKS_1, CLIENTS_CUT,
                                                       CUT_CONSUMER],
                                               data_dir=data,
                                               run_id="link-faults-it"))
        running = running_cluster(clab)
        assert running is not None and running.state.get("links")  # started with links
        proxy = next(p for p in running.state["processes"] if p["role"] == "proxy")
        yield {"data": data, "clab": clab, "run_id": started["run_id"], "trials": trials,
               "proxy_pid": int(proxy["pid"])}
    finally:
        cluster_down(clab)
        mp.undo()


def _links_healed(clab: Path) -> bool:
    running = running_cluster(clab)
    links = Links.of(running.state if running else None)
    return links is not None and links.toxics() == {}


def test_a_partitioned_leader_under_acks_all_loses_no_acked_record(
        linked_faults: dict[str, Any]) -> None:
    env = linked_faults
    summaries = [run_fault_trial(env["data"], env["run_id"], spec, env["clab"])
                 for spec in env["trials"]]
    for s in summaries:
        assert s["status"] == "complete", s.get("error")
        assert s["acked"] > 0 and s["acked_lost"] == 0, s
        assert s["failed_but_present"] >= 0 and s["duplicates"] == 0, s
        assert s["recovered"], s
        assert s["target_role"] == "leader" and s["target_led_quorum"] is not None, s
        if not s["target_led_quorum"]:
            # the controllers moved leadership to a follower while the old leader was cut off
            # (a leader that also led the quorum must first be replaced as the active
            # controller, and the quorum was once seen taking longer than the cut to do it)
            assert s["leader_elected_ms"] is not None, s
            assert s["leader_elected_ms"] < PARTITION.effective_down_s * 1000, s
        if s["leader_elected_ms"] is not None:
            # the old leader, cut from the metadata log, learns of its successor only after
            # the heal: until then it names itself to every client that asks it
            assert s["old_leader_stepped_down_ms"] is not None, s
            assert s["old_leader_stepped_down_ms"] >= PARTITION.effective_down_s * 1000, s
            # the producer's own client learned of the new leader (its metadata refresh)
            assert s["producer_saw_new_leader_ms"] is not None, s
    assert _links_healed(env["clab"])


def test_a_partitioned_leader_under_acks_1_is_counted_by_the_same_checker(
        linked_faults: dict[str, Any]) -> None:
    env = linked_faults
    s = run_fault_trial(env["data"], env["run_id"], PARTITION_ACKS_1, env["clab"])
    assert s["status"] == "complete", s.get("error")
    assert s["acks"] == "1" and s["acked"] > 0
    # reported, whatever it is: acks=1 writes the old leader took after it was cut off are
    # truncated when it rejoins; every acked record is either read back or counted lost
    assert s["acked_lost"] >= 0
    assert s["read_back"] >= s["acked"] - s["acked_lost"]
    assert s["leader_elected_ms"] is not None
    assert _links_healed(env["clab"])


def test_clients_cut_from_a_leader_wait_for_the_heal_and_lose_nothing(
        linked_faults: dict[str, Any]) -> None:
    env = linked_faults
    s = run_fault_trial(env["data"], env["run_id"], CLIENTS_CUT, env["clab"])
    assert s["status"] == "complete", s.get("error")
    # the leader still reaches its followers and the quorum: nobody takes its place
    assert s["leader_elected_ms"] is None, s
    # no acknowledgement can cross a cut link: the producer's longest silence spans the cut
    assert s["unavailable_ms"] >= 0.95 * CLIENTS_CUT.effective_down_s * 1000, s
    assert s["acked_lost"] == 0 and s["recovered"], s
    # and both clients work again after the heal, each timed from it
    assert s["heal_to_first_ack_ms"] is not None and s["heal_to_first_ack_ms"] > 0, s
    assert s["heal_to_first_receipt_ms"] is not None and s["heal_to_first_receipt_ms"] > 0, s
    assert _links_healed(env["clab"])


def test_a_group_member_cut_from_the_cluster_loses_its_partitions_and_rejoins_at_the_heal(
        linked_faults: dict[str, Any]) -> None:
    """``cut-consumer``: member 0's every link (its own, the solo plane) cut beyond the
    session timeout while it keeps running. The coordinator stops hearing it and gives its
    partitions to the other member; at the heal it rejoins. With commits after processing
    nothing is lost; what it processed but could not commit is processed again, and the
    offsets explain it."""
    env = linked_faults
    s = run_fault_trial(env["data"], env["run_id"], CUT_CONSUMER, env["clab"])
    assert s["status"] == "complete", s.get("error")
    assert s["cut_s"] == 10.0 and s["commit"] == "after", s
    assert s["moved_partitions"] and s["successor_assigned_ms"] is not None, s
    assert s["rebalance_pause_ms"] is not None, s
    assert s["lost_unprocessed"] == 0 and s["reread_agrees"], s
    assert s["offsets_explain"] is True, s
    assert s["rejoin_pause_ms"] is not None, s  # the group went on after the member came back
    assert _links_healed(env["clab"])


def test_nothing_of_the_links_is_left_after_down(linked_faults: dict[str, Any]) -> None:
    """``down`` stops the nodes, then the proxy. Each node's stop waits for the port the node
    binds itself (its own client listener), not the advertised one, which its proxy holds
    until the proxy stops: waiting on that one made each node's stop wait out the whole
    port-release timeout."""
    env = linked_faults
    running = running_cluster(env["clab"])
    assert running is not None
    layout = LinkLayout.from_state(running.state["links"])
    nodes = [p for p in running.state["processes"] if p["role"] == "broker"]
    assert {own_port(p) for p in nodes} == {layout.listener_port("client", int(p["id"]))
                                           for p in nodes}
    assert all(own_port(p) != p["port"] for p in nodes)
    stopped = cluster_down(env["clab"])
    assert not procs.pid_alive(env["proxy_pid"])
    assert running_cluster(env["clab"]) is None
    assert [r["role"] for r in stopped] == ["broker"] * 3 + ["proxy"]
    # (a node whose shutdown approval came last may be killed: stop_all's docstring)
    assert all(r["action"] in ("stopped", "killed (no exit after SIGTERM)")
               for r in stopped), stopped
    assert all(procs.port_free(own_port(p)) for p in nodes)
