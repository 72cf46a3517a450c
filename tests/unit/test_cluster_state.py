"""The embedded cluster's state file and the processes it records (no broker needed)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

from kafkalab import procs
from kafkalab.cluster import processes
from kafkalab.cluster.descriptor import ClusterDescriptor, save_descriptor
from kafkalab.cluster.embedded import is_embedded_descriptor
from kafkalab.cluster.state import (
    SECURE_DESCRIPTOR_NAME,
    ClusterState,
    descriptor_path,
    read_state,
    remove_state,
    secure_descriptor_path,
    state_path,
    write_state,
)


def _state(lab: Path) -> ClusterState:
    return {
        "version": 1,
        "flavor": "kraft",
        "brokers": 1,
        "lab_dir": str(lab),
        "descriptor_path": str(descriptor_path(lab)),
        "processes": [],
    }


def test_state_round_trip_keeps_key_order(tmp_path: Path) -> None:
    assert read_state(tmp_path) is None
    state = _state(tmp_path)
    write_state(tmp_path, state)
    assert read_state(tmp_path) == state
    assert list(json.loads(state_path(tmp_path).read_text())) == list(state)
    assert not [p for p in state_path(tmp_path).parent.iterdir() if p.name.endswith(".tmp")]


def test_unreadable_state_is_stale_with_no_processes(tmp_path: Path) -> None:
    state_path(tmp_path).parent.mkdir(parents=True)
    state_path(tmp_path).write_text("{not json")
    assert read_state(tmp_path) == {
        "flavor": "unknown",
        "brokers": 0,
        "processes": [],
        "corrupt": True,
    }


def test_remove_state_keeps_a_users_own_descriptor(tmp_path: Path) -> None:
    write_state(tmp_path, _state(tmp_path))
    mine = ClusterDescriptor(
        name="prod",
        flavor="external",
        protocol="modern",
        bootstrap_servers="h:9092",
        broker_count=3,
    )
    save_descriptor(mine, descriptor_path(tmp_path))
    remove_state(tmp_path, read_state(tmp_path), is_embedded_descriptor)
    assert not state_path(tmp_path).exists()
    assert descriptor_path(tmp_path).is_file()

    embedded = mine.model_copy(update={"name": "embedded", "flavor": "kraft"})
    save_descriptor(embedded, descriptor_path(tmp_path))
    # the SASL_SSL listener's descriptor goes with it; a user's file of that name stays
    secure = mine.model_copy(update={"name": SECURE_DESCRIPTOR_NAME})
    save_descriptor(secure, secure_descriptor_path(tmp_path))
    remove_state(tmp_path, None, is_embedded_descriptor)
    assert not descriptor_path(tmp_path).exists()
    assert not secure_descriptor_path(tmp_path).exists()
    save_descriptor(mine, secure_descriptor_path(tmp_path))
    remove_state(tmp_path, None, is_embedded_descriptor)
    assert secure_descriptor_path(tmp_path).is_file()


def test_process_is_ours_only_with_its_marker_and_stop_stops_it(tmp_path: Path) -> None:
    state = _state(tmp_path)
    marker = str(tmp_path / "marker-arg")
    cmd = [sys.executable, "-c", "import time, sys; time.sleep(60)", marker]
    proc = processes.start_process(
        tmp_path,
        state,
        role="broker",
        proc_id=0,
        port=1,
        marker=marker,
        config=None,
        cmd=cmd,
        logs_dir=tmp_path / "logs",
    )
    try:
        assert read_state(tmp_path) == state  # recorded before start_process returned
        assert processes.is_ours(proc)
        assert not processes.is_ours({**proc, "marker": str(tmp_path / "other")})
        assert not processes.is_ours({**proc, "marker": ""})
        report = processes.stop_process(proc, signal.SIGTERM, timeout_s=10)
        assert report["action"] == "stopped" and report["pid"] == proc["pid"]
        assert not procs.pid_alive(proc["pid"])
        assert processes.stop_process(proc)["action"] == "not-running"
    finally:
        procs.stop(proc["pid"], signal.SIGKILL)


def test_a_recycled_pid_is_never_signalled(tmp_path: Path) -> None:
    import os

    record = {
        "role": "broker",
        "id": 0,
        "pid": os.getpid(),
        "port": 1,
        "marker": "/nowhere/x",
        "config": None,
        "log": "x",
        "logs_dir": "x",
        "cmdline": [],
        "cwd": "x",
    }
    report = processes.stop_process(record)  # type: ignore[arg-type]
    assert report["action"] == "skipped (pid now belongs to another process)"


def test_a_stop_waits_for_the_port_the_process_binds_not_the_one_it_advertises(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node behind a link proxy advertises the proxy's port, which the proxy holds until
    it stops itself: the node's stop waits for the node's own port (``bound_port``)."""
    state = _state(tmp_path)
    marker = str(tmp_path / "marker-arg")
    cmd = [sys.executable, "-c", "import time, sys; time.sleep(60)", marker]
    proc = processes.start_process(tmp_path, state, role="broker", proc_id=0, port=1,
                                   marker=marker, config=None, cmd=cmd,
                                   logs_dir=tmp_path / "logs", bound_port=2)
    waited: list[int] = []
    monkeypatch.setattr(procs, "wait_port_released",
                        lambda port, _timeout_s: waited.append(port) or True)
    try:
        assert read_state(tmp_path)["processes"][0]["bound_port"] == 2
        assert processes.own_port(proc) == 2
        assert processes.stop_process(proc, signal.SIGTERM, timeout_s=10)["action"] == "stopped"
        assert waited == [2]
    finally:
        procs.stop(proc["pid"], signal.SIGKILL)
    # a process that binds the port it advertises records none
    assert processes.own_port({**proc, "bound_port": None}) == 1  # type: ignore[typeddict-item]
    plain = processes.start_process(tmp_path, state, role="broker", proc_id=1, port=3,
                                    marker=marker, config=None, cmd=cmd,
                                    logs_dir=tmp_path / "logs1", bound_port=3)
    try:
        assert "bound_port" not in plain and processes.own_port(plain) == 3
    finally:
        procs.stop(plain["pid"], signal.SIGKILL)
