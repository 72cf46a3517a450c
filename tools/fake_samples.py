"""Fake raw-sample rows (made up, never measured) that follow ``docs/metrics-schema.md``
(samples schema 2).

Used by the Spark tests and the Spark-vs-pandas benchmark to fill a samples directory with
as many rows as wanted. (Not to be confused with the lab's *random payload bodies*,
``kafkalab.payloads.RANDOM_BODY_SIZES_BYTES``, which are what a real run sends.) Everything
is deterministic for a given ``seed``. Generation is vectorised (numpy) and chunked per cell,
so tens of millions of rows can be written without holding them all in memory.

Scenario names, clients, kinds and loop modes come from
:data:`kafkalab.catalog.CATALOG`. Shape of the data (defaults: every scenario of the
catalog):

* message cells: the per-message scenarios × payloads × profiles; the first few messages of
  every cell are warm-up rows. Kafka cells of the ``latency`` profile have a few ``lost``
  and ``error`` rows (sent-and-failed), every Kafka cell a few ``late`` and ``duplicate``
  rows; ``rest`` cells of the ``latency`` profile have a few ``error`` rows (timeouts; REST
  has no broker ack, so no publish latency). The ``durability`` profile never loses or
  fails a message, so the data passes validation. The losses are enough to censor the
  p99.9 of a cell of 1,000+ messages;
* ``first_message`` probes (``subscribe`` and ``assign``, the order alternating from probe
  to probe) for the Kafka client scenarios: the run's very first probe is the cold one
  (``cold_start``) and one probe of the second Kafka cell is lost;
* ``tool_summary`` rows (``avg``, ``p50``, ``p99``, ``p99.9``) for the summary-only scenario
  (``jvm-e2e``);
* the per-cell constants of schema 2 (``planned_messages``, ``message_timeout_ms``,
  ``broker_count``, ``client_settings``, ``loop_mode``); ``*_ts_ns`` on a made-up monotonic
  clock, ``wall_ts_ns`` the run's wall time.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kafkalab.catalog import (
    KAFKA_CLIENT_SCENARIOS,
    MESSAGE_SCENARIOS,
    SCENARIOS,
    ScenarioSpec,
    scenario_spec,
)
from kafkalab.cluster.flavors import DEFAULT_EMBEDDED
from kafkalab.run_ids import run_id_time
from kafkalab.samples import SAMPLE_SCHEMA, settings_json
from kafkalab.store import LabData, atomic_file

__all__ = [
    "PARTITION_COLUMNS",
    "SAMPLES_ARROW_SCHEMA",
    "SAMPLE_COLUMNS",
    "fake_cell_frames",
    "make_fake_samples",
    "to_arrow_table",
    "write_fake_samples",
]

#: Partition columns of the raw samples: stored in the directory names only.
PARTITION_COLUMNS: tuple[str, ...] = ("run_date", "run_id")

#: Arrow schema of the raw samples with the partition columns first: the file schema of
#: :mod:`kafkalab.samples` (the one definition) plus ``run_id`` and ``run_date``.
SAMPLES_ARROW_SCHEMA: pa.Schema = pa.schema(
    [("run_id", pa.string()), ("run_date", pa.string()), *SAMPLE_SCHEMA]
)

SAMPLE_COLUMNS: tuple[str, ...] = tuple(SAMPLES_ARROW_SCHEMA.names)

_PANDAS_DTYPES: dict[str, str] = {
    "payload_bytes": "int64",
    "broker_is_emulator": "bool",
    "partition": "Int32",
    "offset": "Int64",
    "seq": "int64",
    "is_warmup": "bool",
    "send_ts_ns": "Int64",
    "ack_ts_ns": "Int64",
    "receive_ts_ns": "Int64",
    "publish_latency_ms": "float64",
    "e2e_latency_ms": "float64",
    "round_trip_ms": "float64",
    "assign_delay_ms": "float64",
    "first_record_delay_ms": "float64",
    "latency_resolution_ms": "float64",
    "wall_ts_ns": "Int64",
    "cold_start": "boolean",
    "planned_messages": "int64",
    "message_timeout_ms": "float64",
    "broker_count": "Int32",
}

_FAKE_CLIENT_VERSIONS: dict[str, str] = {
    "rest": "2.32.3",
    "kafka-python": "3.0.12",
    "confluent-kafka": "2.16.1",
    "confluent-kafka-serial": "2.16.1",
    "jvm-e2e": "0.9.0.1",
}
"""``client_version`` of the fake rows per scenario: fixed, so the rows do not depend on what is
installed (a scenario added to the catalog later gets :data:`_UNKNOWN_VERSION`)."""
_UNKNOWN_VERSION = "0.0.0"

_KAFKA_FLAVOR, _KAFKA_VERSION, _KAFKA_BROKERS = DEFAULT_EMBEDDED.name, DEFAULT_EMBEDDED.version, 3
"""The fake rows' cluster: the lab's default embedded flavor, three brokers."""

_HARNESS_RESOLUTION_MS = 1e-6
_TOOL_PCT_RESOLUTION_MS = 1.0
_TOOL_AVG_RESOLUTION_MS = 1e-4
_LATE_TIMEOUT_MS = 2_000.0
"""``message_timeout_ms`` of every fake cell: a late message arrived after it."""
_TOOL_PLANNED_MESSAGES = 1_000
"""``planned_messages`` of the summary-only tool's cells (it writes no message rows)."""
_MONOTONIC_START_NS = 86_400 * 1_000_000_000
"""The made-up CLOCK_MONOTONIC reading at the run's start (one day of uptime)."""
_TOOL_STATS: tuple[str, ...] = ("avg", "p50", "p99", "p99.9")
"""The statistics the summary-only tool prints (``kafkalab.scenarios.jvm_e2e``)."""


