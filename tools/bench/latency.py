"""Bench parts (a) and (b): harness against Kafka's own tool at 1 KB, clients at 1-10 MB.

Both run the ``bench-latency`` workload (``include/workloads/bench-latency.yaml``: raw
encoding, one first-message probe) on the embedded kafka09 cluster, with the run's cells in
a throw-away data directory.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kafkalab.runner import CellResult, build_run_request, execute
from kafkalab.summary import cell_summary

__all__ = ["bench_kafka", "print_kafka"]

WORKLOAD = "bench-latency"
LARGE_PAYLOADS: tuple[str, ...] = ("1mb", "3mb", "5mb", "10mb")
HARNESS_OVER_TOOL_GOAL = 1.2
"""Goal of part (a): harness p50 at most this many times the tool's p50."""
TOOL_RESOLUTION_MS = 1.0
"""The tool prints whole, truncated milliseconds."""


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _run(scenarios: list[str], payloads: list[str], messages: int, warmup_messages: int,
         data_dir: Path) -> list[CellResult]:
    """Run the bench workload for one matrix (profile ``latency``) and return its cells."""
    req = build_run_request(
        WORKLOAD, scenarios=scenarios, payloads=payloads, profiles=["latency"],
        overrides={"messages": messages, "warmup_messages": warmup_messages, "encoding": "raw"},
        data_dir=data_dir, command="make bench",
    )
    return execute(req, progress=_progress).cells


def _row(c: CellResult) -> dict[str, Any]:
    """One cell as a result row: p50/p99/mean/max in ms (the tool's figures for jvm-e2e)."""
    s = cell_summary(c)
    lat = s["latency"]
    out: dict[str, Any] = {"scenario": c.scenario, "payload": c.payload, "payload_bytes": c.payload_bytes,
                           "status": c.status}
    if lat:
        out.update(count=lat.count, e2e_p50_ms=lat.p50_ms, e2e_p99_ms=lat.p99_ms,
                   e2e_mean_ms=lat.mean_ms, e2e_max_ms=lat.max_ms, lost=s["lost"], duplicate=s["duplicate"])
    if s["tool"]:
        t = s["tool"]
        out.update(e2e_p50_ms=t.get("p50"), e2e_p99_ms=t.get("p99"), e2e_mean_ms=t.get("avg"),
                   resolution_ms=TOOL_RESOLUTION_MS, count=None)
    return out


def _harness_verdict(harness_p50_ms: float | None, tool_p50_ms: float | None) -> str | None:
    """Goal (a) judged against the tool's 1 ms buckets: its true p50 lies in [p50, p50 + 1)."""
    if harness_p50_ms is None or tool_p50_ms is None:
        return None
    if tool_p50_ms > 0 and harness_p50_ms <= HARNESS_OVER_TOOL_GOAL * tool_p50_ms:
        return "met"
    if harness_p50_ms <= HARNESS_OVER_TOOL_GOAL * (tool_p50_ms + TOOL_RESOLUTION_MS):
        return "met within the tool's 1 ms resolution"
    return "not met"


def bench_kafka(messages_1kb: int, messages_mb: int, data_dir: Path) -> dict[str, Any]:
    """Parts (a) and (b) on the embedded kafka09 cluster (started if needed)."""
    from kafkalab.cluster.embedded import cluster_up

    d = cluster_up("kafka09", 1, progress=lambda m: print(m, file=sys.stderr))
    small = [_row(c) for c in _run(["confluent-kafka", "jvm-e2e", "kafka-python"], ["1kb"],
                                   messages_1kb, 50, data_dir)]
    by = {r["scenario"]: r for r in small}
    h, t = by.get("confluent-kafka", {}), by.get("jvm-e2e", {})
    hp50, tp50 = h.get("e2e_p50_ms"), t.get("e2e_p50_ms")
    ratio_p50 = (hp50 / tp50) if hp50 and tp50 else None
    ratio_p50_vs_bucket_top = (
        hp50 / (tp50 + TOOL_RESOLUTION_MS) if hp50 is not None and tp50 is not None else None)
    ratio_mean = (h["e2e_mean_ms"] / t["e2e_mean_ms"]) if h.get("e2e_mean_ms") and t.get("e2e_mean_ms") else None
    large = [_row(c) for c in _run(["rest", "kafka-python", "confluent-kafka", "jvm-e2e"],
                                   list(LARGE_PAYLOADS), messages_mb, 3, data_dir)]
    cmp = []
    for payload in LARGE_PAYLOADS:
        rows = {r["scenario"]: r for r in large if r["payload"] == payload}
        ck, kp = rows.get("confluent-kafka", {}), rows.get("kafka-python", {})
        if ck.get("e2e_p50_ms") and kp.get("e2e_p50_ms"):
            cmp.append({"payload": payload, "confluent_p50_ms": ck["e2e_p50_ms"],
                        "kafka_python_p50_ms": kp["e2e_p50_ms"],
                        "confluent_over_kafka_python_p50": ck["e2e_p50_ms"] / kp["e2e_p50_ms"]})
    return {
        "cluster": {"flavor": d.flavor, "version": d.version, "is_emulator": d.is_emulator,
                    "brokers": d.broker_count},
        "small_1kb": small,
        "harness_over_tool_p50": ratio_p50,
        "harness_over_tool_p50_bucket_top": ratio_p50_vs_bucket_top,
        "harness_over_tool_mean": ratio_mean,
        "goal_harness_within_1_2x_of_tool": _harness_verdict(hp50, tp50),
        "large": large,
        "confluent_vs_kafka_python": cmp,
        "goal_confluent_not_slower": all(c["confluent_over_kafka_python_p50"] <= 1.0 for c in cmp) if cmp else None,
    }


def print_kafka(res: dict[str, Any]) -> None:
    """Print parts (a) and (b) of a :func:`bench_kafka` result."""
    print("\n(a) 1 KB, closed loop, latency profile")
    for r in res["small_1kb"]:
        print(f"  {r['scenario']:<16} p50 {r.get('e2e_p50_ms') or 0:8.3f} ms  p99 {r.get('e2e_p99_ms') or 0:8.3f} ms"
              f"  mean {r.get('e2e_mean_ms') or 0:8.3f} ms")
    print(f"  harness/tool p50 = {res['harness_over_tool_p50']} (vs the top of the tool's 1 ms bucket: "
          f"{res['harness_over_tool_p50_bucket_top']}), mean = {res['harness_over_tool_mean']}"
          f"  → goal ≤ 1.2×: {res['goal_harness_within_1_2x_of_tool']}")
    print("\n(b) seed 000 sizes: e2e p50 / p99 ms")
    for r in res["large"]:
        print(f"  {r['payload']:<5} {r['scenario']:<16} {r.get('e2e_p50_ms') or float('nan'):9.2f}"
              f" {r.get('e2e_p99_ms') or float('nan'):9.2f}  {r['status']}")
    print(f"  confluent-kafka no slower than kafka-python everywhere: {res['goal_confluent_not_slower']}")
