"""Tests of spark_jobs/aggregate_metrics.py: exact, censored percentiles with their minimum
sample counts and confidence intervals (equal to the CLI's statistics on the same rows),
counting rules, schema-1 files, idempotent load."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkalab.catalog import SCENARIOS
from kafkalab.paths import spark_jobs_dir
from kafkalab.spark.submit import spark_py_files
from kafkalab.stats import quantile_ci_ranks
from kafkalab.summary import summarize_rows
from spark_jobs import _session as shared
from spark_jobs import aggregate_metrics as am
from tools.fake_samples import (
    PARTITION_COLUMNS,
    SAMPLES_ARROW_SCHEMA,
    make_fake_samples,
    to_arrow_table,
    write_fake_samples,
)

V2_COLUMNS: tuple[str, ...] = ("wall_ts_ns", "loop_mode", "cold_start", "planned_messages",
                               "message_timeout_ms", "broker_count", "client_settings")
"""The sample columns samples schema 2 added."""

RUN = "20261122T010203Z-aaaaaa"
BASE_NS = 86_400_000_000_000          # the monotonic clock (any origin)
SETTINGS = '{"acks": "1", "linger.ms": "0"}'
N_CELLS = len(SCENARIOS) * 2 * 2       # fake samples: every scenario × 2 payloads × 2 profiles


def _row(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(SAMPLES_ARROW_SCHEMA.names)
    row.update(
        run_id=RUN, run_date="2026-11-22", sample_kind="message", scenario="kafka-python",
        client="kafka-python", client_version="3.0.12", profile="latency", workload="baseline",
        payload="1kb", payload_encoding="raw", payload_bytes=1024, cluster_flavor="kafka09",
        broker_version="0.9.0.1", broker_is_emulator=False, topic="t", seq=0,
        is_warmup=False, status="ok", latency_resolution_ms=1e-6, loop_mode="overlapped",
        planned_messages=102, message_timeout_ms=2000.0, broker_count=3,
        client_settings=SETTINGS,
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
        receive_ts_ns=send + round(e2e_ms * 1e6) if received and e2e_ms is not None else None,
        e2e_latency_ms=e2e_ms if received else None,
        publish_latency_ms=None if status == "error" else (e2e_ms or 1.0) / 10,
        wall_ts_ns=1_795_309_323_000_000_000 + seq, **kw,
    )


def _probe(seq: int, mode: str, delay_ms: float | None, assign_ms: float,
           cold: bool = False) -> dict[str, Any]:
    return _row(sample_kind="first_message", seq=seq, consumer_mode=mode, loop_mode=None,
                status="ok" if delay_ms is not None else "lost", cold_start=cold,
                assign_delay_ms=assign_ms, first_record_delay_ms=delay_ms)


def _df(spark: Any, rows: list[dict[str, Any]]) -> Any:
    return spark.createDataFrame(pa.Table.from_pylist(rows, schema=SAMPLES_ARROW_SCHEMA))


@pytest.fixture(scope="module")
def known_rows() -> list[dict[str, Any]]:
    """Three message cells and a tool cell with every special kind of row:

    * kafka-python/1kb: warm-up, latencies 1..100 (100 late), one lost, one error, one
      duplicate, and probes (one cold, one lost): population 102, p99 censored;
    * kafka-python/1mb: ten latencies (too few for p95 and above);
    * confluent-kafka/1kb: twenty latencies, twenty lost: population 40, p90 censored;
    * jvm-e2e/1kb: the tool's summary rows.
    """
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
        _probe(0, "subscribe", 3000.0, 2900.0, cold=True),                # cold: apart
        _probe(0, "assign", 10.0, 1.0),
        _probe(1, "assign", 20.0, 2.0),
        _probe(1, "subscribe", 3100.0, 2950.0),
        _probe(2, "subscribe", 3200.0, 2990.0),
        _probe(2, "assign", None, 3.0),                                   # lost probe
    ]
    jvm = {"scenario": "jvm-e2e", "client": "kafka.tools.EndToEndLatency",
           "client_version": "0.9.0.1", "sample_kind": "tool_summary", "loop_mode": "serial",
           "client_settings": '{"fetch.max.wait.ms": "0", "linger.ms": "0", '
                              '"tool.timed_messages": "1002 (the warm-up included: every '
                              'message is timed)"}'}
    for stat, value, res in (("avg", 2.1675, 1e-4), ("p50", 2.0, 1.0), ("p99", 6.0, 1.0),
                             ("p99.9", 12.0, 1.0)):
        rows.append(_row(**jvm, statistic=stat, e2e_latency_ms=value, latency_resolution_ms=res))
    # ten values: p50 = 5th, p90 = 9th; p95 and above undefined (n < 20)
    for i, v in enumerate([70, 10, 40, 100, 20, 90, 30, 60, 50, 80]):
        rows.append(_msg(i, float(v), payload="1mb", payload_bytes=1_048_576,
                         planned_messages=10))
    ck: dict[str, Any] = {"scenario": "confluent-kafka", "client": "confluent-kafka",
                          "planned_messages": 40}
    for i in range(20):
        rows.append(_msg(i, float(i + 1), **ck))
        rows.append(_msg(20 + i, None, status="lost", **ck))
    return rows


@pytest.fixture(scope="module")
def known_result(spark: Any, known_rows: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    out = am.transform(_df(spark, known_rows)).collect()
    return {(r["scenario"], r["payload"]): r.asDict() for r in out}


def test_output_has_documented_columns_one_row_per_cell(
    spark: Any, known_rows: list[dict[str, Any]], known_result: dict[Any, Any]
) -> None:
    df = am.transform(_df(spark, known_rows))
    assert tuple(df.columns) == am.AGGREGATE_COLUMNS
    assert dict(df.dtypes) == am.AGGREGATE_SCHEMA
    assert set(known_result) == {("kafka-python", "1kb"), ("jvm-e2e", "1kb"),
                                 ("kafka-python", "1mb"), ("confluent-kafka", "1kb")}


def test_carried_columns(known_result: dict[Any, Any]) -> None:
    r = known_result[("kafka-python", "1kb")]
    assert (r["payload_encoding"], r["broker_count"], r["planned_messages"],
            r["message_timeout_ms"], r["loop_mode"], r["client_settings"]) == (
        "raw", 3, 102, 2000.0, "overlapped", SETTINGS)
    jvm = known_result[("jvm-e2e", "1kb")]
    assert jvm["loop_mode"] == "serial" and "fetch.max.wait.ms" in jvm["client_settings"]


def test_exact_nearest_rank_percentiles_with_censoring(known_result: dict[Any, Any]) -> None:
    r = known_result[("kafka-python", "1kb")]
    # population: 1..100 received + lost + error (+inf); n = 102
    assert r["e2e_latency_ms_p50"] == 51.0                # rank 51
    assert r["e2e_latency_ms_p90"] == 92.0                # rank ceil(91.8) = 92
    assert r["e2e_latency_ms_p95"] == 97.0                # rank ceil(96.9) = 97
    assert r["e2e_latency_ms_p99"] is None                # rank 101: a censored value
    assert r["e2e_latency_ms_p999"] is None               # n < 1000
    assert r["e2e_latency_ms_percentiles_note"] == "p99: censored; p999: n<1000"
    assert r["e2e_latency_ms_max"] == 100.0               # received only; dup and warm-up out
    assert r["e2e_latency_ms_mean"] == pytest.approx(50.5)
    assert r["publish_latency_ms_p50"] == pytest.approx(5.0)   # received only, no censoring
    assert r["publish_latency_ms_p95"] == pytest.approx(9.5)
    assert r["publish_latency_ms_p99"] == pytest.approx(9.9)
    assert r["publish_latency_ms_max"] == pytest.approx(10.0)
    assert r["round_trip_ms_p50"] is None
    assert r["percentile_method"] == "exact nearest-rank"
    heavy = known_result[("confluent-kafka", "1kb")]      # 20 received + 20 lost
    assert heavy["e2e_latency_ms_p50"] == 20.0
    assert heavy["e2e_latency_ms_p90"] is None and heavy["e2e_latency_ms_p95"] is None
    assert heavy["e2e_latency_ms_percentiles_note"] == (
        "p90: censored; p95: censored; p99: n<100; p999: n<1000")
    assert heavy["e2e_latency_ms_max"] == 20.0


def test_too_few_samples_leave_the_tail_undefined(known_result: dict[Any, Any]) -> None:
    small = known_result[("kafka-python", "1mb")]         # n = 10
    assert (small["e2e_latency_ms_p50"], small["e2e_latency_ms_p90"]) == (50.0, 90.0)
    assert (small["e2e_latency_ms_p95"], small["e2e_latency_ms_p99"],
            small["e2e_latency_ms_p999"]) == (None, None, None)
    assert small["e2e_latency_ms_percentiles_note"] == "p95: n<20; p99: n<100; p999: n<1000"
    assert small["publish_latency_ms_p95"] is None        # min-n applies to publish too
    assert small["publish_latency_ms_p50"] == pytest.approx(5.0)
    assert small["e2e_latency_ms_max"] == 100.0


def test_confidence_intervals_are_order_statistics(known_result: dict[Any, Any]) -> None:
    r = known_result[("kafka-python", "1kb")]
    assert quantile_ci_ranks(102, 0.5) == (41, 62)        # ranks from the binomial ...
    assert (r["e2e_latency_ms_p50_ci_low"], r["e2e_latency_ms_p50_ci_high"]) == (41.0, 62.0)
    assert quantile_ci_ranks(102, 0.99) == (99, None)     # ... no upper rank below n = 367
    assert (r["e2e_latency_ms_p99_ci_low"], r["e2e_latency_ms_p99_ci_high"]) == (99.0, None)
    assert r["ci_confidence"] == 0.95
    heavy = known_result[("confluent-kafka", "1kb")]      # ranks (14, 27) of 40
    assert (heavy["e2e_latency_ms_p50_ci_low"], heavy["e2e_latency_ms_p50_ci_high"]) == (
        14.0, None)                                       # rank 27 is a lost message
    small = known_result[("kafka-python", "1mb")]
    assert (small["e2e_latency_ms_p50_ci_low"], small["e2e_latency_ms_p50_ci_high"]) == (
        20.0, 90.0)                                       # ranks (2, 9) of 10
    jvm = known_result[("jvm-e2e", "1kb")]
    assert jvm["e2e_latency_ms_p50_ci_low"] is None and jvm["ci_confidence"] == 0.95


def test_counting_rules(known_result: dict[Any, Any]) -> None:
    r = known_result[("kafka-python", "1kb")]
    assert r["received_count"] == 100                 # 99 ok + 1 late
    assert r["late_count"] == 1
    assert r["lost_count"] == 1
    assert r["error_count"] == 1
    assert r["sent_count"] == 102                     # ok + late + lost + error
    assert r["sent_count"] == r["received_count"] + r["lost_count"] + r["error_count"]
    assert r["duplicate_count"] == 1
    assert r["warmup_excluded_count"] == 3


def test_message_rate_first_message_and_tool_summary(known_result: dict[Any, Any]) -> None:
    r = known_result[("kafka-python", "1kb")]
    assert r["measured_span_s"] is not None and r["measured_span_s"] > 0
    assert r["message_rate_per_s"] == pytest.approx(100 / r["measured_span_s"])
    assert r["message_rate_mb_per_s"] == pytest.approx(100 * 1024 / 1e6 / r["measured_span_s"])
    assert r["first_message_subscribe_ms"] == 3100.0  # median of the warm 3100, 3200
    assert r["first_message_assign_ms"] == 10.0       # median of 10, 20 (one probe lost)
    assert r["first_message_cold_ms"] == 3000.0
    assert r["first_message_lost_count"] == 1
    assert r["assign_delay_subscribe_ms"] == 2950.0   # median of the warm 2950, 2990
    assert r["latency_resolution_ms"] == pytest.approx(1e-6)
    jvm = known_result[("jvm-e2e", "1kb")]
    assert (jvm["tool_p50_ms"], jvm["tool_p99_ms"], jvm["tool_p999_ms"]) == (2.0, 6.0, 12.0)
    assert jvm["tool_avg_ms"] == pytest.approx(2.1675)
    assert jvm["tool_messages"] == 1002 and jvm["tool_percentiles_note"] is None
    assert r["tool_messages"] is None and r["tool_percentiles_note"] is None
    assert jvm["latency_resolution_ms"] == 1.0
    assert jvm["sent_count"] == 0 and jvm["received_count"] == 0
    assert jvm["e2e_latency_ms_p50"] is None
    assert jvm["e2e_latency_ms_percentiles_note"] == "no messages"
    assert jvm["first_message_lost_count"] == 0 and jvm["first_message_subscribe_ms"] is None
    assert jvm["client"] == "kafka.tools.EndToEndLatency"


def _tool_cell(payload: str, settings: str, planned: int) -> list[dict[str, Any]]:
    """A jvm-e2e cell's four tool_summary rows (the tool's printed figures)."""
    jvm = {"scenario": "jvm-e2e", "client": "kafka.tools.EndToEndLatency",
           "client_version": "0.9.0.1", "sample_kind": "tool_summary", "loop_mode": "serial",
           "payload": payload, "client_settings": settings, "planned_messages": planned}
    return [_row(**jvm, statistic=stat, e2e_latency_ms=value, latency_resolution_ms=res)
            for stat, value, res in (("avg", 2.5, 1e-4), ("p50", 2.0, 1.0), ("p99", 7.0, 1.0),
                                     ("p99.9", 9.0, 1.0))]


def test_tool_percentiles_need_their_minimum_sample_count(spark: Any) -> None:
    """The tool times warm-up + measured messages (``tool.timed_messages``): with 20 its
    p99 and p99.9 are null with the reason, as every lab percentile below its minimum; 500
    keep p99 only; without the recorded count, planned_messages (a lower bound) decides."""
    def timed(n: int) -> str:
        return ('{"linger.ms": "0", "tool.timed_messages": '
                f'"{n} (the warm-up included: every message is timed)"}}')

    rows = [*_tool_cell("20msgs", timed(20), 18), *_tool_cell("500msgs", timed(500), 498),
            *_tool_cell("unrecorded", '{"linger.ms": "0"}', 150)]
    got = {r["payload"]: r.asDict() for r in am.transform(_df(spark, rows)).collect()}
    few = got["20msgs"]
    assert (few["tool_p50_ms"], few["tool_avg_ms"]) == (2.0, 2.5)  # no minimum above 1
    assert few["tool_p99_ms"] is None and few["tool_p999_ms"] is None
    assert few["tool_messages"] == 20
    assert few["tool_percentiles_note"] == (f"p99: n<{shared.stats.MIN_SAMPLES['p99']}; "
                                            f"p999: n<{shared.stats.MIN_SAMPLES['p999']}")
    mid = got["500msgs"]
    assert (mid["tool_p99_ms"], mid["tool_p999_ms"], mid["tool_messages"]) == (7.0, None, 500)
    assert mid["tool_percentiles_note"] == "p999: n<1000"
    old = got["unrecorded"]
    assert (old["tool_p99_ms"], old["tool_p999_ms"], old["tool_messages"]) == (7.0, None, 150)


def test_tool_messages_from_settings_or_planned() -> None:
    assert am.tool_messages('{"tool.timed_messages": "1002 (the warm-up included)"}', 1000) == 1002
    assert am.tool_messages('{"linger.ms": "0"}', 40) == 40
    assert am.tool_messages("not json", 40) == 40
    assert am.tool_messages(None, None) is None


def test_span_matches_definition(spark: Any, known_rows: list[dict[str, Any]],
                                 known_result: dict[Any, Any]) -> None:
    cell = [x for x in known_rows if x["payload"] == "1kb" and x["sample_kind"] == "message"
            and x["scenario"] == "kafka-python" and not x["is_warmup"]]
    first_send = min(x["send_ts_ns"] for x in cell
                     if x["status"] in ("ok", "late", "lost", "error"))
    last_recv = max(x["receive_ts_ns"] for x in cell if x["status"] in ("ok", "late"))
    span_s = (last_recv - first_send) / 1e9
    r = known_result[("kafka-python", "1kb")]
    assert r["measured_span_s"] == pytest.approx(span_s)


def _assert_matches_the_cli_statistics(spark_row: dict[str, Any], rows: list[dict[str, Any]]
                                       ) -> None:
    """One aggregate row against ``kafkalab.summary.summarize_rows`` (the CLI's statistics,
    built on ``kafkalab.stats``) of the same raw rows: equal, not approximately."""
    s = summarize_rows(rows)
    lat = s["latency"]
    assert spark_row["sent_count"] == s["population"]
    assert spark_row["received_count"] == s["count"]
    assert (spark_row["lost_count"], spark_row["error_count"], spark_row["duplicate_count"],
            spark_row["late_count"], spark_row["warmup_excluded_count"]) == (
        s["lost"], s["errors"], s["duplicate"], s["late"], s["warmup"])
    for name in ("p50", "p90", "p95", "p99", "p999"):
        assert spark_row[f"e2e_latency_ms_{name}"] == (getattr(lat, f"{name}_ms") if lat
                                                       else None), name
    if lat:
        assert spark_row["e2e_latency_ms_percentiles_note"] == lat.note
        assert spark_row["e2e_latency_ms_max"] == lat.max_ms
        for name, (lo, hi) in lat.ci.items():
            assert (spark_row[f"e2e_latency_ms_{name}_ci_low"],
                    spark_row[f"e2e_latency_ms_{name}_ci_high"]) == (lo, hi), name
    for metric, key in (("publish_latency_ms", "publish"), ("round_trip_ms", "round_trip")):
        sub = s[key]
        for name in shared.METRIC_PERCENTILES[metric]:
            assert spark_row[f"{metric}_{name}"] == (getattr(sub, f"{name}_ms") if sub
                                                     else None), (metric, name)
    assert spark_row["first_message_subscribe_ms"] == s["first_subscribe_ms"]
    assert spark_row["first_message_assign_ms"] == s["first_assign_ms"]
    assert spark_row["first_message_cold_ms"] == s["first_cold_ms"]
    assert spark_row["first_message_lost_count"] == s["first_lost"]


def test_known_cells_match_the_cli_statistics(known_rows: list[dict[str, Any]],
                                              known_result: dict[Any, Any]) -> None:
    for (scenario, payload), r in known_result.items():
        rows = [x for x in known_rows if (x["scenario"], x["payload"]) == (scenario, payload)]
        _assert_matches_the_cli_statistics(r, rows)


def test_fake_run_matches_the_cli_statistics(spark: Any) -> None:
    table = to_arrow_table(make_fake_samples(17000, RUN, seed=3))
    out = {(r["scenario"], r["payload"], r["profile"]): r.asDict()
           for r in am.transform(spark.createDataFrame(table)).collect()}
    assert len(out) == N_CELLS
    by_cell: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        by_cell.setdefault((row["scenario"], row["payload"], row["profile"]), []).append(row)
    for key, rows in by_cell.items():
        _assert_matches_the_cli_statistics(out[key], rows)
    # the fake run exercises the new paths: censored p99.9, errors in REST, cold probes
    notes = {k: r["e2e_latency_ms_percentiles_note"] for k, r in out.items()}
    assert notes[("kafka-python", "1kb", "latency")] == "p999: censored"
    assert notes[("kafka-python", "1kb", "durability")] is None
    assert out[("rest", "1kb", "latency")]["error_count"] > 0
    assert out[("rest", "1kb", "latency")]["publish_latency_ms_p50"] is None
    assert out[("rest", "1kb", "latency")]["cluster_flavor"] == "http"
    assert out[("rest", "1kb", "latency")]["broker_count"] is None
    assert sum(r["first_message_cold_ms"] is not None for r in out.values()) == 1
    assert sum(r["first_message_lost_count"] for r in out.values()) == 1
    assert out[("confluent-kafka-serial", "1kb", "latency")]["loop_mode"] == "serial"


def test_v1_sample_files_are_tolerated(spark: Any, tmp_path: Path) -> None:
    """Runs written under samples schema 1 (no wall_ts_ns, loop_mode, cold_start, per-cell
    constants) aggregate beside schema-2 runs: their new columns are null."""
    old_run, new_run = "20251122T010203Z-000001", "20261122T010203Z-000002"
    v1 = [n for n in SAMPLES_ARROW_SCHEMA.names if n not in V2_COLUMNS + PARTITION_COLUMNS]
    old_rows = [{k: v for k, v in _msg(s, float(s + 1)).items() if k in v1} for s in range(30)]
    old_file = (tmp_path / "samples" / "run_date=2025-11-22" / f"run_id={old_run}"
                / "part-kafka-python-1kb-latency.parquet")
    old_file.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(old_rows, schema=pa.schema(
        [f for f in SAMPLES_ARROW_SCHEMA if f.name in v1 and f.name not in ("run_id",
                                                                           "run_date")])),
        old_file)
    write_fake_samples(tmp_path, 600, new_run, seed=4)
    out = tmp_path / "aggregates"
    assert am.run(spark, str(tmp_path / "samples"), str(out)) == 1 + N_CELLS
    agg = {(r["run_id"], r["scenario"], r["payload"], r["profile"]): r.asDict()
           for r in spark.read.parquet(str(out)).collect()}
    old = agg[(old_run, "kafka-python", "1kb", "latency")]
    assert (old["planned_messages"], old["loop_mode"], old["client_settings"],
            old["broker_count"], old["message_timeout_ms"]) == (None, None, None, None, None)
    assert old["sent_count"] == 30 and old["e2e_latency_ms_p50"] == 15.0
    new = agg[(new_run, "kafka-python", "1kb", "latency")]
    assert new["planned_messages"] > 0 and new["loop_mode"] == "overlapped"
    assert new["broker_count"] == 3 and new["client_settings"].startswith("{")


def _files(root: Path) -> dict[str, list[str]]:
    return {p.name: sorted(f.name for f in p.glob("*.parquet"))
            for p in sorted(root.glob("run_id=*"))}


def test_load_is_idempotent_per_run_and_leaves_other_runs(spark: Any, tmp_path: Path) -> None:
    run_a, run_b = "20261122T010203Z-aaaaaa", "20261123T010203Z-bbbbbb"
    write_fake_samples(tmp_path, 800, run_a, seed=1)
    write_fake_samples(tmp_path, 800, run_b, seed=2)
    samples, out = str(tmp_path / "samples"), tmp_path / "aggregates"

    assert am.run(spark, samples, str(out), [run_a, run_b]) == 2 * N_CELLS
    first = _files(out)
    assert set(first) == {f"run_id={run_a}", f"run_id={run_b}"}
    assert all(len(v) == 1 for v in first.values())

    assert am.run(spark, samples, str(out), [run_a]) == N_CELLS
    second = _files(out)
    assert second[f"run_id={run_b}"] == first[f"run_id={run_b}"]    # b not rewritten
    assert len(second[f"run_id={run_a}"]) == 1                        # a replaced, not added
    agg = spark.read.parquet(str(out))
    counts = {r["run_id"]: r["count"] for r in agg.groupBy("run_id").count().collect()}
    assert counts == {run_a: N_CELLS, run_b: N_CELLS}
    assert (agg.select("run_id", "scenario", "client", "payload", "profile").distinct().count()
            == 2 * N_CELLS)
    # run_id lives in the path only; the file itself holds no run_id column
    part = next((out / f"run_id={run_a}").glob("*.parquet"))
    assert "run_id" not in pq.read_schema(part).names


def test_extract_errors_are_input_errors(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(shared.InputError, match="cannot read samples"):
        am.extract(spark, str(tmp_path / "nope"))
    write_fake_samples(tmp_path, 200, RUN, seed=1)
    with pytest.raises(shared.InputError, match="no samples for run id"):
        am.extract(spark, str(tmp_path / "samples"), ["19990101T000000Z-000000"])
    df = am.extract(spark, str(tmp_path / "samples"), [RUN])
    assert dict(df.dtypes)["run_date"] == "string"                    # no partition inference


def test_a_runs_jobs_read_only_its_own_folders(spark: Any, tmp_path: Path) -> None:
    """With run ids, only ``run_date=*/run_id=<id>`` is listed and read: a file of another run
    that is not Parquet at all (so the history beside a run costs it nothing) breaks neither
    the aggregation nor the validation's read of this run; reading every run does see it."""
    from spark_jobs import validate_metrics as vm

    write_fake_samples(tmp_path, 300, RUN, seed=3)
    other = tmp_path / "samples" / "run_date=2026-01-01" / "run_id=20260101T000000Z-ffffff"
    other.mkdir(parents=True)
    (other / "part-x.parquet").write_bytes(b"not parquet")
    samples = str(tmp_path / "samples")
    assert am.run(spark, samples, str(tmp_path / "aggregates"), [RUN]) == N_CELLS
    assert vm._read_run(spark, samples, RUN, "samples").count() > 0
    with pytest.raises(Exception, match=r"(?i)parquet"):  # Spark's own error, whichever
        am.extract(spark, samples).count()  # every run: the broken file is read
    with pytest.raises(shared.InputError, match=r"no samples for run id\(s\) 1999"):
        vm._read_run(spark, samples, "19990101T000000Z-000000", "samples")


