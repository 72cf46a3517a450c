"""A load cell's figures from its files (the ``--json`` object, the CLI table, ``cell.json``).

Definitions are those of docs/metrics-schema.md ("Load samples"), shared with the Spark job
``spark_jobs/aggregate_load.py`` (a test checks both give the same numbers):

* the window is the non-warm-up messages; the *expected* set E is the acked ones (acks 1 /
  all) or the sent ones (acks 0);
* e2e latency is measured from the *intended* send time (corrected for coordinated
  omission); ``service_e2e`` from the actual send; a message of E a consumer never received
  counts as +inf in its population (censored), it is never dropped;
* percentiles are exact nearest-rank with the minimum-sample rule of :mod:`kafkalab.stats`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafkalab.load import files
from kafkalab.load.cpu import other_cpu_pct
from kafkalab.load.files import CellDoc, PauseWindow
from kafkalab.stats import MIN_SAMPLES, PERCENTILE_FRACTIONS, fraction_rank, quantile_ci_ranks

HOST_BUSY_FRAC = 0.9
"""Above this share of all the host's CPUs busy during a cell, the cell is ``host_busy``: its
clients (or broker) may have waited for a CPU, whoever was using it."""

REPORTED = ("p50", "p90", "p99", "p999")
"""Percentiles in a load summary (plus max)."""


def percentiles(values: np.ndarray, censored: int, prefix: str) -> dict[str, Any]:
    """``{prefix}_p50_ms … _p999_ms, _max_ms}`` of ``values`` plus ``censored`` +inf values,
    exact nearest-rank; undefined ones are None with ``{prefix}_{pXX}_ms_reason``. ``max``
    is over the received values."""
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    n = len(ordered) + censored
    out: dict[str, Any] = {}
    for name in REPORTED:
        key = f"{prefix}_{name}_ms"
        if n < MIN_SAMPLES[name]:
            out[key], out[f"{key}_reason"] = None, f"n<{MIN_SAMPLES[name]}"
            continue
        num, den = PERCENTILE_FRACTIONS[name]
        rank = fraction_rank(n, num, den)
        if rank > len(ordered):
            out[key], out[f"{key}_reason"] = None, "censored"
        else:
            out[key] = round(float(ordered[rank - 1]), 6)
    out[f"{prefix}_max_ms"] = round(float(ordered[-1]), 6) if len(ordered) else None
    return out


def ci(values: np.ndarray, censored: int, name: str) -> tuple[float | None, float | None]:
    """The distribution-free 95 % interval of one percentile (censored values are +inf)."""
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    n = len(ordered) + censored
    num, den = PERCENTILE_FRACTIONS[name]
    lo, hi = quantile_ci_ranks(n, num / den)

    def at(rank: int | None) -> float | None:
        return None if rank is None or rank > len(ordered) else round(float(ordered[rank - 1]), 6)

    return at(lo), at(hi)


def _read(paths: list[Path], columns: list[str]) -> dict[str, np.ndarray]:
    tables = [pq.read_table(p, columns=columns) for p in paths]
    if not tables:
        return {c: np.array([]) for c in columns}
    import pyarrow as pa

    t = pa.concat_tables(tables)
    out = {}
    for c in columns:
        col = t.column(c)
        if pa.types.is_floating(col.type):
            out[c] = col.to_numpy(zero_copy_only=False)
        elif pa.types.is_integer(col.type):
            out[c] = pc.fill_null(col, -1).to_numpy(zero_copy_only=False)
        elif pa.types.is_boolean(col.type):
            out[c] = pc.fill_null(col, False).to_numpy(zero_copy_only=False)
        else:
            out[c] = np.asarray(col.to_pylist(), dtype=object)
    return out


def summarize_cell(cell: Path) -> dict[str, Any]:
    """Every figure of one load cell (see the module docstring and docs/metrics-schema.md)."""
    meta = CellDoc.read(cell)
    if meta is None:
        raise FileNotFoundError(f"{cell}: no cell.json")
    sends = _read_sends(cell, meta)
    receipts = _read_receipts(cell, meta, sends)
    fan = _fan_out(meta, sends, receipts)
    out = _counts(meta, sends, fan)
    out.update(_latencies(meta, sends, fan))
    out.update(_lag(cell, meta, sends, receipts))
    out.update(_resources(meta))
    _consumer_lag_peaks(cell, fan.rows)
    out.update(thin_figures(meta.spec.thin_consumer, fan.rows))
    out["consumers_detail"] = fan.rows
    return out


def _consumer_lag_peaks(cell: Path, rows: list[dict[str, Any]]) -> None:
    """Each consumer's ``lag_peak_msgs``: its largest lag at any sample, summed over the
    partitions (as ``load_consumers``' column; None when no partition's lag was ever known),
    set on its row."""
    lag = _read(files.lag_path.every(cell), ["consumer", "sample_ts_ns", "lag_msgs"])
    samples = _lag_samples(lag) if len(lag["consumer"]) else None
    for row in rows:
        c = row["consumer"]
        known = bool(np.any((lag["consumer"] == c) & (lag["lag_msgs"] >= 0)))
        mine = samples.total[samples.keys[0] == c] if samples is not None else np.array([])
        row["lag_peak_msgs"] = int(mine.max()) if known and len(mine) else None


THIN_KEYS = ("thin_failing", "thin_lag_peak_msgs", "thin_e2e_p99_ms", "thin_rx_rate_msgs_per_s",
             "others_failing_clients", "others_worst_lag_peak_msgs", "others_worst_e2e_p99_ms",
             "others_min_rx_rate_msgs_per_s")
"""The figures of a thin-pipe cell (:func:`thin_figures`): None in every other cell."""


def thin_figures(thin: int | None, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """HYDRA on a thin pipe: the thin consumer's own figures beside the worst of the others'
    (each consumer's row of ``consumers_detail``: failing, peak lag, e2e p99, rx rate). The
    others' p99 is the highest of their own p99s, not a pooled one, so it reads the same from
    ``load_consumers``; None where a consumer's figure is (too few samples: its reason is in
    its row). Every key None for a cell without a thin consumer."""
    out: dict[str, Any] = dict.fromkeys(THIN_KEYS)
    mine = next((r for r in rows if r["consumer"] == thin), None)
    if thin is None or mine is None:
        return out
    others = [r for r in rows if r["consumer"] != thin]

    def worst(key: str, pick: Any = max) -> Any:
        values = [r.get(key) for r in others]
        return None if not values or any(v is None for v in values) else pick(values)

    out.update(thin_failing=mine["failing"], thin_lag_peak_msgs=mine.get("lag_peak_msgs"),
               thin_e2e_p99_ms=mine["e2e_p99_ms"],
               thin_rx_rate_msgs_per_s=mine["rx_rate_msgs_per_s"],
               others_failing_clients=sum(1 for r in others if r["failing"]),
               others_worst_lag_peak_msgs=worst("lag_peak_msgs"),
               others_worst_e2e_p99_ms=worst("e2e_p99_ms"),
               others_min_rx_rate_msgs_per_s=worst("rx_rate_msgs_per_s", min))
    return out


@dataclass
class _Sends:
    """The producer's log of a cell, as the figures need it."""

    columns: dict[str, np.ndarray]
    """``sends.parquet``'s columns (nulls: -1, False)."""
    n_all: int
    """Intended messages, warm-up included."""
    window: np.ndarray
    """Not warm-up (by row)."""
    sent: np.ndarray
    """In the window and sent (by row)."""
    acked: np.ndarray
    """In the window and acked (by row)."""
    achieved_rate_msgs_per_s: float
    expected_flag: np.ndarray
    """By seq: in the expected set E (acked, or sent with acks 0)."""
    expected_n: int
    ack_ts_by_seq: np.ndarray
    """By seq: the ack time (-1: none)."""


