"""The words beside the report's figures (kafkalab.report.notes)."""

from __future__ import annotations

import json

from kafkalab.report.charts import LineSeries, svg_line_chart
from kafkalab.report.notes import (
    MEASURES_SHORT,
    ci_cell,
    measures_note,
    percentile_cell,
    profile_text,
    scenario_kind,
    settings_text,
    settings_title,
)


def test_scenario_kinds() -> None:
    assert [scenario_kind(s) for s in ("rest", "kafka-python", "confluent-kafka",
                                       "confluent-kafka-serial", "jvm-e2e")] == [
        "rest", "kafka", "kafka", "kafka", "tool"]
    assert scenario_kind("jvm-old-name") == "tool" and scenario_kind("other") == "kafka"


def test_the_measures_line_only_where_rest_and_kafka_meet() -> None:
    assert measures_note(["kafka-python", "confluent-kafka"]) == ""
    assert measures_note(["rest"]) == ""
    both = measures_note(["rest", "confluent-kafka"])
    assert "one hop: client → server process" in both and "publish latency is n/a" in both
    assert "two hops: producer → broker log append (+ replication when rf &gt; 1)" in both
    assert "EndToEndLatency" not in both  # no tool in this table
    assert "EndToEndLatency" in measures_note(["rest", "jvm-e2e"])


def test_settings_are_the_ones_used_under_one_name() -> None:
    librdkafka = json.dumps({"producer.acks": "-1", "producer.linger.ms": "5",
                             "consumer.fetch.wait.max.ms": "10", "producer.enable.idempotence":
                             "false"})
    assert settings_text(librdkafka, "confluent-kafka") == (
        "acks=-1, linger.ms=5, fetch.max.wait.ms=10")
    assert "producer.enable.idempotence=false" in settings_title(librdkafka)
    kafka_python = json.dumps({"producer.acks": "1", "producer.linger_ms": "0",
                               "consumer.fetch_max_wait_ms": "10"})
    assert settings_text(kafka_python, "kafka-python") == (
        "acks=1, linger.ms=0, fetch.max.wait.ms=10")
    tool = json.dumps({"producer.acks": "1", "producer.linger.ms": "0",
                       "consumer.fetch.max.wait.ms": "0", "tool.loop_mode": "serial"})
    assert settings_text(tool, "jvm-e2e") == "acks=1, linger.ms=0, fetch.max.wait.ms=0"
    # an old tool row without recorded settings: what the tool always hard-codes
    assert settings_text(None, "jvm-e2e") == "linger.ms=0, fetch.max.wait.ms=0"
    assert settings_text(None, "confluent-kafka") == "—"
    rest = json.dumps({"http.method": "POST", "http.timeout_s": "30.0",
                       "harness.loop_mode": "request"})
    assert settings_text(rest, "rest") == "method=POST, timeout_s=30.0"
    assert profile_text("latency", "jvm-e2e") == "own settings (tool)"
    assert profile_text("latency", "confluent-kafka-serial") == "latency"


def test_undefined_percentiles_and_intervals() -> None:
    assert percentile_cell(12.345, None) == "12.35"
    assert ">n&lt;100<" in percentile_cell(None, "n<100")
    assert ">censored<" in percentile_cell(float("nan"), "censored")
    assert percentile_cell(None, None) == "—"
    assert ci_cell(1.0, 2.5) == "1.00–2.50" and ci_cell(1.0, None) == "≥ 1.00"
    assert ci_cell(None, 3.0) == "≤ 3.00"
    assert ci_cell(None, None) == "—"


def test_a_chart_can_carry_the_measures_line() -> None:
    plain = svg_line_chart("t", ["a", "b"], [LineSeries("s", [1.0, 2.0])], "ms")
    noted = svg_line_chart("t", ["a", "b"], [LineSeries("s", [1.0, 2.0])], "ms",
                           note=MEASURES_SHORT)
    assert MEASURES_SHORT not in plain and '<text class="note" x="64" y="38">' in noted
    assert "REST e2e: 1 hop (client → server)" in noted

    def height(svg: str) -> int:
        return int(svg.split('height="', 1)[1].split('"', 1)[0])

    assert height(noted) == height(plain) + 18  # the plot keeps its size
