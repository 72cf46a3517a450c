"""The upgrade verdict of a version matrix: every version against the baseline (the first).

The rows are each version's ``load_cells`` (its load run's aggregates: one row per round) and,
where the matrix ran fault trials, its fault run's ``fault_trials`` (series ``faults|…``,
one row per round: :data:`FAULT_METRICS`), where the matrix searched it, each round's maximum
sustainable rate (the matrix file's steps:
series ``maxrate|…``, judged by the rule of ``achieved_rate_msgs_per_s`` with at least
:data:`MAX_RATE_MIN_CHANGE`; a search with no passing rate is counted, in no median), and,
where the matrix measured the first-message delay, its start-up run's ``startup_probes``
(one row per round and case: the median over the round's probed members that saw a first
record; timed-out or failed probes are counted in ``failed_probes``, never in a median). A
*series* is what is measured without the broker: for the load cell, :data:`SERIES_COLUMNS`
(the load series key without ``cluster_flavor`` and ``broker_version``); for a start-up
case, ``startup|<case key>`` (cold or warm, delay, client, subscribe or assign, protocol,
members). So the same workload on two versions is one series. Per series and metric, for
every version V after the baseline B:

- ``b_value`` / ``v_value``: the median over the rounds (``b_rounds`` / ``v_rounds`` the
  values themselves);
- ``change_pct``: ``(v − b) / |b| × 100``;
- ``change_ci_low_pct`` / ``change_ci_high_pct``: a 95 % percentile-bootstrap interval of
  that change (both versions' rounds resampled with replacement, :data:`BOOTSTRAP_RESAMPLES`
  times, seeded); null with fewer than two rounds a side (one value has no spread);
- ``verdict``: the project's drift rule (:func:`kafkalab.drift.detect.evaluate_series`,
  thresholds from ``include/drift.yaml``; a start-up case's ``first_record_ms`` by the rule
  of ``first_message_subscribe_ms``) with B's rounds as the baseline window and V's
  median as the judged value: ``regressed``, ``improved`` or ``ok``; ``insufficient_history``
  with fewer rounds than the rule's ``min_baseline_runs`` (3 by default: one round's value
  has no spread to judge a change by). Metrics the drift config does not judge are shown,
  ``not judged``.
  ``significant``: the verdict moved *and* the bootstrap interval excludes 0 (null when
  there is no interval).

Every figure names the versions it compares; a series one version lacks is listed, never
dropped. Pure reading: nothing is written.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from kafkalab.drift.records import LOAD_SERIES_COLUMNS
from kafkalab.errors import ConfigError

__all__ = ["BOOTSTRAP_RESAMPLES", "SERIES_COLUMNS", "MatrixVerdict", "bootstrap_change_ci",
           "format_verdict", "matrix_verdict", "write_verdict"]

SERIES_COLUMNS: tuple[str, ...] = tuple(c for c in LOAD_SERIES_COLUMNS
                                        if c not in ("cluster_flavor", "broker_version"))
"""What makes two versions' cells the same measurement."""

SHOWN: tuple[str, ...] = ("e2e_p50_ms", "e2e_p99_ms", "achieved_rate_msgs_per_s")
"""Metrics shown besides the judged ones (as present)."""

STARTUP_PREFIX = "startup|"
"""How a start-up case's series key starts."""

STARTUP_METRICS: tuple[str, ...] = ("first_record_ms", "client_start_ms", "join_ms",
                                    "fetch_ms")
"""A start-up case's figures the verdict shows (:mod:`kafkalab.startup_figures`)."""

STARTUP_RULES: dict[str, str] = {"first_record_ms": "first_message_subscribe_ms"}
"""The drift rule judging a start-up figure (the others are shown, not judged)."""

FAULTS_PREFIX = "faults|"
"""How a fault series' key starts."""

FAULT_METRICS: dict[str, tuple[str, str | None]] = {
    "acked_lost": ("sum", "lost_count"),
    "unavailable_ms": ("median", "first_message_subscribe_ms"),
    "leader_elected_ms": ("median", None),
    "duplicates": ("sum", None),
    "reordered": ("sum", None),
}
"""A fault round's figures from ``fault_trials`` (over its complete trials): how the round's
trials are combined, and the drift rule judging it (None: shown, not judged). Acked records
lost are judged as the nightly judges ``lost_count`` (any loss after none regresses); the
time without a writable leader by the rule of ``first_message_subscribe_ms`` (a delay:
higher is worse, 20 %); duplicates and reorders depend on the producer's idempotence and are
shown."""