def _read_sends(cell: Path, meta: CellDoc) -> _Sends:
    """The window, the sent and acked messages, the achieved rate and the expected set E."""
    rate = meta.spec.rate_msgs_per_s
    s = _read([files.sends_path(cell)], ["seq", "is_warmup", "intended_ts_ns", "send_ts_ns",
                                          "ack_ts_ns", "outcome", "publish_delay_ms",
                                          "ack_latency_ms"])
    n_all = len(s["seq"])
    window = ~s["is_warmup"]
    sent = window & (s["send_ts_ns"] >= 0)
    acked = window & (s["outcome"] == "acked")
    sent_n = int(np.sum(sent))
    if sent_n:
        span_s = (int(s["send_ts_ns"][sent].max()) - int(s["intended_ts_ns"][window].min())) / 1e9
        achieved = sent_n / (span_s + 1.0 / rate)
    else:
        achieved = 0.0
    expected_mask = (sent if meta.acks == "0" else acked)
    expected_flag = np.zeros(max(n_all, 1), dtype=bool)
    expected_flag[s["seq"][expected_mask]] = True
    ack_ts_by_seq = np.full(max(n_all, 1), -1, dtype=np.int64)
    ack_ts_by_seq[s["seq"]] = s["ack_ts_ns"]
    return _Sends(columns=s, n_all=n_all, window=window, sent=sent, acked=acked,
                  achieved_rate_msgs_per_s=achieved, expected_flag=expected_flag,
                  expected_n=int(np.sum(expected_mask)), ack_ts_by_seq=ack_ts_by_seq)


