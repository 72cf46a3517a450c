"""Lab run ids of DAG runs: a deterministic, path-safe id derived from the DAG run's logical
date (the night it measures) and its Airflow run id.

Airflow 3 names a run after the time it was *triggered* (``manual__<run_after>``): ``airflow
dags test DAG 2026-11-18`` on the 22nd is ``manual__2026-11-22T…``. The lab run id carries
the logical date instead (``nightly-20261118T000000Z-<6 hex>``), so back-filled dates sort
where they belong; manual runs without a logical date use ``run_after`` (:func:`run_time`).

Pure functions; safe at DAG-parse time.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from kafkalab.run_ids import format_run_time

RUN_PREFIXES: dict[str, str] = {
    "latency_experiment": "experiment",
    "nightly_latency_regression": "nightly",
    "load_experiment": "load",
    "resilience_experiment": "faults",
    "startup_experiment": "startup",
    "version_matrix": "versions",
}
"""Prefix of the lab run ids of each DAG (``nightly-20261121T000000Z``)."""

NIGHTLY_FANOUT_PREFIX = "nightly-fanout"
"""Prefix of the load run of the nightly's fan-out cell (``nightly-fanout-20261121T000000Z``),
a run of its own beside the nightly's latency run."""

NIGHTLY_FAULTS_PREFIX = "nightly-faults"
"""Prefix of the fault run of the nightly's fault trial (``nightly-faults-20261121T000000Z``),
a run of its own beside the nightly's latency and fan-out runs."""

NIGHTLY_VERSIONS_PREFIX = "nightly-versions"
"""Prefix of the nightly's version matrix (``nightly-versions-20261121T000000Z``: its matrix id,
and of its runs ``…-kafka-<version>``, ``…-startup-<version>``), when its param names versions."""

_TS_RE = re.compile(
    r"(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})T(?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})"
    r"(?P<frac>\.\d+)?(?P<tz>Z|[+-]\d{2}:?\d{2})?"
)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _as_utc(value: datetime | str | None) -> datetime | None:
    """``value`` (an aware datetime, a naive one taken as UTC, or an ISO-8601 string) in UTC;
    None for None or a string that is no date."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def lab_run_id(airflow_run_id: str, prefix: str = "airflow",
               logical_date: datetime | str | None = None) -> str:
    """Turn an Airflow run id (and the run's logical date) into a path-safe lab run id
    (deterministic).

    Without ``logical_date`` the time comes from the run id:
    ``scheduled__2026-11-21T00:00:00+00:00`` -> ``<prefix>-20261121T000000Z``. When the run
    id holds more than a whole-second timestamp (microseconds, a random suffix from the API,
    another time zone) a 6-hex digest of the full id is appended so two runs never share a
    lab run id; an id without a timestamp is slugged (``<prefix>-<slug>-<hash>``).

    With ``logical_date`` (:func:`run_time` of the run: its logical date, else its
    ``run_after``) the stamp is that time's, whole seconds, UTC; the digest is left off only
    when the run id says exactly that (a scheduled run: ``<prefix>-20261121T000000Z``, the
    same id as without it), so ``manual__2026-11-22T…`` of logical date 2026-11-18 is
    ``<prefix>-20261118T000000Z-<hash>``.

    Retries of one DAG run map to the same lab run id, so a retried run replaces its rows.
    """
    prefix = _UNSAFE.sub("-", prefix).strip("-.") or "airflow"
    digest = hashlib.sha1(airflow_run_id.encode("utf-8")).hexdigest()[:6]
    when = _as_utc(logical_date)
    if when is not None:
        stamp = format_run_time(when)
        from_id = lab_run_id(airflow_run_id, prefix)
        clean = f"{prefix}-{stamp}"
        return clean if from_id == clean else f"{clean}-{digest}"
    m = _TS_RE.search(airflow_run_id)
    if m:
        ts = datetime(int(m["y"]), int(m["m"]), int(m["d"]), int(m["H"]), int(m["M"]), int(m["S"]),
                      tzinfo=UTC)
        tz = m["tz"]
        if tz and tz != "Z":
            sign = 1 if tz[0] == "+" else -1
            hh, mm = int(tz[1:3]), int(tz[-2:])
            ts = ts - sign * timedelta(hours=hh, minutes=mm)
        stamp = format_run_time(ts)
        kind, _, _ = airflow_run_id.partition("__")
        clean_id = (m.start() == len(kind) + 2 and m.end() == len(airflow_run_id)
                    and not (m["frac"] and int(m["frac"][1:] or 0)))
        return f"{prefix}-{stamp}" if clean_id else f"{prefix}-{stamp}-{digest}"
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", airflow_run_id).strip("-")[:48] or "run"
    return f"{prefix}-{slug}-{digest}"


def dag_lab_run_id(dag_id: str | None, airflow_run_id: str,
                   logical_date: datetime | str | None = None) -> str:
    """The lab run id of a run of ``dag_id``: :func:`lab_run_id` with the DAG's prefix from
    :data:`RUN_PREFIXES` (a DAG not listed there prefixes with its own id). Pass the run's
    ``logical_date`` (:func:`run_time`) as the DAG's tasks do, or the id may differ."""
    prefix = RUN_PREFIXES.get(str(dag_id), str(dag_id or "airflow"))
    return lab_run_id(airflow_run_id, prefix, logical_date)


def run_time(context: Mapping[str, Any]) -> datetime | None:
    """The time a DAG run measures, from a task (or callback) context: its logical date, else
    (a manual run without one, Airflow 3) the dag run's ``run_after``; None when the context
    has neither."""
    dag_run = context.get("dag_run")
    for value in (context.get("logical_date"), getattr(dag_run, "logical_date", None),
                  getattr(dag_run, "run_after", None)):
        when = _as_utc(value)
        if when is not None:
            return when
    return None


def logical_date_iso(context: Mapping[str, Any]) -> str | None:
    """:func:`run_time` of the context as ISO 8601 UTC (``2026-11-18T00:00:00+00:00``): what a
    run manifest records as ``logical_date``."""
    when = run_time(context)
    return when.isoformat() if when is not None else None


def context_lab_run_id(context: Mapping[str, Any], prefix: str | None = None) -> str | None:
    """The lab run id of the DAG run of a task or callback context: :func:`lab_run_id` of its
    run id, ``prefix`` (default the DAG's, :data:`RUN_PREFIXES`) and :func:`run_time`. None
    when the context has no run id."""
    dag_run = context.get("dag_run")
    airflow_run_id = getattr(dag_run, "run_id", None) or context.get("run_id")
    if not airflow_run_id:
        return None
    if prefix is None:
        dag = context.get("dag")
        dag_id = getattr(dag, "dag_id", None) or getattr(dag_run, "dag_id", None)
        return dag_lab_run_id(dag_id, str(airflow_run_id), run_time(context))
    return lab_run_id(str(airflow_run_id), prefix, run_time(context))


__all__ = ["NIGHTLY_FANOUT_PREFIX", "NIGHTLY_FAULTS_PREFIX", "NIGHTLY_VERSIONS_PREFIX",
           "RUN_PREFIXES",
           "context_lab_run_id", "dag_lab_run_id", "lab_run_id", "logical_date_iso",
           "run_time"]