MAX_RATE_PREFIX = "maxrate|"
"""How the maximum-rate series' key starts."""

MAX_RATE_METRIC = "max_rate_msgs_per_s"
MAX_RATE_RULE = "achieved_rate_msgs_per_s"
"""The drift rule the maximum rate is judged by (lower is worse) ..."""
MAX_RATE_MIN_CHANGE = 0.10
"""... with at least this relative change: the search resolves a rate to 5 % and its repeats
to ±5 %, so a smaller change is within one search's own spread."""

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261129


@dataclass
class VersionMetric:
    """One metric of one series: a version against the baseline."""

    metric: str
    version: str
    b_value: float | None
    v_value: float | None
    b_rounds: list[float]
    v_rounds: list[float]
    change_pct: float | None
    change_ci_low_pct: float | None
    change_ci_high_pct: float | None
    verdict: str
    significant: bool | None
    note: str | None = None


@dataclass
class VersionSeries:
    series: str
    label: str
    metrics: list[VersionMetric] = field(default_factory=list)
    failed_probes: dict[str, int] | None = None
    """A start-up case: each version's probes that timed out or failed; the maximum rate:
    each version's searches that found no passing rate (in no median either way)."""
    failed_what: str | None = None
    """What ``failed_probes`` counts, as the CLI and the report name it."""


@dataclass
class MatrixVerdict:
    """The result of :func:`matrix_verdict` (``kafkalab versions verdict --json``)."""

    matrix_id: str
    baseline: str
    versions: list[str]
    runs: dict[str, str]
    rounds: dict[str, int]
    """Complete rounds of the load cell found per version (its load run's cells)."""
    series: list[VersionSeries]
    missing: list[dict[str, Any]]
    """``{"series", "label", "versions"}``: series some version lacks (named)."""
    regressed: int
    judged: int
    startup_runs: dict[str, str] = field(default_factory=dict)
    """Each version's start-up run (empty when the matrix measured no first-message delay)."""
    faults_runs: dict[str, str] = field(default_factory=dict)
    """Each version's fault run (empty when the matrix ran no fault trial)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def write_verdict(data_dir: str | os.PathLike[str] | None, v: MatrixVerdict) -> Any:
    """Write ``v`` to ``versions/<matrix_id>.verdict.json`` (what the report shows, beside the
    matrix file; :meth:`MatrixVerdict.to_dict` plus ``judged_at``); returns the path."""
    from kafkalab.samples import utc_now_iso
    from kafkalab.store import LabData, atomic_write_json

    path = LabData(data_dir).matrix_verdict_path(v.matrix_id)
    atomic_write_json(path, {**v.to_dict(), "judged_at": utc_now_iso()})
    return path


def bootstrap_change_ci(b: list[float], v: list[float], resamples: int = BOOTSTRAP_RESAMPLES,
                        seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
    """A 95 % percentile-bootstrap interval of ``(median(v) − median(b)) / |median(b)| × 100``
    (resamples whose baseline median is 0 are left out); None with fewer than two values a
    side, or when every resample's baseline median is 0."""
    if len(b) < 2 or len(v) < 2:
        return None
    rng = np.random.default_rng(seed)
    bb = np.median(rng.choice(np.asarray(b, float), (resamples, len(b))), axis=1)
    vv = np.median(rng.choice(np.asarray(v, float), (resamples, len(v))), axis=1)
    ok = bb != 0
    if not ok.any():
        return None
    change = (vv[ok] - bb[ok]) / np.abs(bb[ok]) * 100.0
    lo, hi = np.percentile(change, [2.5, 97.5])
    return float(lo), float(hi)


