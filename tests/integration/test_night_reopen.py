"""One lab run per night (issue 29 §3), against real parts: the nightly's own task functions
(:mod:`kafkalab.airflow.tasks`: ``prepare_run``, ``measure_cell``, ``close_run``) with the
lab run id its ``name_run`` task gives (:func:`kafkalab.airflow.run_ids.context_lab_run_id`),
a real HTTP server and the session's real KRaft node (broker 26092, controller 26192:
``tests/integration/conftest.py``), Parquet files in a temporary data dir.

The night 2026-11-18 is run three times, as ``airflow dags test nightly_latency_regression
2026-11-18`` run again (or a re-triggered, cleared or back-filled DAG run) would: each DAG run
has its own Airflow run id and the same logical date.

1. run A measures ``rest`` and ``confluent-kafka``;
2. run B (another Airflow run id) re-measures ``confluent-kafka`` only: the night still has
   one lab run, B's rows replace A's for that cell, A's ``rest`` cell (not re-measured by B)
   stays as A measured it, and the manifest says it was re-opened;
3. run C asks for other settings (``messages``): the night is measured anew under its id, A's
   and B's rows are set aside (hidden, never read), and only C's cells are the night's.

Runtime ~20-40 s (five cells of a few dozen messages; the session cluster's start when it is
the first test of its step).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kafkalab.airflow import tasks
from kafkalab.airflow.run_ids import context_lab_run_id, logical_date_iso
from kafkalab.store import LabData

DAG = "nightly_latency_regression"
NIGHT = datetime(2026, 11, 18, tzinfo=UTC)
RUN_A = "manual__2026-11-22T05:01:02.123456+00:00"
RUN_B = "manual__2026-11-29T19:40:00.654321+00:00"
RUN_C = "manual__2026-11-30T01:02:03.000001+00:00"
WARMUP = 2
"""Warm-up messages a cell: its samples file holds them as rows too."""


class _Named:
    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


def _context(airflow_run_id: str) -> dict[str, Any]:
    """A task context of a nightly DAG run of the night (what the task functions' callers read)."""
    return {"dag": _Named(dag_id=DAG), "logical_date": NIGHT,
            "dag_run": _Named(run_id=airflow_run_id, dag_id=DAG, logical_date=NIGHT,
                              run_after=datetime.now(UTC))}


def _dag_run(airflow_run_id: str, params: dict[str, Any]) -> tuple[str, int, dict[str, Any]]:
    """One nightly DAG run's latency part, as its tasks call the task functions (the mapped
    cells one after the other). Returns the lab run id, the wall-clock start (ns) and
    ``close_run``'s result."""
    ctx = _context(airflow_run_id)
    run_id = context_lab_run_id(ctx)
    assert run_id is not None
    started_ns = datetime.now(UTC).timestamp() * 1e9
    cells = tasks.prepare_run(params, run_id, command=f"airflow dag {DAG} run {airflow_run_id}",
                              logical_date=logical_date_iso(ctx), supersede=True)
    for cell in cells:
        assert tasks.measure_cell(params, run_id, cell)["status"] == "complete", cell
    return run_id, int(started_ns), tasks.close_run(run_id)


def _rows(lab: LabData, run_id: str, scenario: str) -> tuple[int, int]:
    """How many rows the cell's samples file holds (warm-up included), and the earliest
    row's wall clock (ns)."""
    files = [f for f in lab.run_sample_files(run_id) if f"part-{scenario}-" in f.name]
    assert len(files) == 1, files
    table = pq.read_table(files[0], columns=["wall_ts_ns"])
    return table.num_rows, int(min(table.column("wall_ts_ns").to_pylist()))


def _night_runs(lab: LabData) -> list[str]:
    return sorted(r for r in lab.manifests() if "20261118" in r)


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LabData:
    data = LabData(tmp_path / "data")
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(data.root))
    return data


def test_a_night_run_twice_is_one_lab_run_whose_re_measured_rows_replace_the_first(
        lab: LabData, desc: Path) -> None:
    params = {"workload": "seed000", "scenarios": ["rest", "confluent-kafka"],
              "payloads": ["1kb"], "profiles": ["latency"], "messages": 20,
              "warmup_messages": WARMUP, "first_message_probes": 0, "consumer_mode": "assign",
              "cluster_descriptor": str(desc)}

    # ---- run A: both cells
    run_a, _, closed_a = _dag_run(RUN_A, params)
    assert run_a == "nightly-20261118T000000Z" and closed_a["status"] == "complete"
    first = lab.manifest(run_a)
    assert first is not None and first["reopened_at"] == []
    rest_rows_a, rest_first_a = _rows(lab, run_a, "rest")
    kafka_rows_a, _ = _rows(lab, run_a, "confluent-kafka")
    assert rest_rows_a == kafka_rows_a == 20 + WARMUP

    # ---- run B: the same night again, re-measuring one cell
    run_b, b_started_ns, closed_b = _dag_run(RUN_B, {**params, "scenarios": ["confluent-kafka"]})
    assert run_b == run_a and _night_runs(lab) == [run_a]  # one lab run for the night
    assert closed_b["status"] == "complete"
    kafka_rows_b, kafka_first_b = _rows(lab, run_a, "confluent-kafka")
    assert kafka_rows_b == 20 + WARMUP and kafka_first_b >= b_started_ns  # B's rows, in place of A's
    assert _rows(lab, run_a, "rest") == (rest_rows_a, rest_first_a)  # not re-measured: A's
    assert len(lab.run_sample_files(run_a)) == 2
    second = lab.manifest(run_a)
    assert second is not None
    assert second["started_at"] == first["started_at"]  # its rows live under that run date
    assert second["ended_at"] > first["ended_at"] and len(second["reopened_at"]) == 1
    assert second["command"] == f"airflow dag {DAG} run {RUN_B}"
    assert second["logical_date"] == "2026-11-18T00:00:00+00:00"
    cells = {c["scenario"]: c for c in second["cells"]}
    assert set(cells) == {"rest", "confluent-kafka"}
    assert cells["rest"]["measured_at"] < second["reopened_at"][0] < \
        cells["confluent-kafka"]["measured_at"]
    assert lab.run_state(run_a) == "complete"

    # ---- run C: the night asked with other settings: measured anew, the earlier set aside
    run_c, c_started_ns, closed_c = _dag_run(RUN_C, {**params, "scenarios": ["rest"],
                                                     "messages": 30})
    assert run_c == run_a and _night_runs(lab) == [run_a] and closed_c["status"] == "complete"
    files = lab.run_sample_files(run_a)
    assert [f.name for f in files] == ["part-rest-1kb-latency.parquet"], files
    rows_c, first_c = _rows(lab, run_a, "rest")
    assert rows_c == 30 + WARMUP and first_c >= c_started_ns
    hidden = sorted(p.name for p in lab.samples_dir.rglob(".superseded-*"))
    assert len(hidden) == 2, hidden  # A's rest cell, B's confluent-kafka cell: kept, unread
    third = lab.manifest(run_a)
    assert third is not None and [c["scenario"] for c in third["cells"]] == ["rest"]
    assert third["scenarios"] == ["rest"] and third["workload"]["messages"] == 30
    assert len(third["reopened_at"]) == 2
    kept = list(lab.run_work_dir(run_a).glob("superseded-*/manifest.json"))
    assert len(kept) == 1 and '"messages": 20' in kept[0].read_text()  # B's manifest, kept
