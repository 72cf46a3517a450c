"""Part (h) of ``make bench``: what the on-call features of the report cost as the history grows.

A fabricated history of nightly runs (no Kafka, no Spark) is written with the project's own
writers, one night at a time, into ``<work>/data``: fake raw samples
(:func:`tools.fake_samples.write_fake_samples`, every scenario of the catalog × 1kb/1mb ×
the ``latency`` profile: 10 cells, ``samples_per_cell`` rows each on average), their
aggregates (the pandas twin of the Spark job, :func:`tools.bench.spark.pandas_aggregate`,
stored as the job stores them), a manifest (:meth:`kafkalab.store.LabData.write_manifest`), a
passed validation and the night's drift records (:func:`kafkalab.drift.run_drift`, as
``check_drift`` does). When the history reaches each size of ``nights`` (7, 30, 90 by
default) these are timed, ``repeats`` times each (median and min, ``time.perf_counter``):

* ``report_newest``: ``build_report(data, run_id=newest)``, what the nightly's
  ``publish_report`` does (the newest run's page and the overview, which mirrors it);
* ``report_all_pages``: ``build_report(data)``, every run's page and the overview (only up to
  ``all_pages_max_nights``, 30 by default: page k draws k nights, so this grows with the
  square of the history and more);
* ``spectra_newest`` / ``spectra_all``: :func:`kafkalab.report.spectrum.read_spectrum` on the
  (run, cell) pairs the newest page reads (this run and up to ``MAX_RUNS - 1`` earlier ones)
  and on every (run, cell) of the history (what the all-pages build reads, each once);
* ``change_points_newest`` / ``change_points_all_pages``:
  :func:`kafkalab.report.changepoints.change_points` on every trend series (cell × metric of
  :data:`kafkalab.report.trends.TREND_METRICS`) over the whole history, and over each
  prefix of it (each run's page draws the history up to that run; the latter only up to
  ``all_pages_max_nights``);
* ``export_prometheus``: :func:`kafkalab.export.prometheus.export_textfile`;
* ``drift_newest``: the newest night's drift judgement (timed once, while writing it).

Each timing also gives seconds per night; ``growth`` compares the largest history with the
smallest: ``per_night_ratio`` 1 means linear growth, above 1 superlinear. The HTML sizes
(newest page, overview, all pages) and the text file's size are recorded too.
"""

from __future__ import annotations

import datetime as dt
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kafkalab import drift
from kafkalab.catalog import SCENARIOS
from kafkalab.cluster.flavors import DEFAULT_EMBEDDED
from kafkalab.export.prometheus import export_textfile
from kafkalab.report.build import build_report
from kafkalab.report.changepoints import change_points, clear_cache
from kafkalab.report.spectrum import MAX_RUNS, read_spectrum
from kafkalab.report.trends import TREND_METRICS
from kafkalab.store import LabData, atomic_write_json
from tools.bench.spark import _read_lean, pandas_aggregate
from tools.fake_samples import write_fake_samples

PAYLOADS: tuple[str, ...] = ("1kb", "1mb")
PROFILE = "latency"
CELLS: tuple[tuple[str, str, str], ...] = tuple(
    (s, p, PROFILE) for s in SCENARIOS for p in PAYLOADS)
"""The matrix of every fabricated night: (scenario, payload, profile), 10 cells."""

FIRST_NIGHT = dt.date(2026, 6, 1)
"""The night the fabricated history starts on; night ``i`` is ``FIRST_NIGHT + i`` days."""


@dataclass(frozen=True)
class ReportBenchConfig:
    """Sizes of part (h)."""

    nights: tuple[int, ...] = (7, 30, 90)
    """History sizes at which the timings are taken (increasing; the history is grown)."""
    samples_per_cell: int = 400
    """Fake sample rows per cell per night (on average: probes and tool rows included)."""
    repeats: int = 3
    """Times each timing is repeated (median and min are reported)."""
    all_pages_max_nights: int = 30
    """The whole report (every run's page) and change points over every prefix are timed only
    up to this history size: their cost grows with the square and cube of the nights."""


def night_run_id(i: int) -> tuple[str, str]:
    """``(run_id, "YYYY-MM-DD")`` of fabricated night ``i`` (0-based)."""
    day = FIRST_NIGHT + dt.timedelta(days=i)
    return f"nightly-{day:%Y%m%d}T000000Z", day.isoformat()