@dataclass(frozen=True)
class _Cell:
    scenario: str
    payload: str
    profile: str
    n_messages: int


@dataclass(frozen=True)
class _Clock:
    """The run's two clocks: ``mono_ns`` (intervals) and ``wall_ns`` (labels) at its start."""

    mono_ns: int
    wall_ns: int

    def wall(self, mono: np.ndarray) -> np.ndarray:
        """The wall-clock label of monotonic stamps ``mono``."""
        return mono - self.mono_ns + self.wall_ns


def _run_start(run_id: str, seed: int) -> dt.datetime:
    """Start of the run: parsed from a ``YYYYMMDDTHHMMSSZ-...`` run id, else a fixed date."""
    started = run_id_time(run_id)
    if started is not None:
        return started
    return dt.datetime(2026, 11, 22, 1, 2, 3, tzinfo=dt.UTC) + dt.timedelta(seconds=seed)


def _payload_bytes(payload: str) -> int:
    """The nominal size of a payload name: ``1kb`` -> 1024, ``1mb`` -> 1048576."""
    m = re.fullmatch(r"(\d+)(b|kb|mb)", payload.lower())
    if not m:
        raise ValueError(f"unknown payload name {payload!r} (expected e.g. 1kb, 1mb)")
    return int(m.group(1)) * {"b": 1, "kb": 1024, "mb": 1024 * 1024}[m.group(2)]


def _cluster(spec: ScenarioSpec) -> tuple[str, str, bool, int | None]:
    """(cluster_flavor, broker_version, broker_is_emulator, broker_count) of a scenario."""
    if not spec.uses_kafka:
        return "http", "http", False, None
    return _KAFKA_FLAVOR, _KAFKA_VERSION, False, _KAFKA_BROKERS


def _client_settings(spec: ScenarioSpec, profile: str) -> str:
    """A made-up ``client_settings`` value (JSON, sorted keys) for a scenario and profile;
    the tool's are its own hard-coded ones, whatever the profile."""
    if not spec.uses_kafka:
        return settings_json({"timeout_s": _LATE_TIMEOUT_MS / 1000})
    if not spec.per_message:
        return settings_json({"acks": "1", "fetch.max.wait.ms": "0", "linger.ms": "0"})
    acks = "all" if profile == "durability" else "1"
    return settings_json({"acks": acks, "fetch.wait.max.ms": "10", "linger.ms": "0"})


