"""The clock rule of load cells whose shards may run on other hosts (kafkalab.load.clock)."""

from __future__ import annotations

import pytest

from kafkalab.load import clock


def test_the_domain_is_the_boot_id_unless_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(clock.DOMAIN_ENV, raising=False)
    d = clock.domain()
    assert d.startswith(("boot:", "host:")) and len(d) > 5
    assert clock.domain() == d  # stable within a boot
    monkeypatch.setenv(clock.DOMAIN_ENV, "worker-b")
    assert clock.domain() == "worker-b"


def test_the_same_domain_subtracts_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(clock.DOMAIN_ENV, raising=False)
    assert clock.offset_to(clock.anchor()) == (0, clock.SAME_HOST)
    assert clock.offset_to(None) == (0, clock.SAME_HOST)  # a plan written before the rule
    assert clock.offset_to({"mono_minus_wall_ns": 5}) == (0, clock.SAME_HOST)


def test_another_domain_maps_through_the_wall_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A producer whose monotonic clock is 3 s ahead of ours (relative to the wall clocks):
    our readings are moved 3 s forward, and the basis says how."""
    monkeypatch.setenv(clock.DOMAIN_ENV, "worker-b")
    ours = clock.mono_minus_wall_ns()
    producer = {"domain": "worker-a", "host": "a", "mono_minus_wall_ns": ours + 3_000_000_000}
    offset, basis = clock.offset_to(producer)
    assert basis == clock.WALL_CLOCK
    # two reads of one host's (monotonic - realtime) differ by the read jitter only
    assert abs(offset - 3_000_000_000) < 1_000_000


def test_the_anchor_names_its_domain_and_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(clock.DOMAIN_ENV, "worker-a")
    a = clock.anchor()
    assert a["domain"] == "worker-a" and a["host"]
    assert isinstance(a["mono_minus_wall_ns"], int)
