"""Run ids (kafkalab.run_ids): made sortable by start time, and their time read back."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from kafkalab.run_ids import format_run_time, new_run_id, run_id_time


def test_new_ids_carry_their_start_and_sort_by_it() -> None:
    t = datetime(2026, 11, 21, 23, 59, 58, tzinfo=UTC)
    first, second = new_run_id(t), new_run_id(t + timedelta(seconds=2))
    assert re.fullmatch(r"20261121T235958Z-[0-9a-f]{6}", first)
    assert first < second and run_id_time(first) == t
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", new_run_id())


def test_time_is_utc_and_only_read_from_the_start() -> None:
    cet = timezone(timedelta(hours=1))
    assert format_run_time(datetime(2026, 11, 22, 0, 30, tzinfo=cet)) == "20261121T233000Z"
    assert run_id_time("itest-run") is None
    assert run_id_time("nightly-20261121T000000Z") is None  # a DAG run: its manifest says when
    assert run_id_time("20261399T000000Z-abcdef") is None  # digits that are no date