@dataclass
class _Receipts:
    """Every consumer's receipts, sorted by consumer (consumer c's rows are
    ``bounds[c]:bounds[c + 1]``), with the masks the figures use."""

    columns: dict[str, np.ndarray]
    bounds: np.ndarray
    first: np.ndarray
    """Not a duplicate: the consumer's first receipt of its seq."""
    in_window: np.ndarray
    seqs: np.ndarray
    in_e: np.ndarray
    """Its seq is in the expected set E."""
    after_stop: np.ndarray
    """Received after the producer stopped (late)."""


def _read_receipts(cell: Path, meta: CellDoc, sends: _Sends) -> _Receipts:
    """Every receipt of the cell, sorted by consumer once (fan-out cells have 10^6+)."""
    r = _read(files.receipts_path.every(cell), ["consumer", "seq", "receive_ts_ns",
                                                 "e2e_latency_ms", "service_e2e_latency_ms",
                                                 "duplicate", "is_warmup"])
    order = np.argsort(r["consumer"], kind="stable")
    r = {k: v[order] for k, v in r.items()}
    bounds = np.searchsorted(r["consumer"], np.arange(meta.spec.consumers + 1), side="left")
    seqs = r["seq"].astype(np.int64)
    valid = (seqs >= 0) & (seqs < sends.n_all)
    in_e = np.zeros(len(seqs), dtype=bool)
    in_e[valid] = sends.expected_flag[seqs[valid]]
    stop_ts = meta.stop_ts_ns
    after_stop = (r["receive_ts_ns"] > stop_ts) if stop_ts is not None else np.zeros(len(seqs), bool)
    return _Receipts(columns=r, bounds=bounds, first=~r["duplicate"], in_window=~r["is_warmup"],
                     seqs=seqs, in_e=in_e, after_stop=after_stop)


@dataclass
class _FanOut:
    """The per-consumer figures and what they add up to."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    """``consumers_detail``."""
    e2e_ms: list[np.ndarray] = field(default_factory=list)
    """Each consumer's e2e latencies of E (from the intended time)."""
    service_e2e_ms: list[np.ndarray] = field(default_factory=list)
    """Each consumer's e2e latencies of E from the actual send (where known)."""
    missing_msgs: int = 0
    late_msgs: int = 0
    duplicates: int = 0


def _fan_out(meta: CellDoc, sends: _Sends, receipts: _Receipts) -> _FanOut:
    """Every consumer's figures (``consumers_detail``) and the totals."""
    stop_ts, measure_start = meta.stop_ts_ns, meta.measure_start_ns
    n_all = sends.n_all
    expected_seqs = (np.flatnonzero(sends.expected_flag[:n_all]) if n_all
                     else np.array([], dtype=np.int64))
    window_span_s = ((stop_ts - measure_start) / 1e9) if stop_ts and measure_start else None
    received_flag = np.zeros(max(n_all, 1), dtype=bool)
    fan = _FanOut()
    for c in range(meta.spec.consumers):
        sl = slice(int(receipts.bounds[c]), int(receipts.bounds[c + 1]))
        row, e2e, svc = _consumer(c, sl, receipts, sends.expected_n, expected_seqs,
                                  received_flag, window_span_s)
        fan.rows.append(row)
        fan.e2e_ms.append(e2e)
        fan.service_e2e_ms.append(svc)
        fan.missing_msgs += row["missing_msgs"]
        fan.late_msgs += row["late_msgs"]
        fan.duplicates += row["duplicates"]
    return fan


