"""The load samples dataset on disk (schema: docs/metrics-schema.md, "Load samples").

One directory per cell, ``load/run_date=<d>/run_id=<id>/cell=<cell_id>/``, holding

* ``sends.parquet``: one row per intended message of the producer;
* ``receipts-<shard>.parquet``: one row per record each consumer of the shard received;
* ``lag-<shard>.parquet``: every ``lag_interval_s``, per consumer and partition;
* ``cell.json``: the cell's settings, clocks, processes (CPU) and summary.

Rows are written by :class:`ColumnWriter`: columns are buffered in plain Python lists and
appended as row groups to a hidden temporary file (every :data:`FLUSH_ROWS` rows or
:data:`FLUSH_INTERVAL_S`), so a shard's memory stays bounded however many rows a fan-out
makes; :meth:`ColumnWriter.close` renames the file into place (replacing an earlier
measurement of the same cell). Readers ignore names starting with ``.``.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafkalab.kinds import LOAD
from kafkalab.store import LabData, atomic_file

LOAD_SCHEMA_VERSION = 1
"""Version of the load samples schema (``cell.json``'s ``schema_version``)."""

SENDS_SCHEMA = pa.schema([
    ("seq", pa.int64()),
    ("producer_id", pa.int32()),
    ("is_warmup", pa.bool_()),
    ("intended_ts_ns", pa.int64()),
    ("send_ts_ns", pa.int64()),
    ("ack_ts_ns", pa.int64()),
    ("outcome", pa.string()),
    ("error", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("publish_delay_ms", pa.float64()),
    ("ack_latency_ms", pa.float64()),
])

RECEIPTS_SCHEMA = pa.schema([
    ("consumer", pa.int32()),
    ("shard", pa.int32()),
    ("seq", pa.int64()),
    ("producer_id", pa.int32()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("intended_ts_ns", pa.int64()),
    ("send_ts_ns", pa.int64()),
    ("receive_ts_ns", pa.int64()),
    ("e2e_latency_ms", pa.float64()),
    ("service_e2e_latency_ms", pa.float64()),
    ("duplicate", pa.bool_()),
    ("is_warmup", pa.bool_()),
])

LAG_SCHEMA = pa.schema([
    ("consumer", pa.int32()),
    ("shard", pa.int32()),
    ("partition", pa.int32()),
    ("sample_ts_ns", pa.int64()),
    ("elapsed_s", pa.float64()),
    ("log_end_offset", pa.int64()),
    ("position", pa.int64()),
    ("lag_msgs", pa.int64()),
    ("received_msgs", pa.int64()),
    ("paused", pa.bool_()),
])

OUTCOMES = ("acked", "failed", "indeterminate", "unsent")
"""Every intended message ends as exactly one of these."""

FLUSH_ROWS = 50_000
FLUSH_INTERVAL_S = 1.0

def load_root(data_dir: Path | str | None) -> Path:
    """``<data_dir>/load``: the load samples dataset (:meth:`LabData.measured_dir`)."""
    return LabData(data_dir).measured_dir(LOAD)


def cell_dir(data_dir: Path | str | None, run_date: str, run_id: str, cell_id: str) -> Path:
    """Where one load cell's files live."""
    return load_root(data_dir) / f"run_date={run_date}" / f"run_id={run_id}" / f"cell={cell_id}"


def run_cell_dirs(data_dir: Path | str | None, run_id: str) -> list[Path]:
    """Every cell directory of a load run (under any run date)."""
    return sorted(load_root(data_dir).glob(f"run_date=*/run_id={run_id}/cell=*"))


def receipts_path(cell: Path, shard: int) -> Path:
    return cell / f"receipts-{shard:03d}.parquet"


def lag_path(cell: Path, shard: int) -> Path:
    return cell / f"lag-{shard:03d}.parquet"


def sends_path(cell: Path) -> Path:
    return cell / "sends.parquet"


def cell_json_path(cell: Path) -> Path:
    return cell / "cell.json"


class ColumnWriter:
    """Streams rows of one schema to a Parquet file in bounded memory.

    ``append(**columns)`` takes one row as keyword values; rows are kept column-wise and
    flushed as a row group every :data:`FLUSH_ROWS` rows or :data:`FLUSH_INTERVAL_S`.
    Not thread-safe (a shard serialises its writes).
    """

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.path = Path(path)
        self.schema = schema
        self.rows_written = 0
        self._names = schema.names
        self._batches: list[pa.RecordBatch] = []
        self._pending = 0
        self._last_flush = time.monotonic()
        self._stack = contextlib.ExitStack()
        self._fh = self._stack.enter_context(atomic_file(self.path))
        self._writer: pq.ParquetWriter | None = None
        self._closed = False

    def extend(self, columns: dict[str, Any]) -> None:
        """Append several rows given column-wise (lists, numpy or Arrow arrays of one length)."""
        batch = pa.record_batch([pa.array(columns[n], type=self.schema.field(n).type)
                                 if not isinstance(columns[n], pa.Array) else columns[n]
                                 for n in self._names], schema=self.schema)
        if batch.num_rows == 0:
            return
        self._batches.append(batch)
        self._pending += batch.num_rows
        self.maybe_flush()

    def maybe_flush(self) -> None:
        if self._pending >= FLUSH_ROWS or (
                self._pending and time.monotonic() - self._last_flush >= FLUSH_INTERVAL_S):
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._fh, self.schema, compression="zstd")
        self._writer.write_table(pa.Table.from_batches(self._batches, schema=self.schema))
        self.rows_written += self._pending
        self._batches = []
        self._pending = 0
        self._fh.flush()
        self._last_flush = time.monotonic()

    def close(self) -> int:
        """Flush and rename the file into place (an empty file with the schema when no row
        arrived: a consumer that received nothing is a finding, not a missing file)."""
        if self._closed:
            return self.rows_written
        self._closed = True
        try:
            self.flush()
            if self._writer is None:
                self._writer = pq.ParquetWriter(self._fh, self.schema, compression="zstd")
            self._writer.close()
        except BaseException as exc:
            self._stack.__exit__(type(exc), exc, exc.__traceback__)
            raise
        self._stack.close()
        return self.rows_written

    def abort(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stack.__exit__(RuntimeError, RuntimeError("aborted"), None)


def write_table(path: Path, columns: dict[str, Any], schema: pa.Schema) -> Path:
    """Write a whole table at once (atomically)."""
    table = pa.table({n: pa.array(columns[n], type=schema.field(n).type) for n in schema.names},
                     schema=schema)
    with atomic_file(path) as fh:
        pq.write_table(table, fh, compression="zstd")
    return path
