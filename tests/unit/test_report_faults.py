"""The report's page of a fault run ("Durability and availability") on fault aggregates
written here as ``spark_jobs/aggregate_faults.py`` writes them: Spark-style folders
``aggregates/faults/run_id=<id>/<table>.parquet/part-00000-….snappy.parquet`` with the
contract's columns."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kafkalab.cluster.descriptor import EMULATOR_LABEL
from kafkalab.report.build import build_report
from kafkalab.report.durability_section import timeline_marks
from kafkalab.report.fault_data import (
    consumer_groups,
    errors_text,
    is_durability_loss,
    missing_reason,
    representative_trials,
)
from kafkalab.store import LabData, atomic_write_json

FAULT_RUN = "20261201T020000Z-faults"
RATE = 500.0
DURATION_S = 20.0
FAULT_AT_S = 6.0
DOWN_S = 8.0

TRIAL_COLUMNS = (
    "run_id", "run_date", "trial_id", "profile", "fault", "acks", "trial", "status", "error",
    "rate_msgs_per_s", "duration_s", "fault_at_s", "down_s", "target_broker", "target_role",
    "broker_version", "broker_is_emulator", "intended_msgs", "acked_msgs", "failed_msgs",
    "indeterminate_msgs", "unsent_msgs", "read_back_msgs", "acked_lost",
    "acked_lost_in_broker_logs", "acked_lost_absent_from_logs", "failed_but_present",
    "indeterminate_present", "unseen", "duplicates", "reordered", "unavailable_ms",
    "consumer_gap_ms", "leader_elected_ms", "isr_full_ms", "lag_recovered_ms", "recovered",
    "acks_after_fault", "errors_by_type", "fault_elapsed_s", "heal_elapsed_s",
    "leader_elected_elapsed_s", "isr_full_elapsed_s", "verdict",
)
CELL_COLUMNS = (
    "profile", "fault", "acks", "trials", "trials_complete", "trials_with_loss",
    "acked_lost_sum", "acked_lost_median", "acked_lost_max", "duplicates_median",
    "duplicates_max", "unavailable_ms_median", "unavailable_ms_max", "leader_elected_ms_median",
    "leader_elected_ms_max", "isr_full_ms_median", "isr_full_ms_max", "consumer_gap_ms_median",
    "consumer_gap_ms_max",
)
TIMELINE_COLUMNS = ("run_id", "trial_id", "bin_start_s", "acks_per_s", "rx_per_s", "sent_per_s")

# (profile, fault, acks, trials, acked_lost of each trial)
PLAN: tuple[tuple[str, str, str, int, tuple[int, ...]], ...] = (
    ("durability", "none", "all", 2, (0, 0)),
    ("durability", "sigkill-leader", "all", 2, (0, 37)),  # the finding: trial 2
    ("durability", "kill-follower", "all", 1, (0,)),
    ("availability", "sigkill-leader", "1", 2, (120, 95)),  # loss permitted there
)


def trial_id(profile: str, fault: str, acks: str, n: int) -> str:
    return f"{profile}-{fault}-acks-{acks}-t{n}"


def _trial(run_id: str, profile: str, fault: str, acks: str, n: int, lost: int, *,
           emulator: bool = False, status: str = "complete") -> dict[str, Any]:
    intended = int(RATE * DURATION_S)
    dupes = 3 if fault != "none" else 0
    no_fault = fault == "none"
    leader_moves = fault in ("sigkill-leader", "sigterm-leader", "sigstop-leader")
    unavailable = 120.0 if no_fault else 380.0 + 10 * n
    leader_ms = 300.0 + 10 * n if leader_moves else None
    isr_ms = None if no_fault else DOWN_S * 1000 + 1200.0
    failed = 0 if no_fault else 40
    indet = 0 if no_fault else 6
    acked = intended - failed - indet
    row: dict[str, Any] = {
        "run_id": run_id, "run_date": "2026-12-01",
        "trial_id": trial_id(profile, fault, acks, n), "profile": profile, "fault": fault,
        "acks": acks, "trial": n, "status": status,
        "error": "broker 1 did not come back" if status == "failed" else None,
        "rate_msgs_per_s": RATE, "duration_s": DURATION_S, "fault_at_s": FAULT_AT_S,
        "down_s": None if no_fault else DOWN_S,
        "target_broker": None if no_fault else 1,
        "target_role": "none" if no_fault else ("follower" if fault == "kill-follower"
                                                 else "leader"),
        "broker_version": "0.2.3" if emulator else "0.9.0.1", "broker_is_emulator": emulator,
        "intended_msgs": intended, "acked_msgs": acked, "failed_msgs": failed,
        "indeterminate_msgs": indet, "unsent_msgs": 0,
        "read_back_msgs": acked - lost + 4 + dupes,
        "acked_lost": lost,
        "acked_lost_in_broker_logs": 7 if lost else 0,
        "acked_lost_absent_from_logs": lost - 7 if lost else 0,
        "failed_but_present": 4 if not no_fault else 0, "indeterminate_present": 0,
        "unseen": 42 if not no_fault else 0, "duplicates": dupes, "reordered": 0,
        "unavailable_ms": unavailable, "consumer_gap_ms": unavailable + 15.0,
        "leader_elected_ms": leader_ms, "isr_full_ms": isr_ms,
        "lag_recovered_ms": None if no_fault else 900.0,
        "recovered": True, "acks_after_fault": acked // 2,
        "errors_by_type": "{}" if no_fault else json.dumps(
            {"NOT_LEADER_FOR_PARTITION": 30, "REQUEST_TIMED_OUT": 10, "_MSG_TIMED_OUT": 6}),
        "fault_elapsed_s": None if no_fault else FAULT_AT_S + 0.01,
        "heal_elapsed_s": None if no_fault else FAULT_AT_S + DOWN_S,
        "leader_elected_elapsed_s": None if leader_ms is None else FAULT_AT_S + leader_ms / 1000,
        "isr_full_elapsed_s": None if isr_ms is None else FAULT_AT_S + isr_ms / 1000,
        "verdict": "loss" if lost else "ok",
    }
    assert tuple(row) == TRIAL_COLUMNS
    return row


def _cells(trials: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (profile, fault, acks), g in trials.groupby(["profile", "fault", "acks"], sort=False):
        row: dict[str, Any] = {
            "profile": profile, "fault": fault, "acks": acks, "trials": len(g),
            "trials_complete": int((g["status"] == "complete").sum()),
            "trials_with_loss": int((g["acked_lost"] > 0).sum()),
            "acked_lost_sum": int(g["acked_lost"].sum()),
            "acked_lost_median": float(g["acked_lost"].median()),
            "acked_lost_max": int(g["acked_lost"].max()),
        }
        for col in ("duplicates", "unavailable_ms", "leader_elected_ms", "isr_full_ms",
                    "consumer_gap_ms"):
            values = pd.to_numeric(g[col], errors="coerce")
            row[f"{col}_median"] = None if values.isna().all() else float(values.median())
            row[f"{col}_max"] = None if values.isna().all() else float(values.max())
        assert tuple(row) == CELL_COLUMNS
        out.append(row)
    return pd.DataFrame(out)


def _timeline(t: dict[str, Any]) -> list[dict[str, Any]]:
    """100 ms bins: acks stop from the fault until the new leader (or the heal), rx follows."""
    out = []
    fault = t["fault_elapsed_s"]
    back = t["leader_elected_elapsed_s"] or t["heal_elapsed_s"]
    for i in range(int(DURATION_S * 10) + 5):
        start = i / 10
        down = fault is not None and back is not None and fault <= start < back
        sent = RATE if start < DURATION_S else 0.0
        acks = 0.0 if down else sent
        out.append({"run_id": t["run_id"], "trial_id": t["trial_id"], "bin_start_s": start,
                    "acks_per_s": acks, "rx_per_s": 0.0 if down else acks * 0.98,
                    "sent_per_s": sent})
    return out


def _write_spark_table(directory: Path, name: str, df: pd.DataFrame) -> None:
    """A folder of one part file, as Spark writes it (with _SUCCESS and a .crc)."""
    d = directory / f"{name}.parquet"
    d.mkdir(parents=True, exist_ok=True)
    part = "part-00000-5b1c0d2e-0000-4000-8000-000000000000-c000.snappy.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), d / part)
    (d / "_SUCCESS").write_text("")
    (d / f".{part}.crc").write_bytes(b"\0")


def write_fault_run(data_dir: Path, run_id: str = FAULT_RUN, *,
                    plan: tuple[tuple[str, str, str, int, tuple[int, ...]], ...] = PLAN,
                    emulator: bool = False, tables: tuple[str, ...] = (
                        "fault_trials", "fault_cells", "fault_timeline"),
                    validated: bool | None = None, failed_trial: bool = False,
                    started_at: str = "2026-12-01T02:00:00+00:00") -> pd.DataFrame:
    """A fault run: manifest (kind faults), the tables named in ``tables`` (Spark-style
    folders), and its validation result when ``validated`` is not None. Returns the trials."""
    lab = LabData(data_dir)
    rows = [_trial(run_id, p, f, a, n + 1, lost[n], emulator=emulator)
            for p, f, a, k, lost in plan for n in range(k)]
    if failed_trial:
        rows.append(_trial(run_id, "default", "sigterm-leader", "1", 1, 0, emulator=emulator,
                           status="failed") | {
            "unavailable_ms": None, "consumer_gap_ms": None, "leader_elected_ms": None,
            "isr_full_ms": None, "lag_recovered_ms": None, "verdict": "failed",
            "leader_elected_elapsed_s": None, "isr_full_elapsed_s": None})
    trials = pd.DataFrame(rows, columns=list(TRIAL_COLUMNS))
    out = lab.aggregates_dir / "faults" / f"run_id={run_id}"
    frames = {"fault_trials": trials, "fault_cells": _cells(trials),
              "fault_timeline": pd.DataFrame([b for r in rows for b in _timeline(r)],
                                             columns=list(TIMELINE_COLUMNS))}
    for name in tables:
        _write_spark_table(out, name, frames[name])
    lab.write_manifest({
        "schema_version": 2, "run_id": run_id, "kind": "faults", "status": "complete",
        "started_at": started_at, "ended_at": started_at.replace("T02:00", "T02:20"),
        "cluster": {"flavor": "external" if emulator else "kafka09",
                    "version": "0.2.3" if emulator else "0.9.0.1", "is_emulator": emulator,
                    "broker_count": 3},
        "stale_outputs": [],
        "trials": [{"trial_id": r["trial_id"], "status": r["status"]} for r in rows],
    })
    if validated is not None:
        failed = [] if validated else [{
            "suite": "faults", "expectation": "durability_acked_lost_is_zero",
            "summary": f"trial {trial_id('durability', 'sigkill-leader', 'all', 2)}: "
                       "acked_lost 37"}]
        atomic_write_json(lab.validation_path(f"{run_id}-faults"),
                          {"run_id": run_id, "suite": "faults", "success": validated,
                           "failed": failed})
    return trials


def _page(data_dir: Path, run_id: str = FAULT_RUN) -> str:
    return (LabData(data_dir).report_page_dir(run_id) / "index.html").read_text()


def _between(html: str, start: str, end: str) -> str:
    return html.split(start, 1)[1].split(end, 1)[0]


# --------------------------------------------------------------------------- pure parts


def test_missing_values_say_why() -> None:
    assert missing_reason({"fault": "kill-follower", "status": "complete"},
                          "leader_elected_ms") == "leader did not change"
    assert missing_reason({"fault": "kill-follower"}, "leader_elected_ms_median") == (
        "leader did not change in any trial")
    assert missing_reason({"fault": "none", "status": "complete"}, "isr_full_ms") == "no fault"
    assert missing_reason({"fault": "sigkill-leader", "status": "failed"},
                          "unavailable_ms") == "trial failed"
    assert missing_reason({"fault": "sigkill-leader", "status": "complete", "acked_msgs": 0},
                          "unavailable_ms") == "no acks"
    assert missing_reason({"fault": "sigkill-leader", "status": "complete",
                           "acked_msgs": 10}, "unavailable_ms") is None


def test_durability_loss_and_errors_text() -> None:
    assert is_durability_loss({"profile": "durability", "acked_lost": 1})
    assert not is_durability_loss({"profile": "durability", "acked_lost": 0})
    assert not is_durability_loss({"profile": "availability", "acked_lost": 50})
    assert is_durability_loss({"profile": "durability", "trials_with_loss": 2})  # a cell
    assert errors_text('{"A": 2, "B": 30}') == "B: 30, A: 2"
    assert errors_text("{}") == "" and errors_text(None) == ""


def test_representative_is_the_median_unavailability_trial() -> None:
    trials = pd.DataFrame([
        {"trial_id": f"t{n}", "profile": "durability", "fault": "sigkill-leader",
         "acks": "all", "trial": n, "status": "complete", "unavailable_ms": u}
        for n, u in ((1, 900.0), (2, 300.0), (3, 500.0), (4, None))])
    assert representative_trials(trials) == {("durability", "sigkill-leader", "all"): "t3"}


def test_timeline_marks_in_time_order_one_row_each() -> None:
    row = _trial(FAULT_RUN, "durability", "sigkill-leader", "all", 1, 0)
    marks, absent = timeline_marks(row)
    assert [m.kind for m in marks] == ["fault", "leader", "heal", "isr"]
    assert [m.row for m in marks] == [0, 1, 2, 3]
    assert absent == []
    follower = _trial(FAULT_RUN, "durability", "kill-follower", "all", 1, 0)
    marks, absent = timeline_marks(follower)
    assert "leader" not in [m.kind for m in marks]
    assert absent == ["new leader: leader did not change"]
    assert timeline_marks(_trial(FAULT_RUN, "durability", "none", "all", 1, 0)) == ([], [])


# --------------------------------------------------------------------------- the page


def test_fault_page_tables_finding_timelines_and_notes(tmp_path: Path) -> None:
    trials = write_fault_run(tmp_path, validated=False)
    build_report(tmp_path)
    html = _page(tmp_path)
    assert 'id="durability"' in html and "Durability and availability" in html
    assert 'id="checks"' in html and "Run state and validation" in html
    assert "Drift flags" not in html
    # (a) one row per profile × fault × acks, medians and maxima
    cells = _between(html, 'class="fault-cells"', "</table>")
    for key in ("trials", "trials_with_loss", "acked_lost_sum", "acked_lost_median",
                "acked_lost_max", "duplicates_median", "unavailable_ms_median",
                "unavailable_ms_max", "leader_elected_ms_median", "isr_full_ms_max",
                "consumer_gap_ms_median"):
        assert f"<th>{key}</th>" in cells, key
    assert cells.count(" data-cell=") == len(PLAN)
    order = re.findall(r'data-cell="([^"]+)"', cells)
    assert order[0] == "durability|none|all" and order[-1] == "availability|sigkill-leader|1"
    durable_kill = _between(cells, 'data-cell="durability|sigkill-leader|all"', "</tr>")
    assert '<tr class="finding" data-cell="durability|sigkill-leader|all">' in cells
    assert "<td>37</td>" in durable_kill  # acked_lost_sum
    follower = _between(cells, 'data-cell="durability|kill-follower|all"', "</tr>")
    assert "leader did not change in any trial" in follower
    control = _between(cells, 'data-cell="durability|none|all"', "</tr>")
    assert control.count(">no fault<") == 10  # leader, ISR, the client's leader, the heal to an ack and a receipt
    # (b) every trial, every count column, the finding highlighted
    table = _between(html, 'class="fault-trials"', "</table>")
    assert table.count(" data-trial=") == len(trials)
    for key in ("intended_msgs", "acked_msgs", "failed_msgs", "indeterminate_msgs",
                "unsent_msgs", "read_back_msgs", "acked_lost", "acked_lost_in_broker_logs",
                "acked_lost_absent_from_logs", "failed_but_present", "indeterminate_present",
                "unseen", "duplicates", "reordered", "acks_after_fault", "unavailable_ms",
                "consumer_gap_ms", "leader_elected_ms", "isr_full_ms", "lag_recovered_ms"):
        assert f"<th>{key}</th>" in table, key
    lossy = trial_id("durability", "sigkill-leader", "all", 2)
    row = table.split(f'data-trial="{lossy}">', 1)[1].split("</tr>", 1)[0]
    assert f'<tr class="finding" id="trial-{lossy}" data-trial="{lossy}">' in table
    assert ">loss</span>" in row and 'class="flag finding"' in row
    assert "NOT_LEADER_FOR_PARTITION: 30, REQUEST_TIMED_OUT: 10" in row
    assert "<td>37</td>" in row and "<td>30</td>" in row and "<td>7</td>" in row
    permitted = trial_id("availability", "sigkill-leader", "1", 1)
    assert f'<tr id="trial-{permitted}"' in table  # loss permitted there: not a finding
    # findings: shown and explained
    finding = _between(html, '<div class="finding"', "</div>")
    assert f'data-trial="{lossy}"' in finding and f'href="#trial-{lossy}"' in finding
    assert "30 of them are in no broker&#x27;s log" in finding
    assert "7 of them are still in some broker&#x27;s log segment" in finding
    assert "not repeated" in finding and "KIP-101" in finding
    assert "Loss under other profiles (2 trial(s)" in html
    assert "The no-fault control lost and duplicated nothing." in html
    # (c) one timeline per trial (few trials) with its markers
    charts = html.split("Timelines: acks/s and rx/s", 1)[1]
    assert charts.count("<figure") == len(trials)
    kill = _between(charts, f'data-trial="{trial_id("durability", "sigkill-leader", "all", 1)}"',
                    "</figure>")
    for kind in ("fault", "heal", "leader", "isr"):
        assert f'<g class="mark" data-mark="{kind}">' in kill, kind
    assert "fault 6.0 s" in kill and "new leader 6.3 s" in kill and "ISR full 15.2 s" in kill
    assert "acks/s" in kill and "rx/s (live consumer)" in kill and "<polyline" in kill
    fig = _between(charts, f'data-trial="{lossy}"', "</figure>")
    assert 'class="flag finding"' in fig
    assert charts.split(f'data-trial="{lossy}"', 1)[0].rsplit("<figure", 1)[1].startswith(
        ' class="finding"')
    follower_fig = _between(charts, f'data-trial="{trial_id("durability", "kill-follower", "all", 1)}"',
                            "</figure>")
    assert 'data-mark="leader"' not in follower_fig
    assert "No marker for new leader: leader did not change." in follower_fig
    # (d) the Kafka 0.9 notes
    notes = _between(html, 'class="kafka-0-9"', "</ul>")
    for text in ("No idempotent producer", "unclean.leader.election.enable is true by default",
                 "min.insync.replicas", "KIP-101"):
        assert text in notes, text
    # validation (fault suite) failing on the durability loss; no emulator anywhere
    assert "Validation failed." in html and "durability_acked_lost_is_zero" in html
    assert EMULATOR_LABEL not in html
    assert "http://" not in html.replace('http-equiv', '') and "<script src" not in html


def test_emulator_fault_run_is_labelled(tmp_path: Path) -> None:
    write_fault_run(tmp_path, emulator=True)
    build_report(tmp_path)
    html = _page(tmp_path)
    main = html.split("<main>", 1)[1]
    assert EMULATOR_LABEL in main.split("</div>", 1)[0]  # the page's banner
    assert EMULATOR_LABEL in _between(html, 'class="fault-cells"', "</caption>")
    assert EMULATOR_LABEL in _between(html, 'class="fault-trials"', "</caption>")
    n = sum(k for *_, k, _ in PLAN)
    assert html.count('class="emu-badge"') == n  # in every timeline


def test_emulator_trials_on_a_kafka_cluster_are_counted_as_trials(tmp_path: Path) -> None:
    write_fault_run(tmp_path, emulator=True)
    lab = LabData(tmp_path)
    manifest = json.loads(lab.manifest_path(FAULT_RUN).read_text())
    manifest["cluster"]["is_emulator"] = False  # the cluster is Kafka, its trials were not
    lab.write_manifest(manifest)
    build_report(tmp_path)
    n = sum(k for *_, k, _ in PLAN)
    assert f": {n} trial(s) of this run ran on an emulator broker" in _page(tmp_path)


def test_index_lists_fault_runs_beside_latency_and_load_runs(tmp_path: Path) -> None:
    from tests.unit.test_report import write_lab_data
    from tests.unit.test_report_load import LOAD_RUNS, write_load_run

    info = write_lab_data(tmp_path, with_emulator=False)
    write_load_run(tmp_path, LOAD_RUNS[0], 6, pause=False)
    trials = write_fault_run(tmp_path, validated=True)
    index = build_report(tmp_path).read_text()
    runs = _between(index, 'class="runs"', "</table>")
    assert f'href="{FAULT_RUN}/index.html"' in runs
    assert f'href="{LOAD_RUNS[0]}/index.html"' in runs
    assert f'href="{info["latest"]}/index.html"' in runs
    row = runs.split(f"{FAULT_RUN}</a>", 1)[1].split("</tr>", 1)[0]
    assert '<td class="t">faults</td>' in row
    assert f"<td>{len(trials)}</td>" in row and '<span class="ok">pass</span>' in row
    assert re.search(r'data-kind="faults"><td class="t"><a href="' + FAULT_RUN, runs)
    # the newest run is the fault run: mirrored with its own section
    assert 'id="durability"' in index
    # latency and load pages are unchanged by the fault run
    assert 'id="latest"' in _page(tmp_path, info["latest"])
    assert 'id="fanout"' in _page(tmp_path, LOAD_RUNS[0])
    assert FAULT_RUN not in _page(tmp_path, info["latest"])


def test_fault_page_without_aggregates_says_so(tmp_path: Path) -> None:
    write_fault_run(tmp_path, tables=())
    build_report(tmp_path)
    html = _page(tmp_path)
    assert "Run not aggregated yet" in html
    assert "Its manifest lists 7 trial(s)." in html
    assert "aggregate_faults" in html
    assert 'class="kafka-0-9"' in html  # the notes still stand
    index = (LabData(tmp_path).report_index_path()).read_text()
    row = index.split(f"{FAULT_RUN}</a>", 1)[1].split("</tr>", 1)[0]
    assert '<td class="t">faults</td>' in row and "<td>0</td>" in row


def test_the_kafka_0_9_notes_stand_only_on_a_run_of_brokers_that_old(tmp_path: Path) -> None:
    """What 0.9 does not promise (no idempotence, unclean elections by default) is said beside
    a run measured on 0.9 (or one that records no cluster), not beside a modern broker's."""
    write_fault_run(tmp_path)
    lab = LabData(tmp_path)
    manifest = lab.manifest(FAULT_RUN)
    assert manifest is not None
    lab.write_manifest({**manifest, "cluster": {**manifest["cluster"], "protocol": "legacy-0.9"}})
    build_report(tmp_path)
    assert 'class="kafka-0-9"' in _page(tmp_path)
    lab.write_manifest({**manifest, "cluster": {"flavor": "external", "protocol": "modern",
                                                "version": "4.1.0", "is_emulator": False,
                                                "broker_count": 3}})
    build_report(tmp_path)
    html = _page(tmp_path)
    assert 'id="durability"' in html and 'class="kafka-0-9"' not in html