def _consumer(c: int, sl: slice, receipts: _Receipts, expected_n: int, expected_seqs: np.ndarray,
              received_flag: np.ndarray, window_span_s: float | None
              ) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """One consumer's row of ``consumers_detail`` and its e2e and service e2e latencies of E.
    ``received_flag`` is scratch space (by seq), reused from consumer to consumer."""
    r = receipts.columns
    c_first, c_in_e = receipts.first[sl], receipts.in_e[sl]
    c_win, c_after = receipts.in_window[sl], receipts.after_stop[sl]
    got = c_first & c_in_e
    unique = int(np.sum(got))
    missing = expected_n - unique
    received_flag[:] = False
    received_flag[receipts.seqs[sl][got]] = True
    miss_in_order = ~received_flag[expected_seqs] if len(expected_seqs) else np.array([], bool)
    gaps = int(np.sum(miss_in_order[1:] & ~miss_in_order[:-1])
               + (1 if len(miss_in_order) and miss_in_order[0] else 0))
    on_time = int(np.sum(c_first & c_win & ~c_after))
    rx_rate = on_time / window_span_s if window_span_s and window_span_s > 0 else None
    e2e = r["e2e_latency_ms"][sl][got]
    svc = r["service_e2e_latency_ms"][sl][got]
    svc = svc[~np.isnan(svc)]
    row = {"consumer": c, "unique_msgs": unique,
           "duplicates": int(np.sum(r["duplicate"][sl] & c_win)),
           "late_msgs": int(np.sum(got & c_after)), "missing_msgs": missing, "gaps": gaps,
           "unexpected_msgs": int(np.sum(c_first & c_win & ~c_in_e)),
           "rx_rate_msgs_per_s": None if rx_rate is None else round(rx_rate, 3),
           "failing": missing > 0}
    p = percentiles(e2e, missing, "e2e")
    row["e2e_p50_ms"], row["e2e_p99_ms"] = p["e2e_p50_ms"], p["e2e_p99_ms"]
    row["service_e2e_p99_ms"] = percentiles(svc, missing, "service_e2e")["service_e2e_p99_ms"]
    return row, e2e, svc


def _counts(meta: CellDoc, sends: _Sends, fan: _FanOut) -> dict[str, Any]:
    """The cell's settings, rates and message counts (the summary's first keys)."""
    spec = meta.spec
    window, outcome = sends.window, sends.columns["outcome"]
    counts = {o: int(np.sum(window & (outcome == o))) for o in files.OUTCOMES}
    intended = int(np.sum(window))
    achieved = sends.achieved_rate_msgs_per_s
    denom = sends.expected_n * spec.consumers
    rx_rates = [x["rx_rate_msgs_per_s"] for x in fan.rows if x["rx_rate_msgs_per_s"] is not None]
    return {
        "cell_id": meta.cell_id, "run_id": meta.run_id, "status": meta.status,
        "client": spec.client, "payload": spec.payload,
        "payload_bytes": meta.payload_bytes, "profile": spec.profile, "acks": meta.acks,
        "partitions": spec.partitions, "consumers": spec.consumers,
        "consumer_mode": spec.consumer_mode,
        "target_rate_msgs_per_s": spec.rate_msgs_per_s,
        "achieved_rate_msgs_per_s": round(achieved, 3),
        "achieved_mb_per_s": round(achieved * meta.payload_bytes / 1e6, 6),
        "duration_s": spec.duration_s, "window_s": spec.duration_s - spec.warmup_s,
        "intended_msgs": intended, "acked_msgs": counts["acked"], "failed_msgs": counts["failed"],
        "indeterminate_msgs": counts["indeterminate"], "unsent_msgs": counts["unsent"],
        "aborted_msgs": counts["aborted"], "txn_msgs": spec.txn_msgs,
        "link_delay_ms": spec.link_delay_ms,
        "client_link_delay_ms": spec.client_link_delay_ms,
        "fetch_from_follower": spec.fetch_from_follower,
        "thin_consumer": spec.thin_consumer, "thin_link_kbps": spec.thin_link_kbps,
        "thin_link_delay_ms": spec.thin_link_delay_ms,
        "warmup_msgs": int(sends.n_all - intended), "expected_msgs": sends.expected_n,
        "rx_rate_msgs_per_s_avg": round(float(np.mean(rx_rates)), 3) if rx_rates else None,
        "rx_rate_msgs_per_s_min": round(float(np.min(rx_rates)), 3) if rx_rates else None,
        "loss_pct": round(100.0 * fan.missing_msgs / denom, 6) if denom else 0.0,
        "late_pct": round(100.0 * fan.late_msgs / denom, 6) if denom else 0.0,
        "missing_msgs": fan.missing_msgs, "late_msgs": fan.late_msgs,
        "failing_clients": sum(1 for x in fan.rows if x["failing"]),
        "duplicates": fan.duplicates,
    }


