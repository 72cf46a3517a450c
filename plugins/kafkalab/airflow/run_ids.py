"""Lab run ids of DAG runs: a deterministic, path-safe id derived from the DAG run's logical
date (the night it measures) and its Airflow run id.

Airflow 3 names a run after the time it was *triggered* (``manual__<run_after>``): ``airflow
dags test DAG 2026-11-18`` on the 22nd is ``manual__2026-11-22T…``. The lab run id carries
the logical date instead, so back-filled dates sort where they belong; manual runs without a
logical date use ``run_after`` (:func:`run_time`).

**One lab run per night.** A DAG of :data:`ONE_RUN_PER_NIGHT` (the nightly) measures *a
night*: every DAG run of it with a logical date (the scheduled one, a back-fill, a cleared or
re-triggered run, ``airflow dags test nightly_latency_regression 2026-11-18`` run twice) has
the night's id, ``nightly-20261118T000000Z``, and so do its sub-runs
(``nightly-fanout-…``, ``nightly-faults-…``, ``nightly-versions-…``). A second DAG run of a
night therefore *re-opens* the night's lab run and replaces what it re-measures, as
re-running a cell does (:func:`kafkalab.runner.start_run`); trends and drift baselines see
the night once. A nightly run without a logical date (Airflow 3's manual trigger without
one) measures no particular night: it keeps the digest rule below.

**Experiments stay distinct.** Every other DAG (``latency_experiment``, ``load_experiment``,
``resilience_experiment``, ``startup_experiment``, ``version_matrix``: triggered by a user
from the form) is an experiment: two triggers are two experiments, even with one logical
date, each with its own lab run (``experiment-20261122T005239Z-802579``), since they are
asked different questions (the form's params) and nothing compares experiments night by
night. Retries and cleared tasks of *one* DAG run keep its id, so a retried cell replaces
exactly its own rows.

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

ONE_RUN_PER_NIGHT: frozenset[str] = frozenset({"nightly_latency_regression"})
"""The DAGs whose runs with a logical date share one lab run per logical date (see the
module): the nightly. Every other DAG's runs are experiments, one lab run each."""

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
               logical_date: datetime | str | None = None, *, per_night: bool = False) -> str:
    """Turn an Airflow run id (and the run's logical date) into a path-safe lab run id
    (deterministic).

    ``per_night`` (a run of a DAG of :data:`ONE_RUN_PER_NIGHT` that has a logical date, as
    :func:`dag_lab_run_id` and :func:`context_lab_run_id` decide): the id is the night's,
    ``<prefix>-<logical date>`` (:func:`night_run_id`), whatever the Airflow run id, so every
    DAG run of that night re-opens one lab run.

    Otherwise, without ``logical_date`` the time comes from the run id:
    ``scheduled__2026-11-21T00:00:00+00:00`` -> ``<prefix>-20261121T000000Z``. When the run
    id holds more than a whole-second timestamp (microseconds, a random suffix from the API,
    another time zone) a 6-hex digest of the full id is appended so two runs never share a
    lab run id; an id without a timestamp is slugged (``<prefix>-<slug>-<hash>``).

    With ``logical_date`` (:func:`run_time` of the run: its logical date, else its
    ``run_after``) the stamp is that time's, whole seconds, UTC; the digest is left off only
    when the run id says exactly that (a scheduled run: ``<prefix>-20261121T000000Z``, the
    same id as without it), so an experiment's ``manual__2026-11-22T…`` of logical date
    2026-11-18 is ``<prefix>-20261118T000000Z-<hash>``.

    Raises:
        ValueError: ``per_night`` without a logical date (a night needs one).
    """
    prefix = _UNSAFE.sub("-", prefix).strip("-.") or "airflow"
    digest = hashlib.sha1(airflow_run_id.encode("utf-8")).hexdigest()[:6]
    when = _as_utc(logical_date)
    if per_night:
        if when is None:
            raise ValueError(f"one lab run per night needs the run's logical date, got "
                             f"{logical_date!r}")
        return night_run_id(prefix, when)
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


