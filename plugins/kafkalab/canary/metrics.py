"""The canary's figures: live Prometheus metrics, the interval HdrHistogram log and
``summary.json`` (each documented in docs/canary.md).

:class:`Figures` is the book's :class:`~kafkalab.canary.book.Sink`. Every verdict updates
three things at once: the Prometheus counters and histograms (a registry of the canary's
own, served on ``/metrics``), an HdrHistogram per broker for the whole run (the summary's
percentiles) and one per broker for the current interval (the log). The Prometheus
histograms are in seconds, as Prometheus names them; everything else in ms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kafkalab.stats import MIN_SAMPLES, PERCENTILE_FRACTIONS, fraction_rank

__all__ = ["ANOMALIES", "HDR_MAX_US", "LATENCY_BUCKETS_S", "Figures", "hdr_log_header", "open_hdr_log",
           "percentiles"]

ANOMALIES = ("acked_late", "late", "lost", "duplicated", "received_unacked", "unknown")
"""The anomaly kinds the book reports (:meth:`kafkalab.canary.book.Sink.anomaly`)."""

LATENCY_BUCKETS_S: tuple[float, ...] = (
    *(round(m * 10 ** e, 6) for e in range(-4, 2) for m in (1, 1.5, 2, 3, 5, 7)), 100.0)
"""The e2e latency histograms' upper bounds (s): 0.1 ms to 100 s, about 1.5× apart (fine
enough for ``histogram_quantile`` to place a p99 within a third of its value)."""

HDR_MAX_US = 3_600_000_000
"""The HdrHistograms track 1 µs … 1 h (3 significant figures)."""


def _broker(b: int) -> str:
    return str(b) if b >= 0 else "unknown"


def _hdr() -> Any:
    from hdrh.histogram import HdrHistogram

    return HdrHistogram(1, HDR_MAX_US, 3)


def _hist(hists: dict[int, Any], broker: int) -> Any:
    """``hists[broker]``, made on first use (never ``setdefault(…, _hdr())``: a histogram is
    23,552 counters, and building one per record cost the canary a millisecond a record)."""
    hist = hists.get(broker)
    if hist is None:
        hist = hists[broker] = _hdr()
    return hist


def percentiles(hist: Any, censored: int = 0) -> dict[str, Any]:
    """Nearest-rank percentiles (ms) of an HdrHistogram of µs, with ``censored`` values
    (lost records: at least the deadline) counted at the top, as :mod:`kafkalab.stats` does:
    a percentile is null with its reason when it needs more samples (``n<100``) or its rank
    lands on a censored value (``censored``). HdrHistogram's values are exact to 3
    significant figures."""
    received = int(hist.get_total_count())
    n = received + censored
    out: dict[str, Any] = {"n": n, "received": received, "censored": censored}
    for name, (num, den) in PERCENTILE_FRACTIONS.items():
        if n < MIN_SAMPLES[name]:
            out[f"{name}_ms"], out[f"{name}_reason"] = None, f"n<{MIN_SAMPLES[name]}"
            continue
        rank = fraction_rank(n, num, den)
        if rank > received:
            out[f"{name}_ms"], out[f"{name}_reason"] = None, "censored"
            continue
        pct = 100.0 * rank / received
        out[f"{name}_ms"] = hist.get_value_at_percentile(min(100.0, pct)) / 1000.0
    out["max_ms"] = hist.get_max_value() / 1000.0 if received else None
    return out


@dataclass
class _Totals:
    produce_attempts: int = 0
    produce_acked: int = 0
    consume_due: int = 0
    consume_in_time: int = 0
    anomalies: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ANOMALIES, 0))


class Figures:
    """The book's sink: Prometheus metrics (when ``registry`` is given), HdrHistograms and
    per-broker totals."""

    def __init__(self, registry: Any | None) -> None:
        self.totals: dict[int, _Totals] = {}
        self.partition_totals: dict[int, _Totals] = {}
        self.slo_hist: dict[int, Any] = {}
        self.change_hist: dict[int, Any] = {}
        self.interval_hist: dict[int, Any] = {}
        self._prom = _PromMetrics(registry) if registry is not None else None

    def _both(self, broker: int, partition: int) -> tuple[_Totals, _Totals]:
        return (self.totals.setdefault(broker, _Totals()),
                self.partition_totals.setdefault(partition, _Totals()))

    def produced(self, broker: int, partition: int, acked: bool) -> None:
        for t in self._both(broker, partition):
            t.produce_attempts += 1
            t.produce_acked += int(acked)
        if self._prom:
            self._prom.produced(broker, partition, acked)

    def consumed(self, broker: int, partition: int, in_time: bool) -> None:
        for t in self._both(broker, partition):
            t.consume_due += 1
            t.consume_in_time += int(in_time)
        if self._prom:
            self._prom.consumed(broker, partition, in_time)

    def latency(self, broker: int, partition: int, e2e_latency_ms: float,
                leader_change: bool) -> None:
        us = min(HDR_MAX_US, max(1, round(e2e_latency_ms * 1000)))
        _hist(self.change_hist if leader_change else self.slo_hist, broker).record_value(us)
        if not leader_change:
            _hist(self.interval_hist, broker).record_value(us)
        if self._prom:
            self._prom.latency(broker, e2e_latency_ms, leader_change)

    def anomaly(self, broker: int, partition: int, kind: str) -> None:
        for t in self._both(broker, partition):
            t.anomalies[kind] += 1
        if self._prom:
            self._prom.anomaly(broker, partition, kind)

    def write_interval(self, log: TextIO, start_s: float, end_s: float) -> None:
        """Append the interval's histograms (SLO latency, one per broker, tagged
        ``broker-<id>``) to an HdrHistogram log and start new ones. Values are µs."""
        for broker, hist in sorted(self.interval_hist.items()):
            payload = hist.encode().decode("ascii")
            log.write(f"Tag=broker-{_broker(broker)},{start_s:.3f},{end_s - start_s:.3f},"
                      f"{hist.get_max_value() / 1000.0:.3f},{payload}\n")
        log.flush()
        self.interval_hist = {}

    def set_gauges(self, **values: float) -> None:
        """Set the canary's own gauges (``partitions``, ``brokers``,
        ``brokers_leading_none``, ``held_records``)."""
        if self._prom:
            self._prom.set_gauges(values)

    def leader_changed(self, partition: int) -> None:
        """The producer saw ``partition``'s leader change."""
        if self._prom:
            self._prom.leader_changes.labels(partition=str(partition)).inc()

    def broker_summary(self, unresolved: dict[int, int]) -> list[dict[str, Any]]:
        """One dict per broker: counts, availabilities and latency percentiles (SLO and
        across a leader change, apart)."""
        out = []
        for broker in sorted(set(self.totals) | set(unresolved)):
            t = self.totals.get(broker, _Totals())
            lost = t.anomalies["lost"]
            out.append({
                "broker": _broker(broker),
                "produce_attempts": t.produce_attempts, "produce_acked": t.produce_acked,
                "produce_availability": _ratio(t.produce_acked, t.produce_attempts),
                "consume_due": t.consume_due, "consume_in_time": t.consume_in_time,
                "consume_availability": _ratio(t.consume_in_time, t.consume_due),
                **t.anomalies, "unresolved_at_stop": unresolved.get(broker, 0),
                "e2e_latency": percentiles(self.slo_hist.get(broker) or _hdr(), lost),
                "e2e_latency_leader_change": percentiles(self.change_hist.get(broker) or _hdr()),
            })
        return out

    def partition_summary(self) -> list[dict[str, Any]]:
        """One dict per partition: its counts and availabilities."""
        return [{"partition": p, "produce_attempts": t.produce_attempts,
                 "produce_acked": t.produce_acked, "consume_due": t.consume_due,
                 "consume_in_time": t.consume_in_time, **t.anomalies}
                for p, t in sorted(self.partition_totals.items())]


