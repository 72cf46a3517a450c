"""``kafkalab compare RUN_A RUN_B``: two runs side by side, judged by the drift rule.

asv's ``compare`` for the lab: every series the two runs share (a latency cell: the drift
series columns :data:`kafkalab.drift.records.SERIES_COLUMNS`; a load cell:
:data:`~kafkalab.drift.records.LOAD_SERIES_COLUMNS`; and the broker kind, emulator or not),
each metric present in their aggregates, A's value, B's value, the change and a verdict.

The verdict applies the project's drift rule (:func:`kafkalab.drift.detect.evaluate_series`,
thresholds from ``include/drift.yaml``) with run A as a baseline of one run: the MAD of one
value is 0, so B *regressed* when it moved in the metric's bad direction by at least the
metric's ``min_relative_change`` (zero baseline: by more than ``min_absolute_change``) and,
where both runs have 95 % confidence intervals (e2e p50/p99), those intervals do not
overlap. Only the metrics the drift config judges get a verdict; the others (p99.9, the
message rate, the tool's own figures) are shown with their change, ``not judged``.

The confidence-interval test needs one interval per run: it is used only when the series
has exactly one row in each run; with several rows (a repeated cell) the medians are
compared by the MAD rule alone and the metric's note says so.

**An upgrade** (``across_versions``, ``kafkalab compare --across-versions``): the series key
leaves out the broker's flavor and version (``BROKER_COLUMNS``), so the same cell measured on
Kafka 4.1.2 in A and 4.4.0 in B is one series, and B's verdict is the upgrade's, per series.
The comparison names each run's broker versions (``broker_versions``). Without it, two runs
whose series differ only by the broker share nothing, and ``reason`` says to ask for it. For
several rounds a side, alternating on fresh clusters, see ``kafkalab versions``.

**A busy host** (:mod:`kafkalab.drift.busy`): a series whose cell was measured on a busy
host in A or in B (the drift config's ``busy_host`` limits on other processes' CPU, steal and
run queue) is not judged: each of its judged metrics gets the verdict ``busy host`` and a
note naming the busy run, its figures and what the rule would have said; the series is
marked in the table (``[busy host: B]``) and counted apart in the summary line.

Series present in only one run are listed, never dropped. Each run's state, validation result
and stale outputs come with the comparison (:class:`RunFacts`): a run A that drift would not
take as a baseline (not complete, not validated, or stale aggregates/validation/drift:
:data:`kafkalab.drift.detect.BASELINE_STALE_OUTPUTS`) is still used, but the comparison says
so (``baseline_ok`` false). When the runs share no series, or no judged metric has a value
in both, nothing was compared: ``comparable`` is false and ``reason`` says why (which facts
of their series differ); ``kafkalab compare`` then exits 2. Pure reading: nothing is written.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from kafkalab.errors import ConfigError
from kafkalab.values import as_float

LATENCY_SHOWN: tuple[str, ...] = (
    "e2e_latency_ms_p50", "e2e_latency_ms_p99", "e2e_latency_ms_p999", "message_rate_per_s",
    "tool_p50_ms", "tool_p99_ms", "tool_p999_ms",
)
"""Latency aggregate columns compared besides the judged ones (as present)."""

LOAD_SHOWN: tuple[str, ...] = (
    "e2e_p50_ms", "e2e_p99_ms", "e2e_p999_ms", "achieved_rate_msgs_per_s",
)
"""Load-cell columns compared besides the judged ones (as present)."""

SHOWN: dict[str, tuple[str, ...]] = {"latency": LATENCY_SHOWN, "load": LOAD_SHOWN}

BROKER_COLUMNS: tuple[str, ...] = ("cluster_flavor", "broker_version")
"""The series columns an upgrade comparison leaves out of the key."""
"""The metrics shown, by the kind of run."""

BUSY = "busy host"
"""The verdict of a judged metric of a series measured on a busy host in A or B."""

REGRESSED = "regressed"
"""The verdict of a series metric that drifted from A to B (``drift`` in the drift rule)."""

JUDGED_VERDICTS: frozenset[str] = frozenset({REGRESSED, "improved", "ok"})
"""The verdicts of a metric actually judged (a value in both runs and a drift rule)."""


@dataclass
class RunFacts:
    """What makes a run fit to judge by: its state, validation result and stale outputs."""

    run_id: str
    state: str
    """:meth:`kafkalab.store.LabData.run_state`: complete, incomplete, failed, running,
    stale (running, its owner gone) or missing (no manifest)."""
    state_reason: str
    validation: str
    """``passed``, ``failed``, ``unreadable`` or ``none`` (not validated)."""
    stale_outputs: list[str]
    """The manifest's ``stale_outputs`` (outputs older than a re-measured cell)."""
    good: bool
    """Fit as drift would take it: complete, validated, none of its judged outputs stale
    (run A: :data:`~kafkalab.drift.detect.BASELINE_STALE_OUTPUTS`; run B:
    :data:`~kafkalab.drift.detect.JUDGED_STALE_OUTPUTS`)."""
    problems: list[str]
    """Why it is not good, in plain words (empty when good)."""