def add_night(lab: LabData, stage: Path, i: int, samples_per_cell: int) -> float:
    """Write fabricated night ``i`` into ``lab``: samples, aggregates, manifest, validation,
    drift records. ``stage`` is scratch (the aggregation reads only this night's samples).
    Returns the seconds the night's drift judgement took."""
    run_id, day = night_run_id(i)
    shutil.rmtree(stage, ignore_errors=True)
    staged = LabData(stage)
    files = write_fake_samples(stage, samples_per_cell * len(CELLS), run_id, seed=i,
                               scenarios=SCENARIOS, payloads=PAYLOADS, profiles=(PROFILE,),
                               workload="nightly")
    agg = pandas_aggregate(_read_lean(staged.samples_dir))
    run_dir = files[0].parent
    dest = lab.samples_dir / run_dir.relative_to(staged.samples_dir)
    dest.parent.mkdir(parents=True, exist_ok=True)
    run_dir.rename(dest)
    out = lab.aggregates_dir / f"run_id={run_id}"  # as the Spark job partitions them
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(agg.drop(columns=["run_id"]), preserve_index=False),
                   out / "part-00000.parquet")
    lab.write_manifest({
        "schema_version": 2, "run_id": run_id, "status": "complete", "workload": "nightly",
        "started_at": f"{day}T01:02:03+00:00", "ended_at": f"{day}T01:09:03+00:00",
        "logical_date": f"{day}T00:00:00+00:00",
        "cluster": {"flavor": DEFAULT_EMBEDDED.name, "version": DEFAULT_EMBEDDED.version,
                    "is_emulator": False},
        "stale_outputs": []})
    atomic_write_json(lab.validation_path(run_id), {"success": True, "failed": []})
    t0 = time.perf_counter()
    drift.run_drift(lab.root, run_id)
    return time.perf_counter() - t0


def timed(fn: Callable[[], Any], repeats: int) -> dict[str, Any]:
    """Run ``fn`` ``repeats`` times, each cold (the change points' memory of earlier series
    cleared first, untimed, as in a fresh ``publish_report`` process):
    ``{"median_s", "min_s", "runs_s"}``."""
    runs: list[float] = []
    for _ in range(repeats):
        clear_cache()
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(runs), "min_s": min(runs), "runs_s": runs}


def trend_series(lab: LabData) -> list[list[float | None]]:
    """The values of every trend series (cell × :data:`TREND_METRICS` metric; Kafka's tool
    from its own column) in run order, as the trend charts feed them to change points."""
    hist = drift.load_history(lab.root)
    order = drift.run_order(hist)
    pos = {r: k for k, r in enumerate(order)}
    out: list[list[float | None]] = []
    for (scenario, _payload), rows in hist.groupby(["scenario", "payload"]):
        for metric, _title, _unit, tool_col in TREND_METRICS:
            col = tool_col if scenario == "jvm-e2e" and tool_col else metric
            if col not in rows:
                continue
            values: list[float | None] = [None] * len(order)
            for rid, val in pd.to_numeric(rows[col], errors="coerce").groupby(
                    rows["run_id"].astype(str)).median().items():
                if str(rid) in pos and pd.notna(val):
                    values[pos[str(rid)]] = float(val)
            if any(v is not None for v in values):
                out.append(values)
    return out


def _bytes(paths: Sequence[Path]) -> int:
    return sum(p.stat().st_size for p in paths)


def measure(lab: LabData, n_nights: int, repeats: int, work: Path, *, all_pages: bool = True,
            warm_up: bool = False) -> dict[str, Any]:
    """Time the report's parts on the first ``n_nights`` fabricated nights in ``lab``
    (``all_pages``: also the whole report and change points over every prefix; ``warm_up``:
    build the newest page once untimed first, so imports are not timed)."""
    run_ids = [night_run_id(i)[0] for i in range(n_nights)]
    newest = run_ids[-1]
    reports = work / "reports"
    spectra_newest = [(r, c) for c in CELLS for r in reversed(run_ids[-MAX_RUNS:])]
    spectra_all = [(r, c) for r in run_ids for c in CELLS]
    series = trend_series(lab)
    prom = work / "metrics" / "kafkalab.prom"

    def all_prefixes() -> None:
        for values in series:
            for k in range(1, len(values) + 1):
                change_points(values[:k])

    t: dict[str, dict[str, Any]] = {}
    shutil.rmtree(reports, ignore_errors=True)
    if warm_up:
        build_report(lab.root, reports, run_id=newest)
    t["report_newest"] = timed(lambda: build_report(lab.root, reports, run_id=newest), repeats)
    page = lab.report_page_dir(newest, reports) / "index.html"
    index = lab.report_index_path(reports)
    html = {"newest_page_bytes": page.stat().st_size, "overview_bytes": index.stat().st_size}
    if all_pages:
        t["report_all_pages"] = timed(lambda: build_report(lab.root, reports), repeats)
        html["all_pages_bytes"] = _bytes(sorted(reports.rglob("*.html")))
    t["spectra_newest"] = timed(lambda: [read_spectrum(lab, r, *c) for r, c in spectra_newest],
                                repeats)
    t["spectra_all"] = timed(lambda: [read_spectrum(lab, r, *c) for r, c in spectra_all], repeats)
    t["change_points_newest"] = timed(lambda: [change_points(v) for v in series], repeats)
    if all_pages:
        t["change_points_all_pages"] = timed(all_prefixes, repeats)
    t["export_prometheus"] = timed(lambda: export_textfile(lab.root, prom), repeats)
    for v in t.values():
        v["median_s_per_night"] = v["median_s"] / n_nights
    return {"nights": n_nights, "runs": len(run_ids), "cells": len(CELLS),
            "trend_series": len(series), "spectrum_reads_newest": len(spectra_newest),
            "spectrum_reads_all": len(spectra_all), "all_pages_timed": all_pages, "timings": t, "html": html,
            "prom_bytes": prom.stat().st_size}


