"""The development tools: apart from the library, and their fake sample rows follow the catalog."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.catalog import CATALOG, KAFKA_CLIENT_SCENARIOS, SCENARIOS
from kafkalab.paths import PACKAGE_DIR, spark_jobs_dir

RUN = "20261122T010203Z-dddddd"


def _imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_library_never_imports_the_tools_or_the_jobs() -> None:
    offenders = {str(p.relative_to(PACKAGE_DIR)): sorted(_imported_roots(p) & {"tools", "spark_jobs"})
                 for p in PACKAGE_DIR.rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


LONE_FILES: dict[str, bool] = {"store": False, "stats": True}
"""The modules of kafkalab that ship alone to Spark nodes (spark_py_files), and whether the
whole file (True) or only its module level (False: store.py imports the package lazily, in
functions a Spark node never calls) must import nothing but the standard library."""


def test_spark_jobs_import_only_the_lone_files_of_kafkalab() -> None:
    from kafkalab.spark.submit import spark_py_files

    lone = {f"kafkalab.{name}" for name in LONE_FILES}
    for path in spark_jobs_dir().glob("*.py"):
        used = set()
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(n, ast.ImportFrom) and n.module == "kafkalab":
                used |= {f"kafkalab.{a.name}" for a in n.names}
            elif isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("kafkalab"):
                used.add(n.module)
            elif isinstance(n, ast.Import):
                used |= {a.name for a in n.names if a.name.startswith("kafkalab")}
        assert used <= lone, path.name
    shipped = {Path(f).name for f in spark_py_files().split(",")}
    for name, whole_file in LONE_FILES.items():
        assert f"{name}.py" in shipped
        tree = ast.parse((PACKAGE_DIR / f"{name}.py").read_text(encoding="utf-8"))
        nodes = list(ast.walk(tree)) if whole_file else tree.body
        top = {a.name.split(".")[0] for n in nodes if isinstance(n, ast.Import) for a in n.names}
        top |= {n.module.split(".")[0] for n in nodes
                if isinstance(n, ast.ImportFrom) and n.module and n.level == 0}
        assert top - {"__future__"} <= set(sys.stdlib_module_names), (name, top)


def test_shipped_lone_files_serve_where_kafkalab_is_not_installed(tmp_path: Path) -> None:
    """A Spark node without the package: _session.py finds the writer in the shipped store.py
    and the statistics in the shipped stats.py."""
    from kafkalab.spark.submit import spark_py_files

    stub = tmp_path / "stub" / "kafkalab"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('kafkalab is not installed here')\n")
    shipped = tmp_path / "py-files"
    shipped.mkdir()
    for f in spark_py_files().split(","):
        shutil.copy(f, shipped)
    target = tmp_path / "out" / "validation.json"
    code = ("import sys, _session; _session.write_json_atomic(sys.argv[1], {'success': True}); "
            "print(_session._atomic_write.__module__, _session.stats.__name__, "
            "_session.stats.quantile_ci_ranks(100, 0.5))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(stub.parent), str(shipped)])}
    proc = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "store stats (40, 61)"
    assert json.loads(target.read_text()) == {"success": True}
    assert [p.name for p in target.parent.iterdir()] == ["validation.json"]


def test_fake_samples_follow_the_catalog_and_are_deterministic() -> None:
    from tools.fake_samples import SAMPLE_COLUMNS, make_fake_samples

    df = make_fake_samples(2000, RUN, seed=4)
    assert len(df) == 2000
    assert tuple(df.columns) == SAMPLE_COLUMNS
    assert df.equals(make_fake_samples(2000, RUN, seed=4))
    assert set(df["scenario"]) == set(SCENARIOS)
    clients = {s.name: s.client for s in CATALOG}
    assert all(clients[s] == c for s, c in zip(df["scenario"], df["client"], strict=True))
    kinds = df.groupby("sample_kind")["scenario"].agg(lambda s: set(s)).to_dict()
    assert kinds["first_message"] == set(KAFKA_CLIENT_SCENARIOS)
    assert kinds["tool_summary"] == {s.name for s in CATALOG if not s.per_message}
    assert set(df.loc[df["scenario"] == "rest", "cluster_flavor"]) == {"http"}


def test_fake_samples_files_replace_the_run(tmp_path: Path) -> None:
    from kafkalab.store import LabData
    from tools.fake_samples import write_fake_samples

    first = write_fake_samples(tmp_path, 600, RUN, seed=1)
    second = write_fake_samples(tmp_path, 600, RUN, seed=2, payloads=("1kb",))
    # every scenario × payloads (1kb, 1mb) × profiles (latency, durability); then one payload
    assert len(first) == len(SCENARIOS) * 4 and len(second) == len(SCENARIOS) * 2
    assert LabData(tmp_path).run_sample_files(RUN) == sorted(second)
    assert not list(tmp_path.rglob("*.tmp"))


def test_session_writer_leaves_nothing_behind_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spark_jobs import _session

    target = tmp_path / "v" / "r.json"
    _session.write_json_atomic(str(target), {"success": True})

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        _session.write_json_atomic(str(target), {"success": False})
    assert json.loads(target.read_text()) == {"success": True}
    assert [p.name for p in target.parent.iterdir()] == ["r.json"]


def test_bench_cli_parses_without_running(capsys: pytest.CaptureFixture[str]) -> None:
    from tools.bench.__main__ import main

    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "--spark" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "message"), [
    (["--spark-rows", "abc"], "expected comma-separated row counts, got 'abc'"),
    (["--spark-rows", "1000,0"], "expected positive row counts"),
    (["--messages-1kb", "0"], "--messages-1kb: must be at least 1, got 0"),
    (["--overhead-rounds", "0"], "--overhead-rounds: must be at least 1, got 0"),
])
def test_bench_refuses_bad_arguments_before_running(args: list[str], message: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from tools.bench.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and "Traceback" not in "\n".join(err)


def test_bench_part_b_compares_the_serial_harness_with_the_tool_by_means() -> None:
    from tools.bench.latency import serial_vs_tool

    rows = [
        {"scenario": "confluent-kafka-serial", "e2e_p50_ms": 1.42, "e2e_mean_ms": 1.5,
         "client_settings": {"acks": "1", "linger.ms": "1"}},
        {"scenario": "jvm-e2e", "e2e_p50_ms": 1.0, "e2e_mean_ms": 1.25,
         "client_settings": {"acks": "1", "linger.ms": "0", "fetch.max.wait.ms": "0"}},
        {"scenario": "confluent-kafka", "e2e_p50_ms": 1.1, "e2e_mean_ms": 1.0},
    ]
    v = serial_vs_tool(rows)
    assert v["serial_over_tool_mean"] == 1.2 and v["goal_serial_mean_within_1_2x_of_tool_mean"]
    assert v["serial_over_tool_p50"] == 1.42 and v["serial_over_tool_p50_bucket_top"] == 0.71
    assert v["overlapped_over_tool_mean"] == 0.8
    assert "truncated" in v["tool_p50_note"]
    assert v["tool_settings"]["fetch.max.wait.ms"] == "0"
    missing = serial_vs_tool(rows[1:])
    assert missing["serial_over_tool_mean"] is None
    assert missing["goal_serial_mean_within_1_2x_of_tool_mean"] is None


def test_bench_overhead_compares_the_lab_s_exact_bytes() -> None:
    from kafkalab.paths import images_dir
    from kafkalab.payloads import load_body, wire_size_bytes
    from tools.bench.overhead import OVERHEAD_PAYLOADS

    assert OVERHEAD_PAYLOADS == (("1kb", "raw"), ("1mb", "base64"))
    body = load_body("1mb", "base64", images_dir())
    assert wire_size_bytes(body) == 1_462_780  # seed 000's base64 1 MB image + the stamp


# --------------------------------------------------------------------------- bench part (f): load

# Real Kafka 0.9.0.1 output (captured on the bench's kafka09 cluster, 1,056-byte records).
PRODUCER_PERFORMANCE_OUT = """\
99882 records sent, 19972.4 records/sec (20.11 MB/sec), 33.5 ms avg latency, 280.0 max latency.
140000 records sent, 19988.577955 records/sec (20.13 MB/sec), 25.25 ms avg latency, 280.00 ms max latency, 6 ms 50th, 204 ms 95th, 250 ms 99th, 275 ms 99.9th.
"""
PRODUCER_PERFORMANCE_ERR = """\
log4j:WARN No appenders could be found for logger (org.apache.kafka.clients.producer.ProducerConfig).
log4j:WARN Please initialize the log4j system properly.
"""
CONSUMER_PERFORMANCE_OUT = """\
start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec
2026-11-22 09:04:00:654, 2026-11-22 09:04:02:070, 302.1240, 213.3644, 300000, 211864.4068
"""
CONSUMER_PERFORMANCE_DETAILED = """\
time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec
2026-11-22 09:08:01:860, 0, 0.2014, 3.3019, 200, 3278.6885
"""


def test_bench_load_parses_producer_performance_s_final_line_not_its_interim_ones() -> None:
    from tools.bench.load import parse_producer_performance

    got = parse_producer_performance(PRODUCER_PERFORMANCE_ERR + PRODUCER_PERFORMANCE_OUT)
    assert got == {"records": 140000.0, "records_per_s": 19988.577955, "mb_per_s": 20.13,
                   "avg_latency_ms": 25.25, "max_latency_ms": 280.0, "p50_ms": 6.0,
                   "p95_ms": 204.0, "p99_ms": 250.0, "p999_ms": 275.0}


def test_bench_load_producer_performance_without_a_summary_is_an_error() -> None:
    from kafkalab.errors import RunError
    from tools.bench.load import parse_producer_performance

    interim_only = PRODUCER_PERFORMANCE_OUT.splitlines()[0]
    with pytest.raises(RunError, match=r"printed no summary.*280\.0 max latency"):
        parse_producer_performance(PRODUCER_PERFORMANCE_ERR + interim_only)


def test_bench_load_parses_consumer_performance_s_result_line() -> None:
    from tools.bench.load import parse_consumer_performance

    got = parse_consumer_performance(CONSUMER_PERFORMANCE_OUT + PRODUCER_PERFORMANCE_ERR)
    assert got["records"] == 300000 and got["records_per_s"] == 211864.4068
    assert got["data_mb"] == 302.124 and got["mb_per_s"] == 213.3644
    assert got["start_time"] == "2026-11-22 09:04:00:654"
    assert got["window_s"] == pytest.approx(1.416, abs=1e-3)  # the printed 09:04:00.654 → 02.070
    assert got["data_mb"] == pytest.approx(300000 * 1056 / 2**20, abs=1e-4)  # MB = 2^20 bytes


def test_bench_load_reads_kafka_4s_fetch_window_apart_from_the_groups_join() -> None:
    """Kafka 4.4.0's ConsumerPerformance, as printed on this machine: its whole window holds
    the 3 s group.initial.rebalance.delay.ms; the rate compared is the fetch window's."""
    from tools.bench.load import parse_consumer_performance

    text = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
            "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
            "2026-11-27 05:41:03:210, 2026-11-27 05:41:08:700, 0.1907, 0.0347, 2000, 364.2987, "
            "4816, 674, 0.2830, 2967.3591\n")
    got = parse_consumer_performance(text)
    assert got["records"] == 2000 and got["rebalance_time_ms"] == 4816
    assert got["records_per_s"] == 2967.3591 and got["whole_window_records_per_s"] == 364.2987
    assert got["window_s"] == pytest.approx(0.674)


