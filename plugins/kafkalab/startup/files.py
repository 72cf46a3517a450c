"""A start-up run's files (schema: docs/first-message.md, "Files").

``<data>/startup/run_date=<YYYY-MM-DD>/run_id=<id>/`` holds

* ``probes.parquet``: one row per member of every probe (:data:`PROBES_SCHEMA`), streamed as
  each probe ends (:class:`kafkalab.parquet_stream.ParquetStream`, one row group per probe);
  a probe that timed out or failed is a row too;
* ``run.json``: the run's settings, clusters, clients, the unsupported combinations, its
  status and the summary per case (:func:`kafkalab.startup_figures.summarize`), rewritten
  after every probe so an interrupted run keeps what it measured.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from kafkalab.kinds import STARTUP
from kafkalab.parquet_stream import ParquetStream
from kafkalab.store import LabData

__all__ = ["PROBES_SCHEMA", "STARTUP_SCHEMA_VERSION", "open_probes", "run_dir"]

STARTUP_SCHEMA_VERSION = 2
"""Version of ``probes.parquet`` and ``run.json`` (``run.json``'s ``schema_version``)."""

PROBES_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("probe", pa.int32()),                      # the probe's number in the run (0, 1, ...)
    ("trial", pa.int32()),
    ("member", pa.int32()),                     # 0 .. members-1
    ("case_key", pa.string()),                  # StartupCase.key
    ("client", pa.string()),                    # confluent-kafka | kafka-python
    ("client_version", pa.string()),
    ("join", pa.string()),                      # subscribe | assign
    ("group_protocol", pa.string()),            # classic | consumer | none
    ("members", pa.int32()),
    ("cluster_state", pa.string()),             # cold | warm
    ("initial_rebalance_delay_ms", pa.int32()), # as the broker reported it
    ("kafka_version", pa.string()),
    ("broker_flavor", pa.string()),
    ("status", pa.string()),                    # ok | timeout | error
    ("error", pa.string()),
    ("started_at_ns", pa.int64()),              # wall clock (time.time_ns) at the probe's start
    ("created_ms", pa.float64()),               # each *_ms: ms after the member's start
    ("metadata_ms", pa.float64()),
    ("assigned_ms", pa.float64()),
    ("first_record_ms", pa.float64()),
    ("offsets_topic_ready_ms", pa.float64()),   # cold probes: __consumer_offsets led
    ("coordinator_ready_ms", pa.float64()),     # cold subscribe probes: its group answered
])
"""``probes.parquet``: every interval starts at the member's ``start`` mark
(:mod:`kafkalab.startup.probe`); null where the mark was not reached or the client does not
expose it."""


def run_dir(data_dir: Path | str | None, run_date: str, run_id: str) -> Path:
    """``<data>/startup/run_date=<run_date>/run_id=<run_id>/``."""
    return LabData(data_dir).measured_dir(STARTUP) / f"run_date={run_date}" / f"run_id={run_id}"


def open_probes(directory: Path) -> ParquetStream:
    """The run's ``probes.parquet`` stream (a row group per probe; kept when empty)."""
    directory.mkdir(parents=True, exist_ok=True)
    return ParquetStream(directory / "probes.parquet", PROBES_SCHEMA, flush_rows=1_000_000,
                         flush_interval_s=3600.0)