@dataclass
class MetricComparison:
    """One metric of one shared series."""

    metric: str
    a_value: float | None
    b_value: float | None
    change_pct: float | None
    """``(b - a) / |a| * 100``; None when either is undefined or ``a`` is 0."""
    verdict: str
    """``regressed``, ``improved``, ``ok``, ``undefined`` (null in a run: too few samples,
    or not measured) or ``not judged`` (no drift rule for the metric)."""
    judged: bool
    note: str | None = None


@dataclass
class SeriesComparison:
    """One series (a cell measured the same way) present in both runs."""

    series: str
    """The series key without the metric (``scenario|client|payload|...``)."""
    label: str
    """Short readable name (``confluent-kafka 1kb latency``)."""
    emulator: bool
    broker_label: str | None
    """:data:`kafkalab.cluster.descriptor.EMULATOR_LABEL` for an emulator's series (its
    latencies say nothing about Kafka), else None."""
    metrics: list[MetricComparison] = field(default_factory=list)
    busy_a: str | None = None
    """Why the series' cell in A was measured on a busy host (None: it was not)."""
    busy_b: str | None = None
    """The same for B."""


@dataclass
class Comparison:
    """The result of :func:`compare_runs`."""

    run_a: str
    run_b: str
    kind: str
    """``latency`` or ``load``."""
    comparable: bool
    """False when nothing was compared: no shared series, or no judged metric."""
    reason: str | None
    """Why nothing is comparable (None when comparable)."""
    baseline_ok: bool
    """Whether run A is a baseline drift would take (``run_a_facts.good``)."""
    run_a_facts: RunFacts
    run_b_facts: RunFacts
    shared: list[SeriesComparison]
    only_a: list[dict[str, Any]]
    """``{"series", "label", "emulator", "broker_label"}`` of the series only run A has."""
    only_b: list[dict[str, Any]]
    judged: int
    """Series metrics judged (verdict regressed, improved or ok)."""
    regressed: int
    """Series metrics of B that regressed."""
    busy: int = 0
    """Shared series measured on a busy host in A or B (their metrics not judged)."""
    across_versions: bool = False
    """An upgrade comparison: series keyed without the broker (``BROKER_COLUMNS``)."""
    broker_versions: dict[str, list[str]] = field(default_factory=dict)
    """``{"a": [...], "b": [...]}``: the broker versions of each run's rows."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON document ``kafkalab compare --json`` prints."""
        return asdict(self)


