"""The lab's Redis for the Celery executor: a real ``redis-server`` on its own port (30379),
started, answering only with its password, stopped by pid."""

from __future__ import annotations

import socket
import stat
from pathlib import Path

import pytest

from kafkalab import procs
from kafkalab.airflow import redis_server

PORT = 30379


def _send(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(payload)
        return sock.recv(256)


def test_up_answers_with_the_password_only_and_down_stops_it(tmp_path: Path) -> None:
    if not Path("/usr/bin/redis-server").is_file():
        pytest.fail("redis-server missing: `make setup` installs it")
    d = tmp_path / "redis"
    try:
        st = redis_server.redis_up(d, port=PORT)
        assert st["alive"] and st["answers"] and st["port"] == PORT
        assert redis_server.redis_up(d, port=PORT)["pid"] == st["pid"]  # idempotent
        for name in ("password", "redis.conf"):
            assert stat.S_IMODE((d / name).stat().st_mode) == 0o600
        password = (d / "password").read_text().strip()
        assert password not in (d / "redis.log").read_text()  # not on a command line
        assert redis_server.broker_url(d, PORT) == f"redis://:{password}@127.0.0.1:{PORT}/0"
        assert _send(PORT, b"PING\r\n").startswith(b"-NOAUTH")
        assert b"+PONG" in _send(PORT, f"AUTH {password}\r\nPING\r\n".encode())
        assert not list(d.glob("*.rdb")) and not list(d.glob("appendonly*"))
    finally:
        stopped = redis_server.redis_down(d)
    assert stopped is not None and stopped["result"] == "stopped", stopped
    assert not procs.pid_alive(st["pid"])
    assert procs.wait_port_released(PORT, 10)
    assert redis_server.redis_down(d) is None  # a second down finds nothing
