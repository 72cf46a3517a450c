"""Bench part (d): the Spark aggregation job against the same aggregation in pandas.

``bench_aggregation`` writes fake raw samples (:mod:`tools.fake_samples`), then times

* Spark: ``spark.read.parquet`` + ``aggregate_metrics.transform`` + ``collect()`` (the full
  result is forced) on a local[2] session;
* pandas: ``pyarrow`` read of the lean column set (strings as categoricals) + the same
  aggregation (exact nearest-rank percentiles, same counting rules) in pandas/numpy;

and returns rows/s for each and the ratio spark/pandas. Data generation is not timed.
"""

from __future__ import annotations

import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from kafkalab.paths import lab_dir, project_root
from kafkalab.stats import CI_CONFIDENCE, CI_PERCENTILES, MIN_SAMPLES, quantile_ci_ranks
from kafkalab.store import LabData
from kafkalab.values import is_missing
from spark_jobs import aggregate_metrics
from spark_jobs._session import METRIC_PERCENTILES, local_builder
from tools.fake_samples import write_fake_samples

__all__ = ["bench_aggregation", "pandas_aggregate"]

_KEYS = list(aggregate_metrics.CELL_KEYS)
_CARRIED = list(aggregate_metrics.CARRIED_COLUMNS)
_RUN_ID = "20261122T010203Z-be0c4a"


def _read_lean(samples_dir: Path) -> pd.DataFrame:
    """Read the samples with only the columns the aggregation needs (the schema 2 ones when
    the files have them); strings as categoricals."""
    import pyarrow.dataset as ds

    present = set(ds.dataset(samples_dir, format="parquet", partitioning="hive").schema.names)
    wanted = [*aggregate_metrics.REQUIRED_INPUT_COLUMNS,
              *(c for c in aggregate_metrics.OPTIONAL_INPUT_COLUMNS if c in present)]
    table = pq.read_table(samples_dir, columns=list(dict.fromkeys(wanted)), partitioning="hive")
    return table.to_pandas(strings_to_categorical=True, self_destruct=True)


def _at_rank(values: np.ndarray, censored: int, rank: int | None) -> float:
    """The value at 1-based ``rank`` of ``values`` (sorted) followed by ``censored`` +inf;
    NaN for no rank or a censored one."""
    if rank is None or rank > len(values):
        return float("nan")
    return float(values[rank - 1])


def _percentiles(metric: str, values: np.ndarray, censored: int = 0) -> dict[str, float]:
    """The percentile columns of ``metric`` (and, for e2e, its CIs and note) from the sorted
    received ``values`` and the number of ``censored`` ones: the rules of
    ``aggregate_metrics`` (minimum n, censored ranks, order-statistic intervals)."""
    n = len(values) + censored
    out: dict[str, Any] = {}
    reasons = []
    for name, (num, den) in METRIC_PERCENTILES[metric].items():
        rank = (n * num + den - 1) // den if n >= MIN_SAMPLES[name] else None
        out[f"{metric}_{name}"] = _at_rank(values, censored, rank)
        if metric == "e2e_latency_ms":
            if rank is None:
                reasons.append(f"{name}: n<{MIN_SAMPLES[name]}")
            elif rank > len(values):
                reasons.append(f"{name}: censored")
    if metric == "e2e_latency_ms":
        for name in CI_PERCENTILES:
            num, den = METRIC_PERCENTILES[metric][name]
            lo, hi = quantile_ci_ranks(n, num / den, CI_CONFIDENCE)
            out[f"{metric}_{name}_ci_low"] = _at_rank(values, censored, lo)
            out[f"{metric}_{name}_ci_high"] = _at_rank(values, censored, hi)
        out["e2e_latency_ms_percentiles_note"] = (
            "no messages" if n == 0 else "; ".join(reasons) or None)
    return out


