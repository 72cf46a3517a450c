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

from kafkalab.paths import PACKAGE_DIR, spark_jobs_dir
from kafkalab.scenarios.catalog import CATALOG, KAFKA_CLIENT_SCENARIOS, SCENARIOS

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


def test_spark_jobs_import_only_the_standalone_store_of_kafkalab() -> None:
    for path in spark_jobs_dir().glob("*.py"):
        used = {n.module for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("kafkalab")}
        assert used <= {"kafkalab.store"}, path.name
    # store.py ships alone to Spark nodes (spark_py_files): at module level, stdlib only
    tree = ast.parse((PACKAGE_DIR / "store.py").read_text(encoding="utf-8"))
    top = {a.name.split(".")[0] for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    top |= {n.module.split(".")[0] for n in tree.body
            if isinstance(n, ast.ImportFrom) and n.module and n.level == 0}
    assert top - {"__future__"} <= set(sys.stdlib_module_names), top


def test_shipped_store_is_the_writer_where_kafkalab_is_not_installed(tmp_path: Path) -> None:
    """A Spark node without the package: _session.py finds the writer in the shipped store.py."""
    from kafkalab.airflow.spark_submit import spark_py_files

    stub = tmp_path / "stub" / "kafkalab"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('kafkalab is not installed here')\n")
    shipped = tmp_path / "py-files"
    shipped.mkdir()
    for f in spark_py_files().split(","):
        shutil.copy(f, shipped)
    target = tmp_path / "out" / "validation.json"
    code = ("import sys, _session; _session.write_json_atomic(sys.argv[1], {'success': True}); "
            "print(_session._atomic_write.__module__)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(stub.parent), str(shipped)])}
    proc = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "store"
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