def _ratio(good: int, total: int) -> float | None:
    return good / total if total else None


class _PromMetrics:
    """The Prometheus side of :class:`Figures` (names and labels: docs/canary.md)."""

    def __init__(self, registry: Any) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        bp = ["broker", "partition"]
        self.attempts = Counter("kafkalab_canary_produce_attempts", "records sent", bp,
                                registry=registry)
        self.acked = Counter("kafkalab_canary_produce_acked", "records acked within the "
                             "produce deadline", bp,
                             registry=registry)
        self.due = Counter("kafkalab_canary_consume_due", "acked records whose consume "
                           "deadline passed", bp, registry=registry)
        self.in_time = Counter("kafkalab_canary_consume_in_time", "of those, read by the "
                               "deadline", bp, registry=registry)
        self.anomalies = Counter("kafkalab_canary_anomalies", "acked_late, late, lost, "
                                 "duplicated, received_unacked and unknown records", [*bp, "kind"],
                                 registry=registry)
        self.e2e = Histogram("kafkalab_canary_e2e_latency_seconds", "e2e latency from the "
                             "intended send time, no leader change across it", ["broker"],
                             buckets=LATENCY_BUCKETS_S, registry=registry)
        self.e2e_change = Histogram("kafkalab_canary_e2e_latency_leader_change_seconds",
                                    "e2e latency of records across a leader change",
                                    ["broker"], buckets=LATENCY_BUCKETS_S, registry=registry)
        self.leader_changes = Counter("kafkalab_canary_leader_changes", "leader changes the "
                                      "producer saw", ["partition"], registry=registry)
        self.seen: set[tuple[str, str]] = set()
        self.gauges = {name: Gauge(f"kafkalab_canary_{name}", text, registry=registry)
                       for name, text in (("partitions", "partitions of the canary topic"),
                                          ("brokers", "brokers in the cluster's metadata"),
                                          ("brokers_leading_none", "live brokers that lead "
                                           "no canary partition (after a failover, until a "
                                           "preferred-leader election)"),
                                          ("held_records", "records the canary holds"))}

    def _first(self, labels: dict[str, str]) -> None:
        """A new (broker, partition): every counter's series exists from here, at 0, so that
        a rate is 0 rather than absent (an absent series is not a healthy one)."""
        key = (labels["broker"], labels["partition"])
        if key in self.seen:
            return
        self.seen.add(key)
        for counter in (self.attempts, self.acked, self.due, self.in_time):
            counter.labels(**labels)
        for kind in ANOMALIES:
            self.anomalies.labels(**labels, kind=kind)
        self.leader_changes.labels(partition=labels["partition"])

    def produced(self, broker: int, partition: int, acked: bool) -> None:
        labels = {"broker": _broker(broker), "partition": str(partition)}
        self._first(labels)
        self.attempts.labels(**labels).inc()
        child = self.acked.labels(**labels)  # exists from the first attempt: a 0 is a series
        if acked:
            child.inc()

    def consumed(self, broker: int, partition: int, in_time: bool) -> None:
        labels = {"broker": _broker(broker), "partition": str(partition)}
        self._first(labels)
        self.due.labels(**labels).inc()
        child = self.in_time.labels(**labels)
        if in_time:
            child.inc()

    def latency(self, broker: int, e2e_latency_ms: float, leader_change: bool) -> None:
        hist = self.e2e_change if leader_change else self.e2e
        hist.labels(broker=_broker(broker)).observe(e2e_latency_ms / 1000.0)

    def anomaly(self, broker: int, partition: int, kind: str) -> None:
        labels = {"broker": _broker(broker), "partition": str(partition)}
        self._first(labels)
        self.anomalies.labels(**labels, kind=kind).inc()

    def set_gauges(self, values: dict[str, float]) -> None:
        for name, value in values.items():
            if not math.isnan(value):
                self.gauges[name].set(value)


def hdr_log_header(log: TextIO, start_epoch_s: float, what: str) -> None:
    """The HdrHistogram log's header lines (format 1.3, as HdrHistogram's log writers)."""
    log.write(f"#[{what}]\n#[Histogram log format version 1.3]\n"
              f"#[StartTime: {start_epoch_s:.3f} (seconds since epoch)]\n"
              '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"\n')
    log.flush()


def open_hdr_log(path: Path) -> TextIO:
    """The log, opened for appending (a restarted canary appends a new header)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("a", encoding="ascii")