def _median(values: np.ndarray) -> float:
    """Nearest-rank median (rank ``ceil(n/2)``) of sorted values; NaN when empty."""
    return float(values[(len(values) - 1) // 2]) if len(values) else float("nan")


def _codes(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(integer codes, values) of a column; categoricals keep their codes (null: -1)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return series.cat.codes.to_numpy(), np.asarray(series.cat.categories, dtype=object)
    codes, uniques = pd.factorize(series)
    return codes, np.asarray(uniques, dtype=object)


def _is(codes: tuple[np.ndarray, np.ndarray], *names: str) -> np.ndarray:
    """Rows whose value is one of ``names``."""
    ids = [i for i, v in enumerate(codes[1]) if v in names]
    return np.isin(codes[0], ids) if ids else np.zeros(len(codes[0]), dtype=bool)


def _floats(series: pd.Series) -> np.ndarray:
    return series.to_numpy(dtype=float, na_value=np.nan)


def _message_figures(df: pd.DataFrame) -> pd.DataFrame:
    """Counts, carried columns, means, maxima, span and the three metrics' percentiles of
    every cell: rows ordered by cell once (a radix sort of the cell codes), then per cell
    one ``np.sort`` per population and the ranks indexed."""
    n = len(df)
    cell = np.zeros(n, dtype=np.int64)
    for k in _KEYS:
        codes, cats = _codes(df[k])
        cell = cell * (len(cats) + 1) + (codes.astype(np.int64) + 1)
    cell_id, cell_keys = pd.factorize(cell)
    n_cells = len(cell_keys)
    order = np.argsort(cell_id.astype(np.int16 if n_cells < 2**15 else np.int64), kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(cell_id, minlength=n_cells))])
    first_rows = order[starts[:-1]]

    kind, status = _codes(df["sample_kind"]), _codes(df["status"])
    is_msg = _is(kind, "message")[order]
    warm = df["is_warmup"].fillna(False).to_numpy(dtype=bool)[order]
    measured = is_msg & ~warm
    st = (status[0][order], status[1])
    received = measured & _is(st, "ok", "late")
    censored = measured & _is(st, "lost", "error")
    e2e = _floats(df["e2e_latency_ms"])[order]
    publish = _floats(df["publish_latency_ms"])[order]
    round_trip = _floats(df["round_trip_ms"])[order]
    send_ns = _floats(df["send_ts_ns"])[order]
    receive_ns = _floats(df["receive_ts_ns"])[order]
    resolution = _floats(df["latency_resolution_ms"])[order]

    records = []
    for c in range(n_cells):
        s = slice(starts[c], starts[c + 1])
        rec: dict[str, Any] = {}
        m, r, cen = measured[s], received[s], censored[s]
        stc = st[0][s], st[1]
        rec["sent_count"] = int(r.sum() + cen.sum())
        rec["received_count"] = int(r.sum())
        rec["lost_count"] = int((m & _is(stc, "lost")).sum())
        rec["duplicate_count"] = int((m & _is(stc, "duplicate")).sum())
        rec["late_count"] = int((m & _is(stc, "late")).sum())
        rec["error_count"] = int((m & _is(stc, "error")).sum())
        rec["warmup_excluded_count"] = int((is_msg[s] & warm[s]).sum())
        e2e_r, pub_r = e2e[s][r], publish[s][r]
        e2e_sorted = np.sort(e2e_r[~np.isnan(e2e_r)])
        timed = r & ~np.isnan(e2e[s])          # the populations of the Spark job
        rec.update(_percentiles("e2e_latency_ms", e2e_sorted, int(cen.sum())))
        for name, values in (("publish_latency_ms", publish), ("round_trip_ms", round_trip)):
            v = values[s][timed]
            rec.update(_percentiles(name, np.sort(v[~np.isnan(v)])))
        rec["e2e_latency_ms_mean"] = float(e2e_sorted.mean()) if len(e2e_sorted) else np.nan
        rec["e2e_latency_ms_max"] = float(e2e_sorted[-1]) if len(e2e_sorted) else np.nan
        pub_r = pub_r[~np.isnan(pub_r)]
        rec["publish_latency_ms_mean"] = float(pub_r.mean()) if len(pub_r) else np.nan
        rec["publish_latency_ms_max"] = float(pub_r.max()) if len(pub_r) else np.nan
        sent_ns = send_ns[s][r | cen]
        rec["_first_send_ns"] = float(np.nanmin(sent_ns)) if len(sent_ns) else np.nan
        got_ns = receive_ns[s][r]
        rec["_last_receive_ns"] = float(np.nanmax(got_ns)) if len(got_ns) else np.nan
        res = resolution[s]
        rec["latency_resolution_ms"] = float(np.nanmax(res)) if (~np.isnan(res)).any() else np.nan
        records.append(rec)
    out = pd.DataFrame.from_records(records)
    carried = [c for c in [*_KEYS, *_CARRIED] if c in df.columns]
    head = df[carried].iloc[first_rows].reset_index(drop=True)
    for col in carried:
        if isinstance(head[col].dtype, pd.CategoricalDtype):
            head[col] = head[col].astype(object)
    return pd.concat([head, out], axis=1).set_index(_KEYS)


def pandas_aggregate(df: pd.DataFrame) -> pd.DataFrame:
    """The aggregation of ``aggregate_metrics.transform`` (aggregates schema 2) in
    pandas/numpy, the efficient single-machine way.

    Same rules: counts over non-warm-up ``message`` rows (sent = ok + late + lost + error);
    e2e percentiles exact nearest-rank over the sent messages with lost and failed ones
    censored, null below their minimum n or on a censored rank (with the note), 95 %
    order-statistic CIs for p50/p99; publish and round-trip percentiles over the received
    messages; message rate; first-message medians of the warm probes, the cold one apart.
    The rows are put in cell order once and each population sorted once (numpy), the ranks
    indexed (:func:`_message_figures`); the few probe and tool rows are done in pandas.
    """
    out = _message_figures(df)
    span_s = (out["_last_receive_ns"] - out["_first_send_ns"]) / 1e9
    out["measured_span_s"] = span_s.where(span_s > 0)
    out["message_rate_per_s"] = (out["received_count"] / out["measured_span_s"]).where(
        out["received_count"] > 0)
    out["message_rate_mb_per_s"] = out["message_rate_per_s"] * out["payload_bytes"] / 1e6

    kind = df["sample_kind"].astype(str) if len(df) else df["sample_kind"]
    first = df.loc[(kind == "first_message").to_numpy()]
    if len(first):
        cold = (first["cold_start"].astype("boolean").fillna(False).astype(bool)
                if "cold_start" in first
                else pd.Series(False, index=first.index))
        got_first = first["first_record_delay_ms"].notna()
        mode = first["consumer_mode"].astype(str)
        fm: dict[tuple[Any, ...], dict[str, float]] = {}
        for key, grp in first.groupby(_KEYS, observed=True):
            g_cold, g_got, g_mode = cold[grp.index], got_first[grp.index], mode[grp.index]
            delay, assign = grp["first_record_delay_ms"], grp["assign_delay_ms"]

            def warm_sorted(values: pd.Series, which: str, gm: pd.Series = g_mode,
                            gg: pd.Series = g_got, gc: pd.Series = g_cold) -> np.ndarray:
                return np.sort(values[gg & ~gc & (gm == which)].dropna().to_numpy(dtype=float))

            fm[tuple(str(k) for k in key)] = {
                "first_message_subscribe_ms": _median(warm_sorted(delay, "subscribe")),
                "first_message_assign_ms": _median(warm_sorted(delay, "assign")),
                "first_message_cold_ms": _median(np.sort(
                    delay[g_got & g_cold].to_numpy(dtype=float))),
                "first_message_lost_count": float((~g_got).sum()),
                "assign_delay_subscribe_ms": _median(warm_sorted(assign, "subscribe")),
            }
        out = out.join(pd.DataFrame.from_dict(fm, orient="index").rename_axis(_KEYS))
    tool = df.loc[(kind == "tool_summary").to_numpy()]
    if len(tool):
        tp = tool.groupby([*_KEYS, "statistic"], observed=True)["e2e_latency_ms"].max()
        tp = tp.unstack("statistic")
        tp.index = pd.MultiIndex.from_tuples([tuple(str(k) for k in i) for i in tp.index],
                                             names=_KEYS)
        for stat, name in (("p50", "tool_p50_ms"), ("p99", "tool_p99_ms"),
                           ("p99.9", "tool_p999_ms"), ("avg", "tool_avg_ms")):
            out[name] = tp.get(stat)
    if "e2e_latency_ms_percentiles_note" not in out:
        out["e2e_latency_ms_percentiles_note"] = None
    no_messages = out["sent_count"] == 0  # no population at all (Kafka's tool)
    out.loc[no_messages, "e2e_latency_ms_percentiles_note"] = "no messages"
    out["first_message_lost_count"] = (out["first_message_lost_count"].fillna(0)
                                       if "first_message_lost_count" in out else 0.0)
    out["percentile_method"] = "exact nearest-rank"
    return out.drop(columns=["_last_receive_ns", "_first_send_ns"]).sort_index().reset_index()


def _local_session(master: str, driver_memory: str) -> Any:
    """A loopback-only local session for the bench (the jobs' own builder, more memory)."""
    session = (
        local_builder("kafkalab-bench-aggregation", master)
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


_EXACT_COLUMNS: tuple[str, ...] = (
    "sent_count", "received_count", "lost_count", "error_count", "duplicate_count",
    "late_count", "warmup_excluded_count",
    *(f"e2e_latency_ms_{p}" for p in METRIC_PERCENTILES["e2e_latency_ms"]),
    *(f"e2e_latency_ms_{p}_ci_{side}" for p in CI_PERCENTILES for side in ("low", "high")),
    "e2e_latency_ms_percentiles_note", "e2e_latency_ms_max",
    *(f"publish_latency_ms_{p}" for p in METRIC_PERCENTILES["publish_latency_ms"]),
    "publish_latency_ms_max",
    *(f"round_trip_ms_{p}" for p in METRIC_PERCENTILES["round_trip_ms"]),
    "first_message_subscribe_ms", "first_message_assign_ms", "first_message_cold_ms",
    "first_message_lost_count", "assign_delay_subscribe_ms",
    "tool_p50_ms", "tool_p99_ms", "tool_p999_ms", "tool_avg_ms", "latency_resolution_ms",
)
"""Columns compared for equality (counts, every exact percentile and bound, maxima)."""
_CLOSE_COLUMNS: tuple[str, ...] = ("e2e_latency_ms_mean", "publish_latency_ms_mean",
                                   "measured_span_s", "message_rate_per_s")
"""Columns compared to 1e-9 relative (sums in another order)."""


def _mismatches(spark_rows: list[Any], pdf: pd.DataFrame) -> list[str]:
    """Where Spark and pandas disagree, cell by cell (empty: they agree); at most 10."""
    by_key = {tuple(r[k] for k in _KEYS): r.asDict() for r in spark_rows}
    found: list[str] = []
    if len(by_key) != len(pdf):
        found.append(f"cells: spark {len(by_key)}, pandas {len(pdf)}")
    for rec in pdf.to_dict("records"):
        key = tuple(str(rec[k]) for k in _KEYS)
        srow = by_key.get(key)
        if srow is None:
            found.append(f"{'/'.join(key)}: no Spark row")
            continue
        for col in (*_EXACT_COLUMNS, *_CLOSE_COLUMNS):
            a, b = srow.get(col), rec.get(col)
            if is_missing(a) and is_missing(b):
                continue
            if is_missing(a) != is_missing(b):
                same = False
            elif isinstance(a, str) or isinstance(b, str):
                same = str(a) == str(b)
            elif col in _CLOSE_COLUMNS:
                same = math.isclose(float(a), float(b), rel_tol=1e-9)
            else:
                same = float(a) == float(b)
            if not same:
                found.append(f"{'/'.join(key)} {col}: spark {a!r}, pandas {b!r}")
    return found[:10]


def _pandas_timed(samples_dir: Path) -> tuple[pd.DataFrame, float, int, int]:
    """Read + aggregate in pandas: (result, seconds, peak RSS bytes of this process,
    RSS bytes before the read)."""
    before = _rss_bytes()
    t0 = time.perf_counter()
    pdf = pandas_aggregate(_read_lean(samples_dir))
    seconds = time.perf_counter() - t0
    return pdf, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, before


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _pandas_in_child(samples_dir: Path, out_dir: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Run :func:`_pandas_timed` in a fresh Python process (``python -m tools.bench.spark``)
    so that its peak memory is the pandas aggregation's own; returns the result and
    ``{"seconds", "peak_rss_bytes", "start_rss_bytes"}``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    result_file = out_dir / "pandas-result.pkl"
    proc = subprocess.run(
        [sys.executable, "-m", "tools.bench.spark", str(samples_dir), str(result_file)],
        cwd=project_root(), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"pandas aggregation failed (exit {proc.returncode}): "
                           f"{proc.stderr.strip()[-2000:]}")
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    pdf = pd.read_pickle(result_file)
    result_file.unlink()
    return pdf, figures


def _jvm_heap_peak_bytes(session: Any, reset: bool = False) -> int | None:
    """Sum of the peak use of the driver JVM's heap pools since the last reset (local mode:
    the executors' tasks run in it too); None when the JVM cannot be asked."""
    try:
        factory = session.sparkContext._jvm.java.lang.management.ManagementFactory
        total = 0
        for pool in factory.getMemoryPoolMXBeans():
            if str(pool.getType().toString()) != "Heap memory":
                continue
            if reset:
                pool.resetPeakUsage()
            else:
                total += int(pool.getPeakUsage().getUsed())
        return total
    except Exception:  # a figure of the bench, never a failure
        return None


def _mem_available_bytes() -> int:
    """``MemAvailable`` of /proc/meminfo."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def _pandas_bytes_needed(done: Sequence[dict[str, Any]], n_rows: int) -> int | None:
    """Peak RSS the pandas side would need for ``n_rows``, scaled from the largest measured
    run before (None when there is none)."""
    measured = [r for r in done if not r.get("pandas_peak_rss_estimated")
                and r.get("pandas_peak_rss_bytes")]
    if not measured:
        return None
    last = max(measured, key=lambda r: r["rows"])
    return int(last["pandas_peak_rss_bytes"] * n_rows / last["rows"])


def _data_for(base: Path, n_rows: int, seed: int) -> Path:
    """``base`` holding ``n_rows`` fake sample rows (reused when a finished copy of the same
    rows and seed is there: ``.complete``); returns its samples directory."""
    marker = base / ".complete"
    stamp = json.dumps({"rows": n_rows, "seed": seed, "run_id": _RUN_ID})
    if not (marker.exists() and marker.read_text() == stamp):
        if base.exists():
            shutil.rmtree(base)
        write_fake_samples(base, n_rows, _RUN_ID, seed=seed)
        marker.write_text(stamp)
    return LabData(base).samples_dir


def bench_aggregation(
    rows_list: Sequence[int] = (1_000_000, 10_000_000),
    work_dir: str | Path | None = None,
    *,
    seed: int = 0,
    spark: Any = None,
    master: str = "local[2]",
    driver_memory: str = "4g",
    keep_data: bool = False,
    pandas_in_child: bool = True,
) -> list[dict[str, Any]]:
    """Time the Spark aggregation against pandas for each row count in ``rows_list``.

    Writes ``n`` fake sample rows into a lab data directory ``<work_dir>/rows=<n>/``
    (default ``work_dir``: ``<lab_dir>/bench/spark``; not timed; a finished copy of the same
    rows and seed is reused), then times

    * Spark: ``spark.read.parquet`` + ``aggregate_metrics.transform`` + ``collect()`` on a
      ``master`` session whose start (the JVM's) is timed apart, once, as
      ``jvm_startup_seconds``;
    * pandas: :func:`_read_lean` + :func:`pandas_aggregate` (numpy: each population sorted
      once), in a fresh Python process (``pandas_in_child``) so that its peak RSS is its
      own;

    and compares the two cell by cell. ``spark``: an existing session to use (else a local
    one is built and stopped at the end). ``keep_data``: leave the samples for the next run.
    Returns one dict per row count: ``rows``, ``cells``, ``spark_seconds``,
    ``pandas_seconds``, ``spark_rows_per_s``, ``pandas_rows_per_s``, ``spark_over_pandas``
    (ratio of rows/s, > 1 means Spark is faster), ``spark_seconds_over_pandas``,
    ``pandas_peak_rss_bytes`` (and ``pandas_start_rss_bytes``, the process before the
    read), ``spark_jvm_heap_peak_bytes``, ``spark_driver_memory``, ``jvm_startup_seconds``,
    ``results_match`` and ``mismatches``.
    """
    work = Path(work_dir) if work_dir is not None else lab_dir() / "bench" / "spark"
    own_session = spark is None
    t0 = time.perf_counter()
    session = spark if spark is not None else _local_session(master, driver_memory)
    startup_s = time.perf_counter() - t0 if own_session else None
    results: list[dict[str, Any]] = []
    try:
        session.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        for n_rows in rows_list:
            base = work / f"rows={n_rows}"
            samples = _data_for(base, n_rows, seed)

            _jvm_heap_peak_bytes(session, reset=True)
            t0 = time.perf_counter()
            spark_rows = aggregate_metrics.transform(session.read.parquet(str(samples))).collect()
            spark_s = time.perf_counter() - t0
            heap_peak = _jvm_heap_peak_bytes(session)

            row: dict[str, Any] = {
                "rows": n_rows,
                "cells": len(spark_rows),
                "spark_master": session.sparkContext.master,
                "spark_seconds": round(spark_s, 3),
                "spark_rows_per_s": round(n_rows / spark_s, 1),
            }
            need = _pandas_bytes_needed(results, n_rows)
            if need is not None and need > _mem_available_bytes():
                row.update(pandas_skipped=(
                    f"pandas would need ~{need / 2**30:.0f} GiB (peak RSS per row of the "
                    f"last run), {_mem_available_bytes() / 2**30:.0f} GiB available"),
                    pandas_seconds=None, pandas_rows_per_s=None, spark_over_pandas=None,
                    spark_seconds_over_pandas=None, pandas_peak_rss_bytes=need,
                    pandas_peak_rss_estimated=True, pandas_start_rss_bytes=None)
                mismatches = []
                pdf = None
            else:
                if pandas_in_child:
                    pdf, figures = _pandas_in_child(samples, work / "pandas")
                else:
                    pdf, secs, peak, start = _pandas_timed(samples)
                    figures = {"seconds": secs, "peak_rss_bytes": peak, "start_rss_bytes": start}
                pandas_s = float(figures["seconds"])
                mismatches = _mismatches(spark_rows, pdf)
                row.update(
                    pandas_seconds=round(pandas_s, 3),
                    pandas_rows_per_s=round(n_rows / pandas_s, 1),
                    spark_over_pandas=round(pandas_s / spark_s, 4),
                    spark_seconds_over_pandas=round(spark_s / pandas_s, 4),
                    pandas_peak_rss_bytes=figures["peak_rss_bytes"],
                    pandas_peak_rss_estimated=False,
                    pandas_start_rss_bytes=figures["start_rss_bytes"])
            results.append({
                **row,
                "spark_jvm_heap_peak_bytes": heap_peak,
                "spark_driver_memory": session.sparkContext.getConf().get(
                    "spark.driver.memory", None),
                "jvm_startup_seconds": None if startup_s is None else round(startup_s, 3),
                "results_match": None if pdf is None else not mismatches,
                "mismatches": mismatches,
            })
            del pdf
            if not keep_data:
                shutil.rmtree(base, ignore_errors=True)
    finally:
        if own_session:
            session.stop()
    return results


GOAL_ROWS = 10_000_000
"""The row count the issue-13 goals are stated at."""
GOAL_ROWS_PER_S = 1_000_000
GOAL_OVER_PANDAS = 1.5
GOAL_LINEAR_SLACK = 1.2
"""t(N) ≤ 1.2 × (N / 10 M) × t(10 M): 100 M rows in ≤ 12× the 10 M time."""


def goals(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue-13 goals judged on ``results`` (those at :data:`GOAL_ROWS` rows, and every
    larger row count against them): ``goal``, ``value``, ``limit``, ``met`` and, when missed,
    ``missed_by`` (how far over or under the limit, as a factor)."""
    at = {r["rows"]: r for r in results}
    base = at.get(GOAL_ROWS)
    if base is None:
        return []
    over = base["spark_seconds_over_pandas"]
    out = [
        {"goal": f"Spark rows/s at {GOAL_ROWS:,} rows >= {GOAL_ROWS_PER_S:,}",
         "value": base["spark_rows_per_s"], "limit": GOAL_ROWS_PER_S,
         "met": base["spark_rows_per_s"] >= GOAL_ROWS_PER_S,
         "missed_by": round(GOAL_ROWS_PER_S / base["spark_rows_per_s"], 3)},
        {"goal": f"Spark time / pandas time at {GOAL_ROWS:,} rows <= {GOAL_OVER_PANDAS}",
         "value": over, "limit": GOAL_OVER_PANDAS,
         "met": over is not None and over <= GOAL_OVER_PANDAS,
         "missed_by": None if over is None else round(over / GOAL_OVER_PANDAS, 3)},
        {"goal": "Spark and pandas equal cell by cell",
         "value": base["results_match"], "limit": True, "met": bool(base["results_match"]),
         "missed_by": None},
    ]
    for r in results:
        if r["rows"] <= GOAL_ROWS:
            continue
        limit = round(GOAL_LINEAR_SLACK * r["rows"] / GOAL_ROWS, 3)
        ratio = round(r["spark_seconds"] / base["spark_seconds"], 3)
        out.append({"goal": f"Spark time at {r['rows']:,} rows / at {GOAL_ROWS:,} <= {limit}",
                    "value": ratio, "limit": limit, "met": ratio <= limit,
                    "missed_by": round(ratio / limit, 3)})
        if r["results_match"] is not None:
            out.append({"goal": f"Spark and pandas equal cell by cell at {r['rows']:,} rows",
                        "value": r["results_match"], "limit": True,
                        "met": bool(r["results_match"]), "missed_by": None})
    for g in out:
        if g["met"]:
            g["missed_by"] = None
    return out


def format_results(results: Sequence[dict[str, Any]]) -> list[str]:
    """Lines for the terminal: the figures of each row count, then the goals."""
    lines = []
    for r in results:
        startup = r.get("jvm_startup_seconds")
        head = (f"  {r['rows']:>11,} rows, {r['cells']} cells: Spark {r['spark_seconds']:.2f} s "
                f"({r['spark_rows_per_s'] / 1e6:.2f} M rows/s), ")
        if r.get("pandas_seconds") is None:
            lines.append(head + f"pandas not run: {r.get('pandas_skipped')}")
            memory = (f"pandas peak RSS ~{r['pandas_peak_rss_bytes'] / 2**20:,.0f} MiB "
                      "(estimated)")
        else:
            lines.append(
                head + f"pandas {r['pandas_seconds']:.2f} s "
                f"({r['pandas_rows_per_s'] / 1e6:.2f} M rows/s); Spark/pandas time "
                f"{r['spark_seconds_over_pandas']:.2f}x; results equal: {r['results_match']}")
            memory = (f"pandas peak RSS {r['pandas_peak_rss_bytes'] / 2**20:,.0f} MiB "
                      f"(process at start {r['pandas_start_rss_bytes'] / 2**20:,.0f} MiB)")
        heap = r.get("spark_jvm_heap_peak_bytes")
        lines.append(
            f"  {'':>11}  {memory}; Spark JVM "
            f"heap peak {'?' if heap is None else f'{heap / 2**20:,.0f} MiB'} "
            f"(driver memory {r.get('spark_driver_memory')}); JVM start-up "
            f"{'n/a' if startup is None else f'{startup:.2f} s'} (not in the Spark time)")
        for m in r.get("mismatches", []):
            lines.append(f"    mismatch: {m}")
    for g in goals(results):
        verdict = "met" if g["met"] else f"MISSED by {g['missed_by']}x"
        lines.append(f"  goal {g['goal']}: {g['value']} -> {verdict}")
    return lines


def _main(argv: Sequence[str]) -> int:
    """``python -m tools.bench.spark SAMPLES_DIR RESULT.pkl``: the pandas side in a process
    of its own; prints ``{"seconds", "peak_rss_bytes", "start_rss_bytes"}`` as JSON."""
    samples_dir, result_file = Path(argv[0]), Path(argv[1])
    pdf, seconds, peak, start = _pandas_timed(samples_dir)
    pdf.to_pickle(result_file)
    print(json.dumps({"seconds": seconds, "peak_rss_bytes": peak, "start_rss_bytes": start}))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