def growth(sizes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per timing, its largest history against the smallest: ``{"nights": [small, big],
    "time_ratio", "per_night_ratio"}`` (per-night ratio 1 = linear in the nights, above 1
    superlinear); timings taken at one size only are left out."""
    out: dict[str, Any] = {}
    for name in (sizes[0]["timings"] if sizes else {}):
        have = [s for s in sizes if name in s["timings"]]
        if len(have) < 2:
            continue
        small, big = have[0], have[-1]
        a, b = small["timings"][name]["median_s"], big["timings"][name]["median_s"]
        nights_ratio = big["nights"] / small["nights"]
        ratio = b / a if a > 0 else None
        out[name] = {"nights": [small["nights"], big["nights"]], "time_ratio": ratio,
                     "per_night_ratio": None if ratio is None else ratio / nights_ratio}
    return out


def bench_report(work: Path, config: ReportBenchConfig | None = None) -> dict[str, Any]:
    """Grow a fabricated history to each size of ``config.nights`` and time the report's
    parts at each; scratch under ``work`` (removed at the end)."""
    cfg = config or ReportBenchConfig()
    nights = sorted(set(cfg.nights))
    lab = LabData(work / "data")
    stage = work / "stage"
    sizes: list[dict[str, Any]] = []
    written = 0
    gen_s = 0.0
    try:
        for n in nights:
            t0 = time.perf_counter()
            drift_s = 0.0
            while written < n:
                drift_s = add_night(lab, stage, written, cfg.samples_per_cell)
                written += 1
            gen_s += time.perf_counter() - t0
            hist = drift.load_history(lab.root)
            size = measure(lab, n, cfg.repeats, work, all_pages=n <= cfg.all_pages_max_nights,
                           warm_up=not sizes)
            size["drift_newest_s"] = drift_s
            size["samples_per_message_cell"] = float(pd.to_numeric(
                hist.loc[hist["sent_count"] > 0, "sent_count"]).median())
            sizes.append(size)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"config": asdict(cfg), "fabricate_s": gen_s, "sizes": sizes,
            "growth": growth(sizes)}


def print_report(result: dict[str, Any]) -> None:
    """The table of part (h): median seconds (ms per night) per history size."""
    sizes = result["sizes"]
    print("\n(h) report cost by history size: median s (ms per night), fabricated nights")
    print(f"  {'':<26}" + "".join(f"{str(s['nights']) + ' nights':>22}" for s in sizes))
    for name in (sizes[0]["timings"] if sizes else {}):
        cells = [s["timings"].get(name) for s in sizes]
        print(f"  {name:<26}" + "".join(
            f"{'not timed':>22}" if c is None
            else f"{c['median_s']:>11.3f} ({1000 * c['median_s_per_night']:>7.1f})"
            for c in cells))
    for key in ("newest_page_bytes", "overview_bytes", "all_pages_bytes"):
        print(f"  {'html ' + key:<26}" + "".join(
            f"{s['html'].get(key, 0):>22,}" if key in s["html"] else f"{'-':>22}"
            for s in sizes))
    print(f"  {'drift judgement (newest)':<26}" + "".join(
        f"{s['drift_newest_s']:>11.3f}{'':11}" for s in sizes))
    print("  growth, largest history against the smallest (per night × 1 = linear):")
    for name, g in (result.get("growth") or {}).items():
        if g["per_night_ratio"] is not None:
            print(f"    {name:<26} {g['nights'][0]} → {g['nights'][1]} nights: time × "
                  f"{g['time_ratio']:.1f}, per night × {g['per_night_ratio']:.2f}")
