"""Unit tests for kafkalab.report.data: what the report reads from a lab data directory."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from kafkalab.kinds import FAULTS, LATENCY, LOAD
from kafkalab.report.data import (
    NOTE_COLUMN,
    emulator_mask,
    honest_percentiles,
    is_schema_v2,
    load_report_data,
    numbers,
    parse_percentile_note,
    percentile_reasons,
    run_summaries,
    run_view,
    stale_outputs,
    strings,
)
from kafkalab.store import LabData
from tests.unit.test_report import RUN_IDS, write_lab_data


def test_column_helpers_tolerate_missing_and_odd_values() -> None:
    df = pd.DataFrame({"n": ["1.5", None, "x"], "s": ["a", None, 3],
                       "broker_is_emulator": [True, None, "yes"]})
    assert numbers(df, "n").tolist()[0] == 1.5 and numbers(df, "n").isna().tolist()[1:] == [
        True, True]
    assert numbers(df, "absent").isna().all()
    assert strings(df, "s").tolist() == ["a", "", "3"] and strings(df, "absent").tolist() == [
        "", "", ""]
    assert emulator_mask(df).tolist() == [True, False, True]
    assert emulator_mask(df.drop(columns=["broker_is_emulator"])).tolist() == [False] * 3


def test_runs_are_ordered_oldest_first_with_manifest_only_runs(tmp_path: Path) -> None:
    write_lab_data(tmp_path)
    lab = LabData(tmp_path)
    (lab.runs_dir / "later.json").write_text(json.dumps(
        {"run_id": "later", "started_at": "2027-01-01T00:00:00+00:00"}))
    data = load_report_data(lab)
    assert data.order == [*RUN_IDS, "later"]
    assert [s.run_id for s in run_summaries(data)] == ["later", *reversed(RUN_IDS)]


def test_run_view_stops_at_its_run(tmp_path: Path) -> None:
    write_lab_data(tmp_path)
    data = load_report_data(LabData(tmp_path))
    v = run_view(data, RUN_IDS[2])
    assert v.order == RUN_IDS[:3]
    assert set(v.history["run_id"]) == set(RUN_IDS[:3])
    assert set(v.rows["run_id"]) == {RUN_IDS[2]}
    assert not v.emulator and not v.drift_stored
    assert v.validation == {"success": True, "failed": []}  # runs 0-3 were validated
    assert (v.state, v.stale_outputs) == ("complete", ())


def test_run_view_of_newest_run(tmp_path: Path) -> None:
    write_lab_data(tmp_path)
    data = load_report_data(LabData(tmp_path))
    v = run_view(data, RUN_IDS[-1])
    assert v.emulator and not v.cluster_is_emulator  # one emulator cell, Kafka cluster
    assert v.drift_stored and v.drift_records["is_drift"].any()
    assert set(v.table_drift["metric"]) == {"e2e_latency_ms_p50", "e2e_latency_ms_p99"}
    assert v.validation is not None and v.validation["success"] is False
    assert v.validation_html == LabData(tmp_path).validation_html_path(RUN_IDS[-1])
    newest = run_summaries(data)[0]
    assert newest.emulator and newest.cells == 11 and newest.drift_flags
    assert newest.flavor == "external, kafka09"


def test_unreadable_files_give_views_not_errors(tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    lab.validation_dir.mkdir(parents=True)
    lab.validation_path("r1").write_text("{not json")
    (tmp_path / "aggregates").mkdir()
    (tmp_path / "aggregates" / "part-0.parquet").write_text("not parquet")
    lab.drift_path("r1").parent.mkdir(parents=True)
    lab.drift_path("r1").write_text("not parquet")
    data = load_report_data(lab)
    assert data.history.empty and data.order == []
    v = run_view(data, "r1")
    assert v.rows.empty and not v.drift_stored and v.drift_records.empty
    assert v.validation == {"success": None, "failed": [], "unreadable": True}


def test_percentile_note_parsing() -> None:
    assert parse_percentile_note("p99: n<100; p999: n<1000") == {"p99": "n<100",
                                                                  "p999": "n<1000"}
    assert parse_percentile_note("p50: censored") == {"p50": "censored"}
    assert parse_percentile_note(None) == {} and parse_percentile_note(float("nan")) == {}


def test_schema_1_rows_get_the_minimum_n_rule_and_schema_2_rows_stay() -> None:
    df = pd.DataFrame({
        "received_count": [20, 150, 2000, 20],
        "planned_messages": [None, None, None, 20],  # the last row is schema 2
        "e2e_latency_ms_p50": [1.0, 1.0, 1.0, 1.0],
        "e2e_latency_ms_p90": [2.0, 2.0, 2.0, 2.0],
        "e2e_latency_ms_p99": [3.0, 3.0, 3.0, None],
        "e2e_latency_ms_p999": [4.0, 4.0, 4.0, None],
        NOTE_COLUMN: [None, None, None, "p99: n<100; p999: n<1000"],
        "throughput_msgs_per_s": [10.0, 20.0, 30.0, None],
        "message_rate_per_s": [None, None, None, 40.0],
    })
    assert is_schema_v2(df).tolist() == [False, False, False, True]
    out = honest_percentiles(df)
    assert numbers(out, "e2e_latency_ms_p99").isna().tolist() == [True, False, False, True]
    assert numbers(out, "e2e_latency_ms_p999").isna().tolist() == [True, True, False, True]
    assert numbers(out, "e2e_latency_ms_p90").tolist() == [2.0] * 4  # 20 >= 10
    assert [r.get("p99") for r in percentile_reasons(out)] == ["n<100", None, None, "n<100"]
    assert out[NOTE_COLUMN].tolist()[:3] == ["p99: n<100; p999: n<1000", "p999: n<1000", None]
    assert numbers(out, "message_rate_per_s").tolist() == [10.0, 20.0, 30.0, 40.0]
    assert numbers(df, "e2e_latency_ms_p99").tolist()[0] == 3.0  # the input is not changed


def test_stale_outputs_leave_out_the_page_being_built() -> None:
    m = {"stale_outputs": ["aggregates", "report"]}
    assert stale_outputs(m, page_built=False) == ("aggregates", "report")
    assert stale_outputs(m, page_built=True) == ("aggregates",)
    assert stale_outputs(None, page_built=True) == ()


def test_a_runs_kind_is_its_manifests_or_else_what_its_data_measured(tmp_path: Path) -> None:
    from tests.unit.test_report_faults import write_fault_run
    from tests.unit.test_report_load import LOAD_RUNS, write_load_run

    write_lab_data(tmp_path, store_drift=False)
    lab = LabData(tmp_path)
    write_load_run(tmp_path, LOAD_RUNS[0], 1, pause=False)
    write_load_run(tmp_path, LOAD_RUNS[1], 2, pause=False)
    write_fault_run(tmp_path, "f-declared")
    write_fault_run(tmp_path, "f-measured")
    for rid in (LOAD_RUNS[1], "f-measured", RUN_IDS[0]):  # runs whose manifest is lost
        lab.manifest_path(rid).unlink()
    data = load_report_data(lab)
    assert data.run_kind(LOAD_RUNS[0]) is data.run_kind(LOAD_RUNS[1]) is LOAD
    assert data.run_kind("f-declared") is data.run_kind("f-measured") is FAULTS
    assert data.run_kind(RUN_IDS[0]) is data.run_kind(RUN_IDS[1]) is LATENCY
    assert data.run_kind("never-seen") is LATENCY
    assert {s.run_id: s.kind for s in run_summaries(data)}[LOAD_RUNS[1]] == "load"
    assert run_view(data, "f-measured").kind is FAULTS