def _latencies(meta: CellDoc, sends: _Sends, fan: _FanOut) -> dict[str, Any]:
    """e2e (with the CIs of p50 and p99) and service e2e over every consumer, the publish
    delay and the ack latency, and ``saturated`` (publish delay above one send interval)."""
    e2e_all = np.concatenate(fan.e2e_ms) if fan.e2e_ms else np.array([])
    svc_all = np.concatenate(fan.service_e2e_ms) if fan.service_e2e_ms else np.array([])
    out = percentiles(e2e_all, fan.missing_msgs, "e2e")
    for name in ("p50", "p99"):
        lo, hi = ci(e2e_all, fan.missing_msgs, name)
        out[f"e2e_{name}_ms_ci_low"], out[f"e2e_{name}_ms_ci_high"] = lo, hi
    out.update(percentiles(svc_all, fan.missing_msgs, "service_e2e"))
    out.update(percentiles(sends.columns["publish_delay_ms"][sends.sent], 0, "publish_delay"))
    out.update(percentiles(sends.columns["ack_latency_ms"][sends.acked], 0, "ack_latency"))
    interval_ms = 1000.0 / meta.spec.rate_msgs_per_s
    pub_judge = out.get("publish_delay_p99_ms")
    if pub_judge is None:
        pub_judge = out.get("publish_delay_max_ms")
    out["saturated"] = bool(pub_judge is not None and pub_judge > interval_ms)
    return out


def _resources(meta: CellDoc) -> dict[str, Any]:
    """CPU, placement, clock and cluster flags from ``cell.json``."""
    return {
        "client_bound": meta.client_bound,
        "max_process_cpu_frac": max((p.cpu_frac or 0.0 for p in meta.processes), default=None),
        "broker_cpu_frac": meta.broker_cpu_frac,
        "host_cpu_busy_frac": meta.host_cpu_busy_frac,
        "host_busy": (meta.host_cpu_busy_frac or 0.0) > HOST_BUSY_FRAC,
        "host_other_cpu_pct": other_cpu_pct(
            meta.host_cpu_busy_frac, meta.host_cpu_count,
            [(p.role, p.host, p.cpu_frac) for p in meta.processes], meta.broker_cpu_frac),
        "shard_placement": meta.shard_placement,
        "cross_host_clock": meta.cross_host_clock,
        "barrier_wait_s": meta.barrier_wait_s,
        "broker_is_emulator": meta.cluster.is_emulator,
        "cluster_flavor": meta.cluster.flavor,
        "broker_version": meta.cluster.version,
        "broker_count": meta.cluster.broker_count,
    }


def _lag(cell: Path, meta: CellDoc, sends: _Sends, receipts: _Receipts) -> dict[str, Any]:
    """Peak lag, its growth at the stop, the client backlog, and with a pause: the peak
    during it, time and rate to drain after it."""
    lag = _read(files.lag_path.every(cell),
                ["consumer", "sample_ts_ns", "elapsed_s", "lag_msgs", "paused"])
    out: dict[str, Any] = {"lag_peak_msgs": None, "lag_end_msgs": None, "lag_median_msgs": None,
                           "lag_growing": None, "client_backlog_peak_msgs": None,
                           "pause_lag_peak_msgs": None, "time_to_drain_s": None,
                           "drain_rate_msgs_per_s": None}
    if not len(lag["consumer"]):
        return out
    samples = _lag_samples(lag)
    out["lag_peak_msgs"] = int(samples.total.max()) if len(samples.total) else None
    out.update(_lag_growth(meta, samples))
    out["client_backlog_peak_msgs"] = _client_backlog_peak(samples, sends, receipts)
    if meta.pause:
        out.update(_pause_drain(meta, meta.pause, samples))
    return out


@dataclass
class _LagSamples:
    """Lag summed over the partitions, per (consumer, sample): ``keys[0]`` the consumer,
    ``keys[1]`` the sample time (sorted by consumer, then time), ``total`` the lag."""

    keys: np.ndarray
    total: np.ndarray