def _plan_cells(
    n_rows: int,
    scenarios: Sequence[str],
    payloads: Sequence[str],
    profiles: Sequence[str],
    first_message_probes: int,
) -> tuple[list[_Cell], int]:
    """Split ``n_rows`` into message cells; returns the cells and the fixed overhead rows."""
    msg_scenarios = [s for s in scenarios if s in MESSAGE_SCENARIOS]
    n_kafka = sum(1 for s in scenarios if s in KAFKA_CLIENT_SCENARIOS)
    n_summary = sum(1 for s in scenarios if not scenario_spec(s).per_message)
    per_combo = len(payloads) * len(profiles)
    overhead = per_combo * (n_kafka * 2 * first_message_probes + n_summary * len(_TOOL_STATS))
    n_cells = len(msg_scenarios) * per_combo
    budget = n_rows - overhead
    if n_cells == 0:
        if budget != 0:
            raise ValueError(f"n_rows must be {overhead} without message scenarios")
        return [], overhead
    if budget < n_cells:
        raise ValueError(f"n_rows must be at least {overhead + n_cells} for this mix")
    base, extra = divmod(budget, n_cells)
    cells = []
    i = 0
    for scenario in msg_scenarios:
        for payload in payloads:
            for profile in profiles:
                cells.append(_Cell(scenario, payload, profile, base + (1 if i < extra else 0)))
                i += 1
    return cells, overhead


def _const(n: int, value: object) -> np.ndarray:
    arr = np.empty(n, dtype=object)
    arr[:] = value
    return arr


def _common_columns(
    n: int, run_id: str, run_date: str, kind: str, scenario: str, payload: str, profile: str,
    workload: str, planned: int,
) -> dict[str, object]:
    """The columns every row of a cell shares (per-cell constants included); ``loop_mode``
    is the scenario's except on ``first_message`` rows (null)."""
    spec = scenario_spec(scenario)
    flavor, broker_version, emulator, brokers = _cluster(spec)
    return {
        "run_id": _const(n, run_id),
        "run_date": _const(n, run_date),
        "sample_kind": _const(n, kind),
        "scenario": _const(n, scenario),
        "client": _const(n, spec.client),
        "client_version": _const(n, _FAKE_CLIENT_VERSIONS.get(scenario, _UNKNOWN_VERSION)),
        "profile": _const(n, profile),
        "workload": _const(n, workload),
        "payload": _const(n, payload),
        "payload_encoding": _const(n, "raw"),
        "payload_bytes": np.full(n, _payload_bytes(payload), dtype=np.int64),
        "cluster_flavor": _const(n, flavor),
        "broker_version": _const(n, broker_version),
        "broker_is_emulator": np.full(n, emulator, dtype=bool),
        "topic": _const(n, f"kafkalab-{payload}-{profile}" if spec.uses_kafka else None),
        "loop_mode": _const(n, None if kind == "first_message" else spec.loop_mode),
        "planned_messages": np.full(n, planned, dtype=np.int64),
        "message_timeout_ms": np.full(n, _LATE_TIMEOUT_MS),
        "broker_count": _const(n, brokers),
        "client_settings": _const(n, _client_settings(spec, profile)),
    }


def _finish(cols: dict[str, object], n: int) -> pd.DataFrame:
    """Fill missing columns with nulls, order them and apply the documented dtypes."""
    data: dict[str, object] = {}
    for name in SAMPLE_COLUMNS:
        if name in cols:
            data[name] = cols[name]
        elif _PANDAS_DTYPES.get(name, "object") == "float64":
            data[name] = np.full(n, np.nan)
        else:
            data[name] = _const(n, None)
    df = pd.DataFrame(data)
    for name, dtype in _PANDAS_DTYPES.items():
        if str(df[name].dtype) != dtype:
            df[name] = df[name].astype(dtype)
    return df