def night_run_id(prefix: str, logical_date: datetime | str) -> str:
    """The lab run id of a night: ``<prefix>-<logical date, whole seconds, UTC>``
    (``nightly-20261118T000000Z``, ``nightly-fanout-20261118T000000Z``).

    Raises:
        ValueError: ``logical_date`` is no date.
    """
    when = _as_utc(logical_date)
    if when is None:
        raise ValueError(f"not a date: {logical_date!r}")
    prefix = _UNSAFE.sub("-", prefix).strip("-.") or "airflow"
    return f"{prefix}-{format_run_time(when)}"


def one_run_per_night(dag_id: str | None) -> bool:
    """Whether the runs of ``dag_id`` with a logical date share one lab run per night
    (:data:`ONE_RUN_PER_NIGHT`)."""
    return str(dag_id) in ONE_RUN_PER_NIGHT


def dag_lab_run_id(dag_id: str | None, airflow_run_id: str,
                   logical_date: datetime | str | None = None, *,
                   per_night: bool | None = None) -> str:
    """The lab run id of a run of ``dag_id``: :func:`lab_run_id` with the DAG's prefix from
    :data:`RUN_PREFIXES` (a DAG not listed there prefixes with its own id). Pass the run's
    ``logical_date`` as the DAG's tasks do (:func:`context_lab_run_id`), or the id may
    differ. ``per_night`` (default: ``dag_id`` is one of :data:`ONE_RUN_PER_NIGHT` and a
    ``logical_date`` is given): the night's id; pass False for a nightly run that has no
    logical date (``logical_date`` then being its ``run_after``)."""
    prefix = RUN_PREFIXES.get(str(dag_id), str(dag_id or "airflow"))
    if per_night is None:
        per_night = one_run_per_night(dag_id) and _as_utc(logical_date) is not None
    return lab_run_id(airflow_run_id, prefix, logical_date, per_night=per_night)


def run_time(context: Mapping[str, Any]) -> datetime | None:
    """The time a DAG run measures, from a task (or callback) context: its logical date, else
    (a manual run without one, Airflow 3) the dag run's ``run_after``; None when the context
    has neither."""
    when = logical_date_of(context)
    if when is not None:
        return when
    return _as_utc(getattr(context.get("dag_run"), "run_after", None))


def logical_date_of(context: Mapping[str, Any]) -> datetime | None:
    """The logical date of a context's DAG run (never its ``run_after``); None without one."""
    dag_run = context.get("dag_run")
    for value in (context.get("logical_date"), getattr(dag_run, "logical_date", None)):
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
    run id, ``prefix`` (default the DAG's, :data:`RUN_PREFIXES`) and :func:`run_time`; the
    night's id (:func:`night_run_id`) when its DAG is one of :data:`ONE_RUN_PER_NIGHT` and the
    run has a logical date, whatever ``prefix`` (the nightly's fan-out, fault and version
    runs are the night's too). None when the context has no run id."""
    dag_run = context.get("dag_run")
    airflow_run_id = getattr(dag_run, "run_id", None) or context.get("run_id")
    if not airflow_run_id:
        return None
    dag = context.get("dag")
    dag_id = getattr(dag, "dag_id", None) or getattr(dag_run, "dag_id", None)
    per_night = one_run_per_night(dag_id) and logical_date_of(context) is not None
    if prefix is None:
        return dag_lab_run_id(dag_id, str(airflow_run_id), run_time(context),
                              per_night=per_night)
    return lab_run_id(str(airflow_run_id), prefix, run_time(context), per_night=per_night)


__all__ = ["NIGHTLY_FANOUT_PREFIX", "NIGHTLY_FAULTS_PREFIX", "NIGHTLY_VERSIONS_PREFIX",
           "ONE_RUN_PER_NIGHT", "RUN_PREFIXES",
           "context_lab_run_id", "dag_lab_run_id", "lab_run_id", "logical_date_iso", "logical_date_of",
           "night_run_id", "one_run_per_night", "run_time"]