def _lag_samples(lag: dict[str, np.ndarray]) -> _LagSamples:
    """Σ over partitions per (consumer, sample); an unknown lag (null) counts as none."""
    keys = np.stack([lag["consumer"].astype(np.int64), lag["sample_ts_ns"].astype(np.int64)])
    uniq, inv = np.unique(keys, axis=1, return_inverse=True)
    inv = inv.reshape(-1)
    lag_vals = lag["lag_msgs"].astype(np.int64)
    known = lag_vals >= 0
    total = np.zeros(uniq.shape[1], dtype=np.int64)
    np.add.at(total, inv[known], lag_vals[known])
    return _LagSamples(keys=uniq, total=total)


def _lag_growth(meta: CellDoc, samples: _LagSamples) -> dict[str, Any]:
    """Growing lag: at the producer's stop, the worst consumer is further behind than one
    sampling interval of messages and than twice its typical (median) lag in the window."""
    uniq, total = samples.keys, samples.total
    stop_ts, start = meta.stop_ts_ns, meta.measure_start_ns
    if not (stop_ts and start):
        return {}
    in_win = (uniq[1] >= start) & (uniq[1] <= stop_ts)
    if not in_win.any():
        return {}
    idx = np.flatnonzero(in_win)
    cons = uniq[0][idx]
    last_of_each = idx[np.r_[cons[1:] != cons[:-1], True]]  # columns sorted by consumer, time
    end_lag = int(total[last_of_each].max())
    med = float(np.median(total[in_win]))
    return {"lag_end_msgs": end_lag, "lag_median_msgs": med,
            "lag_growing": bool(end_lag > max(meta.spec.rate_msgs_per_s
                                              * meta.spec.lag_interval_s, 2 * med))}


def _client_backlog_peak(samples: _LagSamples, sends: _Sends, receipts: _Receipts) -> int:
    """The client backlog's peak over the samples: acked (of E) by then − received (first
    receipts of E) by then, per consumer."""
    uniq = samples.keys
    expected_flag, ack_ts_by_seq = sends.expected_flag, sends.ack_ts_by_seq
    r, first, in_e = receipts.columns, receipts.first, receipts.in_e
    e_ack = np.sort(ack_ts_by_seq[: len(expected_flag)][expected_flag & (ack_ts_by_seq[: len(expected_flag)] >= 0)])
    backlog_peak = 0
    for c in np.unique(uniq[0]):
        times = uniq[1][uniq[0] == c]
        recv = np.sort(r["receive_ts_ns"][(r["consumer"] == c) & first & in_e])
        b = np.searchsorted(e_ack, times, side="right") - np.searchsorted(recv, times, side="right")
        backlog_peak = max(backlog_peak, int(b.max()) if len(b) else 0)
    return backlog_peak


def pause_sampled(sample_ts_ns: np.ndarray, start_ns: int, end_ns: int,
                  interval_ns: int) -> bool:
    """Whether one consumer's lag samples saw its pause's end: one falls in the pause's last
    sampling interval (``[max(start, end - interval), end]``). A shard that took no sample
    then (a process stalled for seconds on a starved machine: none from 0.0 to 5.2 s of a
    2 to 5 s pause, 2026-11-28) has no measure of the peak, which builds up to the end; a
    sample taken after the consumers resumed would show a drained lag as the peak."""
    lo = max(start_ns, end_ns - interval_ns)
    return bool(((sample_ts_ns >= lo) & (sample_ts_ns <= end_ns)).any())


def _pause_drain(meta: CellDoc, pause: PauseWindow, samples: _LagSamples) -> dict[str, Any]:
    """The lag's peak during the pause (up to one sampling interval after it) over the
    consumers whose samples saw the pause's end (:func:`pause_sampled`; none: no peak), and
    when and how fast every consumer drained it after (down to one interval of messages)."""
    uniq, total = samples.keys, samples.total
    rate, interval_s = meta.spec.rate_msgs_per_s, meta.spec.lag_interval_s
    start, end = pause.start_ns, pause.end_ns
    interval_ns = int(interval_s * 1e9)
    sampled = np.zeros(len(uniq[0]), dtype=bool)
    for c in np.unique(uniq[0]):
        mine = uniq[0] == c
        sampled |= mine & pause_sampled(uniq[1][mine], start, end, interval_ns)
    during = sampled & (uniq[1] >= start) & (uniq[1] <= end + interval_ns)
    peak = int(total[during].max()) if during.any() else None
    out: dict[str, Any] = {"pause_lag_peak_msgs": peak}
    threshold = max(1.0, rate * interval_s)
    after = uniq[1] > end
    drained_at = []
    for c in np.unique(uniq[0]):
        sel = after & (uniq[0] == c) & (total <= threshold)
        if sel.any():
            drained_at.append(int(uniq[1][sel].min()))
        else:
            drained_at = []
            break
    if drained_at and peak:
        ttd = (max(drained_at) - end) / 1e9
        out["time_to_drain_s"] = round(ttd, 3)
        out["drain_rate_msgs_per_s"] = round(peak / ttd, 3) if ttd > 0 else None
    return out


