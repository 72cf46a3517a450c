"""Kafka 0.9.0.1's EndToEndLatency: its printout parsed, and what the lab records about the
settings it actually applies. The printouts below are real shapes of the 0.9.0.1 tool
(stdout, then stderr, as the scenario joins them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.config.mapping import jvm_tool_properties
from kafkalab.config.models import Profile, Workload
from kafkalab.errors import RunError
from kafkalab.scenarios.base import Cell, Skipped
from kafkalab.scenarios.jvm_e2e import (
    TOOL_STATISTICS,
    JvmEndToEndScenario,
    parse_tool_output,
    tool_acks,
)

PLAIN = """0\t28.155482
Avg latency: 5.0221 ms

Percentiles: 50th = 3, 99th = 28, 99.9th = 28
"""
"""50 messages, no log4j configuration (the lab's invocation): the warnings go to stderr."""

NO_APPENDERS = """log4j:WARN No appenders could be found for logger (org.apache.kafka.clients.consumer.ConsumerConfig).
log4j:WARN Please initialize the log4j system properly.
log4j:WARN See http://logging.apache.org/log4j/1.2/faq.html#noconfig for more info.
"""

WITH_TOOLS_LOG4J = """0\t21.924491000000003
1000\t0.8084199999999999
Avg latency: 1.5141 ms

Percentiles: 50th = 0, 99th = 8, 99.9th = 16

[2026-11-22 06:43:53,635] WARN The configuration compression.type = none was supplied but isn't a known config. (org.apache.kafka.clients.consumer.ConsumerConfig)
[2026-11-22 06:43:53,650] WARN block.on.buffer.full config is deprecated and will be removed soon. Please use max.block.ms (org.apache.kafka.clients.producer.KafkaProducer)
[2026-11-22 06:43:53,658] WARN The configuration max.partition.fetch.bytes = 17825792 was supplied but isn't a known config. (org.apache.kafka.clients.producer.ProducerConfig)
"""
"""1,001 messages with kafka-run-class's tools-log4j.properties: two progress lines, and the
clients' warnings about the keys of the shared properties file they do not know."""

GERMAN_LOCALE = """0\t20.866591
Avg latency: 8,9323 ms

Percentiles: 50th = 3, 99th = 20, 99.9th = 20
"""
"""``%.4f`` in a JVM whose locale writes the decimal comma."""

ACKS_ZERO = """Exception in thread "main" java.lang.IllegalArgumentException: Latency testing requires synchronous acknowledgement. Please use 1 or all
\tat kafka.tools.EndToEndLatency$.main(EndToEndLatency.scala:57)
\tat kafka.tools.EndToEndLatency.main(EndToEndLatency.scala)
"""

POLL_TIMEOUT = """0\t25.1
Exception in thread "main" java.lang.RuntimeException: poll() timed out before finding a result (timeout:[60000])
\tat kafka.tools.EndToEndLatency$$anonfun$main$1.apply$mcVI$sp(EndToEndLatency.scala:106)
"""


def test_plain_output() -> None:
    assert parse_tool_output(PLAIN + "\n" + NO_APPENDERS) == {
        "avg": 5.0221, "p50": 3.0, "p99": 28.0, "p99.9": 28.0}
    assert list(parse_tool_output(PLAIN)) == list(TOOL_STATISTICS)


def test_progress_lines_and_client_warnings_around_the_results() -> None:
    assert parse_tool_output(WITH_TOOLS_LOG4J) == {
        "avg": 1.5141, "p50": 0.0, "p99": 8.0, "p99.9": 16.0}


def test_a_decimal_comma_and_windows_line_ends() -> None:
    assert parse_tool_output(GERMAN_LOCALE)["avg"] == 8.9323
    assert parse_tool_output(PLAIN.replace("\n", "\r\n")) == parse_tool_output(PLAIN)


def test_the_last_results_win() -> None:
    assert parse_tool_output(GERMAN_LOCALE + PLAIN)["avg"] == 5.0221


def test_the_tools_exception_is_named() -> None:
    with pytest.raises(RunError, match=r"EndToEndLatency failed: IllegalArgumentException: "
                                       r"Latency testing requires synchronous acknowledgement"):
        parse_tool_output(ACKS_ZERO)
    with pytest.raises(RunError, match=r"RuntimeException: poll\(\) timed out"):
        parse_tool_output(POLL_TIMEOUT)


def test_no_results_quotes_the_end_of_the_output() -> None:
    with pytest.raises(RunError, match=r"printed no results; its output ends with: .*log4j:WARN See"):
        parse_tool_output(NO_APPENDERS)
    with pytest.raises(RunError, match=r"ends with: \(nothing\)"):
        parse_tool_output("")
    with pytest.raises(RunError, match="no results"):  # an average alone is not a result
        parse_tool_output("Avg latency: 1.0000 ms\n")


def test_percentiles_out_of_order_are_refused() -> None:
    with pytest.raises(RunError, match="out of order"):
        parse_tool_output("Avg latency: 1.0 ms\nPercentiles: 50th = 9, 99th = 3, 99.9th = 4\n")


def _cell(tmp_path: Path, acks: str = "1") -> Cell:
    profile = Profile.model_validate({
        "name": "latency", "goal": "latency",
        "producer": {"linger_ms": 5, "acks": acks, "compression": "lz4", "retries": 2,
                     "batch_size_bytes": 65536},
        "consumer": {"fetch_min_bytes": 1024, "fetch_max_wait_ms": 100},
    })
    d = ClusterDescriptor(flavor="kafka09", protocol="legacy-0.9", bootstrap_servers="h:9092",
                          broker_count=1)
    return Cell(run_id="r", workload=Workload(name="w", messages=20, warmup_messages=2),
                profile=profile, payload="1kb", body=b"x" * 1024, topic="t", descriptor=d,
                work_dir=tmp_path)


def test_client_settings_are_what_the_tool_applies(tmp_path: Path) -> None:
    s = JvmEndToEndScenario().client_settings(_cell(tmp_path))
    # hard-coded by the tool, whatever the profile says (linger 5, fetch wait 100)
    assert s["producer.linger.ms"] == "0" and s["consumer.fetch.max.wait.ms"] == "0"
    assert s["producer.acks"] == "1" and s["producer.block.on.buffer.full"] == "true"
    assert s["consumer.enable.auto.commit"] == "false"
    assert s["consumer.auto.offset.reset"] == "latest"
    # the properties file, as each client takes it (each ignores the keys it does not know)
    assert s["producer.compression.type"] == "lz4" and s["producer.retries"] == "2"
    assert "consumer.compression.type" not in s and "producer.max.partition.fetch.bytes" not in s
    assert s["consumer.max.partition.fetch.bytes"] == s["producer.max.request.size"]
    # the profile's settings the tool does not apply are not claimed
    assert not any("batch" in k or "fetch.min.bytes" in k for k in s)
    assert s["tool.loop_mode"] == "serial"
    assert s["tool.timed_messages"].startswith("22 ")  # the warm-up is timed too
    assert "floor" in s["tool.percentile_rank"] and "truncated" in s["tool.resolution"]
    assert all(isinstance(v, str) for v in s.values())


def test_every_key_of_the_properties_file_is_placed(tmp_path: Path) -> None:
    cell = _cell(tmp_path)
    s = JvmEndToEndScenario().client_settings(cell)
    for key in jvm_tool_properties(cell.profile):
        assert f"producer.{key}" in s or f"consumer.{key}" in s, key


def test_acks_zero_skips_the_tool(tmp_path: Path) -> None:
    assert tool_acks("all") == "all" and tool_acks("1") == "1"
    with pytest.raises(Skipped, match="acks=0"):
        tool_acks("0")
    cell = _cell(tmp_path, acks="0")
    cell.descriptor = cell.descriptor.model_copy(update={"kafka_home": str(tmp_path)})  # type: ignore[union-attr]
    (tmp_path / "libs").mkdir()
    with pytest.raises(Skipped, match="acks=0"):
        JvmEndToEndScenario().run(cell, lambda _m: None)
