"""Kafka's own ``kafka.tools.EndToEndLatency`` (seed 000's scenario 4), run from the
cluster's Kafka distribution and parsed.

What Kafka 0.9.0.1's tool does (``core/src/main/scala/kafka/tools/EndToEndLatency.scala``
at tag 0.9.0.1), and so what its figures mean:

* arguments ``broker_list topic num_messages producer_acks message_size_bytes
  [properties_file]``; ``producer_acks`` must be ``1`` or ``all`` (``0`` is refused, so a
  profile with ``acks=0`` skips this scenario);
* the properties file is loaded *twice*: as the consumer's and as the producer's properties
  (each client warns about, and ignores, the keys it does not know); then the tool forces
  the producer's ``linger.ms=0``, ``block.on.buffer.full=true``, ``acks`` and the
  consumer's ``fetch.max.wait.ms=0``, ``enable.auto.commit=false``,
  ``auto.offset.reset=latest`` and a fresh ``group.id``. The profile's linger, batch,
  fetch.min.bytes and fetch wait are therefore *not* what the tool ran with:
  :meth:`JvmEndToEndScenario.client_settings` records what it did apply
  (:func:`kafkalab.config.mapping.jvm_tool_settings`);
* the consumer *subscribes* (joins a new group), seeks to the end and polls once with a
  0 ms timeout; the group join may still be going on when the first message is sent;
* the loop is **serial**: build ``message_size_bytes`` random letters, read
  ``System.nanoTime``, ``producer.send(record).get()`` (wait for the ack), *then*
  ``consumer.poll(60000)``, read the clock again. A poll that returns nothing ends the tool
  with an exception (no loss accounting);
* every message is timed — there is no warm-up (the lab passes warm-up + measured
  messages, so the tool's figures *include* the warm-up and the consumer's start-up);
* it prints ``Avg latency: %.4f ms`` (the mean of the ns timings; the JVM's locale may
  write the decimal comma) and ``Percentiles: 50th = %d, 99th = %d, 99.9th = %d`` where
  each percentile is ``sorted[floor(n·q)]`` (0-based: a *floor* rank, one above the lab's
  nearest rank ``ceil(n·q)`` when n·q is whole) of latencies *truncated* to whole ms.

It gives no per-message figures, so its statistics are stored as ``tool_summary`` rows
(``loop_mode = serial``) with their resolution: 1 ms for the percentiles, 1e-4 ms for the
average. The lab's like-for-like counterpart is the ``confluent-kafka-serial`` scenario.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from kafkalab.cluster.descriptor import jvm_classpath
from kafkalab.cluster.flavors import flavor_of
from kafkalab.config.mapping import jvm_tool_properties, jvm_tool_settings
from kafkalab.errors import RunError
from kafkalab.payloads import wire_size_bytes
from kafkalab.progress import Progress
from kafkalab.samples import Sample
from kafkalab.scenarios.base import CatalogScenario, Cell, Skipped, wall_now_ns
from kafkalab.store import atomic_write

TOOL_STATISTICS: tuple[str, ...] = ("avg", "p50", "p99", "p99.9")
"""The statistics the tool prints, as the ``statistic`` of its ``tool_summary`` rows."""

TOOL_RESOLUTION_MS: dict[str, float] = {"avg": 1e-4, "p50": 1.0, "p99": 1.0, "p99.9": 1.0}
"""The resolution of each statistic: 4 decimals for the average, whole (truncated) ms for
the percentiles."""

TOOL_ACKS: tuple[str, ...] = ("1", "all")
"""The only ``producer_acks`` the tool accepts."""

TOOL_POLL_TIMEOUT_MS = 60_000
"""The tool's hard-coded ``consumer.poll`` timeout: a message not back by then ends it."""

_NUMBER = r"([0-9]+(?:[.,][0-9]+)?)"
_AVG = re.compile(r"Avg latency:\s*" + _NUMBER + r"\s*ms")
_PCT = re.compile(r"Percentiles:\s*50th\s*=\s*(\d+)\s*,\s*99th\s*=\s*(\d+)\s*,\s*99\.9th\s*=\s*(\d+)")
_FAILURE = re.compile(r"Exception in thread \"main\"\s+([\w.$]+)(?::\s*(.*))?")


def parse_tool_output(text: str) -> dict[str, float]:
    """``{"avg": ms, "p50": ms, "p99": ms, "p99.9": ms}`` from the tool's printout.

    Tolerates what surrounds the results in real output (log4j and client warnings, the
    progress lines ``<i>\\t<ms>`` every 1,000 messages, blank lines, Windows line ends) and a
    decimal comma in the average (the JVM's locale); the last results printed win.

    Raises:
        RunError: no results (naming the tool's exception when it printed one, else quoting
            the end of its output), or percentiles out of order.
    """
    avgs, pcts = _AVG.findall(text), _PCT.findall(text)
    if not avgs or not pcts:
        failure = _FAILURE.search(text)
        if failure:
            cls = failure.group(1).rsplit(".", 1)[-1]
            detail = (failure.group(2) or "").strip()
            raise RunError(f"EndToEndLatency failed: {cls}" + (f": {detail}" if detail else ""))
        tail = " | ".join(line.strip() for line in text.strip().splitlines()[-3:]) or "(nothing)"
        raise RunError(f"EndToEndLatency printed no results; its output ends with: {tail}")
    avg = float(avgs[-1].replace(",", "."))
    p50, p99, p999 = (float(v) for v in pcts[-1])
    if not p50 <= p99 <= p999:
        raise RunError(f"EndToEndLatency printed percentiles out of order: "
                       f"50th = {p50:g}, 99th = {p99:g}, 99.9th = {p999:g}")
    return dict(zip(TOOL_STATISTICS, (avg, p50, p99, p999), strict=True))