def _fmt(v: Any, spec: str = ".2f", reason: Any = None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return str(reason) if reason else "—"
    return format(v, spec)


def format_load_table(cells: list[dict[str, Any]]) -> str:
    """The CLI table: one line per cell, seed 003's columns first."""
    head = (f"{'consumers':>9} {'rate':>8} {'achieved':>9} {'rx avg':>9} {'loss %':>7} "
            f"{'failing':>7} {'dups':>5} {'e2e p50':>8} {'e2e p99':>8} {'svc p99':>8} "
            f"{'pub p99':>8} {'lag pk':>7}  flags")
    lines = [head, "-" * len(head)]
    for c in cells:
        if "target_rate_msgs_per_s" not in c:
            lines.append(f"{c.get('cell_id')}: {c.get('status')} {c.get('error') or ''}".rstrip())
            continue
        flags = [f for f in ("client_bound", "host_busy", "saturated", "cross_host_clock")
                 if c.get(f)]
        if c.get("broker_is_emulator"):
            flags.append("EMULATOR")
        if c.get("status") != "complete":
            flags.append(str(c.get("status")))
        lines.append(
            f"{c['consumers']:>9} {c['target_rate_msgs_per_s']:>8g} "
            f"{_fmt(c['achieved_rate_msgs_per_s'], '.1f'):>9} "
            f"{_fmt(c['rx_rate_msgs_per_s_avg'], '.1f'):>9} {_fmt(c['loss_pct'], '.3f'):>7} "
            f"{c['failing_clients']:>7} {c['duplicates']:>5} "
            f"{_fmt(c['e2e_p50_ms'], '.2f', c.get('e2e_p50_ms_reason')):>8} "
            f"{_fmt(c['e2e_p99_ms'], '.2f', c.get('e2e_p99_ms_reason')):>8} "
            f"{_fmt(c['service_e2e_p99_ms'], '.2f', c.get('service_e2e_p99_ms_reason')):>8} "
            f"{_fmt(c['publish_delay_p99_ms'], '.2f', c.get('publish_delay_p99_ms_reason')):>8} "
            f"{_fmt(c['lag_peak_msgs'], 'd'):>7}  {' '.join(flags)}")
        if c.get("thin_consumer") is not None:
            lines.append(_thin_line(c))
    return "\n".join(lines)


def _thin_line(c: dict[str, Any]) -> str:
    """The line under a thin-pipe cell: its thin consumer against the worst of the others."""
    link = ", ".join(x for x in (
        f"{c['thin_link_kbps']} KB/s" if c.get("thin_link_kbps") is not None else "",
        f"+{c['thin_link_delay_ms']:g} ms one way" if c.get("thin_link_delay_ms") is not None
        else "") if x) or "nothing added"
    return (f"{'':>9} thin consumer {c['thin_consumer']} ({link}): "
            f"{'FAILING' if c.get('thin_failing') else 'not failing'}, lag peak "
            f"{_fmt(c.get('thin_lag_peak_msgs'), 'd')}, e2e p99 "
            f"{_fmt(c.get('thin_e2e_p99_ms'), '.2f')} ms; the {c['consumers'] - 1} others: "
            f"{c.get('others_failing_clients')} failing, worst lag peak "
            f"{_fmt(c.get('others_worst_lag_peak_msgs'), 'd')}, worst e2e p99 "
            f"{_fmt(c.get('others_worst_e2e_p99_ms'), '.2f')} ms")


def json_cell(summary: dict[str, Any]) -> dict[str, Any]:
    """The ``--json`` object of a cell: the summary without the per-consumer detail."""
    return {k: v for k, v in summary.items() if k != "consumers_detail"}
