"""Tests of spark_jobs/validate_load.py (suite ``load``, Great Expectations on Spark).

A fake run that is fine passes; a copy of its aggregates with every check broken on purpose
(each in known cells) fails exactly those checks, naming exactly those cells/consumers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spark_jobs import aggregate_load as al
from spark_jobs import validate_load as vl
from tools.fake_load_samples import FakeLoadCell, write_fake_load_run

RUN = "20261122T010203Z-vload1"

# faults that are not losses: failed/unsent sends, duplicates, late arrivals, a pause
TIDY = FakeLoadCell(consumers=3, rate_msgs_per_s=200, duration_s=2, warmup_s=0.5,
                    failed=2, unsent=1, duplicates={0: 3}, late={1: 2})
PAUSED = FakeLoadCell(consumers=2, acks="0", rate_msgs_per_s=100, duration_s=3, warmup_s=0.5,
                      pause_at_s=1.0, pause_for_s=0.8, lag_interval_s=0.25)
BIG = FakeLoadCell(consumers=4, rate_msgs_per_s=500, duration_s=2.5, warmup_s=0.5)
# a failed cell may have lost messages: the fault-free rule does not apply to it
BROKEN_CELL = FakeLoadCell(consumers=3, silent=(2,), rate_msgs_per_s=50, duration_s=2,
                           warmup_s=0.5, status="failed")
A, B, C, D = (c.cell_id for c in (TIDY, PAUSED, BIG, BROKEN_CELL))


@pytest.fixture(scope="module")
def lab(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("vload")
    write_fake_load_run(root, RUN, [TIDY, PAUSED, BIG, BROKEN_CELL], seed=8)
    out = root / "aggregates" / "load"
    al.run(spark, str(root / "load"), str(out), RUN)
    run_dir = out / f"run_id={RUN}"
    cells = spark.read.parquet(str(run_dir / "load_cells.parquet"))
    consumers = spark.read.parquet(str(run_dir / "load_consumers.parquet"))
    return {"root": root, "out": out, "cells": cells, "consumers": consumers}


@pytest.fixture(scope="module")
def broken(lab: dict[str, Any]) -> dict[str, Any]:
    """The aggregates with each check broken in known cells, validated once."""
    from pyspark.sql import functions as F

    def in_cells(*ids: str) -> Any:
        return F.col("cell_id").isin(list(ids))

    def patch(df: Any, column: str, cond: Any, value: Any) -> Any:
        return df.withColumn(column, F.when(cond, value).otherwise(F.col(column)))

    cells = lab["cells"]
    cells = patch(cells, "acked_msgs", in_cells(A), F.col("acked_msgs") + 1)
    cells = patch(cells, "loss_pct", in_cells(B), F.lit(150.0))
    cells = patch(cells, "late_pct", in_cells(D), F.lit(-1.0))
    cells = patch(cells, "duplicates", in_cells(C), F.lit(-1).cast("long"))
    cells = patch(cells, "e2e_max_ms", in_cells(A, C), F.col("e2e_p50_ms") - 1)
    cells = patch(cells, "service_e2e_p99_ms", in_cells(B), F.col("service_e2e_max_ms") + 1)
    cells = patch(cells, "publish_delay_p50_ms", in_cells(D),
                  F.col("publish_delay_p90_ms") + 1)
    cells = patch(cells, "ack_latency_max_ms", in_cells(C), F.lit(-5.0))
    cells = patch(cells, "e2e_p50_ms_ci_low", in_cells(B), F.col("e2e_p50_ms") + 1)
    consumers = lab["consumers"]
    key = (F.col("cell_id") == A) & (F.col("consumer") == 1)
    consumers = patch(consumers, "missing_msgs", key, F.lit(2).cast("long"))
    consumers = patch(consumers, "duplicates", in_cells(B) & (F.col("consumer") == 0),
                      F.lit(-3).cast("long"))
    consumers = consumers.where(~((F.col("cell_id") == C) & (F.col("consumer") == 0)))
    doc = vl.validate(cells, consumers, {"run_id": RUN})
    return {"doc": doc, "cells": cells, "consumers": consumers,
            "by_check": {f["check"]: set(f["unexpected_rows"])
                         for f in doc["failed_expectations"]}}


def test_a_good_run_passes(lab: dict[str, Any]) -> None:
    doc = vl.validate(lab["cells"], lab["consumers"], {"run_id": RUN})
    assert doc["failed_expectations"] == []
    assert doc["success"] is True and doc["suite"] == "load"
    assert set(doc["suites"]) == {"load_cells", "load_consumers"}
    assert doc["suites"]["load_cells"]["statistics"]["evaluated_expectations"] >= 20
    json.dumps(doc)


def test_the_broken_run_fails_exactly_the_broken_checks(broken: dict[str, Any]) -> None:
    assert broken["doc"]["success"] is False
    assert set(broken["by_check"]) == {
        vl.CELL_CHECKS["outcomes_add_up_ok"], "loss_pct in [0, 100]", "late_pct in [0, 100]",
        "duplicates >= 0", vl.CELL_CHECKS["e2e_percentiles_ordered_ok"],
        vl.CELL_CHECKS["service_e2e_percentiles_ordered_ok"],
        vl.CELL_CHECKS["publish_delay_percentiles_ordered_ok"],
        vl.CELL_CHECKS["ack_latency_percentiles_ordered_ok"],
        vl.CELL_CHECKS["e2e_ci_brackets_ok"], vl.CELL_CHECKS["consumer_rows_ok"],
        vl.CONSUMER_CHECKS[0][0],
    }
    # "duplicates >= 0" exists in both parts: cells (C) and consumers (B consumer 0)
    dup = [f for f in broken["doc"]["failed_expectations"] if f["check"] == "duplicates >= 0"]
    assert {(f["suite"], tuple(f["unexpected_rows"])) for f in dup} == {
        ("load_cells", (C,)), ("load_consumers", (f"{B} consumer 0",))}


def test_outcomes_must_add_up(broken: dict[str, Any]) -> None:
    assert broken["by_check"][vl.CELL_CHECKS["outcomes_add_up_ok"]] == {A}


def test_loss_and_late_pct_within_0_100(broken: dict[str, Any]) -> None:
    assert broken["by_check"]["loss_pct in [0, 100]"] == {B}
    assert broken["by_check"]["late_pct in [0, 100]"] == {D}


def test_percentiles_ordered_per_metric(broken: dict[str, Any]) -> None:
    checks = vl.CELL_CHECKS
    assert broken["by_check"][checks["e2e_percentiles_ordered_ok"]] == {A, C}
    assert broken["by_check"][checks["service_e2e_percentiles_ordered_ok"]] == {B}
    assert broken["by_check"][checks["publish_delay_percentiles_ordered_ok"]] == {D}
    assert broken["by_check"][checks["ack_latency_percentiles_ordered_ok"]] == {C}
    assert broken["by_check"][checks["e2e_ci_brackets_ok"]] == {B}


def test_fault_free_cells_lose_nothing(broken: dict[str, Any]) -> None:
    """Consumer 1 of the complete cell A now misses two messages: named; consumer 2 of the
    failed cell D (75 missing) is not, and neither is the paused cell B (drained)."""
    assert broken["by_check"][vl.CONSUMER_CHECKS[0][0]] == {f"{A} consumer 1"}
    failure = next(f for f in broken["doc"]["failed_expectations"]
                   if f["check"] == vl.CONSUMER_CHECKS[0][0])
    assert failure["column"] == "missing_msgs" and failure["unexpected_count"] == 1


def test_one_consumer_row_per_consumer(broken: dict[str, Any]) -> None:
    assert broken["by_check"][vl.CELL_CHECKS["consumer_rows_ok"]] == {C}


def test_the_command_line_fails_the_broken_tables(broken: dict[str, Any], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The job's command line (in the shared session; the file as a script:
    ``test_job_scripts.py``) on the broken tables written to disk: exit 1, the report and
    page written, one FAILED line per failed expectation."""
    agg = tmp_path / "aggregates" / "load"
    for name in ("cells", "consumers"):
        broken[name].coalesce(1).write.parquet(str(agg / f"run_id={RUN}" /
                                                   f"load_{name}.parquet"))
    out = tmp_path / "validation"
    code = vl.main(["--aggregates", str(agg), "--run-id", RUN, "--out", str(out)])
    printed = capsys.readouterr()
    assert code == 1, (printed.out + printed.err)[-3000:]
    doc = json.loads((out / f"{RUN}-load.json").read_text())
    assert doc["success"] is False
    assert len(doc["failed_expectations"]) == len(broken["doc"]["failed_expectations"])
    text = printed.out + printed.err
    assert text.count("FAILED load_") == len(doc["failed_expectations"])
    page = (out / f"{RUN}-load.html").read_text()
    assert f"{A} consumer 1" in page and "http" not in page.split("<body>")[1]


def test_cli_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = vl.main(["--aggregates", str(tmp_path / "none"), "--run-id", RUN,
                    "--out", str(tmp_path / "v")])
    assert code == 2
    assert "aggregates path not found" in capsys.readouterr().err
