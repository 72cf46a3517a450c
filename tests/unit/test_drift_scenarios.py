"""Drift over run histories written to a data directory, judged run after run as the nightly
DAG does (``run_drift`` then ``plan_alerts``): a persistent step, a transient spike, a
recovery, an accepted level, workloads that must not mix, runs that must not be baselines,
the CI rule and undefined percentiles."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkalab import alerts, drift
from kafkalab.errors import ConfigError
from kafkalab.store import LabData

NIGHTLY: dict[str, Any] = {
    "scenario": "confluent-kafka", "client": "confluent-kafka", "payload": "1mb",
    "payload_encoding": "raw", "payload_bytes": 1048576, "profile": "latency",
    "workload": "nightly", "cluster_flavor": "kafka09", "broker_version": "0.9.0.1",
    "broker_count": 1, "planned_messages": 200, "broker_is_emulator": False,
}
"""The nightly cell: a raw 1 MB body."""
SEED000: dict[str, Any] = {
    **NIGHTLY, "payload_encoding": "base64", "payload_bytes": 1462780,
    "workload": "images-http-vs-kafka", "planned_messages": 100,
}
"""Seed 000's cell of the same scenario, client, payload name and profile: a base64 1.46 MB
image."""
NOISE = (1.00, 1.03, 0.98, 1.01, 0.99, 1.02, 1.00, 0.97)
"""Run-to-run noise factors (cycled)."""
RULES: dict[str, Any] = {"defaults": {"window_runs": 7, "min_baseline_runs": 3, "recovery_runs": 3},
         "metrics": {"e2e_latency_ms_p50": {}}}
P50 = "e2e_latency_ms_p50"


class History:
    """A data directory that runs are added to and judged one after the other."""

    def __init__(self, root: Path, rules: Mapping[str, Any] = RULES) -> None:
        self.root = root
        self.lab = LabData(root)
        self.config = root / "drift.yaml"
        self.config.write_text(json.dumps(rules))  # JSON is YAML
        self.runs: list[str] = []
        self.state = alerts.empty_state()
        self.announced: list[tuple[str, str]] = []
        """(run id, "drift" | "recovery") for every announcement, in order."""

    def add(self, p50_ms: float | None, *, cell: Mapping[str, Any] = NIGHTLY,
            state: str = "complete", validated: bool | None = True,
            stale: Iterable[str] = (), ci: bool = True, note: str | None = None,
            columns: Mapping[str, Any] | None = None, judge: bool = True) -> str:
        """Write one run (aggregates, manifest, validation result); judge it and plan its
        alerts unless ``judge`` is false. Returns its run id."""
        i = len(self.runs)
        rid = f"202612{i // 24 + 1:02d}T{i % 24:02d}0000Z-run{i:03d}"
        self.runs.append(rid)
        row: dict[str, Any] = {**cell, "run_date": "2026-12-01", P50: p50_ms,
                               "e2e_latency_ms_percentiles_note": note, **(columns or {})}
        if ci:
            row[P50 + "_ci_low"] = None if p50_ms is None else p50_ms * 0.95
            row[P50 + "_ci_high"] = None if p50_ms is None else p50_ms * 1.05
        d = self.lab.aggregates_dir / f"run_id={rid}"
        d.mkdir(parents=True)
        pq.write_table(pa.Table.from_pandas(pd.DataFrame([row]), preserve_index=False),
                       d / "part-00000.parquet")
        self.lab.write_manifest({
            "run_id": rid, "status": state, "stale_outputs": list(stale),
            "started_at": f"2026-12-{i // 24 + 1:02d}T{i % 24:02d}:00:00+00:00"})
        if validated is not None:
            self.lab.validation_dir.mkdir(parents=True, exist_ok=True)
            self.lab.validation_path(rid).write_text(json.dumps({"success": validated}))
        if judge:
            self.judge(rid)
        return rid

    def judge(self, rid: str) -> pd.DataFrame:
        """Judge ``rid`` as the DAG does and plan its alerts."""
        records, _ = drift.run_drift(self.root, rid, config_path=self.config)
        to_alert, recoveries, self.state = alerts.plan_alerts(records, self.state)
        self.announced += [(rid, "drift")] * len(to_alert)
        self.announced += [(rid, "recovery")] * len(recoveries)
        return records

    def record(self, rid: str, cell: Mapping[str, Any] = NIGHTLY) -> dict[str, Any]:
        """The stored record of the cell's p50 series in run ``rid``."""
        recs = drift.records_to_dicts(drift.read_drift(self.root, rid))
        key = drift.series_key(*(cell[c] for c in drift.SERIES_COLUMNS), P50)
        (rec,) = [r for r in recs if r["series_key"] == key]
        return rec