@pytest.mark.parametrize("text", [CONSUMER_PERFORMANCE_DETAILED, PRODUCER_PERFORMANCE_ERR, "",
                                  CONSUMER_PERFORMANCE_OUT.splitlines()[0]])
def test_bench_load_consumer_performance_without_a_result_is_an_error(text: str) -> None:
    from kafkalab.errors import RunError
    from tools.bench.load import parse_consumer_performance

    with pytest.raises(RunError, match="ConsumerPerformance printed no result"):
        parse_consumer_performance(text)


def _side(side: str, rate: float | None) -> dict[str, object]:
    return {"side": side, "msgs_per_s": rate}


def test_bench_load_ratios_use_the_median_of_the_rounds() -> None:
    from tools.bench.load import load_ratios

    result = {
        "producer": [[_side("bare", 200.0), _side("tool", 80.0), _side("harness", 150.0)],
                     [_side("harness", 190.0), _side("tool", 90.0), _side("bare", 100.0)],
                     [_side("bare", 250.0), _side("tool", 100.0), _side("harness", 170.0)]],
        "consumer": [[_side("bare", 400.0), _side("tool", 100.0), _side("harness", None)]],
        "fanout": [{"side": "bare", "consumers": 10, "rate_msgs_per_s": 2000,
                    "deliveries_per_core_s": 30000.0},
                   {"side": "harness", "consumers": 10, "rate_msgs_per_s": 2000,
                    "deliveries_per_core_s": 15000.0, "e2e_p50_ms": 0.6},
                   {"side": "bare", "consumers": 1, "rate_msgs_per_s": 2000,
                    "deliveries_per_core_s": 12000.0},
                   {"side": "harness", "consumers": 1, "rate_msgs_per_s": 20000,
                    "deliveries_per_core_s": 50000.0, "e2e_p50_ms": 2040.0},
                   {"side": "bare", "consumers": 1, "rate_msgs_per_s": 20000,
                    "deliveries_per_core_s": 40000.0},
                   {"side": "harness", "status": "failed", "error": "load run: refused"}],
    }
    r = load_ratios(result)
    p = r["producer"]
    assert p["median_msgs_per_s"] == {"bare": 200.0, "tool": 90.0, "harness": 170.0}
    assert p["harness_over_bare"] == 0.85 and p["goal_harness_at_least_0_8x_bare"] is True
    assert p["tool_over_bare"] == 0.45 and p["bare_over_tool"] == pytest.approx(2.2222, abs=1e-4)
    c = r["consumer"]
    assert c["median_msgs_per_s"]["harness"] is None and c["harness_over_bare"] is None
    assert c["bare_over_tool"] == 4.0
    assert r["fanout"] == [  # one row per (consumers, rate); a row without a point is skipped
        {"consumers": 1, "rate_msgs_per_s": 2000.0, "bare_deliveries_per_core_s": 12000.0,
         "harness_deliveries_per_core_s": None, "harness_over_bare": None,
         "harness_e2e_p50_ms": None, "harness_stalled": None},
        {"consumers": 1, "rate_msgs_per_s": 20000.0, "bare_deliveries_per_core_s": 40000.0,
         "harness_deliveries_per_core_s": 50000.0, "harness_over_bare": 1.25,
         "harness_e2e_p50_ms": 2040.0, "harness_stalled": True},  # late big batches flatter it
        {"consumers": 10, "rate_msgs_per_s": 2000.0, "bare_deliveries_per_core_s": 30000.0,
         "harness_deliveries_per_core_s": 15000.0, "harness_over_bare": 0.5,
         "harness_e2e_p50_ms": 0.6, "harness_stalled": False},
    ]