def test_fault_page_with_a_missing_table_says_which(tmp_path: Path) -> None:
    write_fault_run(tmp_path, tables=("fault_trials", "fault_cells"), failed_trial=True)
    build_report(tmp_path)
    html = _page(tmp_path)
    assert "Missing tables: fault_timeline" in html
    assert "No timeline table (not aggregated)." in html
    table = _between(html, 'class="fault-trials"', "</table>")
    failed = table.split('data-trial="default-sigterm-leader-acks-1-t1">', 1)[1].split("</tr>")[0]
    assert failed.count(">trial failed</span>") == 8  # every availability figure
    assert 'title="broker 1 did not come back"' in failed
    assert "broker 1 did not come back" in _between(html, 'class="trial-errors"', "</ul>")


def test_many_trials_draw_one_representative_per_cell_and_every_finding(tmp_path: Path) -> None:
    plan = (("durability", "none", "all", 5, (0,) * 5),
            ("durability", "sigkill-leader", "all", 5, (0, 0, 0, 0, 12)),
            ("availability", "sigstop-leader", "1", 5, (3, 0, 0, 9, 1)))
    write_fault_run(tmp_path, plan=plan)
    build_report(tmp_path)
    html = _page(tmp_path)
    charts = html.split("Timelines: acks/s and rx/s", 1)[1].split('class="kafka-0-9"', 1)[0]
    # one per cell (trial 3: the median unavailability), plus the finding (trial 5)
    assert charts.count("<figure") == 4
    for n in (3, 5):
        assert f'id="timeline-trial-durability-sigkill-leader-acks-all-t{n}"' in charts
    assert '<figure class="finding" id="timeline-trial-durability-sigkill-leader-acks-all-t5"' in (
        charts)
    assert charts.count("<details>") == 3
    others = re.findall(r'<li data-trial="([^"]+)">', charts)
    assert len(others) == 15 - 4
    assert "fault 6.0 s, new leader" in charts
    assert "one chart per profile × fault × acks" in charts


