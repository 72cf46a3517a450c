"""The KRaft controller quorum's leader, as the nodes record it.

Every voter keeps ``<log.dirs>/__cluster_metadata-0/quorum-state``, a small JSON file it
rewrites on every election (``leaderId``, ``leaderEpoch``; ``leaderId`` -1 while it knows
no leader). Across the nodes, the record with the highest epoch is the newest knowledge of
the quorum (a killed leader's own file still names itself, at an older epoch). Reading
files costs no JVM and no request, so the controller-kill fault can poll it every few
milliseconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["QuorumLeader", "leader", "quorum_state_path"]


@dataclass(frozen=True)
class QuorumLeader:
    """The quorum's leader as the newest ``quorum-state`` names it."""

    node_id: int
    epoch: int


def quorum_state_path(data_dir: Path) -> Path:
    """A node's ``quorum-state`` file under its metadata log directory."""
    return data_dir / "__cluster_metadata-0" / "quorum-state"


def _read(path: Path) -> tuple[int, int] | None:
    """``(leaderEpoch, leaderId)`` of one file; None when absent or being rewritten."""
    try:
        data = json.loads(path.read_text())
        return int(data["leaderEpoch"]), int(data["leaderId"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def leader(data_dirs: Iterable[Path]) -> QuorumLeader | None:
    """The leader the newest epoch across ``data_dirs`` names; None when no node has
    recorded a leader yet (or the newest epoch has none: an election under way)."""
    found = [r for d in data_dirs if (r := _read(quorum_state_path(d))) is not None]
    if not found:
        return None
    epoch, node = max(found)
    return QuorumLeader(node, epoch) if node >= 0 else None
