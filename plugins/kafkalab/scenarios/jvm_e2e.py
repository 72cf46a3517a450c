"""Kafka's own ``kafka.tools.EndToEndLatency`` (seed 000's scenario 4), run from the
cluster's Kafka distribution and parsed.

The tool sends ``num_messages`` records of ``message_size_bytes`` random bytes one at a time
(send, wait for the ack, poll until it is back) and prints its average and its 50th, 99th
and 99.9th percentiles. It gives no per-message figures and cannot exclude a warm-up, so its
statistics are stored as ``tool_summary`` rows, with their resolution: the percentiles are
whole milliseconds, truncated by the tool; the average has 4 decimals.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from kafkalab.cluster.descriptor import jvm_classpath
from kafkalab.config.mapping import jvm_tool_properties
from kafkalab.errors import RunError
from kafkalab.payloads import wire_size_bytes
from kafkalab.progress import Progress
from kafkalab.samples import Sample
from kafkalab.scenarios.base import CatalogScenario, Cell, Skipped
from kafkalab.store import atomic_write

TOOL_STATISTICS: tuple[str, ...] = ("avg", "p50", "p99", "p99.9")
"""The statistics the tool prints, as the ``statistic`` of its ``tool_summary`` rows."""
_AVG = re.compile(r"Avg latency:\s*([0-9.]+)\s*ms")
_PCT = re.compile(r"Percentiles:\s*50th\s*=\s*(\d+),\s*99th\s*=\s*(\d+),\s*99\.9th\s*=\s*(\d+)")


def parse_tool_output(text: str) -> dict[str, float]:
    """``{"avg": ms, "p50": ms, "p99": ms, "p99.9": ms}`` from the tool's printout."""
    avg, pct = _AVG.search(text), _PCT.search(text)
    if not avg or not pct:
        raise RunError("EndToEndLatency printed no results; its output ends with: "
                       + " | ".join(text.strip().splitlines()[-3:]))
    values = (avg.group(1), pct.group(1), pct.group(2), pct.group(3))
    return {name: float(v) for name, v in zip(TOOL_STATISTICS, values, strict=True)}


class JvmEndToEndScenario(CatalogScenario, scenario="jvm-e2e"):
    """Kafka's reference measurement, beside the harness's."""

    def __init__(self) -> None:
        self._version = "unknown"

    def client_version(self) -> str:
        return self._version

    def run(self, cell: Cell, progress: Progress) -> list[Sample]:
        d = cell.descriptor
        if d is None or not d.kafka_home:
            raise Skipped("no Kafka installation in the cluster descriptor (kafka_home): "
                          "EndToEndLatency needs one")
        home = Path(d.kafka_home)
        if not (home / "libs").is_dir():
            raise Skipped(f"kafka_home {home} has no libs/ folder")
        self._version = d.version
        # the run's scratch folder (LabData.run_work_dir): the settings the tool was given ...
        props = cell.work_dir / f"e2e-{cell.profile.name}-{cell.payload}.properties"
        atomic_write(props, "".join(f"{k}={v}\n"
                                    for k, v in jvm_tool_properties(cell.profile).items()))
        acks = "all" if cell.profile.producer.acks == "all" else cell.profile.producer.acks
        size = wire_size_bytes(cell.body)
        count = cell.total_messages
        cmd = ["java", "-Xmx1g", "-cp", jvm_classpath(home), self.client,
               d.bootstrap_servers, str(cell.topic), str(count), acks, str(size), str(props)]
        progress(f"EndToEndLatency: {count} messages of {size} bytes")
        timeout_s = count * cell.workload.message_timeout_s + 60
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RunError(f"EndToEndLatency did not finish within {timeout_s:.0f} s") from None
        out = proc.stdout + proc.stderr
        # ... and its whole printout, beside them
        atomic_write(cell.work_dir / f"e2e-{cell.profile.name}-{cell.payload}.log", out)
        if proc.returncode != 0:
            raise RunError(f"EndToEndLatency exited {proc.returncode}: "
                           + " | ".join(out.strip().splitlines()[-2:]))
        stats = parse_tool_output(out)
        return [
            Sample(sample_kind="tool_summary", seq=0, statistic=name, e2e_latency_ms_override=value,
                   latency_resolution_ms=1e-4 if name == "avg" else 1.0)
            for name, value in stats.items()
        ]
