"""``kafkalab compare``: two runs side by side, judged by the drift rule (kafkalab.compare)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkalab.compare import REGRESSED, compare_runs, format_comparison
from kafkalab.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
RUN_A = "20261120T010203Z-aaaaaa"
RUN_B = "20261121T010203Z-bbbbbb"


def _row(scenario: str, client: str, payload: str, p50: float, *, emulator: bool = False,
         p99: float | None = None, lost: int = 0, rate: float | None = None) -> dict[str, Any]:
    """An aggregate row of schema 2 (500 messages; p99 3x p50 unless given)."""
    p99 = 3 * p50 if p99 is None else p99
    return {
        "run_date": "2026-11-20", "workload": "nightly", "scenario": scenario,
        "client": client, "payload": payload, "payload_bytes": 1056,
        "payload_encoding": "raw", "profile": "latency",
        "cluster_flavor": "external" if emulator else ("http" if scenario == "rest" else "kafka09"),
        "broker_version": "" if scenario == "rest" else "0.9.0.1",
        "broker_count": None if scenario == "rest" else 1, "broker_is_emulator": emulator,
        "planned_messages": 500, "sent_count": 500, "received_count": 500 - lost,
        "lost_count": lost, "e2e_latency_ms_p50": p50, "e2e_latency_ms_p99": p99,
        "e2e_latency_ms_p999": None,
        "e2e_latency_ms_percentiles_note": "p999: n<1000",
        "e2e_latency_ms_p50_ci_low": p50 * 0.97, "e2e_latency_ms_p50_ci_high": p50 * 1.03,
        "e2e_latency_ms_p99_ci_low": p99 * 0.9, "e2e_latency_ms_p99_ci_high": p99 * 1.1,
        "message_rate_per_s": rate if rate is not None else 1000.0 / p50,
        "first_message_subscribe_ms": None, "publish_latency_ms_p99": None,
    }


def write_run(data_dir: Path, run_id: str, rows: list[dict[str, Any]],
              *, validated: bool = True) -> None:
    """Aggregates, a complete manifest and a validation result of one run."""
    d = data_dir / "aggregates" / f"run_id={run_id}"
    d.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False),
                   d / "part-00000.parquet")
    (data_dir / "runs").mkdir(parents=True, exist_ok=True)
    day = run_id[6:8]
    (data_dir / "runs" / f"{run_id}.json").write_text(json.dumps({
        "schema_version": 2, "run_id": run_id, "status": "complete",
        "started_at": f"2026-11-{day}T01:02:03+00:00",
        "ended_at": f"2026-11-{day}T01:09:03+00:00", "stale_outputs": []}))
    (data_dir / "validation").mkdir(parents=True, exist_ok=True)
    (data_dir / "validation" / f"{run_id}.json").write_text(json.dumps({"success": validated}))


@pytest.fixture
def two_runs(tmp_path: Path) -> Path:
    """A: kafka-python, confluent-kafka, rest. B: kafka-python the same, confluent-kafka
    twice as slow (intervals apart), rest gone, an emulator cell new."""
    write_run(tmp_path, RUN_A, [
        _row("kafka-python", "kafka-python", "1kb", 10.0),
        _row("confluent-kafka", "confluent-kafka", "1kb", 5.0),
        _row("rest", "requests", "1kb", 4.0),
    ])
    write_run(tmp_path, RUN_B, [
        _row("kafka-python", "kafka-python", "1kb", 10.5),
        _row("confluent-kafka", "confluent-kafka", "1kb", 10.0),
        _row("confluent-kafka", "confluent-kafka", "1kb", 7.0, emulator=True),
    ])
    return tmp_path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalab.cli", *args], capture_output=True,
                          text=True, cwd=REPO, env=dict(os.environ), timeout=120, check=False)


def test_a_doubled_median_regresses_and_the_unchanged_cell_does_not(two_runs: Path) -> None:
    c = compare_runs(two_runs, RUN_A, RUN_B)
    assert c.kind == "latency" and c.comparable and c.reason is None and c.baseline_ok
    assert c.judged == 6  # p50, p99, lost_count of the two shared series
    by_label = {(s.label, s.emulator): s for s in c.shared}
    assert set(by_label) == {("kafka-python 1kb latency", False),
                             ("confluent-kafka 1kb latency", False)}
    slow = {m.metric: m for m in by_label[("confluent-kafka 1kb latency", False)].metrics}
    assert slow["e2e_latency_ms_p50"].a_value == 5.0 and slow["e2e_latency_ms_p50"].b_value == 10.0
    assert slow["e2e_latency_ms_p50"].change_pct == pytest.approx(100.0)
    assert slow["e2e_latency_ms_p50"].verdict == REGRESSED
    assert slow["e2e_latency_ms_p99"].verdict == REGRESSED
    # the rate halves: shown, not judged (closed loop: the same cause as the latency)
    assert slow["message_rate_per_s"].verdict == "not judged"
    assert slow["message_rate_per_s"].change_pct == pytest.approx(-50.0)
    # p999 is null in both runs: not listed at all; lost_count 0 -> 0 is ok
    assert "e2e_latency_ms_p999" not in slow and slow["lost_count"].verdict == "ok"
    same = {m.metric: m for m in by_label[("kafka-python 1kb latency", False)].metrics}
    assert same["e2e_latency_ms_p50"].verdict == "ok"  # +5 % < min_relative_change 20 %
    assert c.regressed == 2
    # series of one run only are listed, not dropped; the emulator's cell is its own series
    assert [s["label"] for s in c.only_a] == ["rest [requests] 1kb latency"]
    assert [(s["label"], s["emulator"]) for s in c.only_b] == [("confluent-kafka 1kb latency", True)]
    table = format_comparison(c)
    assert "REGRESSED" in table and "only in " + RUN_A + ": rest [requests] 1kb latency" in table
    assert "EMULATOR" in table


def test_overlapping_intervals_are_not_a_regression(tmp_path: Path) -> None:
    a = _row("kafka-python", "kafka-python", "1kb", 10.0)
    b = _row("kafka-python", "kafka-python", "1kb", 13.0)
    b["e2e_latency_ms_p50_ci_low"] = 9.0  # B's interval reaches into A's
    write_run(tmp_path, RUN_A, [a])
    write_run(tmp_path, RUN_B, [b])
    p50 = next(m for m in compare_runs(tmp_path, RUN_A, RUN_B).shared[0].metrics
               if m.metric == "e2e_latency_ms_p50")
    assert p50.change_pct == pytest.approx(30.0) and p50.verdict == "ok"
    assert p50.note and "intervals overlap" in p50.note


def test_a_loss_after_none_regresses_and_a_missing_percentile_is_undefined(
        tmp_path: Path) -> None:
    write_run(tmp_path, RUN_A, [_row("kafka-python", "kafka-python", "1kb", 10.0)])
    b = _row("kafka-python", "kafka-python", "1kb", 10.0, lost=3)
    b["e2e_latency_ms_p99"] = None
    write_run(tmp_path, RUN_B, [b])
    m = {x.metric: x for x in compare_runs(tmp_path, RUN_A, RUN_B).shared[0].metrics}
    assert m["lost_count"].verdict == REGRESSED and m["lost_count"].change_pct is None
    assert m["e2e_latency_ms_p99"].verdict == "undefined" and m["e2e_latency_ms_p99"].b_value is None


def test_unknown_run_is_a_config_error(two_runs: Path) -> None:
    with pytest.raises(ConfigError, match="unknown run 'nope'"):
        compare_runs(two_runs, RUN_A, "nope")


def test_cli_exit_codes_and_json(two_runs: Path) -> None:
    proc = _cli("compare", RUN_A, RUN_B, "--data-dir", str(two_runs))
    assert proc.returncode == 1, proc.stderr
    assert "REGRESSED" in proc.stdout
    back = _cli("compare", RUN_B, RUN_B, "--data-dir", str(two_runs), "--json")
    assert back.returncode == 0, back.stderr
    doc = json.loads(back.stdout)
    assert doc["regressed"] == 0 and doc["run_a"] == RUN_B and doc["only_a"] == []
    js = _cli("compare", RUN_A, RUN_B, "--data-dir", str(two_runs), "--json")
    assert js.returncode == 1 and json.loads(js.stdout)["regressed"] == 2
    bad = _cli("compare", RUN_A, "nope", "--data-dir", str(two_runs))
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [
        f"kafkalab: error: unknown run 'nope': no manifest and no aggregates in {two_runs}"]


def test_a_config_path_given_must_exist_and_parse(two_runs: Path) -> None:
    # None: include/drift.yaml (or the built-in rules); a path given is never replaced by them
    with pytest.raises(ConfigError, match=r"typo\.yaml: no such file"):
        compare_runs(two_runs, RUN_A, RUN_B, two_runs / "typo.yaml")
    bad = two_runs / "bad.yaml"
    bad.write_text("metrics: [unclosed\n")
    with pytest.raises(ConfigError, match="malformed YAML"):
        compare_runs(two_runs, RUN_A, RUN_B, bad)
    proc = _cli("compare", RUN_A, RUN_B, "--data-dir", str(two_runs), "--config",
                str(two_runs / "typo.yaml"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"kafkalab: error: {two_runs / 'typo.yaml'}: no such file"]


def _cli_json(*args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = _cli(*args, "--json")
    return proc, json.loads(proc.stdout)  # exactly one document, even when exiting 2


def test_runs_with_no_series_in_common_are_not_comparable(tmp_path: Path) -> None:
    # B measured 1000 messages (a different series) and an emulator's cell: nothing shared
    b = _row("kafka-python", "kafka-python", "1kb", 10.0)
    b["planned_messages"] = 1000
    write_run(tmp_path, RUN_A, [_row("kafka-python", "kafka-python", "1kb", 10.0)])
    write_run(tmp_path, RUN_B, [b, _row("confluent-kafka", "confluent-kafka", "1kb", 7.0,
                                        emulator=True)])
    c = compare_runs(tmp_path, RUN_A, RUN_B)
    reason = (f"nothing comparable: {RUN_A} and {RUN_B} share no series (planned_messages 500 "
              "in A, 1000 in B)")
    assert not c.comparable and c.reason == reason and c.shared == [] and c.judged == 0
    assert reason in format_comparison(c)
    proc = _cli("compare", RUN_A, RUN_B, "--data-dir", str(tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""  # a CI gate that checked nothing fails
    assert proc.stderr.strip().splitlines() == [f"kafkalab: error: {reason}"]
    js, doc = _cli_json("compare", RUN_A, RUN_B, "--data-dir", str(tmp_path))
    assert js.returncode == 2 and js.stderr.strip().splitlines() == [f"kafkalab: error: {reason}"]
    assert doc["comparable"] is False and doc["reason"] == reason and doc["regressed"] == 0
    assert [(s["label"], s["broker_label"]) for s in doc["only_b"]] == [
        ("confluent-kafka 1kb latency", "EMULATOR — not Kafka"), ("kafka-python 1kb latency", None)]


def test_the_same_cell_on_an_emulator_is_not_comparable_with_kafka(tmp_path: Path) -> None:
    write_run(tmp_path, RUN_A, [_row("kafka-python", "kafka-python", "1kb", 10.0)])
    write_run(tmp_path, RUN_B, [_row("kafka-python", "kafka-python", "1kb", 10.0,
                                     emulator=True)])
    c = compare_runs(tmp_path, RUN_A, RUN_B)
    assert not c.comparable and c.reason is not None
    assert c.reason.endswith("(cluster_flavor kafka09 in A, external in B; broker kafka in A, "
                             "emulator in B)")


def test_shared_series_without_a_judged_value_are_not_comparable(tmp_path: Path) -> None:
    b = _row("kafka-python", "kafka-python", "1kb", 10.0)
    for judged in ("e2e_latency_ms_p50", "e2e_latency_ms_p99", "lost_count"):
        b[judged] = None  # publish/first-message are null in both already
    write_run(tmp_path, RUN_A, [_row("kafka-python", "kafka-python", "1kb", 10.0)])
    write_run(tmp_path, RUN_B, [b])
    c = compare_runs(tmp_path, RUN_A, RUN_B)
    assert len(c.shared) == 1 and c.judged == 0 and not c.comparable
    assert c.reason is not None and c.reason.startswith(
        f"nothing comparable: the 1 series {RUN_A} and {RUN_B} share have no drift-checked metric")
    proc = _cli("compare", RUN_A, RUN_B, "--data-dir", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_a_baseline_drift_would_not_take_is_judged_but_marked(tmp_path: Path) -> None:
    write_run(tmp_path, RUN_A, [_row("confluent-kafka", "confluent-kafka", "1kb", 5.0)],
              validated=False)
    manifest = tmp_path / "runs" / f"{RUN_A}.json"
    doc = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**doc, "status": "incomplete",
                                    "stale_outputs": ["aggregates", "report"]}))
    write_run(tmp_path, RUN_B, [_row("confluent-kafka", "confluent-kafka", "1kb", 10.0)])
    c = compare_runs(tmp_path, RUN_A, RUN_B)
    assert c.comparable and c.regressed == 2 and not c.baseline_ok
    fa, fb = c.run_a_facts, c.run_b_facts
    assert (fa.state, fa.validation, fa.stale_outputs) == ("incomplete", "failed",
                                                           ["aggregates", "report"])
    assert fa.problems == ["state incomplete", "validation failed", "stale aggregates"]
    assert fb.good and (fb.state, fb.validation, fb.stale_outputs) == ("complete", "passed", [])
    lines = format_comparison(c).splitlines()
    assert lines[:3] == [
        f"A {RUN_A}: incomplete, validation failed, stale outputs: aggregates, report",
        f"B {RUN_B}: complete, validation passed, no stale outputs",
        f"WARNING: A {RUN_A} is not a good baseline (state incomplete; validation failed; stale "
        "aggregates): drift would not take it; the verdicts below judge B against it anyway"]
    js, out = _cli_json("compare", RUN_A, RUN_B, "--data-dir", str(tmp_path))
    assert js.returncode == 1 and out["baseline_ok"] is False and out["comparable"] is True
    assert out["run_a_facts"]["validation"] == "failed" and out["run_b_facts"]["good"] is True


def test_intervals_are_used_only_with_one_row_of_the_series_per_run(tmp_path: Path) -> None:
    # as test_overlapping_intervals_are_not_a_regression, but A has the cell twice: the
    # median of two rows' bounds is no interval, so the MAD rule alone decides (+30 %)
    b = _row("kafka-python", "kafka-python", "1kb", 13.0)
    b["e2e_latency_ms_p50_ci_low"] = 9.0
    write_run(tmp_path, RUN_A, [_row("kafka-python", "kafka-python", "1kb", 10.0),
                                _row("kafka-python", "kafka-python", "1kb", 10.0)])
    write_run(tmp_path, RUN_B, [b])
    p50 = next(m for m in compare_runs(tmp_path, RUN_A, RUN_B).shared[0].metrics
               if m.metric == "e2e_latency_ms_p50")
    assert p50.verdict == REGRESSED
    assert p50.note == ("2 row(s) of this series in A, 1 in B: medians compared by the MAD rule "
                        "only, confidence intervals not used")


def test_an_emulators_series_is_labelled_in_the_table_and_json(tmp_path: Path) -> None:
    for rid, p50 in ((RUN_A, 5.0), (RUN_B, 5.2)):
        write_run(tmp_path, rid, [_row("confluent-kafka", "confluent-kafka", "1kb", p50,
                                       emulator=True)])
    c = compare_runs(tmp_path, RUN_A, RUN_B)
    assert c.comparable and [(s.emulator, s.broker_label) for s in c.shared] == [
        (True, "EMULATOR — not Kafka")]
    row = next(ln for ln in format_comparison(c).splitlines() if "e2e_latency_ms_p50" in ln)
    assert row.startswith("confluent-kafka 1kb latency (EMULATOR — not Kafka)")
    js, doc = _cli_json("compare", RUN_A, RUN_B, "--data-dir", str(tmp_path))
    assert js.returncode == 0 and doc["shared"][0]["broker_label"] == "EMULATOR — not Kafka"


def test_an_upgrade_is_compared_across_versions_when_asked(tmp_path: Path) -> None:
    """The same cell on Kafka 0.9.0.1 (A) and 4.4.0 (B): no shared series, with a hint, until
    --across-versions keys the series without the broker; then B's verdict is the upgrade's
    and the versions are named. An emulator stays apart even then."""
    b = _row("kafka-python", "kafka-python", "1kb", 20.0)
    b.update(cluster_flavor="kraft", broker_version="4.4.0")
    write_run(tmp_path, RUN_A, [_row("kafka-python", "kafka-python", "1kb", 10.0)])
    write_run(tmp_path, RUN_B, [b, _row("confluent-kafka", "confluent-kafka", "1kb", 7.0,
                                        emulator=True)])
    plain = compare_runs(tmp_path, RUN_A, RUN_B)
    assert not plain.comparable and plain.reason is not None
    assert plain.reason.endswith("(cluster_flavor kafka09 in A, kraft in B; broker_version "
                                 "0.9.0.1 in A, 4.4.0 in B): only the broker differs; compare "
                                 "an upgrade with --across-versions")
    c = compare_runs(tmp_path, RUN_A, RUN_B, across_versions=True)
    assert c.comparable and c.across_versions and c.regressed >= 1
    assert c.broker_versions == {"a": ["0.9.0.1"], "b": ["0.9.0.1", "4.4.0"]}
    (s,) = c.shared
    p50 = next(m for m in s.metrics if m.metric == "e2e_latency_ms_p50")
    assert (p50.a_value, p50.b_value, p50.verdict) == (10.0, 20.0, REGRESSED)
    assert [x["broker_label"] for x in c.only_b] == ["EMULATOR — not Kafka"]
    assert "upgrade: Kafka 0.9.0.1 (A) -> Kafka 0.9.0.1, 4.4.0 (B)" in format_comparison(c)
    proc = _cli("compare", RUN_A, RUN_B, "--across-versions", "--data-dir", str(tmp_path))
    assert proc.returncode == 1 and "REGRESSED" in proc.stdout, proc.stderr