def _run_rows(data_dir: str | os.PathLike[str], run_id: str
              ) -> tuple[str, pd.DataFrame]:
    """``(kind, rows)`` of one run: its latency aggregates, else its load cells.

    Raises:
        ConfigError: no such run, a fault run, or a run without aggregates.
    """
    from kafkalab.drift.history import load_history
    from kafkalab.drift.load import load_cells_history
    from kafkalab.kinds import LATENCY, LOAD, RUN_KINDS, kind_of
    from kafkalab.store import LabData

    lab = LabData(data_dir)
    manifest = lab.manifest(run_id)
    if lab.run_aggregates_dir(run_id, LATENCY).is_dir():
        history = load_history(lab.root, {run_id: manifest} if manifest else {})
        rows = history[history["run_id"].astype(str) == run_id] if not history.empty else history
        if not rows.empty:
            return LATENCY.name, rows.reset_index(drop=True)
    if lab.run_aggregates_dir(run_id, LOAD).is_dir():
        cells = load_cells_history(lab.root, {run_id: manifest} if manifest else {})
        rows = cells[cells["run_id"].astype(str) == run_id] if not cells.empty else cells
        if not rows.empty:
            return LOAD.name, rows.reset_index(drop=True)
    if manifest is None:
        raise ConfigError(f"unknown run {run_id!r}: no manifest and no aggregates in {lab.root}")
    if not kind_of(manifest).drift_judged:
        judged = " and ".join(k.name for k in RUN_KINDS.values() if k.drift_judged)
        raise ConfigError(f"run {run_id} is a {kind_of(manifest).name} run: compare judges "
                          f"{judged} runs")
    raise ConfigError(f"run {run_id} has no aggregates yet: run `kafkalab aggregate --run-id "
                      f"{run_id}` first")


def run_facts(data_dir: str | os.PathLike[str], run_id: str, kind: str,
              as_baseline: bool) -> RunFacts:
    """The state, validation and stale outputs of one run, and whether drift would take it
    as a baseline (``as_baseline``) or as a good judged run (see :class:`RunFacts`)."""
    from kafkalab.drift.detect import BASELINE_STALE_OUTPUTS, GOOD_RUN_STATE, JUDGED_STALE_OUTPUTS
    from kafkalab.store import LabData

    lab = LabData(data_dir)
    manifest = lab.manifest(run_id) or {}
    state, reason = lab.run_state(run_id), lab.run_state_reason(run_id)
    doc = lab.validation(run_id, kind)
    validation = ("none" if doc is None else "unreadable" if doc.get("unreadable")
                  else "passed" if doc.get("success") is True else "failed")
    raw = manifest.get("stale_outputs") or []
    stale = [str(o) for o in raw] if isinstance(raw, list) else []
    problems = []
    if state != GOOD_RUN_STATE:
        problems.append(f"state {state}" + (f" ({reason})" if reason and reason != state
                                            and not reason.startswith("closed") else ""))
    if validation != "passed":
        problems.append("not validated" if validation == "none" else f"validation {validation}")
    judged = BASELINE_STALE_OUTPUTS if as_baseline else JUDGED_STALE_OUTPUTS
    bad_stale = [o for o in stale if o in judged]
    if bad_stale:
        problems.append("stale " + ", ".join(bad_stale))
    return RunFacts(run_id=run_id, state=state, state_reason=reason, validation=validation,
                    stale_outputs=stale, good=not problems, problems=problems)


def _part(row: pd.Series, name: str) -> str:
    from kafkalab.drift.detect import key_part

    return key_part(row.get(name)) if name in row.index else ""


def _latency_label(row: pd.Series) -> list[str]:
    """``scenario [client] payload profile``."""
    scenario, client = _part(row, "scenario"), _part(row, "client")
    return [scenario, *([f"[{client}]"] if client and client != scenario
                        and not scenario.startswith(client) else []),
            _part(row, "payload"), _part(row, "profile")]


def _load_label(row: pd.Series) -> list[str]:
    """``client payload profile acks=… consumers=… rate=…``."""
    return [_part(row, "client"), _part(row, "payload"), _part(row, "profile"),
            f"acks={_part(row, 'acks')}", f"consumers={_part(row, 'consumers')}",
            f"rate={_part(row, 'rate_msgs_per_s')}"]


