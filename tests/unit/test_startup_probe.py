"""How a start-up probe dates librdkafka's ``metadata`` mark from its statistics, on snapshots
shaped as librdkafka 2.16 wrote them against Kafka 4.4 (a KIP-848 member assigned at ~18 ms,
before its learned broker's own connection at ~53 ms: the case that once dated the client's
start after its assignment)."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalab.startup.probe import cluster_known_ns

pytestmark = pytest.mark.unit

MS = 1000  # librdkafka's ts and stateage are in µs


def _snap(at_ms: float, **brokers: tuple[str, int, float]) -> dict[str, Any]:
    """A snapshot at ``at_ms``: broker name -> (state, node id, state entered at ms)."""
    return {"ts": round(at_ms * MS), "brokers": {
        name.replace("_", "/"): {"state": state, "nodeid": node,
                                 "stateage": round((at_ms - since_ms) * MS)}
        for name, (state, node, since_ms) in brokers.items()}}


def test_the_learned_brokers_creation_dates_the_first_metadata_not_its_later_connection() -> None:
    snaps = [  # the bootstrap broker, up at 3.8 ms, was gone before the first snapshot
        _snap(11.3, b_0=("INIT", 0, 5.1), GroupCoordinator=("UP", -1, 4.7)),
        _snap(22.4, b_0=("INIT", 0, 5.1), GroupCoordinator=("UP", -1, 4.7)),
        _snap(53.0, b_0=("APIVERSION_QUERY", 0, 52.2), GroupCoordinator=("UP", -1, 4.7)),
        _snap(63.6, b_0=("UP", 0, 53.3), GroupCoordinator=("UP", -1, 4.7)),
    ]
    assert cluster_known_ns(snaps) == 5_100_000  # not 53.3 ms, the connection's
    # the same from any later snapshot alone that still shows the broker in INIT
    assert cluster_known_ns(snaps[1:]) == 5_100_000


def test_the_bootstrap_broker_and_the_coordinator_do_not_date_it() -> None:
    snaps = [
        _snap(4.1, b_bootstrap=("UP", -1, 4.0), GroupCoordinator=("INIT", -1, 0.1)),
        _snap(5.3, b_0=("INIT", 0, 5.1), b_bootstrap=("INIT", -1, 5.3),
              GroupCoordinator=("INIT", -1, 0.1)),
    ]
    assert cluster_known_ns(snaps) == 5_100_000


def test_no_learned_broker_seen_in_init_is_not_a_date() -> None:
    snaps = [_snap(60.0, b_0=("UP", 0, 53.3), GroupCoordinator=("UP", -1, 4.7))]
    assert cluster_known_ns(snaps) is None
    assert cluster_known_ns([]) is None
