"""Tests of spark_jobs/aggregate_faults.py on a fake fault run (tools/fake_fault_samples.py).

The counts are checked against the values the fake was told to produce (hand-counted) and
against the trial summaries the fake computed from its own rows by the contract's
definitions; the availability figures and event times against trial.json; the cells against
hand-computed medians (complete trials only); the timeline against a pandas reference built
straight from the files. One in-process aggregation per module; one run of the job's command
line in the same session (the file as a script: ``test_job_scripts.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from kafkalab.cluster.flavors import FAULT_CLUSTER
from spark_jobs import _session as shared
from spark_jobs import aggregate_faults as af
from tools.fake_fault_samples import (
    FakeFaultTrial,
    consumer_trials,
    standard_trials,
    write_fake_fault_run,
)

RUN = "20261122T010203Z-faults1"
OTHER_RUN = "20261123T010203Z-faults2"

# the standard set, plus a failed trial in the default sigkill-leader cell: it loses
# messages, but a cell's figures are over its complete trials only
FAILED = FakeFaultTrial(profile="default", fault="sigkill-leader", acks="1", trial=3,
                        status="failed", acked_lost=5, duplicates=9)
# two kills of the active controller: a new quorum leader 300 and 500 ms after the fault
CONTROLLER = [FakeFaultTrial(profile="durability", fault="sigkill-controller", trial=n,
                             election_s=s) for n, s in ((1, 0.3), (2, 0.5))]
TRIALS = [*standard_trials(), FAILED, *CONTROLLER]
DUR, LOSSY, DUP1, DUP2, NONE = (t.trial_id for t in standard_trials())

#: What the fake was told to produce (300 intended messages per trial).
EXPECTED_COUNTS: dict[str, dict[str, int | None]] = {
    DUR: {"intended_msgs": 300, "acked_msgs": 298, "failed_msgs": 2, "indeterminate_msgs": 0,
          "unsent_msgs": 0, "read_back_msgs": 298, "ok_msgs": 298, "acked_lost": 0,
          "acked_lost_in_broker_logs": 0, "acked_lost_absent_from_logs": 0,
          "failed_but_present": 0, "indeterminate_present": 0, "unseen": 2, "duplicates": 0,
          "reordered": 0, "aborted_msgs": 0,
          "aborted_visible": 0, "aborted_read_uncommitted": None},
    LOSSY: {"intended_msgs": 300, "acked_msgs": 293, "failed_msgs": 3, "indeterminate_msgs": 2,
            "unsent_msgs": 2, "read_back_msgs": 292, "ok_msgs": 290, "acked_lost": 3,
            "acked_lost_in_broker_logs": 1, "acked_lost_absent_from_logs": 2,
            "failed_but_present": 1, "indeterminate_present": 1, "unseen": 5,
            "duplicates": 0, "reordered": 0, "aborted_msgs": 0,
          "aborted_visible": 0, "aborted_read_uncommitted": None},
    DUP1: {"intended_msgs": 300, "acked_msgs": 300, "failed_msgs": 0, "indeterminate_msgs": 0,
           "unsent_msgs": 0, "read_back_msgs": 300, "ok_msgs": 300, "acked_lost": 0,
           "acked_lost_in_broker_logs": 0, "acked_lost_absent_from_logs": 0,
           "failed_but_present": 0, "indeterminate_present": 0, "unseen": 0, "duplicates": 4,
           "reordered": 2, "aborted_msgs": 0,
          "aborted_visible": 0, "aborted_read_uncommitted": None},
    NONE: {"intended_msgs": 300, "acked_msgs": 300, "failed_msgs": 0, "indeterminate_msgs": 0,
           "unsent_msgs": 0, "read_back_msgs": 300, "ok_msgs": 300, "acked_lost": 0,
           "acked_lost_in_broker_logs": 0, "acked_lost_absent_from_logs": 0,
           "failed_but_present": 0, "indeterminate_present": 0, "unseen": 0, "duplicates": 0,
           "reordered": 0, "aborted_msgs": 0,
          "aborted_visible": 0, "aborted_read_uncommitted": None},
}
#: The summary's names of the counts (trial.json / ``kafkalab faults run --json``).
SUMMARY_NAMES = {"intended_msgs": "intended", "acked_msgs": "acked", "failed_msgs": "failed",
                 "indeterminate_msgs": "indeterminate", "unsent_msgs": "unsent",
                 "read_back_msgs": "read_back", "aborted_msgs": "aborted"}


@pytest.fixture(scope="module")
def lab(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("faults")
    dirs = write_fake_fault_run(root, RUN, TRIALS)
    write_fake_fault_run(root, OTHER_RUN, [NONE_TRIAL])  # another run: never mixed in
    out = root / "aggregates" / "faults"
    counts = af.run(spark, str(root / "faults"), str(out), RUN)
    run_dir = out / f"run_id={RUN}"
    trials = pd.read_parquet(run_dir / "fault_trials.parquet").set_index("trial_id")
    cells = pd.read_parquet(run_dir / "fault_cells.parquet")
    timeline = pd.read_parquet(run_dir / "fault_timeline.parquet")
    docs = {d.name.removeprefix("trial="): json.loads((d / "trial.json").read_text())
            for d in dirs}
    return {"root": root, "out": out, "counts": counts, "trials": trials, "cells": cells,
            "timeline": timeline, "docs": docs, "dirs": {d.name.removeprefix("trial="): d
                                                         for d in dirs}}


NONE_TRIAL = FakeFaultTrial(profile="availability", fault="none")


def test_tables_and_row_counts(lab: dict[str, Any]) -> None:
    assert lab["counts"] == {"fault_trials": 8, "fault_cells": 5, "fault_timeline": 240,
                             "group_lag": 0}
    assert sorted(lab["trials"].index) == sorted(t.trial_id for t in TRIALS)
    assert ["trial_id", *lab["trials"].columns] == [
        "trial_id", *(c for c in af.TRIAL_SCHEMA if c != "trial_id")]
    assert list(lab["cells"].columns) == list(af.CELL_SCHEMA)
    assert list(lab["timeline"].columns) == list(af.TIMELINE_SCHEMA)
    assert set(lab["trials"]["run_id"]) == {RUN}


@pytest.mark.parametrize("trial_id", list(EXPECTED_COUNTS))
def test_counts_recomputed_from_verdicts(lab: dict[str, Any], trial_id: str) -> None:
    row = lab["trials"].loc[trial_id]
    assert {c: None if pd.isna(row[c]) else int(row[c])
            for c in af.COUNT_COLUMNS} == EXPECTED_COUNTS[trial_id]


def test_counts_agree_with_the_trial_summaries(lab: dict[str, Any]) -> None:
    """Every trial (the failed one too): the Spark counts equal the summary's."""
    for tid, doc in lab["docs"].items():
        s, row = doc["summary"], lab["trials"].loc[tid]
        for col in af.COUNT_COLUMNS:
            if col == "ok_msgs":
                continue
            want = s[SUMMARY_NAMES.get(col, col)]
            assert (None if pd.isna(row[col]) else int(row[col])) == want, (tid, col)
    assert lab["trials"].loc[FAILED.trial_id, "acked_lost"] == 5


