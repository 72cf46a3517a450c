"""Unit tests for kafkalab.drift (pure detection, config validation, storage)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkalab import drift
from kafkalab.errors import ConfigError
from kafkalab.store import LabData

REPO = Path(__file__).resolve().parents[2]


SERIES = {
    "scenario": "confluent-kafka", "client": "confluent-kafka", "payload": "1mb",
    "payload_encoding": "raw", "payload_bytes": 1048576, "profile": "latency",
    "workload": "nightly", "cluster_flavor": "kafka09", "broker_version": "0.9.0.1",
    "broker_count": 1, "planned_messages": 200,
}
"""The series columns of the synthetic history (aggregates schema v2)."""
KEY = ("confluent-kafka|confluent-kafka|1mb|raw|1048576|latency|nightly|kafka09|0.9.0.1|1|200|"
       "e2e_latency_ms_p99")


def _history(values: Sequence[float | None], metric: str = "e2e_latency_ms_p99",
             emulator: bool = False, **extra: object) -> pd.DataFrame:
    """One series, one row per run, runs one day apart (the last value is the latest run);
    every run complete and validated (a good baseline run)."""
    rows = []
    for i, v in enumerate(values):
        rows.append(
            {
                "run_id": f"202611{i + 1:02d}T000000Z-abc{i:03d}",
                "run_date": f"2026-11-{i + 1:02d}",
                **SERIES,
                "broker_is_emulator": emulator,
                "run_state": "complete",
                "run_validated": True,
                "run_stale_outputs": "",
                metric: v,
                **extra,
            }
        )
    return pd.DataFrame(rows)


def _cfg(**metrics: dict[str, object]) -> drift.DriftConfig:
    return drift.parse_drift_config({"metrics": metrics or {"e2e_latency_ms_p99": {}}})


def test_repo_config_loads_and_has_required_metrics() -> None:
    cfg = drift.load_drift_config(REPO / "include" / "drift.yaml")
    for m in ("e2e_latency_ms_p50", "e2e_latency_ms_p99", "publish_latency_ms_p99",
              "first_message_subscribe_ms", "lost_count"):
        assert m in cfg.metrics
    # The closed loop's message rate is ~1/mean latency: the same cause, not checked twice.
    for m in ("throughput_msgs_per_s", "message_rate_per_s"):
        assert m not in cfg.metrics and m not in drift.DriftConfig().metrics
    assert cfg.defaults.recovery_runs == 3 and cfg.rule("lost_count").recovery_runs == 3
    assert cfg.defaults.window_runs == 7
    assert cfg.defaults.min_baseline_runs == 3
    assert cfg.rule("e2e_latency_ms_p50").k_mad == 3.0
    assert cfg.rule("e2e_latency_ms_p50").min_relative_change == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"defaults": {"k_mad": -1}}, "defaults.k_mad"),
        ({"metrics": {"lost_count": {"direction": "sideways"}}}, "metrics.lost_count.direction"),
        ({"metrics": {"x": {"k_mda": 2}}}, "metrics.x.k_mda"),
        ({"bogus": 1}, "bogus"),
        ({"defaults": {"window_runs": "many"}}, "defaults.window_runs"),
        ({"alerts": {"worsen_margin_pct": -1}}, "alerts.worsen_margin_pct"),
        ([1, 2], "expected a mapping at the top level"),
    ],
)
def test_bad_config_names_the_key(data: object, needle: str, tmp_path: Path) -> None:
    import yaml

    p = tmp_path / "drift.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as ei:
        drift.load_drift_config(p)
    assert needle in str(ei.value)


def test_missing_or_invalid_yaml_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        drift.load_drift_config(tmp_path / "nope.yaml")
    p = tmp_path / "bad.yaml"
    p.write_text("defaults: [unclosed")
    with pytest.raises(ConfigError):
        drift.load_drift_config(p)
    with pytest.raises(ConfigError):  # a path given (--config) must exist: no silent defaults
        drift.load_drift_config_or_default(tmp_path / "nope.yaml")


def test_step_up_is_flagged_with_right_change() -> None:
    hist = _history([10.0, 10.4, 9.8, 10.1, 10.2, 9.9, 10.0, 15.0])
    rec = drift.detect_drift(hist, _cfg())
    assert len(rec) == 1
    r = rec.iloc[0]
    assert r["verdict"] == "drift" and bool(r["is_drift"])
    assert r["direction"] == "higher_is_worse"
    assert r["baseline_runs"] == 7
    assert r["baseline_value"] == pytest.approx(10.0)
    assert r["change_pct"] == pytest.approx(50.0)
    assert r["robust_z"] > 3
    assert 0.63 < r["confidence"] <= 1.0
    assert r["run_id"] == "20261108T000000Z-abc007"
    assert r["series_key"] == KEY
    assert r["workload"] == "nightly" and r["payload_bytes"] == 1048576
    assert r["rule"] == "mad" and "MAD rule only" in r["note"]  # no CI columns
    assert r["alert_status"] == "drifting" and r["alert_since_run_id"] == r["run_id"]


def test_window_uses_only_most_recent_runs() -> None:
    # Old runs at 100 fall out of a window of 3; the recent baseline is 10.
    hist = _history([100.0, 100.0, 100.0, 10.0, 10.5, 9.5, 16.0])
    cfg = drift.parse_drift_config({"metrics": {"e2e_latency_ms_p99": {"window_runs": 3}}})
    r = drift.detect_drift(hist, cfg).iloc[0]
    assert r["baseline_value"] == pytest.approx(10.0)
    assert r["baseline_runs"] == 3
    assert r["verdict"] == "drift"


def test_order_follows_manifest_start_not_run_id() -> None:
    hist = _history([10.0, 10.0, 10.0, 20.0])
    # Make the run with 20.0 the OLDEST by start time: the latest then is 10.0 -> ok.
    starts = ["2026-11-02T00:00:00Z", "2026-11-03T00:00:00Z", "2026-11-04T00:00:00Z",
              "2026-11-01T00:00:00Z"]
    hist["run_started_at"] = pd.to_datetime(starts, utc=True)
    order = drift.run_order(hist)
    assert order[0] == hist["run_id"].iloc[3]
    r = drift.detect_drift(hist, _cfg()).iloc[0]
    assert r["run_id"] == hist["run_id"].iloc[2]
    assert r["verdict"] == "ok"


def test_flat_noisy_series_no_false_alarm() -> None:
    # 5 % noise (sd 2.5 around 50): a 20 % move is 4 sd away; no alarm in 200 series, judged
    # in one history (as the cells of a run are: each its own series)
    rng = np.random.default_rng(12345)
    history = pd.concat([_history(list(rng.normal(50.0, 2.5, size=8)), planned_messages=200 + i)
                         for i in range(200)], ignore_index=True)
    rec = drift.detect_drift(history, _cfg())
    assert rec["series_key"].nunique() == len(rec) == 200  # each series judged once
    assert int(rec["is_drift"].sum()) == 0


def test_very_noisy_series_false_alarm_rate_is_low() -> None:
    # 10 % noise: a 20 % move is only 2 sd, so a few alarms are expected; the MAD gate keeps
    # the rate low (documented in docs/drift-and-alerts.md: about 2 % with a full window).
    rng = np.random.default_rng(7)
    rule = _cfg().rule("e2e_latency_ms_p99")
    alarms = 0
    trials = 2000
    for _ in range(trials):
        x = rng.normal(50.0, 5.0, size=8)
        alarms += int(drift.evaluate_series(list(x[:7]), float(x[7]), rule)["is_drift"])
    assert alarms / trials < 0.03


def test_zero_mad_tiny_change_is_not_drift() -> None:
    hist = _history([10.0, 10.0, 10.0, 10.0, 10.5])
    r = drift.detect_drift(hist, _cfg()).iloc[0]
    assert r["baseline_mad"] == 0
    assert r["verdict"] == "ok"
    assert pd.isna(r["robust_z"])  # infinite z is stored as null
    assert r["confidence"] == 1.0


def test_improvement_is_not_drift() -> None:
    hist = _history([10.0, 10.4, 9.8, 10.1, 10.2, 9.9, 10.0, 5.0])
    r = drift.detect_drift(hist, _cfg()).iloc[0]
    assert not bool(r["is_drift"])
    assert r["verdict"] == "improved"
    assert r["change_pct"] == pytest.approx(-50.0)


@pytest.mark.parametrize("n_values", [1, 2, 3])
def test_insufficient_history(n_values: int) -> None:
    hist = _history([10.0] * (n_values - 1) + [50.0])
    r = drift.detect_drift(hist, _cfg()).iloc[0]
    assert r["verdict"] == "insufficient_history"
    assert not bool(r["is_drift"])
    assert r["baseline_runs"] == n_values - 1


def test_lower_is_worse() -> None:
    cfg = _cfg(message_rate_per_s={"direction": "lower_is_worse"})
    drop = _history([1000.0, 1010.0, 990.0, 1000.0, 600.0], metric="message_rate_per_s")
    r = drift.detect_drift(drop, cfg).iloc[0]
    assert r["verdict"] == "drift" and r["direction"] == "lower_is_worse"
    assert r["change_pct"] == pytest.approx(-40.0)
    rise = _history([1000.0, 1010.0, 990.0, 1000.0, 1600.0], metric="message_rate_per_s")
    assert drift.detect_drift(rise, cfg).iloc[0]["verdict"] == "improved"


def test_zero_baseline_lost_count() -> None:
    cfg = _cfg(lost_count={"min_absolute_change": 0})
    r = drift.detect_drift(_history([0, 0, 0, 0, 1], metric="lost_count"), cfg).iloc[0]
    assert r["verdict"] == "drift" and bool(r["is_drift"])
    assert pd.isna(r["change_pct"])
    assert r["baseline_value"] == 0
    r = drift.detect_drift(_history([0, 0, 0, 0, 0], metric="lost_count"), cfg).iloc[0]
    assert r["verdict"] == "ok"
    # An absolute tolerance can be configured.
    cfg2 = _cfg(lost_count={"min_absolute_change": 2})
    r = drift.detect_drift(_history([0, 0, 0, 0, 2], metric="lost_count"), cfg2).iloc[0]
    assert r["verdict"] == "ok"


def test_missing_metric_and_nulls_are_tolerated() -> None:
    hist = _history([10.0, None, 10.0, 10.0, 10.0, 30.0])
    r = drift.detect_drift(hist, _cfg()).iloc[0]
    assert r["baseline_runs"] == 4 and r["verdict"] == "drift"
    # A metric the history lacks entirely produces no record; no crash.
    assert drift.detect_drift(hist, _cfg(lost_count={})).empty
    assert drift.detect_drift(pd.DataFrame(), _cfg()).empty
    # Latest value null -> never judged: an `undefined` record says so (not silence).
    r = drift.detect_drift(_history([10.0, 10.0, 10.0, None]), _cfg()).iloc[0]
    assert r["verdict"] == "undefined" and not bool(r["is_drift"])
    assert pd.isna(r["latest_value"]) and r["note"].startswith("null in the aggregates")


def test_emulator_runs_never_baseline_kafka_runs() -> None:
    kafka = _history([10.0, 10.0, 10.0, 10.0, 10.0])
    emu = _history([100.0] * 5, emulator=True)
    emu["run_id"] = kafka["run_id"]  # same runs, different broker kind
    hist = pd.concat([kafka, emu], ignore_index=True)
    rec = drift.detect_drift(hist, _cfg())
    assert set(rec["broker_is_emulator"]) == {True, False}
    assert not rec["is_drift"].any()


@pytest.mark.parametrize(("column", "bad"), [
    ("run_state", "failed"), ("run_state", "incomplete"), ("run_state", "running"),
    ("run_state", "stale"), ("run_state", None), ("run_validated", False),
    ("run_validated", None), ("run_stale_outputs", "aggregates"),
    ("run_stale_outputs", "report,validation"), ("run_stale_outputs", "drift"),
])
def test_runs_that_are_not_good_are_excluded_from_baseline(column: str, bad: object) -> None:
    hist = _history([10.0, 10.0, 10.0, 500.0, 500.0, 500.0, 10.0])
    hist[column] = hist[column].astype("object")
    hist.loc[3:5, column] = bad
    r = drift.detect_drift(hist, _cfg()).iloc[0]
    assert r["baseline_runs"] == 3 and r["baseline_value"] == 10.0


def test_a_stale_report_alone_does_not_spoil_a_baseline_run() -> None:
    hist = _history([10.0, 10.0, 10.0, 30.0])
    hist["run_stale_outputs"] = ["report", "", "", ""]
    r = drift.detect_drift(hist, _cfg()).iloc[0]
    assert r["baseline_runs"] == 3 and r["verdict"] == "drift"


def test_history_without_run_facts_has_no_baseline() -> None:
    hist = _history([10.0, 10.0, 10.0, 30.0]).drop(columns=["run_state", "run_validated"])
    r = drift.detect_drift(hist, _cfg()).iloc[0]
    assert r["verdict"] == "insufficient_history" and r["baseline_runs"] == 0


def test_explicit_latest_run_id() -> None:
    hist = _history([10.0, 10.0, 10.0, 30.0, 10.0])
    rid = hist["run_id"].iloc[3]
    r = drift.detect_drift(hist, _cfg(), latest_run_id=rid).iloc[0]
    assert r["run_id"] == rid and r["verdict"] == "drift"
    assert drift.detect_drift(hist, _cfg(), latest_run_id="nope").empty


def _write_aggregates(data_dir: Path, hist: pd.DataFrame) -> None:
    for rid, grp in hist.groupby("run_id"):
        d = data_dir / "aggregates" / f"run_id={rid}"
        d.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pandas(grp.drop(columns=["run_id"]), preserve_index=False),
                       d / "part-00000.parquet")
        (d / "_SUCCESS").write_text("")


def test_load_history_and_write_drift_roundtrip(tmp_path: Path) -> None:
    assert drift.load_history(tmp_path).empty
    hist = _history([10.0, 10.0, 10.0, 10.0, 30.0])
    _write_aggregates(tmp_path, hist.drop(columns=["run_state", "run_validated",
                                                  "run_stale_outputs"]))
    lab = LabData(tmp_path)
    for i, rid in enumerate(hist["run_id"]):
        lab.write_manifest({"run_id": rid, "status": "complete",
                            "started_at": f"2026-11-0{i + 1}T00:00:00+00:00"})
        (lab.validation_dir).mkdir(exist_ok=True)
        lab.validation_path(rid).write_text(json.dumps({"success": True}))
    rid = hist["run_id"].iloc[-1]
    loaded = drift.load_history(tmp_path)
    assert len(loaded) == 5
    assert set(loaded["run_id"]) == set(hist["run_id"])
    assert loaded["run_started_at"].notna().sum() == 5
    assert loaded["run_state"].eq("complete").all() and loaded["run_validated"].all()
    recs, path = drift.run_drift(tmp_path, config_path=REPO / "include" / "drift.yaml")
    assert path == tmp_path / "drift" / f"run_id={rid}" / "drift.parquet"
    assert path is not None and path.exists()
    back = pq.read_table(path).to_pandas()
    assert list(back.columns) == list(drift.DRIFT_COLUMNS)
    assert back["is_drift"].tolist() == [True]
    # A re-run replaces, never duplicates.
    drift.write_drift(recs, tmp_path, rid)
    assert len(pq.read_table(path).to_pandas()) == 1
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    # Empty records still write a valid file with the schema.
    drift.write_drift(drift.detect_drift(pd.DataFrame(), drift.DriftConfig()), tmp_path, "x")
    assert list(pq.read_table(LabData(tmp_path).drift_path("x")).schema.names) == list(
        drift.DRIFT_COLUMNS)


def test_load_history_with_diverging_schemas(tmp_path: Path) -> None:
    a = _history([10.0, 11.0])
    b = _history([None, None])
    b["run_id"] = ["20261201T000000Z-x1", "20261202T000000Z-x2"]
    b["e2e_latency_ms_p99"] = pd.Series([None, None], dtype="object")  # null-typed column
    _write_aggregates(tmp_path, a)
    _write_aggregates(tmp_path, b)
    loaded = drift.load_history(tmp_path)
    assert len(loaded) == 4


def test_records_to_dicts_is_json_safe() -> None:
    rec = drift.detect_drift(_history([0, 0, 0, 3], metric="lost_count"), _cfg(lost_count={}))
    d = drift.records_to_dicts(rec)
    json.dumps(d, allow_nan=False)
    assert d[0]["change_pct"] is None and d[0]["is_drift"] is True


# --------------------------------------------------------------------------- split modules


def test_default_config_is_the_path_policy(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    from kafkalab.paths import include_dir

    monkeypatch.delenv("KAFKALAB_DRIFT_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # not found from the current directory
    assert drift.load_drift_config() == drift.load_drift_config(include_dir() / "drift.yaml")
    custom = tmp_path / "rules.yaml"
    custom.write_text("defaults: {window_runs: 4}\n")
    monkeypatch.setenv("KAFKALAB_DRIFT_CONFIG", str(custom))
    assert drift.load_drift_config().defaults.window_runs == 4
    monkeypatch.setenv("KAFKALAB_DRIFT_CONFIG", str(tmp_path / "absent.yaml"))
    assert drift.load_drift_config_or_default() == drift.DriftConfig()


def test_manifest_frame_parses_start_and_status() -> None:
    from kafkalab.drift.history import MANIFEST_COLUMNS, manifest_frame

    df = manifest_frame({
        "a": {"run_id": "a", "started_at": "2026-11-01T00:00:00+00:00", "status": "complete",
              "stale_outputs": ["validation", "aggregates"]},
        "b": {"run_id": "b", "started_at": "not a time"},
    })
    assert tuple(df.columns) == MANIFEST_COLUMNS
    assert df["run_id"].tolist() == ["a", "b"]
    assert df["run_started_at"].iloc[0] == pd.Timestamp("2026-11-01", tz="UTC")
    assert pd.isna(df["run_started_at"].iloc[1]) and pd.isna(df["run_status"].iloc[1])
    assert df["run_stale_outputs"].tolist() == ["aggregates,validation", ""]
    assert df["run_state"].iloc[0] == "complete" and not df["run_validated"].any()
    empty = manifest_frame({})
    assert empty.empty and tuple(empty.columns) == MANIFEST_COLUMNS


def test_coerce_records_gives_the_stored_schema() -> None:
    from kafkalab.drift.records import coerce_records, empty_records

    df = coerce_records(pd.DataFrame([{"run_id": "r", "extra": 1, "baseline_runs": None,
                                       "confidence": "0.5", "is_drift": True}]))
    assert list(df.columns) == list(drift.DRIFT_COLUMNS)
    assert df["baseline_runs"].dtype == "int64" and df["baseline_runs"].iloc[0] == 0
    assert df["confidence"].dtype == "float64" and df["confidence"].iloc[0] == 0.5
    assert df["run_id"].dtype == "string" and pd.isna(df["metric"].iloc[0])
    assert bool(df["is_drift"].iloc[0]) and not bool(df["broker_is_emulator"].iloc[0])
    empty = empty_records()
    assert empty.empty and list(empty.columns) == list(drift.DRIFT_COLUMNS)
    assert drift.records_to_dicts(empty) == [] and drift.records_to_dicts(None) == []


def test_coerce_records_leaves_its_input_as_it_was() -> None:
    from kafkalab.drift.records import coerce_records

    given = pd.DataFrame([{"run_id": "r1", "confidence": "0.5", "extra": 1},
                          {"run_id": "r2", "confidence": None, "extra": 2}], index=[7, 3])
    before = given.copy()
    df = coerce_records(given)
    pd.testing.assert_frame_equal(given, before)
    assert list(df.index) == [0, 1] and list(df["run_id"]) == ["r1", "r2"]
    assert df["confidence"].iloc[0] == 0.5 and pd.isna(df["confidence"].iloc[1])


def test_series_key_blanks_missing_parts() -> None:
    assert drift.series_key("rest", None, float("nan"), pd.NA, "lost_count") == "rest||||lost_count"
    assert drift.series_key("a", "b", "1kb", "latency", "m") == "a|b|1kb|latency|m"
    # Whole numbers read back as floats (a column with nulls) keep their integer form.
    assert drift.series_key(*SERIES.values(), "e2e_latency_ms_p99") == KEY
    as_floats = {k: float(v) if isinstance(v, int) else v for k, v in SERIES.items()}
    assert drift.series_key(*as_floats.values(), "e2e_latency_ms_p99") == KEY
    assert tuple(SERIES) == drift.SERIES_COLUMNS


def test_read_drift_adds_missing_columns(tmp_path: Path) -> None:
    assert drift.read_drift(tmp_path, "r1") is None
    path = LabData(tmp_path).drift_path("r1")
    assert path == tmp_path / "drift" / "run_id=r1" / "drift.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pandas(pd.DataFrame({"run_id": ["r1"]})), path)
    back = drift.read_drift(tmp_path, "r1")
    assert back is not None and set(drift.DRIFT_COLUMNS) <= set(back.columns)
