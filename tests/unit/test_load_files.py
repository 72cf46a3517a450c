"""Names of a load cell's files (kafkalab.load.files, kafkalab.load.shard)."""

from __future__ import annotations

from pathlib import Path

from kafkalab.load import files
from kafkalab.load.shard import ready_path, result_path


def test_every_shard_file_is_numbered_in_three_digits(tmp_path: Path) -> None:
    assert files.receipts_path(tmp_path, 7) == tmp_path / "receipts-007.parquet"
    assert files.lag_path(tmp_path, 12) == tmp_path / "lag-012.parquet"
    assert ready_path(tmp_path, 0) == tmp_path / ".ready-000"
    assert result_path(tmp_path, 1) == tmp_path / ".shard-001.json"
    assert files.sends_path(tmp_path) == tmp_path / "sends.parquet"
    assert files.cell_json_path(tmp_path) == tmp_path / "cell.json"


def test_shard_files_are_found_in_shard_order_with_their_numbers(tmp_path: Path) -> None:
    for name in ("lag-010.parquet", "lag-002.parquet", "lag-x.parquet", "receipts-001.parquet",
                 ".lag-003.parquet.tmp"):
        (tmp_path / name).touch()
    found = files.lag_path.every(tmp_path)
    assert [p.name for p in found] == ["lag-002.parquet", "lag-010.parquet", "lag-x.parquet"]
    assert [files.lag_path.shard_of(p) for p in found] == [2, 10, None]