def _rows(data_dir: str | os.PathLike[str] | None, run_id: str) -> pd.DataFrame:
    """A version's complete cells with their series key (``_series``; no row when none
    completed).

    Raises:
        ConfigError: the run has no load aggregates (not aggregated yet).
    """
    from kafkalab.drift.detect import key_part
    from kafkalab.drift.load import normalize_load_cells, read_load_table
    from kafkalab.kinds import LOAD
    from kafkalab.store import LabData

    lab = LabData(data_dir)
    if not (lab.run_aggregates_dir(run_id, LOAD) / "load_cells.parquet").exists():
        raise ConfigError(f"run {run_id} has no load aggregates: run `kafkalab aggregate "
                          f"--run-id {run_id}` first")
    cells = read_load_table(lab, run_id, "load_cells")
    if cells.empty or "status" not in cells.columns:
        return pd.DataFrame({"_series": pd.Series(dtype=str)})
    df = normalize_load_cells(cells)
    df = df[df["status"].astype(str) == "complete"].copy()
    parts = [df[c].map(key_part).astype(str) if c in df.columns else pd.Series("", index=df.index)
             for c in SERIES_COLUMNS]
    df["_series"] = pd.concat(parts, axis=1).agg("|".join, axis=1) if len(df) else ""
    return df


def _startup_rows(data_dir: str | os.PathLike[str] | None, run_id: str,
                  per_round: int) -> pd.DataFrame:
    """A version's start-up cases per round (``_series``, ``_label``, ``round``,
    ``failed_probes`` and the median of each of :data:`STARTUP_METRICS` over the round's
    members that saw a first record); round ``k`` holds trials ``(k−1)·per_round …``.

    Raises:
        ConfigError: the run has no start-up aggregates (not aggregated yet).
    """
    import pyarrow.parquet as pq

    from kafkalab.kinds import STARTUP
    from kafkalab.store import LabData

    path = LabData(data_dir).run_aggregates_dir(run_id, STARTUP) / "startup_probes.parquet"
    if not path.exists():
        raise ConfigError(f"run {run_id} has no start-up aggregates: run `kafkalab aggregate "
                          f"--run-id {run_id}` first")
    probes = pq.read_table(path).to_pandas()
    out = []
    probes["round"] = probes["trial"].astype(int) // max(per_round, 1) + 1
    for (key, round_no), g in probes.groupby(["case_key", "round"], sort=True):
        ok = g[g["status"].astype(str) == "ok"]
        row: dict[str, Any] = {"_series": STARTUP_PREFIX + str(key),
                               "_label": _startup_label(g.iloc[0]),
                               "round": int(round_no), "broker_version": str(g["kafka_version"].iloc[0]),
                               "failed_probes": int(len(g) - len(ok))}
        for m in STARTUP_METRICS:
            vals = pd.to_numeric(ok[m], errors="coerce").dropna() if m in ok else pd.Series()
            row[m] = float(vals.median()) if len(vals) else None
        out.append(row)
    return pd.DataFrame(out, columns=["_series", "_label", "round", "broker_version",
                                      "failed_probes", *STARTUP_METRICS])


def _fault_rows(data_dir: str | os.PathLike[str] | None, run_id: str,
                per_round: int) -> pd.DataFrame:
    """A version's fault figures per round (``fault_trials``: round ``k`` holds trials
    ``(k−1)·per_round+1 …``; each figure combined over the round's complete trials as
    :data:`FAULT_METRICS` says; ``failed_probes`` its trials that did not complete).

    Raises:
        ConfigError: the run has no fault aggregates (not aggregated yet).
    """
    import pyarrow.parquet as pq

    from kafkalab.kinds import FAULTS
    from kafkalab.store import LabData

    path = LabData(data_dir).run_aggregates_dir(run_id, FAULTS) / "fault_trials.parquet"
    if not path.exists():
        raise ConfigError(f"run {run_id} has no fault aggregates: run `kafkalab aggregate "
                          f"--run-id {run_id}` first")
    trials = pq.read_table(path).to_pandas()
    trials["round"] = (trials["trial"].astype(int) - 1) // max(per_round, 1) + 1
    out = []
    for (fault, profile, client, round_no), g in trials.groupby(
            ["fault", "profile", "client", "round"], sort=True):
        ok = g[g["status"].astype(str) == "complete"]
        row: dict[str, Any] = {"_series": f"{FAULTS_PREFIX}{fault}|{profile}|{client}",
                               "_label": f"fault {fault} {profile} {client}",
                               "round": int(round_no),
                               "broker_version": str(g["broker_version"].iloc[0]),
                               "failed_probes": int(len(g) - len(ok))}
        for metric, (how, _rule) in FAULT_METRICS.items():
            vals = (pd.to_numeric(ok[metric], errors="coerce").dropna()
                    if metric in ok else pd.Series(dtype=float))
            row[metric] = (None if not len(vals) else float(vals.sum()) if how == "sum"
                           else float(vals.median()))
        out.append(row)
    return pd.DataFrame(out, columns=["_series", "_label", "round", "broker_version",
                                      "failed_probes", *FAULT_METRICS])


