"""The canary's accounting (:mod:`kafkalab.canary.book`) and figures
(:mod:`kafkalab.canary.metrics`): every verdict, on exact clocks."""

from __future__ import annotations

import io
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kafkalab.canary.book import Book
from kafkalab.canary.metrics import Figures, hdr_log_header, percentiles
from kafkalab.canary.spec import CanarySpec
from kafkalab.canary.topic import placement

pytestmark = pytest.mark.unit

MS = 1_000_000
ACK = 0
"""An ack time within the produce deadline (intended + 2 s) of every record of these tests
but the one that is about the deadline."""


class Calls:
    """A sink that records every verdict."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def produced(self, broker: int, partition: int, acked: bool) -> None:
        self.calls.append(("produced", broker, partition, acked))

    def consumed(self, broker: int, partition: int, in_time: bool) -> None:
        self.calls.append(("consumed", broker, partition, in_time))

    def latency(self, broker: int, partition: int, e2e_latency_ms: float,
                leader_change: bool) -> None:
        self.calls.append(("latency", broker, partition, e2e_latency_ms, leader_change))

    def anomaly(self, broker: int, partition: int, kind: str) -> None:
        self.calls.append(("anomaly", broker, partition, kind))

    def kinds(self, kind: str) -> list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] == kind]


def book(sink: Calls) -> Book:
    b = Book(sink, produce_timeout_ms=2000, consume_deadline_ms=1000, lost_after_ms=5000,
             settle_ms=300, stats_interval_ms=100)
    b.leader_seen(0, 7, 0)
    b.leader_seen(1, 8, 0)
    return b


def test_a_record_read_in_time_is_good_and_its_latency_is_from_the_intended_time() -> None:
    sink = Calls()
    b = book(sink)
    b.sent(0, 0, 100 * MS)
    b.acked(0, 0, ACK)
    b.received(0, 0, 112 * MS)  # 12 ms after its intended time
    b.tick(420 * MS)  # settled (112 + 300), not yet due (100 + 1000)
    assert sink.calls == [("produced", 7, 0, True), ("latency", 7, 0, 12.0, False)]
    b.tick(1100 * MS)
    assert sink.kinds("consumed") == [("consumed", 7, 0, True)]
    b.tick(5100 * MS)  # forgotten, read: not lost
    assert not sink.kinds("anomaly") and b.held == 0


def test_overdue_then_late_and_an_unread_one_lost_each_counted_once() -> None:
    sink = Calls()
    b = book(sink)
    for seq in (0, 1):
        b.sent(0, seq, seq * MS)
        b.acked(0, seq, ACK)
    b.tick(1001 * MS)  # both due, neither read
    assert sink.kinds("consumed") == [("consumed", 7, 0, False)] * 2
    b.received(0, 0, 2000 * MS)  # after its deadline: late, and its latency is filed
    b.tick(2300 * MS)
    assert sink.kinds("anomaly") == [("anomaly", 7, 0, "late")]
    assert sink.kinds("latency") == [("latency", 7, 0, 2000.0, False)]
    b.tick(5001 * MS)  # seq 1 never read: lost at intended + lost_after
    assert sink.kinds("anomaly")[-1] == ("anomaly", 7, 0, "lost")
    assert len(sink.kinds("anomaly")) == 2 and b.held == 0


def test_failed_sends_duplicates_and_strangers() -> None:
    sink = Calls()
    b = book(sink)
    b.sent(1, 0, 0)
    b.failed(1, 0)
    b.received(1, 0, 10 * MS)  # written after all
    b.sent(1, 1, 0)
    b.acked(1, 1, ACK)
    b.received(1, 1, 5 * MS)
    b.received(1, 1, 6 * MS)  # read twice
    b.received(1, 99, 7 * MS)  # never sent by this canary (or forgotten)
    assert [c[3] for c in sink.kinds("anomaly")] == ["received_unacked", "duplicated", "unknown"]
    b.tick(2000 * MS)
    # the failed record is no consume verdict and no latency: only the acked one is
    assert sink.kinds("consumed") == [("consumed", 8, 1, True)]
    assert sink.kinds("latency") == [("latency", 8, 1, 5.0, False)]


def test_an_ack_after_the_produce_deadline_is_not_a_good_send() -> None:
    """librdkafka's message.timeout.ms runs from produce(); the deadline runs from the
    intended time, so a record sent late (the canary stalled) and acked past it is not good."""
    sink = Calls()
    b = book(sink)
    b.sent(0, 0, 0)
    b.acked(0, 0, 2001 * MS)  # the deadline is intended + 2,000 ms
    b.received(0, 0, 2002 * MS)
    assert sink.kinds("produced") == [("produced", 7, 0, False)]
    assert sink.kinds("anomaly") == [("anomaly", 7, 0, "acked_late")]
    b.tick(9000 * MS)  # still an acked record: due for consumption, read late, its latency filed
    assert sink.kinds("consumed") == [("consumed", 7, 0, False)]
    assert sink.kinds("anomaly")[-1] == ("anomaly", 7, 0, "late")  # counted once
    assert len(sink.kinds("anomaly")) == 2
    assert sink.kinds("latency") == [("latency", 7, 0, 2002.0, False)]


def test_a_verdict_waits_for_the_send_outcome_on_its_partition_only() -> None:
    sink = Calls()
    b = book(sink)
    b.sent(0, 0, 0)  # no outcome yet (a dead leader)
    b.sent(1, 0, 0)
    b.acked(1, 0, ACK)
    b.received(1, 0, 3 * MS)
    b.tick(1500 * MS)
    assert sink.kinds("consumed") == [("consumed", 8, 1, True)]  # partition 0 does not block 1


def test_a_leader_change_seen_around_a_record_files_it_apart() -> None:
    sink = Calls()
    b = book(sink)
    b.sent(0, 0, 1000 * MS)
    b.sent(0, 1, 1000 * MS)
    b.acked(0, 0, ACK)
    b.acked(0, 1, ACK)
    b.received(0, 0, 1020 * MS)  # before the change
    b.leader_seen(0, 9, 3000 * MS)  # the producer learns of a new leader
    b.received(0, 1, 2950 * MS)  # delayed by it (read just before the view changed)
    b.tick(4000 * MS)
    filed = {round(c[3]): c[4] for c in sink.kinds("latency")}
    assert filed == {20: False, 1950: True}
    assert b.leader_changes == {0: 1} and b.leader(0) == 9
    b.sent(0, 2, 4000 * MS)  # now attributed to the new leader
    b.acked(0, 2, ACK)
    assert sink.kinds("produced")[-1] == ("produced", 9, 0, True)


def test_warm_up_records_get_no_verdict_and_are_counted() -> None:
    sink = Calls()
    b = book(sink)
    b.warmup_until_ns = 500 * MS
    b.sent(0, 0, 100 * MS)
    b.acked(0, 0, ACK)
    b.received(0, 0, 900 * MS)
    b.received(0, 0, 901 * MS)
    b.tick(9000 * MS)
    assert sink.calls == [] and b.warmup_records == 1


def test_close_gives_certain_verdicts_early_and_counts_the_open_ones() -> None:
    sink = Calls()
    b = book(sink)
    b.sent(0, 0, 0)
    b.acked(0, 0, ACK)
    b.received(0, 0, 4 * MS)
    b.sent(0, 1, 0)  # no outcome
    b.sent(1, 0, 0)
    b.acked(1, 0, ACK)  # acked, unread, not yet due
    assert not b.close_ready()
    assert b.close(10 * MS) == {7: 1, 8: 1}
    assert sink.kinds("consumed") == [("consumed", 7, 0, True)]
    assert sink.kinds("latency") == [("latency", 7, 0, 4.0, False)]


def test_memory_is_bounded_by_lost_after() -> None:
    sink = Calls()
    b = book(sink)
    for seq in range(10_000):  # 10 records a ms for 1,000 s of clock
        now = seq * 100 * MS
        b.sent(0, seq, now)
        b.acked(0, seq, now + MS)
        b.received(0, seq, now + MS)
        b.tick(now + 2 * MS)
    assert b.held <= 5000 // 100 + 1


def test_percentiles_follow_the_labs_rules_and_censor_the_lost() -> None:
    from hdrh.histogram import HdrHistogram

    h = HdrHistogram(1, 3_600_000_000, 3)
    for us in range(1000, 100_001, 1000):  # 1 … 100 ms, 100 values
        h.record_value(us)
    p = percentiles(h)
    assert p["p50_ms"] == pytest.approx(50.0, rel=1e-3) and p["p99_ms"] == pytest.approx(99.0, rel=1e-3)
    assert p["p999_ms"] is None and p["p999_reason"] == "n<1000"
    censored = percentiles(h, censored=2)  # two lost records are slower than any read one
    assert censored["n"] == 102 and censored["p99_ms"] is None and censored["p99_reason"] == "censored"
    assert percentiles(HdrHistogram(1, 3_600_000_000, 3))["p50_reason"] == "n<1"


def test_figures_feed_prometheus_and_the_hdr_log() -> None:
    from hdrh.log import HistogramLogReader

    registry = CollectorRegistry()
    fig = Figures(registry)
    fig.produced(1, 0, True)
    fig.produced(1, 0, False)
    fig.consumed(1, 0, True)
    fig.latency(1, 0, 12.5, False)
    fig.latency(1, 0, 3000.0, True)
    fig.anomaly(1, 0, "lost")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for fam in text_string_to_metric_families(generate_latest(registry).decode())
               for s in fam.samples}
    bp = (("broker", "1"), ("partition", "0"))
    assert samples[("kafkalab_canary_produce_attempts_total", bp)] == 2
    assert samples[("kafkalab_canary_produce_acked_total", bp)] == 1
    assert samples[("kafkalab_canary_anomalies_total",
                    (("broker", "1"), ("kind", "lost"), ("partition", "0")))] == 1
    assert samples[("kafkalab_canary_e2e_latency_seconds_count", (("broker", "1"),))] == 1
    assert samples[("kafkalab_canary_e2e_latency_leader_change_seconds_count", (("broker", "1"),))] == 1
    (row,) = fig.broker_summary({1: 3})
    assert row["produce_availability"] == 0.5 and row["unresolved_at_stop"] == 3
    assert row["e2e_latency"]["censored"] == 1  # the lost record
    assert row["e2e_latency_leader_change"]["max_ms"] == pytest.approx(3000, rel=1e-3)
    log = io.StringIO()
    hdr_log_header(log, 1_800_000_000.0, "test")
    fig.write_interval(log, 1_800_000_000.0, 1_800_000_010.0)
    assert fig.interval_hist == {}
    path = io.StringIO(log.getvalue())
    reader = HistogramLogReader.__new__(HistogramLogReader)  # read from memory, not a file
    reader.__init__("/dev/null", fig.slo_hist[1])  # type: ignore[misc]
    reader.input_file = path
    hist = reader.get_next_interval_histogram()
    assert hist is not None and hist.get_total_count() == 1 and hist.tag == "broker-1"


def test_spec_refuses_deadlines_out_of_order(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="lost_after_s must be longer than consume_deadline_ms"):
        CanarySpec(out_dir=tmp_path, consume_deadline_ms=70_000)
    assert CanarySpec(out_dir=tmp_path).stats_interval_ms == 1000


def test_placement_gives_each_broker_a_partition_it_leads() -> None:
    assert placement([0, 1, 2], [0, 1, 2], 3) == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    assert placement([0, 1, 2, 5], [5], 2) == [[5, 0]]