def _normal(h: History, n: int, level_ms: float = 10.0, **kw: Any) -> list[str]:
    return [h.add(level_ms * NOISE[len(h.runs) % len(NOISE)], **kw) for _ in range(n)]


# --------------------------------------------------------------------------- steps and spikes


def test_persistent_step_stays_in_alert_and_never_becomes_the_baseline(tmp_path: Path) -> None:
    h = History(tmp_path)
    _normal(h, 7)
    step = [h.add(20.0 * NOISE[i % len(NOISE)]) for i in range(12)]
    for rid in step:
        rec = h.record(rid)
        assert rec["verdict"] == "drift" and rec["is_drift"], rec
        assert rec["alert_status"] == "drifting" and rec["alert_since_run_id"] == step[0]
        assert rec["baseline_value"] == pytest.approx(10.0, rel=0.03)  # the old level only
        assert rec["change_pct"] > 80
        assert rec["rule"] == "mad+ci" and rec["ci_overlap"] is False
    # Announced once (not worse by the margin afterwards), never "recovered".
    assert h.announced == [(step[0], "drift")]
    assert set(h.state["series"]) == {h.record(step[0])["series_key"]}


def test_transient_spike_one_drift_then_one_recovery_after_k_good_runs(tmp_path: Path) -> None:
    h = History(tmp_path)
    _normal(h, 7)
    spike = h.add(20.0)
    after = _normal(h, 4)
    assert h.record(spike)["alert_status"] == "drifting"
    statuses = [(h.record(r)["verdict"], h.record(r)["alert_status"], h.record(r)["good_runs"])
                for r in after]
    assert statuses == [("ok", "alerting", 1), ("ok", "alerting", 2), ("ok", "recovered", 3),
                        ("ok", "clear", 0)]
    # The spike never entered a baseline.
    assert all(h.record(r)["baseline_value"] < 11 for r in after)
    assert h.announced == [(spike, "drift"), (after[2], "recovery")]
    assert h.state["series"] == {}


def test_recovery_needs_consecutive_good_runs_and_another_drift_restarts_the_count(
        tmp_path: Path) -> None:
    h = History(tmp_path)
    _normal(h, 7)
    h.add(20.0)
    _normal(h, 2)
    again = h.add(20.0)  # a drift before the third good run: the count starts over
    assert h.record(again)["alert_status"] == "drifting"
    assert h.record(again)["alert_since_run_id"] == h.runs[7]  # the same alert
    unvalidated = h.add(10.0, validated=None)  # ok, but not a good run: neither counts nor breaks
    assert h.record(unvalidated)["good_runs"] == 0
    assert "not a good run" in h.record(unvalidated)["note"]
    good = _normal(h, 3)
    assert [h.record(r)["alert_status"] for r in good] == ["alerting", "alerting", "recovered"]
    assert [kind for _, kind in h.announced] == ["drift", "recovery"]
    assert h.announced[-1] == (good[-1], "recovery")


def test_a_judged_run_whose_drift_is_being_recomputed_still_counts(tmp_path: Path) -> None:
    """A re-measured run is judged while its `drift` (and `report`) entries are stale: that
    is the output being recomputed, so its ok verdict counts towards the recovery."""
    h = History(tmp_path)
    _normal(h, 7)
    h.add(20.0)
    first = h.add(10.0, stale=["drift", "report"])
    assert h.record(first)["good_runs"] == 1 and h.record(first)["note"] is None
    h.lab.clear_stale(first, "drift")  # as the Airflow task does once the records are written
    stale_numbers = h.add(10.0, stale=["aggregates"])
    assert h.record(stale_numbers)["good_runs"] == 1  # neither counts nor breaks


