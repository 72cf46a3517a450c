"""What a measured cell says: counts, percentiles that admit what they do not know,
first-message delays, and the comparison table ``kafkalab run`` prints at the end of a run.

The statistics follow :mod:`kafkalab.stats` (and the Spark aggregation follows the same
rules): the population of a cell is its non-warm-up messages; lost and failed ones count as
censored ("at least the timeout"); a percentile without enough values is undefined, with
the reason. Pure functions (no I/O); the runner summarises a cell from the rows it wrote.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkalab.cluster.descriptor import EMULATOR_LABEL
from kafkalab.samples import Sample, to_row
from kafkalab.stats import LatencySummary, median_or_none, summarize

HOPS_NOTE = (
    "What e2e measures: rest = client → HTTP server process (one hop; its publish latency is "
    "n/a, the whole request/response round trip is `rt ms`); Kafka = producer → broker log "
    "append (+ replication when rf > 1) → consumer fetch (two hops). jvm-e2e = Kafka's "
    "EndToEndLatency tool with its own settings (see `settings`), serial like "
    "confluent-kafka-serial."
)
"""The line every side-by-side table of REST and Kafka carries."""


@dataclass
class CellResult:
    """One measured cell: where it stands and its summary (:func:`summarize_rows`)."""

    scenario: str
    payload: str
    profile: str
    status: str
    payload_bytes: int
    rows: int = 0
    reason: str | None = None
    is_emulator: bool = False
    summary: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_samples(cls, samples: Iterable[Sample], **kwargs: Any) -> CellResult:
        """A result summarised from in-memory samples (tests and tools)."""
        rows = [to_row({}, s) for s in samples]
        return cls(rows=len(rows), summary=summarize_rows(rows), **kwargs)


def summarize_rows(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts, latency summary, first-message delays and tool figures of one cell's rows
    (dicts with the samples columns, as ``pyarrow.Table.to_pylist()`` gives them)."""
    received: list[float] = []
    publish: list[float] = []
    round_trip: list[float] = []
    counts = {"warmup": 0, "ok": 0, "late": 0, "lost": 0, "duplicate": 0, "error": 0}
    first: dict[str, list[float]] = {"subscribe": [], "assign": []}
    first_cold: list[float] = []
    first_lost = 0
    tool: dict[str, float] = {}
    loop_mode = None
    settings = None
    for r in rows:
        kind = r.get("sample_kind")
        settings = settings or r.get("client_settings")
        if kind == "message":
            loop_mode = loop_mode or r.get("loop_mode")
            if r.get("is_warmup"):
                counts["warmup"] += 1
                continue
            status = str(r.get("status"))
            counts[status] = counts.get(status, 0) + 1
            if status in ("ok", "late") and r.get("e2e_latency_ms") is not None:
                received.append(float(r["e2e_latency_ms"]))
                if r.get("publish_latency_ms") is not None:
                    publish.append(float(r["publish_latency_ms"]))
                if r.get("round_trip_ms") is not None:
                    round_trip.append(float(r["round_trip_ms"]))
        elif kind == "first_message":
            delay = r.get("first_record_delay_ms")
            if delay is None:
                first_lost += 1
            elif r.get("cold_start"):
                first_cold.append(float(delay))
            else:
                first.setdefault(str(r.get("consumer_mode")), []).append(float(delay))
        elif kind == "tool_summary" and r.get("statistic"):
            tool[str(r["statistic"])] = float(r["e2e_latency_ms"])
            loop_mode = loop_mode or r.get("loop_mode")
    censored = counts["lost"] + counts["error"]
    return {
        "count": len(received), "population": len(received) + censored,
        "warmup": counts["warmup"], "lost": counts["lost"], "duplicate": counts["duplicate"],
        "late": counts["late"], "errors": counts["error"],
        "latency": summarize(received, censored=censored),
        "publish": summarize(publish), "round_trip": summarize(round_trip),
        "tool": tool, "loop_mode": loop_mode,
        "client_settings": json.loads(settings) if settings else {},
        "first_subscribe_ms": median_or_none(first.get("subscribe", [])),
        "first_assign_ms": median_or_none(first.get("assign", [])),
        "first_cold_ms": median_or_none(first_cold),
        "first_lost": first_lost,
    }


