"""The lab's streaming Parquet writer (kafkalab.parquet_stream), as the load cells' receipts
and lag files use it (kafkalab.load.files.open_stream); the latency samples' use of it is
tested in test_samples.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from kafkalab.load import files
from kafkalab.parquet_stream import ParquetStream

SCHEMA = pa.schema([("seq", pa.int64()), ("note", pa.string())])


def test_a_load_stream_closed_without_rows_leaves_an_empty_file_with_the_schema(
        tmp_path: Path) -> None:
    path = files.receipts_path(tmp_path, 0)
    stream = files.open_stream(path, files.RECEIPTS_SCHEMA)
    stream.extend({n: [] for n in files.RECEIPTS_SCHEMA.names})
    assert stream.close() == 0
    assert pq.read_table(path).schema == files.RECEIPTS_SCHEMA
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_rows_are_flushed_as_one_row_group_per_full_buffer(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    stream = ParquetStream(path, SCHEMA, flush_rows=4, flush_interval_s=3600)
    stream.extend({"seq": np.arange(3), "note": ["a", "b", "c"]})
    assert stream.rows_written == 0 and not path.exists()
    stream.extend({"seq": pa.array([3, 4], pa.int64()), "note": ["d", None]})
    assert stream.rows_written == 5                       # 3 + 2 ≥ 4: one row group of 5
    stream.extend({"seq": [5], "note": ["f"]})
    assert stream.close() == 6 and stream.close() == 6
    assert pq.read_metadata(path).num_row_groups == 2
    assert pq.read_table(path).column("seq").to_pylist() == list(range(6))


def test_rows_one_at_a_time_and_column_wise_keep_their_order(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    stream = ParquetStream(path, SCHEMA, flush_rows=100, flush_interval_s=3600)
    stream.append({"seq": 0, "note": "row"})
    stream.extend({"seq": [1, 2], "note": ["col", "col"]})
    stream.append({"seq": 3, "note": "row"})
    stream.close()
    assert pq.read_table(path).to_pylist() == [
        {"seq": 0, "note": "row"}, {"seq": 1, "note": "col"}, {"seq": 2, "note": "col"},
        {"seq": 3, "note": "row"}]


def test_abort_discards_the_stream_and_keeps_the_earlier_file(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    first = ParquetStream(path, SCHEMA, flush_rows=1, flush_interval_s=3600)
    first.append({"seq": 0, "note": None})
    first.close()
    second = ParquetStream(path, SCHEMA, flush_rows=1, flush_interval_s=3600)
    second.append({"seq": 1, "note": None})               # already flushed to the temp file
    second.abort()
    assert pq.read_table(path).column("seq").to_pylist() == [0]
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
