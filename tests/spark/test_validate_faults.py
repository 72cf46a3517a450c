"""Tests of spark_jobs/validate_faults.py (suite ``faults``, Great Expectations on Spark).

The standard fake fault run passes (its lossy trial is of the default profile). The same
run whose durability trial lost two acked messages fails exactly the durability check,
naming the trial, through its command line; its report makes the highest-severity
alert. A copy of the aggregates with every other check broken in known trials fails exactly
those checks (and is an ``error``, not ``critical``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafkalab import alerts
from spark_jobs import aggregate_faults as af
from spark_jobs import validate_faults as vf
from tools.fake_fault_samples import consumer_trials, standard_trials, write_fake_fault_run

RUN = "20261122T010203Z-vfault1"
LOSS_RUN = "20261122T010203Z-vfault2"
CONSUMER_RUN = "20261122T010203Z-vfault3"
KA1, KA2, KB, LA = (t.trial_id for t in consumer_trials())
DUR, LOSSY, DUP1, DUP2, NONE = (t.trial_id for t in standard_trials())


def _tables(spark: Any, out: Path, run_id: str) -> tuple[Any, Any]:
    run_dir = out / f"run_id={run_id}"
    return (spark.read.parquet(str(run_dir / "fault_trials.parquet")),
            spark.read.parquet(str(run_dir / "fault_cells.parquet")))


@pytest.fixture(scope="module")
def lab(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("vfaults")
    write_fake_fault_run(root, RUN, standard_trials())
    write_fake_fault_run(root, LOSS_RUN, standard_trials(durability_loss=2))
    write_fake_fault_run(root, CONSUMER_RUN, [*standard_trials(), *consumer_trials()])
    out = root / "aggregates" / "faults"
    for run in (RUN, LOSS_RUN, CONSUMER_RUN):
        af.run(spark, str(root / "faults"), str(out), run)
    trials, cells = _tables(spark, out, RUN)
    return {"root": root, "out": out, "trials": trials, "cells": cells, "spark": spark}


def test_the_standard_run_passes(lab: dict[str, Any]) -> None:
    doc = vf.validate(lab["trials"], lab["cells"], {"run_id": RUN})
    assert doc["failed_expectations"] == []
    assert doc["success"] is True and doc["suite"] == "faults" and doc["run_id"] == RUN
    assert set(doc["suites"]) == {"fault_trials", "fault_cells"}
    assert doc["suites"]["fault_trials"]["statistics"]["evaluated_expectations"] == 40
    assert doc["durability"] == {"check": vf.DURABILITY_CHECK, "success": True,
                                 "acked_lost": 0, "trials": []}
    assert alerts.validation_severity(doc) is None
    json.dumps(doc)


def test_durability_loss_fails_the_cli_with_a_critical_alert(
        lab: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The job's command line (in the shared session; spark-submit itself:
    ``test_validate_metrics.py``, script mode: ``test_job_scripts.py``) on the run whose
    durability trial lost 2 acked messages: exit 1, the one failed expectation is the
    durability check naming the trial, the report's durability block lists it, and the alert
    severity is the highest there is."""
    out = tmp_path / "validation"
    code = vf.main(["--aggregates", str(lab["out"]), "--run-id", LOSS_RUN, "--out", str(out)])
    printed = capsys.readouterr()
    assert code == 1, (printed.out + printed.err)[-3000:]
    doc = json.loads((out / f"{LOSS_RUN}-faults.json").read_text())
    assert doc["success"] is False
    assert [(f["check"], f["unexpected_rows"], f["column"])
            for f in doc["failed_expectations"]] == [(vf.DURABILITY_CHECK, [DUR], "acked_lost")]
    assert doc["durability"] == {
        "check": vf.DURABILITY_CHECK, "success": False, "acked_lost": 2,
        "trials": [{"trial_id": DUR, "fault": "sigkill-leader", "acks": "all",
                    "status": "complete", "acked_lost": 2, "acked_lost_in_broker_logs": 0,
                    "acked_lost_absent_from_logs": 2}]}
    text = printed.out + printed.err
    assert f"DURABILITY BROKEN: 2 acked message(s) lost under the durability profile in {DUR}" \
        in text
    assert text.count("FAILED fault_trials") == 1
    page = (out / f"{LOSS_RUN}-faults.html").read_text()
    assert "Durability broken" in page and DUR in page and "http" not in page.split("<body>")[1]
    assert alerts.validation_severity(doc) == alerts.HIGHEST_SEVERITY == "critical"
    fields = alerts.notify.fault_validation_fields(doc)
    body = alerts.build_generic_body(run_id=LOSS_RUN, validation=fields,
                                     severity=alerts.validation_severity(doc))
    assert body["severity"] == "critical" and body["validation"]["durability"]["acked_lost"] == 2


