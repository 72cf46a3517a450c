"""The cell summary and the comparison table (kafkalab.summary), from hand-made samples."""

from __future__ import annotations

import pytest

from kafkalab.runner import CellResult
from kafkalab.samples import Sample
from kafkalab.summary import cell_summary, format_reading, format_table


def _msg(seq: int, e2e_ms: float | None, status: str = "ok", warmup: bool = False) -> Sample:
    send = 1_000_000_000 + seq * 10_000_000
    recv = None if e2e_ms is None else send + int(e2e_ms * 1e6)
    return Sample(sample_kind="message", seq=seq, is_warmup=warmup, status=status,
                  send_ts_ns=send, ack_ts_ns=send + 100_000, receive_ts_ns=recv)


def _cell(samples: list[Sample], scenario: str = "confluent-kafka", status: str = "complete",
          reason: str | None = None, emulator: bool = False) -> CellResult:
    return CellResult.from_samples(samples, scenario=scenario, payload="1kb", profile="latency",
                                   status=status, payload_bytes=1056, reason=reason,
                                   is_emulator=emulator)


def test_summary_counts_every_status_and_excludes_warmup() -> None:
    samples = [
        _msg(0, 50.0, warmup=True),           # warm-up: counted, not in the statistics
        *(_msg(i, float(i)) for i in range(1, 11)),  # 1 .. 10 ms
        _msg(11, 40.0, status="late"),        # late: still a latency
        _msg(12, None, status="lost"),
        _msg(13, None, status="error"),
        Sample(sample_kind="message", seq=3, status="duplicate", send_ts_ns=1, receive_ts_ns=2),
        Sample(sample_kind="first_message", seq=0, consumer_mode="subscribe",
               first_record_delay_ms=812.5),
        Sample(sample_kind="first_message", seq=0, consumer_mode="assign",
               first_record_delay_ms=12.25),
    ]
    s = cell_summary(_cell(samples))
    assert (s["count"], s["warmup"], s["lost"], s["late"], s["errors"], s["duplicate"]) == (
        11, 1, 1, 1, 1, 1)
    lat = s["latency"]
    # 11 received + 2 censored (lost, error): rank ceil(13/2) = 7 of 1..10, 40, inf, inf
    assert lat.count == 13 and lat.p50_ms == 7.0 and lat.max_ms == 40.0
    assert lat.p90_ms is None and lat.reasons["p90"] == "censored"
    assert lat.p99_ms is None and lat.reasons["p99"] == "n<100"
    assert s["first_subscribe_ms"] == 812.5 and s["first_assign_ms"] == 12.25
    assert s["tool"] == {}


def test_summary_of_a_tool_cell_has_no_latency_and_zero_count() -> None:
    tool = [Sample(sample_kind="tool_summary", seq=0, statistic=st, e2e_latency_ms_override=v,
                   latency_resolution_ms=1.0) for st, v in (("avg", 1.5), ("p50", 1.0), ("p99", 7.0))]
    s = cell_summary(_cell(tool, scenario="jvm-e2e"))
    assert s["latency"] is None and s["count"] == 0
    assert s["tool"] == {"avg": 1.5, "p50": 1.0, "p99": 7.0}


def test_table_has_one_row_per_cell_with_notes() -> None:
    ok = _cell([_msg(i, 2.0) for i in range(5)])
    emu = _cell([_msg(i, 3.0) for i in range(5)], scenario="kafka-python", emulator=True)
    failed = _cell([], scenario="rest", status="failed", reason="port 1 on 127.0.0.1 is in use")
    tool = _cell([Sample(sample_kind="tool_summary", seq=0, statistic="p50",
                         e2e_latency_ms_override=1.0)], scenario="jvm-e2e")
    lines = format_table([ok, emu, failed, tool]).splitlines()
    assert lines[0].split()[:4] == ["scenario", "payload", "profile", "n"]
    assert len(lines) == 2 + 4 + 1                 # header, rule, 4 cells, what-e2e-means line
    assert lines[-1].startswith("What e2e measures: rest = client → HTTP server process")
    by_scenario = {line.split()[0]: line for line in lines[2:-1]}
    assert by_scenario["confluent-kafka"].split()[3:5] == ["5", "2.00"]
    assert by_scenario["confluent-kafka"].split()[6] == "n<100"   # p99 of 5 messages
    assert "EMULATOR" in by_scenario["kafka-python"]
    assert "failed: port 1 on 127.0.0.1 is in use" in by_scenario["rest"]
    assert by_scenario["jvm-e2e"].split()[3] == "tool" and "whole ms" in by_scenario["jvm-e2e"]