def test_recovery_runs_is_configurable(tmp_path: Path) -> None:
    rules = {**RULES, "defaults": {**RULES["defaults"], "recovery_runs": 1}}
    h = History(tmp_path, rules)
    _normal(h, 7)
    h.add(20.0)
    (first,) = _normal(h, 1)
    assert h.record(first)["alert_status"] == "recovered"


# --------------------------------------------------------------------------- acceptance


def test_accepting_a_series_makes_its_new_level_the_baseline(tmp_path: Path) -> None:
    h = History(tmp_path)
    _normal(h, 7)
    step = [h.add(20.0 * NOISE[i]) for i in range(3)]
    key = h.record(step[0])["series_key"]
    assert key in h.state["series"]

    made = alerts.accept_drift(tmp_path, key, note="new broker disk")
    assert [(a.series_key, a.from_run_id, a.through_run_id) for a in made] == [
        (key, step[0], step[-1])]
    assert alerts.load_state(tmp_path)["series"] == {}  # no recovery will be announced
    doc = json.loads(LabData(tmp_path).drift_acceptances_path().read_text())
    assert doc["schema"] == "kafkalab.drift-acceptances/v1"
    assert doc["acceptances"][0]["note"] == "new broker disk"
    assert doc["acceptances"][0]["accepted_at"]

    nxt = h.add(20.0)
    rec = h.record(nxt)
    assert rec["verdict"] == "ok" and rec["alert_status"] == "clear"
    assert rec["baseline_from_run_id"] == step[0] and rec["baseline_runs"] == 3
    assert rec["baseline_value"] == pytest.approx(20.0, rel=0.03)
    # The old level is now a drift the other way? No: lower is an improvement, no alert.
    back = h.add(10.0)
    assert h.record(back)["verdict"] == "improved" and not h.record(back)["is_drift"]
    # The in-memory plan (the DAG's state was not reloaded) also drops it silently.
    assert [kind for _, kind in h.announced] == ["drift"]


def test_accepting_a_run_accepts_every_series_flagged_in_it(tmp_path: Path) -> None:
    other = {**NIGHTLY, "payload": "1kb", "payload_bytes": 1024}
    h = History(tmp_path)
    rids = []
    for i in range(9):
        level = 20.0 if i >= 7 else 10.0
        rid = h.add(level * NOISE[i % len(NOISE)], judge=False)  # + a second cell:
        extra = pd.DataFrame([{**other, "run_date": "2026-12-01", P50: 5.0,
                               P50 + "_ci_low": 4.75, P50 + "_ci_high": 5.25}])
        pq.write_table(pa.Table.from_pandas(extra, preserve_index=False),
                       h.lab.aggregates_dir / f"run_id={rid}" / "part-00001.parquet")
        h.judge(rid)
        rids.append(rid)
    flagged = drift.read_drift(tmp_path, rids[7])
    assert flagged is not None and int(flagged["is_drift"].sum()) == 1
    made = alerts.accept_drift(tmp_path, rids[7])
    assert [(a.from_run_id, a.through_run_id) for a in made] == [(rids[7], rids[8])]
    assert made[0].series_key == h.record(rids[7])["series_key"]
    with pytest.raises(ConfigError, match="no drift flags"):
        alerts.accept_drift(tmp_path, rids[2])


