"""What ``cluster_up`` refuses before it starts anything (no services)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.cluster import cluster_up
from kafkalab.errors import ConfigError


def test_the_retired_emulator_says_why_and_what_to_use(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^cluster flavor 'noida': the noida-db emulator was "
                       r"retired: .*`kafkalab cluster up`"):
        cluster_up("noida", 1, lab_dir=tmp_path)
    assert not (tmp_path / "cluster").exists()
    with pytest.raises(ConfigError, match="unknown cluster flavor"):
        cluster_up("kafka4", 1, lab_dir=tmp_path)


def test_links_on_a_flavor_without_them_are_refused_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^--links: the kafka09 flavor has no degradable links"):
        cluster_up("kafka09", 3, lab_dir=tmp_path, links=True)
    assert not (tmp_path / "cluster").exists()
