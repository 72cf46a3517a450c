"""Tests of spark_jobs/validate_metrics.py (Great Expectations 1.x on Spark DataFrames)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from spark_jobs import aggregate_metrics as am
from spark_jobs import validate_metrics as vm
from tools.fake_samples import write_fake_samples

RUN = "20261122T010203Z-cccccc"


@pytest.fixture(scope="module")
def lab(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Fake samples of one run, aggregated; returns paths and both DataFrames."""
    root = tmp_path_factory.mktemp("lab")
    write_fake_samples(root, 2000, RUN, seed=11)
    am.run(spark, str(root / "samples"), str(root / "aggregates"), [RUN])
    samples = vm._read_run(spark, str(root / "samples"), RUN, "samples")
    aggregates = vm._read_run(spark, str(root / "aggregates"), RUN, "aggregates",
                              partition=f"run_id={RUN}")  # as the job reads them
    return {"root": root, "samples": samples, "aggregates": aggregates}


def _failed(doc: dict[str, Any]) -> set[tuple[str, str | None, str]]:
    return {(f["suite"], f["column"], f["expectation_type"]) for f in doc["failed_expectations"]}


@pytest.fixture(scope="module")
def good_cli(lab: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``main`` run in-process on the good run (one validation, shared): its exit code,
    output folder and the JSON report it wrote. A load run's aggregates lie beside the
    latency ones (``aggregates/load/run_id=…/``): Spark cannot merge that layout with
    ``aggregates/run_id=…/``, so the job must read only its own run."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = lab["root"]
    load_dir = root / "aggregates" / "load" / "run_id=some-load-run"
    load_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"cell_id": ["x"]}), load_dir / "load_cells.parquet")
    out = tmp_path_factory.mktemp("validation")
    args = ["--samples", str(root / "samples"), "--aggregates", str(root / "aggregates"),
            "--run-id", RUN, "--out", str(out)]
    code = vm.main(args)
    return {"code": code, "out": out, "args": args,
            "doc": json.loads((out / f"{RUN}.json").read_text())}


def test_good_fake_data_passes(good_cli: dict[str, Any]) -> None:
    """The good run through ``main`` (in-process): exit 0, no failure, both suites pass, the
    report (JSON, HTML page, Data Docs) written."""
    doc, out = good_cli["doc"], good_cli["out"]
    assert good_cli["code"] == 0
    assert doc["failed_expectations"] == []
    assert doc["success"] is True and doc["run_id"] == RUN
    assert doc["suites"]["raw_samples"]["success"] and doc["suites"]["aggregates"]["success"]
    assert doc["suites"]["raw_samples"]["statistics"]["evaluated_expectations"] > 70
    stats = doc["suites"]["aggregates"]["statistics"]
    assert stats["evaluated_expectations"] == stats["successful_expectations"] > 20
    assert doc["schema_version"] == 2
    assert doc["data_docs_index"] == "docs/index.html"
    assert (out / "docs" / "index.html").exists()
    page = (out / f"{RUN}.html").read_text()
    assert "passed" in page and "https://" not in page