@pytest.fixture(scope="module")
def broken(lab: dict[str, Any]) -> dict[str, Any]:
    """The standard run's aggregates with each other check broken in known rows."""
    from pyspark.sql import functions as F

    def patch(df: Any, column: str, cond: Any, value: Any) -> Any:
        return df.withColumn(column, F.when(cond, value).otherwise(F.col(column)))

    trial = F.col("trial_id")
    trials = lab["trials"]
    trials = patch(trials, "acked_msgs", trial == DUP1, F.col("acked_msgs") + 1)
    trials = patch(trials, "unseen", trial == LOSSY, F.col("unseen") + 1)
    trials = patch(trials, "read_back_msgs", trial == NONE, F.col("read_back_msgs") - 1)
    trials = patch(trials, "acked_lost_in_broker_logs", trial == LOSSY, F.lit(3).cast("long"))
    trials = patch(trials, "duplicates", trial == DUP2, F.lit(-1).cast("long"))
    trials = patch(trials, "intended_msgs", trial == DUR, F.lit(None).cast("long"))
    cells = lab["cells"]
    cells = patch(cells, "trials_with_loss", F.col("fault") == "none", F.lit(5))
    cells = patch(cells, "duplicates_median", F.col("fault") == "sigkill-leader",
                  F.col("duplicates_max") + 1)
    doc = vf.validate(trials, cells, {"run_id": RUN})
    return {"doc": doc, "by_check": {f["check"]: set(f["unexpected_rows"])
                                     for f in doc["failed_expectations"]}}


def test_broken_checks_fail_naming_their_rows(broken: dict[str, Any]) -> None:
    checks = vf.TRIAL_CHECKS
    assert broken["by_check"] == {
        checks["outcomes_add_up_ok"]: {DUP1},
        checks["acked_split_ok"]: {DUP1},  # LOSSY's extra unseen is not acked
        checks["verdicts_add_up_ok"]: {LOSSY},
        checks["read_back_ok"]: {NONE},
        checks["lost_in_logs_ok"]: {LOSSY},
        "duplicates >= 0": {DUP2},
        vf.COMPLETE_HAS_COUNTS: {DUR},
        # a cell names its producer too (the fixture's trials recorded only their client)
        vf.CELL_CHECKS["trial_counts_ok"]: {"durability/none/acks-all/confluent-kafka"},
        vf.CELL_CHECKS["medians_below_max_ok"]: {
            "default/sigkill-leader/acks-1/confluent-kafka",
            "durability/sigkill-leader/acks-all/confluent-kafka"},
    }


def test_broken_but_durable_is_an_error_not_critical(broken: dict[str, Any]) -> None:
    doc = broken["doc"]
    assert doc["success"] is False and doc["durability"]["success"] is True
    assert alerts.validation_severity(doc) == "error"


def test_cli_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = vf.main(["--aggregates", str(tmp_path / "none"), "--run-id", RUN,
                    "--out", str(tmp_path / "v")])
    assert code == 2
    assert "aggregates path not found" in capsys.readouterr().err


# --------------------------------------------------------------------------- consumer faults


def test_a_run_with_consumer_faults_passes(lab: dict[str, Any]) -> None:
    """Commit before loses 3 records (KB): allowed, at-most-once; commit after only
    redelivers."""
    trials, cells = _tables(lab["spark"], lab["out"], CONSUMER_RUN)
    doc = vf.validate(trials, cells, {"run_id": CONSUMER_RUN})
    assert doc["failed_expectations"] == [] and doc["success"] is True
    assert doc["suites"]["fault_trials"]["statistics"]["evaluated_expectations"] == 40
    lost = {r["trial_id"]: r["lost_unprocessed"]
            for r in trials.where("lost_unprocessed > 0").collect()}
    assert lost == {KB: 3}
    labels = {r["cell"] for r in vf.with_cell_checks(cells).collect()}
    assert {"durability/kill-consumer/acks-all/commit-after/confluent-kafka",
            "durability/kill-consumer/acks-all/commit-before/confluent-kafka",
            "durability/none/acks-all/confluent-kafka"} <= labels


