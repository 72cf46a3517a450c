"""A fake load run (made up, never measured) in the layout of the "load samples" dataset.

Writes what the load engine writes for one run (``docs/metrics-schema.md``, "Load samples";
``/tmp/issue8/contract.md``)::

    <data_dir>/load/run_date=<d>/run_id=<id>/cell=<cell_id>/
        sends.parquet  receipts-NNN.parquet  lag-NNN.parquet  cell.json
    <data_dir>/runs/<run_id>.json            manifest, kind "load"

with the faults a test wants, each controlled per cell (:class:`FakeLoadCell`): failed,
indeterminate and unsent messages, messages a consumer never receives (in runs, so the gap
count is known), messages received after the producer stopped, duplicates (in and out of the
warm-up), failed messages that arrive anyway, consumers that receive nothing, a consumer
pause. Everything is deterministic for a given ``seed`` and vectorised (numpy), so a cell of
10⁶ receipts takes about a second.

Used by the Spark tests (``tests/spark/test_*load*.py``) and by anyone who needs a load run
without a broker::

    .venv/bin/python -m tools.fake_load_samples --data-dir /tmp/lab --run-id RUN \
        --consumers 5 --rate 200 --duration 5 [--missing 1:3,2] [--pause-at 2 --pause-for 1]

Timing model (all on a made-up CLOCK_MONOTONIC): message i is intended at
``t0 + i/R``; sent 20–120 µs later (publish delay); appended to the log 0.3 ms after the send
and acked 0.2 ms after that; consumer c receives it ``e2e_base_ms`` + an exponential
(mean 1 ms) after the send. A paused consumer receives nothing during the pause and catches
up afterwards at ten times the produce rate.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from kafkalab.cluster.flavors import DEFAULT_EMBEDDED
from kafkalab.load.spec import LoadCellSpec
from kafkalab.run_ids import run_id_time
from kafkalab.store import LabData, atomic_file, atomic_write_json, safe_name

__all__ = [
    "LAG_SCHEMA",
    "RECEIPTS_SCHEMA",
    "SENDS_SCHEMA",
    "FakeLoadCell",
    "main",
    "write_fake_load_run",
]

#: The files' schemas (the contract's column lists, in order).
SENDS_SCHEMA = pa.schema([
    ("seq", pa.int64()), ("producer_id", pa.int32()), ("is_warmup", pa.bool_()),
    ("intended_ts_ns", pa.int64()), ("send_ts_ns", pa.int64()), ("ack_ts_ns", pa.int64()),
    ("outcome", pa.string()), ("error", pa.string()), ("partition", pa.int32()),
    ("offset", pa.int64()), ("publish_delay_ms", pa.float64()),
    ("ack_latency_ms", pa.float64()),
])
RECEIPTS_SCHEMA = pa.schema([
    ("consumer", pa.int32()), ("shard", pa.int32()), ("seq", pa.int64()),
    ("producer_id", pa.int32()), ("partition", pa.int32()), ("offset", pa.int64()),
    ("intended_ts_ns", pa.int64()), ("send_ts_ns", pa.int64()), ("receive_ts_ns", pa.int64()),
    ("e2e_latency_ms", pa.float64()), ("service_e2e_latency_ms", pa.float64()),
    ("duplicate", pa.bool_()), ("after_stop", pa.bool_()), ("is_warmup", pa.bool_()),
])
LAG_SCHEMA = pa.schema([
    ("consumer", pa.int32()), ("shard", pa.int32()), ("partition", pa.int32()),
    ("sample_ts_ns", pa.int64()), ("elapsed_s", pa.float64()),
    ("log_end_offset", pa.int64()), ("position", pa.int64()), ("lag_msgs", pa.int64()),
    ("received_msgs", pa.int64()), ("paused", pa.bool_()),
])

_MONOTONIC_START_NS = 86_400 * 1_000_000_000
"""The made-up CLOCK_MONOTONIC reading at the run's start (one day of uptime)."""
_HEADER_BYTES = 32
"""``kafkalab.payloads.HEADER_BYTES``: the stamp header every message carries."""
_PAYLOAD_BYTES = {"100b": 100, "1kb": 1024, "10kb": 10 * 1024, "100kb": 100 * 1024}
_APPEND_NS = 300_000
_ACK_AFTER_APPEND_NS = 200_000
_CATCH_UP_FACTOR = 10.0
_STOP_AFTER_LAST_SEND_NS = 50_000_000


