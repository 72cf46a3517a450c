"""Tests of spark_jobs/aggregate_load.py on fake load runs (tools/fake_load_samples.py).

Every figure is checked against an independent reference computed here with numpy/pandas
straight from the files (``_reference``), percentiles through ``kafkalab.stats.summarize``
(the engine's definition), and the special cases against hand-counted values: censoring,
duplicates not counted as unique, late vs missing, gaps, the outcomes sum, unexpected
arrivals, consumers that receive nothing, lag and client backlog, pause and drain.
One in-process aggregation per module; one run of the job's command line (the re-run of
the module's other run, which must replace its tables and leave the rest), in the shared
session: a spark-submit here cost a cold JVM for what the warm one checks as well (the job
file run as a script: ``test_job_scripts.py``; spark-submit itself:
``test_aggregate_metrics.py``, ``test_validate_metrics.py``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from kafkalab.cluster.flavors import DEFAULT_EMBEDDED
from kafkalab.payloads import HEADER_BYTES
from kafkalab.stats import MIN_SAMPLES, summarize
from spark_jobs import _session as shared
from spark_jobs import aggregate_load as al
from tools.fake_load_samples import FakeLoadCell, write_fake_load_run

RUN = "20261122T010203Z-load01"
OTHER_RUN = "20261123T010203Z-load02"

LOSSY = FakeLoadCell(consumers=3, rate_msgs_per_s=200, duration_s=2, warmup_s=0.5,
                     partitions=2, consumers_per_shard=2, failed=3, indeterminate=2, unsent=4,
                     missing={1: (3, 2)}, late={2: 4}, duplicates={2: 6},
                     warmup_duplicates={2: 1}, unexpected={0: 1})
PAUSED = FakeLoadCell(consumers=2, acks="0", rate_msgs_per_s=100, duration_s=3, warmup_s=0.5,
                      pause_at_s=1.0, pause_for_s=0.8, lag_interval_s=0.25)
BIG = FakeLoadCell(consumers=4, rate_msgs_per_s=500, duration_s=2.5, warmup_s=0.5,
                   acks="all", missing={3: (3, 2)})
SILENT = FakeLoadCell(consumers=3, silent=(2,), rate_msgs_per_s=50, duration_s=2,
                      warmup_s=0.5, status="failed")
CELLS = (LOSSY, PAUSED, BIG, SILENT)
PCTS = ("p50", "p90", "p99", "p999")


# --------------------------------------------------------------------------- reference


def _read_cell(cell_dir: Path) -> dict[str, Any]:
    doc = json.loads((cell_dir / "cell.json").read_text())
    receipts = pd.concat([pd.read_parquet(f) for f in sorted(cell_dir.glob("receipts-*"))])
    lag = pd.concat([pd.read_parquet(f) for f in sorted(cell_dir.glob("lag-*"))])
    return {"doc": doc, "sends": pd.read_parquet(cell_dir / "sends.parquet"),
            "receipts": receipts, "lag": lag}


def _gaps(missing_mask: np.ndarray) -> int:
    """Maximal runs of True."""
    padded = np.concatenate([[False], missing_mask, [False]]).astype(np.int8)
    return int((np.diff(padded) == 1).sum())


def _stat_columns(prefix: str, values: Any, censored: int = 0) -> dict[str, Any]:
    s = summarize(list(values), censored)
    out: dict[str, Any] = {}
    for p in PCTS:
        out[f"{prefix}_{p}_ms"] = getattr(s, f"{p}_ms") if s else None
        out[f"{prefix}_{p}_ms_reason"] = (s.reasons.get(p) if s else "no messages")
    out[f"{prefix}_max_ms"] = s.max_ms if s else None
    if prefix == "e2e" and s:
        for p in ("p50", "p99"):
            out[f"e2e_{p}_ms_ci_low"], out[f"e2e_{p}_ms_ci_high"] = s.ci[p]
    return out


def _reference(cell_dir: Path) -> dict[str, Any]:
    """The contract's definitions, computed with numpy/pandas from the cell's files."""
    c = _read_cell(cell_dir)
    doc, sends, receipts, lag = c["doc"], c["sends"], c["receipts"], c["lag"]
    spec = doc["spec"]
    rate, n_consumers = spec["rate_msgs_per_s"], spec["consumers"]
    stop, start = doc["stop_ts_ns"], doc["measure_start_ns"]
    w = sends[~sends.is_warmup]
    sent = w[w.send_ts_ns.notna()]
    acked = w[w.outcome == "acked"]
    e_set = (sent if spec["acks"] == "0" else acked).sort_values("seq")
    e_seqs = e_set.seq.to_numpy()
    rw = receipts[~receipts.is_warmup]
    first = rw[~rw.duplicate]
    consumers: dict[int, dict[str, Any]] = {}
    pooled_e2e: list[float] = []
    pooled_service: list[float] = []
    for k in range(n_consumers):
        fc = first[first.consumer == k]
        in_e = fc.seq.isin(e_seqs).to_numpy()
        fe = fc[in_e]
        unique = len(fe)
        missing = len(e_seqs) - unique
        consumers[k] = {
            "unique_msgs": unique, "missing_msgs": missing,
            "late_msgs": int(fe.after_stop.sum()),
            "duplicates": int(((rw.consumer == k) & rw.duplicate).sum()),
            "unexpected_msgs": int((~in_e).sum()),
            "gaps": _gaps(~np.isin(e_seqs, fe.seq.to_numpy())),
            "rx_rate_msgs_per_s": float((fc.receive_ts_ns <= stop).sum()) / ((stop - start) / 1e9),
            "failing": missing > 0,
        }
        s = summarize(fe.e2e_latency_ms.tolist(), missing)
        sv = summarize(fe.service_e2e_latency_ms.tolist(), missing)
        consumers[k].update(e2e_p50_ms=s.p50_ms if s else None,
                            e2e_p99_ms=s.p99_ms if s else None,
                            e2e_max_ms=s.max_ms if s else None,
                            service_e2e_p99_ms=sv.p99_ms if sv else None)
        pooled_e2e += fe.e2e_latency_ms.tolist()
        pooled_service += fe.service_e2e_latency_ms.tolist()
    total_missing = sum(x["missing_msgs"] for x in consumers.values())
    denominator = len(e_seqs) * n_consumers
    cell: dict[str, Any] = {
        "intended_msgs": len(w), "acked_msgs": len(acked),
        "failed_msgs": int((w.outcome == "failed").sum()),
        "indeterminate_msgs": int((w.outcome == "indeterminate").sum()),
        "unsent_msgs": int((w.outcome == "unsent").sum()), "sent_msgs": len(sent),
        "expected_msgs": len(e_seqs),
        "achieved_rate_msgs_per_s": len(sent) / (
            (sent.send_ts_ns.max() - w.intended_ts_ns.min()) / 1e9 + 1 / rate),
        "missing_msgs": total_missing,
        "loss_pct": 100.0 * total_missing / denominator,
        "late_pct": 100.0 * sum(x["late_msgs"] for x in consumers.values()) / denominator,
        "failing_clients": sum(x["failing"] for x in consumers.values()),
        "duplicates": sum(x["duplicates"] for x in consumers.values()),
        "unexpected_msgs": sum(x["unexpected_msgs"] for x in consumers.values()),
        "rx_rate_msgs_per_s_avg": float(np.mean([x["rx_rate_msgs_per_s"]
                                                 for x in consumers.values()])),
        "rx_rate_msgs_per_s_min": min(x["rx_rate_msgs_per_s"] for x in consumers.values()),
        **_stat_columns("e2e", pooled_e2e, total_missing),
        **_stat_columns("service_e2e", pooled_service, total_missing),
        **_stat_columns("publish_delay", sent.publish_delay_ms),
        **_stat_columns("ack_latency", acked.ack_latency_ms),
    }
    # lag: known partitions summed per (consumer, sample); backlog = acked(t) - received(t)
    ack_times = np.sort(e_set.ack_ts_ns.dropna().to_numpy(dtype=np.int64))
    rows = []
    for (k, ts), g in lag.groupby(["consumer", "sample_ts_ns"]):
        fe = first[(first.consumer == k) & first.seq.isin(e_seqs)]
        received = int(np.searchsorted(np.sort(fe.receive_ts_ns.to_numpy()), ts, "right"))
        acked_t = int(np.searchsorted(ack_times, ts, "right"))
        rows.append({"consumer": int(k), "sample_ts_ns": int(ts),
                     "lag_msgs": None if g.lag_msgs.isna().all() else int(g.lag_msgs.sum()),
                     "paused": bool(g.paused.any()), "acked_msgs": acked_t,
                     "client_backlog_msgs": acked_t - received})
    lag_rows = pd.DataFrame(rows)
    total = lag_rows.lag_msgs.fillna(0)                 # unknown counts as 0 in the figures
    cell["lag_peak_msgs"] = int(total.max())
    cell["client_backlog_peak_msgs"] = max(0, int(lag_rows.client_backlog_msgs.max()))
    in_window = lag_rows.sample_ts_ns.between(start, stop)
    ends = [total[g.index[-1]] for _, g in lag_rows[in_window].groupby("consumer")]
    cell["lag_end_msgs"] = int(max(ends))
    cell["lag_median_msgs"] = float(np.median(total[in_window]))
    cell["lag_growing"] = bool(cell["lag_end_msgs"] > max(rate * spec["lag_interval_s"],
                                                          2 * cell["lag_median_msgs"]))
    pause = doc.get("pause")
    if pause:
        interval_ns = int(spec["lag_interval_s"] * 1e9)
        during = lag_rows.sample_ts_ns.between(pause["start_ns"], pause["end_ns"] + interval_ns)
        cell["pause_lag_peak_msgs"] = int(total[during].max())
        threshold = max(1.0, rate * spec["lag_interval_s"])
        drained = [g[(g.sample_ts_ns > pause["end_ns"]) & (total[g.index] <= threshold)]
                   .sample_ts_ns.min() for _, g in lag_rows.groupby("consumer")]
        cell["time_to_drain_s"] = (max(drained) - pause["end_ns"]) / 1e9
        cell["drain_rate_msgs_per_s"] = cell["pause_lag_peak_msgs"] / cell["time_to_drain_s"]
    return {"cell": cell, "consumers": consumers, "lag": lag_rows}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def lab(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One fake run of four cells (and another run), aggregated once, read back."""
    root = tmp_path_factory.mktemp("loadlab")
    dirs = write_fake_load_run(root, RUN, CELLS, seed=3)
    write_fake_load_run(root, OTHER_RUN, [LOSSY], seed=4)
    out = root / "aggregates" / "load"
    counts = al.run(spark, str(root / "load"), str(out), RUN)
    al.run(spark, str(root / "load"), str(out), OTHER_RUN)
    run_dir = out / f"run_id={RUN}"
    tables = {t: pd.read_parquet(run_dir / f"{t}.parquet") for t in al.TABLES}
    return {
        "root": root, "out": out, "counts": counts, "tables": tables,
        "dirs": {c.cell_id: d for c, d in zip(CELLS, dirs, strict=True)},
        "cells": {r["cell_id"]: r for r in tables["load_cells"].to_dict("records")},
        "consumers": {(r["cell_id"], r["consumer"]): r
                      for r in tables["load_consumers"].to_dict("records")},
    }