def _max_rate_rows(doc: dict[str, Any], version: str) -> pd.DataFrame:
    """``version``'s maximum rate per round, from the matrix file's steps (each search's
    result, :func:`kafkalab.load.maxrate.find_max_rate`): a search that found no passing
    rate is a row with a null value and ``failed_probes`` 1 (shown, in no median)."""
    columns = ["_series", "_label", "round", "broker_version", MAX_RATE_METRIC, "failed_probes",
               "capped"]
    steps = [s for s in doc.get("steps") or []
             if s.get("version") == version and s.get("max_rate_status") == "complete"]
    if not steps:
        return pd.DataFrame(columns=columns)
    cell = doc["spec"].get("cell") or {}
    key = MAX_RATE_PREFIX + "|".join(str(cell.get(c)) for c in (
        "client", "payload", "profile", "acks", "consumers", "partitions"))
    label = (f"max rate {cell.get('client')} {cell.get('payload')} {cell.get('profile')} "
             f"acks {cell.get('acks') or 'profile'} c{cell.get('consumers')}")
    rows = [{"_series": key, "_label": label, "round": int(s["round"]),
             "broker_version": version, MAX_RATE_METRIC: s.get("max_rate_msgs_per_s"),
             "failed_probes": int(s.get("max_rate_msgs_per_s") is None),
             "capped": bool(s.get("max_rate_capped"))} for s in steps]
    return pd.DataFrame(rows, columns=columns)


def _startup_label(probe: pd.Series) -> str:
    """``first msg cold subscribe classic m1 delay 0`` (``assign``: no protocol, no group)."""
    join = str(probe["join"])
    how = join if join == "assign" else f"{join} {probe['group_protocol']} m{probe['members']}"
    return (f"first msg {probe['cluster_state']} {how} delay "
            f"{probe['initial_rebalance_delay_ms']}")


def _label(row: pd.Series) -> str:
    """``confluent-kafka 1kb default acks 1 c1 r500`` (``txn10`` for transactions)."""
    from kafkalab.drift.detect import key_part

    bits = [key_part(row.get(c)) for c in ("client", "payload", "profile")]
    bits += [f"acks {key_part(row.get('acks'))}", f"c{key_part(row.get('consumers'))}",
             f"r{key_part(row.get('rate_msgs_per_s'))}"]
    txn = key_part(row.get("txn_msgs"))
    return " ".join(b for b in bits if b) + (f" txn{txn}" if txn else "")


def _values(rows: pd.DataFrame, metric: str) -> list[float]:
    if metric not in rows.columns:
        return []
    return [float(x) for x in pd.to_numeric(rows[metric], errors="coerce").dropna()]


def _judge(metric: str, version: str, b_rows: pd.DataFrame, v_rows: pd.DataFrame,
           config: Any, rule_name: str | None,
           min_change: float | None = None) -> VersionMetric | None:
    """One metric of one series (None when neither side has a value), judged by the drift
    rule ``rule_name`` (None or a rule the config lacks: shown, not judged), its minimum
    relative change raised to ``min_change`` where given."""
    from kafkalab.drift.detect import evaluate_series

    b, v = _values(b_rows, metric), _values(v_rows, metric)
    if not b and not v:
        return None
    bv = float(np.median(b)) if b else None
    vv = float(np.median(v)) if v else None
    change = (None if bv is None or vv is None or bv == 0 else (vv - bv) / abs(bv) * 100.0)
    ci = bootstrap_change_ci(b, v)
    out = VersionMetric(metric, version, bv, vv, b, v, change, ci[0] if ci else None,
                        ci[1] if ci else None, "not judged", None)
    if bv is None or vv is None:
        out.verdict = "undefined"
        out.note = f"null in {'the baseline' if bv is None else version} (too few samples?)"
        return out
    if rule_name is None or (rule_name not in config.metrics
                             and rule_name not in config.metrics_of("load")):
        return out
    capped = [sum(bool(c) for c in rows["capped"] if isinstance(c, bool | np.bool_))
              if "capped" in rows else 0 for rows in (b_rows, v_rows)]
    if any(capped):
        out.note = (f"the search reached the client budget's cap in {capped[0]} round(s) of the "
                    f"baseline and {capped[1]} of {version}: a lower bound of the broker's "
                    "maximum, which says nothing about the release; not judged")
        return out
    rule = config.rule(rule_name)
    if min_change is not None and rule.min_relative_change < min_change:
        rule = rule.model_copy(update={"min_relative_change": min_change})
    res = evaluate_series(b, vv, rule)
    out.verdict = "regressed" if res["verdict"] == "drift" else str(res["verdict"])
    out.note = res.get("note")
    if res.get("rule") == "mad":  # no per-row intervals here: the rounds are the spread
        out.note = f"MAD rule over {len(b)} rounds of Kafka {b_rows['broker_version'].iloc[0]}"
    if res["verdict"] == "insufficient_history":
        out.note = (f"{len(b)} round(s) of Kafka {b_rows['broker_version'].iloc[0]} < "
                    f"min_baseline_runs {rule.min_baseline_runs}: no verdict")
    if ci is not None:
        out.significant = out.verdict in ("regressed", "improved") and not (ci[0] <= 0 <= ci[1])
    return out