def test_cli_missing_samples_path_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    code = am.main(["--samples", str(tmp_path / "missing"), "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "samples path not found" in err


def test_spark_submit_ships_the_shared_session_with_py_files(
    spark_submit: Any, tmp_path: Path
) -> None:
    """As on a cluster: the job file alone fails for want of the shared job modules; with
    the DAG's ``py_files`` (``_session.py``, ``_gx.py``, ``validate_metrics.py`` and the
    lab's ``store.py`` and ``stats.py``) it runs through spark-submit and writes a row per
    cell."""
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    script = shutil.copy(spark_jobs_dir() / "aggregate_metrics.py", job_dir)
    write_fake_samples(tmp_path, 300, RUN, seed=6)
    args = ("--samples", str(tmp_path / "samples"), "--out", str(tmp_path / "aggregates"),
            "--run-id", RUN)
    alone = spark_submit(script, *args)
    job_modules = {Path(f).stem for f in spark_py_files().split(",")
                   if Path(f).parent == spark_jobs_dir()}
    assert job_modules >= {"_session", "_gx"}
    output = alone.stdout + alone.stderr
    assert alone.returncode != 0
    assert any(f"No module named '{m}'" in output for m in job_modules), output[-3000:]
    shipped = spark_submit(script, *args, py_files=[Path(f) for f in spark_py_files().split(",")])
    assert shipped.returncode == 0, shipped.stderr[-3000:]
    assert f"wrote {N_CELLS} aggregate rows" in shipped.stdout
    out = tmp_path / "aggregates" / f"run_id={RUN}"
    assert sum(pq.read_table(f).num_rows for f in out.glob("*.parquet")) == N_CELLS


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


def _nearest_rank(values: list[float], rank: int | None) -> float | None:
    return None if rank is None or rank > len(values) else sorted(values)[rank - 1]


def test_order_statistics_are_exact_in_crowded_buckets_ties_zeros_and_negatives(
        spark: Any) -> None:
    """The histogram path (buckets about 0.1 % wide; a rank inside a crowded bucket read from
    that bucket's sorted values, an all-equal bucket answered from its minimum) gives the
    sorted population's own values: 3,000 latencies crowded into a few buckets, ties, zeros
    and (bad but possible) negative values, plus censored losses; the carried column is the
    largest non-null value of the cell's rows."""
    rng = random.Random(13)
    e2e = ([round(5.0 + rng.random() * 0.05, 6) for _ in range(2500)]   # ~10 buckets
           + [7.0] * 300 + [0.0] * 100 + [-1.5 - rng.random() for _ in range(60)]
           + [round(rng.uniform(10.0, 900.0), 6) for _ in range(40)])
    rows = [_msg(i, v, broker_count=None if i % 2 else 3) for i, v in enumerate(e2e)]
    rows += [_msg(len(e2e) + i, None, status="lost") for i in range(5)]
    (r,) = am.transform(_df(spark, rows)).collect()
    n = len(e2e) + 5
    for name, (num, den) in shared.METRIC_PERCENTILES["e2e_latency_ms"].items():
        assert r[f"e2e_latency_ms_{name}"] == _nearest_rank(e2e, -(-n * num // den)), name
    for name in shared.stats.CI_PERCENTILES:
        num, den = shared.METRIC_PERCENTILES["e2e_latency_ms"][name]
        lo, hi = quantile_ci_ranks(n, num / den)
        assert r[f"e2e_latency_ms_{name}_ci_low"] == _nearest_rank(e2e, lo)
        assert r[f"e2e_latency_ms_{name}_ci_high"] == _nearest_rank(e2e, hi)
    publish = [(v or 1.0) / 10 for v in e2e]                    # _msg's publish latency
    for name, (num, den) in shared.METRIC_PERCENTILES["publish_latency_ms"].items():
        rank = -(-len(publish) * num // den)
        assert r[f"publish_latency_ms_{name}"] == _nearest_rank(publish, rank), name
    assert r["e2e_latency_ms_percentiles_note"] == "p999: censored"
    assert r["e2e_latency_ms_max"] == max(e2e)
    assert r["broker_count"] == 3