LABELS: dict[str, Callable[[pd.Series], list[str]]] = {"latency": _latency_label,
                                                      "load": _load_label}
"""How a series is named in the table, by the kind of run (the kinds drift judges)."""


def _label(row: pd.Series, kind: str) -> str:
    """The series' name (:data:`LABELS` of its kind), from a row's series parts."""
    return " ".join(b for b in LABELS[kind](row) if b)


def _key_columns(kind: str, across_versions: bool) -> tuple[str, ...]:
    from kafkalab.drift.detect import KINDS

    return tuple(c for c in KINDS[kind] if not (across_versions and c in BROKER_COLUMNS))


def _series_table(rows: pd.DataFrame, kind: str, across_versions: bool = False) -> pd.DataFrame:
    """``rows`` with ``_series`` (the key without the metric; without the broker for an
    upgrade) and ``_emu`` (bool)."""
    from kafkalab.drift.detect import key_part
    from kafkalab.values import as_bool

    df = rows.copy()
    cols = _key_columns(kind, across_versions)
    parts = [df[c].map(key_part).astype(str) if c in df.columns
             else pd.Series("", index=df.index) for c in cols]
    df["_series"] = (pd.concat(parts, axis=1).agg("|".join, axis=1) if len(df)
                     else pd.Series(dtype=str))
    df["_emu"] = (df["broker_is_emulator"].map(as_bool).astype(bool)
                  if "broker_is_emulator" in df.columns else False)
    return df


def _median(rows: pd.DataFrame, column: str) -> float | None:
    if column not in rows.columns:
        return None
    vals = pd.to_numeric(rows[column], errors="coerce").dropna()
    return as_float(vals.median()) if len(vals) else None


def _compare_metric(metric: str, a: pd.DataFrame, b: pd.DataFrame, config: Any,
                    kind: str) -> MetricComparison | None:
    """One metric of one series; None when neither run has a value for it."""
    from kafkalab.drift.detect import CI_HIGH_SUFFIX, CI_LOW_SUFFIX, evaluate_series

    av, bv = _median(a, metric), _median(b, metric)
    if av is None and bv is None:
        return None
    change = None if av is None or bv is None or av == 0 else (bv - av) / abs(av) * 100.0
    judged = metric in config.metrics_of(kind)
    if av is None or bv is None:
        missing = "A" if av is None else "B"
        return MetricComparison(metric, av, bv, change, "undefined", judged,
                                f"null in run {missing} (too few samples, or not measured)")
    if not judged:
        return MetricComparison(metric, av, bv, change, "not judged", False)
    rule = config.rule(metric).model_copy(update={"min_baseline_runs": 1})
    lo, hi = metric + CI_LOW_SUFFIX, metric + CI_HIGH_SUFFIX
    ci_columns = lo in a.columns and hi in a.columns and lo in b.columns and hi in b.columns
    # An interval is one row's: the median of several rows' bounds is no confidence interval.
    one_row_each = len(a) == 1 and len(b) == 1
    has_ci = ci_columns and one_row_each
    res = evaluate_series([av], bv, rule,
                          (_median(b, lo), _median(b, hi)) if has_ci else None,
                          [(_median(a, lo), _median(a, hi))] if has_ci else None)
    verdict = REGRESSED if res["verdict"] == "drift" else str(res["verdict"])
    note = res.get("note")
    if ci_columns and not one_row_each:
        note = (f"{len(a)} row(s) of this series in A, {len(b)} in B: medians compared by the "
                "MAD rule only, confidence intervals not used")
    return MetricComparison(metric, av, bv, change, verdict, True, note)


