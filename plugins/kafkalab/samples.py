"""Raw samples and run manifests on disk (schema: docs/metrics-schema.md).

One Parquet file per measured cell (scenario × payload × profile) under
``samples/run_date=<d>/run_id=<id>/``. A cell's rows are *streamed*: a scenario hands each
row to its :class:`SampleSink` the moment it is final, and :class:`CellWriter` appends them to
a hidden temporary file in row groups (every :data:`FLUSH_ROWS` rows or
:data:`FLUSH_INTERVAL_S` seconds), so memory stays bounded and a cell that raises half-way
keeps what it measured. Closing renames the file into place: a re-run of a cell replaces
exactly that cell's file and nothing else.
"""

from __future__ import annotations

import getpass
import json
import os
import platform
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from kafkalab.parquet_stream import ParquetStream, write_parquet
from kafkalab.store import LabData, read_json

SCHEMA_VERSION = 2
"""Version of the samples and manifest schemas (docs/metrics-schema.md, "Versions")."""

SAMPLE_SCHEMA = pa.schema(
    [
        ("sample_kind", pa.string()),
        ("scenario", pa.string()),
        ("client", pa.string()),
        ("client_version", pa.string()),
        ("profile", pa.string()),
        ("workload", pa.string()),
        ("payload", pa.string()),
        ("payload_encoding", pa.string()),
        ("payload_bytes", pa.int64()),
        ("cluster_flavor", pa.string()),
        ("broker_version", pa.string()),
        ("broker_is_emulator", pa.bool_()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("seq", pa.int64()),
        ("is_warmup", pa.bool_()),
        ("status", pa.string()),
        ("error", pa.string()),
        ("send_ts_ns", pa.int64()),
        ("ack_ts_ns", pa.int64()),
        ("receive_ts_ns", pa.int64()),
        ("publish_latency_ms", pa.float64()),
        ("e2e_latency_ms", pa.float64()),
        ("round_trip_ms", pa.float64()),
        ("consumer_mode", pa.string()),
        ("assign_delay_ms", pa.float64()),
        ("first_record_delay_ms", pa.float64()),
        ("statistic", pa.string()),
        ("latency_resolution_ms", pa.float64()),
        ("wall_ts_ns", pa.int64()),
        ("loop_mode", pa.string()),
        ("cold_start", pa.bool_()),
        ("planned_messages", pa.int64()),
        ("message_timeout_ms", pa.float64()),
        ("broker_count", pa.int32()),
        ("client_settings", pa.string()),
    ]
)
"""Columns stored in each file; ``run_date`` and ``run_id`` are Hive path partitions only."""

NS_RESOLUTION_MS = 1e-6


@dataclass(frozen=True)
class CellContext:
    """What every sample of one cell shares."""

    run_id: str
    scenario: str
    client: str
    client_version: str
    profile: str
    workload: str
    payload: str
    payload_encoding: str
    payload_bytes: int
    cluster_flavor: str
    broker_version: str
    broker_is_emulator: bool
    topic: str | None
    planned_messages: int
    message_timeout_ms: float
    broker_count: int | None
    client_settings: str
    """JSON object (sorted keys) of the effective client settings; see :func:`settings_json`."""


def settings_json(settings: Mapping[str, Any]) -> str:
    """The ``client_settings`` column: a JSON object with sorted keys, values as strings."""
    return json.dumps({str(k): str(v) for k, v in settings.items()}, sort_keys=True)


@dataclass
class Sample:
    """One row of the samples dataset (see docs/metrics-schema.md for every field)."""

    sample_kind: str
    seq: int
    is_warmup: bool = False
    status: str = "ok"
    error: str | None = None
    partition: int | None = None
    offset: int | None = None
    send_ts_ns: int | None = None
    ack_ts_ns: int | None = None
    receive_ts_ns: int | None = None
    e2e_latency_ms_override: float | None = None
    round_trip_ms: float | None = None
    consumer_mode: str | None = None
    assign_delay_ms: float | None = None
    first_record_delay_ms: float | None = None
    statistic: str | None = None
    latency_resolution_ms: float = NS_RESOLUTION_MS
    wall_ts_ns: int | None = None
    loop_mode: str | None = None
    cold_start: bool | None = None

    @property
    def publish_latency_ms(self) -> float | None:
        if self.send_ts_ns is None or self.ack_ts_ns is None:
            return None
        return (self.ack_ts_ns - self.send_ts_ns) / 1e6

    @property
    def e2e_latency_ms(self) -> float | None:
        if self.e2e_latency_ms_override is not None:
            return self.e2e_latency_ms_override
        if self.send_ts_ns is None or self.receive_ts_ns is None:
            return None
        return (self.receive_ts_ns - self.send_ts_ns) / 1e6


def to_row(base: Mapping[str, Any], s: Sample) -> dict[str, Any]:
    """One row following SAMPLE_SCHEMA: the cell's shared columns ``base`` plus ``s``."""
    row = dict(base)
    row.update({f.name: getattr(s, f.name) for f in fields(s) if f.name != "e2e_latency_ms_override"})
    row["publish_latency_ms"] = s.publish_latency_ms
    row["e2e_latency_ms"] = s.e2e_latency_ms
    return row


def cell_columns(ctx: CellContext) -> dict[str, Any]:
    """The columns every row of one cell shares (the context without ``run_id``)."""
    base = asdict(ctx)
    base.pop("run_id")
    return base


def to_rows(ctx: CellContext, samples: Iterable[Sample]) -> list[dict[str, Any]]:
    """Flatten samples of one cell into dict rows following SAMPLE_SCHEMA."""
    base = cell_columns(ctx)
    return [to_row(base, s) for s in samples]


class SampleSink(Protocol):
    """Where a scenario hands each row the moment it is final."""

    def write(self, sample: Sample) -> None:
        """Take one row."""
        ...


class ListSink:
    """A sink that keeps rows in memory (``rows``): for tests and tools."""

    def __init__(self) -> None:
        self.rows: list[Sample] = []

    def write(self, sample: Sample) -> None:
        self.rows.append(sample)


FLUSH_ROWS = 1_000
"""A :class:`CellWriter` writes a row group at least every this many rows ..."""
FLUSH_INTERVAL_S = 1.0
"""... and at least this often while rows arrive."""


class CellWriter(ParquetStream):
    """Streams one cell's rows to its Parquet file (a :class:`SampleSink`).

    A :class:`kafkalab.parquet_stream.ParquetStream` of :data:`SAMPLE_SCHEMA`: rows are
    buffered and appended as row groups (every :data:`FLUSH_ROWS` rows or
    :data:`FLUSH_INTERVAL_S`) to a hidden temporary file in the cell's directory (readers
    ignore names starting with ``.``). :meth:`close` makes the file durable and renames it
    over ``path``; a cell that produced no rows leaves no file at ``path``. The runner writes
    each attempt at a cell to a path of its own and decides afterwards whether it replaces an
    earlier measurement (:mod:`kafkalab.attempts`). :meth:`abort` (used only
    when the file itself cannot be written) discards the temporary file and leaves ``path`` as
    it was. Not thread-safe: scenarios serialise their writes through their tracker's lock or
    write from one thread.
    """

    def __init__(self, path: Path, ctx: CellContext | Callable[[], CellContext]) -> None:
        super().__init__(path, SAMPLE_SCHEMA, flush_rows=FLUSH_ROWS,
                         flush_interval_s=FLUSH_INTERVAL_S, keep_empty=False)
        self._ctx = ctx
        self._base: dict[str, Any] | None = None

    def write(self, sample: Sample) -> None:
        """Buffer one row; flush a row group when the buffer is full or old enough."""
        if self._base is None:  # the context is read once, when the first row arrives
            self._base = cell_columns(self._ctx() if callable(self._ctx) else self._ctx)
        self.append(to_row(self._base, sample))


def write_cell(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write one cell's rows at once (replacing an earlier file of the same cell); the path
    comes from :meth:`kafkalab.store.LabData.cell_file`."""
    return write_parquet(path, pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA))


def read_cell(path: Path) -> pa.Table:
    """One cell's rows (a file written by :class:`CellWriter` or :func:`write_cell`)."""
    return pq.read_table(path)


def read_samples(data_dir: Path, run_id: str | None = None) -> pa.Table:
    """All samples (or one run's) as an Arrow table, with the partition columns.

    A file that is not valid Parquet is an error naming it (never silently skipped: its
    rows would vanish from every statistic). Temporary files of cells being written start
    with ``.`` and are not read.

    Raises:
        RunError: a samples file is corrupt or unreadable.
    """
    import pyarrow.dataset as ds

    from kafkalab.errors import RunError

    root = LabData(data_dir).samples_dir
    if not root.exists():
        return SAMPLE_SCHEMA.empty_table()
    part = pa.schema([("run_date", pa.string()), ("run_id", pa.string())])
    files = (LabData(data_dir).run_sample_files(run_id) if run_id
             else sorted(p for p in root.glob("run_date=*/run_id=*/part-*.parquet")))
    if not files:
        return SAMPLE_SCHEMA.empty_table()
    for f in files:
        try:
            pq.read_metadata(f)
        except (OSError, pa.ArrowException) as exc:
            raise RunError(f"samples file {f} is unreadable ({exc}); move it aside to read the rest") from None
    # The full schema: files from before schema 2 lack its new columns and read them as null.
    full = pa.schema([*SAMPLE_SCHEMA, *part])
    dataset = ds.dataset([str(f) for f in files], format="parquet", schema=full,
                         partitioning=ds.partitioning(part, flavor="hive"),
                         partition_base_dir=str(root))
    return dataset.to_table()


@dataclass
class Manifest:
    """The run manifest (docs/metrics-schema.md, "Run manifest")."""

    run_id: str
    started_at: str
    command: str
    workload: dict[str, Any]
    profiles: dict[str, Any]
    scenarios: list[str]
    payloads: list[str]
    cluster: dict[str, Any]
    versions: dict[str, str]
    status: str = "running"
    ended_at: str | None = None
    user: str = field(default_factory=lambda: _user())
    host: str = field(default_factory=socket.gethostname)
    cells: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    schema_version: int = SCHEMA_VERSION
    owner: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    client_settings: dict[str, dict[str, str]] = field(default_factory=dict)
    broker_settings: dict[str, Any] | None = None
    """The broker settings in effect when the run started, read through the Admin API
    (:func:`kafkalab.cluster.broker_config.broker_settings`: ``broker_id``, ``settings``,
    ``sources``); None where they cannot be read (Kafka 0.9, no cluster)."""
    stale_outputs: list[str] = field(default_factory=list)
    reopened_at: list[str] = field(default_factory=list)
    kind: str = "latency"
    """``latency`` (closed-loop scenarios, ``samples/``), ``load`` (open-loop cells, ``load/``)
    or ``faults`` (broker-fault trials, ``faults/``)."""
    logical_date: str | None = None
    """The Airflow logical date of the DAG run that made the run (ISO 8601, UTC): the night it
    measures, which a back-filled run is plotted at; ``run_after`` for a manual run without
    one; None for a run the CLI made."""

    @property
    def run_date(self) -> str:
        return self.started_at[:10]

    @classmethod
    def load(cls, data_dir: Path, run_id: str) -> Manifest:
        """Read a run's manifest back."""
        from kafkalab.errors import RunError

        lab = LabData(data_dir)
        path = lab.manifest_path(run_id)
        doc = read_json(path)
        if not isinstance(doc, dict):
            raise RunError(f"no run {run_id} in {data_dir} (no {path.name})")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in doc.items() if k in known})

    def close(self, part_statuses: list[str], error: str | None) -> None:
        """End a load or fault run from its parts' statuses (cells, trials): ``complete``
        when every part completed and nothing went wrong, ``failed`` when none did, else
        ``incomplete``."""
        self.ended_at = utc_now_iso()
        if error is None and part_statuses and all(s == "complete" for s in part_statuses):
            self.status = "complete"
        elif not any(s == "complete" for s in part_statuses):
            self.status = "failed"
        else:
            self.status = "incomplete"
        self.error = error

    def write(self, data_dir: Path) -> Path:
        """Write (replace) this manifest atomically under ``runs/<run_id>.json``."""
        return LabData(data_dir).write_manifest(asdict(self))


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return os.environ.get("USER", "unknown")


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat()


