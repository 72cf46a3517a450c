"""Tests of spark_jobs/aggregate_metrics.py: exact percentiles, counting rules, idempotent load."""

from __future__ import annotations

import math
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkalab.airflow.spark_submit import spark_py_files
from kafkalab.paths import spark_jobs_dir
from spark_jobs import aggregate_metrics as am
from tools.fake_samples import (
    SAMPLES_ARROW_SCHEMA,
    make_fake_samples,
    to_arrow_table,
    write_fake_samples,
)

RUN = "20261122T010203Z-aaaaaa"
BASE_NS = 1_795_309_323_000_000_000


def _row(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(SAMPLES_ARROW_SCHEMA.names)
    row.update(
        run_id=RUN, run_date="2026-11-22", sample_kind="message", scenario="kafka-python",
        client="kafka-python", client_version="3.0.12", profile="latency", workload="baseline",
        payload="1kb", payload_encoding="raw", payload_bytes=1024, cluster_flavor="kafka09",
        broker_version="0.9.0.1", broker_is_emulator=False, topic="t", seq=0,
        is_warmup=False, status="ok", latency_resolution_ms=1e-6,
    )
    row.update(overrides)
    return row


def _msg(seq: int, e2e_ms: float | None, status: str = "ok", warmup: bool = False,
         **kw: Any) -> dict[str, Any]:
    send = BASE_NS + seq * 1_000_000
    received = e2e_ms is not None and status in ("ok", "late", "duplicate")
    return _row(
        seq=seq, is_warmup=warmup, status=status, send_ts_ns=send,
        ack_ts_ns=None if status == "error" else send + 500_000,
        receive_ts_ns=send + round(e2e_ms * 1e6) if received else None,
        e2e_latency_ms=e2e_ms if received else None,
        publish_latency_ms=None if status == "error" else (e2e_ms or 1.0) / 10,
        **kw,
    )


def _df(spark: Any, rows: list[dict[str, Any]]) -> Any:
    return spark.createDataFrame(pa.Table.from_pylist(rows, schema=SAMPLES_ARROW_SCHEMA))


@pytest.fixture(scope="module")
def known_rows() -> list[dict[str, Any]]:
    """One kafka-python cell with latencies 1..100 plus every special kind of row."""
    rng = random.Random(7)
    lat = list(range(1, 101))
    rng.shuffle(lat)
    rows = [_msg(s, 1000.0 + s, warmup=True) for s in range(3)]          # warm-up: excluded
    for i, v in enumerate(lat):
        rows.append(_msg(3 + i, float(v), status="late" if v == 100 else "ok"))
    rows.append(_msg(103, None, status="lost"))
    rows.append(_msg(104, None, status="error", error="boom"))
    rows.append(_msg(10, 5000.0, status="duplicate"))                    # extra receipt
    rows += [
        _row(sample_kind="first_message", seq=0, consumer_mode="subscribe",
             assign_delay_ms=2900.0, first_record_delay_ms=3000.0),
        _row(sample_kind="first_message", seq=1, consumer_mode="subscribe",
             assign_delay_ms=2950.0, first_record_delay_ms=3100.0),
        _row(sample_kind="first_message", seq=0, consumer_mode="assign",
             assign_delay_ms=1.0, first_record_delay_ms=10.0),
        _row(sample_kind="first_message", seq=1, consumer_mode="assign",
             assign_delay_ms=2.0, first_record_delay_ms=20.0),
    ]
    jvm = {"scenario": "jvm-e2e", "client": "kafka.tools.EndToEndLatency",
           "client_version": "0.9.0.1", "sample_kind": "tool_summary"}
    for stat, value, res in (("avg", 2.1675, 1e-4), ("p50", 2.0, 1.0), ("p99", 6.0, 1.0),
                             ("p99.9", 12.0, 1.0)):
        rows.append(_row(**jvm, statistic=stat, e2e_latency_ms=value, latency_resolution_ms=res))
    # a second message cell with 10 values: p50 = 5th, p90 = 9th, p95 = p99 = 10th value
    for i, v in enumerate([70, 10, 40, 100, 20, 90, 30, 60, 50, 80]):
        rows.append(_msg(i, float(v), payload="1mb", payload_bytes=1_048_576))
    return rows


@pytest.fixture(scope="module")
def known_result(spark: Any, known_rows: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    out = am.transform(_df(spark, known_rows)).collect()
    return {(r["scenario"], r["payload"]): r.asDict() for r in out}


def test_output_has_documented_columns_one_row_per_cell(
    spark: Any, known_rows: list[dict[str, Any]], known_result: dict[Any, Any]
) -> None:
    assert tuple(am.transform(_df(spark, known_rows)).columns) == am.AGGREGATE_COLUMNS
    assert set(known_result) == {("kafka-python", "1kb"), ("jvm-e2e", "1kb"),
                                 ("kafka-python", "1mb")}


def test_exact_nearest_rank_percentiles(known_result: dict[Any, Any]) -> None:
    r = known_result[("kafka-python", "1kb")]
    assert r["e2e_latency_ms_p50"] == 50.0
    assert r["e2e_latency_ms_p90"] == 90.0
    assert r["e2e_latency_ms_p95"] == 95.0
    assert r["e2e_latency_ms_p99"] == 99.0
    assert r["e2e_latency_ms_p999"] == 100.0
    assert r["e2e_latency_ms_max"] == 100.0          # duplicate (5000) and warm-up excluded
    assert r["e2e_latency_ms_mean"] == pytest.approx(50.5)
    assert r["publish_latency_ms_p50"] == pytest.approx(5.0)
    assert r["publish_latency_ms_p95"] == pytest.approx(9.5)
    assert r["publish_latency_ms_p99"] == pytest.approx(9.9)
    assert r["publish_latency_ms_max"] == pytest.approx(10.0)
    assert r["round_trip_ms_p50"] is None
    assert r["percentile_method"] == "exact nearest-rank"
    small = known_result[("kafka-python", "1mb")]
    assert (small["e2e_latency_ms_p50"], small["e2e_latency_ms_p90"],
            small["e2e_latency_ms_p95"], small["e2e_latency_ms_p99"],
            small["e2e_latency_ms_p999"]) == (50.0, 90.0, 100.0, 100.0, 100.0)


def test_counting_rules(known_result: dict[Any, Any]) -> None:
    r = known_result[("kafka-python", "1kb")]
    assert r["received_count"] == 100                 # 99 ok + 1 late
    assert r["late_count"] == 1
    assert r["lost_count"] == 1
    assert r["sent_count"] == 101                     # ok + late + lost
    assert r["duplicate_count"] == 1
    assert r["error_count"] == 1
    assert r["warmup_excluded_count"] == 3
    assert r["received_count"] == r["sent_count"] - r["lost_count"]


def test_throughput_first_message_and_tool_summary(known_result: dict[Any, Any]) -> None:
    r = known_result[("kafka-python", "1kb")]
    assert r["measured_span_s"] is not None and r["measured_span_s"] > 0
    assert r["throughput_msgs_per_s"] == pytest.approx(100 / r["measured_span_s"])
    assert r["throughput_mb_per_s"] == pytest.approx(100 * 1024 / 1e6 / r["measured_span_s"])
    assert r["first_message_subscribe_ms"] == pytest.approx(3050.0)
    assert r["first_message_assign_ms"] == pytest.approx(15.0)
    assert r["assign_delay_subscribe_ms"] == pytest.approx(2925.0)
    assert r["latency_resolution_ms"] == pytest.approx(1e-6)
    jvm = known_result[("jvm-e2e", "1kb")]
    assert (jvm["tool_p50_ms"], jvm["tool_p99_ms"], jvm["tool_p999_ms"]) == (2.0, 6.0, 12.0)
    assert jvm["tool_avg_ms"] == pytest.approx(2.1675)
    assert jvm["latency_resolution_ms"] == 1.0
    assert jvm["sent_count"] == 0 and jvm["received_count"] == 0
    assert jvm["e2e_latency_ms_p50"] is None
    assert jvm["client"] == "kafka.tools.EndToEndLatency"


def test_span_matches_definition(spark: Any, known_rows: list[dict[str, Any]],
                                 known_result: dict[Any, Any]) -> None:
    cell = [x for x in known_rows if x["payload"] == "1kb" and x["sample_kind"] == "message"
            and x["scenario"] == "kafka-python" and not x["is_warmup"]]
    first_send = min(x["send_ts_ns"] for x in cell if x["status"] in ("ok", "late", "lost"))
    last_recv = max(x["receive_ts_ns"] for x in cell if x["status"] in ("ok", "late"))
    span_s = (last_recv - first_send) / 1e9
    r = known_result[("kafka-python", "1kb")]
    assert r["measured_span_s"] == pytest.approx(span_s)


def _nearest_rank(values: np.ndarray, q_num: int, q_den: int) -> float:
    s = np.sort(values)
    return float(s[math.ceil(len(s) * q_num / q_den) - 1])


def test_fake_run_matches_pandas_reference(spark: Any) -> None:
    pdf = make_fake_samples(6000, RUN, seed=3)
    out = {(r["scenario"], r["payload"], r["profile"]): r
           for r in am.transform(spark.createDataFrame(to_arrow_table(pdf))).collect()}
    assert len(out) == 16
    msgs = pdf[(pdf.sample_kind == "message") & ~pdf.is_warmup]
    for (scenario, payload, profile), g in msgs.groupby(["scenario", "payload", "profile"]):
        r = out[(scenario, payload, profile)]
        stat = g[g.status.isin(["ok", "late"])]
        assert r["received_count"] == len(stat)
        assert r["sent_count"] == int(g.status.isin(["ok", "late", "lost"]).sum())
        assert r["duplicate_count"] == int((g.status == "duplicate").sum())
        assert r["lost_count"] == int((g.status == "lost").sum())
        lat = stat["e2e_latency_ms"].to_numpy()
        assert r["e2e_latency_ms_p99"] == _nearest_rank(lat, 99, 100)
        assert r["e2e_latency_ms_p999"] == _nearest_rank(lat, 999, 1000)
        assert r["e2e_latency_ms_p50"] == _nearest_rank(lat, 1, 2)
        if scenario == "rest":
            assert r["round_trip_ms_p99"] == _nearest_rank(stat["round_trip_ms"].to_numpy(),
                                                           99, 100)
    assert out[("rest", "1kb", "latency")]["cluster_flavor"] == "http"
    assert out[("kafka-python", "1kb", "latency")]["first_message_subscribe_ms"] > 0


def _files(root: Path) -> dict[str, list[str]]:
    return {p.name: sorted(f.name for f in p.glob("*.parquet"))
            for p in sorted(root.glob("run_id=*"))}


def test_load_is_idempotent_per_run_and_leaves_other_runs(spark: Any, tmp_path: Path) -> None:
    run_a, run_b = "20261122T010203Z-aaaaaa", "20261123T010203Z-bbbbbb"
    write_fake_samples(tmp_path, 800, run_a, seed=1)
    write_fake_samples(tmp_path, 800, run_b, seed=2)
    samples, out = str(tmp_path / "samples"), tmp_path / "aggregates"

    assert am.run(spark, samples, str(out), [run_a, run_b]) == 32
    first = _files(out)
    assert set(first) == {f"run_id={run_a}", f"run_id={run_b}"}
    assert all(len(v) == 1 for v in first.values())

    assert am.run(spark, samples, str(out), [run_a]) == 16
    second = _files(out)
    assert second[f"run_id={run_b}"] == first[f"run_id={run_b}"]    # b not rewritten
    assert len(second[f"run_id={run_a}"]) == 1                        # a replaced, not added
    agg = spark.read.parquet(str(out))
    counts = {r["run_id"]: r["count"] for r in agg.groupBy("run_id").count().collect()}
    assert counts == {run_a: 16, run_b: 16}
    assert agg.select("run_id", "scenario", "client", "payload", "profile").distinct().count() == 32
    # run_id lives in the path only; the file itself holds no run_id column
    part = next((out / f"run_id={run_a}").glob("*.parquet"))
    assert "run_id" not in pq.read_schema(part).names


def test_extract_errors_are_input_errors(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(am.InputError, match="cannot read samples"):
        am.extract(spark, str(tmp_path / "nope"))
    write_fake_samples(tmp_path, 200, RUN, seed=1)
    with pytest.raises(am.InputError, match="no samples for run id"):
        am.extract(spark, str(tmp_path / "samples"), ["19990101T000000Z-000000"])
    df = am.extract(spark, str(tmp_path / "samples"), [RUN])
    assert dict(df.dtypes)["run_date"] == "string"                    # no partition inference


def test_cli_missing_samples_path_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    code = am.main(["--samples", str(tmp_path / "missing"), "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "samples path not found" in err


def test_spark_submit_aggregate(spark_submit: Any, tmp_path: Path) -> None:
    write_fake_samples(tmp_path, 600, RUN, seed=5)
    out = tmp_path / "aggregates"
    proc = spark_submit("spark_jobs/aggregate_metrics.py", "--samples",
                        str(tmp_path / "samples"), "--out", str(out), "--run-id", RUN)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "wrote 16 aggregate rows" in proc.stdout
    table = pq.read_table(next((out / f"run_id={RUN}").glob("*.parquet")))
    assert table.num_rows == 16



def test_spark_submit_ships_the_shared_session_with_py_files(
    spark_submit: Any, tmp_path: Path
) -> None:
    """As on a cluster: the job file alone, with the DAG's ``py_files`` (``_session.py`` and
    the lab's ``store.py``)."""
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    script = shutil.copy(spark_jobs_dir() / "aggregate_metrics.py", job_dir)
    write_fake_samples(tmp_path, 300, RUN, seed=6)
    args = ("--samples", str(tmp_path / "samples"), "--out", str(tmp_path / "aggregates"),
            "--run-id", RUN)
    alone = spark_submit(script, *args)
    assert alone.returncode != 0 and "_session" in alone.stdout + alone.stderr
    shipped = spark_submit(script, *args, py_files=[Path(f) for f in spark_py_files().split(",")])
    assert shipped.returncode == 0, shipped.stderr[-3000:]
    assert "wrote 16 aggregate rows" in shipped.stdout


def test_cli_no_rows_for_run_exits_2(spark: Any, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    write_fake_samples(tmp_path, 200, RUN, seed=5)
    code = am.main(["--samples", str(tmp_path / "samples"), "--out", str(tmp_path / "o"),
                    "--run-id", "nope"])
    assert code == 2
    err = capsys.readouterr().err
    assert "aggregate_metrics: error: no samples for run id(s) nope" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert spark.range(1).count() == 1          # the shared session was not stopped
