"""``kafkalab aggregate --one-session``: the validation the aggregation wrote in its own Spark
session is read back as the outcome of a validation job (no spark-submit of its own), and the
lines printed say so. The spark-submit path itself runs for real in ``tests/spark/test_cli_aggregate.py``
(``kafkalab aggregate --one-session``); the demo runs it through Spark Connect."""

from __future__ import annotations

import json
from pathlib import Path

from kafkalab.aggregate import AggregateOutcome, JobOutcome, _judged_in_session, format_outcome
from kafkalab.kinds import FAULTS, LATENCY, LOAD
from kafkalab.store import LabData


def _write_validation(lab: LabData, run_id: str, doc: dict[str, object]) -> None:
    path = lab.validation_path(run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def test_the_latency_and_load_aggregations_validate_in_their_session() -> None:
    assert LATENCY.validates_in_session
    assert LOAD.validates_in_session and not FAULTS.validates_in_session


def test_a_validation_written_in_session_is_judged_as_the_job_would_exit(tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    agg = JobOutcome("aggregate", 0, 14.2, "/logs/aggregate.log")
    _write_validation(lab, "r1", {"success": True, "failed_expectations": []})
    passed = _judged_in_session(lab, "r1", agg)
    assert (passed.job, passed.exit_code, passed.seconds, passed.in_session) == (
        "validate", 0, 0.0, True)
    assert passed.log == agg.log and passed.failed_expectations == []

    _write_validation(lab, "r2", {"success": False, "failed_expectations": [
        {"summary": "samples: e2e_latency_ms >= 0"}, "aggregates: rows == cells"]})
    failed = _judged_in_session(lab, "r2", agg)
    assert failed.exit_code == 1  # VALIDATION_FAILED_EXIT: a result, not an error
    assert failed.failed_expectations == ["FAILED samples: e2e_latency_ms >= 0",
                                          "FAILED aggregates: rows == cells"]

    lines = format_outcome(AggregateOutcome("r2", "latency", "local[*]", [agg, failed], False,
                                            None, "/r/index.html")).splitlines()
    assert "  aggregate         exit 0  14 s  log /logs/aggregate.log" in lines
    assert ("  validate          exit 1  in the aggregation's session  log /logs/aggregate.log"
            in lines)
    assert "    FAILED samples: e2e_latency_ms >= 0" in lines