@dataclass(frozen=True)
class FakeLoadCell:
    """One fake cell: the spec (the fields of ``kafkalab.load.spec.LoadCellSpec``) and its
    faults.

    Fault counts are of *measured* (non-warm-up) messages:

    * ``failed`` / ``indeterminate``: window messages spread evenly over the window whose
      send failed / got no answer; ``unsent``: the last window messages, never sent;
    * ``missing``: consumer -> lengths of the runs of expected messages it never receives
      (``{1: (3, 2)}``: two gaps, five messages); the runs are spread over the window and
      never touch, so the gap count is ``len(runs)``;
    * ``late``: consumer -> how many of its last received expected messages arrive after
      the producer stopped (``after_stop``); ``duplicates``: consumer -> extra receipts of
      its first expected messages; ``warmup_duplicates``: consumer -> extra receipts of
      warm-up messages (not counted by any figure);
    * ``unexpected``: consumer -> how many failed/indeterminate messages it receives anyway;
    * ``silent``: consumers that receive nothing (their lag positions stay null);
    * ``pause_at_s`` / ``pause_for_s``: every consumer stops receiving for that span.
    """

    consumers: int = 2
    rate_msgs_per_s: float = 100.0
    duration_s: float = 3.0
    warmup_s: float = 1.0
    partitions: int = 1
    acks: str = "1"
    client: str = "confluent-kafka"
    payload: str = "1kb"
    encoding: str = "raw"
    profile: str = "default"
    consumer_mode: str = "assign"
    consumers_per_shard: int = 10
    drain_s: float = 2.0
    lag_interval_s: float = 0.5
    pause_at_s: float | None = None
    pause_for_s: float | None = None
    e2e_p99_objective_ms: float = 1000.0
    message_timeout_s: float = 30.0
    status: str = "complete"
    failed: int = 0
    indeterminate: int = 0
    unsent: int = 0
    missing: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    late: Mapping[int, int] = field(default_factory=dict)
    duplicates: Mapping[int, int] = field(default_factory=dict)
    warmup_duplicates: Mapping[int, int] = field(default_factory=dict)
    unexpected: Mapping[int, int] = field(default_factory=dict)
    silent: tuple[int, ...] = ()
    e2e_base_ms: float = 1.0
    client_bound: bool = False
    is_emulator: bool = False

    # -- spec ------------------------------------------------------------------------

    def spec(self) -> dict[str, Any]:
        """The cell's spec as ``cell.json`` holds it (LoadCellSpec's fields)."""
        return {
            "client": self.client, "payload": self.payload, "encoding": self.encoding,
            "profile": self.profile, "acks": self.acks, "consumers": self.consumers,
            "rate_msgs_per_s": float(self.rate_msgs_per_s), "duration_s": float(self.duration_s),
            "warmup_s": float(self.warmup_s), "partitions": self.partitions,
            "consumer_mode": self.consumer_mode,
            "consumers_per_shard": self.consumers_per_shard, "drain_s": float(self.drain_s),
            "pause_at_s": self.pause_at_s, "pause_for_s": self.pause_for_s,
            "lag_interval_s": float(self.lag_interval_s),
            "e2e_p99_objective_ms": float(self.e2e_p99_objective_ms),
            "message_timeout_s": float(self.message_timeout_s),
        }

    def load_spec(self) -> LoadCellSpec:
        """The engine's own spec of this cell: the id and the schedule's counts come from it,
        so the fake run never drifts from what the engine writes."""
        return LoadCellSpec(**self.spec())

    @property
    def cell_id(self) -> str:
        return self.load_spec().cell_id(self.acks)

    @property
    def intended_messages(self) -> int:
        return self.load_spec().intended_messages

    @property
    def warmup_messages(self) -> int:
        return self.load_spec().warmup_messages

    @property
    def shards(self) -> int:
        return self.load_spec().shards

    def shard_of(self, consumer: int) -> int:
        """Consumers are dealt to shards in contiguous blocks (``LoadCellSpec``)."""
        per = math.ceil(self.consumers / self.shards)
        return consumer // per


def _spread(candidates: np.ndarray, k: int) -> np.ndarray:
    """``k`` elements of ``candidates`` spread evenly (deterministic)."""
    if k <= 0:
        return candidates[:0]
    if k > len(candidates):
        raise ValueError(f"asked for {k} of {len(candidates)} messages")
    idx = np.floor((np.arange(k) + 0.5) * len(candidates) / k).astype(np.int64)
    return candidates[idx]


