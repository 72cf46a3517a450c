"""The load samples dataset on disk (schema: docs/metrics-schema.md, "Load samples").

One directory per cell, ``load/run_date=<d>/run_id=<id>/cell=<cell_id>/``, holding

* ``sends.parquet``: one row per intended message of the producer;
* ``receipts-<shard>.parquet``: one row per record each consumer of the shard received;
* ``lag-<shard>.parquet``: every ``lag_interval_s``, per consumer and partition;
* ``cell.json``: the cell's settings, clocks, processes (CPU) and summary.

A shard streams its receipts and lag rows (:func:`open_stream`, a
:class:`kafkalab.parquet_stream.ParquetStream`): they are appended as row groups to a hidden
temporary file (every :data:`FLUSH_ROWS` rows or :data:`FLUSH_INTERVAL_S`), so a shard's memory
stays bounded however many rows a fan-out makes; closing renames the file into place
(replacing an earlier measurement of the same cell). Readers ignore names starting with
``.``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from kafkalab.kinds import LOAD
from kafkalab.parquet_stream import ParquetStream, write_parquet
from kafkalab.store import LabData

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
"""A shard's receipts and lag files get a row group at least every this many rows ..."""
FLUSH_INTERVAL_S = 1.0
"""... and at least this often while rows arrive."""


def load_root(data_dir: Path | str | None) -> Path:
    """``<data_dir>/load``: the load samples dataset (:meth:`LabData.measured_dir`)."""
    return LabData(data_dir).measured_dir(LOAD)


def cell_dir(data_dir: Path | str | None, run_date: str, run_id: str, cell_id: str) -> Path:
    """Where one load cell's files live."""
    return load_root(data_dir) / f"run_date={run_date}" / f"run_id={run_id}" / f"cell={cell_id}"


def run_cell_dirs(data_dir: Path | str | None, run_id: str) -> list[Path]:
    """Every cell directory of a load run (under any run date)."""
    return sorted(load_root(data_dir).glob(f"run_date=*/run_id={run_id}/cell=*"))


@dataclass(frozen=True)
class CellFile:
    """One file of a cell's (or a fault trial's) directory: ``CellFile("sends.parquet")(cell)``
    is its path."""

    name: str

    def __call__(self, cell: Path) -> Path:
        return cell / self.name


@dataclass(frozen=True)
class ShardFile:
    """A file each consumer shard of a cell has: ``<stem>-NNN<suffix>``, NNN the shard number
    in three digits (``ShardFile("lag", ".parquet")(cell, 2)`` is ``cell/lag-002.parquet``)."""

    stem: str
    suffix: str

    def __call__(self, cell: Path, shard: int) -> Path:
        return cell / f"{self.stem}-{shard:03d}{self.suffix}"

    def every(self, cell: Path) -> list[Path]:
        """Every shard's file in ``cell``, in shard order."""
        return sorted(cell.glob(f"{self.stem}-*{self.suffix}"))

    def shard_of(self, path: Path) -> int | None:
        """The shard number in the name of ``path`` (one of :meth:`every`), None if it has
        none."""
        number = path.name[len(self.stem) + 1:len(path.name) - len(self.suffix)]
        return int(number) if number.isdigit() else None


sends_path = CellFile("sends.parquet")
receipts_path = ShardFile("receipts", ".parquet")
lag_path = ShardFile("lag", ".parquet")
cell_json_path = CellFile("cell.json")


def open_stream(path: Path, schema: pa.Schema) -> ParquetStream:
    """A streamed file of a cell (receipts, lag): a row group every :data:`FLUSH_ROWS` rows or
    :data:`FLUSH_INTERVAL_S`, and an empty file with the schema when no row arrived (a consumer
    that received nothing is a finding, not a missing file)."""
    return ParquetStream(path, schema, flush_rows=FLUSH_ROWS, flush_interval_s=FLUSH_INTERVAL_S)


def write_table(path: Path, columns: dict[str, Any], schema: pa.Schema) -> Path:
    """Write a whole table at once (atomically)."""
    table = pa.table({n: pa.array(columns[n], type=schema.field(n).type) for n in schema.names},
                     schema=schema)
    return write_parquet(path, table)