def matrix_verdict(data_dir: str | os.PathLike[str] | None, matrix_id: str,
                   config_path: str | os.PathLike[str] | None = None) -> MatrixVerdict:
    """Judge every version of matrix ``matrix_id`` against its baseline (module docstring).

    Raises:
        ConfigError: no such matrix, a version run without aggregates (run ``kafkalab
            aggregate`` on it), or a bad drift config.
    """
    from kafkalab.drift.config import load_drift_config, load_drift_config_or_default
    from kafkalab.versions.matrix import read_matrix

    config = (load_drift_config(config_path) if config_path is not None
              else load_drift_config_or_default())
    doc = read_matrix(data_dir, matrix_id)
    versions = [str(v) for v in doc["spec"]["versions"]]
    runs = {str(k): str(v) for k, v in doc["runs"].items()}
    tables, rounds = {}, {}
    for v in versions:
        tables[v], rounds[v] = _version_rows(data_dir, doc, v)
    baseline = versions[0]
    load_metrics = list(dict.fromkeys([*SHOWN[:2], *config.metrics_of("load"), *SHOWN[2:]]))
    keys = sorted(set().union(*(set(t["_series"]) for t in tables.values())))
    if not keys:
        raise ConfigError(f"version matrix {matrix_id}: no version has a complete round")
    series, missing, judged, regressed = [], [], 0, 0
    for key in keys:
        groups = {v: t[t["_series"] == key] for v, t in tables.items()}
        label = str(next(g for g in groups.values() if len(g))["_label"].iloc[0])
        lacking = [v for v, g in groups.items() if g.empty]
        if lacking:
            missing.append({"series": key, "label": label, "versions": lacking})
        if groups[baseline].empty:
            continue
        family = _family(key)
        s = VersionSeries(key, label, failed_probes={
            v: int(g["failed_probes"].sum()) for v, g in groups.items() if len(g)}
            if family != "load" else None, failed_what=FAILED_WHAT.get(family))
        for v in versions[1:]:
            if groups[v].empty:
                continue
            for metric, rule in _metrics(family, load_metrics):
                max_rate = family == "maxrate"
                m = _judge(metric, v, groups[baseline], groups[v], config, rule,
                           MAX_RATE_MIN_CHANGE if max_rate else None)
                if m is None:
                    continue
                s.metrics.append(m)
                judged += m.verdict in ("regressed", "improved", "ok")
                regressed += m.verdict == "regressed"
        series.append(s)
    return MatrixVerdict(matrix_id=matrix_id, baseline=baseline, versions=versions, runs=runs,
                         rounds=rounds, series=series, missing=missing, regressed=regressed,
                         judged=judged, startup_runs=_runs_of(doc, "startup_runs"),
                         faults_runs=_runs_of(doc, "faults_runs"))


def _runs_of(doc: dict[str, Any], key: str) -> dict[str, str]:
    """Version → run id of one of the matrix file's run maps (``{}`` when absent)."""
    return {str(k): str(v) for k, v in (doc.get(key) or {}).items()}


