"""Run ids: how a new one is made and the time it carries.

A lab run id is ``YYYYMMDDTHHMMSSZ-<6 hex>`` (UTC start, then randomness), so ids sort by
start time and are safe as file names. Ids of DAG runs are made from the Airflow run id
(:mod:`kafkalab.airflow.run_ids`) with the same time format after a prefix
(``nightly-20261121T000000Z``). A user may also pass any id of their own (``--run-id``).
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime

RUN_TIME_FORMAT = "%Y%m%dT%H%M%SZ"
"""The UTC time stamp in run ids (``20261121T000000Z``)."""

_LEADING_TIME = re.compile(r"^(\d{8}T\d{6}Z)")

MAX_RUN_ID_LENGTH = 128
"""The longest run id (it names files and directories)."""

_SAFE_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def format_run_time(ts: datetime) -> str:
    """``ts`` (UTC) as the stamp of a run id: ``20261121T000000Z``."""
    return ts.astimezone(UTC).strftime(RUN_TIME_FORMAT)


def new_run_id(now: datetime | None = None) -> str:
    """``YYYYMMDDTHHMMSSZ-<6 hex>``: sortable by start time, unique enough."""
    return f"{format_run_time(now or datetime.now(UTC))}-{os.urandom(3).hex()}"


def run_id_time(run_id: str) -> datetime | None:
    """The UTC time a run id starts with (as :func:`new_run_id` makes them), else None (also
    for digits that are no date, ``20261399T…``)."""
    m = _LEADING_TIME.match(run_id)
    if not m:
        return None
    try:
        return datetime.strptime(m.group(1), RUN_TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def run_id_problem(run_id: object) -> str | None:
    """What is wrong with ``run_id`` as a run id given by a user, or None when it is safe.

    A run id names files (``runs/<id>.json``) and Hive partitions (``run_id=<id>``): letters,
    digits, ``.``, ``_`` and ``-``, starting with a letter or digit, no ``..``, at most
    :data:`MAX_RUN_ID_LENGTH` characters (so ``../escaped`` or ``../alerts/state`` never
    leaves the data directory).
    """
    if not isinstance(run_id, str) or not run_id:
        return "a run id must be non-empty text"
    if len(run_id) > MAX_RUN_ID_LENGTH:
        return f"a run id has at most {MAX_RUN_ID_LENGTH} characters, got {len(run_id)}"
    if not _SAFE_RUN_ID.fullmatch(run_id) or ".." in run_id:
        return (f"{run_id[:40]!r} is not a run id: use letters, digits, '.', '_' and '-' "
                "(starting with a letter or digit, no '..')")
    return None


__all__ = ["MAX_RUN_ID_LENGTH", "RUN_TIME_FORMAT", "format_run_time", "new_run_id",
           "run_id_problem", "run_id_time"]
