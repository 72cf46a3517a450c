"""How the lab writes a Parquet file: streamed in row groups while rows arrive
(:class:`ParquetStream`), or whole (:func:`write_parquet`); atomically either way.

A stream appends row groups to a hidden temporary file in the target's directory (readers
ignore names starting with ``.``; :func:`kafkalab.store.atomic_file`), so memory stays bounded
however many rows arrive and rows already flushed survive a writer that fails half-way.
:meth:`ParquetStream.close` makes the file durable and renames it over the target (replacing
an earlier file); :meth:`ParquetStream.abort` discards it and leaves the target as it was.

Both writers use zstd and pyarrow's defaults otherwise. The latency samples
(:class:`kafkalab.samples.CellWriter`) and the load cells' receipts and lag files
(:func:`kafkalab.load.files.open_stream`) are streams with their own flush rules.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafkalab.store import atomic_file

COMPRESSION = "zstd"
"""The compression of every Parquet file the lab writes."""


class ParquetStream:
    """Streams rows of one schema to a Parquet file in row groups, in bounded memory.

    Rows arrive one at a time (:meth:`append`, a mapping by column name) or column-wise
    (:meth:`extend`); they are buffered in arrival order and written as one row group when
    ``flush_rows`` rows are buffered, or when rows are buffered and ``flush_interval_s``
    seconds have passed since the last row group (checked as rows arrive).

    ``keep_empty``: a stream closed without a row writes an empty file with the schema (True:
    a consumer that received nothing is a finding) or removes the target (False: a re-measured
    cell that produced nothing replaces its earlier file with nothing).

    Not thread-safe: callers serialise their writes.
    """

    def __init__(self, path: Path, schema: pa.Schema, *, flush_rows: int,
                 flush_interval_s: float, keep_empty: bool = True) -> None:
        self.path = Path(path)
        self.schema = schema
        self.flush_rows = flush_rows
        self.flush_interval_s = flush_interval_s
        self.keep_empty = keep_empty
        self.rows_written = 0
        """Rows already written to the temporary file as row groups."""
        self._rows: list[Mapping[str, Any]] = []
        self._batches: list[pa.RecordBatch] = []
        self._pending = 0
        self._last_flush = time.monotonic()
        self._stack = contextlib.ExitStack()
        self._fh = self._stack.enter_context(atomic_file(self.path))
        self._writer: pq.ParquetWriter | None = None
        self._closed = False

    def append(self, row: Mapping[str, Any]) -> None:
        """Buffer one row (column name → value); flush a row group when one is due."""
        self._rows.append(row)
        self._pending += 1
        self._flush_if_due()

    def extend(self, columns: Mapping[str, Any]) -> None:
        """Buffer several rows given column-wise (lists, numpy or Arrow arrays of one length,
        one per column of the schema); flush a row group when one is due."""
        batch = pa.record_batch([pa.array(columns[n], type=self.schema.field(n).type)
                                 if not isinstance(columns[n], pa.Array) else columns[n]
                                 for n in self.schema.names], schema=self.schema)
        if batch.num_rows == 0:
            return
        self._seal_rows()
        self._batches.append(batch)
        self._pending += batch.num_rows
        self._flush_if_due()

    def flush(self) -> None:
        """Append the buffered rows to the temporary file as one row group."""
        if not self._pending:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._fh, self.schema, compression=COMPRESSION)
        self._writer.write_table(self._take_buffered())
        self.rows_written += self._pending
        self._pending = 0
        self._fh.flush()
        self._last_flush = time.monotonic()

    def close(self) -> int:
        """Flush, make the file durable and rename it into place; returns the row count.
        Closing again returns the same count and does nothing else."""
        if self._closed:
            return self.rows_written
        self._closed = True
        try:
            self.flush()
            if self._writer is None and self.keep_empty:
                self._writer = pq.ParquetWriter(self._fh, self.schema, compression=COMPRESSION)
            if self._writer is not None:
                self._writer.close()
        except BaseException as exc:
            self._discard(exc)
            raise
        if self.rows_written == 0 and not self.keep_empty:
            self._discard(RuntimeError("no rows"))
            self.path.unlink(missing_ok=True)
            return 0
        self._stack.close()
        return self.rows_written

    def abort(self) -> None:
        """Discard the temporary file; the target keeps its earlier content."""
        if self._closed:
            return
        self._closed = True
        self._discard(RuntimeError("aborted"))

    def _flush_if_due(self) -> None:
        if self._pending >= self.flush_rows or (
                self._pending and time.monotonic() - self._last_flush >= self.flush_interval_s):
            self.flush()

    def _seal_rows(self) -> None:
        """Turn the rows buffered one at a time into a batch (keeps the arrival order when
        column-wise rows follow)."""
        if self._rows:
            self._batches.append(pa.RecordBatch.from_pylist(self._rows, schema=self.schema))
            self._rows = []

    def _take_buffered(self) -> pa.Table:
        if not self._batches:  # rows one at a time only: one conversion
            table = pa.Table.from_pylist(self._rows, schema=self.schema)
        else:
            self._seal_rows()
            table = pa.Table.from_batches(self._batches, schema=self.schema)
        self._rows, self._batches = [], []
        return table

    def _discard(self, why: BaseException) -> None:
        """Remove the temporary file (``why`` is passed to :func:`atomic_file` as the
        failure). A Parquet writer still open is closed first, quietly: left to the garbage
        collector it would write its footer to the closed file."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
        self._stack.__exit__(type(why), why, why.__traceback__)


def write_parquet(path: Path, table: pa.Table) -> Path:
    """Write a whole table at once (atomically, replacing an earlier file); returns ``path``."""
    with atomic_file(path) as fh:
        pq.write_table(table, fh, compression=COMPRESSION)
    return Path(path)
