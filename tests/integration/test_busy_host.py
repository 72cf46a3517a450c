"""A busy host is not a regression, on a real broker: a cell measured while processes outside
the lab spin on every core is marked busy, and the night it belongs to raises no drift.

The spinners are this test's children, not the measuring ``kafkalab run`` process's: for the
lab they are other work sharing the machine. ``cpu_count + 1`` of them keep every core busy
whatever the machine's speed, so the cell's ``host_other_cpu_pct`` is decided by the CPU they
took (most of the machine's), far above the 30 % limit, not by how fast anything ran.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkalab.cluster import cluster_down, cluster_up
from kafkalab.cluster.descriptor import ClusterDescriptor, save_descriptor
from kafkalab.drift import BusyHostRule, run_drift
from kafkalab.drift.records import SERIES_COLUMNS
from kafkalab.store import LabData
from tests.labs import prepare_lab

pytestmark = pytest.mark.integration

BUSY_BROKER_PORT = 23592
BUSY_CONTROLLER_PORT = 23692
"""This module's own KRaft node (its ports used by no other test): the session's node may
be measured by another test process at the same time, and this one loads the machine."""

KAFKALAB = [sys.executable, "-m", "kafkalab.cli"]
RUN_ID = "20261121T010203Z-b05y00"
BASELINE = ("20261118T010203Z-b05y01", "20261119T010203Z-b05y02", "20261120T010203Z-b05y03")
WORKLOAD = """\
name: busy-host-itest
description: One confluent-kafka 1 KB cell, no first-message probe.
scenarios: [confluent-kafka]
payloads: [1kb]
profiles: [latency]
encoding: raw
messages: 200
warmup_messages: 10
first_message_probes: 0
"""


@pytest.fixture(scope="module")
def busy_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterDescriptor]:
    """A one-node KRaft cluster of this module's own, stopped after it."""
    lab = prepare_lab(tmp_path_factory.mktemp("lab-busy"))
    try:
        yield cluster_up("kraft", 1, lab_dir=lab, base_port=BUSY_BROKER_PORT,
                         control_port=BUSY_CONTROLLER_PORT)
    finally:
        cluster_down(lab)


@pytest.fixture
def spinners() -> Iterator[list[subprocess.Popen[bytes]]]:
    """``cpu_count + 1`` busy loops outside the lab, stopped (by their pids) after the test."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range((os.cpu_count() or 1) + 1)]
    try:
        yield procs
    finally:
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)


def _p50_row(data: Path, run_id: str) -> dict[str, Any]:
    """The run's aggregate row as the Spark job writes it, for the columns drift needs: the
    series columns from the cell's samples and the p50 of its measured messages (nearest
    rank; what ``aggregate_metrics`` computes, without a Spark session)."""
    lab = LabData(data)
    (path,) = lab.run_sample_files(run_id)
    df = pq.read_table(path).to_pandas()
    measured = df[(df["sample_kind"] == "message") & ~df["is_warmup"].astype(bool)
                  & df["status"].isin(["ok", "late"])]
    lat = sorted(measured["e2e_latency_ms"].dropna())
    assert len(lat) >= 150, f"only {len(lat)} measured messages"
    first = df.iloc[0]
    row = {c: (first[c].item() if hasattr(first[c], "item") else first[c])
           for c in SERIES_COLUMNS if c in df.columns}
    row.update(run_date="2026-11-21", broker_is_emulator=False, sent_count=len(measured),
               lost_count=0, e2e_latency_ms_p50=float(lat[(len(lat) + 1) // 2 - 1]))
    return row


def _write_night(data: Path, run_id: str, row: dict[str, Any],
                 manifest: dict[str, Any] | None) -> None:
    """A night's aggregates, manifest (when given) and passed validation."""
    d = data / "aggregates" / f"run_id={run_id}"
    d.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(pd.DataFrame([row]), preserve_index=False),
                   d / "part-00000.parquet")
    if manifest is not None:
        (data / "runs" / f"{run_id}.json").write_text(json.dumps(manifest))
    (data / "validation").mkdir(parents=True, exist_ok=True)
    (data / "validation" / f"{run_id}.json").write_text(json.dumps({"success": True}))


def _quiet_nights(data: Path, row: dict[str, Any]) -> None:
    """Three earlier quiet nights of the same series, each 4x faster than the loaded one:
    against them the loaded night would be a drift, were it judged."""
    quiet_host = {"host_other_cpu_pct": 2.0, "host_cpu_pct": 30.0, "lab_cpu_pct": 28.0,
                  "steal_pct": 0.0, "run_queue_avg": 0.5, "host_window_s": 3.0, "cpu_count": 2}
    for i, rid in enumerate(BASELINE):
        p50 = row["e2e_latency_ms_p50"] / 4 * (1 + 0.01 * i)
        manifest = {"schema_version": 2, "run_id": rid, "status": "complete",
                    "started_at": f"2026-11-{18 + i}T01:02:03+00:00", "stale_outputs": [],
                    "cells": [{"scenario": row["scenario"], "payload": row["payload"],
                               "profile": row["profile"], "status": "complete", "rows": 210,
                               "host": quiet_host}]}
        _write_night(data, rid, {**row, "e2e_latency_ms_p50": p50}, manifest)


def test_a_cell_measured_on_a_loaded_host_is_marked_and_raises_no_drift(
        busy_cluster: ClusterDescriptor, tmp_path: Path,
        spinners: list[subprocess.Popen[bytes]]) -> None:
    data, desc, workload = tmp_path / "data", tmp_path / "kraft.yaml", tmp_path / "w.yaml"
    save_descriptor(busy_cluster, desc)
    workload.write_text(WORKLOAD)
    done = subprocess.run([*KAFKALAB, "run", "--workload", str(workload), "--run-id", RUN_ID,
                           "--cluster", str(desc), "--data-dir", str(data)],
                          capture_output=True, text=True, cwd=tempfile.gettempdir(),
                          timeout=600, check=False)
    for p in spinners:  # the load lasted the whole run: stop it before judging
        p.send_signal(signal.SIGKILL)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    manifest = LabData(data).manifest(RUN_ID)
    assert manifest is not None
    (cell,) = manifest["cells"]
    host = cell["host"]
    assert host is not None, cell
    limit = BusyHostRule().max_other_cpu_pct
    assert limit is not None and host["host_other_cpu_pct"] >= limit, host
    assert host["lab_cpu_pct"] > 0, host  # the client and the broker are the lab's, not others'
    assert host["run_queue_avg"] is not None and host["cpu_count"] == os.cpu_count()

    row = _p50_row(data, RUN_ID)
    _write_night(data, RUN_ID, row, None)
    _quiet_nights(data, row)
    records, _ = run_drift(data, RUN_ID, require_run=True)
    assert not records["is_drift"].astype(bool).any(), records[["metric", "verdict", "note"]]
    rec = records[records["metric"] == "e2e_latency_ms_p50"].iloc[0]
    assert rec["verdict"] == "busy_host" and bool(rec["host_busy"]), rec.to_dict()
    assert "would have said drift" in rec["note"], rec["note"]
    # the same night with the busy rule off is a drift: the mark is what spares it
    off = tmp_path / "drift-off.yaml"
    off.write_text("busy_host:\n  enabled: false\n")
    judged, _ = run_drift(data, RUN_ID, off, require_run=True)
    p50 = judged[judged["metric"] == "e2e_latency_ms_p50"].iloc[0]
    assert p50["verdict"] == "drift", p50.to_dict()
