"""Tests of spark_jobs/validate_metrics.py (Great Expectations 1.x on Spark DataFrames)."""

from __future__ import annotations

import json
from pathlib import Path
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
    aggregates = vm._read_run(spark, str(root / "aggregates"), RUN, "aggregates")
    return {"root": root, "samples": samples, "aggregates": aggregates}


def _failed(doc: dict[str, Any]) -> set[tuple[str, str | None, str]]:
    return {(f["suite"], f["column"], f["expectation_type"]) for f in doc["failed_expectations"]}


def test_good_fake_data_passes(lab: dict[str, Any], tmp_path: Path) -> None:
    doc = vm.validate(lab["samples"], lab["aggregates"],
                      {"run_id": RUN, "docs_dir": str(tmp_path / "docs")})
    assert doc["failed_expectations"] == []
    assert doc["success"] is True
    assert doc["suites"]["raw_samples"]["success"] and doc["suites"]["aggregates"]["success"]
    assert doc["suites"]["raw_samples"]["statistics"]["evaluated_expectations"] > 50
    assert (tmp_path / "docs" / "index.html").exists()
    json.dumps(doc)  # JSON-able


def test_bad_data_fails_with_the_right_expectations(lab: dict[str, Any]) -> None:
    from pyspark.sql import functions as F

    samples = lab["samples"].withColumn(
        "e2e_latency_ms",
        F.when((F.col("seq") == 20) & (F.col("sample_kind") == "message"), F.lit(-3.0))
        .otherwise(F.col("e2e_latency_ms")),
    )
    agg = lab["aggregates"]
    rest_lat = (F.col("scenario") == "rest") & (F.col("payload") == "1kb")
    kp_lat = (F.col("scenario") == "kafka-python") & (F.col("payload") == "1kb")
    ck_dur = (F.col("scenario") == "confluent-kafka") & (F.col("profile") == "durability")
    agg = (
        agg.withColumn(  # received != sent - lost
            "received_count",
            F.when(rest_lat & (F.col("profile") == "latency"), F.col("received_count") + 1)
            .otherwise(F.col("received_count")))
        .withColumn(  # p99 > max
            "e2e_latency_ms_p99",
            F.when(kp_lat & (F.col("profile") == "latency"), F.col("e2e_latency_ms_max") + 1)
            .otherwise(F.col("e2e_latency_ms_p99")))
        .withColumn(  # a loss under 'durability' (accounting kept consistent)
            "received_count",
            F.when(ck_dur, F.col("received_count") - 1).otherwise(F.col("received_count")))
        .withColumn("lost_count",
                    F.when(ck_dur, F.col("lost_count") + 1).otherwise(F.col("lost_count")))
    )
    doc = vm.validate(samples, agg, {"run_id": RUN})
    assert doc["success"] is False
    assert _failed(doc) == {
        ("raw_samples", "e2e_latency_ms", "expect_column_values_to_be_between"),
        ("aggregates", "loss_accounting_ok", "expect_column_values_to_be_in_set"),
        ("aggregates", "e2e_percentiles_ordered_ok", "expect_column_values_to_be_in_set"),
        ("aggregates", "durability_no_loss_ok", "expect_column_values_to_be_in_set"),
    }
    by_col = {f["column"]: f for f in doc["failed_expectations"]}
    assert by_col["e2e_latency_ms"]["unexpected_count"] >= 1
    assert -3.0 in by_col["e2e_latency_ms"]["partial_unexpected_list"]
    assert "received_count = sent_count - lost_count" in by_col["loss_accounting_ok"]["summary"]
    assert by_col["durability_no_loss_ok"]["unexpected_count"] == 2     # 1kb and 1mb cells
    assert doc["suites"]["raw_samples"]["statistics"]["unsuccessful_expectations"] == 1
    assert doc["suites"]["aggregates"]["statistics"]["unsuccessful_expectations"] == 3


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
    # durable profiles are configurable: the latency profile loses messages
    assert ("aggregates", "durability_no_loss_ok", "expect_column_values_to_be_in_set") in failed


def test_cli_and_spark_submit_validate(
    spark_submit: Any, lab: dict[str, Any], tmp_path: Path
) -> None:
    root = lab["root"]
    args = ["--samples", str(root / "samples"), "--aggregates", str(root / "aggregates"),
            "--run-id", RUN, "--out", str(tmp_path / "validation")]
    code = vm.main(args)                        # in-process: exit code 0 path
    assert code == 0
    doc = json.loads((tmp_path / "validation" / f"{RUN}.json").read_text())
    assert doc["success"] is True and doc["run_id"] == RUN
    assert doc["data_docs_index"] == "docs/index.html"
    assert (tmp_path / "validation" / "docs" / "index.html").exists()
    page = (tmp_path / "validation" / f"{RUN}.html").read_text()
    assert "passed" in page and "https://" not in page

    bad = spark_submit("spark_jobs/validate_metrics.py", *args,
                       "--profiles-durable", "latency,durability")
    assert bad.returncode == 1, (bad.stdout + bad.stderr)[-3000:]
    output = bad.stdout + bad.stderr  # PythonRunner merges the driver's stderr into stdout
    failed_lines = [ln for ln in output.splitlines() if ln.startswith("FAILED ")]
    assert len(failed_lines) == 1 and "durability_no_loss_ok" in failed_lines[0]
    assert "Traceback" not in output
    doc = json.loads((tmp_path / "validation" / f"{RUN}.json").read_text())
    assert doc["success"] is False