def test_accept_refuses_what_it_cannot_accept(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no drift records yet"):
        alerts.accept_drift(tmp_path, "whatever")
    h = History(tmp_path)
    rids = _normal(h, 4)
    key = h.record(rids[-1])["series_key"]
    with pytest.raises(ConfigError, match="not in alert"):
        alerts.accept_drift(tmp_path, key)
    with pytest.raises(ConfigError, match="no drift record has series key"):
        alerts.accept_drift(tmp_path, "a|b|c")
    with pytest.raises(ConfigError, match="no drift records for run 'nope'"):
        alerts.accept_drift(tmp_path, "nope")
    LabData(tmp_path).drift_acceptances_path().write_text("{broken")
    with pytest.raises(ConfigError, match="unreadable"):
        drift.run_drift(tmp_path, rids[-1], config_path=h.config)


# --------------------------------------------------------------------------- comparable runs


def test_workloads_never_share_a_series(tmp_path: Path) -> None:
    """Nightly (raw 1 MB, ~10 ms) and seed000 (base64 1.46 MB, ~16 ms) alternate: under the
    old key (scenario|client|payload|profile) every switch looked like a drift."""
    h = History(tmp_path)
    for i in range(16):
        cell, level = (NIGHTLY, 10.0) if i % 2 == 0 else (SEED000, 16.0)
        h.add(level * NOISE[i % len(NOISE)], cell=cell)
    nightly_key = h.record(h.runs[-2])["series_key"]
    seed_key = h.record(h.runs[-1], SEED000)["series_key"]
    assert nightly_key != seed_key
    assert "|raw|1048576|" in nightly_key and "|nightly|" in nightly_key
    assert "|base64|1462780|" in seed_key and "|images-http-vs-kafka|" in seed_key
    recs = [r for rid in h.runs for r in drift.records_to_dicts(drift.read_drift(tmp_path, rid))]
    assert not any(r["is_drift"] for r in recs)
    assert h.announced == []
    assert h.record(h.runs[-2])["baseline_value"] == pytest.approx(10.0, rel=0.03)
    assert h.record(h.runs[-1], SEED000)["baseline_value"] == pytest.approx(16.0, rel=0.03)


def test_runs_before_schema_v2_are_their_own_series(tmp_path: Path) -> None:
    old = {k: v for k, v in NIGHTLY.items()
           if k not in ("payload_encoding", "broker_count", "planned_messages")}
    h = History(tmp_path)
    for _ in range(5):
        h.add(5.0, cell=old, ci=False)
    new = h.add(10.0)
    rec = h.record(new)
    assert rec["verdict"] == "insufficient_history" and rec["baseline_runs"] == 0
    old_rec = drift.records_to_dicts(drift.read_drift(tmp_path, h.runs[4]))[0]
    assert old_rec["series_key"] != rec["series_key"]
    assert old_rec["series_key"].startswith("confluent-kafka|confluent-kafka|1mb||1048576|")
    assert old_rec["rule"] == "mad" and "MAD rule only" in old_rec["note"]


@pytest.mark.parametrize("bad", [
    {"state": "failed"}, {"state": "incomplete"}, {"state": "running"},
    {"validated": None}, {"validated": False}, {"stale": ["aggregates"]},
])
def test_runs_that_are_not_good_never_serve_as_baseline(tmp_path: Path,
                                                        bad: dict[str, Any]) -> None:
    h = History(tmp_path)
    _normal(h, 3)
    for _ in range(4):
        h.add(40.0, **bad)  # judged (drift), but they can never be a baseline anyway
    latest = h.add(10.0)
    rec = h.record(latest)
    assert rec["baseline_runs"] == 3 and rec["baseline_value"] == pytest.approx(10.0, rel=0.03)
    assert rec["verdict"] == "ok"


def test_stale_running_run_is_not_a_baseline(tmp_path: Path) -> None:
    h = History(tmp_path)
    _normal(h, 3)
    rid = h.add(40.0, state="running", judge=False)
    m = h.lab.manifest(rid)
    assert m is not None
    h.lab.write_manifest({**m, "owner": {"kind": "cli", "host": __import__("socket").gethostname(),
                                         "pid": 2 ** 22 + 12345}})
    assert h.lab.run_state(rid) == "stale"
    latest = h.add(10.0)
    assert h.record(latest)["baseline_runs"] == 3


# --------------------------------------------------------------------------- CI and undefined


def test_ci_overlap_vetoes_a_mad_drift_and_is_recorded(tmp_path: Path) -> None:
    h = History(tmp_path)
    for _ in range(5):
        h.add(10.0)  # zero spread: the MAD gate passes for any 20 %+ move
    rid = h.add(13.0, judge=False)
    # Wide interval on the latest run: 13 ms with CI [9, 16] overlaps the baseline [9.5, 10.5].
    path = h.lab.aggregates_dir / f"run_id={rid}" / "part-00000.parquet"
    df = pq.read_table(path).to_pandas()
    df[P50 + "_ci_low"], df[P50 + "_ci_high"] = 9.0, 16.0
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
    h.judge(rid)
    rec = h.record(rid)
    assert rec["verdict"] == "ok" and not rec["is_drift"] and rec["rule"] == "mad+ci"
    assert rec["ci_overlap"] is True and "intervals overlap" in rec["note"]
    assert (rec["latest_ci_low"], rec["latest_ci_high"]) == (9.0, 16.0)
    assert rec["baseline_ci_low"] == pytest.approx(9.5)
    assert rec["baseline_ci_high"] == pytest.approx(10.5)
    apart = h.add(13.0)  # its own CI [12.35, 13.65] is clear of [9.5, 10.5]
    assert h.record(apart)["verdict"] == "drift" and h.record(apart)["ci_overlap"] is False


def test_missing_ci_falls_back_to_the_mad_rule(tmp_path: Path) -> None:
    h = History(tmp_path)
    for _ in range(5):
        h.add(10.0)
    rid = h.add(20.0, judge=False)
    path = h.lab.aggregates_dir / f"run_id={rid}" / "part-00000.parquet"
    df = pq.read_table(path).to_pandas()
    df[P50 + "_ci_low"] = None  # e.g. the low rank fell on a censored value
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
    h.judge(rid)
    rec = h.record(rid)
    assert rec["verdict"] == "drift" and rec["rule"] == "mad" and rec["ci_overlap"] is None
    assert "MAD rule only" in rec["note"]


def test_undefined_percentile_gets_a_record_not_an_alert(tmp_path: Path) -> None:
    rules: dict[str, Any] = {"metrics": {P50: {}, "e2e_latency_ms_p99": {}}}
    h = History(tmp_path, rules)
    _normal(h, 4)
    rid = h.add(10.0, note="p99: n<100; p999: n<1000",
                columns={"e2e_latency_ms_p99": None})
    recs = {r["metric"]: r for r in drift.records_to_dicts(drift.read_drift(tmp_path, rid))}
    p99 = recs["e2e_latency_ms_p99"]
    assert p99["verdict"] == "undefined" and p99["note"] == "p99: n<100"
    assert not p99["is_drift"] and p99["latest_value"] is None
    assert recs[P50]["verdict"] == "ok"
    none = h.add(None)  # p50 itself undefined (every message lost: censored)
    assert h.record(none)["verdict"] == "undefined"
    assert h.announced == []


# --------------------------------------------------------------------------- the CLI


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from kafkalab.cli import main

    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_check_and_accept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    h = History(tmp_path)
    _normal(h, 7)
    step = [h.add(20.0 * NOISE[i], judge=False) for i in range(2)]
    d = str(tmp_path)
    code, out, _ = _cli(capsys, "drift", "--data-dir", d, "--config", str(h.config),
                        "--run-id", step[0])
    assert code == 0 and out.startswith("DRIFT confluent-kafka|") and "CI [" in out
    assert "1 flag(s)" in out
    # `drift check` is the same action; options before `check` are kept.
    code, out, _ = _cli(capsys, "drift", "--data-dir", d, "--config", str(h.config), "check")
    assert code == 0 and "DRIFT" in out and str(h.lab.drift_path(step[1])) in out
    key = h.record(step[1])["series_key"]
    code, out, _ = _cli(capsys, "drift", "accept", key, "--data-dir", d, "--note", "new disks")
    assert code == 0 and f"accepted {key}: baseline from run {step[0]}" in out
    assert "acceptances.json" in out


@pytest.mark.parametrize(("argv", "needle"), [
    (["drift", "accept", "a|b"], "no drift record has series key 'a|b'"),
    (["drift", "accept", "no-such-run"], "no drift records for run 'no-such-run'"),
    (["drift", "--run-id", "no-such-run"], "run 'no-such-run' has no aggregates"),
    (["drift", "check", "--run-id", "no-such-run"], "run 'no-such-run' has no aggregates"),
    (["drift", "accept"], "the following arguments are required: SERIES|RUN"),
    (["drift", "reject"], "invalid choice: 'reject'"),
])
def test_cli_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   argv: list[str], needle: str) -> None:
    h = History(tmp_path)
    _normal(h, 2)
    code, _, err = _cli(capsys, *argv, *(["--data-dir", str(tmp_path)]
                                         if argv[-1] not in ("accept", "reject") else []))
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], err
