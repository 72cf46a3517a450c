"""The Airflow task functions, run as a worker runs them: from a directory of its own.

No Airflow services: the data dir is a temporary one written through LabData, the working
directory is elsewhere, and the cluster Connection lookup is stubbed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.airflow import tasks
from kafkalab.airflow.connections import ClusterConnection
from kafkalab.errors import ClusterError, ConfigError, RunError, RunNeverStartedError
from kafkalab.store import LabData, atomic_write_json


def as_a_task(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> LabData:
    """Run as an Airflow task runs: a temporary lab data dir (``$KAFKALAB_DATA_DIR``) and lab
    home, no ``kafkalab_cluster`` Connection, and an unrelated empty folder as the current
    directory. The Airflow tests' ``lab`` fixtures."""
    data = LabData(tmp_path / "data")
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(data.root))
    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path / "lab"))
    monkeypatch.setattr(ClusterConnection, "get_connection", lambda self: None)
    elsewhere = tmp_path / "task-cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return data


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> LabData:
    return as_a_task(monkeypatch, tmp_path)


def _write_run(lab: LabData, run_id: str, status: str, success: bool | None) -> None:
    lab.write_manifest({"run_id": run_id, "status": status, "cells": []})
    if success is not None:
        atomic_write_json(lab.validation_path(run_id), {"run_id": run_id, "success": success})


def test_verify_outcome_reads_the_data_dir_not_the_cwd(lab: LabData) -> None:
    _write_run(lab, "nightly-20261121T000000Z", "complete", True)
    assert tasks.verify_outcome("nightly-20261121T000000Z") == {
        "run_id": "nightly-20261121T000000Z", "status": "complete", "validation_success": True}


@pytest.mark.parametrize(("status", "success", "problem"), [
    ("incomplete", True, r"run is incomplete$"),
    ("complete", False, r"validation failed \(see .*validation/r1\.json\)$"),
    ("complete", None, r"no validation result$"),
])
def test_verify_outcome_names_the_problem(lab: LabData, status: str, success: bool | None,
                                          problem: str) -> None:
    _write_run(lab, "r1", status, success)
    with pytest.raises(RunError, match=r"^run r1: " + problem):
        tasks.verify_outcome("r1")


def test_verify_outcome_without_a_run(lab: LabData) -> None:
    with pytest.raises(RunError, match=r"no run manifest; no validation result"):
        tasks.verify_outcome("never-ran")


def test_close_run_refuses_a_run_never_started(lab: LabData) -> None:
    with pytest.raises(RunNeverStartedError, match="was never started"):
        tasks.close_run("never-ran")


def test_a_failure_no_retry_can_change_fails_the_task_for_good() -> None:
    """close_run of a run never started, and a trigger conf the DAG refuses, are not retried:
    Airflow's AirflowFailException ends the task without waiting its retry_delay."""
    from airflow.sdk.exceptions import AirflowFailException

    from kafkalab.airflow.chains import parts

    with pytest.raises(AirflowFailException, match=r"^RunNeverStartedError: run x was never"):
        parts.fail_without_retry(RunNeverStartedError("run x was never started"))


def test_resolve_scenarios_loads_the_workload_from_include(lab: LabData) -> None:
    assert tasks.resolve_scenarios({"workload": "seed000"}) == [
        "rest", "kafka-python", "confluent-kafka", "jvm-e2e"]
    assert tasks.resolve_scenarios({"scenarios": ["rest"], "workload": "seed000"}) == ["rest"]


def test_build_request_from_params(lab: LabData) -> None:
    req = tasks.build_request({"workload": "seed000", "scenarios": ["rest"], "payloads": ["1kb"],
                               "profiles": [], "messages": 3, "warmup_messages": None},
                              run_id="experiment-1")
    assert req.data_dir == lab.root
    assert req.scenarios == ["rest"] and req.payloads == ["1kb"] and req.profiles == ["latency"]
    assert req.workload.messages == 3 and req.workload.warmup_messages == 2
    assert req.descriptor is None  # rest needs no cluster
    assert req.run_id == "experiment-1"
    assert "experiment-1" in req.command
    assert req.workload.first_message_probes == 1  # seed000's own, no param given
    probes = tasks.build_request({"workload": "nightly", "scenarios": ["rest"], "payloads": [],
                                  "profiles": [], "first_message_probes": 0}, run_id="e-2")
    assert probes.workload.first_message_probes == 0
    assert probes.workload.consumer_mode == "subscribe"  # nightly.yaml's (the model's default)
    assigned = tasks.build_request({"workload": "nightly", "scenarios": ["rest"], "payloads": [],
                                    "profiles": [], "consumer_mode": "assign"}, run_id="e-3")
    assert assigned.workload.consumer_mode == "assign"


