"""Processes and ports (kafkalab.procs), on real child processes and real sockets."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
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


def test_cmdline_waits_for_the_arguments_of_a_process_still_in_exec(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Right after Popen returned, the child may still be inside execve: alive, its new
    # image mapped, its arguments not yet set (an empty /proc/<pid>/cmdline).
    monkeypatch.setattr(procs, "_PROC", tmp_path)
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242" / "stat").write_text("4242 (python) R 1 4242 4242 0 -1 4194304 1 0\n")
    (tmp_path / "4242" / "cmdline").write_bytes(b"")
    exec_done = threading.Timer(0.2, (tmp_path / "4242" / "cmdline").write_bytes,
                                [b"python\0-c\0pass\0kafkalab-test-marker\0"])
    exec_done.start()
    try:
        assert procs.runs(4242, "kafkalab-test-marker")
    finally:
        exec_done.cancel()
    # a kernel thread's command line is always empty: no wait, and never ours
    (tmp_path / "2").mkdir()
    (tmp_path / "2" / "stat").write_text("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0\n")
    (tmp_path / "2" / "cmdline").write_bytes(b"")
    assert procs.cmdline(2) == [] and not procs.runs(2, "kafkalab-test-marker")


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