def cell_summary(result: CellResult) -> dict[str, Any]:
    """The cell's identity, outcome and :func:`summarize_rows` figures in one dict."""
    base = summarize_rows([]) if not result.summary else result.summary
    return {
        "scenario": result.scenario, "payload": result.payload, "profile": result.profile,
        "status": result.status, "reason": result.reason, "emulator": result.is_emulator,
        "payload_bytes": result.payload_bytes, "rows": result.rows, **base,
    }


def json_summary(result: CellResult) -> dict[str, Any]:
    """:func:`cell_summary` flattened for JSON: percentiles as ``p99_ms`` (null when
    undefined) with ``p99_ms_reason``, and their confidence intervals."""
    s = cell_summary(result)
    lat: LatencySummary | None = s.pop("latency")
    for key in ("publish", "round_trip"):
        sub: LatencySummary | None = s.pop(key)
        s[f"{key}_p50_ms"] = sub.p50_ms if sub else None
        s[f"{key}_p99_ms"] = sub.p99_ms if sub else None
    for name in ("p50", "p90", "p95", "p99", "p999"):
        s[f"{name}_ms"] = getattr(lat, f"{name}_ms") if lat else None
        reason = (lat.reasons.get(name) if lat else "no messages")
        if reason:
            s[f"{name}_ms_reason"] = (f"{reason} ({lat.count} in the population)"
                                      if lat and reason.startswith("n<") else reason)
    s["mean_ms"] = lat.mean_ms if lat else None
    s["max_ms"] = lat.max_ms if lat else None
    if lat:
        for name, (lo, hi) in lat.ci.items():
            s[f"{name}_ms_ci95"] = [lo, hi]
    return s


def _settings_label(settings: Mapping[str, Any]) -> str:
    """``acks=1, linger.ms=0, fetch.max.wait.ms=0`` from flat or ``producer.``/``consumer.``
    prefixed settings (the tool's are prefixed by the client that applies them)."""
    keys = ("acks", "linger.ms", "fetch.max.wait.ms")
    out = []
    for k in keys:
        value = next((settings[p + k] for p in ("", "producer.", "consumer.") if p + k in settings), None)
        if value is not None:
            out.append(f"{k}={value}")
    return ", ".join(out)


def format_table(results: list[CellResult]) -> str:
    """The comparison table printed at the end of a run, with the line that says what each
    scenario's e2e measures when REST and Kafka stand side by side."""
    head = ("scenario", "payload", "profile", "n", "p50 ms", "p95 ms", "p99 ms", "max ms",
            "lost/err", "dup", "rt ms", "1st sub ms", "1st asg ms", "note")
    rows: list[tuple[str, ...]] = []

    def f(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    def pct(lat: LatencySummary | None, name: str) -> str:
        if lat is None:
            return "-"
        value = getattr(lat, f"{name}_ms")
        return f(value) if value is not None else lat.reasons.get(name, "-")

    for r in results:
        s = cell_summary(r)
        lat: LatencySummary | None = s["latency"]
        note = ""
        if s["status"] != "complete":
            note = f"{s['status']}: {(s['reason'] or '')[:60]}"
        elif s["emulator"]:
            note = EMULATOR_LABEL
        if s["tool"]:
            tool = s["tool"]
            # the tool applied its own settings, not the profile's: say which
            rows.append((r.scenario, r.payload, f"tool: {_settings_label(s['client_settings'])}",
                         "tool", f(tool.get("p50")), "-", f(tool.get("p99")), "-", "-", "-", "-",
                         "-", "-", note or f"avg {f(tool.get('avg'))} ms; pcts whole ms, incl. warm-up"))
            continue
        rt: LatencySummary | None = s["round_trip"]
        if not note and s["first_cold_ms"] is not None:
            note = f"cold 1st sub {s['first_cold_ms']:.0f} ms"
        rows.append((
            r.scenario, r.payload, r.profile, str(s["count"]),
            pct(lat, "p50"), pct(lat, "p95"), pct(lat, "p99"), f(lat.max_ms if lat else None),
            str(s["lost"] + s["errors"]), str(s["duplicate"]), f(rt.p50_ms if rt else None),
            f(s["first_subscribe_ms"]), f(s["first_assign_ms"]), note,
        ))
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(head)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in rows]
    kinds = {r.scenario for r in results}
    if "rest" in kinds and len(kinds) > 1:
        lines.append(HOPS_NOTE)
    return "\n".join(lines)


