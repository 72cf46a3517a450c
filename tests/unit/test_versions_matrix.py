"""The version matrix's plan and verdict without a broker: which versions run (the flavors
say), in which order (A B, B A, ...), the bootstrap interval of a change, and the verdict on
aggregates written as each version's load run would have them (the real matrix, two Kafka
releases on fresh clusters through Airflow and Spark:
tests/e2e/test_airflow_dags_test.py::test_version_matrix_end_to_end; 4.4.0 against 0.9.0.1
with its maximum-rate search and fault trials: tests/integration/test_version_matrix.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import ValidationError

from kafkalab.cluster.flavors import flavor_for_version
from kafkalab.errors import ConfigError
from kafkalab.kinds import LOAD
from kafkalab.load.spec import LoadCellSpec
from kafkalab.store import LabData, atomic_write_json, read_json
from kafkalab.versions.spec import MatrixSpec, round_order
from kafkalab.versions.verdict import bootstrap_change_ci, format_verdict, matrix_verdict

CELL = LoadCellSpec(rate_msgs_per_s=500, duration_s=6, warmup_s=1)


def test_versions_run_on_the_flavor_that_runs_them_and_others_are_refused() -> None:
    assert flavor_for_version("4.4.0").name == "kraft"
    assert flavor_for_version("4.1.2").name == "kraft"
    assert flavor_for_version("0.9.0.1").version == "0.9.0.1"
    with pytest.raises(ConfigError, match=r"no embedded broker runs Kafka 3\.9\.0"):
        MatrixSpec(versions=["4.4.0", "3.9.0"], cell=CELL)
    with pytest.raises(ValidationError, match="repeats a version"):
        MatrixSpec(versions=["4.4.0", "4.4.0"], cell=CELL)
    with pytest.raises(ValidationError, match="at least 2"):
        MatrixSpec(versions=["4.4.0"], cell=CELL)
    with pytest.raises(ValidationError, match="trial is the round's"):
        MatrixSpec(versions=["4.1.2", "4.4.0"], cell=CELL.model_copy(update={"trial": 2}))


def test_rounds_alternate_the_order_and_number_the_cells() -> None:
    assert round_order(["a", "b"], 3) == [(1, "a"), (1, "b"), (2, "b"), (2, "a"), (3, "a"),
                                          (3, "b")]
    assert round_order(["a", "b", "c"], 2) == [(1, "a"), (1, "b"), (1, "c"), (2, "c"),
                                               (2, "b"), (2, "a")]
    spec = MatrixSpec(versions=["4.1.2", "4.4.0"], rounds=3, cell=CELL)
    assert [c.trial for c in spec.cells()] == [1, 2, 3]
    assert len({c.cell_id("1") for c in spec.cells()}) == 3


def test_the_change_interval_is_a_seeded_bootstrap_and_needs_two_rounds() -> None:
    assert bootstrap_change_ci([10.0, 10.0, 10.0], [12.0, 12.0, 12.0]) == (20.0, 20.0)
    assert bootstrap_change_ci([10.0], [12.0, 13.0]) is None
    lo, hi = bootstrap_change_ci([10.0, 11.0, 9.0], [15.0, 16.0, 14.0])  # type: ignore[misc]
    assert 20 < lo <= 50 <= hi < 80
    assert bootstrap_change_ci([10.0, 11.0, 9.0], [15.0, 16.0, 14.0]) == (lo, hi)


def _cells(run_id: str, version: str, p99s: list[float]) -> pd.DataFrame:
    rows = []
    for k, p99 in enumerate(p99s, start=1):
        rows.append({
            "run_id": run_id, "cell_id": f"c.t{k}", "status": "complete",
            "client": "confluent-kafka", "payload": "1kb", "encoding": "raw", "profile": "default",
            "acks": "1", "consumers": 1, "rate_msgs_per_s": 500.0, "partitions": 1,
            "consumer_mode": "assign", "duration_s": 6.0, "payload_bytes": 1056,
            "cluster_flavor": "kraft", "broker_version": version, "broker_count": 1,
            "broker_is_emulator": False, "e2e_p50_ms": 1.0, "e2e_p99_ms": p99,
            "service_e2e_p99_ms": p99, "publish_delay_p99_ms": 0.2,
            "achieved_rate_msgs_per_s": 500.0, "rx_rate_msgs_per_s_avg": 500.0, "loss_pct": 0.0})
    return pd.DataFrame(rows)


def _matrix(tmp_path: Path, p99s: dict[str, list[float]]) -> str:
    lab = LabData(tmp_path)
    runs = {v: f"m1-kafka-{v}" for v in p99s}
    for v, run in runs.items():
        d = lab.run_aggregates_dir(run, LOAD)
        d.mkdir(parents=True)
        _cells(run, v, p99s[v]).to_parquet(d / "load_cells.parquet")
    lab.matrices_dir.mkdir(parents=True)
    atomic_write_json(lab.matrix_path("m1"), {
        "schema_version": 1, "matrix_id": "m1", "status": "complete", "runs": runs,
        "baseline": next(iter(p99s)),
        "spec": {"versions": list(p99s), "rounds": len(next(iter(p99s.values())))}, "steps": []})
    return "m1"


def _metric(v: Any, metric: str, version: str) -> Any:
    (s,) = v.series
    (m,) = [m for m in s.metrics if m.metric == metric and m.version == version]
    return m


def test_a_version_whose_p99_rose_beyond_the_rule_regressed(tmp_path: Path) -> None:
    mid = _matrix(tmp_path, {"4.1.2": [10.0, 11.0, 10.5], "4.4.0": [20.0, 21.0, 19.0],
                             "0.9.0.1": [10.2, 10.4, 10.9]})
    v = matrix_verdict(tmp_path, mid)
    assert v.baseline == "4.1.2" and v.rounds == {"4.1.2": 3, "4.4.0": 3, "0.9.0.1": 3}
    up = _metric(v, "e2e_p99_ms", "4.4.0")
    assert (up.b_value, up.v_value) == (10.5, 20.0) and up.b_rounds == [10.0, 11.0, 10.5]
    assert up.change_pct == pytest.approx(90.476, abs=0.01)
    assert up.verdict == "regressed" and up.significant is True
    assert up.change_ci_low_pct is not None and up.change_ci_low_pct > 0
    same = _metric(v, "e2e_p99_ms", "0.9.0.1")
    assert same.verdict == "ok" and same.significant is False
    assert _metric(v, "e2e_p50_ms", "4.4.0").verdict == "not judged"
    assert v.regressed == 2  # e2e p99 and service e2e p99 of 4.4.0
    text = format_verdict(v)
    assert "against Kafka 4.1.2" in text and "regressed (significant)" in text


def test_a_series_one_version_lacks_is_named_and_a_run_without_aggregates_refused(
        tmp_path: Path) -> None:
    mid = _matrix(tmp_path, {"4.1.2": [10.0], "4.4.0": [10.0]})
    lab = LabData(tmp_path)
    extra = _cells("m1-kafka-4.4.0", "4.4.0", [10.0]).assign(consumers=3, cell_id="c3")
    path = lab.run_aggregates_dir("m1-kafka-4.4.0", LOAD) / "load_cells.parquet"
    pd.concat([pd.read_parquet(path), extra]).to_parquet(path)
    v = matrix_verdict(tmp_path, mid)
    assert [m["versions"] for m in v.missing] == [["4.1.2"]]
    one_round = [m for s in v.series for m in s.metrics if m.metric == "e2e_p99_ms"]
    assert [m.verdict for m in one_round] == ["insufficient_history"]
    assert "1 round(s) of Kafka 4.1.2 < min_baseline_runs 3" in str(one_round[0].note)
    assert v.judged == 0 and v.regressed == 0
    assert "not measured on 4.1.2" in format_verdict(v)
    (path.parent / "load_cells.parquet").unlink()
    with pytest.raises(ConfigError, match=r"kafkalab aggregate --run-id m1-kafka-4\.4\.0"):
        matrix_verdict(tmp_path, mid)


def test_a_cell_the_legacy_broker_cannot_take_is_refused_before_anything_starts(
        tmp_path: Path) -> None:
    from kafkalab.versions.matrix import MatrixRequest, check_versions, run_matrix

    profile = tmp_path / "one-node-txn.yaml"
    profile.write_text(
        "name: one-node-txn\ngoal: durability\ndescription: x\n"
        "producer: {batch_size_bytes: 16384, linger_ms: 0, compression: none, acks: all,"
        " retries: 1, max_in_flight: 1, buffer_memory_bytes: 33554432}\n"
        "consumer: {fetch_min_bytes: 1, fetch_max_wait_ms: 100, enable_auto_commit: false,"
        " session_timeout_ms: 10000}\n"
        "topic: {replication_factor: 1, min_insync_replicas: 1,"
        " unclean_leader_election_enable: false, max_message_bytes: 16777216}\n")
    cell = CELL.model_copy(update={"profile": str(profile), "txn_msgs": 10})
    check_versions(MatrixSpec(versions=["4.1.2", "4.4.0"], cell=cell))
    spec = MatrixSpec(versions=["4.4.0", "0.9.0.1"], cell=cell)
    with pytest.raises(ConfigError, match=r"Kafka 0\.9\.0\.1: .*enable\.idempotence.*0\.11"):
        run_matrix(MatrixRequest(spec=spec, data_dir=tmp_path / "data"))
    assert not (tmp_path / "data").exists()  # nothing started, nothing written


def _probes(run_id: str, version: str, firsts: list[float | None], per_round: int = 1
            ) -> pd.DataFrame:
    """``startup_probes`` of one version: a warm classic subscribe case, one member a trial;
    ``None`` a probe that timed out."""
    return pd.DataFrame([{
        "run_id": run_id, "probe": k, "trial": k, "member": 0,
        "case_key": "warm/delay=0/confluent-kafka/subscribe/classic/m1",
        "client": "confluent-kafka", "join": "subscribe", "group_protocol": "classic",
        "members": 1, "cluster_state": "warm", "initial_rebalance_delay_ms": 0,
        "kafka_version": version, "broker_flavor": "kraft",
        "status": "ok" if first is not None else "timeout", "first_record_ms": first,
        "client_start_ms": None if first is None else 5.0,
        "join_ms": None if first is None else first - 8.0, "fetch_ms": 3.0}
        for k, first in enumerate(firsts)])


def _with_startup(tmp_path: Path, mid: str, firsts: dict[str, list[float | None]]) -> None:
    """Give matrix ``mid`` start-up runs (two trials a round) with ``startup_probes``."""
    from kafkalab.kinds import STARTUP

    lab = LabData(tmp_path)
    doc = lab.matrix_path(mid)
    matrix = read_json(doc)
    matrix["startup_runs"] = {v: f"m1-startup-{v}" for v in firsts}
    matrix["spec"]["startup"] = {"trials": 2}
    matrix["steps"] = [{"round": 1, "version": v, "run_id": f"m1-kafka-{v}",
                        "status": "complete", "startup_run_id": f"m1-startup-{v}",
                        "startup_status": "complete"} for v in firsts]
    atomic_write_json(doc, matrix)
    for v, values in firsts.items():
        d = lab.run_aggregates_dir(f"m1-startup-{v}", STARTUP)
        d.mkdir(parents=True)
        _probes(f"m1-startup-{v}", v, values).to_parquet(d / "startup_probes.parquet")


FIRSTS: dict[str, list[float | None]] = {
    "4.1.2": [100.0, 110.0, 104.0, 96.0, 102.0, 98.0],
    "4.4.0": [150.0, 160.0, 154.0, None, 148.0, 152.0]}


def test_first_message_rounds_are_judged_by_the_first_message_rule(tmp_path: Path) -> None:
    """Each round of a start-up case is the median of its trials' members; a timed-out probe
    is counted, never a value; first_record_ms is judged by first_message_subscribe_ms's rule
    (20 %), its parts shown."""
    mid = _matrix(tmp_path, {"4.1.2": [10.0, 10.0, 10.0], "4.4.0": [10.0, 10.0, 10.0]})
    _with_startup(tmp_path, mid, FIRSTS)
    v = matrix_verdict(tmp_path, mid)
    (case,) = [s for s in v.series if s.series.startswith("startup|")]
    assert case.label == "first msg warm subscribe classic m1 delay 0"
    first = next(m for m in case.metrics if m.metric == "first_record_ms")
    assert first.b_rounds == [105.0, 100.0, 100.0]  # trials 0-1, 2-3, 4-5
    assert first.v_rounds == [155.0, 154.0, 150.0]  # round 2: the timed-out probe left out
    assert first.verdict == "regressed" and first.significant is True
    assert case.failed_probes == {"4.1.2": 0, "4.4.0": 1}
    assert {m.metric: m.verdict for m in case.metrics}["join_ms"] == "not judged"
    assert v.startup_runs == {"4.1.2": "m1-startup-4.1.2", "4.4.0": "m1-startup-4.4.0"}
    assert ("failed probes (timed out or failed: in no median): 4.4.0 1"
            in format_verdict(v))
    from kafkalab.kinds import STARTUP

    (LabData(tmp_path).run_aggregates_dir("m1-startup-4.4.0", STARTUP)
     / "startup_probes.parquet").unlink()
    with pytest.raises(ConfigError, match=r"kafkalab aggregate --run-id m1-startup-4\.4\.0"):
        matrix_verdict(tmp_path, mid)


def test_first_message_settings_are_checked_per_version_before_anything_starts(
        tmp_path: Path) -> None:
    from kafkalab.versions.matrix import (
        MatrixRequest,
        check_versions,
        measured_runs,
        run_matrix,
    )
    from kafkalab.versions.spec import MatrixStartup

    spec = MatrixSpec(versions=["4.4.0", "0.9.0.1"], cell=CELL)
    assert spec.startup_spec().trials == 3 and spec.startup_spec().clients == ("confluent-kafka",)
    check_versions(spec)  # the consumer protocol is listed as unsupported on 0.9, not refused
    late = spec.model_copy(update={"startup": MatrixStartup(delays_ms=[0, 3000])})
    with pytest.raises(ConfigError, match=r"Kafka 0\.9\.0\.1: startup: .*group\.initial"):
        run_matrix(MatrixRequest(spec=late, data_dir=tmp_path / "data"))
    assert not (tmp_path / "data").exists()
    with pytest.raises(ConfigError, match="startup: protocols"):
        check_versions(spec.model_copy(update={"startup": MatrixStartup(protocols=["x"])}))
    with pytest.raises(ValidationError, match=r"at most 100 start-up trials"):
        MatrixSpec(versions=["4.1.2", "4.4.0"], rounds=20, cell=CELL,
                   startup=MatrixStartup(trials=6))
    assert MatrixSpec(versions=["4.1.2", "4.4.0"], cell=CELL,
                      startup=MatrixStartup(trials=0)).startup_spec() is None
    doc = {"runs": {"a": "r-a", "b": "r-b"}, "startup_runs": {"a": "s-a", "b": "s-b"},
           "steps": [{"run_id": "r-a", "status": "complete", "startup_run_id": "s-a",
                      "startup_status": "failed"},
                     {"run_id": "r-b", "status": "failed", "startup_run_id": "s-b",
                      "startup_status": "complete"}]}
    assert [(r, k.name) for r, k in measured_runs(doc)] == [("r-a", "load"), ("s-b", "startup")]


def test_the_maximum_rate_is_judged_per_round_from_the_matrix_steps(tmp_path: Path) -> None:
    """Each round's searched maximum (the step's) against the baseline's, by the achieved-rate
    rule with at least 10 % (the search's own resolution); a search without a passing rate is
    counted, in no median."""
    from kafkalab.versions.spec import MatrixMaxRate

    mid = _matrix(tmp_path, {"4.1.2": [10.0, 10.0, 10.0], "4.4.0": [10.0, 10.0, 10.0]})
    lab = LabData(tmp_path)
    doc = read_json(lab.matrix_path(mid))
    doc["spec"]["cell"] = CELL.model_dump(mode="json")
    rates = {"4.1.2": [20_000.0, 21_000.0, 19_500.0], "4.4.0": [16_000.0, None, 15_000.0]}
    doc["steps"] = [{"round": k, "version": v, "run_id": f"m1-kafka-{v}", "status": "complete",
                     "max_rate_status": "complete", "max_rate_msgs_per_s": r}
                    for v, rs in rates.items() for k, r in enumerate(rs, start=1)]
    atomic_write_json(lab.matrix_path(mid), doc)
    v = matrix_verdict(tmp_path, mid)
    (s,) = [s for s in v.series if s.series.startswith("maxrate|")]
    assert s.label == "max rate confluent-kafka 1kb default acks profile c1"
    (m,) = s.metrics
    assert m.metric == "max_rate_msgs_per_s" and m.b_value == 20_000.0
    assert m.v_rounds == [16_000.0, 15_000.0] and m.v_value == 15_500.0
    assert m.verdict == "regressed" and m.change_pct == pytest.approx(-22.5)
    assert s.failed_probes == {"4.1.2": 0, "4.4.0": 1}
    assert "searches without a passing rate (in no median): 4.4.0 1" in format_verdict(v)
    with pytest.raises(ValidationError, match="must exceed the cell's warm-up"):
        MatrixSpec(versions=["4.1.2", "4.4.0"], cell=CELL.model_copy(update={"warmup_s": 2.0}),
                   max_rate=MatrixMaxRate(enabled=True, step_duration_s=2.0))


def test_fault_rounds_sum_losses_and_take_median_times_per_version(tmp_path: Path) -> None:
    """Each version's fault run: per round (two trials a round) the acked records lost summed
    and the unavailability's median over the complete trials; a loss where the baseline lost
    nothing regresses (lost_count's zero-baseline rule); a trial that did not complete is
    counted, in no figure; settings the fault engine refuses are refused with the spec."""
    from kafkalab.kinds import FAULTS
    from kafkalab.versions.spec import MatrixFaults

    mid = _matrix(tmp_path, {"4.1.2": [10.0, 10.0, 10.0], "4.4.0": [10.0, 10.0, 10.0]})
    lab = LabData(tmp_path)
    doc = read_json(lab.matrix_path(mid))
    doc["faults_runs"] = {v: f"m1-faults-{v}" for v in ("4.1.2", "4.4.0")}
    doc["spec"]["faults"] = {"trials": 2}
    doc["steps"] = [{"round": k, "version": v, "run_id": f"m1-kafka-{v}", "status": "complete",
                     "faults_run_id": f"m1-faults-{v}", "faults_status": "complete"}
                    for v in ("4.1.2", "4.4.0") for k in (1, 2, 3)]
    atomic_write_json(lab.matrix_path(mid), doc)
    lost = {"4.1.2": [0, 0, 0, 0, 0, 0], "4.4.0": [0, 3, 0, 0, 1, 0]}
    down = {"4.1.2": [900.0, 1100.0, 1000.0, 1000.0, 950.0, 1050.0],
            "4.4.0": [1000.0, 1000.0, 1000.0, None, 1000.0, 1000.0]}
    for v in lost:
        d = lab.run_aggregates_dir(f"m1-faults-{v}", FAULTS)
        d.mkdir(parents=True)
        pd.DataFrame([{"trial": k + 1, "fault": "sigkill-leader", "profile": "durability",
                       "client": "confluent-kafka", "broker_version": v,
                       "status": "complete" if down[v][k] is not None else "failed",
                       "acked_lost": lost[v][k], "duplicates": 0, "reordered": 0,
                       "unavailable_ms": down[v][k], "leader_elected_ms": 200.0}
                      for k in range(6)]).to_parquet(d / "fault_trials.parquet")
    v = matrix_verdict(tmp_path, mid)
    (s,) = [s for s in v.series if s.series.startswith("faults|")]
    assert s.label == "fault sigkill-leader durability confluent-kafka"
    by = {m.metric: m for m in s.metrics}
    assert by["acked_lost"].b_rounds == [0.0, 0.0, 0.0]
    assert by["acked_lost"].v_rounds == [3.0, 0.0, 1.0]  # round 2's failed trial in no sum
    assert by["acked_lost"].verdict == "regressed"
    assert by["unavailable_ms"].b_rounds == [1000.0, 1000.0, 1000.0]
    assert by["unavailable_ms"].verdict == "ok" and by["duplicates"].verdict == "not judged"
    assert s.failed_probes == {"4.1.2": 0, "4.4.0": 1} and v.faults_runs == doc["faults_runs"]
    assert "trials that did not complete (in no figure): 4.4.0 1" in format_verdict(v)
    from kafkalab.report.versions_section import matrices_section
    from kafkalab.versions.verdict import write_verdict

    write_verdict(tmp_path, v)
    html = matrices_section(lab, lab.reports_dir)
    assert 'href="m1-faults-4.4.0/index.html"' in html and 'data-metric="acked_lost"' in html
    with pytest.raises(ValidationError, match="faults: fault: Input should be"):
        MatrixSpec(versions=["4.1.2", "4.4.0"], cell=CELL,
                   faults=MatrixFaults(trials=1, fault="meteor"))
    spec = MatrixSpec(versions=["4.1.2", "4.4.0"], rounds=2, cell=CELL,
                      faults=MatrixFaults(trials=2))
    assert [t.trial for t in spec.all_fault_trials()] == [1, 2, 3, 4]
    assert [t.trial for t in spec.fault_trials(2)] == [3, 4]


def test_fault_trials_a_version_cannot_take_are_refused_before_anything_starts() -> None:
    from kafkalab.versions.matrix import check_versions
    from kafkalab.versions.spec import MatrixFaults

    legacy = MatrixSpec(versions=["4.4.0", "0.9.0.1"], cell=CELL, faults=MatrixFaults(trials=1))
    with pytest.raises(ConfigError, match=r"Kafka 0\.9\.0\.1: .*enable\.idempotence"):
        check_versions(legacy)  # the durability profile's idempotent producer
    check_versions(legacy.model_copy(update={
        "faults": MatrixFaults(trials=1, profile="durability-legacy")}))
    cut = MatrixFaults(trials=1, profile="durability-legacy", fault="partition-leader")
    with pytest.raises(ConfigError, match=r"Kafka 0\.9\.0\.1: fault partition-leader cuts links, "
                       r"which the kafka09 flavor cannot degrade"):
        check_versions(legacy.model_copy(update={"faults": cut}))
    check_versions(legacy.model_copy(update={"versions": ["4.4.0"], "faults": cut}))


def test_a_maximum_rate_the_client_budget_bounded_is_not_judged(tmp_path: Path) -> None:
    """A search that never failed below the client budget's cap measured the load generator,
    not the release: shown with a note, never judged (measured here: every search of a 1 KB
    cell reached the 60,000 msg/s cap on every release)."""
    mid = _matrix(tmp_path, {"4.1.2": [10.0, 10.0, 10.0], "4.4.0": [10.0, 10.0, 10.0]})
    lab = LabData(tmp_path)
    doc = read_json(lab.matrix_path(mid))
    doc["spec"]["cell"] = CELL.model_dump(mode="json")
    doc["steps"] = [{"round": k, "version": v, "status": "complete",
                     "max_rate_status": "complete", "max_rate_msgs_per_s": 56_100.0 - 9_000 * (v == "4.4.0"),
                     "max_rate_capped": v == "4.1.2"}
                    for v in ("4.1.2", "4.4.0") for k in (1, 2, 3)]
    atomic_write_json(lab.matrix_path(mid), doc)
    v = matrix_verdict(tmp_path, mid)
    (m,) = next(s for s in v.series if s.series.startswith("maxrate|")).metrics
    assert m.verdict == "not judged" and m.change_pct is not None
    assert "client budget's cap in 3 round(s) of the baseline and 0 of 4.4.0" in str(m.note)
    assert v.regressed == 0
