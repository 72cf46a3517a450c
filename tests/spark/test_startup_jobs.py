"""The start-up run's Spark jobs: ``aggregate_startup`` gives, per case, exactly the figures
the engine's own summary gives for the same probes; ``validate_startup`` passes them and
names each probe or case whose rule is broken; the run's report page shows the answer.

The probes are written by the engine's own writer (``kafkalab.startup.files``) from rows
with known marks, so every figure is known; the real broker's probes are
``tests/integration/test_startup.py``'s."""

from __future__ import annotations

import math
from typing import Any

import pytest

from kafkalab.startup import files
from kafkalab.startup_figures import FIGURES, summarize
from spark_jobs import aggregate_startup as ag
from spark_jobs import validate_startup as vs

pytestmark = pytest.mark.spark

RUN = "20261128T120000Z-5a17a0"


def _probe(probe: int, member: int, case: str, client: str, join: str, protocol: str,
           members: int, state: str, **marks: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "run_id": RUN, "probe": probe, "trial": 0, "member": member, "case_key": case,
        "client": client, "client_version": "x", "join": join, "group_protocol": protocol,
        "members": members, "cluster_state": state, "initial_rebalance_delay_ms": 3000,
        "kafka_version": "4.4.0", "broker_flavor": "kraft", "status": "ok", "error": None,
        "started_at_ns": 1, "created_ms": 1.0, "metadata_ms": None, "assigned_ms": None,
        "first_record_ms": None, "offsets_topic_ready_ms": None, "coordinator_ready_ms": None}
    row.update(marks)
    return row


COLD = "cold/delay=3000/confluent-kafka/subscribe/classic/m1"
WARM3 = "warm/delay=3000/kafka-python/subscribe/classic/m3"
ASSIGN = "warm/delay=3000/confluent-kafka/assign/none/m1"
ROWS = [
    _probe(0, 0, COLD, "confluent-kafka", "subscribe", "classic", 1, "cold", metadata_ms=50.0,
           assigned_ms=5050.0, first_record_ms=5200.0, offsets_topic_ready_ms=60.0,
           coordinator_ready_ms=600.0),
    *(_probe(1, m, WARM3, "kafka-python", "subscribe", "classic", 3, "warm", created_ms=6.0 + m,
             assigned_ms=6000.0 + 10 * m, first_record_ms=6100.0 + 10 * m) for m in range(3)),
    _probe(2, 0, WARM3, "kafka-python", "subscribe", "classic", 3, "warm", status="timeout",
           created_ms=5.0),
    _probe(3, 0, ASSIGN, "confluent-kafka", "assign", "none", 1, "warm", metadata_ms=40.0,
           assigned_ms=1.5, first_record_ms=540.0),
]


@pytest.fixture(scope="module")
def lab(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("startup-data")
    stream = files.open_probes(files.run_dir(root, "2026-11-28", RUN))
    for row in ROWS:
        stream.append(row)
    stream.close()
    out = root / "aggregates" / "startup"
    counts = ag.run(spark, str(root / "startup"), str(out), RUN)
    run_dir = out / f"run_id={RUN}"
    probes = spark.read.parquet(str(run_dir / "startup_probes.parquet"))
    cases = spark.read.parquet(str(run_dir / "startup_cases.parquet"))
    return {"root": root, "counts": counts, "probes": probes, "cases": cases, "spark": spark}


def test_the_cases_hold_what_the_engine_summary_says(lab: dict[str, Any]) -> None:
    assert lab["counts"] == {"startup_probes": 6, "startup_cases": 3}
    assert ag.FIGURES == FIGURES
    spark_cases = {r["case_key"]: r.asDict() for r in lab["cases"].collect()}
    for expected in summarize(ROWS):
        got = spark_cases[expected["case_key"]]
        for key, value in expected.items():
            if isinstance(value, float):
                assert math.isclose(got[key], value), key
            else:
                assert got[key] == value, key
    cold = spark_cases[COLD]
    assert (cold["client_start_ms"], cold["join_ms"], cold["fetch_ms"]) == (50.0, 5000.0, 150.0)
    warm = spark_cases[WARM3]  # the timed-out member is counted, not in the median
    assert (warm["probes"], warm["failed"], warm["first_record_ms_n"]) == (4, 1, 3)
    assert warm["first_record_ms"] == 6110.0 and warm["marks_out_of_order"] == 0


def test_the_run_validates_and_each_broken_rule_names_its_rows(lab: dict[str, Any]) -> None:
    from pyspark.sql import functions as F

    doc = vs.validate(lab["probes"], lab["cases"], {"run_id": RUN})
    assert doc["success"] is True and doc["failed_expectations"] == [] and doc["suite"] == "startup"
    probes = lab["probes"].withColumn(  # probe 0 got its first record before its assignment
        "first_record_ms", F.when(F.col("probe") == 0, F.lit(10.0)).otherwise(F.col("first_record_ms")))
    probes = ag.with_parts(probes.drop("client_start_ms", "join_ms", "fetch_ms", "marks_in_order"))
    cases = lab["cases"].withColumn(
        "failed", F.when(F.col("case_key") == ASSIGN, F.lit(5).cast("long")).otherwise(F.col("failed")))
    broken = vs.validate(probes, cases, {"run_id": RUN})
    by_check = {f["check"]: set(f["unexpected_rows"]) for f in broken["failed_expectations"]}
    assert by_check == {"every probe's marks are in order": {f"{COLD}#0.0"},
                        "fetch_ms >= 0": {f"{COLD}#0.0"},
                        vs.CASE_CHECKS["counts_ok"]: {ASSIGN}}
