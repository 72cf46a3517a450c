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

Series present in only one run are listed, never dropped. Pure reading: nothing is written.
"""

from __future__ import annotations

import os
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

REGRESSED = "regressed"
"""The verdict of a series metric that drifted from A to B (``drift`` in the drift rule)."""


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
    metrics: list[MetricComparison] = field(default_factory=list)


@dataclass
class Comparison:
    """The result of :func:`compare_runs`."""

    run_a: str
    run_b: str
    kind: str
    """``latency`` or ``load``."""
    shared: list[SeriesComparison]
    only_a: list[dict[str, Any]]
    """``{"series", "label", "emulator"}`` of the series only run A has."""
    only_b: list[dict[str, Any]]
    regressed: int
    """Series metrics of B that regressed."""

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
    from kafkalab.drift.load import load_cells_history, load_run_dir
    from kafkalab.store import LabData

    lab = LabData(data_dir)
    manifest = lab.manifest(run_id)
    if lab.aggregates_dir.joinpath(f"run_id={run_id}").is_dir():
        history = load_history(lab.root, {run_id: manifest} if manifest else {})
        rows = history[history["run_id"].astype(str) == run_id] if not history.empty else history
        if not rows.empty:
            return "latency", rows.reset_index(drop=True)
    if load_run_dir(lab, run_id).is_dir():
        cells = load_cells_history(lab.root, {run_id: manifest} if manifest else {})
        rows = cells[cells["run_id"].astype(str) == run_id] if not cells.empty else cells
        if not rows.empty:
            return "load", rows.reset_index(drop=True)
    if manifest is None:
        raise ConfigError(f"unknown run {run_id!r}: no manifest and no aggregates in {lab.root}")
    if manifest.get("kind") == "faults":
        raise ConfigError(f"run {run_id} is a fault run: compare judges latency and load runs")
    raise ConfigError(f"run {run_id} has no aggregates yet: run `kafkalab aggregate --run-id "
                      f"{run_id}` first")


def _label(row: pd.Series, kind: str) -> str:
    """``scenario [client] payload profile`` (latency) or ``client payload profile acks=…
    consumers=… rate=…`` (load), from a row's series parts."""
    from kafkalab.drift.detect import key_part

    def part(name: str) -> str:
        return key_part(row.get(name)) if name in row.index else ""

    if kind == "load":
        bits = [part("client"), part("payload"), part("profile"), f"acks={part('acks')}",
                f"consumers={part('consumers')}", f"rate={part('rate_msgs_per_s')}"]
    else:
        scenario, client = part("scenario"), part("client")
        bits = [scenario, *([f"[{client}]"] if client and client != scenario
                            and not scenario.startswith(client) else []),
                part("payload"), part("profile")]
    return " ".join(b for b in bits if b)


def _series_table(rows: pd.DataFrame, kind: str) -> pd.DataFrame:
    """``rows`` with ``_series`` (the key without the metric) and ``_emu`` (bool)."""
    from kafkalab.drift.detect import KINDS, key_part
    from kafkalab.values import as_bool

    df = rows.copy()
    cols = KINDS[kind]
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
    has_ci = lo in a.columns and hi in a.columns and lo in b.columns and hi in b.columns
    res = evaluate_series([av], bv, rule,
                          (_median(b, lo), _median(b, hi)) if has_ci else None,
                          [(_median(a, lo), _median(a, hi))] if has_ci else None)
    verdict = REGRESSED if res["verdict"] == "drift" else str(res["verdict"])
    return MetricComparison(metric, av, bv, change, verdict, True, res.get("note"))


