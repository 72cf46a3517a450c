"""Lab run ids of DAG runs (pure: no Airflow needed)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from kafkalab.airflow.run_ids import (
    ONE_RUN_PER_NIGHT,
    RUN_PREFIXES,
    context_lab_run_id,
    dag_lab_run_id,
    lab_run_id,
    logical_date_iso,
    night_run_id,
    one_run_per_night,
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
    """``airflow dags test DAG 2026-11-18`` on the 22nd is ``manual__2026-11-22T…``: the lab
    run id carries the 18th (with the run id's digest, the experiments' rule: a later trigger
    is another experiment; the nightly's is the night's, below), so back-filled dates sort
    where they belong."""
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
    # the nightly's: the night's id (one lab run per night, below)
    assert context_lab_run_id(ctx) == lab_run_id(run.run_id, "nightly", night, per_night=True)
    assert context_lab_run_id(ctx, "nightly-fanout") == "nightly-fanout-20261118T000000Z"
    assert dag_lab_run_id(run.dag_id, run.run_id, night) == context_lab_run_id(ctx)
    experiment = _DagRun(run.run_id, night, now, "latency_experiment")
    assert context_lab_run_id({"dag_run": experiment, "logical_date": night}) == \
        lab_run_id(run.run_id, "experiment", night)
    # a manual run without a logical date (Airflow 3): the time it was triggered for
    manual = _DagRun("manual__2026-11-22T05:01:02.123456+00:00_AbCd1234", None, now)
    ctx = {"dag_run": manual, "logical_date": None}
    assert run_time(ctx) == now
    assert context_lab_run_id(ctx, "experiment") == lab_run_id(manual.run_id, "experiment")
    assert context_lab_run_id({}) is None and logical_date_iso({}) is None


# -- one lab run per night (issue 29 §3) ---------------------------------------------------

NIGHT = datetime(2026, 11, 18, tzinfo=UTC)
FIRST = "manual__2026-11-22T05:01:02.123456+00:00"
"""``airflow dags test nightly_latency_regression 2026-11-18`` on the 22nd..."""
SECOND = "manual__2026-11-29T19:40:00.654321+00:00"
"""... and again a week later (or a re-triggered, cleared or back-filled run of that night)."""


def _ctx(dag_id: str, run_id: str, logical_date: datetime | None,
         run_after: datetime | None = None) -> dict[str, object]:
    run = _DagRun(run_id, logical_date, run_after or datetime(2026, 11, 29, tzinfo=UTC), dag_id)
    return {"dag_run": run, "logical_date": logical_date}


def test_every_nightly_run_of_a_night_names_the_same_lab_run() -> None:
    """Scheduled, back-filled, re-triggered: one lab run per night, and one per sub-run."""
    ids = {context_lab_run_id(_ctx("nightly_latency_regression", rid, NIGHT))
           for rid in (FIRST, SECOND, "scheduled__2026-11-18T00:00:00+00:00",
                       "backfill__2026-11-18T00:00:00+00:00", "manual__2026-11-22T05:01:02_AbCd")}
    assert ids == {"nightly-20261118T000000Z"}
    for prefix in ("nightly-fanout", "nightly-faults", "nightly-versions"):
        first = context_lab_run_id(_ctx("nightly_latency_regression", FIRST, NIGHT), prefix)
        second = context_lab_run_id(_ctx("nightly_latency_regression", SECOND, NIGHT), prefix)
        assert first == second == f"{prefix}-20261118T000000Z"
    # the report's redirect and the callbacks compute it the same way
    assert dag_lab_run_id("nightly_latency_regression", SECOND, NIGHT) == "nightly-20261118T000000Z"
    assert dag_lab_run_id("nightly_latency_regression", SECOND,
                          "2026-11-18T00:00:00Z") == "nightly-20261118T000000Z"
    # the night is the logical date's, whole seconds, UTC
    late = datetime(2026, 11, 18, 2, 30, 0, 999, tzinfo=UTC)
    assert context_lab_run_id(_ctx("nightly_latency_regression", FIRST, late)) == \
        "nightly-20261118T023000Z" == night_run_id("nightly", late)


def test_two_triggers_of_an_experiment_are_two_experiments() -> None:
    """Every DAG but the nightly: its manual runs keep distinct ids, even for one logical
    date; a retry of one DAG run keeps its id."""
    for dag_id in sorted(set(RUN_PREFIXES) - ONE_RUN_PER_NIGHT):
        assert not one_run_per_night(dag_id)
        first = context_lab_run_id(_ctx(dag_id, FIRST, NIGHT))
        second = context_lab_run_id(_ctx(dag_id, SECOND, NIGHT))
        prefix = RUN_PREFIXES[dag_id]
        assert first is not None and second is not None and first != second
        assert re.fullmatch(rf"{prefix}-20261118T000000Z-[0-9a-f]{{6}}", first), first
        assert context_lab_run_id(_ctx(dag_id, FIRST, NIGHT)) == first  # a retry: the same
    assert {"nightly_latency_regression"} == ONE_RUN_PER_NIGHT


def test_a_nightly_run_without_a_logical_date_is_no_night() -> None:
    """Airflow 3's manual trigger without a logical date: stamped with its run_after, with
    the run id's digest (two such runs are two runs), never a night's id."""
    now = datetime(2026, 11, 29, 19, 40, 0, 654321, tzinfo=UTC)
    ctx = _ctx("nightly_latency_regression", SECOND, None, run_after=now)
    rid = context_lab_run_id(ctx)
    assert rid is not None and re.fullmatch(r"nightly-20261129T194000Z-[0-9a-f]{6}", rid), rid
    other = context_lab_run_id(_ctx("nightly_latency_regression",
                                    SECOND.replace("654321", "111111"), None, run_after=now))
    assert other != rid
    assert dag_lab_run_id("nightly_latency_regression", SECOND, now, per_night=False) == rid


def test_the_id_before_one_run_per_night_is_still_computable() -> None:
    """The report's redirect finds a night's page made before the rule by that id."""
    old = dag_lab_run_id("nightly_latency_regression", FIRST, NIGHT, per_night=False)
    assert re.fullmatch(r"nightly-20261118T000000Z-[0-9a-f]{6}", old), old
    assert lab_run_id(FIRST, "nightly", NIGHT) == old  # the experiments' rule


def test_a_night_needs_a_logical_date() -> None:
    with pytest.raises(ValueError, match="logical date"):
        lab_run_id(FIRST, "nightly", None, per_night=True)
    with pytest.raises(ValueError, match="not a date"):
        night_run_id("nightly", "yesterday")
    assert night_run_id("nightly", "2026-11-18T01:00:00+01:00") == "nightly-20261118T000000Z"
