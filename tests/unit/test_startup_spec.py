"""A start-up run's settings, cases and figures (no broker): what is measured, what is said
not to be, and how the parts of a first record's delay are counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.cli import main
from kafkalab.errors import ConfigError
from kafkalab.startup.spec import StartupSpec
from kafkalab.startup_figures import answer_lines, format_table, summarize

pytestmark = pytest.mark.unit


def test_cases_cover_each_combination_a_client_can_do_and_name_the_rest() -> None:
    spec = StartupSpec(delays_ms=(3000,), members=(1, 3), trials=2)
    cold = spec.cold_cases(3000)
    assert [(c.client, c.group_protocol, c.members) for c in cold] == [
        ("confluent-kafka", "classic", 1), ("confluent-kafka", "consumer", 1),
        ("kafka-python", "classic", 1)]
    warm = spec.warm_cases(3000)
    assert [c.key for c in warm if c.join == "assign"] == [
        "warm/delay=3000/confluent-kafka/assign/none/m1", "warm/delay=3000/kafka-python/assign/none/m1"]
    assert len({c.key for c in cold + warm}) == len(cold + warm) == 3 + 6 + 2
    assert spec.unsupported() == [{"client": "kafka-python", "group_protocol": "consumer",
                                   "reason": spec.unsupported()[0]["reason"]}]
    assert "classic" in spec.unsupported()[0]["reason"]
    # per trial: 3 cold members, 3 × (1 + 3) warm subscribe members, 2 assign
    assert spec.probe_count() == 2 * (3 + 12 + 2)


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"trials": 0}, "trials"), ({"clients": ("java",)}, "clients"),
    ({"protocols": ("eager",)}, "protocols"), ({"delays_ms": (-1,)}, "delays_ms"),
    ({"members": (0,)}, "members"), ({"members": (1, 1)}, "members"),
    ({"timeout_s": 0.5}, "timeout_s"),
    ({"clients": ("kafka-python",), "protocols": ("consumer",)}, "protocols"),
])
def test_a_bad_setting_is_refused_by_name(kwargs: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=f"^startup: {named} "):
        StartupSpec(**kwargs)  # type: ignore[arg-type]


def _row(case: str, client: str, join: str, **marks: float | None) -> dict[str, object]:
    state, delay = case.split("/")[0], int(case.split("/")[1].split("=")[1])
    base: dict[str, object] = {
        "case_key": case, "client": client, "join": join, "group_protocol": "classic",
        "members": 1, "cluster_state": state, "initial_rebalance_delay_ms": delay,
        "kafka_version": "4.4.0", "status": "ok", "created_ms": 1.0, "metadata_ms": None,
        "assigned_ms": None, "first_record_ms": None, "offsets_topic_ready_ms": None,
        "coordinator_ready_ms": None}
    base.update(marks)
    return base


def test_parts_add_up_and_a_failed_probe_is_counted_not_averaged() -> None:
    cold = "cold/delay=3000/confluent-kafka/subscribe/classic/m1"
    rows = [
        _row(cold, "confluent-kafka", "subscribe", metadata_ms=50.0, assigned_ms=5050.0,
             first_record_ms=5200.0, offsets_topic_ready_ms=60.0, coordinator_ready_ms=600.0),
        _row(cold, "confluent-kafka", "subscribe", status="timeout", metadata_ms=40.0),
        _row("warm/delay=3000/kafka-python/assign/none/m1", "kafka-python", "assign",
             created_ms=6.0, assigned_ms=6.5, first_record_ms=120.0),
    ]
    cases = summarize(rows)
    c = cases[0]
    assert (c["probes"], c["failed"], c["first_record_ms_n"]) == (2, 1, 1)
    assert (c["client_start_ms"], c["join_ms"], c["fetch_ms"]) == (50.0, 5000.0, 150.0)
    assert c["client_start_ms"] + c["join_ms"] + c["fetch_ms"] == c["first_record_ms"]
    a = cases[1]  # assign: no join; kafka-python's start is its constructor
    assert (a["client_start_ms"], a["join_ms"], a["fetch_ms"]) == (6.0, None, 114.0)
    lines = answer_lines(cases, 3000)
    assert lines[0] == ("confluent-kafka: cold cluster: 5.20 s (delay 3000 ms); __consumer_offsets "
                        "led after 60 ms, its group coordinator ready after 600 ms; warm: classic "
                        "with the default delay (3000 ms) n/a, consumer protocol n/a, assign n/a")
    assert lines[1].endswith("assign 120 ms")
    assert format_table(cases).splitlines()[1].split()[:8] == [
        "cold", "3000", "confluent-kafka", "subscribe", "classic", "1", "2", "1"]


@pytest.mark.parametrize("argv", [
    ["startup", "run", "--trials", "0"], ["startup", "run", "--client", "java"],
    ["startup", "run", "--members", "x"], ["startup", "run", "--base-port", "80"]])
def test_bad_input_is_one_line_and_exit_2_before_any_cluster(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's refusal of an option's value
        code = int(str(exc.code))
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error:" in err[0]


def test_an_existing_run_id_is_refused_before_any_cluster(tmp_path: Path) -> None:
    from kafkalab.startup.engine import StartupRequest, execute_startup
    from kafkalab.store import LabData

    lab = LabData(tmp_path)
    lab.write_manifest({"run_id": "20261128T000000Z-abcdef", "kind": "latency"})
    with pytest.raises(ConfigError, match="already exists"):
        execute_startup(StartupRequest(data_dir=tmp_path, run_id="20261128T000000Z-abcdef",
                                       cluster_lab=tmp_path / "never"))
    assert not (tmp_path / "never").exists() and not (tmp_path / "startup").exists()


def test_a_matrix_run_again_measures_its_start_up_run_anew(tmp_path: Path) -> None:
    """A version matrix run again under its id (a night of the nightly run twice: one lab run
    per night) opens its start-up run with ``supersede``: the earlier files are set aside
    (hidden), its manifest kept for inspection, the new one says it was re-opened and what is
    stale; a run of another kind under that id is still refused. No cluster starts."""
    from kafkalab.startup.engine import StartupRequest, open_startup
    from kafkalab.store import LabData

    lab = LabData(tmp_path / "data")
    rid = "nightly-versions-20261118T000000Z-startup-4.4.0"

    def request() -> StartupRequest:
        return StartupRequest(data_dir=lab.root, run_id=rid, cluster_lab=tmp_path / "never",
                              logical_date="2026-11-18T00:00:00+00:00", supersede=True)

    first = open_startup(request())
    first.stream.close()
    (lab.report_page_dir(rid)).mkdir(parents=True)
    (lab.report_page_dir(rid) / "index.html").write_text("the first run's page")
    second = open_startup(request())
    second.stream.close()
    assert second.run_id == rid and (second.dir / "probes.parquet").is_file()
    hidden = [p.name for p in (lab.root / "startup").rglob(".superseded-*")]
    assert len(hidden) == 1 and hidden[0].endswith(f"-run_id={rid}"), hidden
    manifest = lab.manifest(rid)
    assert manifest is not None and len(manifest["reopened_at"]) == 1
    assert manifest["stale_outputs"] == ["report"]  # until the new measurement's page is built
    assert manifest["logical_date"] == "2026-11-18T00:00:00+00:00"
    assert len(list(lab.run_work_dir(rid).glob("superseded-*/manifest.json"))) == 1
    assert not (tmp_path / "never").exists()
    lab.write_manifest({"run_id": "20261128T000000Z-abcdef", "kind": "latency"})
    with pytest.raises(ConfigError, match="already exists"):
        open_startup(StartupRequest(data_dir=lab.root, run_id="20261128T000000Z-abcdef",
                                    cluster_lab=tmp_path / "never", supersede=True))


def test_a_delay_on_kafka_0_9_is_refused_before_anything_starts(tmp_path: Path) -> None:
    from kafkalab.startup.engine import StartupRequest, execute_startup

    with pytest.raises(ConfigError, match=r"Kafka 0\.9\.0\.1 has no group\.initial\.rebalance"):
        execute_startup(StartupRequest(spec=StartupSpec(delays_ms=(0, 3000)),
                                       data_dir=tmp_path / "data", flavor="kafka09",
                                       cluster_lab=tmp_path / "lab"))
    assert not (tmp_path / "data").exists() and not (tmp_path / "lab").exists()


def test_a_broker_without_kip_848_leaves_its_protocol_unsupported_for_every_client() -> None:
    from kafkalab.cluster.flavors import embedded_flavor
    from kafkalab.startup.engine import broker_spec

    k09 = embedded_flavor("kafka09")
    features = k09.embedded_features()
    assert not features.initial_rebalance_delay and not features.describe_configs
    assert features.group_protocols == ("classic",) and features.max_session_timeout_ms == 30000
    spec = broker_spec(StartupSpec(delays_ms=(0,)), k09, features)
    assert {(c.client, c.group_protocol) for c in spec.warm_cases(0) if c.join == "subscribe"} == {
        ("confluent-kafka", "classic"), ("kafka-python", "classic")}
    reasons = {(u["client"], u["group_protocol"]): u["reason"] for u in spec.unsupported()}
    assert set(reasons) == {("confluent-kafka", "consumer"), ("kafka-python", "consumer")}
    assert reasons[("confluent-kafka", "consumer")].startswith(
        "the broker (Kafka 0.9.0.1) serves only the classic group protocol")
    with pytest.raises(ConfigError, match=r"protocols leave no client a group protocol both it "
                       r"and the broker \(Kafka 0.9.0.1\) speak"):
        broker_spec(StartupSpec(delays_ms=(0,), protocols=("consumer",)), k09, features)
    kraft = embedded_flavor("kraft")
    modern = kraft.embedded_features()
    assert modern.initial_rebalance_delay and modern.max_session_timeout_ms is None
    assert broker_spec(StartupSpec(), kraft, modern).broker_protocols == ("classic", "consumer")
