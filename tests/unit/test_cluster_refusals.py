"""What ``cluster_up`` refuses before it starts anything (no services)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.cluster import cluster_up
from kafkalab.errors import ConfigError


def test_noida_is_single_node(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="noida is single-node"):
        cluster_up("noida", 3, lab_dir=tmp_path)
    with pytest.raises(ConfigError, match="unknown cluster flavor"):
        cluster_up("kafka4", 1, lab_dir=tmp_path)
