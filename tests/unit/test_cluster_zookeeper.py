"""ZooKeeper four-letter-word answers of the kafka09 cluster (no ZooKeeper needed)."""

from __future__ import annotations

import socket

from kafkalab.cluster import zookeeper

# the shape of ZooKeeper 3.4's `dump` answer
DUMP = """\
SessionTracker dump:
Session Sets (3):
0 expire at Sun Nov 22 05:00:06 UTC 2026:
1 expire at Sun Nov 22 05:00:08 UTC 2026:
\t0x19a0000000000
ephemeral nodes dump:
Sessions with Ephemerals (2):
0x19a0000000000:
\t/controller
\t/brokers/ids/0
0x19a0000000001:
\t/brokers/ids/2
\t/brokers/ids/notanid
"""


def test_registered_broker_ids_from_dump() -> None:
    assert zookeeper.registered_broker_ids(DUMP) == {0, 2}
    assert zookeeper.registered_broker_ids("") == set()


def test_controller_from_dump() -> None:
    assert zookeeper.has_controller(DUMP)
    assert not zookeeper.has_controller(DUMP.replace("/controller", "/controller_epoch"))


def test_command_to_nobody_is_empty() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connection refused
        assert zookeeper.command(port, "ruok", timeout_s=0.5) == ""
        assert not zookeeper.is_serving(port)
