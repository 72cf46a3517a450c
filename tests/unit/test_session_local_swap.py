"""``spark_jobs/_session.py``'s swap of a run's tables in a local data directory (the path a
Spark Connect client takes), with stand-in DataFrames (no JVM): the new tables replace the
old as a whole, no staging folder is left behind, and when the last rename fails the earlier
tables are back in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_jobs import _session


class _Frame:
    """What the swap asks of a DataFrame: ``coalesce(1).write.mode(m).parquet(path)``."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.write = self

    def coalesce(self, _n: int) -> _Frame:
        return self

    def mode(self, mode: str) -> _Frame:
        assert mode == "error"
        return self

    def parquet(self, path: str) -> None:
        Path(path).mkdir(parents=True)  # "error": refuses an existing path
        (Path(path) / "part-0.parquet").write_text(self.marker)


def _swap(root: Path, marker: str) -> str:
    run = "r1"
    token = "t" + marker
    return _session._swap_in_local(
        {"cells": _Frame(marker)}, root / f"run_id={run}",  # type: ignore[dict-item]
        root / f".staging-{run}-{token}", root / f".old-{run}-{token}")


def test_new_tables_replace_the_old_as_a_whole(tmp_path: Path) -> None:
    _swap(tmp_path, "one")
    _swap(tmp_path, "two")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run_id=r1"]
    assert (tmp_path / "run_id=r1" / "cells.parquet" / "part-0.parquet").read_text() == "two"


def test_a_failed_last_rename_puts_the_earlier_tables_back(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _swap(tmp_path, "one")
    real_rename = Path.rename

    def rename(self: Path, target: Any) -> Path:
        if self.name.startswith(".staging-"):
            raise OSError("disk full")
        return real_rename(self, target)

    monkeypatch.setattr(Path, "rename", rename)
    with pytest.raises(OSError, match="disk full"):
        _swap(tmp_path, "two")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run_id=r1"]
    assert (tmp_path / "run_id=r1" / "cells.parquet" / "part-0.parquet").read_text() == "one"
