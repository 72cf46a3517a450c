"""Bench parts (b) and (c): the serial harness beside Kafka's tool at 1 KB, clients at 1-10 MB.

Both run the ``bench-latency`` workload (``include/workloads/bench-latency.yaml``: raw
encoding, one first-message probe) on the embedded cluster (the default flavor), with the run's cells in
a throw-away data directory.

(b) compares like with like: ``confluent-kafka-serial`` waits for the ack before polling,
as EndToEndLatency does. The tool prints whole, truncated milliseconds (its true p50 lies in
``[p50, p50 + 1)``) and a mean with 4 decimals over all its messages including its warm-up,
so the verdict compares the means; the overlapped harness is shown for reference.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kafkalab.report.notes import settings_text
from kafkalab.runner import build_run_request, execute
from kafkalab.summary import CellResult, cell_summary

__all__ = ["bench_kafka", "print_kafka"]

WORKLOAD = "bench-latency"
SMALL_SCENARIOS: tuple[str, ...] = ("confluent-kafka-serial", "jvm-e2e", "confluent-kafka",
                                    "kafka-python")
"""Part (b): the serial harness and the tool first (run back to back), then the others."""
LARGE_SCENARIOS: tuple[str, ...] = ("rest", "kafka-python", "confluent-kafka",
                                    "confluent-kafka-serial", "jvm-e2e")
LARGE_PAYLOADS: tuple[str, ...] = ("1mb", "3mb", "5mb", "10mb")
SERIAL_OVER_TOOL_GOAL = 1.2
"""Goal of part (b): the serial harness's mean at most this many times the tool's mean."""
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
    """One cell as a result row: p50/p99/mean/max in ms (the tool's figures for jvm-e2e),
    with its loop mode and the settings it used."""
    s = cell_summary(c)
    lat = s["latency"]
    out: dict[str, Any] = {"scenario": c.scenario, "payload": c.payload,
                           "payload_bytes": c.payload_bytes, "status": c.status,
                           "loop_mode": s.get("loop_mode"),
                           "client_settings": s.get("client_settings") or {}}
    if lat:
        out.update(count=s["count"], population=lat.count, e2e_p50_ms=lat.p50_ms,
                   e2e_p99_ms=lat.p99_ms, e2e_mean_ms=lat.mean_ms, e2e_max_ms=lat.max_ms,
                   lost=s["lost"], errors=s["errors"], duplicate=s["duplicate"])
        if lat.p99_ms is None:
            out["e2e_p99_reason"] = lat.reasons.get("p99")
    if s["tool"]:
        t = s["tool"]
        out.update(e2e_p50_ms=t.get("p50"), e2e_p99_ms=t.get("p99"), e2e_mean_ms=t.get("avg"),
                   resolution_ms=TOOL_RESOLUTION_MS, count=None)
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def serial_vs_tool(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Part (b)'s verdict: the serial harness against the tool (means; p50 with the tool's
    1 ms truncation), and the overlapped harness for reference."""
    by = {r["scenario"]: r for r in rows}
    serial, tool, overlapped = (by.get("confluent-kafka-serial", {}), by.get("jvm-e2e", {}),
                                by.get("confluent-kafka", {}))
    smean, tmean = serial.get("e2e_mean_ms"), tool.get("e2e_mean_ms")
    sp50, tp50 = serial.get("e2e_p50_ms"), tool.get("e2e_p50_ms")
    ratio_mean = _ratio(smean, tmean)
    return {
        "serial_over_tool_mean": ratio_mean,
        "serial_over_tool_p50": _ratio(sp50, tp50),
        "serial_over_tool_p50_bucket_top": _ratio(
            sp50, tp50 + TOOL_RESOLUTION_MS if tp50 is not None else None),
        "overlapped_over_tool_mean": _ratio(overlapped.get("e2e_mean_ms"), tmean),
        "tool_p50_note": "the tool's p50 is whole, truncated ms: its true p50 lies in "
                         "[p50, p50 + 1)",
        "tool_settings": tool.get("client_settings"),
        "serial_settings": serial.get("client_settings"),
        "goal_serial_mean_within_1_2x_of_tool_mean": (
            None if ratio_mean is None else ratio_mean <= SERIAL_OVER_TOOL_GOAL),
    }


def bench_kafka(messages_1kb: int, messages_mb: int, data_dir: Path) -> dict[str, Any]:
    """Parts (b) and (c) on the embedded cluster (the default flavor; started if needed)."""
    from kafkalab.cluster.embedded import cluster_up
    from kafkalab.cluster.flavors import DEFAULT_EMBEDDED

    d = cluster_up(DEFAULT_EMBEDDED.name, 1, progress=lambda m: print(m, file=sys.stderr))
    small = [_row(c) for c in _run(list(SMALL_SCENARIOS), ["1kb"], messages_1kb, 50, data_dir)]
    large = [_row(c) for c in _run(list(LARGE_SCENARIOS), list(LARGE_PAYLOADS), messages_mb, 3,
                                   data_dir)]
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
        "serial_vs_tool": serial_vs_tool(small),
        "large": large,
        "confluent_vs_kafka_python": cmp,
        "goal_confluent_not_slower": all(c["confluent_over_kafka_python_p50"] <= 1.0 for c in cmp) if cmp else None,
    }


def _f(value: Any, width: int = 8, digits: int = 3) -> str:
    return f"{value:{width}.{digits}f}" if isinstance(value, (int, float)) else f"{'-':>{width}}"


def print_kafka(res: dict[str, Any]) -> None:
    """Print parts (b) and (c) of a :func:`bench_kafka` result."""
    print("\n(b) 1 KB, latency profile: the serial harness beside Kafka's EndToEndLatency tool")
    for r in res["small_1kb"]:
        settings = settings_text(r.get("client_settings") or {}, r["scenario"])
        p99 = _f(r.get("e2e_p99_ms")) if r.get("e2e_p99_ms") is not None else f"{r.get('e2e_p99_reason') or '-':>8}"
        print(f"  {r['scenario']:<23} {r.get('loop_mode') or '-':<10} p50 {_f(r.get('e2e_p50_ms'))} ms"
              f"  p99 {p99} ms  mean {_f(r.get('e2e_mean_ms'), digits=4)} ms  [{settings}]")
    v = res["serial_vs_tool"]
    print(f"  serial/tool mean = {_f(v['serial_over_tool_mean'], 0)} (goal ≤ {SERIAL_OVER_TOOL_GOAL}: "
          f"{v['goal_serial_mean_within_1_2x_of_tool_mean']}); serial/tool p50 = "
          f"{_f(v['serial_over_tool_p50'], 0)} (vs the top of the tool's 1 ms bucket: "
          f"{_f(v['serial_over_tool_p50_bucket_top'], 0)}); overlapped/tool mean = "
          f"{_f(v['overlapped_over_tool_mean'], 0)}")
    print(f"  note: {v['tool_p50_note']}; the tool's mean has 4 decimals and includes its warm-up")
    print("\n(c) seed 000 sizes: e2e p50 / p99 ms")
    for r in res["large"]:
        p99 = _f(r.get("e2e_p99_ms"), 9, 2) if r.get("e2e_p99_ms") is not None else f"{r.get('e2e_p99_reason') or '-':>9}"
        print(f"  {r['payload']:<5} {r['scenario']:<23} {_f(r.get('e2e_p50_ms'), 9, 2)} {p99}  {r['status']}")
    print(f"  confluent-kafka no slower than kafka-python everywhere: {res['goal_confluent_not_slower']}")