def load_avg() -> list[float]:
    """The 1, 5 and 15-minute load averages (empty where the OS has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def environment() -> dict[str, Any]:
    """The machine a run measures on: CPU count, load average at the start, platform."""
    return {"cpu_count": os.cpu_count(), "load_avg_start": load_avg(),
            "platform": platform.platform(), "machine": platform.machine()}


JVM_OPTION_ENVS = ("JDK_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS")
"""Environment variables every JVM started from here picks up (``java`` says so on its
standard error, ``Picked up …``)."""


def java_options() -> str | None:
    """The JVM options the environment adds to every JVM (:data:`JVM_OPTION_ENVS`, as
    ``NAME=value`` joined by ``; ``), or ``None``."""
    found = [f"{k}={os.environ[k].strip()}" for k in JVM_OPTION_ENVS if os.environ.get(k, "").strip()]
    return "; ".join(found) or None


def java_version() -> str:
    """The first line of ``java -version`` (``missing`` when there is no Java), past the
    ``Picked up …`` notes of :data:`JVM_OPTION_ENVS`."""
    import shutil
    import subprocess

    java = shutil.which("java")
    if java is None:
        return "missing"
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = [line for line in (out.stderr or out.stdout).strip().splitlines()
             if not line.removeprefix("NOTE: ").startswith("Picked up ")]
    return lines[0] if lines else "unknown"


def runtime_versions(java: bool = False) -> dict[str, str]:
    """Versions of everything that shapes a measurement (``java``: also the JVM's)."""
    from importlib.metadata import PackageNotFoundError, version

    import kafkalab

    out = {"kafkalab": kafkalab.__version__, "python": platform.python_version()}
    # crc32c: kafka-python's CRC-32C of record batches (Kafka 0.11+) in C; "missing" means its
    # pure-Python fallback, ~1.4 s a 10 MB message each way on this machine
    for pkg in ("confluent-kafka", "kafka-python", "crc32c", "requests", "pyarrow"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "missing"
    try:
        import confluent_kafka

        out["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    if java:
        out["java"] = java_version()
        options = java_options()
        if options:
            out["java_options"] = options
    return out