# --------------------------------------------------------------------------- consumer faults

CONSUMER_RUN = "20261202T020000Z-cfaults"
#: ``fault_trials``' consumer columns, copied here from the fake trials' summaries (the
#: Spark job recomputes the counts; tests/spark/test_aggregate_faults.py checks they agree).
CONSUMER_SUMMARY_KEYS = (
    "commit", "consumers", "session_timeout_ms", "heartbeat_interval_ms",
    "auto_commit_interval_ms", "processed_records", "processed_unique", "redelivered",
    "lost_unprocessed", "processed_not_in_topic", "rebalance_pause_ms",
    "successor_assigned_ms", "survivors_pause_ms", "rejoin_pause_ms", "expected_redelivered",
    "expected_lost", "offsets_explain", "reread_agrees", "group_protocol",
)


def write_consumer_run(data_dir: Path, *, lost_after: int = 0) -> list[dict[str, Any]]:
    """A fault run with the broker PLAN plus the fake consumer trials
    (tools/fake_fault_samples.consumer_trials): their trial rows from the trials' summaries
    and events, their group_lag rows from their group_lag.parquet, as the aggregation writes
    them. ``lost_after``: records the first commit-after trial is made to lose."""
    from tools.fake_fault_samples import consumer_trials, write_fake_fault_run

    write_fault_run(data_dir, CONSUMER_RUN)
    dirs = write_fake_fault_run(data_dir / "fake-samples", CONSUMER_RUN, consumer_trials(),
                                manifest=False)
    rows, lags = [], []
    for d in dirs:
        doc = json.loads((d / "trial.json").read_text())
        s, ev, spec = doc["summary"], doc["events"], doc["spec"]
        t0 = ev["t0_ns"]

        def elapsed(key: str, ev: dict[str, Any] = ev, t0: int = t0) -> float | None:
            return None if ev.get(key) is None else (ev[key] - t0) / 1e9

        row = {c: s.get(c) for c in CONSUMER_SUMMARY_KEYS} | {
            "run_id": CONSUMER_RUN, "run_date": "2026-12-02", "trial_id": doc["trial_id"],
            "profile": spec["profile"], "fault": spec["fault"], "acks": "all",
            "trial": spec["trial"], "status": "complete", "verdict": s["verdict"],
            "fault_elapsed_s": elapsed("fault_ts_ns"),
            "rejoin_elapsed_s": elapsed("rejoin_ts_ns"),
            "moved_partitions": ",".join(map(str, s["moved_partitions"])),
            "acked_lost": 0, "intended_msgs": s["intended"]}
        rows.append(row)
        lag = pd.read_parquet(d / "group_lag.parquet")
        lags.append(lag.assign(run_id=CONSUMER_RUN, trial_id=doc["trial_id"]))
    if lost_after:
        rows[0] = rows[0] | {"lost_unprocessed": lost_after, "expected_lost": 0,
                             "offsets_explain": False}
    out = LabData(data_dir).aggregates_dir / "faults" / f"run_id={CONSUMER_RUN}"
    broker = pq.read_table(out / "fault_trials.parquet").to_pandas()
    trials = pd.concat([broker, pd.DataFrame(rows)], ignore_index=True)
    _write_spark_table(out / "replace", "fault_trials", trials)
    (out / "fault_trials.parquet" / next(
        p.name for p in (out / "fault_trials.parquet").iterdir() if p.name.startswith("part-"))
     ).unlink()
    for p in (out / "replace" / "fault_trials.parquet").iterdir():
        p.rename(out / "fault_trials.parquet" / p.name)
    (out / "replace" / "fault_trials.parquet").rmdir()
    (out / "replace").rmdir()
    _write_spark_table(out, "group_lag", pd.concat(lags, ignore_index=True))
    return rows


