"""The maximum-rate search's judgement and its tables (the search itself runs against the
real broker in tests/integration/test_load.py)."""

from __future__ import annotations

from typing import Any

from kafkalab.load.maxrate import _round_rate, format_max_rate_matrix, judge, ran_out


def _step(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"target_rate_msgs_per_s": 1000.0, "achieved_rate_msgs_per_s": 999.0,
                            "lag_growing": False, "failed_msgs": 0, "indeterminate_msgs": 0,
                            "unsent_msgs": 0, "failing_clients": 0, "publish_delay_p99_ms": 0.5,
                            "e2e_p99_ms": 20.0, "status": "complete"}
    base.update(over)
    return base


def test_a_good_step_passes_and_each_failure_is_named() -> None:
    assert judge(_step(), 100, 5) == []
    assert judge(_step(achieved_rate_msgs_per_s=970.0), 100, 5) == ["achieved 970 < 98 % of 1,000 msg/s"]
    assert judge(_step(lag_growing=True, lag_end_msgs=900), 100, 5) == ["lag growing (900 msgs at the stop)"]
    assert judge(_step(unsent_msgs=3, failing_clients=1), 100, 5) == ["errors: unsent_msgs=3, failing_clients=1"]
    assert judge(_step(publish_delay_p99_ms=None, publish_delay_max_ms=9.0), 100, 5) == [
        "publish delay p99 9.00 ms > 5 ms"]
    assert judge(_step(e2e_p99_ms=None, e2e_p99_ms_reason="censored"), 100, 5) == [
        "e2e p99 undefined (censored)"]
    assert judge(_step(e2e_p99_ms=150.0), 100, 5) == ["e2e p99 150.00 ms > objective 100 ms"]


def test_what_ran_out_prefers_the_busiest_resource() -> None:
    assert ran_out(_step(client_bound=True, max_process_cpu_frac=0.93)).startswith("client CPU")
    assert ran_out(_step(broker_cpu_frac=0.95)).startswith("broker CPU")
    assert ran_out(_step(host_cpu_busy_frac=0.97)).startswith("the host's CPUs")
    assert ran_out(_step(lag_growing=True)).startswith("consumers")
    assert ran_out(_step(saturated=True)).startswith("producer send path")
    assert ran_out(_step()).startswith("latency objective")


def test_rates_are_rounded_to_three_significant_digits() -> None:
    assert [_round_rate(x) for x in (1414.2, 12345.6, 98.76)] == [1410.0, 12300.0, 98.8]


def test_matrix_has_one_line_per_combination() -> None:
    rows = [{"payload": "1kb", "acks": "1", "partitions": 1, "replication_factor": 1,
             "profile": "default", "max_rate_msgs_per_s": 12000.0, "max_rate_mb_per_s": 12.672,
             "knee_rate_msgs_per_s": 8000.0, "limited_by": "broker CPU (0.95 of a core)"},
            {"payload": "1mb", "acks": "all", "partitions": 3, "replication_factor": 3,
             "profile": "durability", "max_rate_msgs_per_s": None, "limited_by": None}]
    text = format_max_rate_matrix(rows).splitlines()
    assert len(text) == 4
    assert "12,000" in text[2] and "12.672" in text[2] and "broker CPU" in text[2]
    assert "none" in text[3] and "durability" in text[3]


def test_a_search_that_passed_at_the_budget_cap_says_the_load_generator_bounded_it() -> None:
    """The doubling passed at the cap; a repeat there failed, 15 % lower passed and the 1.1x
    climb held: the answer (56,100) is below the cap, yet the client budget bounded the search
    (measured so on every release in docs/versions.md)."""
    from kafkalab.load.maxrate import MaxRateRequest, _result

    def step(rate: float, passed: bool, trial: int = 0) -> dict[str, Any]:
        return {"rate_msgs_per_s": rate, "trial": trial, "passed": passed, "reasons": [],
                "summary": _step(target_rate_msgs_per_s=rate, achieved_rate_msgs_per_s=rate)}

    steps = [step(16_000, True), step(32_000, True), step(60_000, True),
             step(60_000, False, 1), step(51_000, True, 2), step(56_100, True, 3)]
    capped = _result(MaxRateRequest(), "r", steps, 56_100.0, None, 60_000.0, 1056)
    assert capped["capped_by_budget"] is True
    assert capped["limited_by"] == "the client budget (the search stopped at the budget's cap)"
    found = _result(MaxRateRequest(), "r", [step(16_000, True), step(32_000, False)],
                    16_000.0, 32_000.0, 60_000.0, 1056)
    assert found["capped_by_budget"] is False and found["limited_by"].startswith("latency")
