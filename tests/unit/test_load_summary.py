"""The cell summary from hand-made load files: every count and percentile checked exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from kafkalab.load import files
from kafkalab.load.summary import format_load_table, json_cell, percentiles, summarize_cell
from kafkalab.store import atomic_write_json

MS = 1_000_000
T0 = 10_000 * MS


def _cell(tmp: Path, *, n: int = 20, warmup: int = 2, acks: str = "1",
          outcomes: dict[int, str] | None = None,
          receipts: dict[int, list[tuple[int, float]]] | None = None,
          dups: dict[int, list[int]] | None = None, consumers: int = 2,
          stop_after_ms: float = 200.0, lag: list[tuple[int, float, int]] | None = None,
          pause: tuple[float, float] | None = None) -> Path:
    """n messages due every 10 ms from T0, sent 1 ms late, acked 2 ms after the send.
    ``receipts[c]``: (seq, receive ms after the intended time)."""
    cell = tmp / "cell=x"
    cell.mkdir()
    outcomes = outcomes or {}
    seq = np.arange(n)
    intended = T0 + seq * 10 * MS
    send = intended + MS
    out = np.array([outcomes.get(i, "acked") for i in range(n)], dtype=object)
    sent = out != "unsent"
    answered = sent & (out != "indeterminate")
    files.write_table(files.sends_path(cell), {
        "seq": seq, "producer_id": np.zeros(n, np.int32), "is_warmup": seq < warmup,
        "intended_ts_ns": intended, "send_ts_ns": pa.array(send, mask=~sent),
        "ack_ts_ns": pa.array(send + 2 * MS, mask=~answered), "outcome": out,
        "error": [None] * n, "partition": np.zeros(n, np.int32),
        "offset": pa.array(seq, mask=out != "acked"),
        "publish_delay_ms": pa.array(np.full(n, 1.0), mask=~sent),
        "ack_latency_ms": pa.array(np.full(n, 2.0), mask=~answered),
        "txn_end": [None] * n}, files.SENDS_SCHEMA)
    for c in range(consumers):
        rows = list((receipts or {}).get(c, []))
        rows += [(s, 50.0) for s in (dups or {}).get(c, [])]
        seen: set[int] = set()
        dup_flags = []
        for s, _ in rows:
            dup_flags.append(s in seen)
            seen.add(s)
        k = len(rows)
        sq = np.array([s for s, _ in rows], dtype=np.int64)
        recv = T0 + sq * 10 * MS + np.array([int(d * MS) for _, d in rows], dtype=np.int64)
        files.write_table(files.receipts_path(cell, c), {
            "consumer": np.full(k, c, np.int32), "shard": np.full(k, c, np.int32), "seq": sq,
            "producer_id": np.zeros(k, np.int32), "partition": np.zeros(k, np.int32),
            "offset": sq, "intended_ts_ns": T0 + sq * 10 * MS, "send_ts_ns": T0 + sq * 10 * MS + MS,
            "receive_ts_ns": recv, "e2e_latency_ms": (recv - (T0 + sq * 10 * MS)) / 1e6,
            "service_e2e_latency_ms": (recv - (T0 + sq * 10 * MS + MS)) / 1e6,
            "duplicate": np.array(dup_flags, dtype=bool), "is_warmup": sq < warmup},
            files.RECEIPTS_SCHEMA)
        lag_rows = [row for row in (lag or []) if row[0] == c]
        m = len(lag_rows)
        files.write_table(files.lag_path(cell, c), {
            "consumer": np.full(m, c, np.int32), "shard": np.full(m, c, np.int32),
            "partition": np.zeros(m, np.int32),
            "sample_ts_ns": np.array([T0 + int(t * MS) for _, t, _ in lag_rows], dtype=np.int64),
            "elapsed_s": np.array([t / 1000 for _, t, _ in lag_rows]),
            "log_end_offset": np.array([100 for _ in lag_rows], dtype=np.int64),
            "position": np.array([100 - v for *_, v in lag_rows], dtype=np.int64),
            "lag_msgs": np.array([v for *_, v in lag_rows], dtype=np.int64),
            "received_msgs": np.zeros(m, np.int64), "paused": np.zeros(m, bool)}, files.LAG_SCHEMA)
    meta: dict[str, Any] = {
        "schema_version": 1, "cell_id": "x", "run_id": "r", "run_date": "2026-11-22",
        "status": "complete", "error": None, "acks": acks, "payload_bytes": 1056,
        "topic": "t", "partitions": 1, "client": "confluent-kafka", "client_version": "2",
        "drain_end_ts_ns": None, "broker_cpu_frac": None,
        "spec": {"client": "confluent-kafka", "payload": "1kb", "profile": "default",
                 "partitions": 1, "consumers": consumers, "rate_msgs_per_s": 100.0,
                 "duration_s": n / 100, "warmup_s": warmup / 100, "lag_interval_s": 0.05},
        "t0_ns": T0, "measure_start_ns": T0 + warmup * 10 * MS,
        "stop_ts_ns": T0 + int(stop_after_ms * MS),
        "pause": None if pause is None else {"start_ns": T0 + int(pause[0] * MS),
                                              "end_ns": T0 + int(pause[1] * MS)},
        "processes": [{"role": "producer", "cpu_frac": 0.3}, {"role": "consumer-shard", "cpu_frac": 0.9}],
        "client_bound": True, "cluster": {"flavor": "kafka09", "version": "0.9.0.1",
                                          "is_emulator": False, "broker_count": 1}}
    atomic_write_json(files.cell_json_path(cell), meta)
    return cell


def test_fault_free_cell_counts_everything_once(tmp_path: Path) -> None:
    every = [(s, 3.0) for s in range(20)]
    cell = _cell(tmp_path, receipts={0: every, 1: every})
    s = summarize_cell(cell)
    assert (s["intended_msgs"], s["acked_msgs"], s["warmup_msgs"], s["expected_msgs"]) == (18, 18, 2, 18)
    assert s["failed_msgs"] + s["indeterminate_msgs"] + s["unsent_msgs"] == 0
    assert (s["loss_pct"], s["failing_clients"], s["duplicates"]) == (0.0, 0, 0)
    assert s["e2e_p50_ms"] == 3.0 and s["service_e2e_p50_ms"] == 2.0
    assert s["e2e_p99_ms"] is None and s["e2e_p99_ms_reason"] == "n<100"
    assert s["client_bound"] is True and s["max_process_cpu_frac"] == 0.9
    # 18 sent from the first window message's intended time to the last send (+1 ms late),
    # plus one interval: 18 / 0.181 s
    assert s["achieved_rate_msgs_per_s"] == round(18 / 0.181, 3)
    assert [c["unique_msgs"] for c in s["consumers_detail"]] == [18, 18]


def test_missing_late_duplicate_and_unexpected_are_told_apart(tmp_path: Path) -> None:
    outcomes = {5: "failed", 6: "indeterminate", 7: "unsent"}
    expected = [s for s in range(2, 20) if s not in outcomes]  # 15 messages
    c0 = [(s, 3.0) for s in expected]
    # consumer 1 misses 9, 10 and 15 (two gaps), gets 19 only after the stop (late),
    # receives 4 twice, and receives the failed 5 anyway (unexpected)
    c1 = [(s, 3.0) for s in expected if s not in (9, 10, 15, 19)] + [(19, 500.0), (5, 3.0)]
    cell = _cell(tmp_path, outcomes=outcomes, receipts={0: c0, 1: c1}, dups={1: [4]})
    s = summarize_cell(cell)
    assert (s["acked_msgs"], s["failed_msgs"], s["indeterminate_msgs"], s["unsent_msgs"]) == (15, 1, 1, 1)
    assert s["acked_msgs"] + s["failed_msgs"] + s["indeterminate_msgs"] + s["unsent_msgs"] == s["intended_msgs"]
    c = s["consumers_detail"][1]
    assert (c["unique_msgs"], c["missing_msgs"], c["gaps"], c["late_msgs"], c["duplicates"],
            c["unexpected_msgs"], c["failing"]) == (12, 3, 2, 1, 1, 1, True)
    assert s["consumers_detail"][0]["failing"] is False
    assert s["failing_clients"] == 1 and s["duplicates"] == 1
    assert s["loss_pct"] == round(100 * 3 / 30, 6)
    assert s["late_pct"] == round(100 * 1 / 30, 6)
    # 27 received values + 3 censored (+inf): rank 27 of 30 is the late one, rank 28 is +inf
    assert s["e2e_max_ms"] == 500.0
    assert s["e2e_p90_ms"] == 500.0


def test_acks_zero_expects_every_sent_message(tmp_path: Path) -> None:
    outcomes = {3: "indeterminate", 4: "unsent"}
    got = [(s, 3.0) for s in range(20) if s != 4]
    s = summarize_cell(_cell(tmp_path, acks="0", outcomes=outcomes, receipts={0: got}, consumers=1))
    assert s["expected_msgs"] == 17  # sent, not acked: 18 window messages minus the unsent one
    assert s["missing_msgs"] == 0


def test_lag_peak_growth_and_drain_after_a_pause(tmp_path: Path) -> None:
    lag = [(0, t, v) for t, v in ((50, 0), (100, 5), (150, 10), (200, 2), (250, 0))]
    every = [(s, 3.0) for s in range(20)]
    s = summarize_cell(_cell(tmp_path, receipts={0: every}, consumers=1, lag=lag,
                             pause=(80.0, 160.0), stop_after_ms=230))
    assert s["lag_peak_msgs"] == 10
    assert s["pause_lag_peak_msgs"] == 10
    assert s["lag_end_msgs"] == 2 and s["lag_growing"] is False
    assert s["time_to_drain_s"] == 0.04  # first sample ≤ R × interval (5 msgs) after the pause: 200 ms
    assert s["drain_rate_msgs_per_s"] == 250.0


def test_a_pause_no_sample_saw_the_end_of_has_no_peak(tmp_path: Path) -> None:
    """The shard took no sample in the pause's last interval (110-160 ms; it stalled from
    50 to 180 ms): the sample at 180 ms, after the consumer resumed and drained, is not the
    pause's peak. No peak, no drain figures; the cell's other lag figures stay."""
    lag = [(0, t, v) for t, v in ((50, 0), (180, 1), (250, 0))]
    every = [(s, 3.0) for s in range(20)]
    s = summarize_cell(_cell(tmp_path, receipts={0: every}, consumers=1, lag=lag,
                             pause=(80.0, 160.0), stop_after_ms=230))
    assert s["pause_lag_peak_msgs"] is None
    assert s["time_to_drain_s"] is None and s["drain_rate_msgs_per_s"] is None
    assert s["lag_peak_msgs"] == 1


def test_percentiles_need_enough_samples_and_treat_censored_as_infinite() -> None:
    values = np.arange(1, 100, dtype=float)  # 99 values + 1 censored = 100
    p = percentiles(values, 1, "e2e")
    assert p["e2e_p50_ms"] == 50.0
    assert p["e2e_p99_ms"] == 99.0
    assert p["e2e_p999_ms"] is None and p["e2e_p999_ms_reason"] == "n<1000"
    p = percentiles(values[:98], 2, "e2e")
    assert p["e2e_p99_ms"] is None and p["e2e_p99_ms_reason"] == "censored"


def test_table_and_json_show_the_flags(tmp_path: Path) -> None:
    every = [(s, 3.0) for s in range(20)]
    s = summarize_cell(_cell(tmp_path, receipts={0: every}, consumers=1))
    table = format_load_table([s])
    assert "client_bound" in table and "n<100" in table
    assert "consumers_detail" not in json_cell(s)
    for key in ("consumers", "target_rate_msgs_per_s", "achieved_rate_msgs_per_s",
                "rx_rate_msgs_per_s_avg", "loss_pct", "failing_clients", "duplicates",
                "e2e_p50_ms", "e2e_p99_ms", "service_e2e_p99_ms", "publish_delay_p99_ms",
                "lag_peak_msgs", "client_bound", "saturated"):
        assert key in json_cell(s)