def test_spec_availability_and_events(lab: dict[str, Any]) -> None:
    t = lab["trials"]
    lossy = t.loc[LOSSY]
    assert (lossy.profile, lossy.fault, lossy.acks, lossy.trial, lossy.status) == (
        "default", "lossy-leader-crash", "1", 1, "complete")
    assert (lossy.target_broker, lossy.target_role) == (1, "leader")
    assert lossy.broker_version == FAULT_CLUSTER.version and not lossy.broker_is_emulator
    assert (lossy.rate_msgs_per_s, lossy.duration_s, lossy.fault_at_s, lossy.down_s) == (
        100.0, 3.0, 1.0, 1.0)
    assert lossy.unavailable_ms == pytest.approx(510.0)
    assert lossy.consumer_gap_ms == pytest.approx(540.0)
    assert (lossy.leader_elected_ms, lossy.isr_full_ms, lossy.lag_recovered_ms) == (
        pytest.approx(300.0), pytest.approx(1500.0), pytest.approx(1600.0))
    assert bool(lossy.recovered) and lossy.acks_after_fault == 98
    assert json.loads(lossy.errors_by_type) == {"_MSG_TIMED_OUT": 3, "_TRANSPORT": 2}
    assert (lossy.fault_elapsed_s, lossy.heal_elapsed_s, lossy.leader_elected_elapsed_s,
            lossy.isr_full_elapsed_s) == (pytest.approx(1.0), pytest.approx(2.0),
                                          pytest.approx(1.3), pytest.approx(2.5))
    assert lossy.verdict == "loss"
    none = t.loc[NONE]
    assert none.target_role == "none" and pd.isna(none.target_broker)
    assert pd.isna(none.fault_elapsed_s) and pd.isna(none.leader_elected_ms)
    assert pd.isna(none.down_s) and none.verdict == "ok" and none.acks == "all"
    assert t.loc[DUR, "verdict"] == "ok" and t.loc[FAILED.trial_id, "verdict"] == "failed"
    ctrl = t.loc[CONTROLLER[0].trial_id]
    assert (ctrl.target_role, ctrl.controller_elected_ms) == ("controller", pytest.approx(300.0))
    assert ctrl.controller_elected_elapsed_s == pytest.approx(1.3)  # fault at 1.0 s
    assert pd.isna(lossy.controller_elected_ms) and pd.isna(lossy.controller_elected_elapsed_s)
    for tid, doc in lab["docs"].items():
        for col in ("unavailable_ms", "consumer_gap_ms", "acks_after_fault",
                    "controller_elected_ms"):
            got, want = t.loc[tid, col], doc["summary"][col]
            assert (pd.isna(got) and want is None) or got == pytest.approx(want), (tid, col)