def test_bench_load_goal_is_unknown_not_failed_while_the_harness_is_missing_or_slow() -> None:
    from tools.bench.load import load_ratios

    pending = {"side": "harness", "status": "pending", "msgs_per_s": None}
    r = load_ratios({"producer": [[_side("bare", 100.0), pending]]})
    assert r["producer"]["harness_over_bare"] is None
    assert r["producer"]["goal_harness_at_least_0_8x_bare"] is None
    assert r["consumer"]["median_msgs_per_s"] == {} and r["fanout"] == []
    slow = load_ratios({"producer": [[_side("bare", 100.0), _side("harness", 79.0)]]})
    assert slow["producer"]["goal_harness_at_least_0_8x_bare"] is False


def test_bench_load_fanout_figures_are_deliveries_per_cpu_second() -> None:
    from tools.bench.load import fanout_figures

    f = fanout_figures(consumers=5, rate=2000, messages=16000, received=80000, cpu_s=4.0,
                       wall_s=8.0)
    assert f["expected_deliveries"] == 80000 and f["deliveries_per_core_s"] == 20000.0
    assert f["consumer_cpu_frac"] == 0.5 and f["deliveries_per_s"] == 10000.0
    assert fanout_figures(1, 10, 0, 0, 0.0, 0.0)["deliveries_per_core_s"] is None