def tool_acks(acks: str) -> str:
    """The tool's ``producer_acks`` argument for a profile's ``acks``.

    Raises:
        Skipped: ``acks=0``: the tool refuses it (it times ``send().get()``).
    """
    if acks not in TOOL_ACKS:
        raise Skipped(f"EndToEndLatency refuses acks={acks} (it needs 1 or all: it waits for "
                      "every ack)")
    return acks


class JvmEndToEndScenario(CatalogScenario, scenario="jvm-e2e"):
    """Kafka's reference measurement, beside the harness's."""

    def __init__(self) -> None:
        self._version = "unknown"

    def client_version(self) -> str:
        return self._version

    def client_settings(self, cell: Cell) -> dict[str, str]:
        """What the tool actually applies (``producer.*``, ``consumer.*``: the properties
        file as each client takes it plus the tool's hard-coded settings) and how it
        measures (``tool.*``)."""
        bootstrap = cell.descriptor.bootstrap_servers if cell.descriptor else "?"
        out = jvm_tool_settings(cell.profile, cell.profile.producer.acks, bootstrap)
        out.update({
            "tool.loop_mode": "serial",
            "tool.loop": "producer.send(record).get(), then consumer.poll(60000)",
            "tool.consumer": "subscribe (new group), seekToEnd, poll(0) before the first send",
            "tool.timed_messages": (f"{cell.total_messages} (the warm-up included: "
                                    "every message is timed)"),
            "tool.percentile_rank": "floor: sorted[floor(n*q)], 0-based",
            "tool.resolution": "percentiles in whole ms, truncated; average to 1e-4 ms",
            "tool.message": f"{wire_size_bytes(cell.body)} random bytes (A-Z), built before the clock",
        })
        return out

    def run(self, cell: Cell, progress: Progress) -> None:
        """Run the tool once for the cell; its four statistics go to ``cell.sink``.

        Raises:
            Skipped: no Kafka installation, a secured cluster (SASL/TLS), or a profile with
                ``acks=0``.
            RunError: the tool failed, timed out or printed no results.
        """
        d = cell.descriptor
        if d is None or not d.kafka_home:
            raise Skipped("no Kafka installation in the cluster descriptor (kafka_home): "
                          "EndToEndLatency needs one")
        if d.secret_env or d.client_properties.get("security.protocol", "PLAINTEXT").upper() \
                != "PLAINTEXT":
            raise Skipped("the cluster needs security settings (security.protocol, secrets) "
                          "the tool's properties file does not carry yet: measure it with the "
                          "Python clients")
        home = Path(d.kafka_home)
        if not (home / "libs").is_dir():
            raise Skipped(f"kafka_home {home} has no libs/ folder")
        tools = flavor_of(d).features(d).tools
        tool = tools.end_to_end_latency
        if tool is None:
            raise Skipped(f"Kafka {d.version}'s distribution has no EndToEndLatency tool")
        acks = tool_acks(cell.profile.producer.acks)
        self._version = d.version
        # the run's scratch folder (LabData.run_work_dir): the settings the tool was given ...
        props = cell.work_dir / f"e2e-{cell.profile.name}-{cell.payload}.properties"
        atomic_write(props, "".join(f"{k}={v}\n"
                                    for k, v in jvm_tool_properties(cell.profile).items()))
        size = wire_size_bytes(cell.body)
        count = cell.total_messages
        cmd = ["java", "-Xmx1g", "-cp", jvm_classpath(home), tool,
               *tools.end_to_end_latency_args(d.bootstrap_servers, str(cell.topic), count, acks,
                                              size, str(props))]
        progress(f"EndToEndLatency: {count} messages of {size} bytes")
        timeout_s = count * min(cell.workload.message_timeout_s, TOOL_POLL_TIMEOUT_MS / 1000) + 60
        wall_ns = wall_now_ns()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RunError(f"EndToEndLatency did not finish within {timeout_s:.0f} s") from None
        # ... and its whole printout, beside them
        atomic_write(cell.work_dir / f"e2e-{cell.profile.name}-{cell.payload}.log",
                     proc.stdout + proc.stderr)
        out = proc.stdout + "\n" + proc.stderr
        try:
            stats = parse_tool_output(out)
        except RunError as exc:
            if proc.returncode != 0:
                raise RunError(f"{exc} (exit status {proc.returncode})") from None
            raise
        for name, value in stats.items():  # written even if the tool failed after printing them
            cell.sink.write(Sample(
                sample_kind="tool_summary", seq=0, statistic=name, e2e_latency_ms_override=value,
                latency_resolution_ms=TOOL_RESOLUTION_MS[name], loop_mode=self.loop_mode,
                wall_ts_ns=wall_ns,
            ))
        if proc.returncode != 0:
            raise RunError(f"EndToEndLatency exited {proc.returncode} after printing its results: "
                           + " | ".join(proc.stderr.strip().splitlines()[-2:]))
