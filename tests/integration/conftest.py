"""Real embedded clusters for the integration tests (no mocks).

Session-scoped: one kafka09 cluster (1 broker, ZooKeeper 22181, broker 29092) and one KRaft
node (Kafka 4.x: broker 26092, controller 26192), each in its own temporary lab dir, started
with ``cluster_up`` and
stopped with ``cluster_down``. Ports differ from the defaults so a developer's own lab
cluster is never touched. The Kafka tarball is copied from the repo's .lab/downloads when
there is one (never downloaded again).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.cluster import ClusterDescriptor, cluster_down, cluster_up
from kafkalab.cluster.descriptor import save_descriptor
from tests.labs import REPO_TARBALL, prepare_lab

KAFKA09_ZK_PORT = 22181
KAFKA09_BROKER_PORT = 29092
KRAFT_BROKER_PORT = 26092
KRAFT_CONTROLLER_PORT = 26192


def _running(lab: Path, flavor: str, **ports: int) -> Iterator[tuple[Path, ClusterDescriptor]]:
    """A one-broker cluster of ``flavor`` in ``lab`` for the whole session, stopped after."""
    try:
        yield lab, cluster_up(flavor, 1, lab_dir=lab, **ports)
    finally:
        cluster_down(lab)


@pytest.fixture(scope="session")
def kafka09_lab(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, ClusterDescriptor]]:
    yield from _running(prepare_lab(tmp_path_factory.mktemp("lab-kafka09")), "kafka09",
                        base_port=KAFKA09_BROKER_PORT, control_port=KAFKA09_ZK_PORT)


@pytest.fixture(scope="session")
def kafka09_cluster(kafka09_lab: tuple[Path, ClusterDescriptor]) -> ClusterDescriptor:
    return kafka09_lab[1]


@pytest.fixture(scope="session")
def kraft_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, ClusterDescriptor]]:
    """One real Kafka 4.x KRaft node (the jars from the repo's own .lab, else Maven), with
    Kafka's defaults: ``group.initial.rebalance.delay.ms`` stays 3000, because kafka-python
    3.0.12 can hang when a new group's first assignment comes at once (docs/clusters.md)."""
    yield from _running(prepare_lab(tmp_path_factory.mktemp("lab-kraft")), "kraft",
                        base_port=KRAFT_BROKER_PORT, control_port=KRAFT_CONTROLLER_PORT)


@pytest.fixture(scope="session")
def kraft_cluster(kraft_lab: tuple[Path, ClusterDescriptor]) -> ClusterDescriptor:
    return kraft_lab[1]


@pytest.fixture(scope="session")
def make_lab() -> object:
    """``make_lab(path)``: a lab dir prepared with the Kafka tarball (see prepare_lab)."""
    return prepare_lab


@pytest.fixture(scope="session")
def repo_tarball() -> Path:
    return REPO_TARBALL


@pytest.fixture(scope="module")
def desc(kraft_cluster: ClusterDescriptor, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session KRaft node as a descriptor file (the load engine's tests)."""
    path = tmp_path_factory.mktemp("desc") / "kraft.yaml"
    save_descriptor(kraft_cluster, path)
    return path