def _version_rows(data_dir: str | os.PathLike[str] | None, doc: dict[str, Any],
                  version: str) -> tuple[pd.DataFrame, int]:
    """Every row of ``version`` (its load cells, start-up cases, maximum rates and fault
    rounds, each with ``_series`` and ``_label``) and its complete rounds of the load cell.

    Raises:
        ConfigError: a run of it the matrix measured that has no aggregates.
    """
    spec = doc["spec"]
    load = _rows(data_dir, str(doc["runs"][version]))  # no complete round: no rows
    load["_label"] = [_label(r) for _, r in load.iterrows()] if len(load) else []
    parts = [load, _max_rate_rows(doc, version)]
    startup = _runs_of(doc, "startup_runs").get(version)
    if startup and _measured(doc, startup):
        per_round = int((spec.get("startup") or {}).get("trials") or 1)
        parts.append(_startup_rows(data_dir, startup, per_round))
    faults = _runs_of(doc, "faults_runs").get(version)
    if faults and _measured(doc, faults):
        per_round = int((spec.get("faults") or {}).get("trials") or 1)
        parts.append(_fault_rows(data_dir, faults, per_round))
    return pd.concat([p for p in parts if len(p)] or [load], ignore_index=True), len(load)


FAILED_WHAT: dict[str, str] = {
    "startup": "failed probes (timed out or failed: in no median)",
    "maxrate": "searches without a passing rate (in no median)",
    "faults": "trials that did not complete (in no figure)",
}
"""What each family's ``failed_probes`` counts."""


def _family(key: str) -> str:
    """``load``, ``startup``, ``maxrate`` or ``faults``: what a series key measures."""
    for family, prefix in (("startup", STARTUP_PREFIX), ("maxrate", MAX_RATE_PREFIX),
                           ("faults", FAULTS_PREFIX)):
        if key.startswith(prefix):
            return family
    return "load"


def _metrics(family: str, load_metrics: list[str]) -> list[tuple[str, str | None]]:
    """``(metric, the drift rule judging it or None)`` of a family's series."""
    if family == "startup":
        return [(m, STARTUP_RULES.get(m)) for m in STARTUP_METRICS]
    if family == "maxrate":
        return [(MAX_RATE_METRIC, MAX_RATE_RULE)]
    if family == "faults":
        return [(m, rule) for m, (_how, rule) in FAULT_METRICS.items()]
    return [(m, m) for m in load_metrics]


def _measured(doc: dict[str, Any], run_id: str) -> bool:
    """Whether the matrix measured a round into run ``run_id``."""
    from kafkalab.versions.matrix import measured_runs

    return any(r == run_id for r, _ in measured_runs(doc))


def format_verdict(v: MatrixVerdict) -> str:
    """The verdict as a table: one line per series × version × metric."""
    head = (f"version matrix {v.matrix_id}: each version against Kafka {v.baseline} (rounds: "
            + ", ".join(f"{k} {n}" for k, n in v.rounds.items()) + ")")
    w = min(max([len("series"), *(len(s.label) for s in v.series)]), 64)
    lines = [head, f"{'series':<{w}} {'version':<8} {'metric':<26} {v.baseline:>10} "
             f"{'value':>10} {'change':>8} {'95% interval':>18}  verdict"]
    for s in v.series:
        for m in s.metrics:
            ci = ("—" if m.change_ci_low_pct is None
                  else f"{m.change_ci_low_pct:+.1f}..{m.change_ci_high_pct:+.1f}%")
            lines.append(
                f"{s.label[:w]:<{w}} {m.version:<8} {m.metric:<26} {_num(m.b_value):>10} "
                f"{_num(m.v_value):>10} {_pct(m.change_pct):>8} {ci:>18}  {m.verdict}"
                + (" (significant)" if m.significant else ""))
    for s in v.series:
        failed = {k: n for k, n in (s.failed_probes or {}).items() if n}
        if failed:
            lines.append(f"{s.label}: {s.failed_what}: "
                         + ", ".join(f"{k} {n}" for k, n in failed.items()))
    for miss in v.missing:
        lines.append(f"{miss['label']}: not measured on {', '.join(miss['versions'])}")
    lines.append(f"{v.regressed} regressed of {v.judged} judged metric(s)")
    return "\n".join(lines)


def _num(x: float | None) -> str:
    return "—" if x is None else (f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}")


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:+.1f}%"