def _clean(value: Any) -> Any:
    """pandas' NaN/NA and numpy scalars as plain Python (None for missing)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    return value.item() if hasattr(value, "item") else value


# --------------------------------------------------------------------------- tests


def test_tables_columns_and_row_counts(lab: dict[str, Any]) -> None:
    t = lab["tables"]
    assert tuple(t["load_cells"].columns) == al.CELL_COLUMNS
    assert tuple(t["load_consumers"].columns) == tuple(al.CONSUMER_SCHEMA)
    assert tuple(t["load_lag"].columns) == tuple(al.LAG_SCHEMA)
    assert lab["counts"]["load_cells"] == 4
    assert lab["counts"]["load_consumers"] == sum(c.consumers for c in CELLS)
    assert len(t["load_consumers"]) == lab["counts"]["load_consumers"]
    assert set(t["load_cells"].run_id) == {RUN}
    assert set(t["load_cells"].run_date) == {"2026-11-22"}
    schema = pq.read_schema(next((lab["out"] / f"run_id={RUN}" / "load_cells.parquet")
                                 .glob("*.parquet")))
    assert str(schema.field("intended_msgs").type) == "int64"
    assert str(schema.field("e2e_p99_ms").type) == "double"


def test_every_cell_matches_the_reference(lab: dict[str, Any]) -> None:
    """Counts, rates, loss, every percentile (with reasons and CIs), lag peak and drain."""
    for cell_id, cell_dir in lab["dirs"].items():
        ref = _reference(cell_dir)["cell"]
        row = lab["cells"][cell_id]
        for key, want in ref.items():
            got = _clean(row[key])
            want = _clean(want)
            if isinstance(want, float) and key.endswith(("_per_s", "_pct", "_avg", "_min",
                                                         "_s")):
                assert got == pytest.approx(want, rel=1e-12), (cell_id, key)
            else:
                assert got == want, (cell_id, key, got, want)


def test_every_consumer_matches_the_reference(lab: dict[str, Any]) -> None:
    for cell_id, cell_dir in lab["dirs"].items():
        for k, ref in _reference(cell_dir)["consumers"].items():
            row = lab["consumers"][(cell_id, k)]
            for key, want in ref.items():
                if key == "rx_rate_msgs_per_s":
                    assert row[key] == pytest.approx(want, rel=1e-12), (cell_id, k)
                else:
                    assert _clean(row[key]) == _clean(want), (cell_id, k, key)


def test_lag_rows_match_the_reference(lab: dict[str, Any]) -> None:
    lag = lab["tables"]["load_lag"]
    for cell_id, cell_dir in lab["dirs"].items():
        ref = _reference(cell_dir)["lag"].sort_values(["consumer", "sample_ts_ns"])
        got = lag[lag.cell_id == cell_id].sort_values(["consumer", "sample_ts_ns"])
        assert len(got) == len(ref), cell_id
        for col in ("consumer", "sample_ts_ns", "acked_msgs", "client_backlog_msgs", "paused"):
            assert got[col].tolist() == ref[col].tolist(), (cell_id, col)
        assert [_clean(v) for v in got.lag_msgs] == [_clean(v) for v in ref.lag_msgs], cell_id


def test_outcomes_add_up_and_the_hand_counted_faults(lab: dict[str, Any]) -> None:
    r = lab["cells"][LOSSY.cell_id]
    # 2 s at 200/s = 400 intended, 100 of them warm-up
    assert (r["intended_msgs"], r["warmup_msgs"]) == (300, 100)
    assert (r["acked_msgs"], r["failed_msgs"], r["indeterminate_msgs"], r["unsent_msgs"]) == (
        291, 3, 2, 4)
    assert r["acked_msgs"] + r["failed_msgs"] + r["indeterminate_msgs"] + r["unsent_msgs"] == (
        r["intended_msgs"])
    assert r["sent_msgs"] == 296 and r["expected_msgs"] == 291   # acks 1: E = acked
    c = {k: lab["consumers"][(LOSSY.cell_id, k)] for k in range(3)}
    # consumer 1 lost two runs (3 + 2): missing 5, two gaps, failing
    assert (c[1]["missing_msgs"], c[1]["gaps"], c[1]["failing"]) == (5, 2, True)
    # consumer 2: 4 late (received after the stop: unique, not missing), 6 duplicates in
    # the window (the warm-up duplicate is not counted), duplicates not unique
    assert (c[2]["late_msgs"], c[2]["missing_msgs"], c[2]["failing"]) == (4, 0, False)
    assert (c[2]["duplicates"], c[2]["unique_msgs"]) == (6, 291)
    # consumer 0 received a failed message anyway: unexpected, not unique
    assert (c[0]["unexpected_msgs"], c[0]["unique_msgs"]) == (1, 291)
    assert (r["failing_clients"], r["duplicates"], r["missing_msgs"], r["late_msgs"]) == (
        1, 6, 5, 4)
    assert r["loss_pct"] == pytest.approx(100 * 5 / (291 * 3))
    assert r["late_pct"] == pytest.approx(100 * 4 / (291 * 3))
    # two shards of two consumers (consumers_per_shard=2)
    assert [c[k]["shard"] for k in range(3)] == [0, 0, 1]


def test_censoring_and_minimum_samples(lab: dict[str, Any]) -> None:
    big = lab["cells"][BIG.cell_id]
    # 1000 expected × 4 consumers = 4000; 5 missing: rank 3996 of p99.9 lands beyond the
    # 3995 received values -> censored; p99 (rank 3960) is a received value
    assert big["expected_msgs"] == 1000 and big["missing_msgs"] == 5
    assert big["e2e_p999_ms"] is None or math.isnan(big["e2e_p999_ms"])
    assert big["e2e_p999_ms_reason"] == "censored"
    assert big["e2e_p99_ms"] > 0 and big["e2e_p99_ms_reason"] is None
    assert big["service_e2e_p999_ms_reason"] == "censored"
    lossy = lab["cells"][LOSSY.cell_id]            # 873 values: p99.9 needs 1000
    assert lossy["e2e_p999_ms_reason"] == f"n<{MIN_SAMPLES['p999']}"
    silent = lab["cells"][SILENT.cell_id]          # 75 × 3, one consumer got nothing
    assert silent["e2e_p90_ms_reason"] == "censored"    # rank 203 > 150 received
    assert silent["e2e_p50_ms"] > 0                     # rank 113 <= 150
    assert silent["publish_delay_p99_ms_reason"] == "n<100"
    c3 = lab["consumers"][(BIG.cell_id, 3)]              # 995 of 1000: p99 rank 990 defined
    assert c3["e2e_p99_ms"] > 0 and c3["missing_msgs"] == 5 and c3["gaps"] == 2


def test_consumer_that_received_nothing(lab: dict[str, Any]) -> None:
    c = lab["consumers"][(SILENT.cell_id, 2)]
    assert (c["unique_msgs"], c["missing_msgs"], c["gaps"], c["failing"]) == (0, 75, 1, True)
    assert c["rx_rate_msgs_per_s"] == 0.0 and _clean(c["e2e_p50_ms"]) is None
    assert _clean(c["lag_peak_msgs"]) is None            # never positioned: lag unknown
    lag = lab["tables"]["load_lag"]
    assert lag[(lag.cell_id == SILENT.cell_id) & (lag.consumer == 2)].lag_msgs.isna().all()
    row = lab["cells"][SILENT.cell_id]
    assert row["status"] == "failed" and row["failing_clients"] == 1
    assert row["loss_pct"] == pytest.approx(100 / 3)
    assert row["rx_rate_msgs_per_s_min"] == 0.0


def test_pause_lag_backlog_and_drain(lab: dict[str, Any]) -> None:
    r = lab["cells"][PAUSED.cell_id]
    assert r["acks"] == "0" and r["expected_msgs"] == r["sent_msgs"] == 250
    # paused 1.0–1.8 s at 100 msg/s: the backlog grows ~25 per 0.25 s sample to 75
    assert r["lag_peak_msgs"] == r["pause_lag_peak_msgs"] == 75
    assert r["time_to_drain_s"] == pytest.approx(0.2)          # first sample after 1.8 s
    assert r["drain_rate_msgs_per_s"] == pytest.approx(75 / 0.2)
    lag = lab["tables"]["load_lag"]
    mine = lag[(lag.cell_id == PAUSED.cell_id) & (lag.consumer == 0)]
    paused = mine[mine.paused]
    assert paused.lag_msgs.tolist() == [0, 25, 50, 75]
    # the two lag measures agree here (log end - position vs acked - received)
    assert paused.client_backlog_msgs.tolist() == paused.lag_msgs.tolist()
    assert _clean(mine.lag_msgs.iloc[0]) is None           # no position before first fetch
    assert _clean(lab["cells"][LOSSY.cell_id]["time_to_drain_s"]) is None   # no pause


def test_rates_bytes_and_flags(lab: dict[str, Any]) -> None:
    r = lab["cells"][LOSSY.cell_id]
    # cell.json's payload_bytes is the wire size (as the engine writes it): body + header
    assert r["payload_bytes"] == r["wire_bytes"] == 1024 + HEADER_BYTES
    assert r["achieved_mb_per_s"] == pytest.approx(r["achieved_rate_msgs_per_s"] * 1056 / 1e6)
    # window 0.5 s .. 2.0 s; the last sent is the 296th, intended at 0.5 + 295/200 s
    assert r["achieved_rate_msgs_per_s"] == pytest.approx(296 / (295 / 200 + 1 / 200),
                                                          rel=1e-3)
    assert r["target_rate_msgs_per_s"] == 200.0
    assert r["saturated"] is False or r["saturated"] == 0      # ~0.1 ms delay < 5 ms interval
    assert r["client_bound"] == 0 and r["broker_is_emulator"] == 0
    assert (r["cluster_flavor"], r["broker_count"], r["partitions"]) == (DEFAULT_EMBEDDED.name, 3, 2)
    assert r["percentile_method"] == "exact nearest-rank" and r["ci_confidence"] == 0.95


def test_input_errors(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(shared.InputError, match="path not found"):
        al.extract(spark, str(tmp_path / "nope"), RUN)
    (tmp_path / "load").mkdir()
    with pytest.raises(shared.InputError, match="no load cells"):
        al.extract(spark, str(tmp_path / "load"), RUN)
    code = al.main(["--load", str(tmp_path / "missing"), "--out", str(tmp_path / "o"),
                    "--run-id", RUN])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "load samples path not found" in err


def test_the_command_line_replaces_the_run_and_leaves_others(
        spark: Any, lab: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """The job's command line, with ``--validate-out`` (the DAG param
    ``one_spark_session``), re-runs the module's other run (aggregated by :func:`lab`): its
    tables are replaced as a set (not added to), the module's run is left as it was, no
    staging folder is left; then the load suite's result is written in the same session;
    the exit code is the aggregation's whatever the verdict (here failed: a complete cell
    lost messages)."""
    out: Path = lab["out"]
    other = out / f"run_id={OTHER_RUN}"
    before = sorted(p.name for p in other.rglob("part-*.parquet"))
    assert len(before) == 3
    validation = lab["root"] / "validation"
    code = al.main(["--load", str(lab["root"] / "load"), "--out", str(out),
                    "--run-id", OTHER_RUN, "--validate-out", str(validation)])
    printed = capsys.readouterr()
    assert code == 0, (printed.out + printed.err)[-3000:]
    assert "wrote 1 load_cells, 3 load_consumers" in printed.out
    after = pd.read_parquet(other / "load_cells.parquet")
    assert after.cell_id.tolist() == [LOSSY.cell_id] and after.run_id.tolist() == [OTHER_RUN]
    assert len(list(other.rglob("part-*.parquet"))) == 3        # replaced, not added to
    assert not [p for p in out.iterdir() if p.name.startswith(".")]   # no staging left
    assert len(pd.read_parquet(out / f"run_id={RUN}" / "load_cells.parquet")) == 4
    doc = json.loads((validation / f"{OTHER_RUN}-load.json").read_text())
    assert doc["run_id"] == OTHER_RUN and doc["suite"] == "load"
    assert set(doc["suites"]) == {"load_cells", "load_consumers"}
    assert doc["success"] is False
    assert f"aggregate_load --validate-out: run {OTHER_RUN} failed" in printed.out + printed.err


def test_spark_equals_the_engine_summary(lab: dict[str, Any]) -> None:
    """Every key the engine's local summary (``kafkalab.load.summary.summarize_cell``) shares
    with ``load_cells`` / ``load_consumers`` has the same value. The summary rounds rates to
    3 decimals, percentages to 6 and drain figures to 3; those are compared to that
    precision, everything else (counts, every percentile and CI, reasons, flags) exactly."""
    from kafkalab.load.summary import summarize_cell

    rounded = ("_per_s", "_pct", "time_to_drain_s", "_per_s_avg", "_per_s_min")
    for cell_id, cell_dir in lab["dirs"].items():
        summary = summarize_cell(cell_dir)
        row = lab["cells"][cell_id]
        shared_keys = [k for k in summary if k in al.CELL_SCHEMA]
        assert len(shared_keys) > 60, cell_id
        for key in al.CELL_COLUMNS:
            if key.endswith("_reason"):              # absent from the summary when defined
                assert _clean(row[key]) == summary.get(key), (cell_id, key)
        for key in shared_keys:
            want, got = _clean(summary[key]), _clean(row[key])
            if isinstance(want, float) and key.endswith(rounded):
                assert got == pytest.approx(want, abs=1e-3), (cell_id, key, got, want)
            else:
                assert got == want, (cell_id, key, got, want)
        for detail in summary["consumers_detail"]:
            mine = lab["consumers"][(cell_id, detail["consumer"])]
            for key, want in detail.items():
                if key == "rx_rate_msgs_per_s" and want is not None:
                    assert mine[key] == pytest.approx(want, abs=1e-3), (cell_id, key)
                else:
                    assert _clean(mine[key]) == want, (cell_id, detail["consumer"], key)
