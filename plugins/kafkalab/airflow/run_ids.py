"""Lab run ids of DAG runs: a deterministic, path-safe id derived from the Airflow run id.

Pure functions; safe at DAG-parse time.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime, timedelta

from kafkalab.run_ids import format_run_time

RUN_PREFIXES: dict[str, str] = {
    "latency_experiment": "experiment",
    "nightly_latency_regression": "nightly",
    "load_experiment": "load",
    "resilience_experiment": "faults",
}
"""Prefix of the lab run ids of each DAG (``nightly-20261121T000000Z``)."""

NIGHTLY_FANOUT_PREFIX = "nightly-fanout"
"""Prefix of the load run of the nightly's fan-out cell (``nightly-fanout-20261121T000000Z``),
a run of its own beside the nightly's latency run."""

NIGHTLY_FAULTS_PREFIX = "nightly-faults"
"""Prefix of the fault run of the nightly's fault trial (``nightly-faults-20261121T000000Z``),
a run of its own beside the nightly's latency and fan-out runs."""

_TS_RE = re.compile(
    r"(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})T(?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})"
    r"(?P<frac>\.\d+)?(?P<tz>Z|[+-]\d{2}:?\d{2})?"
)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def lab_run_id(airflow_run_id: str, prefix: str = "airflow") -> str:
    """Turn an Airflow run id into a path-safe lab run id (deterministic).

    ``scheduled__2026-11-21T00:00:00+00:00`` -> ``<prefix>-20261121T000000Z``. When the run id
    holds more than a whole-second timestamp (microseconds, a random suffix from the API,
    another time zone) a 6-hex digest of the full id is appended so two runs never share a
    lab run id; an id without a timestamp is slugged (``<prefix>-<slug>-<hash>``). Retries of
    one DAG run map to the same lab run id, so a retried run replaces its rows.
    """
    prefix = _UNSAFE.sub("-", prefix).strip("-.") or "airflow"
    digest = hashlib.sha1(airflow_run_id.encode("utf-8")).hexdigest()[:6]
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
        clean = (m.start() == len(kind) + 2 and m.end() == len(airflow_run_id)
                 and not (m["frac"] and int(m["frac"][1:] or 0)))
        return f"{prefix}-{stamp}" if clean else f"{prefix}-{stamp}-{digest}"
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", airflow_run_id).strip("-")[:48] or "run"
    return f"{prefix}-{slug}-{digest}"


def dag_lab_run_id(dag_id: str | None, airflow_run_id: str) -> str:
    """The lab run id of a run of ``dag_id``: :func:`lab_run_id` with the DAG's prefix from
    :data:`RUN_PREFIXES` (a DAG not listed there prefixes with its own id)."""
    prefix = RUN_PREFIXES.get(str(dag_id), str(dag_id or "airflow"))
    return lab_run_id(airflow_run_id, prefix)


__all__ = ["NIGHTLY_FANOUT_PREFIX", "NIGHTLY_FAULTS_PREFIX", "RUN_PREFIXES", "dag_lab_run_id",
           "lab_run_id"]