def _busy(rows: pd.DataFrame, config: Any) -> str | None:
    """Why one run's rows of a series were measured on a busy host, with their figures; None
    when they were not (or have no host figures)."""
    from kafkalab.drift.busy import busy_rows, host_text

    reasons = [r for r in busy_rows(rows, config.busy_host).tolist() if r]
    if not reasons:
        return None
    figures = host_text(rows.iloc[0].to_dict())
    return str(reasons[0]) + (f" [{figures}]" if figures else "")


def _busy_metric(mc: MetricComparison, busy_a: str | None, busy_b: str | None
                 ) -> MetricComparison:
    """A judged metric of a series measured on a busy host: verdict :data:`BUSY`, the note
    naming the busy run(s) and what the rule would have said."""
    if not mc.judged or mc.verdict not in JUDGED_VERDICTS:
        return mc
    where = "; ".join(f"{w} measured on a busy host ({why})"
                      for w, why in (("A", busy_a), ("B", busy_b)) if why)
    note = f"{where}: not judged; the rule would have said {mc.verdict}"
    return MetricComparison(mc.metric, mc.a_value, mc.b_value, mc.change_pct, BUSY, True,
                            f"{note}; {mc.note}" if mc.note else note)


def _differing_facts(groups_a: dict[Any, pd.DataFrame], groups_b: dict[Any, pd.DataFrame],
                     kind: str, across_versions: bool = False) -> list[str]:
    """Why two runs share no series: for each series of A, the series of B closest to it
    (fewest differing facts); every fact that differs in those pairs, as ``column: values
    in A, values in B`` (``broker``: emulator or kafka)."""
    from kafkalab.drift.detect import key_part

    columns = (*_key_columns(kind, across_versions), "_emu")

    def facts(rows: pd.DataFrame) -> dict[str, str]:
        row = rows.iloc[0]
        return {c: ("emulator" if row["_emu"] else "kafka") if c == "_emu"
                else str(key_part(row.get(c))) for c in columns}

    def shown(values: set[str]) -> str:
        named = sorted(v or "none" for v in values)
        return ", ".join(named[:3]) + (f" (+{len(named) - 3} more)" if len(named) > 3 else "")

    facts_b = [facts(g) for g in groups_b.values()]
    differ: dict[str, tuple[set[str], set[str]]] = {}
    for fa in (facts(g) for g in groups_a.values()):
        if not facts_b:
            break
        fb = min(facts_b, key=lambda other: sum(fa[c] != other[c] for c in columns))
        for c in columns:
            if fa[c] != fb[c]:
                in_a, in_b = differ.setdefault(c, (set(), set()))
                in_a.add(fa[c])
                in_b.add(fb[c])
    return [f"{'broker' if c == '_emu' else c} {shown(differ[c][0])} in A, "
            f"{shown(differ[c][1])} in B" for c in columns if c in differ]