def test_aggregate_then_validate_in_one_session_writes_the_same_verdict(
        lab: dict[str, Any], good_cli: dict[str, Any],
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    """``aggregate_metrics --validate-out`` (the DAG's param one_spark_session): the
    aggregation's exit code, then the same validation report ``validate_metrics`` writes."""
    root = lab["root"]
    out = tmp_path_factory.mktemp("one-session")
    aggregates = out / "aggregates"  # its own: the module's DataFrames read lab's files
    code = am.main(["--samples", str(root / "samples"), "--out", str(aggregates),
                    "--run-id", RUN, "--validate-out", str(out)])
    assert code == 0
    doc = json.loads((out / f"{RUN}.json").read_text())
    assert doc["success"] is True and doc["failed_expectations"] == []
    assert {k: v["statistics"] for k, v in doc["suites"].items()} == \
        {k: v["statistics"] for k, v in good_cli["doc"]["suites"].items()}
    assert (out / f"{RUN}.html").is_file() and (out / "docs" / "index.html").is_file()
    printed = capsys.readouterr().out
    assert f"aggregate_metrics --validate-out: run {RUN} passed" in printed
    with pytest.raises(SystemExit) as exc:  # one run only
        am.main(["--samples", str(root / "samples"), "--out", str(aggregates),
                 "--validate-out", str(out)])
    assert exc.value.code == 2
    assert "--validate-out needs exactly one --run-id" in capsys.readouterr().err


def _rows_of(failure: dict[str, Any]) -> set[str]:
    return set(failure["unexpected_rows"])


def test_bad_aggregates_fail_with_the_right_expectations(lab: dict[str, Any]) -> None:
    from pyspark.sql import functions as F

    samples = lab["samples"].withColumn(
        "e2e_latency_ms",
        F.when((F.col("seq") == 20) & (F.col("sample_kind") == "message"), F.lit(-3.0))
        .otherwise(F.col("e2e_latency_ms")),
    )
    agg = lab["aggregates"]

    def cell(scenario: str, payload: str, profile: str) -> Any:
        return ((F.col("scenario") == scenario) & (F.col("payload") == payload)
                & (F.col("profile") == profile))

    rest = cell("rest", "1kb", "latency")
    kp = cell("kafka-python", "1kb", "latency")
    ck_dur = (F.col("scenario") == "confluent-kafka") & (F.col("profile") == "durability")
    cks = cell("confluent-kafka-serial", "1mb", "durability")
    agg = (
        agg.withColumn(  # one more received than the raw rows hold
            "received_count",
            F.when(rest, F.col("received_count") + 1).otherwise(F.col("received_count")))
        .withColumn(  # a max below the p50
            "e2e_latency_ms_max",
            F.when(kp, F.col("e2e_latency_ms_p50") - 1).otherwise(F.col("e2e_latency_ms_max")))
        .withColumn(  # a CI that does not bracket its percentile
            "e2e_latency_ms_p50_ci_low",
            F.when(cks, F.col("e2e_latency_ms_p50") + 1)
            .otherwise(F.col("e2e_latency_ms_p50_ci_low")))
        .withColumn(  # a loss under 'durability' (sent unchanged)
            "received_count",
            F.when(ck_dur, F.col("received_count") - 1).otherwise(F.col("received_count")))
        .withColumn("lost_count",
                    F.when(ck_dur, F.col("lost_count") + 1).otherwise(F.col("lost_count")))
    )
    doc = vm.validate(samples, agg, {"run_id": RUN})
    assert doc["success"] is False
    assert _failed(doc) == {
        ("raw_samples", "e2e_latency_ms", "expect_column_values_to_be_between"),
        ("aggregates", "counts_match_raw_ok", "expect_column_values_to_be_in_set"),
        ("aggregates", "e2e_percentiles_ordered_ok", "expect_column_values_to_be_in_set"),
        ("aggregates", "e2e_ci_brackets_ok", "expect_column_values_to_be_in_set"),
        ("aggregates", "durability_no_loss_ok", "expect_column_values_to_be_in_set"),
    }
    by_col = {f["column"]: f for f in doc["failed_expectations"]}
    assert by_col["e2e_latency_ms"]["unexpected_count"] >= 1
    assert -3.0 in by_col["e2e_latency_ms"]["partial_unexpected_list"]
    assert "seq 20 (e2e_latency_ms=-3.0)" in by_col["e2e_latency_ms"]["summary"]
    assert _rows_of(by_col["counts_match_raw_ok"]) == {
        "rest/1kb/latency", "confluent-kafka/1kb/durability", "confluent-kafka/1mb/durability"}
    assert "recounted from the cell's raw rows" in by_col["counts_match_raw_ok"]["summary"]
    assert "rest/1kb/latency" in by_col["counts_match_raw_ok"]["summary"]
    assert _rows_of(by_col["e2e_percentiles_ordered_ok"]) == {"kafka-python/1kb/latency"}
    assert _rows_of(by_col["e2e_ci_brackets_ok"]) == {"confluent-kafka-serial/1mb/durability"}
    assert _rows_of(by_col["durability_no_loss_ok"]) == {
        "confluent-kafka/1kb/durability", "confluent-kafka/1mb/durability"}
    assert doc["suites"]["raw_samples"]["statistics"]["unsuccessful_expectations"] == 1
    assert doc["suites"]["aggregates"]["statistics"]["unsuccessful_expectations"] == 4


def test_raw_rows_that_break_the_accounting_fail(lab: dict[str, Any]) -> None:
    """Each check recomputed from the raw rows fails on rows broken on purpose (the
    aggregates are those of the good rows), and names the cell it fails in."""
    from pyspark.sql import functions as F

    samples = lab["samples"]
    msgs = samples.where(F.col("sample_kind") == "message")

    def rows(scenario: str, payload: str, profile: str) -> list[Any]:
        return msgs.where((F.col("scenario") == scenario) & (F.col("payload") == payload)
                          & (F.col("profile") == profile)).orderBy("seq").collect()

    def at(scenario: str, payload: str, profile: str, seq: int, status: str) -> Any:
        return ((F.col("sample_kind") == "message") & (F.col("scenario") == scenario)
                & (F.col("payload") == payload) & (F.col("profile") == profile)
                & (F.col("seq") == seq) & (F.col("status") == status))

    def pick(cell_rows: list[Any], status: str, n: int = 1) -> list[int]:
        """``n`` non-warm-up seqs with a row of ``status`` (and no duplicate, unless asked)."""
        dups = {r["seq"] for r in cell_rows if r["status"] == "duplicate"}
        found = [r["seq"] for r in cell_rows if r["status"] == status and not r["is_warmup"]
                 and (status == "duplicate" or r["seq"] not in dups)]
        assert len(found) >= n, status
        return found[:n]

    kp_1kb = rows("kafka-python", "1kb", "latency")
    kp_1mb = rows("kafka-python", "1mb", "latency")
    ck_1kb = rows("confluent-kafka", "1kb", "durability")
    ck_1mb = rows("confluent-kafka", "1mb", "durability")
    (stray,) = pick(kp_1kb, "ok")
    (dup,), (lost,) = pick(kp_1mb, "duplicate"), pick(kp_1mb, "lost")
    twin_a, twin_b = pick(ck_1kb, "ok", 2)
    (no_ts,) = pick(ck_1mb, "ok")
    seq = F.col("seq")
    broken = (
        samples  # a received seq beyond everything the cell sent
        .withColumn("seq", F.when(at("kafka-python", "1kb", "latency", stray, "ok"),
                                  F.lit(10_000_000)).otherwise(seq))
        # a duplicate of a message that was lost: no received original
        .withColumn("seq", F.when(at("kafka-python", "1mb", "latency", dup, "duplicate"),
                                  F.lit(lost)).otherwise(seq))
        # two non-duplicate rows for one seq, none for another
        .withColumn("seq", F.when(at("confluent-kafka", "1kb", "durability", twin_b, "ok"),
                                  F.lit(twin_a)).otherwise(seq))
        # a received message without its receive time
        .withColumn("receive_ts_ns", F.when(at("confluent-kafka", "1mb", "durability", no_ts,
                                                "ok"), F.lit(None))
                    .otherwise(F.col("receive_ts_ns")))
        # a plan the cell did not follow
        .withColumn("planned_messages", F.when(
            (F.col("scenario") == "confluent-kafka-serial") & (F.col("payload") == "1kb")
            & (F.col("profile") == "latency"), F.col("planned_messages") + 1)
            .otherwise(F.col("planned_messages")))
    )
    # an aggregate row missing for a measured cell
    agg = lab["aggregates"].where(~((F.col("scenario") == "rest") & (F.col("payload") == "1mb")
                                    & (F.col("profile") == "durability")))
    doc = vm.validate(broken, agg, {"run_id": RUN})
    assert doc["success"] is False
    by_check = {f["column"] if f["suite"] == "aggregates" else f["check"]: f
                for f in doc["failed_expectations"]}  # aggregates: by column; raw: by rule
    assert _rows_of(by_check["received_seqs_in_range_ok"]) == {"kafka-python/1kb/latency"}
    assert _rows_of(by_check["duplicates_have_original_ok"]) == {"kafka-python/1mb/latency"}
    assert _rows_of(by_check["one_row_per_seq_ok"]) == {
        "kafka-python/1kb/latency", "confluent-kafka/1kb/durability"}
    assert _rows_of(by_check["planned_messages_ok"]) == {"confluent-kafka-serial/1kb/latency"}
    assert _rows_of(by_check["counts_match_raw_ok"]) == {"rest/1mb/durability"}
    no_receive = by_check["a received message (ok, late, duplicate) has its receive_ts_ns"]
    assert no_receive["suite"] == "raw_samples" and no_receive["unexpected_count"] == 1
    assert f"confluent-kafka/1mb/durability seq {no_ts}" in no_receive["summary"]
    assert set(by_check) == {
        "received_seqs_in_range_ok", "duplicates_have_original_ok", "one_row_per_seq_ok",
        "planned_messages_ok", "counts_match_raw_ok",
        "a received message (ok, late, duplicate) has its receive_ts_ns",
        *vm.AGGREGATE_COUNT_COLUMNS,  # "is never null": the missing aggregate row
    }


def test_bad_schema_and_values_in_samples(lab: dict[str, Any]) -> None:
    from pyspark.sql import functions as F

    samples = lab["samples"].drop("topic").withColumn(
        "status", F.when(F.col("seq") == 7, F.lit("weird")).otherwise(F.col("status"))
    )
    doc = vm.validate(samples, lab["aggregates"],
                      {"run_id": RUN, "durable_profiles": ["latency"]})
    failed = _failed(doc)
    assert ("raw_samples", None, "expect_table_columns_to_match_set") in failed
    assert ("raw_samples", "status", "expect_column_values_to_be_in_set") in failed
    # the unknown status is neither received, lost nor failed: sent != the three
    assert ("aggregates", "counts_match_raw_ok", "expect_column_values_to_be_in_set") in failed
    # durable profiles are configurable: the latency profile loses messages
    assert ("aggregates", "durability_no_loss_ok", "expect_column_values_to_be_in_set") in failed


def test_cli_and_spark_submit_validate(
    spark_submit: Any, good_cli: dict[str, Any]
) -> None:
    """The script through spark-submit (the DAG's settings) on the run that passed in
    :func:`good_cli`, with ``latency`` declared durable too: exit 1, one ``FAILED`` line
    (the loss under ``latency``), no traceback, the report rewritten as failed."""
    out = good_cli["out"]
    bad = spark_submit("spark_jobs/validate_metrics.py", *good_cli["args"],
                       "--profiles-durable", "latency,durability")
    assert bad.returncode == 1, (bad.stdout + bad.stderr)[-3000:]
    output = bad.stdout + bad.stderr  # PythonRunner merges the driver's stderr into stdout
    failed_lines = [ln for ln in output.splitlines() if ln.startswith("FAILED ")]
    assert len(failed_lines) == 1 and "durability_no_loss_ok" in failed_lines[0]
    assert "Traceback" not in output
    doc = json.loads((out / f"{RUN}.json").read_text())
    assert doc["success"] is False
    assert [f["column"] for f in doc["failed_expectations"]] == ["durability_no_loss_ok"]
    assert "failed" in (out / f"{RUN}.html").read_text()
