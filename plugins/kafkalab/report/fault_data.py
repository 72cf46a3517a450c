"""What a fault run's page shows, read from ``aggregates/faults/run_id=<id>/``, and the pure
judgements made on it: which trial is a finding, why a value is missing, which trial's
timeline stands for its cell.

A fault run (``kafkalab faults run``, the ``resilience_experiment`` DAG, the nightly's
sigkill-leader trial; manifest ``kind: faults``) is aggregated by
``spark_jobs/aggregate_faults.py`` into three tables (schema: ``docs/aggregates-schema.md``,
"Fault aggregates"), each one Parquet file or a folder of part files as Spark writes it:

* ``fault_trials``: one row per trial (spec, counts recomputed from the verdicts,
  availability from the trial summary, event times as seconds since the trial's t0);
* ``fault_cells``: one row per (profile, fault, acks): trials, medians and maxima;
* ``fault_timeline``: per trial and 100 ms bin, acks/s, rx/s and sent/s;
* ``group_lag`` (consumer faults; optional: a run aggregated before it existed has none):
  per consumer trial, offset sample and partition, the group's committed offset and lag.

Missing tables give empty frames (:attr:`FaultTables.missing` names them); the page then
says the run is not aggregated yet. Nothing here raises for an absent or unreadable file.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from kafkalab.kinds import FAULTS
from kafkalab.store import LabData
from kafkalab.values import as_bool, as_float, is_missing

log = logging.getLogger(__name__)

FAULT_TABLES: tuple[str, ...] = ("fault_trials", "fault_cells", "fault_timeline")
"""The tables of a fault run's aggregates (``<name>.parquet``)."""

OPTIONAL_FAULT_TABLES: tuple[str, ...] = ("group_lag",)
"""Tables a fault run may lack without being "partly aggregated" (consumer faults only)."""

FAULT_ORDER: tuple[str, ...] = ("none", "sigkill-leader", "sigterm-leader", "sigstop-leader",
                                "kill-follower", "lossy-leader-crash", "kill-consumer",
                                "leave-consumer", "cut-consumer")
"""The faults in the order the page lists them (``kafkalab.faults.spec.FAULTS``; the
no-fault control first). A fault not listed here sorts after them by name."""

PROFILE_ORDER: tuple[str, ...] = ("durability", "availability", "default")
"""The profiles in the order the page lists them (others after them by name)."""

DURABILITY_PROFILE = "durability"
"""The profile that promises no acknowledged message is lost: a loss under it is a finding."""

NO_FAULT = "none"

COMMIT_ORDER: tuple[str, ...] = ("after", "auto", "before")
"""The consumer faults' commit strategies in the order the page lists them."""

AT_LEAST_ONCE = "after"
"""The commit strategy that promises no record goes unprocessed (it may process twice)."""


@dataclass
class FaultTables:
    """A fault run's aggregates (``acks`` as text: ``0``, ``1``, ``all``)."""

    trials: pd.DataFrame = field(default_factory=pd.DataFrame)
    cells: pd.DataFrame = field(default_factory=pd.DataFrame)
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)
    group_lag: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Consumer faults' offset samples (empty when the run has none)."""
    missing: tuple[str, ...] = FAULT_TABLES
    """The tables that are absent or unreadable."""

    @property
    def aggregated(self) -> bool:
        """True when at least one table was read."""
        return len(self.missing) < len(FAULT_TABLES)

    def empty_reason(self, table: str) -> str:
        """Why ``table`` (a :data:`FAULT_TABLES` name) has no rows: ``not aggregated`` (its
        file is absent or unreadable) or ``no rows``."""
        return "not aggregated" if table in self.missing else "no rows"


def acks_text(value: Any) -> str:
    """``-1``/``all`` -> ``all``; ``1``/``1.0`` -> ``1``; missing -> ``""``."""
    if is_missing(value):
        return ""
    text = str(value).strip()
    if text in ("-1", "-1.0", "all"):
        return "all"
    f = as_float(text)
    return str(int(f)) if f is not None and f == int(f) else text


