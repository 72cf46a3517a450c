"""ZooKeeper of a ZooKeeper-mode Kafka cluster: four-letter-word commands and broker-id
registration.

Brokers of a ZooKeeper-mode Kafka register as ephemeral nodes ``/brokers/ids/<id>``; the
elected controller holds ``/controller``. Both show up in the ``dump`` command's list of
ephemeral nodes, so the lab reads them without a ZooKeeper client library.
"""

from __future__ import annotations

import socket
import time

from kafkalab import procs
from kafkalab.cluster.processes import exited_error
from kafkalab.cluster.state import ProcessRecord
from kafkalab.errors import ClusterError
from kafkalab.progress import Progress

__all__ = [
    "BROKER_SESSION_WAIT_S",
    "START_TIMEOUT_S",
    "command",
    "dump",
    "has_controller",
    "is_serving",
    "registered_broker_ids",
    "wait_broker_ids_free",
    "wait_serving",
]

START_TIMEOUT_S = 30.0
"""How long ZooKeeper has to answer ``ruok`` after it was started."""

BROKER_SESSION_WAIT_S = 30.0
"""How long to wait for ZooKeeper to expire a dead broker's session (its timeout is 6 s)."""

_BROKER_IDS = "/brokers/ids/"


def command(port: int, word: str, timeout_s: float = 2.0) -> str:
    """Send a four-letter-word command (``ruok``, ``dump``, ...) to ZooKeeper on
    ``127.0.0.1:port``; its whole answer, or "" when it cannot be reached."""
    try:
        with socket.create_connection((procs.HOST, port), timeout=timeout_s) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


def dump(port: int) -> str:
    """The ``dump`` answer: sessions and the ephemeral nodes they hold ("" when unreachable)."""
    return command(port, "dump")


def registered_broker_ids(dump_text: str) -> set[int]:
    """Broker ids registered in ZooKeeper, from a ``dump`` answer (``/brokers/ids/<id>``)."""
    ids = set()
    for line in dump_text.splitlines():
        node = line.strip()
        if node.startswith(_BROKER_IDS):
            tail = node.rsplit("/", 1)[1]
            if tail.isdigit():
                ids.add(int(tail))
    return ids


def has_controller(dump_text: str) -> bool:
    """True when a ``dump`` answer shows an elected controller (``/controller``)."""
    return any(line.strip() == "/controller" for line in dump_text.splitlines())


def is_serving(port: int, timeout_s: float = 0.5) -> bool:
    """True when ZooKeeper answers ``ruok`` with ``imok``."""
    return command(port, "ruok", timeout_s).strip() == "imok"


def wait_serving(proc: ProcessRecord, timeout_s: float = START_TIMEOUT_S) -> None:
    """Wait until the ZooKeeper process ``proc`` answers ``ruok``.

    Raises:
        ClusterError: it exited (naming its log's last line), or did not answer in time.
    """
    port = int(proc["port"])
    deadline = time.monotonic() + timeout_s
    while not is_serving(port):
        if not procs.pid_alive(proc["pid"]):
            raise exited_error(proc)
        if time.monotonic() > deadline:
            raise ClusterError(
                f"ZooKeeper did not answer on {procs.HOST}:{port} within {timeout_s:.0f} s; "
                f"see {proc['log']}"
            )
        time.sleep(0.1)


def wait_broker_ids_free(
    port: int, ids: set[int], progress: Progress, timeout_s: float = BROKER_SESSION_WAIT_S
) -> None:
    """Wait until ZooKeeper has expired the sessions of dead brokers ``ids``.

    A broker restarted while its old ephemeral /brokers/ids/N still exists dies with
    "A broker is already registered on the path /brokers/ids/N" (Kafka 0.9); the node goes
    away when the dead broker's session times out (zookeeper.session.timeout.ms = 6 s).

    Raises:
        ClusterError: a node is still there after ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    told = False
    while held := ids & registered_broker_ids(dump(port)):
        if not told:
            progress(
                f"waiting for ZooKeeper to expire the old session of broker(s) {sorted(held)} "
                "(up to 6 s)"
            )
            told = True
        if time.monotonic() > deadline:
            raise ClusterError(
                f"ZooKeeper on {procs.HOST}:{port} still holds /brokers/ids/{sorted(held)[0]} "
                f"after {timeout_s:.0f} s; run `kafkalab cluster down` and up again"
            )
        time.sleep(0.2)
