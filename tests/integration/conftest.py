"""Real embedded clusters for the integration tests (no mocks).

Session-scoped: one kafka09 cluster (1 broker, ZooKeeper 22181, broker 29092) and one
noida cluster (29192), each in its own temporary lab dir, started with ``cluster_up`` and
stopped with ``cluster_down``. Ports differ from the defaults so a developer's own lab
cluster is never touched. The Kafka tarball is copied from the repo's .lab/downloads when
there is one (never downloaded again).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.cluster import ClusterDescriptor, cluster_down, cluster_up
from kafkalab.cluster.flavors.kafka09.distribution import NPM_TARBALL

REPO = Path(__file__).resolve().parents[2]
REPO_TARBALL = REPO / ".lab" / "downloads" / NPM_TARBALL

KAFKA09_ZK_PORT = 22181
KAFKA09_BROKER_PORT = 29092
NOIDA_PORT = 29192


def prepare_lab(lab: Path) -> Path:
    """A lab dir whose downloads/ holds the Kafka tarball (copied, not downloaded)."""
    dl = lab / "downloads"
    dl.mkdir(parents=True, exist_ok=True)
    if not (dl / NPM_TARBALL).exists() and REPO_TARBALL.is_file():
        shutil.copy2(REPO_TARBALL, dl / NPM_TARBALL)
    return lab


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
def noida_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, ClusterDescriptor]]:
    yield from _running(tmp_path_factory.mktemp("lab-noida"), "noida", base_port=NOIDA_PORT)


@pytest.fixture(scope="session")
def noida_cluster(noida_lab: tuple[Path, ClusterDescriptor]) -> ClusterDescriptor:
    return noida_lab[1]


@pytest.fixture(scope="session")
def make_lab() -> object:
    """``make_lab(path)``: a lab dir prepared with the Kafka tarball (see prepare_lab)."""
    return prepare_lab


@pytest.fixture(scope="session")
def repo_tarball() -> Path:
    return REPO_TARBALL