def read_fault_table(lab: LabData, run_id: str, table: str) -> pd.DataFrame | None:
    """One table of a fault run (:data:`FAULT_TABLES`); None when it is absent or unreadable
    (logged). Files whose names start with ``.`` or ``_`` (Spark's ``_SUCCESS``, ``.crc``)
    are ignored."""
    import pyarrow.parquet as pq

    known = (*FAULT_TABLES, *OPTIONAL_FAULT_TABLES)
    if table not in known:
        raise ValueError(f"unknown fault table {table!r} (known: {', '.join(known)})")
    path = lab.run_aggregates_dir(run_id, FAULTS) / f"{table}.parquet"
    if not path.exists():
        return None
    try:
        df = pq.read_table(path).to_pandas()
    except (OSError, ValueError) as exc:
        log.warning("fault table %s unreadable (%s)", path, exc)
        return None
    if "run_id" not in df.columns:
        df["run_id"] = run_id
    df["run_id"] = df["run_id"].astype(str)
    if "acks" in df.columns:
        df["acks"] = df["acks"].map(acks_text).astype("object")
    return df


def read_fault_tables(lab: LabData, run_id: str) -> FaultTables:
    """The tables of a fault run (empty frames for those absent or unreadable; an absent
    ``group_lag`` is not "missing")."""
    frames: dict[str, pd.DataFrame] = {}
    missing = []
    for name in FAULT_TABLES:
        df = read_fault_table(lab, run_id, name)
        if df is None:
            missing.append(name)
        frames[name] = df if df is not None else pd.DataFrame()
    lag = read_fault_table(lab, run_id, "group_lag") if len(missing) < len(FAULT_TABLES) else None
    return FaultTables(trials=frames["fault_trials"], cells=frames["fault_cells"],
                       timeline=frames["fault_timeline"],
                       group_lag=lag if lag is not None else pd.DataFrame(),
                       missing=tuple(missing))


# --------------------------------------------------------------------------- judgements


def order_rank(value: Any, order: tuple[str, ...]) -> tuple[int, str]:
    """Where ``value`` sorts in a page's ``order`` (:data:`FAULT_ORDER`, :data:`COMMIT_ORDER`
    …): its place, a value the order does not name after them by its text."""
    text = "" if is_missing(value) else str(value)
    return (order.index(text) if text in order else len(order), text)


def cell_sort_key(profile: Any, fault: Any, acks: Any) -> tuple[Any, ...]:
    """How rows are ordered: profile (durability first), fault (the control first), acks."""
    return (order_rank(profile, PROFILE_ORDER), order_rank(fault, FAULT_ORDER),
            order_rank(acks_text(acks), ("0", "1", "all")))


def count(row: Mapping[str, Any], key: str) -> int | None:
    """An integer count of a row, None when absent."""
    f = as_float(row.get(key))
    return None if f is None else int(f)


def is_durability_loss(row: Mapping[str, Any]) -> bool:
    """A trial (or cell) of the durability profile that lost acknowledged messages: a
    finding, always shown."""
    lost = as_float(row.get("acked_lost"))
    if lost is None:
        lost = as_float(row.get("trials_with_loss"))
    return str(row.get("profile")) == DURABILITY_PROFILE and lost is not None and lost > 0


def is_control_anomaly(row: Mapping[str, Any]) -> bool:
    """A no-fault control trial that lost or duplicated messages: nothing was broken, so the
    checker or the setup is suspect."""
    return str(row.get("fault")) == NO_FAULT and any(
        (as_float(row.get(k)) or 0) > 0 for k in ("acked_lost", "duplicates"))


AVAILABILITY_COLUMNS: tuple[str, ...] = ("unavailable_ms", "consumer_gap_ms", "leader_elected_ms",
                                         "isr_full_ms", "controller_elected_ms",
                                         "old_leader_stepped_down_ms",
                                         "producer_saw_new_leader_ms", "lag_recovered_ms",
                                         "heal_to_first_ack_ms", "heal_to_first_receipt_ms")
"""The availability figures of a trial (ms since the fault, or the longest gap; the last two
ms since the heal)."""


CONTROLLER_FAULT_SUFFIX = "-controller"
"""The faults of the active controller's node end so (``sigkill-controller``, …:
``kafkalab.faults.spec.CONTROLLER_FAULTS``, kept in step by a unit test)."""


def is_controller_fault(fault: str) -> bool:
    """Whether ``fault`` strikes the node leading the KRaft controller quorum (its trials
    have ``controller_elected_ms``)."""
    return fault.endswith(CONTROLLER_FAULT_SUFFIX)


LINK_FAULTS: tuple[str, ...] = ("partition-leader", "isolate-leader", "clients-cut-from-leader")
"""The faults that cut links (``kafkalab.faults.spec.LINK_FAULTS``, kept in step by a unit
test): their trials have ``old_leader_stepped_down_ms``."""


