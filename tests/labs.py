"""Lab directories for tests that start clusters: what the repo's own ``.lab`` already
verified is reused (copied or linked), never downloaded again."""

from __future__ import annotations

import shutil
from pathlib import Path

from kafkalab.cluster.flavors.kafka09.distribution import NPM_TARBALL

REPO = Path(__file__).resolve().parents[1]
REPO_TARBALL = REPO / ".lab" / "downloads" / NPM_TARBALL
"""Kafka 0.9.0.1's npm tarball as ``make setup`` fetched it."""


def prepare_lab(lab: Path) -> Path:
    """A lab dir whose downloads/ holds the Kafka 0.9 tarball (copied, not downloaded), whose
    kafka4/ links the repo's verified Kafka 4.x installations (never fetched again) and whose
    bin/ links the repo's Toxiproxy build (the degradable links; never built again)."""
    dl = lab / "downloads"
    dl.mkdir(parents=True, exist_ok=True)
    if not (dl / NPM_TARBALL).exists() and REPO_TARBALL.is_file():
        shutil.copy2(REPO_TARBALL, dl / NPM_TARBALL)
    for home in sorted((REPO / ".lab" / "kafka4").glob("*/INSTALLED")):
        link = lab / "kafka4" / home.parent.name
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(home.parent, target_is_directory=True)
    for tool in sorted((REPO / ".lab" / "bin").glob("toxiproxy-server-*")):
        link = lab / "bin" / tool.name
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(tool)
    return lab