def compare_runs(data_dir: str | os.PathLike[str], run_a: str, run_b: str,
                 config_path: str | os.PathLike[str] | None = None) -> Comparison:
    """Compare run B with run A (see the module docstring).

    Args:
        data_dir: the lab data directory.
        run_a: the reference run.
        run_b: the run judged against it.
        config_path: drift rules YAML. None: ``include/drift.yaml``, or the built-in rules
            when that file does not exist; a path given must exist and parse.

    Raises:
        ConfigError: an unknown run, a run without aggregates, a fault run, runs of two
            kinds (latency vs load), or a bad drift config (a ``config_path`` given that
            does not exist or does not parse).
    """
    from kafkalab.drift.config import load_drift_config, load_drift_config_or_default

    config = (load_drift_config(config_path) if config_path is not None
              else load_drift_config_or_default())
    kind_a, rows_a = _run_rows(data_dir, run_a)
    kind_b, rows_b = _run_rows(data_dir, run_b)
    if kind_a != kind_b:
        raise ConfigError(f"run {run_a} is a {kind_a} run and {run_b} a {kind_b} run: "
                          "nothing to compare")
    kind = kind_a
    shown = LOAD_SHOWN if kind == "load" else LATENCY_SHOWN
    metrics = list(dict.fromkeys([*shown[:3], *config.metrics_of(kind), *shown[3:]]))
    ta, tb = _series_table(rows_a, kind), _series_table(rows_b, kind)
    keys_a = {k: g for k, g in ta.groupby(["_series", "_emu"], sort=True)}
    keys_b = {k: g for k, g in tb.groupby(["_series", "_emu"], sort=True)}

    def listed(groups: dict[Any, pd.DataFrame], keys: list[Any]) -> list[dict[str, Any]]:
        return [{"series": k[0], "label": _label(groups[k].iloc[0], kind), "emulator": bool(k[1])}
                for k in keys]

    shared: list[SeriesComparison] = []
    for key in sorted(set(keys_a) & set(keys_b)):
        a, b = keys_a[key], keys_b[key]
        sc = SeriesComparison(series=str(key[0]), label=_label(b.iloc[0], kind),
                              emulator=bool(key[1]))
        for metric in metrics:
            mc = _compare_metric(metric, a, b, config, kind)
            if mc is not None:
                sc.metrics.append(mc)
        shared.append(sc)
    regressed = sum(1 for s in shared for m in s.metrics if m.verdict == REGRESSED)
    return Comparison(run_a=run_a, run_b=run_b, kind=kind, shared=shared,
                      only_a=listed(keys_a, sorted(set(keys_a) - set(keys_b))),
                      only_b=listed(keys_b, sorted(set(keys_b) - set(keys_a))),
                      regressed=regressed)


def _fmt(value: float | None, metric: str = "") -> str:
    if value is None:
        return "n/a"
    if metric.endswith("_count") and value.is_integer():
        return str(int(value))
    return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"


def format_comparison(c: Comparison) -> str:
    """The side-by-side table ``kafkalab compare`` prints (one line per series metric)."""
    from kafkalab.cluster.descriptor import EMULATOR_LABEL

    head = ("series", "metric", c.run_a[:24], c.run_b[:24], "change", "verdict")
    lines: list[tuple[str, ...]] = []
    for s in c.shared:
        label = s.label + (f" ({EMULATOR_LABEL})" if s.emulator else "")
        for i, m in enumerate(s.metrics):
            change = "n/a" if m.change_pct is None else f"{m.change_pct:+.1f}%"
            verdict = m.verdict.upper() if m.verdict == REGRESSED else m.verdict
            lines.append((label if i == 0 else "", m.metric, _fmt(m.a_value, m.metric),
                          _fmt(m.b_value, m.metric),
                          change, verdict))
    widths = [max(len(r[i]) for r in [head, *lines]) for i in range(len(head))]
    out = ["  ".join(v.ljust(widths[i]) if i < 2 or i == 5 else v.rjust(widths[i])
                     for i, v in enumerate(r)).rstrip() for r in [head, *lines]]
    if not c.shared:
        out.append("(no series in common)")
    for name, only in ((c.run_a, c.only_a), (c.run_b, c.only_b)):
        for one in only:
            out.append(f"only in {name}: {one['label']}"
                       + (f" ({EMULATOR_LABEL})" if one["emulator"] else ""))
    judged = sum(1 for s in c.shared for m in s.metrics if m.judged)
    out.append(f"{c.kind} runs; {len(c.shared)} shared series, {judged} judged metric(s), "
               f"{c.regressed} regressed in {c.run_b} (drift rule of include/drift.yaml with "
               f"{c.run_a} as a one-run baseline)")
    return "\n".join(out)


__all__ = [
    "LATENCY_SHOWN",
    "LOAD_SHOWN",
    "REGRESSED",
    "Comparison",
    "MetricComparison",
    "SeriesComparison",
    "compare_runs",
    "format_comparison",
]