def is_link_fault(fault: str) -> bool:
    """Whether ``fault`` cuts the leader's links rather than signalling a process."""
    return fault in LINK_FAULTS


def missing_reason(row: Mapping[str, Any], key: str) -> str | None:
    """Why figure ``key`` of a trial row is missing, where it is known; else None.

    ``key`` may carry a cell's ``_median``/``_max`` suffix: then the row is a cell and the
    reason speaks of its trials."""
    base = key.removesuffix("_median").removesuffix("_max").removesuffix("_sum")
    cell = base != key
    fault = "" if is_missing(row.get("fault")) else str(row.get("fault"))
    status = "" if is_missing(row.get("status")) else str(row.get("status"))
    if not cell and status == "failed":
        return "trial failed"
    if cell and (as_float(row.get("trials_complete")) == 0):
        return "no complete trial"
    if fault == NO_FAULT and base in ("leader_elected_ms", "isr_full_ms", "lag_recovered_ms"):
        return "no fault"
    if base == "controller_elected_ms" and not is_controller_fault(fault):
        return "not a controller fault"
    if base == "controller_elected_ms":
        return "no new quorum leader seen" + (" in any trial" if cell else " before the end")
    if base == "old_leader_stepped_down_ms" and not is_link_fault(fault):
        return "not a link fault"
    if base == "old_leader_stepped_down_ms":
        return "the old leader still named itself" + (" in every trial" if cell else
                                                      " at the end")
    if base == "leader_elected_ms":
        return "leader did not change" + (" in any trial" if cell else "")
    if base == "isr_full_ms":
        return "ISR not full again" + (" in any trial" if cell else " before the end")
    if base == "unavailable_ms" and not cell and as_float(row.get("acked_msgs")) == 0:
        return "no acks"
    if base == "consumer_gap_ms" and not cell and as_float(row.get("read_back_msgs")) == 0:
        return "nothing received"
    if base == "lag_recovered_ms" and not cell:
        return "lag not recovered"
    if base == "producer_saw_new_leader_ms" and fault == NO_FAULT:
        return "no fault"
    if base == "producer_saw_new_leader_ms" and str(row.get("client") or "") == "kafka-python":
        return "kafka-python: no client statistics"
    if base == "producer_saw_new_leader_ms":
        return "no other leader seen by the producer" + (" in any trial" if cell else "")
    if base in ("heal_to_first_ack_ms", "heal_to_first_receipt_ms") and fault == NO_FAULT:
        return "no fault"
    if base in ("heal_to_first_ack_ms", "heal_to_first_receipt_ms") and \
            not is_missing(row.get("commit")):
        return "a consumer fault"
    if base in ("heal_to_first_ack_ms", "heal_to_first_receipt_ms") and not cell:
        return "none after the heal"
    return None


def errors_text(value: Any) -> str:
    """``errors_by_type`` (a JSON object string, or a mapping) as ``NAME: n, NAME: n``
    (largest first); ``""`` when there are none."""
    if is_missing(value) or value == "":
        return ""
    doc: Any = value
    if isinstance(value, str):
        try:
            doc = json.loads(value)
        except ValueError:
            return value
    if not isinstance(doc, Mapping):
        return str(value)
    items = sorted(((str(k), as_float(v) or 0.0) for k, v in doc.items()),
                   key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k}: {int(n):,}" for k, n in items)


def consumer_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """The consumer-fault trials (``commit`` not null) of ``fault_trials``."""
    if trials.empty or "commit" not in trials.columns:
        return trials.iloc[0:0]
    return trials[trials["commit"].map(lambda v: not is_missing(v))]


def is_at_least_once_loss(row: Mapping[str, Any]) -> bool:
    """A trial committing after processing (at-least-once) that left records of the topic
    unprocessed: a broken promise, always shown."""
    lost = as_float(row.get("lost_unprocessed"))
    return str(row.get("commit")) == AT_LEAST_ONCE and lost is not None and lost > 0


def is_reread_disagreement(row: Mapping[str, Any]) -> bool:
    """A consumer trial that processed records the re-read did not find."""
    agrees = row.get("reread_agrees")
    return not is_missing(row.get("commit")) and not is_missing(agrees) and not as_bool(agrees)


