"""Load cells are validated once, at the edge: bad input is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kafkalab.errors import ConfigError
from kafkalab.load.spec import (
    BUDGET_ENV,
    LoadCellSpec,
    check_budget,
    deliveries_budget_per_s,
)
from kafkalab.load.workloads import load_load_workload


def test_schedule_counts_follow_rate_duration_and_warmup() -> None:
    s = LoadCellSpec(rate_msgs_per_s=200, duration_s=10, warmup_s=2)
    assert s.intended_messages == 2000
    assert s.warmup_messages == 400
    assert s.measured_messages == 1600
    assert s.window_s == 8
    assert s.interval_ns == pytest.approx(5e6)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"rate_msgs_per_s": 0}, "greater than 0"),
    ({"duration_s": 2, "warmup_s": 2}, "must be longer than the warm-up"),
    ({"pause_at_s": 3}, "pause_at_s and pause_for_s go together"),
    ({"pause_at_s": 30, "pause_for_s": 1}, "after the end of the run"),
    ({"payload": "2kb"}, "unknown payload '2kb'"),
    ({"consumers": 2, "slow_consumer": 2}, "slow_consumer=2 is not one of the 2 consumers"),
])
def test_bad_cells_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        LoadCellSpec(**kwargs)  # type: ignore[arg-type]


def test_shards_deal_consumers_in_blocks() -> None:
    s = LoadCellSpec(consumers=25, consumers_per_shard=10)
    assert s.shards == 3
    dealt = [s.shard_consumers(k) for k in range(s.shards)]
    assert sorted(c for block in dealt for c in block) == list(range(25))
    assert all(len(block) <= 10 for block in dealt)


def test_cell_id_names_what_makes_the_cell_different() -> None:
    base = LoadCellSpec(consumers=5, rate_msgs_per_s=1000)
    assert base.cell_id("1") == "confluent-kafka.1kb.default.acks-1.c5.r1000.p1"
    assert LoadCellSpec(consumers=5, rate_msgs_per_s=1000, acks="0").cell_id("1").endswith(
        "acks-0.c5.r1000.p1")
    assert base.model_copy(update={"trial": 2}).cell_id("1").endswith(".t2")
    paused = LoadCellSpec(pause_at_s=3, pause_for_s=2)
    assert ".pause3-2" in paused.cell_id("1")


def test_budget_refuses_a_cell_the_clients_cannot_carry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BUDGET_ENV, raising=False)
    budget, source = deliveries_budget_per_s(cpu_count=2)
    assert "per client core (fan-out" in source
    fits = LoadCellSpec(consumers=2, rate_msgs_per_s=budget / 4)
    check_budget(fits, 1056, cpu_count=2)
    one, _ = deliveries_budget_per_s(cpu_count=2, consumers=1)
    assert one == 3 * budget  # one fetcher: a delivery costs a third
    check_budget(LoadCellSpec(consumers=1, rate_msgs_per_s=one), 1056, cpu_count=2)
    with pytest.raises(ConfigError, match=r"one consumer, measured"):
        check_budget(LoadCellSpec(consumers=1, rate_msgs_per_s=one * 1.1), 1056, cpu_count=2)
    too_many = LoadCellSpec(consumers=500, rate_msgs_per_s=3000)
    with pytest.raises(ConfigError, match=r"500 consumers × 3000 msg/s .* needs ~1,500,000 "
                       r"deliveries/s; this machine's client budget is"):
        check_budget(too_many, 1056, cpu_count=2)


def test_budget_counts_big_records_by_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BUDGET_ENV, "10000")
    small = LoadCellSpec(consumers=10, rate_msgs_per_s=500)
    check_budget(small, 1056)
    with pytest.raises(ConfigError, match="needs ~"):
        check_budget(small.model_copy(update={"payload": "1mb"}), 1_462_780)


def test_budget_override_must_be_a_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BUDGET_ENV, "lots")
    with pytest.raises(ConfigError, match=f"{BUDGET_ENV}='lots' is not a number"):
        deliveries_budget_per_s()


def test_shipped_load_workloads_parse_and_seed003_is_for_a_real_cluster(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BUDGET_ENV, raising=False)
    local = load_load_workload("hydra-local")
    cells = local.cells()
    assert {c.consumers for c in cells} == {1, 5, 10, 25}
    assert {c.acks for c in cells} == {"0", "1"}
    for c in cells:  # every cell of the local sweep fits this machine
        check_budget(c, 1056, cpu_count=2)
    seed = load_load_workload("hydra-seed003")
    assert seed.for_real_cluster
    biggest = max(seed.cells(), key=lambda c: c.consumers * c.rate_msgs_per_s)
    with pytest.raises(ConfigError, match="client budget"):
        check_budget(biggest, 1056, cpu_count=2)


def test_a_latency_workload_is_not_a_load_workload() -> None:
    with pytest.raises(ConfigError, match="not a load workload"):
        load_load_workload("nightly")


def test_a_link_delay_is_an_axis_of_its_own_and_names_its_cells() -> None:
    from kafkalab.load.spec import LoadPlan, plan_cells

    cells = plan_cells(LoadPlan(consumers=[1], rates_msgs_per_s=[50], acks=["all", "1"],
                                link_delay_ms=[0, 2], profile="durability"))
    assert [(c.acks, c.link_delay_ms) for c in cells] == [
        ("all", 0), ("all", 2), ("1", 0), ("1", 2)]
    assert cells[1].cell_id("all").endswith(".p1.link2ms")
    assert ".link" not in LoadCellSpec().cell_id("1")  # untouched links: no suffix, as before
    with pytest.raises(ValidationError):
        LoadCellSpec(link_delay_ms=-1)
    # the proxies delay whole milliseconds: half a one would silently be none
    with pytest.raises(ValidationError, match="whole milliseconds"):
        LoadCellSpec(link_delay_ms=0.5)
    with pytest.raises(ValidationError, match="whole milliseconds"):
        LoadCellSpec(consumers=2, thin_consumer=0, thin_link_delay_ms=2.5)


def test_a_link_delay_without_replicas_or_without_links_is_refused_before_anything_runs(
        tmp_path: Path) -> None:
    from kafkalab.load.cell import cell_links
    from kafkalab.load.run import validate_cells

    with pytest.raises(ConfigError, match=r"^--link-delay-ms delays replication, which profile "
                       r"default \(replication factor 1\) has none of"):
        validate_cells([LoadCellSpec(link_delay_ms=1.0)])
    with pytest.raises(ConfigError, match=r"need the lab's embedded cluster started with "
                       r"degradable links: kafkalab cluster up --brokers 3 --links"):
        cell_links(tmp_path / "cluster.yaml", LoadCellSpec(link_delay_ms=1.0))
    assert cell_links(tmp_path / "cluster.yaml", LoadCellSpec()) is None  # leaves them alone


def test_clients_beside_a_follower_are_an_axis_and_reading_from_it_needs_them() -> None:
    from kafkalab.load.spec import LoadPlan, plan_cells

    cells = plan_cells(LoadPlan(consumers=[1], rates_msgs_per_s=[50], acks=["1"],
                                client_link_delay_ms=[0, 5], fetch_from=["leader", "follower"],
                                profile="availability"))
    assert [(c.client_link_delay_ms, c.fetch_from_follower) for c in cells] == [
        (0, False), (0, True), (5, False), (5, True)]
    assert cells[3].cell_id("1").endswith(".p1.near5ms.ffollower")
    with pytest.raises(ValidationError, match="give a client link delay too"):
        LoadCellSpec(fetch_from_follower=True)


def test_a_thin_consumer_is_one_of_several_and_its_link_names_the_cell() -> None:
    spec = LoadCellSpec(consumers=3, thin_consumer=0, thin_link_kbps=50, thin_link_delay_ms=5)
    assert spec.cell_id("1").endswith(".c3.r100.p1.thin0-50kBps-5ms")
    assert LoadCellSpec(consumers=2, thin_consumer=1).cell_id("1").endswith(".thin1")
    for bad, says in [({"consumers": 3, "thin_consumer": 3}, "not one of the 3 consumers"),
                      ({"consumers": 1, "thin_consumer": 0}, "at least 2 consumers"),
                      ({"consumers": 3, "thin_link_kbps": 10}, "name it with thin_consumer"),
                      ({"consumers": 3, "thin_consumer": 0, "thin_link_kbps": 0}, "greater"),
                      ({"consumers": 3, "thin_consumer": 0, "client_link_delay_ms": 5},
                       "links are its own")]:
        with pytest.raises(ValidationError, match=says):
            LoadCellSpec(**bad)


def test_the_cli_names_the_options_of_a_check_across_fields(tmp_path: Path) -> None:
    from kafkalab.cli import build_parser
    from kafkalab.cli.load import load_cells

    args = build_parser().parse_args(["load", "--consumers", "3", "--thin-link-kbps", "10"])
    with pytest.raises(ConfigError, match=r"^a thin link \(--thin-link-kbps, "
                       r"--thin-link-delay-ms\) is one consumer's: name it with --thin-consumer$"):
        load_cells(args)
