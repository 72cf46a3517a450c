"""What a measured cell says: counts, exact percentiles, first-message delays, and the
comparison table ``kafkalab run`` prints at the end of a run.

Pure functions over :class:`kafkalab.runner.CellResult` (no I/O); the CLI, the Airflow task
summary and the bench read cells through them.
"""

from __future__ import annotations

from typing import Any

from kafkalab.cluster.descriptor import EMULATOR_LABEL
from kafkalab.runner import CellResult
from kafkalab.stats import LatencySummary, summarize


def cell_summary(result: CellResult) -> dict[str, Any]:
    """Counts, exact percentiles and first-message delays of one cell."""
    msgs = [s for s in result.samples if s.sample_kind == "message"]
    measured = [s for s in msgs if not s.is_warmup and s.status in ("ok", "late")]
    lat = summarize([s.e2e_latency_ms for s in measured if s.e2e_latency_ms is not None])
    tool = {s.statistic: s.e2e_latency_ms for s in result.samples if s.sample_kind == "tool_summary"}
    first = {s.consumer_mode: s.first_record_delay_ms for s in result.samples
             if s.sample_kind == "first_message"}
    return {
        "scenario": result.scenario, "payload": result.payload, "profile": result.profile,
        "status": result.status, "reason": result.reason, "emulator": result.is_emulator,
        "payload_bytes": result.payload_bytes,
        "count": lat.count if lat else 0,
        "warmup": sum(1 for s in msgs if s.is_warmup),
        "lost": sum(1 for s in msgs if s.status == "lost" and not s.is_warmup),
        "duplicate": sum(1 for s in msgs if s.status == "duplicate"),
        "late": sum(1 for s in msgs if s.status == "late"),
        "errors": sum(1 for s in msgs if s.status == "error"),
        "latency": lat, "tool": tool,
        "first_subscribe_ms": first.get("subscribe"), "first_assign_ms": first.get("assign"),
    }


def format_table(results: list[CellResult]) -> str:
    """The comparison table printed at the end of a run."""
    head = ("scenario", "payload", "profile", "n", "p50 ms", "p95 ms", "p99 ms", "max ms",
            "lost", "dup", "1st sub ms", "1st asg ms", "note")
    rows: list[tuple[str, ...]] = []
    for r in results:
        s = cell_summary(r)
        lat: LatencySummary | None = s["latency"]
        note = ""
        if s["status"] != "complete":
            note = f"{s['status']}: {(s['reason'] or '')[:60]}"
        elif s["emulator"]:
            note = EMULATOR_LABEL

        def f(v: float | None) -> str:
            return "-" if v is None else f"{v:.2f}"

        if s["tool"]:
            tool = s["tool"]
            rows.append((r.scenario, r.payload, r.profile, "tool", f(tool.get("p50")), "-",
                         f(tool.get("p99")), "-", "-", "-", "-", "-",
                         note or f"tool avg {f(tool.get('avg'))} ms; whole ms"))
            continue
        rows.append((
            r.scenario, r.payload, r.profile, str(lat.count if lat else 0),
            f(lat.p50_ms if lat else None), f(lat.p95_ms if lat else None),
            f(lat.p99_ms if lat else None), f(lat.max_ms if lat else None),
            str(s["lost"]), str(s["duplicate"]), f(s["first_subscribe_ms"]),
            f(s["first_assign_ms"]), note,
        ))
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(head)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in rows]
    return "\n".join(lines)
