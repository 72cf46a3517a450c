"""The development tools: apart from the library, and their fake sample rows follow the catalog."""

from __future__ import annotations

import ast
import json
import os
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


def test_spark_jobs_never_import_kafkalab() -> None:
    for path in spark_jobs_dir().glob("*.py"):
        assert "kafkalab" not in _imported_roots(path), path.name


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
    assert len(first) == 16 and len(second) == 8
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
