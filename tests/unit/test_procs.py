"""Processes and ports (kafkalab.procs), on real child processes and real sockets."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab import procs
from kafkalab.errors import ClusterError

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)", "kafkalab-test-marker"]
IGNORES_TERM = [sys.executable, "-c",
                "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "print('ready', flush=True); time.sleep(60)"]


def test_alive_ours_and_stopped(tmp_path: Path) -> None:
    pid = procs.spawn(SLEEPER, tmp_path / "log" / "sleeper.log", tmp_path)
    try:
        assert procs.pid_alive(pid)
        assert procs.runs(pid, "kafkalab-test-marker") and not procs.runs(pid, "zookeeper")
        assert procs.cmdline(pid) == SLEEPER
        assert "kafkalab starts" in (tmp_path / "log" / "sleeper.log").read_text()
    finally:
        assert procs.stop(pid, timeout_s=10) == "stopped"
    assert not procs.pid_alive(pid) and not procs.runs(pid, "kafkalab-test-marker")
    assert procs.stop(pid) == "not-running"


def test_stop_escalates_to_sigkill(tmp_path: Path) -> None:
    proc = subprocess.Popen(IGNORES_TERM, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    assert procs.stop(proc.pid, signal.SIGTERM, timeout_s=0.5, group=True) == (
        "killed (no exit after SIGTERM)")
    assert not procs.pid_alive(proc.pid)  # gone, and reaped by stop() (no zombie left)
    proc.wait(5)


def test_a_listener_makes_the_port_in_use_and_its_close_releases_it() -> None:
    with socket.socket() as s:
        s.bind((procs.HOST, 0))
        port = s.getsockname()[1]
        s.listen()
        assert procs.port_in_use(port) and procs.port_open(port)
        with pytest.raises(ClusterError, match=f"port {port} on 127.0.0.1 is already in use"):
            procs.check_ports_free([port])
        assert not procs.wait_port_released(port, timeout_s=0.2)
    assert procs.wait_port_released(port, timeout_s=5)
    assert procs.port_free(port) and not procs.port_open(port)
    procs.check_ports_free([port])


def test_last_line_skips_noise(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("first\nreal error here\n/lib/libc.so.6: version `GLIBC_2.39' not found\n\n")
    assert procs.last_line(log) == "real error here"
    assert procs.last_line(tmp_path / "missing.log") == "" and procs.last_line(None) == ""