def test_bench_load_tools_get_the_bare_loop_s_producer_settings() -> None:
    from tools.bench.load import bench_message, bench_profile, jvm_producer_props

    p = bench_profile()
    assert (p.producer.acks, p.producer.linger_ms, p.producer.compression) == ("1", 5, "none")
    assert p.producer.batch_size_bytes == 200000  # the throughput profile's batch
    props = jvm_producer_props("127.0.0.1:1", p)
    assert {"acks=1", "linger.ms=5", "batch.size=200000", "compression.type=none",
            "bootstrap.servers=127.0.0.1:1"} <= set(props)
    assert len(bench_message()) == 1056  # the lab's 1 KB raw body + its 32-byte stamp


@pytest.mark.parametrize(("args", "message"), [
    (["--only", "load,frob"], "expected comma-separated parts from kafka, load, spark, nightly"),
    (["--only", "load", "--spark"], "--only names the parts itself"),
    (["--load-messages", "0"], "--load-messages: must be at least 1, got 0"),
])
def test_bench_load_part_selection_is_checked_before_running(
        args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from tools.bench.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err.strip().splitlines()[-1]


def test_bench_load_fanout_cells_are_ones_the_engine_accepts_on_two_cores() -> None:
    from kafkalab.load.spec import check_budget
    from tools.bench.load import FANOUT_DURATION_S, FANOUT_POINTS, bench_message, harness_cell_spec

    for consumers, rate in FANOUT_POINTS:
        spec = harness_cell_spec(consumers, rate, FANOUT_DURATION_S)
        assert (spec.consumers, spec.rate_msgs_per_s, spec.window_s) == (consumers, rate,
                                                                         FANOUT_DURATION_S)
        check_budget(spec, len(bench_message()), cpu_count=2)  # refused → ConfigError


def test_the_nightly_wall_is_first_task_start_to_last_task_end(tmp_path: Path) -> None:
    """``airflow dags test`` sets the run's start_date to its logical date (midnight): the
    DAG's wall must come from its task instances."""
    import sqlite3

    from tools.bench.nightly import _dag_run_wall_s

    con = sqlite3.connect(tmp_path / "airflow.db")
    con.execute("CREATE TABLE dag_run (id INTEGER, dag_id TEXT, run_id TEXT, start_date TEXT, "
                "end_date TEXT)")
    con.execute("CREATE TABLE task_instance (dag_id TEXT, run_id TEXT, start_date TEXT, "
                "end_date TEXT)")
    con.execute("INSERT INTO dag_run VALUES (1, 'd', 'r1', '2026-11-22 00:00:00.000000', "
                "'2026-11-22 19:23:58.270624')")
    con.executemany("INSERT INTO task_instance VALUES ('d', 'r1', ?, ?)", [
        ("2026-11-22 19:09:38.000000", "2026-11-22 19:10:00.000000"),
        ("2026-11-22 19:10:00.000000", "2026-11-22 19:23:58.000000"),
    ])
    assert _dag_run_wall_s(con, "d") == pytest.approx(860.0)
    assert _dag_run_wall_s(con, "other") is None


def test_bench_faults_prints_trials_that_failed_before_measuring(capsys: pytest.CaptureFixture[str]) -> None:
    from tools.bench.faults import KEYS_GROUP, KEYS_ORDER, print_faults

    print_faults({"cluster": {"flavor": "kraft", "version": "4.4.0", "brokers": 3},
                  "group": {"trials": [dict.fromkeys(KEYS_GROUP)]},
                  "ordering": {"trials": [dict.fromkeys(KEYS_ORDER)]}})
    out = capsys.readouterr().out
    assert "(g1)" in out and "(g2)" in out and out.count("None") > 4
    assert "on kraft 4.4.0 (3 brokers)" in out  # every figure names its broker