def _runs_positions(n: int, runs: Sequence[int]) -> np.ndarray:
    """Positions in ``range(n)`` of ``runs`` (lengths), spread out and never touching."""
    if not runs:
        return np.zeros(0, dtype=np.int64)
    if sum(runs) + 2 * len(runs) + 1 > n:
        raise ValueError(f"runs {tuple(runs)} do not fit in {n} expected messages")
    out: list[np.ndarray] = []
    slot = n // len(runs)
    for i, length in enumerate(runs):
        start = i * slot + max(1, (slot - length) // 2)
        out.append(np.arange(start, start + length))
    return np.concatenate(out)


def _write(path: Path, columns: Mapping[str, Any], schema: pa.Schema) -> None:
    table = pa.table({n: pa.array(columns[n], type=schema.field(n).type) for n in schema.names},
                     schema=schema)
    with atomic_file(path) as fh:
        pq.write_table(table, fh, compression="zstd")


def _masked(values: np.ndarray, valid: np.ndarray) -> list[Any]:
    """``values`` as a list with None where ``valid`` is false."""
    return [v if ok else None for v, ok in zip(values.tolist(), valid.tolist(), strict=True)]


def _cell_frames(cell: FakeLoadCell, t0_ns: int, rng: np.random.Generator
                 ) -> tuple[dict[str, Any], dict[int, dict[str, Any]], dict[int, dict[str, Any]],
                            dict[str, Any]]:
    """The sends, the receipts and lag rows per shard, and the clocks of one cell."""
    n = cell.intended_messages
    n_warm = cell.warmup_messages
    seq = np.arange(n, dtype=np.int64)
    interval_ns = 1e9 / cell.rate_msgs_per_s
    intended = t0_ns + np.round(seq * interval_ns).astype(np.int64)
    warm = seq < n_warm
    window = seq[~warm]
    partition = (seq % cell.partitions).astype(np.int32)

    # -- outcomes
    outcome = np.full(n, "acked", dtype=object)
    unsent = window[len(window) - cell.unsent:] if cell.unsent else window[:0]
    rest = np.setdiff1d(window, unsent)
    failed = _spread(rest, cell.failed)
    rest = np.setdiff1d(rest, failed)
    indeterminate = _spread(rest[1:], cell.indeterminate)  # never the window's first
    outcome[failed] = "failed"
    outcome[indeterminate] = "indeterminate"
    outcome[unsent] = "unsent"
    sent = outcome != "unsent"
    acked = outcome == "acked"
    publish_delay_ns = rng.integers(20_000, 120_000, size=n)
    send = intended + publish_delay_ns
    append = send + _APPEND_NS
    ack = append + _ACK_AFTER_APPEND_NS
    has_ack = acked | (outcome == "failed")
    error = [("KafkaError{code=_MSG_TIMED_OUT}" if o == "failed" else None) for o in outcome]
    offsets = np.full(n, -1, dtype=np.int64)
    for p in range(cell.partitions):
        mine = acked & (partition == p)
        offsets[mine] = np.arange(int(mine.sum()))
    has_offset = acked & (cell.acks != "0")
    sends = {
        "seq": seq, "producer_id": np.zeros(n, dtype=np.int32), "is_warmup": warm,
        "intended_ts_ns": intended, "send_ts_ns": _masked(send, sent),
        "ack_ts_ns": _masked(ack, has_ack), "outcome": outcome.tolist(), "error": error,
        "partition": partition, "offset": _masked(offsets, has_offset),
        "publish_delay_ms": _masked((send - intended) / 1e6, sent),
        "ack_latency_ms": _masked((ack - send) / 1e6, has_ack),
    }
    # the producer stops once its last answer is in (acks or flush): 50 ms after the last send
    stop_ns = int(send[sent].max()) + _STOP_AFTER_LAST_SEND_NS
    measure_start_ns = int(intended[n_warm])
    drain_end_ns = stop_ns + int(cell.drain_s * 1e9)
    pause: dict[str, int] | None = None
    if cell.pause_at_s is not None and cell.pause_for_s is not None:
        pause = {"start_ns": t0_ns + int(cell.pause_at_s * 1e9),
                 "end_ns": t0_ns + int((cell.pause_at_s + cell.pause_for_s) * 1e9)}

    # -- receipts, per consumer
    expected = window[acked[window] if cell.acks != "0" else sent[window]]
    strays = np.concatenate([failed, indeterminate])  # written to the log anyway, maybe
    receipts: dict[int, list[dict[str, np.ndarray]]] = {s: [] for s in range(cell.shards)}
    first_times: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for c in range(cell.consumers):
        shard = cell.shard_of(c)
        if c in cell.silent:
            continue
        lost = expected[_runs_positions(len(expected), cell.missing.get(c, ()))]
        got = np.concatenate([seq[warm & sent], np.setdiff1d(expected, lost),
                              strays[:cell.unexpected.get(c, 0)]])
        got = np.unique(got)
        natural = send[got] + np.round((cell.e2e_base_ms + rng.exponential(1.0, len(got)))
                                       * 1e6).astype(np.int64)
        recv = natural.copy()
        if pause is not None:
            held = (natural >= pause["start_ns"]) & (natural < pause["end_ns"])
            catch_up_ns = interval_ns / _CATCH_UP_FACTOR
            recv[held] = pause["end_ns"] + np.round(
                (np.arange(int(held.sum())) + 1) * catch_up_ns).astype(np.int64)
        n_late = cell.late.get(c, 0)
        if n_late:
            late_seqs = np.intersect1d(got, expected)[-n_late:]
            at = np.searchsorted(got, late_seqs)
            recv[at] = stop_ns + 1_000_000 * (np.arange(n_late) + 1)
        first_times[c] = (got, recv)
        dup_seqs = np.concatenate([
            np.intersect1d(got, expected)[:cell.duplicates.get(c, 0)],
            np.intersect1d(got, seq[warm])[:cell.warmup_duplicates.get(c, 0)],
        ])
        dup_recv = recv[np.searchsorted(got, dup_seqs)] + 5_000_000
        rows_seq = np.concatenate([got, dup_seqs])
        rows_recv = np.concatenate([recv, dup_recv])
        dup = np.concatenate([np.zeros(len(got), bool), np.ones(len(dup_seqs), bool)])
        m = len(rows_seq)
        receipts[shard].append({
            "consumer": np.full(m, c, dtype=np.int32), "shard": np.full(m, shard, dtype=np.int32),
            "seq": rows_seq, "producer_id": np.zeros(m, dtype=np.int32),
            "partition": partition[rows_seq], "offset": offsets[rows_seq],
            "intended_ts_ns": intended[rows_seq], "send_ts_ns": send[rows_seq],
            "receive_ts_ns": rows_recv,
            "e2e_latency_ms": (rows_recv - intended[rows_seq]) / 1e6,
            "service_e2e_latency_ms": (rows_recv - send[rows_seq]) / 1e6,
            "duplicate": dup, "after_stop": rows_recv > stop_ns, "is_warmup": warm[rows_seq],
        })
    receipt_frames: dict[int, dict[str, Any]] = {}
    for shard, parts in receipts.items():
        cols: dict[str, Any] = ({k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
                                if parts else {k: [] for k in RECEIPTS_SCHEMA.names})
        if parts:
            order = np.argsort(cols["receive_ts_ns"], kind="stable")
            cols = {k: v[order] for k, v in cols.items()}
            cols["offset"] = _masked(cols["offset"], cols["offset"] >= 0)
        receipt_frames[shard] = cols

    # -- lag samples: every lag_interval_s from t0 to the end of the drain
    in_log = acked.copy()
    in_log[strays] = np.isin(strays, np.concatenate(
        [got for got, _ in first_times.values()] or [np.zeros(0, np.int64)]))
    ts = t0_ns + np.arange(0, int((drain_end_ns - t0_ns) / (cell.lag_interval_s * 1e9)) + 1,
                           dtype=np.int64) * int(cell.lag_interval_s * 1e9)
    lag: dict[int, list[dict[str, np.ndarray]]] = {s: [] for s in range(cell.shards)}
    for c in range(cell.consumers):
        shard = cell.shard_of(c)
        got, recv = first_times.get(c, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        received_msgs = np.searchsorted(np.sort(recv), ts, side="right")
        for p in range(cell.partitions):
            log_times = np.sort(append[in_log & (partition == p)])
            log_end = np.searchsorted(log_times, ts, side="right")
            mine = partition[got] == p
            position = np.searchsorted(np.sort(recv[mine]), ts, side="right")
            fetched = (ts > ts[0]) & (c not in cell.silent)
            paused = (np.zeros(len(ts), bool) if pause is None else
                      (ts >= pause["start_ns"]) & (ts < pause["end_ns"]))
            k = len(ts)
            lag[shard].append({
                "consumer": np.full(k, c, np.int32), "shard": np.full(k, shard, np.int32),
                "partition": np.full(k, p, np.int32), "sample_ts_ns": ts,
                "elapsed_s": (ts - t0_ns) / 1e9, "log_end_offset": log_end.astype(np.int64),
                "position": np.where(fetched, position, -1),
                "lag_msgs": np.where(fetched, log_end - position, -1),
                "received_msgs": received_msgs.astype(np.int64), "paused": paused,
            })
    lag_frames: dict[int, dict[str, Any]] = {}
    for shard, parts in lag.items():
        cols = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        valid = cols["position"] >= 0
        cols["position"] = _masked(cols["position"], valid)
        cols["lag_msgs"] = _masked(cols["lag_msgs"], valid)
        lag_frames[shard] = cols
    clocks = {"t0_ns": t0_ns, "measure_start_ns": measure_start_ns, "stop_ts_ns": stop_ns,
              "drain_end_ts_ns": drain_end_ns, "pause": pause}
    return sends, receipt_frames, lag_frames, clocks


def _cell_doc(cell: FakeLoadCell, run_id: str, run_date: str, clocks: dict[str, Any]
              ) -> dict[str, Any]:
    payload_bytes = _PAYLOAD_BYTES.get(cell.payload, 1024)
    if cell.encoding == "base64":
        payload_bytes = 4 * math.ceil(payload_bytes / 3)
    wall = float(clocks["drain_end_ts_ns"] - clocks["t0_ns"]) / 1e9
    cpu_frac = 0.9 if cell.client_bound else 0.25
    processes = [{"role": "producer", "shard": None, "pid": 1000, "host": "fakehost",
                  "cpu_s": cpu_frac * wall, "wall_s": wall, "cpu_frac": cpu_frac}]
    processes += [{"role": "consumer-shard", "shard": s, "pid": 1001 + s, "host": "fakehost",
                   "cpu_s": 0.2 * wall, "wall_s": wall, "cpu_frac": 0.2}
                  for s in range(cell.shards)]
    flavor = "external" if cell.is_emulator else DEFAULT_EMBEDDED.name
    wire = payload_bytes + _HEADER_BYTES  # the engine's cell.json payload_bytes: on the wire
    return {
        "schema_version": 1, "cell_id": cell.cell_id, "run_id": run_id, "run_date": run_date,
        "status": cell.status, "error": None if cell.status != "failed" else "fake failure",
        "spec": cell.spec(), "acks": cell.acks, "payload_bytes": wire,
        "topic": f"kl-load-{safe_name(run_id)}-{cell.cell_id}", "partitions": cell.partitions,
        "cluster": {"flavor": flavor, "version": "0.2.3" if cell.is_emulator else DEFAULT_EMBEDDED.version,
                    "is_emulator": cell.is_emulator, "broker_count": 1 if cell.is_emulator else 3},
        "client": cell.client, "client_version": "2.16.1",
        "client_settings": {"producer": {"acks": cell.acks, "linger.ms": "5"},
                            "consumer": {"fetch.wait.max.ms": "10"}},
        **clocks, "processes": processes, "client_bound": cell.client_bound,
        "broker_cpu_frac": None if cell.is_emulator else 0.4, "hosts": {"fakehost": {"cpus": 2}},
        "summary": {"cell_id": cell.cell_id, "client": cell.client, "payload": cell.payload,
                    "payload_bytes": wire,
                    "profile": cell.profile, "acks": cell.acks, "partitions": cell.partitions,
                    "consumers": cell.consumers,
                    "target_rate_msgs_per_s": float(cell.rate_msgs_per_s),
                    "duration_s": float(cell.duration_s), "client_bound": cell.client_bound,
                    "broker_is_emulator": cell.is_emulator, "status": cell.status},
    }


def _run_date(run_id: str) -> str:
    started = run_id_time(run_id)
    return (started or dt.datetime(2026, 11, 22, tzinfo=dt.UTC)).strftime("%Y-%m-%d")


def write_fake_load_run(data_dir: str | Path, run_id: str, cells: Sequence[FakeLoadCell],
                        *, run_date: str | None = None, seed: int = 0,
                        manifest: bool = True) -> list[Path]:
    """Write a fake load run under ``data_dir`` and return its cell directories.

    Each cell gets ``sends.parquet``, one ``receipts-NNN.parquet`` and ``lag-NNN.parquet``
    per consumer shard (an empty receipts file when the shard received nothing) and
    ``cell.json`` (its ``summary`` holds the spec-level keys only, no statistics). With
    ``manifest``, ``runs/<run_id>.json`` (``kind: "load"``) lists the cells' summaries.
    ``run_date`` defaults to the date in the run id.
    """
    lab = LabData(data_dir)
    date = run_date or _run_date(run_id)
    rng = np.random.default_rng(seed)
    dirs: list[Path] = []
    docs: list[dict[str, Any]] = []
    t0 = _MONOTONIC_START_NS
    for cell in cells:
        cdir = (lab.root / "load" / f"run_date={date}" / f"run_id={run_id}"
                / f"cell={cell.cell_id}")
        sends, receipts, lag, clocks = _cell_frames(cell, t0, rng)
        _write(cdir / "sends.parquet", sends, SENDS_SCHEMA)
        for shard, cols in receipts.items():
            _write(cdir / f"receipts-{shard:03d}.parquet", cols, RECEIPTS_SCHEMA)
        for shard, cols in lag.items():
            _write(cdir / f"lag-{shard:03d}.parquet", cols, LAG_SCHEMA)
        doc = _cell_doc(cell, run_id, date, clocks)
        atomic_write_json(cdir / "cell.json", doc, sort_keys=False)
        dirs.append(cdir)
        docs.append(doc)
        t0 = int(clocks["drain_end_ts_ns"]) + 1_000_000_000  # cells run one after another
    if manifest:
        statuses = {d["status"] for d in docs}
        lab.write_manifest({
            "run_id": run_id, "kind": "load", "schema_version": 1,
            "status": "complete" if statuses <= {"complete"} else "incomplete",
            "started_at": f"{date}T00:00:00+00:00", "ended_at": f"{date}T00:10:00+00:00",
            "command": "fake_load_samples", "run_date": date,
            "workload": {"kind": "load", "name": "fake",
                         "cells": [asdict(c) | {"missing": {str(k): list(v) for k, v in
                                                            c.missing.items()}}
                                   for c in cells]},
            "cluster": docs[0]["cluster"] if docs else {},
            "cells": [d["summary"] for d in docs],
            "error": None, "fake": True,
        })
    return dirs


# --------------------------------------------------------------------------- CLI


def _per_consumer(text: str, runs: bool = False) -> dict[int, Any]:
    """``"1:3,2;4:5"`` -> ``{1: (3, 2), 4: (5,)}`` (runs) or ``"1:3;4:5"`` -> ``{1: 3, 4: 5}``."""
    out: dict[int, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        consumer, _, value = part.partition(":")
        nums = tuple(int(v) for v in value.split(",") if v)
        out[int(consumer)] = nums if runs else nums[0]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Write one fake load cell (``--help``); prints the cell directory."""
    p = argparse.ArgumentParser(prog="fake_load_samples", description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--consumers", type=int, default=2)
    p.add_argument("--rate", type=float, default=100.0)
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--acks", default="1", choices=["0", "1", "all"])
    p.add_argument("--payload", default="1kb")
    p.add_argument("--status", default="complete", choices=["complete", "failed", "running"])
    p.add_argument("--failed", type=int, default=0)
    p.add_argument("--indeterminate", type=int, default=0)
    p.add_argument("--unsent", type=int, default=0)
    p.add_argument("--missing", default="", help="consumer:run,run;... e.g. 1:3,2")
    p.add_argument("--late", default="", help="consumer:n;...")
    p.add_argument("--duplicates", default="", help="consumer:n;...")
    p.add_argument("--pause-at", type=float)
    p.add_argument("--pause-for", type=float)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    cell = FakeLoadCell(
        consumers=a.consumers, rate_msgs_per_s=a.rate, duration_s=a.duration,
        warmup_s=a.warmup, partitions=a.partitions, acks=a.acks, payload=a.payload,
        status=a.status, failed=a.failed, indeterminate=a.indeterminate, unsent=a.unsent,
        missing=_per_consumer(a.missing, runs=True), late=_per_consumer(a.late),
        duplicates=_per_consumer(a.duplicates), pause_at_s=a.pause_at, pause_for_s=a.pause_for)
    for d in write_fake_load_run(a.data_dir, a.run_id, [cell], seed=a.seed):
        print(d)
    print(json.dumps({"run_id": a.run_id, "cells": [cell.cell_id]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