def _size_key(payload: str, payload_bytes: int) -> tuple[int, str]:
    return (payload_bytes, payload)


def format_reading(results: list[CellResult]) -> list[str]:
    """Two lines that read the table: the fastest scenario per payload size (p50 of e2e over
    the measured messages; the JVM tool's rows are not ranked: they measure with their own
    settings and whole milliseconds), and the first-message delay per client with a consumer
    group (subscribe) against a fixed assignment (assign): seed 000's question.

    A size where no scenario has a defined p50 says so; a run without first-message probes
    says so. Pure: reads only the results."""
    by_size: dict[tuple[int, str], list[tuple[float, str]]] = {}
    first: dict[str, tuple[list[float], list[float]]] = {}
    for r in results:
        s = cell_summary(r)
        key = _size_key(r.payload, r.payload_bytes)
        entries = by_size.setdefault(key, [])
        if s["tool"] or s["status"] != "complete":
            continue
        lat: LatencySummary | None = s["latency"]
        if lat is not None and lat.p50_ms is not None:
            entries.append((lat.p50_ms, r.scenario))
        sub, asg = first.setdefault(r.scenario, ([], []))
        if s["first_subscribe_ms"] is not None:
            sub.append(float(s["first_subscribe_ms"]))
        if s["first_assign_ms"] is not None:
            asg.append(float(s["first_assign_ms"]))
    parts = []
    for (_, payload), entries in sorted(by_size.items()):
        if not entries:
            parts.append(f"{payload} none with a p50")
            continue
        entries.sort()
        best_ms, best = entries[0]
        text = f"{payload} {best} {best_ms:.2f} ms"
        if len(entries) > 1:
            text += f" (then {entries[1][1]} {entries[1][0]:.2f})"
        parts.append(text)
    fastest = ("Fastest by e2e p50 per size: " + "; ".join(parts) + "."
               if parts else "Fastest by e2e p50 per size: no cells.")
    firsts = []
    for scenario, (sub, asg) in sorted(first.items()):
        if not sub and not asg:
            continue
        sub_ms, asg_ms = median_or_none(sub), median_or_none(asg)
        text = f"{scenario} subscribe {'-' if sub_ms is None else f'{sub_ms:,.0f} ms'}"
        text += f" vs assign {'-' if asg_ms is None else f'{asg_ms:,.0f} ms'}"
        firsts.append(text)
    if firsts:
        first_line = ("First record after the consumer starts (median over the probed cells): "
                      + "; ".join(firsts)
                      + ". The gap is the consumer group's partition assignment.")
    else:
        first_line = "First record after the consumer starts: not probed in this run."
    return [fastest, first_line]



TABLE_LEGEND = (
    "e2e = send start → whole record/body in the receiver's hands, monotonic clock; exact "
    "nearest-rank percentiles over the measured messages (warm-up excluded; lost and "
    "failed ones count as ≥ the timeout). n<100: too few messages for that percentile. "
    "1st sub/asg = median consumer start → first record, subscribe (consumer group) vs "
    "assign (cold first group start shown apart)."
)
"""What the columns of :func:`format_table` mean, printed under it."""


def format_run_summary(results: list[CellResult]) -> str:
    """What ``kafkalab run`` (and ``make demo``) print at the end of a run: the table, its
    two-line reading (:func:`format_reading`) and the legend."""
    return "\n".join([format_table(results), "", *format_reading(results), "", TABLE_LEGEND])