@pytest.fixture(scope="module")
def consumer_broken(lab: dict[str, Any]) -> dict[str, Any]:
    """The consumer run's aggregates with an at-least-once trial that lost records, a
    consumer trial whose re-read disagrees and a complete one without the judgement."""
    from pyspark.sql import functions as F

    trials, cells = _tables(lab["spark"], lab["out"], CONSUMER_RUN)
    trial = F.col("trial_id")
    trials = trials.withColumn("lost_unprocessed", F.when(trial == KA2, F.lit(2).cast("long"))
                               .otherwise(F.col("lost_unprocessed")))
    trials = trials.withColumn("reread_agrees", F.when(trial == LA, F.lit(False))
                               .when(trial == KA1, F.lit(None).cast("boolean"))
                               .otherwise(F.col("reread_agrees")))
    doc = vf.validate(trials, cells, {"run_id": CONSUMER_RUN})
    return {"doc": doc, "by_check": {f["check"]: set(f["unexpected_rows"])
                                     for f in doc["failed_expectations"]}}


def test_consumer_checks_fail_naming_their_trials(consumer_broken: dict[str, Any]) -> None:
    assert consumer_broken["by_check"] == {vf.AT_LEAST_ONCE_CHECK: {KA2},
                                           vf.REREAD_CHECK: {KA1, LA}}
    doc = consumer_broken["doc"]
    assert doc["success"] is False and doc["durability"]["success"] is True
    assert alerts.validation_severity(doc) == "error"


def test_an_aborted_record_seen_by_a_committed_reader_fails_its_trial(
        lab: dict[str, Any]) -> None:
    """Transactional trials: their aborted records are counted (outcome, the committed
    re-read, the uncommitted one), the cell is keyed by the transaction size, and one aborted
    record the read_committed re-read saw fails exactly ``no_aborted_visible_ok`` for its
    trial."""
    from tools.fake_fault_samples import FakeFaultTrial

    run = "20261129T000000Z-txn"
    plain = FakeFaultTrial(trial=1, duration_s=4.0)
    good = FakeFaultTrial(txn_msgs=10, aborted=20, trial=1, duration_s=4.0)
    seen = FakeFaultTrial(txn_msgs=10, aborted=20, aborted_visible=1, trial=2, duration_s=4.0)
    write_fake_fault_run(lab["root"], run, [plain, good, seen])
    af.run(lab["spark"], str(lab["root"] / "faults"), str(lab["out"]), run)
    trials, cells = _tables(lab["spark"], lab["out"], run)
    rows = {r["trial_id"]: r for r in trials.collect()}
    assert (rows[good.trial_id]["aborted_msgs"], rows[good.trial_id]["aborted_visible"],
            rows[good.trial_id]["aborted_read_uncommitted"], rows[good.trial_id]["txn_msgs"]) \
        == (20, 0, 20, 10)
    assert rows[seen.trial_id]["aborted_visible"] == 1
    assert rows[seen.trial_id]["verdict"] == "aborted visible"
    assert (rows[plain.trial_id]["aborted_msgs"], rows[plain.trial_id]["txn_msgs"],
            rows[plain.trial_id]["aborted_read_uncommitted"]) == (0, None, None)
    by_txn = {r["txn_msgs"]: r for r in cells.collect()}
    assert set(by_txn) == {None, 10}
    assert (by_txn[10]["trials"], by_txn[10]["aborted_visible_sum"],
            by_txn[10]["aborted_msgs_sum"]) == (2, 1, 40)
    doc = vf.validate(trials, cells, {"run_id": run})
    assert [(f["check"], f["unexpected_rows"]) for f in doc["failed_expectations"]] == [
        (vf.TRIAL_CHECKS["no_aborted_visible_ok"], [seen.trial_id])]
    labels = {r["cell"] for r in vf.with_cell_checks(cells).collect()}
    assert "durability/sigkill-leader/acks-all/confluent-kafka/txn10" in labels