def test_lag_marks_fault_successor_and_rejoin() -> None:
    from kafkalab.report.consumer_faults_section import lag_marks

    marks = lag_marks({"fault": "leave-consumer", "fault_elapsed_s": 1.5,
                       "successor_assigned_ms": 50.0, "rejoin_elapsed_s": 2.5})
    assert [(m.kind, round(m.x, 3), m.row) for m in marks] == [
        ("fault", 1.5, 0), ("assigned", 1.55, 1), ("rejoin", 2.5, 2)]
    assert [m.kind for m in lag_marks({"fault": "kill-consumer", "fault_elapsed_s": 6.0})] == [
        "fault"]


def test_consumer_fault_section(tmp_path: Path) -> None:
    rows = write_consumer_run(tmp_path)
    build_report(tmp_path)
    html = _page(tmp_path, CONSUMER_RUN)
    sec = _between(html, 'id="consumer-faults"', "</section>")
    assert "2. Consumer faults" in sec and "3. Run state and validation" in html
    # pauses per fault × commit, with the session timeout and heartbeat beside them
    pauses = _between(sec, 'class="consumer-pauses"', "</table>")
    groups = re.findall(r'data-group="([^"]+)"', pauses)
    assert groups == ["kill-consumer|after", "kill-consumer|before", "leave-consumer|auto"]
    after = _between(pauses, 'data-group="kill-consumer|after">', "</tr>")
    cells = re.findall(r"<td[^>]*>(.*?)</td>", after)
    # fault, commit, trials, session timeout, heartbeat, successor median, pause median, max
    assert cells[:5] == ["kill-consumer", "after", "2", "1,500", "2,000"]
    # successor: median of 1,480 and 1,180; pause: median of 1,500 and 1,200, max 1,500
    assert "1,330" in cells[5] and "1,350" in cells[6] and "1,500" in cells[7]
    # redelivered and lost per commit strategy, with what the offsets predicted
    deliveries = _between(sec, 'class="consumer-deliveries"', "</table>")
    assert re.findall(r'data-group="([^"]+)"', deliveries) == [
        "kill-consumer|after", "leave-consumer|auto", "kill-consumer|before"]
    after = re.findall(r"<td[^>]*>(.*?)</td>",
                       _between(deliveries, 'data-group="kill-consumer|after">', "</tr>"))
    assert after == ["after", "kill-consumer", "2", "6", "4", "6", "0", "0", "0", "2 of 2",
                     "2 of 2"]
    before = re.findall(r"<td[^>]*>(.*?)</td>",
                        _between(deliveries, 'data-group="kill-consumer|before">', "</tr>"))
    assert before[3:9] == ["0", "0", "0", "3", "3", "3"]
    # per trial: a missing figure says why (no rejoin in a kill trial)
    table = _between(sec, 'class="consumer-trials"', "</table>")
    assert table.count(" data-trial=") == len(rows)
    kill = _between(table, f'data-trial="{rows[0]["trial_id"]}">', "</tr>")
    assert "no rejoin" in kill and "<td>404</td>" in kill  # processed_records
    leave = _between(table, f'data-trial="{rows[3]["trial_id"]}">', "</tr>")
    assert "no rejoin" not in leave and '<td class="t">0,3</td>' in leave
    # one lag chart per trial, the fault and (leave) the rejoin marked
    charts = re.findall(r'<figure class="lag" data-trial="([^"]+)"', sec)
    assert charts == [rows[0]["trial_id"], rows[1]["trial_id"], rows[2]["trial_id"],
                      rows[3]["trial_id"]]
    leave_chart = _between(sec, f'<figure class="lag" data-trial="{rows[3]["trial_id"]}"',
                           "</figure>")
    assert 'data-mark="fault"' in leave_chart and 'data-mark="rejoin"' in leave_chart
    assert "rejoin 2.5 s" in leave_chart and "<polyline" in leave_chart
    kill_chart = _between(sec, f'<figure class="lag" data-trial="{rows[0]["trial_id"]}"',
                          "</figure>")
    assert "kill-consumer 1.5 s" in kill_chart and "successor assigned 3.0 s" in kill_chart
    assert 'data-mark="rejoin"' not in kill_chart
    # Kafka 0.9's group protocol, from the trials' own note
    assert "eager rebalancing" in sec and "no static membership" in sec
    assert "no cooperative rebalancing" in sec
    assert 'class="finding"' not in sec and "lost no record (2 trial(s))" in sec


