"""The load samples dataset on disk (schema: docs/metrics-schema.md, "Load samples").

One directory per cell, ``load/run_date=<d>/run_id=<id>/cell=<cell_id>/``, holding

* ``sends.parquet``: one row per intended message of the producer;
* ``receipts-<shard>.parquet``: one row per record each consumer of the shard received;
* ``lag-<shard>.parquet``: every ``lag_interval_s``, per consumer and partition;
* ``cell.json``: the cell's settings, clocks, processes (CPU) and summary
  (:class:`CellDoc`).

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
from typing import Any, ClassVar, Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from kafkalab.kinds import LOAD
from kafkalab.load.spec import LoadCellSpec
from kafkalab.parquet_stream import ParquetStream, write_parquet
from kafkalab.store import LabData, atomic_write_json, read_json

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
    ("txn_end", pa.string()),
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

OUTCOMES = ("acked", "failed", "indeterminate", "unsent", "aborted")
"""Every intended message ends as exactly one of these (``aborted``: its transaction was
aborted; only a transactional cell's, ``txn_msgs``)."""

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


# -- cell.json --------------------------------------------------------------------------

CellStatus = Literal["running", "complete", "failed", "interrupted"]
"""A cell's status: ``running`` until it ends, then one of the other three."""


class _CellPart(BaseModel):
    """Read leniently (keys a reader does not know are ignored), written as declared."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)


class CellCluster(_CellPart):
    """The cluster a cell measured (``cell.json`` ``cluster``)."""

    flavor: str
    """The descriptor's flavor (a name in :data:`kafkalab.cluster.flavors.FLAVORS`)."""
    version: str
    """The broker version the descriptor names."""
    is_emulator: bool
    """Not Kafka (a descriptor marked is_emulator): its figures say nothing about Kafka."""
    broker_count: int | None
    """Brokers in the cluster (None: not known)."""


class PauseWindow(_CellPart):
    """When every consumer of the cell stopped fetching (``pause_at_s`` / ``pause_for_s``)."""

    start_ns: int
    """Start of the pause, monotonic ns of the producer's host."""
    end_ns: int
    """End of the pause, monotonic ns of the producer's host."""


class ProcessCpu(_CellPart):
    """One load-generator process and the CPU it used (``cell.json`` ``processes``).

    The fields of a shard come from its result file; a shard that wrote none has only
    None values here."""

    KEYS: ClassVar[tuple[str, ...]] = ("role", "shard", "pid", "host", "cpu_s", "wall_s",
                                       "cpu_frac")

    role: str | None = None
    """``producer`` or ``consumer-shard``."""
    shard: int | None = None
    """The shard number (None for the producer)."""
    pid: int | None = None
    """Its process id on ``host``."""
    host: str | None = None
    """The host it ran on."""
    cpu_s: float | None = None
    """CPU seconds (user + system) it used over its measuring span."""
    wall_s: float | None = None
    """Wall seconds of that span (start barrier → producer stopped)."""
    cpu_frac: float | None = None
    """``cpu_s / wall_s``: cores it kept busy (above 0.8 the cell is ``client_bound``)."""

    @classmethod
    def of_result(cls, result: dict[str, Any]) -> ProcessCpu:
        """The entry of a shard, from its result document."""
        return cls.model_validate({key: result.get(key) for key in cls.KEYS})


class CellDoc(_CellPart):
    """``cell.json``: one load cell's settings, clocks, processes and summary
    (docs/metrics-schema.md, "Load samples").

    The engine writes it when the cell starts (status ``running``) and again when it ends.
    Every ``*_ns`` is CLOCK_MONOTONIC of the producer's host, in integer ns. The fields
    after ``barrier_wait_s`` (:data:`WRITTEN_WHEN_SET`) are written only once the cell set
    them: ``host_cpu_*`` (and ``producer_leader_view``, when watched) once the producer ran, ``shards`` once the shards ended, ``ended_at``
    and ``summary`` when the cell ended. Defaults are for files written before a field
    existed; the engine sets every field.
    """

    WRITTEN_WHEN_SET: ClassVar[tuple[str, ...]] = ("host_cpu_busy_frac", "host_cpu_count",
                                                   "producer_leader_view", "shards",
                                                   "ended_at", "summary")

    schema_version: int
    """:data:`LOAD_SCHEMA_VERSION`."""
    cell_id: str
    """The cell's directory name (:meth:`kafkalab.load.spec.LoadCellSpec.cell_id`)."""
    run_id: str
    run_date: str
    """``YYYY-MM-DD``, the run's start date (the directory's ``run_date=``)."""
    status: CellStatus
    error: str | None
    """Why the cell failed or was interrupted (None while running and when complete)."""
    spec: LoadCellSpec
    """What the cell measures, every field."""
    acks: Literal["0", "1", "all"]
    """The effective acks (the spec's override, else the profile's)."""
    topic: str
    partitions: int
    payload_bytes: int
    """One message's bytes on the wire (body + stamp header)."""
    cluster: CellCluster
    client: str
    """The producer's (and the shards' consumers') client library."""
    client_version: str
    client_settings: dict[str, Any] = {}
    """Flat ``producer.<key>`` / ``consumer.<key>`` → text, as in the latency samples; no
    secrets."""
    t0_ns: int | None
    """When message 0 was due: the start barrier passed + 100 ms (None before it)."""
    measure_start_ns: int | None
    """Intended send time of the first measured (non-warm-up) message."""
    stop_ts_ns: int | None
    """When the producer stopped sending."""
    drain_end_ts_ns: int | None
    """When every shard had ended its drain."""
    pause: PauseWindow | None
    processes: list[ProcessCpu]
    """The producer, then each shard."""
    client_bound: bool
    """A load-generator process used more than 0.8 of a core (its latency is the client's)."""
    broker_cpu_frac: float | None
    """CPU seconds per wall second of the brokers on this host (None: remote or unknown)."""
    started_at: str | None = None
    """ISO 8601 UTC wall time the cell started."""
    shard_placement: Literal["subprocess", "tasks"] = "subprocess"
    """Where the consumer shards ran (:mod:`kafkalab.load.placement`)."""
    placement_token: str | None = None
    """The Airflow DAG run that placed shard tasks (else None)."""
    cross_host_clock: bool = False
    """A shard mapped its clock through the wall clocks (``shards[].clock.basis``
    ``wall_clock``): its latencies carry the clocks' offset error."""
    barrier_wait_s: float | None = None
    """Seconds from starting (or awaiting) the shards until every one was positioned."""
    host_cpu_busy_frac: float | None = None
    """Share of all the host's CPUs busy while the producer ran (1.0: every core)."""
    host_cpu_count: int | None = None
    """CPUs of the host."""
    producer_leader_view: list[list[int]] | None = None
    """With ``spec.watch_leader`` (confluent-kafka): ``[ts_ns, leader]`` each time the
    producer's own statistics named another leader of partition 0 (``-1``: none known),
    monotonic ns (:mod:`kafkalab.load.client_view`); None when not watched."""
    shards: list[dict[str, Any]] | None = None
    """Each shard's result document (:func:`kafkalab.load.shard.main`): counts, errors,
    CPU, and ``clock`` (``domain``, ``basis`` ``same_host`` or ``wall_clock``,
    ``offset_ns``)."""
    ended_at: str | None = None
    """ISO 8601 UTC wall time the cell ended."""
    summary: dict[str, Any] | None = None
    """The cell's figures (:func:`kafkalab.load.summary.summarize_cell`), or ``cell_id``,
    ``status`` and ``error`` when they could not be computed."""

    def document(self) -> dict[str, Any]:
        """The JSON object written: every field in declaration order, but those of
        :data:`WRITTEN_WHEN_SET` only once set."""
        doc = self.model_dump()
        for name in self.WRITTEN_WHEN_SET:
            if name not in self.model_fields_set:
                del doc[name]
        return doc

    def write(self, cell: Path) -> Path:
        """Write (replace) the cell's ``cell.json`` atomically."""
        return atomic_write_json(cell_json_path(cell), self.document())

    @classmethod
    def read(cls, cell: Path) -> CellDoc | None:
        """The cell's ``cell.json``, None when there is none (or it is not a JSON object).

        Raises:
            pydantic.ValidationError: a ``cell.json`` that is not a cell document.
        """
        doc = read_json(cell_json_path(cell))
        return cls.model_validate(doc) if isinstance(doc, dict) else None