def test_cells_over_complete_trials(lab: dict[str, Any]) -> None:
    cells = lab["cells"].set_index(["profile", "fault", "acks"])
    assert len(cells) == 5
    ctrl = cells.loc[("durability", "sigkill-controller", "all")]
    assert (ctrl.trials, ctrl.controller_elected_ms_median, ctrl.controller_elected_ms_max) == (
        2, pytest.approx(400.0), pytest.approx(500.0))
    sig = cells.loc[("default", "sigkill-leader", "1")]
    assert (sig.trials, sig.trials_complete, sig.trials_with_loss) == (3, 2, 0)
    assert (sig.acked_lost_sum, sig.acked_lost_median, sig.acked_lost_max) == (0, 0.0, 0.0)
    assert (sig.duplicates_median, sig.duplicates_max) == (2.5, 4.0)  # (4 + 1) / 2
    assert (sig.unavailable_ms_median, sig.unavailable_ms_max) == (
        pytest.approx(510.0), pytest.approx(610.0))
    assert (sig.leader_elected_ms_median, sig.isr_full_ms_max) == (
        pytest.approx(300.0), pytest.approx(1500.0))
    lossy = cells.loc[("default", "lossy-leader-crash", "1")]
    assert (lossy.trials, lossy.trials_complete, lossy.trials_with_loss) == (1, 1, 1)
    assert (lossy.acked_lost_sum, lossy.acked_lost_median, lossy.acked_lost_max) == (3, 3.0, 3.0)
    assert lossy.consumer_gap_ms_median == pytest.approx(540.0)
    dur = cells.loc[("durability", "sigkill-leader", "all")]
    assert (dur.trials, dur.trials_with_loss, dur.acked_lost_sum) == (1, 0, 0)
    none = cells.loc[("durability", "none", "all")]
    assert pd.isna(none.leader_elected_ms_median) and none.unavailable_ms_max == pytest.approx(10.0)
    assert pd.isna(cells.loc[("default", "sigkill-leader", "1")].controller_elected_ms_median)
    assert set(lab["cells"]["run_id"]) == {RUN} and not lab["cells"]["broker_is_emulator"].any()


