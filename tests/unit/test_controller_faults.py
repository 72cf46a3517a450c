"""The controller faults (KRaft): who they hit and what a trial's summary says of them, on
the real ``quorum-state`` files a KRaft node writes (in a temporary folder), no broker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafkalab.cluster.flavors import FAULT_CLUSTER
from kafkalab.cluster.flavors.kraft import quorum
from kafkalab.cluster.partitions import PartitionState
from kafkalab.errors import ClusterError
from kafkalab.faults.inject import pick_target
from kafkalab.faults.spec import CONTROLLER_FAULTS, DEFAULT_DOWN_S, FAULTS, FaultTrialSpec

pytestmark = pytest.mark.unit


class _Reader:
    def partition_state(self, topic: str, partition: int) -> PartitionState:
        return PartitionState(leader=1, isr=(1, 0, 2))


class _Cluster:
    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = dirs

    def controller_leader(self) -> tuple[int, int] | None:
        found = quorum.leader(self.dirs)
        return None if found is None else (found.node_id, found.epoch)


def _state(d: Path, leader: int, epoch: int) -> None:
    p = quorum.quorum_state_path(d)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({"leaderId": leader, "leaderEpoch": epoch, "votedId": -1}))


def test_a_controller_fault_hits_the_quorum_leader_not_the_partition_leader(tmp_path: Path) -> None:
    dirs = [tmp_path / f"node{i}" for i in range(3)]
    for d in dirs:
        _state(d, 2, 7)
    spec = FaultTrialSpec(fault="sigkill-controller")
    cluster: Any = _Cluster(dirs)
    t = pick_target(_Reader(), spec, "t", 3, cluster)  # type: ignore[arg-type]
    assert (t.broker, t.role, t.leader) == (2, "controller", 1)
    with pytest.raises(ClusterError, match="no leader to break"):
        pick_target(_Reader(), spec, "t", 3, _Cluster([tmp_path / "none"]))  # type: ignore[arg-type]


def test_controller_faults_are_known_and_fit_the_default_schedule() -> None:
    assert set(CONTROLLER_FAULTS) <= set(FAULTS)
    assert FAULT_CLUSTER.has_controller_quorum
    for fault in CONTROLLER_FAULTS:
        spec = FaultTrialSpec(fault=fault)  # type: ignore[arg-type]
        assert spec.is_controller_fault and not spec.is_consumer_fault
        assert DEFAULT_DOWN_S[fault] > 0
    # a frozen leader outlasts the fault cluster's broker session, so leadership moves
    assert DEFAULT_DOWN_S["sigstop-leader"] > FAULT_CLUSTER.broker_session_timeout_s
