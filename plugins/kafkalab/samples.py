"""Raw samples and run manifests on disk (schema: docs/metrics-schema.md).

One Parquet file per measured cell (scenario × payload × profile) under
``samples/run_date=<d>/run_id=<id>/``, written to a temporary name and renamed, so a run
that dies half-way keeps every cell it finished and a re-run of a cell replaces its file.
"""

from __future__ import annotations

import getpass
import os
import platform
import socket
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafkalab.store import LabData, atomic_write, read_json

SCHEMA_VERSION = 1

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


def to_rows(ctx: CellContext, samples: Iterable[Sample]) -> list[dict[str, Any]]:
    """Flatten samples of one cell into dict rows following SAMPLE_SCHEMA."""
    base = asdict(ctx)
    base.pop("run_id")
    rows = []
    skip = {"e2e_latency_ms_override"}
    for s in samples:
        row = dict(base)
        row.update({f.name: getattr(s, f.name) for f in fields(s) if f.name not in skip})
        row["publish_latency_ms"] = s.publish_latency_ms
        row["e2e_latency_ms"] = s.e2e_latency_ms
        rows.append(row)
    return rows


def write_cell(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write one cell's rows atomically (replacing an earlier file of the same cell); the
    path comes from :meth:`kafkalab.store.LabData.cell_file`."""
    table = pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return atomic_write(path, sink.getvalue().to_pybytes())


def read_samples(data_dir: Path, run_id: str | None = None) -> pa.Table:
    """All samples (or one run's) as an Arrow table, with the partition columns."""
    import pyarrow.dataset as ds

    root = LabData(data_dir).samples_dir
    if not root.exists():
        return SAMPLE_SCHEMA.empty_table()
    part = pa.schema([("run_date", pa.string()), ("run_id", pa.string())])
    dataset = ds.dataset(
        root, format="parquet", partitioning=ds.partitioning(part, flavor="hive"),
        exclude_invalid_files=True,
    )
    filt = ds.field("run_id") == run_id if run_id else None
    return dataset.to_table(filter=filt)


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


def runtime_versions() -> dict[str, str]:
    """Versions of everything that shapes a measurement."""
    from importlib.metadata import PackageNotFoundError, version

    import kafkalab

    out = {"kafkalab": kafkalab.__version__, "python": platform.python_version()}
    for pkg in ("confluent-kafka", "kafka-python", "requests", "pyarrow"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "missing"
    try:
        import confluent_kafka

        out["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    return out