def test_prepare_run_records_the_logical_date_in_the_manifest(lab: LabData) -> None:
    """The night a DAG run measures reaches the manifest (the trend charts' X axis); a CLI
    re-opening of the run keeps it."""
    params = {"workload": "seed000", "scenarios": ["rest"], "payloads": ["1kb"],
              "profiles": ["latency"], "messages": 3, "warmup_messages": 0}
    cells = tasks.prepare_run(params, "nightly-20261118T000000Z-abc123",
                              command="airflow dag nightly run m1",
                              logical_date="2026-11-18T00:00:00+00:00")
    assert cells == [{"scenario": "rest", "payload": "1kb", "profile": "latency"}]
    manifest = lab.manifest("nightly-20261118T000000Z-abc123")
    assert manifest is not None and manifest["logical_date"] == "2026-11-18T00:00:00+00:00"
    assert manifest["started_at"][:10] != "2026-11-18"  # the trigger time stays apart
    tasks.prepare_run(params, "nightly-20261118T000000Z-abc123")  # no logical date given
    manifest = lab.manifest("nightly-20261118T000000Z-abc123")
    assert manifest is not None and manifest["logical_date"] == "2026-11-18T00:00:00+00:00"
    assert tasks.build_request(params).logical_date is None


def test_mapped_cells_have_readable_names() -> None:
    assert tasks.cell_label({"scenario": "confluent-kafka", "payload": "1mb",
                             "profile": "latency"}) == "confluent-kafka · 1mb · latency"


def test_build_request_names_the_param(lab: LabData) -> None:
    with pytest.raises(ConfigError, match=r"param messages must be at least 1, got 0"):
        tasks.build_request({"workload": "seed000", "scenarios": ["rest"], "messages": 0})


def test_build_request_finds_the_descriptor_in_the_lab_home(lab: LabData, tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match=str(tmp_path / "lab" / "cluster.yaml")):
        tasks.build_request({"workload": "seed000", "scenarios": ["kafka-python"]})


def test_check_cluster_skips_when_no_scenario_needs_kafka(lab: LabData) -> None:
    assert tasks.check_cluster(None, scenarios=["rest"])["required"] is False


def test_a_relative_workload_path_is_refused(lab: LabData) -> None:
    with pytest.raises(ConfigError, match=r"param workload: 'w/mine\.yaml' is a relative path"):
        tasks.resolve_scenarios({"workload": "w/mine.yaml"})
    assert tasks.resolve_scenarios({"workload": "nightly"})  # a name is fine



def _stale_run(lab: LabData, run_id: str, stale: list[str]) -> None:
    lab.write_manifest({"run_id": run_id, "status": "complete", "cells": [],
                        "stale_outputs": stale})


def _stale(lab: LabData, run_id: str) -> list[str]:
    manifest = lab.manifest(run_id)
    assert manifest is not None
    return list(manifest.get("stale_outputs") or [])


def test_a_recomputed_output_leaves_stale_outputs(lab: LabData) -> None:
    _stale_run(lab, "r1", list(tasks.STALE_OUTPUTS))
    assert tasks.mark_recomputed("r1", "aggregates") is True
    assert _stale(lab, "r1") == ["validation", "drift", "report"]
    assert tasks.mark_recomputed("r1", "aggregates") is True  # already fresh: nothing to do
    assert _stale(lab, "r1") == ["validation", "drift", "report"]


def test_an_output_computed_from_stale_inputs_stays_stale(lab: LabData) -> None:
    _stale_run(lab, "r1", list(tasks.STALE_OUTPUTS))
    assert tasks.mark_recomputed("r1", "drift") is False  # the aggregates were not recomputed
    assert tasks.mark_recomputed("r1", "report") is False
    assert _stale(lab, "r1") == list(tasks.STALE_OUTPUTS)
    for output in tasks.STALE_OUTPUTS:  # in the chain's order, each clears
        assert tasks.mark_recomputed("r1", output) is True, output
    assert _stale(lab, "r1") == []


def test_a_failed_spark_task_clears_only_an_output_it_rewrote(lab: LabData) -> None:
    import time

    _stale_run(lab, "r1", ["validation"])
    started_s = time.time()
    assert tasks.mark_recomputed("r1", "validation", written_since_s=started_s) is False
    assert _stale(lab, "r1") == ["validation"]  # no result written: still stale
    atomic_write_json(lab.validation_path("r1"), {"run_id": "r1", "success": False})
    assert tasks.mark_recomputed("r1", "validation", written_since_s=started_s) is True
    assert _stale(lab, "r1") == []  # a failed validation is a fresh result