@pytest.mark.parametrize("cells", [[]])
def test_empty_table_has_only_the_header(cells: list[CellResult]) -> None:
    assert len(format_table(cells).splitlines()) == 2


def test_first_message_is_the_median_of_warm_probes_with_the_cold_one_apart() -> None:
    def probe(seq: int, mode: str, ms: float | None, cold: bool = False) -> Sample:
        return Sample(sample_kind="first_message", seq=seq, consumer_mode=mode,
                      first_record_delay_ms=ms, cold_start=cold, status="ok" if ms else "lost")
    s = cell_summary(_cell([probe(0, "subscribe", 3000.0, cold=True), probe(1, "subscribe", 40.0),
                            probe(2, "subscribe", 50.0), probe(3, "subscribe", 60.0),
                            probe(0, "assign", 5.0), probe(1, "assign", None)]))
    assert s["first_subscribe_ms"] == 50.0 and s["first_cold_ms"] == 3000.0
    assert s["first_assign_ms"] == 5.0 and s["first_lost"] == 1


def test_tool_row_is_labelled_with_the_settings_it_used_not_the_profile() -> None:
    tool = [Sample(sample_kind="tool_summary", seq=0, statistic="p50", e2e_latency_ms_override=1.0)]
    result = _cell(tool, scenario="jvm-e2e")
    result.summary["client_settings"] = {"producer.acks": "1", "producer.linger.ms": "0",
                                         "consumer.fetch.max.wait.ms": "0"}
    line = format_table([result]).splitlines()[2]
    assert "latency" not in line and "tool: acks=1, linger.ms=0, fetch.max.wait.ms=0" in line


def test_json_summary_says_why_a_percentile_is_undefined() -> None:
    from kafkalab.summary import json_summary

    s = json_summary(_cell([_msg(i, float(i + 1)) for i in range(20)]))
    assert s["p99_ms"] is None and s["p99_ms_reason"] == "n<100 (20 in the population)"
    assert s["p50_ms"] == 10.0 and "p50_ms_reason" not in s
    assert s["p50_ms_ci95"] == [6.0, 15.0]


def _sized(samples: list[Sample], scenario: str, payload: str, size: int) -> CellResult:
    return CellResult.from_samples(samples, scenario=scenario, payload=payload, profile="latency",
                                   status="complete", payload_bytes=size)


def test_reading_names_the_fastest_per_size_and_the_first_message_gap() -> None:
    def probe(mode: str, ms: float) -> Sample:
        return Sample(sample_kind="first_message", seq=1, consumer_mode=mode,
                      first_record_delay_ms=ms)
    cells = [
        _sized([_msg(i, 9.0) for i in range(5)], "rest", "3mb", 3_000_000),
        _sized([_msg(i, 4.0) for i in range(5)] + [probe("subscribe", 1400.0),
                                                   probe("assign", 10.0)],
               "confluent-kafka", "3mb", 3_000_000),
        _sized([_msg(i, 2.0) for i in range(5)], "rest", "1mb", 1_000_000),
        _sized([_msg(i, 3.0) for i in range(5)] + [probe("subscribe", 1200.0),
                                                   probe("assign", 6.0)],
               "confluent-kafka", "1mb", 1_000_000),
        # the tool measures differently: never ranked, even when it is "faster"
        _sized([Sample(sample_kind="tool_summary", seq=0, statistic="p50",
                       e2e_latency_ms_override=1.0)], "jvm-e2e", "1mb", 1_000_000),
    ]
    fastest, first = format_reading(cells)
    # sizes in byte order (1mb before 3mb), the runner-up in brackets
    assert fastest == ("Fastest by e2e p50 per size: 1mb rest 2.00 ms (then confluent-kafka 3.00);"
                       " 3mb confluent-kafka 4.00 ms (then rest 9.00).")
    # nearest-rank median over sizes of each cell's probe: (1200, 1400) -> 1200, (6, 10) -> 6
    assert "confluent-kafka subscribe 1,200 ms vs assign 6 ms" in first
    assert "rest" not in first and "partition assignment" in first


def test_reading_admits_what_it_cannot_say() -> None:
    lost = [_msg(i, None, status="lost") for i in range(3)]
    fastest, first = format_reading([_sized(lost, "confluent-kafka", "1mb", 1_000_000)])
    assert fastest == "Fastest by e2e p50 per size: 1mb none with a p50."
    assert first == "First record after the consumer starts: not probed in this run."
    assert format_reading([])[0] == "Fastest by e2e p50 per size: no cells."
