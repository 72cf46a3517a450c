"""Lab run ids of DAG runs (pure: no Airflow needed)."""

from __future__ import annotations

import re

import pytest

from kafkalab.airflow.run_ids import RUN_PREFIXES, dag_lab_run_id, lab_run_id


@pytest.mark.parametrize(("airflow_run_id", "expected"), [
    ("scheduled__2026-11-21T00:00:00+00:00", "nightly-20261121T000000Z"),
    ("scheduled__2026-11-21T02:30:00+02:00", "nightly-20261121T003000Z"),
])
def test_lab_run_id_whole_seconds(airflow_run_id: str, expected: str) -> None:
    assert lab_run_id(airflow_run_id, "nightly") == expected


def test_lab_run_id_unique_and_path_safe() -> None:
    a = lab_run_id("manual__2026-11-22T00:52:39.019521+00:00", "experiment")
    b = lab_run_id("manual__2026-11-22T00:52:39.519521+00:00", "experiment")
    c = lab_run_id("my run/../../etc", "experiment")
    assert a != b and a.startswith("experiment-20261122T005239Z-")
    assert lab_run_id("manual__2026-11-22T00:52:39.019521+00:00", "experiment") == a
    for rid in (a, b, c):
        assert re.fullmatch(r"[A-Za-z0-9._-]+", rid) and ".." not in rid, rid
    assert "/" not in c


def test_dag_lab_run_id_uses_the_dag_prefix() -> None:
    rid = "scheduled__2026-11-21T00:00:00+00:00"
    assert RUN_PREFIXES["nightly_latency_regression"] == "nightly"
    assert dag_lab_run_id("nightly_latency_regression", rid) == "nightly-20261121T000000Z"
    assert dag_lab_run_id("some_other_dag", rid) == "some_other_dag-20261121T000000Z"
    assert dag_lab_run_id(None, rid) == "airflow-20261121T000000Z"