def test_check_drift_and_publish_report_clear_their_entry(lab: LabData) -> None:
    _stale_run(lab, "r1", ["drift", "report"])
    out = tasks.check_drift("r1")
    assert out["run_id"] == "r1"
    page = tasks.publish_report("r1")
    assert Path(page).is_file() and "r1" in Path(page).read_text()
    assert _stale(lab, "r1") == []


def test_mark_recomputed_refuses_an_unknown_output(lab: LabData) -> None:
    with pytest.raises(ValueError, match="unknown output 'samples'"):
        tasks.mark_recomputed("r1", "samples")


def test_the_cell_summary_in_xcom_says_why_p99_is_undefined() -> None:
    from kafkalab.samples import Sample
    from kafkalab.summary import CellResult

    def msg(seq: int, e2e_ms: float) -> Sample:
        send = 1_000_000_000 + seq * 10_000_000
        return Sample(sample_kind="message", seq=seq, status="ok", send_ts_ns=send,
                      ack_ts_ns=send + 100_000, receive_ts_ns=send + int(e2e_ms * 1e6))

    cell = CellResult.from_samples([msg(i, float(i)) for i in range(1, 21)],
                                   scenario="confluent-kafka", payload="1kb", profile="latency",
                                   status="complete", payload_bytes=1056)
    s = tasks._summary(cell)
    assert (s["status"], s["rows"], s["count"], s["population"]) == ("complete", 20, 20, 20)
    assert s["p50_ms"] == 10.0
    assert s["p99_ms"] is None and s["p99_ms_reason"].startswith("n<100")
    tool = CellResult.from_samples(
        [Sample(sample_kind="tool_summary", seq=0, statistic=st, e2e_latency_ms_override=v,
                latency_resolution_ms=1.0) for st, v in (("p50", 1.0), ("p99", 7.0))],
        scenario="jvm-e2e", payload="1kb", profile="latency", status="complete",
        payload_bytes=1056)
    assert (tasks._summary(tool)["p50_ms"], tasks._summary(tool)["p99_ms"]) == (1.0, 7.0)


def test_the_nightly_workload_defines_every_percentile_its_alerts_judge() -> None:
    """Every percentile metric drift-checked by include/drift.yaml is defined by the number
    of messages nightly.yaml measures per cell, and p99's 95 % interval has both ends (the
    drift rule's interval test applies)."""
    import re

    from kafkalab.config import load_workload
    from kafkalab.drift import load_drift_config
    from kafkalab.stats import MIN_SAMPLES, quantile_ci_ranks

    nightly = load_workload("nightly")
    percentiles = [m.group(1) for metric in load_drift_config().metrics
                   if (m := re.fullmatch(r"\w+_ms_(p\d+)", metric))]
    assert "p99" in percentiles and "p50" in percentiles
    for name in percentiles:
        assert nightly.messages >= MIN_SAMPLES[name], name
    lo, hi = quantile_ci_ranks(nightly.messages, 0.99)
    assert lo is not None and hi is not None
    assert "confluent-kafka-serial" in nightly.scenarios and "jvm-e2e" in nightly.scenarios
    assert nightly.first_message_probes >= 3  # a median of warm probes, the cold one apart


def test_export_metrics_writes_the_textfile_where_asked(lab: LabData, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The nightly's export_metrics: the default path in the data dir, else
    $KAFKALAB_PROM_TEXTFILE; the file parses as Prometheus text."""
    from prometheus_client.parser import text_string_to_metric_families

    _write_run(lab, "nightly-20261121T000000Z", "complete", True)
    out = tasks.export_metrics()
    assert Path(out["path"]) == (lab.root / "metrics" / "kafkalab.prom").absolute()
    names = {f.name for f in text_string_to_metric_families(Path(out["path"]).read_text())}
    assert names  # parses, and says something about the run
    target = tmp_path / "textfile" / "lab.prom"
    monkeypatch.setenv(tasks.PROM_TEXTFILE_ENV, str(target))
    assert Path(tasks.export_metrics()["path"]) == target.absolute()
    assert target.read_text() == Path(out["path"]).read_text()


def test_a_file_written_just_after_the_start_counts_as_written_since(lab: LabData) -> None:
    """Linux stamps a file from its coarse clock, a tick behind time.time(): a validation
    written right after the job started can carry an mtime a few ms *before* that start
    (seen in CI: one_spark_session's stand-in job wrote it at once). It still counts; a file
    from well before the start does not."""
    import os
    import time

    started_s = time.time()
    path = lab.validation_path("r1")
    atomic_write_json(path, {"run_id": "r1", "success": False})
    os.utime(path, (started_s - 0.008, started_s - 0.008))  # what the coarse clock can give
    assert tasks.validation_written_since("r1", started_s)
    os.utime(path, (started_s - 5, started_s - 5))  # an earlier run's result
    assert not tasks.validation_written_since("r1", started_s)
    assert tasks.written_at_or_after(started_s, started_s)
