"""Bench part (d): the Spark aggregation job against the same aggregation in pandas.

``bench_aggregation`` writes fake raw samples (:mod:`tools.fake_samples`), then times

* Spark: ``spark.read.parquet`` + ``aggregate_metrics.transform`` + ``collect()`` (the full
  result is forced) on a local[2] session;
* pandas: ``pyarrow`` read of the lean column set (strings as categoricals) + the same
  aggregation (exact nearest-rank percentiles, same counting rules) in pandas/numpy;

and returns rows/s for each and the ratio spark/pandas. Data generation is not timed.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from kafkalab.paths import lab_dir
from kafkalab.store import LabData
from kafkalab.values import is_missing
from spark_jobs import aggregate_metrics
from spark_jobs._session import (
    CI_CONFIDENCE,
    CI_PERCENTILES,
    METRIC_PERCENTILES,
    MIN_SAMPLES,
    local_builder,
    quantile_ci_ranks,
)
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


def pandas_aggregate(df: pd.DataFrame) -> pd.DataFrame:
    """The aggregation of ``aggregate_metrics.transform`` (aggregates schema 2) in pandas.

    Same rules: counts over non-warm-up ``message`` rows (sent = ok + late + lost + error);
    e2e percentiles exact nearest-rank over the sent messages with lost and failed ones
    censored, null below their minimum n or on a censored rank (with the note), 95 %
    order-statistic CIs for p50/p99; publish and round-trip percentiles over the received
    messages; message rate; first-message medians of the warm probes, the cold one apart.
    """
    status = df["status"].astype(str) if df["status"].dtype == "category" else df["status"]
    kind = df["sample_kind"].astype(str).to_numpy()
    is_msg = kind == "message"
    warm = df["is_warmup"].fillna(False).astype(bool).to_numpy()
    measured = is_msg & ~warm
    st = status.astype(str).to_numpy()
    received = measured & ((st == "ok") | (st == "late"))
    censored = measured & ((st == "lost") | (st == "error"))
    flags = pd.DataFrame({
        "sent_count": received | censored,
        "received_count": received,
        "lost_count": measured & (st == "lost"),
        "duplicate_count": measured & (st == "duplicate"),
        "late_count": measured & (st == "late"),
        "error_count": measured & (st == "error"),
        "warmup_excluded_count": is_msg & warm,
    }, index=df.index).astype("int64")
    keyed = pd.concat([df[_KEYS], flags], axis=1)
    out = keyed.groupby(_KEYS, observed=True, sort=True).sum()
    carried = [c for c in _CARRIED if c in df.columns]
    out = out.join(df[_KEYS + carried].groupby(_KEYS, observed=True).first())
    out["latency_resolution_ms"] = df.groupby(_KEYS, observed=True)["latency_resolution_ms"].max()

    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    censored_n = df.loc[censored].groupby(_KEYS, observed=True).size()
    for key, grp in df.loc[received | censored].groupby(_KEYS, observed=True):
        got = grp[grp["status"].astype(str).isin(["ok", "late"])]
        rec: dict[str, Any] = {}
        e2e = np.sort(got["e2e_latency_ms"].dropna().to_numpy(dtype=float))
        rec.update(_percentiles("e2e_latency_ms", e2e, int(censored_n.get(key, 0))))
        timed = got[got["e2e_latency_ms"].notna()]  # the populations of the Spark job
        for col in ("publish_latency_ms", "round_trip_ms"):
            rec.update(_percentiles(col, np.sort(timed[col].dropna().to_numpy(dtype=float))))
        rec["e2e_latency_ms_mean"] = float(got["e2e_latency_ms"].mean())
        rec["e2e_latency_ms_max"] = float(got["e2e_latency_ms"].max())
        rec["publish_latency_ms_mean"] = float(got["publish_latency_ms"].mean())
        rec["publish_latency_ms_max"] = float(got["publish_latency_ms"].max())
        rec["_last_receive_ns"] = float(got["receive_ts_ns"].max())
        rec["_first_send_ns"] = float(grp["send_ts_ns"].min())
        rows[key] = rec
    out = out.join(pd.DataFrame.from_dict(rows, orient="index").rename_axis(_KEYS))
    span_s = (out["_last_receive_ns"] - out["_first_send_ns"]) / 1e9
    out["measured_span_s"] = span_s.where(span_s > 0)
    out["message_rate_per_s"] = (out["received_count"] / out["measured_span_s"]).where(
        out["received_count"] > 0)
    out["message_rate_mb_per_s"] = out["message_rate_per_s"] * out["payload_bytes"] / 1e6

    first = df.loc[kind == "first_message"]
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

            fm[key] = {
                "first_message_subscribe_ms": _median(warm_sorted(delay, "subscribe")),
                "first_message_assign_ms": _median(warm_sorted(delay, "assign")),
                "first_message_cold_ms": _median(np.sort(
                    delay[g_got & g_cold].to_numpy(dtype=float))),
                "first_message_lost_count": float((~g_got).sum()),
                "assign_delay_subscribe_ms": _median(warm_sorted(assign, "subscribe")),
            }
        out = out.join(pd.DataFrame.from_dict(fm, orient="index").rename_axis(_KEYS))
    tool = df.loc[kind == "tool_summary"]
    if len(tool):
        tp = tool.groupby([*_KEYS, "statistic"], observed=True)["e2e_latency_ms"].max()
        tp = tp.unstack("statistic")
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
    return out.drop(columns=["_last_receive_ns", "_first_send_ns"]).reset_index()


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


def _results_match(spark_rows: list[Any], pdf: pd.DataFrame) -> bool:
    """Counts and exact percentiles of Spark and pandas agree cell by cell."""
    by_key = {tuple(r[k] for k in _KEYS): r.asDict() for r in spark_rows}
    if len(by_key) != len(pdf):
        return False
    check = ["sent_count", "received_count", "lost_count", "error_count", "duplicate_count",
             "e2e_latency_ms_p50", "e2e_latency_ms_p99", "e2e_latency_ms_p999",
             "e2e_latency_ms_p50_ci_low", "e2e_latency_ms_p50_ci_high",
             "e2e_latency_ms_p99_ci_low", "e2e_latency_ms_p99_ci_high",
             "e2e_latency_ms_percentiles_note",
             "publish_latency_ms_p99", "round_trip_ms_p99", "first_message_subscribe_ms",
             "first_message_cold_ms", "first_message_lost_count"]
    for rec in pdf.to_dict("records"):
        srow = by_key.get(tuple(str(rec[k]) for k in _KEYS))
        if srow is None:
            return False
        for col in check:
            a, b = srow.get(col), rec.get(col)
            if is_missing(a) != is_missing(b):
                return False
            if is_missing(a):
                continue
            if isinstance(a, str) or isinstance(b, str):
                if str(a) != str(b):
                    return False
            elif float(a) != float(b):
                return False
    return True


def bench_aggregation(
    rows_list: Sequence[int] = (1_000_000, 10_000_000),
    work_dir: str | Path | None = None,
    *,
    seed: int = 0,
    spark: Any = None,
    master: str = "local[2]",
    driver_memory: str = "4g",
    keep_data: bool = False,
) -> list[dict[str, Any]]:
    """Time the Spark aggregation against pandas for each row count in ``rows_list``.

    Writes ``n`` fake sample rows into a throw-away lab data directory
    ``<work_dir>/rows=<n>/`` (default ``work_dir``: ``<lab_dir>/bench/spark``; not timed), then
    times read + aggregate + materialise for Spark (``transform`` + ``collect``) and pandas. ``spark``: an existing session to use (else a local one on ``master`` is built and
    stopped at the end). Returns one dict per row count: ``rows``, ``cells``,
    ``spark_seconds``, ``pandas_seconds``, ``spark_rows_per_s``, ``pandas_rows_per_s``,
    ``spark_over_pandas`` (ratio of rows/s, > 1 means Spark is faster), ``results_match``.
    """
    work = Path(work_dir) if work_dir is not None else lab_dir() / "bench" / "spark"
    own_session = spark is None
    session = spark if spark is not None else _local_session(master, driver_memory)
    results: list[dict[str, Any]] = []
    try:
        session.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        for n_rows in rows_list:
            base = work / f"rows={n_rows}"
            if base.exists():
                shutil.rmtree(base)
            write_fake_samples(base, n_rows, _RUN_ID, seed=seed)
            samples = LabData(base).samples_dir

            t0 = time.perf_counter()
            spark_rows = aggregate_metrics.transform(session.read.parquet(str(samples))).collect()
            spark_s = time.perf_counter() - t0

            t0 = time.perf_counter()
            pdf = pandas_aggregate(_read_lean(samples))
            pandas_s = time.perf_counter() - t0

            spark_rps = n_rows / spark_s
            pandas_rps = n_rows / pandas_s
            results.append({
                "rows": n_rows,
                "cells": len(spark_rows),
                "spark_master": session.sparkContext.master,
                "spark_seconds": round(spark_s, 3),
                "pandas_seconds": round(pandas_s, 3),
                "spark_rows_per_s": round(spark_rps, 1),
                "pandas_rows_per_s": round(pandas_rps, 1),
                "spark_over_pandas": round(spark_rps / pandas_rps, 4),
                "results_match": _results_match(spark_rows, pdf),
            })
            del pdf
            if not keep_data:
                shutil.rmtree(base, ignore_errors=True)
    finally:
        if own_session:
            session.stop()
    return results