def test_commit_after_loss_is_a_finding(tmp_path: Path) -> None:
    rows = write_consumer_run(tmp_path, lost_after=7)
    build_report(tmp_path)
    sec = _between(_page(tmp_path, CONSUMER_RUN), 'id="consumer-faults"', "</section>")
    finding = _between(sec, f'<div class="finding" data-trial="{rows[0]["trial_id"]}">',
                       "</div>")
    assert "commit after (at-least-once) left records unprocessed" in finding
    assert "lost 7" in finding
    assert '<tr class="finding" data-group="kill-consumer|after">' in sec


def test_broker_fault_page_has_no_consumer_section(tmp_path: Path) -> None:
    write_fault_run(tmp_path)
    build_report(tmp_path)
    html = _page(tmp_path)
    assert 'id="consumer-faults"' not in html and "2. Run state and validation" in html
    assert "Missing tables" not in html


def test_a_controller_fault_shows_its_new_quorum_leader_and_others_do_not_miss_it() -> None:
    from kafkalab.faults.spec import CONTROLLER_FAULTS, FAULTS
    from kafkalab.report.durability_section import timeline_marks
    from kafkalab.report.fault_data import is_controller_fault, missing_reason

    assert {f for f in FAULTS if is_controller_fault(f)} == set(CONTROLLER_FAULTS)
    elected = {"trial_id": "t1", "fault": "sigkill-controller", "status": "complete",
               "fault_elapsed_s": 1.0, "heal_elapsed_s": 3.0,
               "controller_elected_elapsed_s": 1.4, "controller_elected_ms": 400.0}
    marks, absent = timeline_marks(elected)
    assert "new quorum leader 1.4 s" in [m.label for m in marks]
    assert all(not a.startswith("new quorum leader") for a in absent)
    unseen = {**elected, "controller_elected_elapsed_s": None, "controller_elected_ms": None}
    _, absent = timeline_marks(unseen)
    assert "new quorum leader: no new quorum leader seen before the end" in absent
    leader = {**unseen, "fault": "sigkill-leader"}
    _, absent = timeline_marks(leader)
    assert all(not a.startswith("new quorum leader") for a in absent)  # not its event
    assert missing_reason(leader, "controller_elected_ms_median") == "not a controller fault"


