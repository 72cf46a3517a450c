"""Unit tests for kafkalab.report.data: what the report reads from a lab data directory."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from kafkalab.report.data import (
    emulator_mask,
    load_report_data,
    numbers,
    run_summaries,
    run_view,
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
    assert not v.emulator and not v.drift_stored and v.validation is None


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
    assert newest.emulator and newest.cells == 9 and newest.drift_flags
    assert newest.flavor == "kafka09, noida"


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