def compare_runs(data_dir: str | os.PathLike[str], run_a: str, run_b: str,
                 config_path: str | os.PathLike[str] | None = None,
                 across_versions: bool = False) -> Comparison:
    """Compare run B with run A (see the module docstring).

    Args:
        data_dir: the lab data directory.
        run_a: the reference run.
        run_b: the run judged against it.
        config_path: drift rules YAML. None: ``include/drift.yaml``, or the built-in rules
            when that file does not exist; a path given must exist and parse.
        across_versions: an upgrade: series keyed without the broker's flavor and version.

    Raises:
        ConfigError: an unknown run, a run without aggregates, a fault run, runs of two
            kinds (latency vs load), or a bad drift config (a ``config_path`` given that
            does not exist or does not parse).
    """
    from kafkalab.cluster.descriptor import EMULATOR_LABEL
    from kafkalab.drift.config import load_drift_config, load_drift_config_or_default

    config = (load_drift_config(config_path) if config_path is not None
              else load_drift_config_or_default())
    kind_a, rows_a = _run_rows(data_dir, run_a)
    kind_b, rows_b = _run_rows(data_dir, run_b)
    if kind_a != kind_b:
        raise ConfigError(f"run {run_a} is a {kind_a} run and {run_b} a {kind_b} run: "
                          "nothing to compare")
    kind = kind_a
    shown = SHOWN[kind]
    metrics = list(dict.fromkeys([*shown[:3], *config.metrics_of(kind), *shown[3:]]))
    ta = _series_table(rows_a, kind, across_versions)
    tb = _series_table(rows_b, kind, across_versions)
    keys_a = {k: g for k, g in ta.groupby(["_series", "_emu"], sort=True)}
    keys_b = {k: g for k, g in tb.groupby(["_series", "_emu"], sort=True)}

    def broker_label(emulator: Any) -> str | None:
        return EMULATOR_LABEL if emulator else None

    def listed(groups: dict[Any, pd.DataFrame], keys: list[Any]) -> list[dict[str, Any]]:
        return [{"series": k[0], "label": _label(groups[k].iloc[0], kind), "emulator": bool(k[1]),
                 "broker_label": broker_label(k[1])} for k in keys]

    shared: list[SeriesComparison] = []
    for key in sorted(set(keys_a) & set(keys_b)):
        a, b = keys_a[key], keys_b[key]
        sc = SeriesComparison(series=str(key[0]), label=_label(b.iloc[0], kind),
                              emulator=bool(key[1]), broker_label=broker_label(key[1]),
                              busy_a=_busy(a, config), busy_b=_busy(b, config))
        for metric in metrics:
            mc = _compare_metric(metric, a, b, config, kind)
            if mc is not None:
                sc.metrics.append(_busy_metric(mc, sc.busy_a, sc.busy_b)
                                  if sc.busy_a or sc.busy_b else mc)
        shared.append(sc)
    regressed = sum(1 for s in shared for m in s.metrics if m.verdict == REGRESSED)
    judged = sum(1 for s in shared for m in s.metrics if m.verdict in JUDGED_VERDICTS)
    reason = None
    if not shared:
        differ = _differing_facts(keys_a, keys_b, kind, across_versions)
        reason = (f"nothing comparable: {run_a} and {run_b} share no series ("
                  + ("; ".join(differ) if differ
                     else "their series differ") + ")")
        if differ and all(d.split(" ", 1)[0] in BROKER_COLUMNS for d in differ):
            reason += ": only the broker differs; compare an upgrade with --across-versions"
    elif not judged and any(s.busy_a or s.busy_b for s in shared):
        reason = (f"nothing comparable: every series {run_a} and {run_b} share with a "
                  "drift-checked value was measured on a busy host in one of them (see each "
                  "metric's note); measure again on a quiet host")
    elif not judged:
        reason = (f"nothing comparable: the {len(shared)} series {run_a} and {run_b} share have "
                  f"no drift-checked metric ({', '.join(config.metrics_of(kind))}) with a "
                  "value in both runs")
    facts_a = run_facts(data_dir, run_a, kind, as_baseline=True)
    return Comparison(run_a=run_a, run_b=run_b, kind=kind, comparable=reason is None,
                      reason=reason, baseline_ok=facts_a.good, run_a_facts=facts_a,
                      run_b_facts=run_facts(data_dir, run_b, kind, as_baseline=False),
                      shared=shared,
                      only_a=listed(keys_a, sorted(set(keys_a) - set(keys_b))),
                      only_b=listed(keys_b, sorted(set(keys_b) - set(keys_a))),
                      judged=judged, regressed=regressed, across_versions=across_versions,
                      busy=sum(1 for s in shared if s.busy_a or s.busy_b),
                      broker_versions={"a": _versions(rows_a), "b": _versions(rows_b)})


def _versions(rows: pd.DataFrame) -> list[str]:
    """The broker versions of a run's rows (sorted; empty when not recorded)."""
    if "broker_version" not in rows.columns:
        return []
    return sorted({str(v) for v in rows["broker_version"].dropna() if str(v)})


def _fmt(value: float | None, metric: str = "") -> str:
    if value is None:
        return "n/a"
    if metric.endswith("_count") and value.is_integer():
        return str(int(value))
    return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"