def test_consumer_groups_are_labelled_by_what_makes_each_a_different_experiment() -> None:
    trials = pd.DataFrame([
        {"fault": "kill-consumer", "commit": "after", "static_membership": False,
         "rebalance": None, "client": "confluent-kafka"},
        {"fault": "kill-consumer", "commit": "after", "static_membership": False,
         "rebalance": "cooperative", "client": "kafka-python"},
        {"fault": "kill-consumer", "commit": "after", "static_membership": True,
         "rebalance": "consumer", "client": "confluent-kafka"},
        {"fault": "leave-consumer", "commit": "before", "static_membership": None,
         "rebalance": "eager", "client": "confluent-kafka"},
    ])
    labels = [key for key, _ in consumer_groups(trials)]
    assert labels == [
        ("kill-consumer", "after"),
        ("kill-consumer", "after · cooperative rebalancing · kafka-python"),
        ("kill-consumer", "after · static members · KIP-848 consumer protocol"),
        ("leave-consumer", "before · eager rebalancing")]


def test_a_link_fault_shows_when_its_old_leader_stepped_down_and_others_do_not_miss_it() -> None:
    from kafkalab.faults.spec import FAULTS, LINK_FAULTS
    from kafkalab.report.durability_section import timeline_marks
    from kafkalab.report.fault_data import is_link_fault, missing_reason

    assert {f for f in FAULTS if is_link_fault(f)} == set(LINK_FAULTS)
    cut = {"trial_id": "t1", "fault": "partition-leader", "status": "complete",
           "fault_elapsed_s": 3.0, "heal_elapsed_s": 14.0, "leader_elected_elapsed_s": 12.5,
           "leader_elected_ms": 9500.0, "old_leader_stepped_down_elapsed_s": 14.4,
           "old_leader_stepped_down_ms": 11400.0, "isr_full_elapsed_s": 15.0}
    marks, absent = timeline_marks(cut)
    assert "old leader steps down 14.4 s" in [m.label for m in marks] and absent == []
    killed = {"trial_id": "t2", "fault": "sigkill-leader", "status": "complete",
              "fault_elapsed_s": 3.0, "heal_elapsed_s": 5.0, "leader_elected_elapsed_s": 3.4}
    _, absent = timeline_marks(killed)
    assert not any("old leader" in a for a in absent)
    assert missing_reason(killed, "old_leader_stepped_down_ms") == "not a link fault"
    assert missing_reason({**cut, "old_leader_stepped_down_ms": None},
                          "old_leader_stepped_down_ms") == "the old leader still named itself at the end"