def _timeline_reference(trial_dir: Path, t0: int) -> pd.DataFrame:
    sends = pd.read_parquet(trial_dir / "sends.parquet")
    rx = pd.read_parquet(trial_dir / "receipts-000.parquet")
    series = {
        "acks": sends.loc[sends.outcome == "acked", "ack_ts_ns"].dropna(),
        "rx": rx.loc[~rx.duplicate, "receive_ts_ns"],
        "sent": sends.send_ts_ns.dropna(),
    }
    bins = {k: ((v.astype("int64") - t0) // 100_000_000).value_counts() for k, v in series.items()}
    last = max(int(b.index.max()) for b in bins.values())
    idx = np.arange(last + 1)
    return pd.DataFrame({"bin_start_s": idx / 10.0, **{
        f"{k}_per_s": [float(b.get(i, 0)) * 10.0 for i in idx] for k, b in bins.items()}})


def test_trials_of_different_producers_are_different_cells(spark: Any,
                                                          lab: dict[str, Any]) -> None:
    """The same profile × fault × acks with another client, max in flight or idempotence is
    another experiment: a cell of its own (they were one cell before 2026-11-29)."""
    run = "20261129T000000Z-idem"
    trials = [FakeFaultTrial(client=client, max_in_flight=5, idempotence=idem, duplicates=dup,
                             trial=k)
              for client in ("confluent-kafka", "kafka-python") for idem, dup in
              ((True, 0), (False, 3)) for k in (1, 2)]
    write_fake_fault_run(lab["root"], run, trials)
    out = lab["root"] / "aggregates" / "faults"
    counts = af.run(spark, str(lab["root"] / "faults"), str(out), run)
    assert counts["fault_cells"] == 4
    cells = pd.read_parquet(out / f"run_id={run}" / "fault_cells.parquet")
    got = {(r.client, int(r.max_in_flight), bool(r.idempotence)): (r.trials, r.duplicates_max)
           for r in cells.itertuples()}
    assert got == {(c, 5, True): (2, 0.0) for c in ("confluent-kafka", "kafka-python")} | {
        (c, 5, False): (2, 3.0) for c in ("confluent-kafka", "kafka-python")}
    rows = pd.read_parquet(out / f"run_id={run}" / "fault_trials.parquet")
    assert set(rows["trial_id"]) == {t.trial_id for t in trials}
    assert pd.isna(lab["trials"]["idempotence"]).all()  # not recorded by the older fakes


def test_timeline_matches_a_reference_from_the_files(lab: dict[str, Any]) -> None:
    tl = lab["timeline"]
    for tid, d in lab["dirs"].items():
        got = tl[tl.trial_id == tid].drop(columns=["run_id", "trial_id"]).reset_index(drop=True)
        want = _timeline_reference(d, lab["docs"][tid]["events"]["t0_ns"])
        pd.testing.assert_frame_equal(got, want, check_dtype=False)


def test_timeline_shows_the_outage(lab: dict[str, Any]) -> None:
    """The lossy trial: no acks and no receipts from the fault (1.0 s) until the outage
    ends (0.5 s later); then the held-back messages arrive at once; sends never stop."""
    tl = lab["timeline"]
    lossy = tl[tl.trial_id == LOSSY].set_index("bin_start_s")
    outage = lossy.loc[1.0:1.4]
    assert len(outage) == 5 and (outage.acks_per_s == 0).all() and (outage.rx_per_s == 0).all()
    assert (outage.sent_per_s == 100.0).all()
    assert lossy.loc[1.5, "acks_per_s"] == 550.0  # 45 held back + 10 of the bin, × 10
    assert lossy.loc[0.9, "rx_per_s"] == 70.0  # the 3 acked-lost never reach the consumer
    assert list(lossy.index) == [i / 10 for i in range(30)]


def test_the_command_line_writes_the_same_tables(spark: Any, lab: dict[str, Any],
                                                 tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The job's command line (in the shared session; the file as a script:
    ``test_job_scripts.py``) writes the same tables; a missing path exits 2."""
    out = tmp_path / "agg"
    code = af.main(["--faults", str(lab["root"] / "faults"), "--out", str(out),
                    "--run-id", RUN])
    printed = capsys.readouterr()
    assert code == 0, (printed.out + printed.err)[-3000:]
    assert ("wrote 8 fault_trials, 5 fault_cells, 240 fault_timeline, 0 group_lag rows"
            in printed.out)
    run_dir = out / f"run_id={RUN}"
    got = pd.read_parquet(run_dir / "fault_trials.parquet").set_index("trial_id")
    pd.testing.assert_frame_equal(got.sort_index(), lab["trials"].sort_index())
    assert sorted(p.name for p in out.iterdir()) == [f"run_id={RUN}"]
    assert af.main(["--faults", str(tmp_path / "nothing"), "--out", str(out),
                    "--run-id", RUN]) == 2


def test_run_without_trials_is_bad_input(spark: Any, lab: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(shared.InputError, match="no fault trials"):
        af.extract(spark, str(lab["root"] / "faults"), "20990101T000000Z-none")


# --------------------------------------------------------------------------- consumer faults

CONSUMER_RUN = "20261124T010203Z-faults3"
CONSUMER = consumer_trials()
KA1, KA2, KB, LA = (t.trial_id for t in CONSUMER)
#: What the fake was told to produce: 400 intended messages each, all acked and read back.
EXPECTED_CONSUMER: dict[str, dict[str, int]] = {
    KA1: {"processed_records": 404, "processed_unique": 400, "redelivered": 4,
          "lost_unprocessed": 0, "processed_not_in_topic": 0},
    KA2: {"processed_records": 402, "processed_unique": 400, "redelivered": 2,
          "lost_unprocessed": 0, "processed_not_in_topic": 0},
    KB: {"processed_records": 397, "processed_unique": 397, "redelivered": 0,
         "lost_unprocessed": 3, "processed_not_in_topic": 0},
    LA: {"processed_records": 405, "processed_unique": 400, "redelivered": 5,
         "lost_unprocessed": 0, "processed_not_in_topic": 0},
}


@pytest.fixture(scope="module")
def group_lab(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A run of the four consumer trials and a broker-fault control."""
    root = tmp_path_factory.mktemp("consumer-faults")
    dirs = write_fake_fault_run(root, CONSUMER_RUN, [*CONSUMER, NONE_TRIAL])
    out = root / "aggregates" / "faults"
    counts = af.run(spark, str(root / "faults"), str(out), CONSUMER_RUN)
    run_dir = out / f"run_id={CONSUMER_RUN}"
    return {
        "counts": counts,
        "trials": pd.read_parquet(run_dir / "fault_trials.parquet").set_index("trial_id"),
        "cells": pd.read_parquet(run_dir / "fault_cells.parquet"),
        "lag": pd.read_parquet(run_dir / "group_lag.parquet"),
        "docs": {d.name.removeprefix("trial="): json.loads((d / "trial.json").read_text())
                 for d in dirs},
        "dirs": {d.name.removeprefix("trial="): d for d in dirs},
    }


def test_broker_runs_have_no_consumer_figures(lab: dict[str, Any]) -> None:
    """A run without consumer files: every consumer column null, no group_lag rows, the
    cells' commit null."""
    t = lab["trials"]
    consumer_cols = [*af.GROUP_COLUMNS, *af.CONSUMER_COUNT_COLUMNS, *af.REBALANCE_COLUMNS,
                     "reread_agrees", "rejoin_elapsed_s", "victim_end_elapsed_s"]
    assert t[consumer_cols].isna().all().all()
    assert lab["cells"]["commit"].isna().all()
    group_lag = pd.read_parquet(lab["out"] / f"run_id={RUN}" / "group_lag.parquet")
    assert len(group_lag) == 0 and list(group_lag.columns) == list(af.GROUP_LAG_SCHEMA)


def test_consumer_tables_and_row_counts(group_lab: dict[str, Any]) -> None:
    lag_rows = sum(len(pd.read_parquet(group_lab["dirs"][t.trial_id] / "group_lag.parquet"))
                   for t in CONSUMER)
    assert group_lab["counts"] == {"fault_trials": 5, "fault_cells": 4,
                                   "fault_timeline": group_lab["counts"]["fault_timeline"],
                                   "group_lag": lag_rows}
    assert lag_rows == 4 * 6 * 10  # 4 trials × 10 samples (-0.5 .. 4.0 s) × 6 partitions
    assert list(group_lab["lag"].columns) == list(af.GROUP_LAG_SCHEMA)


@pytest.mark.parametrize("trial_id", list(EXPECTED_CONSUMER))
def test_consumer_counts_recomputed_from_the_files(group_lab: dict[str, Any],
                                                   trial_id: str) -> None:
    row = group_lab["trials"].loc[trial_id]
    assert {c: int(row[c]) for c in af.CONSUMER_COUNT_COLUMNS} == EXPECTED_CONSUMER[trial_id]
    summary = group_lab["docs"][trial_id]["summary"]
    for col in ("processed_records", "processed_unique", "redelivered", "lost_unprocessed"):
        assert int(row[col]) == summary[col], col
    assert int(row["processed_not_in_topic"]) == summary["deliveries"]["processed_not_in_topic"]
    assert bool(row["reread_agrees"]) is True


def test_consumer_settings_and_rebalance_figures(group_lab: dict[str, Any]) -> None:
    t = group_lab["trials"]
    ka1 = t.loc[KA1]
    assert (ka1.fault, ka1.commit, ka1.consumers, ka1.partitions, ka1.client) == (
        "kill-consumer", "after", 3, 6, "confluent-kafka")
    assert (ka1.session_timeout_ms, ka1.heartbeat_interval_ms) == (1500, 2000)
    assert pd.isna(ka1.auto_commit_interval_ms)  # only the auto strategy has one
    assert t.loc[LA, "auto_commit_interval_ms"] == 5000
    assert (ka1.rebalance_pause_ms, ka1.successor_assigned_ms) == (
        pytest.approx(1500.0), pytest.approx(1480.0))
    assert t.loc[KA2, "rebalance_pause_ms"] == pytest.approx(1200.0)
    assert (ka1.expected_redelivered, ka1.expected_lost, bool(ka1.offsets_explain)) == (
        4, 0, True)
    kb = t.loc[KB]
    assert (kb.expected_redelivered, kb.expected_lost, bool(kb.offsets_explain)) == (0, 3, True)
    assert ka1.moved_partitions == "0,3" and bool(ka1.drained)
    assert "eager rebalancing" in ka1.group_protocol
    assert ka1.fault_elapsed_s == pytest.approx(1.5)
    assert ka1.victim_end_elapsed_s == pytest.approx(1.5) and pd.isna(ka1.rejoin_elapsed_s)
    la = t.loc[LA]
    assert la.rejoin_elapsed_s == pytest.approx(2.5)
    assert la.victim_end_elapsed_s == pytest.approx(1.502)  # closed 2 ms after the fault
    for tid in EXPECTED_CONSUMER:
        s = group_lab["docs"][tid]["summary"]
        for col in ("rebalance_pause_ms", "successor_assigned_ms", "survivors_pause_ms",
                    "rejoin_pause_ms", "expected_redelivered", "expected_lost"):
            got, want = t.loc[tid, col], s[col]
            assert (pd.isna(got) and want is None) or got == pytest.approx(want), (tid, col)
    none = t.loc[NONE_TRIAL.trial_id]
    assert pd.isna(none.commit) and pd.isna(none.redelivered) and pd.isna(none.reread_agrees)


def test_consumer_cells_split_by_commit(group_lab: dict[str, Any]) -> None:
    cells = group_lab["cells"]
    keyed = cells.assign(commit=cells["commit"].fillna("-")).set_index(
        ["profile", "fault", "acks", "commit"])
    assert sorted(keyed.index) == sorted([
        ("availability", "none", "all", "-"), ("durability", "kill-consumer", "all", "after"),
        ("durability", "kill-consumer", "all", "before"),
        ("durability", "leave-consumer", "all", "auto")])
    after = keyed.loc[("durability", "kill-consumer", "all", "after")]
    assert (after.trials, after.redelivered_sum, after.redelivered_median,
            after.redelivered_max) == (2, 6, 3.0, 4.0)
    assert after.rebalance_pause_ms_median == pytest.approx(1350.0)  # (1500 + 1200) / 2
    before = keyed.loc[("durability", "kill-consumer", "all", "before")]
    assert (before.trials, before.lost_unprocessed_sum, before.redelivered_sum) == (1, 3, 0)
    # the fake groups left the membership and the rebalance protocol at the clients' default
    assert not cells["static_membership"].fillna(False).any()
    assert cells["rebalance"].isna().all() and list(cells.columns) == list(af.CELL_SCHEMA)
    none = keyed.loc[("availability", "none", "all", "-")]
    assert pd.isna(none.redelivered_sum) and pd.isna(none.rebalance_pause_ms_max)


def test_group_lag_matches_the_files(group_lab: dict[str, Any]) -> None:
    lag = group_lab["lag"]
    for t in CONSUMER:
        want = pd.read_parquet(group_lab["dirs"][t.trial_id] / "group_lag.parquet")
        t0 = group_lab["docs"][t.trial_id]["events"]["t0_ns"]
        got = (lag[lag.trial_id == t.trial_id].sort_values(["sample_ts_ns", "partition"])
               .reset_index(drop=True))
        want = want.sort_values(["sample_ts_ns", "partition"]).reset_index(drop=True)
        for col in ("sample_ts_ns", "partition", "committed_offset", "log_end_offset",
                    "lag_msgs"):
            pd.testing.assert_series_equal(got[col], want[col], check_dtype=False)
        assert np.allclose(got["elapsed_s"], (got["sample_ts_ns"] - t0) / 1e9)
    ka1 = lag[lag.trial_id == KA1].groupby("elapsed_s")["lag_msgs"].sum()
    # the moved partitions' lag grows from the kill (1.5 s) until the successor resumes (3 s)
    assert ka1.loc[1.0] == 0 and ka1.loc[2.5] > ka1.loc[2.0] > 0 and ka1.loc[4.0] == 0


def test_a_consumer_trial_without_a_summary_commits_after() -> None:
    """A consumer trial that failed before its group started: no summary, the spec's null
    commit is the engine's default; a broker trial stays without consumer columns."""
    doc = {"spec": {"fault": "kill-consumer", "commit": None, "consumers": 3,
                    "session_timeout_ms": 6000, "auto_commit_interval_ms": 5000},
           "summary": {}, "_cell": {}}
    row = af._group_row(doc, None)
    assert (row["commit"], row["consumers"], row["session_timeout_ms"]) == ("after", 3, 6000)
    assert row["auto_commit_interval_ms"] is None and row["redelivered"] is None
    assert row["reread_agrees"] is None
    broker = af._group_row({"spec": {"fault": "sigkill-leader"}, "summary": {}}, None)
    assert set(broker.values()) == {None}
