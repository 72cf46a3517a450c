"""Lab run ids of DAG runs (pure: no Airflow needed)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from kafkalab.airflow.run_ids import (
    RUN_PREFIXES,
    context_lab_run_id,
    dag_lab_run_id,
    lab_run_id,
    logical_date_iso,
    run_time,
)


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


def test_the_logical_date_names_the_run_not_the_trigger_time() -> None:
    """``airflow dags test nightly 2026-11-18`` on the 22nd is ``manual__2026-11-22T…``: the
    lab run id carries the 18th (with the run id's digest: a later test of the same night is
    another run), so back-filled nights sort where they belong."""
    triggered = "manual__2026-11-22T05:01:02.123456+00:00"
    rid = lab_run_id(triggered, "nightly", datetime(2026, 11, 18, tzinfo=UTC))
    assert re.fullmatch(r"nightly-20261118T000000Z-[0-9a-f]{6}", rid), rid
    assert rid == lab_run_id(triggered, "nightly", "2026-11-18T00:00:00+00:00")  # ISO text
    other = lab_run_id("manual__2026-11-22T06:00:00.5+00:00", "nightly",
                       datetime(2026, 11, 18, tzinfo=UTC))
    assert other != rid and other.startswith("nightly-20261118T000000Z-")
    nights = [lab_run_id(triggered.replace("05:01", f"05:0{3 - i}"), "nightly",  # newest first
                         datetime(2026, 11, 18 + i, tzinfo=UTC)) for i in range(4)]
    assert sorted(nights) == nights  # by the night measured, whatever the trigger time


def test_a_scheduled_run_keeps_its_clean_id() -> None:
    """Its run id says its logical date: the same id with or without it."""
    rid = "scheduled__2026-11-21T00:00:00+00:00"
    assert lab_run_id(rid, "nightly", datetime(2026, 11, 21, tzinfo=UTC)) == \
        "nightly-20261121T000000Z" == lab_run_id(rid, "nightly")
    naive = datetime(2026, 11, 21, 1, 0, 0)  # taken as UTC; not what the run id says
    assert re.fullmatch(r"nightly-20261121T010000Z-[0-9a-f]{6}", lab_run_id(rid, "nightly", naive))


class _DagRun:
    def __init__(self, run_id: str, logical_date: datetime | None, run_after: datetime,
                 dag_id: str = "nightly_latency_regression") -> None:
        self.run_id, self.logical_date, self.run_after = run_id, logical_date, run_after
        self.dag_id = dag_id


def test_context_lab_run_id_uses_the_logical_date_else_run_after() -> None:
    night = datetime(2026, 11, 18, tzinfo=UTC)
    now = datetime(2026, 11, 22, 5, 1, 2, 123456, tzinfo=UTC)
    run = _DagRun("manual__2026-11-22T05:01:02.123456+00:00", night, now)
    ctx = {"dag_run": run, "logical_date": night}
    assert run_time(ctx) == night
    assert logical_date_iso(ctx) == "2026-11-18T00:00:00+00:00"
    assert context_lab_run_id(ctx) == lab_run_id(run.run_id, "nightly", night)
    assert context_lab_run_id(ctx, "nightly-fanout") == lab_run_id(run.run_id, "nightly-fanout",
                                                                   night)
    assert dag_lab_run_id(run.dag_id, run.run_id, night) == context_lab_run_id(ctx)
    # a manual run without a logical date (Airflow 3): the time it was triggered for
    manual = _DagRun("manual__2026-11-22T05:01:02.123456+00:00_AbCd1234", None, now)
    ctx = {"dag_run": manual, "logical_date": None}
    assert run_time(ctx) == now
    assert context_lab_run_id(ctx, "experiment") == lab_run_id(manual.run_id, "experiment")
    assert context_lab_run_id({}) is None and logical_date_iso({}) is None