def format_comparison(c: Comparison) -> str:
    """What ``kafkalab compare`` prints: each run's state, validation and stale outputs (a
    warning when A is not a good baseline or B not a good run), then the side-by-side table
    (one line per series metric; an emulator's series labelled), the series of one run only,
    why nothing is comparable (when so) and a summary line."""
    from kafkalab.cluster.descriptor import EMULATOR_LABEL

    out: list[str] = []
    for which, f in (("A", c.run_a_facts), ("B", c.run_b_facts)):
        out.append(f"{which} {f.run_id}: {f.state}, validation {f.validation}, "
                   + (f"stale outputs: {', '.join(f.stale_outputs)}" if f.stale_outputs
                      else "no stale outputs"))
    if not c.baseline_ok:
        out.append(f"WARNING: A {c.run_a} is not a good baseline ({'; '.join(c.run_a_facts.problems)}):"
                   " drift would not take it; the verdicts below judge B against it anyway")
    if c.across_versions:
        out.append(f"upgrade: Kafka {', '.join(c.broker_versions.get('a') or ['?'])} (A) -> "
                   f"Kafka {', '.join(c.broker_versions.get('b') or ['?'])} (B); series keyed "
                   "without the broker, judged against one run of A (for rounds on fresh "
                   "clusters: kafkalab versions run)")
    if not c.run_b_facts.good:
        out.append(f"WARNING: B {c.run_b} is not a good run ({'; '.join(c.run_b_facts.problems)}):"
                   " its figures may be partial or unchecked")
    head = ("series", "metric", c.run_a[:24], c.run_b[:24], "change", "verdict")
    lines: list[tuple[str, ...]] = []
    for s in c.shared:
        label = s.label + (f" ({EMULATOR_LABEL})" if s.emulator else "")
        busy = [w for w, why in (("A", s.busy_a), ("B", s.busy_b)) if why]
        label += f" [busy host: {', '.join(busy)}]" if busy else ""
        for i, m in enumerate(s.metrics):
            change = "n/a" if m.change_pct is None else f"{m.change_pct:+.1f}%"
            verdict = m.verdict.upper() if m.verdict == REGRESSED else m.verdict
            lines.append((label if i == 0 else "", m.metric, _fmt(m.a_value, m.metric),
                          _fmt(m.b_value, m.metric),
                          change, verdict))
    widths = [max(len(r[i]) for r in [head, *lines]) for i in range(len(head))]
    out += ["  ".join(v.ljust(widths[i]) if i < 2 or i == 5 else v.rjust(widths[i])
                      for i, v in enumerate(r)).rstrip() for r in [head, *lines]]
    for s in c.shared:
        for which, why in (("A", s.busy_a), ("B", s.busy_b)):
            if why:
                out.append(f"busy host: {s.label} in {which} "
                           f"({c.run_a if which == 'A' else c.run_b}): {why}; not judged")
    if c.reason:
        out.append(c.reason)
    for name, only in ((c.run_a, c.only_a), (c.run_b, c.only_b)):
        for one in only:
            out.append(f"only in {name}: {one['label']}"
                       + (f" ({EMULATOR_LABEL})" if one["emulator"] else ""))
    out.append(f"{c.kind} runs; {len(c.shared)} shared series, {c.judged} judged metric(s), "
               f"{c.regressed} regressed in {c.run_b}"
               + (f", {c.busy} series measured on a busy host not judged" if c.busy else "")
               + " (drift rule of include/drift.yaml with "
               f"{c.run_a} as a one-run baseline)")
    return "\n".join(out)


__all__ = [
    "BUSY",
    "JUDGED_VERDICTS",
    "LATENCY_SHOWN",
    "LOAD_SHOWN",
    "REGRESSED",
    "Comparison",
    "MetricComparison",
    "RunFacts",
    "SeriesComparison",
    "compare_runs",
    "format_comparison",
    "run_facts",
]