def _message_chunk(
    rng: np.random.Generator,
    cell: _Cell,
    seq_lo: int,
    seq_hi: int,
    n_dups: int,
    warmup: int,
    base: dict[str, float],
    force_anomalies: bool,
    run_id: str,
    run_date: str,
    workload: str,
    cell_start_ns: int,
    clock: _Clock,
    planned: int,
) -> pd.DataFrame:
    """Rows for the distinct seqs ``[seq_lo, seq_hi)`` of a cell plus ``n_dups`` duplicates;
    ``cell_start_ns`` is on the monotonic clock; ``planned``: the cell's non-warm-up
    messages."""
    n = seq_hi - seq_lo
    seq = np.arange(seq_lo, seq_hi, dtype=np.int64)
    is_warmup = seq < warmup
    status = _const(n, "ok")
    measured = np.flatnonzero(~is_warmup)

    def pick(rate: float) -> np.ndarray:
        k = round(rate * n)
        if force_anomalies and rate > 0 and len(measured) >= 50:
            k = max(k, 1)
        free = measured[status[measured] == "ok"]
        k = min(k, len(free))
        return rng.choice(free, size=k, replace=False) if k else np.empty(0, dtype=np.int64)

    if cell.profile != "durability":
        status[pick(base["lost_rate"])] = "lost"
        status[pick(base["error_rate"])] = "error"
    status[pick(base["late_rate"])] = "late"

    kafka = scenario_spec(cell.scenario).uses_kafka
    interval_ns = int(base["interval_ms"] * 1e6)
    send = cell_start_ns + seq * interval_ns + rng.integers(0, max(interval_ns // 10, 1), n)
    pub_ms = base["publish_ms"] * rng.lognormal(0.0, 0.25, n)
    e2e_ms = base["e2e_ms"] * rng.lognormal(0.0, 0.3, n)
    late = status == "late"
    e2e_ms[late] = _LATE_TIMEOUT_MS + rng.uniform(1.0, 500.0, int(late.sum()))
    pub_ns = np.maximum((pub_ms * 1e6).astype(np.int64), 1)
    e2e_ns = np.maximum((e2e_ms * 1e6).astype(np.int64), pub_ns + 1)
    ack = (send + pub_ns).astype(object)
    recv = (send + e2e_ns).astype(object)
    received = (status == "ok") | late
    recv[~received] = None
    err = status == "error"
    if not kafka:  # one HTTP request: no broker ack, so no publish latency
        ack[:] = None
    ack[err] = None
    publish_latency = np.where(err | (not kafka), np.nan, pub_ns / 1e6)
    e2e_latency = np.where(received, e2e_ns / 1e6, np.nan)
    error_text = _const(n, None)
    error_text[err] = (
        "KafkaError{code=_MSG_TIMED_OUT,val=-192,str=\"Local: Message timed out\"}" if kafka
        else f"ReadTimeout: no response within {_LATE_TIMEOUT_MS / 1000:g} s"
    )

    partition = (seq % 3).astype(np.int32).astype(object) if kafka else _const(n, None)
    offset = (seq // 3).astype(object) if kafka else _const(n, None)
    if kafka:
        partition[~received] = None
        offset[~received] = None
    round_trip = (
        np.where(received, e2e_latency + rng.uniform(0.05, 0.5, n), np.nan)
        if not kafka else np.full(n, np.nan)
    )

    cols = _common_columns(n, run_id, run_date, "message", cell.scenario, cell.payload,
                           cell.profile, workload, planned)
    cols.update(
        seq=seq, is_warmup=is_warmup, status=status, error=error_text,
        send_ts_ns=send.astype(object), ack_ts_ns=ack, receive_ts_ns=recv,
        wall_ts_ns=clock.wall(send).astype(object),
        publish_latency_ms=publish_latency, e2e_latency_ms=e2e_latency,
        round_trip_ms=round_trip, partition=partition, offset=offset,
        latency_resolution_ms=np.full(n, _HARNESS_RESOLUTION_MS),
    )
    df = _finish(cols, n)

    candidates = np.flatnonzero(received & ~is_warmup)
    n_dups = min(n_dups, len(candidates))
    if n_dups:
        src = rng.choice(candidates, size=n_dups, replace=False)
        dup = df.iloc[src].copy()
        extra_ns = rng.integers(1_000_000, 50_000_000, n_dups)
        dup["receive_ts_ns"] = (dup["receive_ts_ns"].astype("int64") + extra_ns).astype("Int64")
        dup["e2e_latency_ms"] = (
            dup["receive_ts_ns"].astype("int64") - dup["send_ts_ns"].astype("int64")
        ) / 1e6
        dup["status"] = "duplicate"
        if kafka:
            dup["offset"] = (dup["offset"].astype("int64") + 10_000_000).astype("Int64")
        df = pd.concat([df, dup], ignore_index=True).sort_values("seq", kind="stable")
        df = df.reset_index(drop=True)
    return df


def _first_message_rows(
    rng: np.random.Generator, scenario: str, payload: str, profile: str, probes: int,
    run_id: str, run_date: str, workload: str, start_ns: int, planned: int, clock: _Clock,
    *, cold_first: bool, lose_one: bool,
) -> pd.DataFrame:
    """``probes`` probes × both modes of one cell, the mode order alternating (probe 0:
    subscribe first; probe 1: assign first; ...). ``cold_first``: probe 0 is the cold one
    (it created ``__consumer_offsets``); ``lose_one``: the last probe's assign mode is lost."""
    n = 2 * probes
    probe = np.repeat(np.arange(probes, dtype=np.int64), 2)
    first, second = np.array(["subscribe", "assign"], dtype=object), np.array(
        ["assign", "subscribe"], dtype=object)
    modes = np.concatenate([first if p % 2 == 0 else second for p in range(probes)]) \
        if probes else np.empty(0, dtype=object)
    subscribe = modes == "subscribe"
    assign_delay = np.where(subscribe, rng.uniform(2900.0, 3100.0, n), rng.uniform(1.0, 5.0, n))
    first_record = assign_delay + rng.uniform(5.0, 20.0, n)
    cold = np.zeros(n, dtype=bool)
    if cold_first and n:
        cold[0] = True                                     # probe 0, first mode
        first_record[0] += 1_500.0                         # the offsets topic was created
    lost = np.zeros(n, dtype=bool)
    if lose_one and n:
        lost[np.flatnonzero((probe == probes - 1) & ~subscribe)[0]] = True
    cols = _common_columns(n, run_id, run_date, "first_message", scenario, payload, profile,
                           workload, planned)
    send = start_ns + np.arange(n, dtype=np.int64) * 5_000_000_000
    recv = (send + (first_record * 1e6).astype(np.int64)).astype(object)
    recv[lost] = None
    first_record[lost] = np.nan
    offset = np.zeros(n, dtype=np.int64).astype(object)
    offset[lost] = None
    cols.update(
        partition=np.zeros(n, dtype=np.int32).astype(object), offset=offset,
        seq=probe, is_warmup=np.zeros(n, dtype=bool),
        status=np.where(lost, "lost", "ok").astype(object),
        send_ts_ns=send.astype(object), receive_ts_ns=recv,
        wall_ts_ns=clock.wall(send).astype(object),
        e2e_latency_ms=np.where(lost, np.nan, first_record),
        consumer_mode=modes, assign_delay_ms=assign_delay, first_record_delay_ms=first_record,
        cold_start=cold, latency_resolution_ms=np.full(n, _HARNESS_RESOLUTION_MS),
    )
    return _finish(cols, n)


def _tool_summary_rows(
    rng: np.random.Generator, scenario: str, payload: str, profile: str, run_id: str,
    run_date: str, workload: str,
) -> pd.DataFrame:
    n = len(_TOOL_STATS)
    base = 2.0 if _payload_bytes(payload) < 100_000 else 12.0
    avg = round(base * rng.uniform(0.9, 1.1), 4)
    values = [avg, float(int(base)), float(int(base * 3)), float(int(base * 6))]
    cols = _common_columns(n, run_id, run_date, "tool_summary", scenario, payload, profile,
                           workload, _TOOL_PLANNED_MESSAGES)
    cols.update(
        seq=np.zeros(n, dtype=np.int64), is_warmup=np.zeros(n, dtype=bool),
        status=_const(n, "ok"), e2e_latency_ms=np.array(values, dtype=float),
        statistic=np.array(_TOOL_STATS, dtype=object),
        latency_resolution_ms=np.array([_TOOL_AVG_RESOLUTION_MS] + [_TOOL_PCT_RESOLUTION_MS] * 3),
    )
    return _finish(cols, n)


def fake_cell_frames(
    n_rows: int,
    run_id: str,
    seed: int = 0,
    *,
    run_date: str | None = None,
    scenarios: Sequence[str] = SCENARIOS,
    payloads: Sequence[str] = ("1kb", "1mb"),
    profiles: Sequence[str] = ("latency", "durability"),
    workload: str = "baseline",
    first_message_probes: int = 2,
    chunk_rows: int = 1_000_000,
) -> Iterator[tuple[tuple[str, str, str], pd.DataFrame]]:
    """Yield ``((scenario, payload, profile), chunk)`` pairs that together hold ``n_rows`` rows.

    A cell may come in several chunks of at most about ``chunk_rows`` rows (same key).
    """
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        raise ValueError(f"unknown scenarios: {sorted(unknown)}")
    start = _run_start(run_id, seed)
    run_date = run_date or start.strftime("%Y-%m-%d")
    clock = _Clock(mono_ns=_MONOTONIC_START_NS + seed * 1_000_000_000,
                   wall_ns=int(start.timestamp()) * 1_000_000_000)
    rng = np.random.default_rng(seed)
    cells, _ = _plan_cells(n_rows, scenarios, payloads, profiles, first_message_probes)
    planned: dict[tuple[str, str, str], int] = {}
    cell_offset_ns = 0
    for cell in cells:
        small = _payload_bytes(cell.payload) < 100_000
        over_http = not scenario_spec(cell.scenario).uses_kafka
        base = {
            "interval_ms": 1.0 if small else 10.0,
            "publish_ms": 1.5 if small else 8.0,
            "e2e_ms": (3.0 if small else 20.0) * (1.5 if over_http else 1.0)
            * (1.3 if cell.profile == "durability" else 1.0),
            # REST: no broker, so nothing is lost, late or duplicated; timeouts are errors
            "lost_rate": 0.0 if over_http else 0.002,
            "error_rate": 0.0025 if over_http else 0.0005,
            "late_rate": 0.0 if over_http else 0.001,
        }
        m = cell.n_messages
        n_dups = max(1, round(0.001 * m)) if m >= 50 and not over_http else 0
        distinct = m - n_dups
        warmup = max(1, min(10, distinct // 20)) if distinct >= 2 else 0
        planned[(cell.scenario, cell.payload, cell.profile)] = distinct - warmup
        cell_start = clock.mono_ns + cell_offset_ns
        cell_offset_ns += int(distinct * base["interval_ms"] * 1e6) + 60_000_000_000
        lo = 0
        dups_done = 0
        while lo < distinct:
            hi = min(distinct, lo + chunk_rows)
            dups_to = round(n_dups * hi / distinct)
            yield (cell.scenario, cell.payload, cell.profile), _message_chunk(
                rng, cell, lo, hi, dups_to - dups_done, warmup, base, lo == 0,
                run_id, run_date, workload, cell_start, clock, distinct - warmup,
            )
            dups_done = dups_to
            lo = hi
    probe_cells = 0
    for scenario in scenarios:
        for payload in payloads:
            for profile in profiles:
                if scenario in KAFKA_CLIENT_SCENARIOS:
                    yield (scenario, payload, profile), _first_message_rows(
                        rng, scenario, payload, profile, first_message_probes, run_id,
                        run_date, workload, clock.mono_ns,
                        planned.get((scenario, payload, profile), 0), clock,
                        cold_first=probe_cells == 0, lose_one=probe_cells == 1,
                    )
                    probe_cells += 1
                elif not scenario_spec(scenario).per_message:
                    yield (scenario, payload, profile), _tool_summary_rows(
                        rng, scenario, payload, profile, run_id, run_date, workload
                    )


def make_fake_samples(
    n_rows: int,
    run_id: str,
    seed: int = 0,
    **kwargs: object,
) -> pd.DataFrame:
    """Return ``n_rows`` raw samples of one run as a pandas DataFrame (all documented columns).

    Keyword arguments are those of :func:`fake_cell_frames` (``run_date``,
    ``scenarios``, ``payloads``, ``profiles``, ``workload``, ``first_message_probes``).
    Nullable integers use pandas' ``Int32``/``Int64`` dtypes; null floats are NaN.
    """
    cells = fake_cell_frames(n_rows, run_id, seed, **kwargs)  # type: ignore[arg-type]
    frames = [df for _, df in cells]
    if not frames:
        return _finish({}, 0)
    return pd.concat(frames, ignore_index=True)


def to_arrow_table(df: pd.DataFrame, *, include_partitions: bool = True) -> pa.Table:
    """Convert samples to Arrow with the documented types (NaN becomes null)."""
    schema = SAMPLES_ARROW_SCHEMA
    if not include_partitions:
        schema = pa.schema([f for f in schema if f.name not in PARTITION_COLUMNS])
    return pa.Table.from_pandas(df[schema.names], schema=schema, preserve_index=False)


def write_fake_samples(
    data_dir: str | os.PathLike[str],
    n_rows: int,
    run_id: str,
    seed: int = 0,
    **kwargs: object,
) -> list[Path]:
    """Write ``n_rows`` fake samples of one run into the lab data directory ``data_dir``.

    Files: one per cell at :meth:`kafkalab.store.LabData.cell_file`
    (``samples/run_date=<d>/run_id=<id>/part-<scenario>-<payload>-<profile>.parquet``); the
    partition columns live in the path only. The run's existing samples files are removed
    first. Each file is streamed chunk by chunk (it never sits whole in memory) through
    :func:`kafkalab.store.atomic_file`: it appears whole once every chunk is written, and on
    failure no temporary file is left. Returns the files written.
    """
    lab = LabData(data_dir)
    file_schema = pa.schema([f for f in SAMPLES_ARROW_SCHEMA if f.name not in PARTITION_COLUMNS])
    writers: dict[tuple[str, str, str], pq.ParquetWriter] = {}
    written: list[Path] = []
    cleared = False
    # each file through store.atomic_file: whole or not at all; the ExitStack closes each
    # Parquet writer before its file is renamed into place (or removed, on failure)
    with contextlib.ExitStack() as files:
        for key, df in fake_cell_frames(n_rows, run_id, seed, **kwargs):  # type: ignore[arg-type]
            if not cleared:
                lab.clear_run_samples(run_id)
                cleared = True
            if key not in writers:
                final = lab.cell_file(str(df["run_date"].iloc[0]), run_id, *key)
                sink = files.enter_context(atomic_file(final))
                writers[key] = pq.ParquetWriter(sink, file_schema)
                files.callback(writers[key].close)
                written.append(final)
            writers[key].write_table(to_arrow_table(df, include_partitions=False))
    return written


def write_cli_manifest(data_dir: str | os.PathLike[str], run_id: str, *,
                       started_at: str = "2026-11-22T03:04:05+00:00",
                       ended_at: str | None = "2026-11-22T03:06:05+00:00",
                       command: str = "kafkalab run") -> None:
    """The manifest of a run as ``kafkalab run`` leaves it: complete, never aggregated (its
    aggregates, validation, drift records and report all stale), for samples written by
    :func:`write_fake_samples`."""
    doc: dict[str, object] = {"schema_version": 2, "run_id": run_id, "status": "complete",
                              "started_at": started_at, "command": command,
                              "stale_outputs": ["aggregates", "validation", "drift", "report"]}
    if ended_at is not None:
        doc["ended_at"] = ended_at
    LabData(data_dir).write_manifest(doc)