def _groups(df: pd.DataFrame, columns: tuple[str, ...],
            sort_key: Callable[..., Any]) -> list[tuple[tuple[str, ...], pd.DataFrame]]:
    """Rows grouped by the text of ``columns`` (``""`` for a missing value or column), the
    groups in ``sort_key(*key)`` order."""
    def texts(c: str) -> list[str]:
        if c not in df.columns:
            return [""] * len(df)
        return ["" if is_missing(v) else str(v) for v in df[c]]

    groups: dict[tuple[str, ...], list[Any]] = {}
    for idx, *key in zip(df.index, *(texts(c) for c in columns), strict=True):
        groups.setdefault(tuple(key), []).append(idx)
    return [(k, df.loc[groups[k]]) for k in sorted(groups, key=lambda k: sort_key(*k))]


def cell_groups(df: pd.DataFrame) -> list[tuple[tuple[str, ...], pd.DataFrame]]:
    """Rows grouped by (profile, fault, acks) in :func:`cell_sort_key` order: durability
    first, the no-fault control first within a profile."""
    return _groups(df, ("profile", "fault", "acks"), cell_sort_key)


def consumer_groups(trials: pd.DataFrame) -> list[tuple[tuple[str, ...], pd.DataFrame]]:
    """Consumer trials grouped by (fault, commit label), faults and commit strategies in
    page order (:data:`FAULT_ORDER`, :data:`COMMIT_ORDER`). The label is the commit strategy,
    then what else makes the group a different experiment: ``after · static members ·
    cooperative rebalancing · kafka-python`` (static membership, a rebalance protocol, a
    client other than confluent-kafka)."""
    if trials.empty:
        return []
    labelled = trials.assign(_group_label=[_group_label(r) for _, r in trials.iterrows()])
    out = _groups(labelled, ("fault", "_group_label"),
                  lambda fault, label: (order_rank(fault, FAULT_ORDER),
                                        order_rank(label.split(" · ")[0], COMMIT_ORDER), label))
    return [(k, g.drop(columns="_group_label")) for k, g in out]


def _group_label(r: Any) -> str:
    commit = r.get("commit")
    bits = ["" if is_missing(commit) else str(commit)]
    static = r.get("static_membership")
    if not is_missing(static) and bool(static):
        bits.append("static members")
    rebalance = r.get("rebalance")
    if not is_missing(rebalance):
        bits.append(f"{rebalance} rebalancing" if rebalance != "consumer"
                    else "KIP-848 consumer protocol")
    client = r.get("client")
    if not is_missing(client) and client != "confluent-kafka":
        bits.append(str(client))
    return " · ".join(bits)


def representative_trials(trials: pd.DataFrame) -> dict[tuple[str, ...], str]:
    """Per (profile, fault, acks), the trial whose timeline stands for the cell: among its
    complete trials (else all of them), the one with the median ``unavailable_ms`` (the
    lower of two middles), ties by trial number; without any ``unavailable_ms``, the first
    trial."""
    out: dict[tuple[str, ...], str] = {}
    if trials.empty or "trial_id" not in trials.columns:
        return out
    for key, grp in cell_groups(trials):
        status = grp["status"].astype(str) if "status" in grp.columns else None
        pool = grp[status == "complete"] if status is not None else grp
        pool = pool if not pool.empty else grp
        pool = pool.assign(
            _u=pd.to_numeric(pool.get("unavailable_ms"), errors="coerce")
            if "unavailable_ms" in pool.columns else float("nan"),
            _t=pd.to_numeric(pool["trial"], errors="coerce") if "trial" in pool.columns else 0.0)
        defined = pool[pool["_u"].notna()].sort_values(["_u", "_t", "trial_id"])
        pick = (defined.iloc[(len(defined) - 1) // 2] if not defined.empty
                else pool.sort_values(["_t", "trial_id"]).iloc[0])
        out[key] = str(pick["trial_id"])
    return out


__all__ = [
    "AT_LEAST_ONCE",
    "AVAILABILITY_COLUMNS",
    "COMMIT_ORDER",
    "DURABILITY_PROFILE",
    "FAULT_ORDER",
    "FAULT_TABLES",
    "NO_FAULT",
    "OPTIONAL_FAULT_TABLES",
    "PROFILE_ORDER",
    "FaultTables",
    "acks_text",
    "cell_groups",
    "cell_sort_key",
    "consumer_groups",
    "consumer_trials",
    "count",
    "errors_text",
    "is_at_least_once_loss",
    "is_control_anomaly",
    "is_durability_loss",
    "is_reread_disagreement",
    "missing_reason",
    "order_rank",
    "read_fault_table",
    "read_fault_tables",
    "representative_trials",
]
