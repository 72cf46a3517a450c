"""Bench part (c): the Spark aggregation job against the same aggregation in pandas.

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
from spark_jobs._session import METRIC_PERCENTILES, local_builder
from tools.fake_samples import write_fake_samples

__all__ = ["bench_aggregation", "pandas_aggregate"]

_KEYS = list(aggregate_metrics.CELL_KEYS)
_CARRIED = list(aggregate_metrics.CARRIED_COLUMNS)
_RUN_ID = "20261122T010203Z-be0c4a"


def _read_lean(samples_dir: Path) -> pd.DataFrame:
    """Read the samples with only the columns the aggregation needs; strings as categoricals."""
    table = pq.read_table(samples_dir, columns=list(aggregate_metrics.REQUIRED_INPUT_COLUMNS),
                          partitioning="hive")
    return table.to_pandas(strings_to_categorical=True, self_destruct=True)


def pandas_aggregate(df: pd.DataFrame) -> pd.DataFrame:
    """The aggregation of ``aggregate_metrics.transform`` in pandas (percentile columns etc.).

    Same rules: statistics over non-warm-up ``message`` rows with status ok/late, exact
    nearest-rank percentiles, sent = ok + late + lost.
    """
    status = df["status"].astype(str) if df["status"].dtype == "category" else df["status"]
    kind = df["sample_kind"]
    is_msg = (kind == "message").to_numpy()
    measured = is_msg & ~df["is_warmup"].to_numpy()
    st = status.to_numpy()
    is_stat = measured & ((st == "ok") | (st == "late"))
    flags = pd.DataFrame({
        "sent_count": is_stat | (measured & (st == "lost")),
        "received_count": is_stat,
        "lost_count": measured & (st == "lost"),
        "duplicate_count": measured & (st == "duplicate"),
        "late_count": measured & (st == "late"),
        "error_count": measured & (st == "error"),
        "warmup_excluded_count": is_msg & df["is_warmup"].to_numpy(),
    }, index=df.index).astype("int64")
    keyed = pd.concat([df[_KEYS], flags], axis=1)
    out = keyed.groupby(_KEYS, observed=True, sort=True).sum()
    carried = df[_KEYS + _CARRIED].groupby(_KEYS, observed=True).first()
    out = out.join(carried)
    out["latency_resolution_ms"] = df.groupby(_KEYS, observed=True)["latency_resolution_ms"].max()

    stats = df.loc[is_stat]
    rows: dict[tuple[Any, ...], dict[str, float]] = {}
    for key, grp in stats.groupby(_KEYS, observed=True):
        rec: dict[str, float] = {}
        for col, pcts in METRIC_PERCENTILES.items():
            values = np.sort(grp[col].dropna().to_numpy())
            n = len(values)
            for name, (num, den) in pcts.items():
                rank = (n * num + den - 1) // den
                rec[f"{col}_{name}"] = float(values[rank - 1]) if n else np.nan
        rec["e2e_latency_ms_mean"] = float(grp["e2e_latency_ms"].mean())
        rec["e2e_latency_ms_max"] = float(grp["e2e_latency_ms"].max())
        rec["publish_latency_ms_mean"] = float(grp["publish_latency_ms"].mean())
        rec["publish_latency_ms_max"] = float(grp["publish_latency_ms"].max())
        rec["_last_receive_ns"] = float(grp["receive_ts_ns"].max())
        rows[key] = rec
    out = out.join(pd.DataFrame.from_dict(rows, orient="index").rename_axis(_KEYS))
    sent = df.loc[measured & ((st == "ok") | (st == "late") | (st == "lost"))]
    out["_first_send_ns"] = sent.groupby(_KEYS, observed=True)["send_ts_ns"].min()
    span_s = (out["_last_receive_ns"] - out["_first_send_ns"]) / 1e9
    out["measured_span_s"] = span_s.where(span_s > 0)
    out["throughput_msgs_per_s"] = out["received_count"] / out["measured_span_s"]
    out["throughput_mb_per_s"] = out["throughput_msgs_per_s"] * out["payload_bytes"] / 1e6

    first = df.loc[(kind == "first_message").to_numpy()]
    if len(first):
        fm = first.groupby([*_KEYS, "consumer_mode"], observed=True)[
            ["first_record_delay_ms", "assign_delay_ms"]].mean().unstack("consumer_mode")
        out["first_message_subscribe_ms"] = fm.get(("first_record_delay_ms", "subscribe"))
        out["first_message_assign_ms"] = fm.get(("first_record_delay_ms", "assign"))
        out["assign_delay_subscribe_ms"] = fm.get(("assign_delay_ms", "subscribe"))
    tool = df.loc[(kind == "tool_summary").to_numpy()]
    if len(tool):
        tp = tool.groupby([*_KEYS, "statistic"], observed=True)["e2e_latency_ms"].max()
        tp = tp.unstack("statistic")
        for stat, name in (("p50", "tool_p50_ms"), ("p99", "tool_p99_ms"),
                           ("p99.9", "tool_p999_ms"), ("avg", "tool_avg_ms")):
            out[name] = tp.get(stat)
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
    check = ["sent_count", "received_count", "lost_count", "duplicate_count",
             "e2e_latency_ms_p50", "e2e_latency_ms_p99", "e2e_latency_ms_p999",
             "publish_latency_ms_p99", "round_trip_ms_p99"]
    for rec in pdf.to_dict("records"):
        srow = by_key.get(tuple(str(rec[k]) for k in _KEYS))
        if srow is None:
            return False
        for col in check:
            a, b = srow[col], rec[col]
            if is_missing(a) != is_missing(b) or (not is_missing(a) and float(a) != float(b)):
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

