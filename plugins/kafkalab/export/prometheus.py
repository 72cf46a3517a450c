"""The lab's latest figures as a Prometheus text file (node_exporter's textfile collector).

``kafkalab export prometheus`` and the nightly DAG (after each run) call
:func:`write_textfile`: it reads the data directory (run manifests, validation results,
aggregates, drift records) and writes one file in the Prometheus text exposition format
0.0.4 (what node_exporter's ``--collector.textfile.directory`` reads: files named
``*.prom``), atomically (:func:`kafkalab.store.atomic_write`: node_exporter never reads half
a file). Default path: ``<data dir>/metrics/kafkalab.prom`` (:func:`default_textfile_path`).

Every metric is a gauge, built with ``prometheus_client`` (a registry of its own, never the
process's default one). Names carry their unit; labels name the series. A figure that does
not exist (a percentile below its minimum sample count, a censored rank, a cell that did not
measure it) is *omitted*, never written as 0. The metrics, labels and PromQL examples are in
``docs/prometheus.md``; a Grafana dashboard over them is ``include/grafana/kafkalab.json``.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalab.errors import ConfigError
from kafkalab.kinds import FAULTS, RUN_KINDS, kind_name, kind_of
from kafkalab.values import as_float

if TYPE_CHECKING:
    import pandas as pd
    from prometheus_client import CollectorRegistry, Gauge

    from kafkalab.store import LabData

METRICS_DIR = "metrics"
"""``<data dir>/metrics/``: where the text file goes by default."""

TEXTFILE_NAME = "kafkalab.prom"
"""The default file name (the textfile collector reads ``*.prom`` files only)."""

TEXTFILE_MODE = 0o644
"""The text file's permission bits: readable by node_exporter, which runs as its own user
(the lab's other files are owner-only, 0600)."""

KINDS: tuple[str, ...] = tuple(RUN_KINDS)
"""The kinds of run (label ``kind``, :data:`kafkalab.kinds.RUN_KINDS`): closed-loop latency
runs, load runs, fault runs."""

RUN_LABELS: tuple[str, ...] = ("kind", "emulator", "source")
"""Labels of the run-level gauges: the kind of run, ``emulator`` (``"true"`` when the run's
cluster is an emulator) and ``source`` (:data:`SOURCES`, :func:`run_source`)."""

SOURCES: tuple[str, ...] = ("dag", "cli")
"""Who made a run (label ``source``): ``dag`` an Airflow DAG run, ``cli`` anything else."""

LATENCY_LABELS: tuple[str, ...] = (
    "series", "scenario", "client", "payload", "payload_encoding", "profile", "workload",
    "cluster_flavor", "broker_version", "emulator",
)
"""Labels of a latency series (a cell of ``kafkalab run`` / the latency DAGs). ``series`` is
the drift series key without its metric (every part of
:data:`kafkalab.drift.records.SERIES_COLUMNS`: payload bytes, broker version and count,
planned messages too), so two series that differ in a part not spelled out as a label of
its own stay two series."""

LOAD_LABELS: tuple[str, ...] = (
    "series", "client", "payload", "profile", "acks", "consumers", "rate_msgs_per_s",
    "partitions", "consumer_mode", "cluster_flavor", "broker_version", "emulator",
)
"""Labels of a load series (a cell of ``kafkalab load`` / the load DAGs); ``series`` is the
load drift series key without its metric (every part of
:data:`kafkalab.drift.records.LOAD_SERIES_COLUMNS`: encoding, duration, pause, broker
version and count too)."""

FAULT_LABELS: tuple[str, ...] = ("profile", "fault", "acks", "commit", "emulator")
"""Labels of a fault cell (``kafkalab faults run`` / the resilience DAG)."""

DRIFT_LABELS: tuple[str, ...] = (
    "series", "metric", "scenario", "client", "payload", "profile", "emulator",
)
"""Labels of a drift state: ``series`` is the drift series key (as ``kafkalab drift``
prints it and ``kafkalab drift accept`` takes it)."""

DRIFT_ACTIVE_STATES = frozenset({"drifting", "alerting"})
"""Alert states in which a series counts as drifting (``kafkalab_drift_active`` 1)."""


def default_textfile_path(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """``<data dir>/metrics/kafkalab.prom`` (data dir: ``$KAFKALAB_DATA_DIR``, else
    ``lab-data/``). No I/O."""
    from kafkalab.store import LabData

    return LabData(data_dir).root / METRICS_DIR / TEXTFILE_NAME


# --------------------------------------------------------------------------- reading


def _timestamp_s(value: Any) -> float | None:
    """Seconds since the epoch of an ISO-8601 time (naive: UTC), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.timestamp()


def run_source(manifest: Mapping[str, Any] | None) -> str:
    """``dag`` when a run manifest says an Airflow DAG run made it (``owner.kind`` is
    ``airflow``, or it records the DAG run's ``logical_date``), else ``cli``."""
    m = manifest or {}
    owner = m.get("owner")
    if isinstance(owner, Mapping) and owner.get("kind") == "airflow":
        return "dag"
    return "dag" if m.get("logical_date") else "cli"


def run_is_emulator(manifest: Mapping[str, Any] | None) -> bool:
    """Whether a run manifest's cluster is an emulator (``cluster.is_emulator``)."""
    from kafkalab.values import as_bool

    cluster = (manifest or {}).get("cluster")
    return isinstance(cluster, Mapping) and as_bool(cluster.get("is_emulator"))


def run_succeeded(lab: LabData, run_id: str, manifest: Mapping[str, Any]) -> bool:
    """A successful run: its manifest says ``complete`` and its validation result says
    ``success: true`` (a run never validated has not succeeded)."""
    if manifest.get("status") != "complete":
        return False
    doc = lab.validation(run_id, kind_of(manifest))
    return doc is not None and doc.get("success") is True


def _label(value: Any) -> str:
    """A label value: the drift key's spelling (``''`` for missing, ``1024`` not ``1024.0``)."""
    from kafkalab.drift.detect import key_part

    return key_part(value)


def _emulator(value: Any) -> str:
    from kafkalab.values import as_bool

    return "true" if as_bool(value) else "false"


def _latest_per_labels(df: pd.DataFrame, order: list[str],
                       labels: Callable[[Mapping[str, Any]], tuple[str, ...]]
                       ) -> dict[tuple[str, ...], dict[str, Any]]:
    """The newest row (by ``order`` of run ids, oldest first: the night each run measured,
    :func:`kafkalab.drift.history.run_order`) of each label set."""
    pos = {rid: i for i, rid in enumerate(order)}
    rows = sorted(df.to_dict(orient="records"), key=lambda r: pos.get(str(r.get("run_id")), -1))
    return {labels(r): r for r in rows}


# --------------------------------------------------------------------------- the registry


class _Gauges:
    """The gauges of one export, in one registry of their own."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry

        self.registry: CollectorRegistry = CollectorRegistry(auto_describe=False)

    def gauge(self, name: str, doc: str, labels: tuple[str, ...]) -> Gauge:
        from prometheus_client import Gauge

        return Gauge(name, doc, list(labels), registry=self.registry)


def _set(g: Gauge, labels: tuple[str, ...], value: Any) -> None:
    """Set one sample; an undefined value is left out (never 0)."""
    v = as_float(value)
    if v is not None:
        g.labels(*labels).set(v)


def _first(row: Mapping[str, Any], *columns: str) -> float | None:
    """The first defined value of ``columns`` in ``row``."""
    for c in columns:
        v = as_float(row.get(c))
        if v is not None:
            return v
    return None


def _runs(gs: _Gauges, lab: LabData, manifests: Mapping[str, Mapping[str, Any]]) -> None:
    last_success = gs.gauge(
        "kafkalab_last_success_timestamp_seconds",
        "End time of the newest run of this kind, cluster (emulator) and source (dag, cli) "
        "that completed and passed validation.", RUN_LABELS)
    last_run = gs.gauge(
        "kafkalab_last_run_timestamp_seconds",
        "Start time of the newest run of this kind, cluster and source, whatever its outcome.",
        RUN_LABELS)
    last_ok = gs.gauge(
        "kafkalab_last_run_success",
        "1 when the newest run of this kind, cluster and source completed and passed "
        "validation, else 0.", RUN_LABELS)
    newest: dict[tuple[str, str, str], tuple[float, bool]] = {}
    best: dict[tuple[str, str, str], float] = {}
    for rid, m in manifests.items():
        kind = (kind_name(m), _emulator(run_is_emulator(m)), run_source(m))
        started = _timestamp_s(m.get("started_at"))
        ok = run_succeeded(lab, rid, m)
        if started is not None and (kind not in newest or started > newest[kind][0]):
            newest[kind] = (started, ok)
        if ok:
            ended = _timestamp_s(m.get("ended_at")) or started
            if ended is not None and ended > best.get(kind, -math.inf):
                best[kind] = ended
    for kind, ts in best.items():
        last_success.labels(*kind).set(ts)
    for kind, (ts, ok) in newest.items():
        last_run.labels(*kind).set(ts)
        last_ok.labels(*kind).set(1.0 if ok else 0.0)


def _latency(gs: _Gauges, history: pd.DataFrame, order: list[str],
             started: Mapping[str, float | None]) -> None:
    from kafkalab.drift.detect import series_key
    from kafkalab.drift.records import SERIES_COLUMNS

    p50 = gs.gauge("kafkalab_latency_p50_ms",
                   "End-to-end latency p50 of the series' newest run, ms (exact nearest rank; "
                   "jvm-e2e: the tool's own figure).", LATENCY_LABELS)
    p99 = gs.gauge("kafkalab_latency_p99_ms",
                   "End-to-end latency p99 of the series' newest run, ms (omitted below 100 "
                   "messages or on a lost message's rank).", LATENCY_LABELS)
    sent = gs.gauge("kafkalab_messages_sent", "Measured messages sent in the series' newest "
                    "run (warm-up excluded).", LATENCY_LABELS)
    lost = gs.gauge("kafkalab_messages_lost", "Messages sent and never received in the "
                    "series' newest run.", LATENCY_LABELS)
    when = gs.gauge("kafkalab_series_run_timestamp_seconds",
                    "Start time of the run the series' figures come from (the run of the "
                    "newest night measured: a back-filled night is not the newest).",
                    LATENCY_LABELS)
    if history.empty:
        return

    def labels(r: Mapping[str, Any]) -> tuple[str, ...]:
        return (series_key(*(r.get(c) for c in SERIES_COLUMNS)),
                *(_label(r.get(c)) for c in LATENCY_LABELS[1:-1]),
                _emulator(r.get("broker_is_emulator")))

    for key, r in _latest_per_labels(history, order, labels).items():
        _set(p50, key, _first(r, "e2e_latency_ms_p50", "tool_p50_ms"))
        _set(p99, key, _first(r, "e2e_latency_ms_p99", "tool_p99_ms"))
        _set(sent, key, r.get("sent_count"))
        _set(lost, key, r.get("lost_count"))
        _set(when, key, started.get(str(r.get("run_id"))))


def _load(gs: _Gauges, cells: pd.DataFrame, order: list[str],
          started: Mapping[str, float | None]) -> None:
    from kafkalab.drift.detect import series_key
    from kafkalab.drift.records import LOAD_SERIES_COLUMNS

    p50 = gs.gauge("kafkalab_load_latency_p50_ms", "Load cell: e2e latency p50 from the "
                   "intended send time (corrected for coordinated omission), ms.", LOAD_LABELS)
    p99 = gs.gauge("kafkalab_load_latency_p99_ms", "Load cell: e2e latency p99 from the "
                   "intended send time, ms.", LOAD_LABELS)
    rate = gs.gauge("kafkalab_load_achieved_rate_messages_per_second",
                    "Load cell: achieved send rate, messages/s.", LOAD_LABELS)
    loss = gs.gauge("kafkalab_load_loss_ratio", "Load cell: share of the expected "
                    "deliveries (messages x consumers) never received, 0-1.", LOAD_LABELS)
    missing = gs.gauge("kafkalab_load_messages_missing", "Load cell: expected deliveries "
                       "never received, summed over the consumers.", LOAD_LABELS)
    when = gs.gauge("kafkalab_load_series_run_timestamp_seconds",
                    "Start time of the run the load cell's figures come from (the run of the "
                    "newest night measured).", LOAD_LABELS)
    if cells.empty:
        return

    def labels(r: Mapping[str, Any]) -> tuple[str, ...]:
        return (series_key(*(r.get(c) for c in LOAD_SERIES_COLUMNS)),
                *(_label(r.get(c)) for c in LOAD_LABELS[1:-1]),
                _emulator(r.get("broker_is_emulator")))

    for key, r in _latest_per_labels(cells, order, labels).items():
        _set(p50, key, r.get("e2e_p50_ms"))
        _set(p99, key, r.get("e2e_p99_ms"))
        _set(rate, key, r.get("achieved_rate_msgs_per_s"))
        pct = as_float(r.get("loss_pct"))
        _set(loss, key, None if pct is None else pct / 100.0)
        _set(missing, key, r.get("missing_msgs"))
        _set(when, key, started.get(str(r.get("run_id"))))


def _faults(gs: _Gauges, lab: LabData, manifests: Mapping[str, Mapping[str, Any]]) -> None:
    import pandas as pd

    from kafkalab.drift.history import manifest_frame, run_order
    from kafkalab.report.fault_data import read_fault_table

    lost = gs.gauge("kafkalab_fault_acked_lost_messages", "Fault cell: messages the cluster "
                    "acked that the re-read from offset 0 did not find, summed over the "
                    "complete trials of the newest run.", FAULT_LABELS)
    unprocessed = gs.gauge("kafkalab_fault_unprocessed_messages", "Consumer fault cell: "
                           "records no group member processed, summed over the complete "
                           "trials.", FAULT_LABELS)
    with_loss = gs.gauge("kafkalab_fault_trials_with_loss", "Fault cell: complete trials "
                         "that lost an acked message.", FAULT_LABELS)
    trials = gs.gauge("kafkalab_fault_trials", "Fault cell: complete trials.", FAULT_LABELS)
    frames = [t for t in (read_fault_table(lab, rid, "fault_cells") for rid in lab.run_aggregate_ids(FAULTS))
              if t is not None and not t.empty]
    if not frames:
        return
    cells = pd.concat(frames, ignore_index=True)
    # the night each run measured (a back-filled night is not the newest), as for latency
    order = run_order(manifest_frame({str(r): manifests.get(str(r)) or {}
                                      for r in cells["run_id"]}))

    def labels(r: Mapping[str, Any]) -> tuple[str, ...]:
        return (*(_label(r.get(c)) for c in FAULT_LABELS[:-1]),
                _emulator(r.get("broker_is_emulator")))

    for key, r in _latest_per_labels(cells, order, labels).items():
        _set(lost, key, r.get("acked_lost_sum"))
        _set(unprocessed, key, r.get("lost_unprocessed_sum"))
        _set(with_loss, key, r.get("trials_with_loss"))
        _set(trials, key, r.get("trials_complete"))


def _drift(gs: _Gauges, lab: LabData, order: list[str]) -> None:
    from kafkalab.drift.history import read_drift
    from kafkalab.values import as_bool

    active = gs.gauge("kafkalab_drift_active", "1 while the series drifts or is still in "
                      "alert (its newest drift record), else 0.", DRIFT_LABELS)
    change = gs.gauge("kafkalab_drift_change_ratio", "The series' newest change from its "
                      "baseline median, as a fraction (0.25 = 25 % up); omitted when "
                      "undefined.", DRIFT_LABELS)
    newest: dict[tuple[str, ...], dict[str, Any]] = {}
    for rid in order:
        records = read_drift(lab.root, rid)
        if records is None or records.empty:
            continue
        for r in records.to_dict(orient="records"):
            key: tuple[str, ...] = (
                *(_label(r.get(c)) for c in ("series_key", *DRIFT_LABELS[1:-1])),
                _emulator(r.get("broker_is_emulator")))
            newest[key] = r
    for key, r in newest.items():
        on = as_bool(r.get("is_drift")) or str(r.get("alert_status")) in DRIFT_ACTIVE_STATES
        active.labels(*key).set(1.0 if on else 0.0)
        pct = as_float(r.get("change_pct"))
        _set(change, key, None if pct is None else pct / 100.0)


def build_registry(data_dir: str | os.PathLike[str] | None = None) -> CollectorRegistry:
    """Every gauge of the export, read from ``data_dir`` (default: the lab's), in a registry
    of its own. Reads only; an empty data directory gives gauges without samples."""
    from kafkalab.drift.history import load_history
    from kafkalab.drift.load import load_cells_history, runs_order
    from kafkalab.store import LabData

    lab = LabData(data_dir)
    manifests = lab.manifests()
    started = {rid: _timestamp_s(m.get("started_at")) for rid, m in manifests.items()}
    history = load_history(lab.root, manifests)
    cells = load_cells_history(lab.root, manifests)
    order = runs_order(history, cells)
    gs = _Gauges()
    _runs(gs, lab, manifests)
    _latency(gs, history, order, started)
    _load(gs, cells, order, started)
    _faults(gs, lab, manifests)
    _drift(gs, lab, order)
    return gs.registry


def render(data_dir: str | os.PathLike[str] | None = None) -> bytes:
    """The text file's content (Prometheus text format 0.0.4)."""
    from prometheus_client import generate_latest

    return generate_latest(build_registry(data_dir))


def sample_counts(registry: CollectorRegistry) -> dict[str, int]:
    """Samples per metric of a registry (metrics without samples: 0)."""
    return {m.name: len(m.samples) for m in registry.collect()}


def export_textfile(data_dir: str | os.PathLike[str] | None = None,
                    out_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Write the text file; returns ``{"path", "samples": {metric: count}}`` (what
    ``kafkalab export prometheus --json`` prints).

    The file is written mode 0644 (:data:`TEXTFILE_MODE`) so node_exporter, another user,
    can read it. A missing parent directory is created, for ``out_path`` as for the default
    path.

    Raises:
        ConfigError: ``out_path`` does not end in ``.prom`` (the textfile collector would
            ignore it), or the file (or its missing parent directory) cannot be written.
    """
    from prometheus_client import generate_latest

    from kafkalab.store import atomic_write

    path = Path(out_path) if out_path is not None else default_textfile_path(data_dir)
    if path.suffix != ".prom":
        raise ConfigError(f"--out {path}: the file name must end in .prom (node_exporter's "
                          "textfile collector reads only *.prom files)")
    registry = build_registry(data_dir)
    try:
        atomic_write(path, generate_latest(registry), mode=TEXTFILE_MODE)
    except OSError as exc:
        raise ConfigError(f"--out {path}: cannot write: {exc.strerror or exc}") from exc
    return {"path": str(path.absolute()), "samples": sample_counts(registry)}


def write_textfile(data_dir: str | os.PathLike[str] | None = None,
                   out_path: str | os.PathLike[str] | None = None) -> Path:
    """Write the Prometheus text file of ``data_dir`` (default ``$KAFKALAB_DATA_DIR`` /
    ``lab-data/``) to ``out_path`` (default :func:`default_textfile_path`), atomically;
    returns its path. What the nightly DAG calls after each run.

    Raises:
        ConfigError: ``out_path`` does not end in ``.prom``, or cannot be written.
    """
    return Path(export_textfile(data_dir, out_path)["path"])


__all__ = [
    "DRIFT_LABELS",
    "FAULT_LABELS",
    "KINDS",
    "LATENCY_LABELS",
    "LOAD_LABELS",
    "METRICS_DIR",
    "RUN_LABELS",
    "SOURCES",
    "TEXTFILE_MODE",
    "TEXTFILE_NAME",
    "build_registry",
    "default_textfile_path",
    "export_textfile",
    "render",
    "run_is_emulator",
    "run_source",
    "run_succeeded",
    "sample_counts",
    "write_textfile",
]
