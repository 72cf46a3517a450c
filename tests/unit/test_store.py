"""The lab data directory (kafkalab.store): every path, the readers, the one atomic writer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kafkalab import store
from kafkalab.store import LabData, atomic_write, atomic_write_json, read_json, safe_name


def test_atomic_write_replaces_whole_files_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "file.json"
    atomic_write(target, b"old")
    atomic_write(target, "néw")
    assert target.read_text(encoding="utf-8") == "néw"
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.json"]


def test_atomic_write_is_owner_only_unless_a_mode_is_given(tmp_path: Path) -> None:
    private = atomic_write(tmp_path / "secret.txt", b"s")
    assert private.stat().st_mode & 0o777 == 0o600
    shared = atomic_write(tmp_path / "shared.prom", b"x", mode=0o644)
    assert shared.stat().st_mode & 0o777 == 0o644
    atomic_write(shared, b"y")  # a later write without a mode is owner-only again
    assert shared.stat().st_mode & 0o777 == 0o600
    with store.atomic_file(tmp_path / "streamed.bin", mode=0o640) as fh:
        fh.write(b"z")
    assert (tmp_path / "streamed.bin").stat().st_mode & 0o777 == 0o640


def test_a_failed_write_keeps_the_old_file_and_removes_its_temp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "manifest.json"
    atomic_write(target, b"kept")

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        atomic_write(target, b"lost")
    assert target.read_bytes() == b"kept"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_atomic_write_syncs_the_file_and_its_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append("dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "file")
        real_fsync(fd)

    monkeypatch.setattr(store.os, "fsync", spy)
    atomic_write(tmp_path / "x.bin", b"1")
    assert synced == ["file", "dir"]


def test_json_refuses_nan_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    atomic_write_json(path, {"b": 1, "a": [1.5, None]})
    assert path.read_text().endswith("\n") and read_json(path) == {"a": [1.5, None], "b": 1}
    with pytest.raises(ValueError):
        atomic_write_json(path, {"x": float("nan")})
    assert read_json(path) == {"a": [1.5, None], "b": 1}
    assert read_json(tmp_path / "missing.json") is None


def test_layout_is_the_documented_one(tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    assert lab.cell_file("2026-11-22", "r1", "rest", "1kb", "latency") == (
        tmp_path / "samples/run_date=2026-11-22/run_id=r1/part-rest-1kb-latency.parquet")
    assert lab.manifest_path("r1") == tmp_path / "runs/r1.json"
    assert lab.cell_fragment_path("r1", "rest", "1kb", "latency") == (
        tmp_path / "runs/r1/cells/rest-1kb-latency.json")
    assert lab.aggregates_dir == tmp_path / "aggregates"
    assert lab.validation_path("r1") == tmp_path / "validation/r1.json"
    assert lab.validation_docs_dir == tmp_path / "validation/docs"
    assert lab.drift_path("r1") == tmp_path / "drift/run_id=r1/drift.parquet"
    assert lab.alert_state_path() == tmp_path / "alerts/state.json"
    assert lab.report_index_path() == tmp_path / "reports/index.html"
    assert lab.report_page_dir("a b/c") == tmp_path / "reports/a_b_c"
    assert not any(tmp_path.iterdir())  # nothing is created until written


def test_default_root_is_the_path_policy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(tmp_path / "d"))
    assert LabData() == LabData(tmp_path / "d")
    assert LabData("rel").root.is_absolute()


def test_manifests_fragments_validation_and_alert_state(tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    lab.write_manifest({"run_id": "r1", "status": "running"})
    (lab.runs_dir / "broken.json").write_text("{not json")
    assert lab.manifest("r1") == {"run_id": "r1", "status": "running"}
    assert lab.manifest("broken") is None and lab.manifest("nope") is None
    assert list(lab.manifests()) == ["r1"]

    lab.write_cell_fragment("r1", {"scenario": "rest", "payload": "1kb", "profile": "latency",
                                   "status": "complete"})
    assert [f["status"] for f in lab.cell_fragments("r1")] == ["complete"]
    lab.clear_cell_fragments("r1")
    assert lab.cell_fragments("r1") == []

    assert lab.validation("r1") is None
    lab.validation_path("r1").parent.mkdir(parents=True)
    lab.validation_path("r1").write_text("[]")
    assert lab.validation("r1") == {"success": None, "failed": [], "unreadable": True}
    atomic_write_json(lab.validation_path("r1"), {"success": True})
    assert lab.validation("r1") == {"success": True}

    assert lab.alert_state() is None
    lab.write_alert_state({"schema": 1, "series": {}})
    assert json.loads(lab.alert_state_path().read_text()) == {"schema": 1, "series": {}}


def test_clear_run_samples_removes_only_that_run(tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    keep = lab.cell_file("2026-11-21", "other", "rest", "1kb", "latency")
    gone = [lab.cell_file(d, "r1", "rest", "1kb", "latency") for d in ("2026-11-21", "2026-11-22")]
    for f in (keep, *gone):
        atomic_write(f, b"x")
    assert lab.run_sample_files("r1") == sorted(gone)
    lab.clear_run_samples("r1")
    assert lab.run_sample_files("r1") == [] and keep.exists()


@pytest.mark.parametrize(("run_id", "expected"), [
    ("nightly-20261121T000000Z", "nightly-20261121T000000Z"),
    ("manual__2026-11-21T10:00:00+00:00", "manual__2026-11-21T10_00_00_00_00"),
    ("", "_"),
])
def test_safe_name(run_id: str, expected: str) -> None:
    assert safe_name(run_id) == expected


def test_atomic_file_streams_and_an_error_in_the_block_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "cell.parquet"
    with store.atomic_file(target) as fh:
        fh.write(b"part 1, ")
        assert not target.exists()  # not visible until the block ends
        fh.write(b"part 2")
    assert target.read_bytes() == b"part 1, part 2"
    with pytest.raises(RuntimeError), store.atomic_file(target) as fh:
        fh.write(b"half")
        raise RuntimeError("writer failed")
    assert target.read_bytes() == b"part 1, part 2"
    assert [p.name for p in tmp_path.iterdir()] == ["cell.parquet"]


def _manifest(lab: LabData, run_id: str, **doc: object) -> None:
    lab.write_manifest({"run_id": run_id, "status": "running", **doc})


def test_run_state_tells_a_stale_run_from_a_live_one(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys
    import time

    lab = LabData(tmp_path)
    host = socket.gethostname()
    _manifest(lab, "live", owner={"host": host, "pid": os.getpid(), "kind": "cli"})
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _manifest(lab, "orphan", owner={"host": host, "pid": dead.pid, "kind": "cli"})
    _manifest(lab, "quiet", owner={"host": "worker-7", "pid": 1, "kind": "airflow"})
    _manifest(lab, "done", status="complete")
    assert lab.run_state("live") == "running"
    assert lab.run_state("orphan") == "stale" and str(dead.pid) in lab.run_state_reason("orphan")
    assert lab.run_state("quiet") == "running"
    later = time.time() + store.STALE_AFTER_S + 60
    assert lab.run_state("quiet", now=later) == "stale"
    assert "nothing was written" in lab.run_state_reason("quiet", now=later)
    assert lab.run_state("done") == "complete" and lab.run_state("nope") == "missing"
    assert lab.stale_runs() == ["orphan"]


def test_derived_outputs_and_clearing_a_stale_one(tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    (lab.aggregates_dir / "run_id=r1").mkdir(parents=True)
    atomic_write_json(lab.validation_path("r1"), {"success": True})
    assert lab.derived_outputs("r1") == ["aggregates", "validation"]
    _manifest(lab, "r1", stale_outputs=["aggregates", "validation"])
    assert lab.clear_stale("r1", "aggregates") is True
    assert lab.clear_stale("r1", "aggregates") is False
    assert (lab.manifest("r1") or {})["stale_outputs"] == ["validation"]


def test_private_token_is_made_once_and_kept_private(tmp_path: Path) -> None:
    import stat

    from kafkalab.store import private_token

    path = tmp_path / "secret"
    token = private_token(path, 8)
    assert len(token) == 16 and int(token, 16) >= 0  # 8 bytes as hex
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert private_token(path, 8) == token  # kept
    path.write_text("\n")
    assert private_token(path) != token and len(private_token(path)) == 32  # empty: remade


def test_a_profile_given_as_a_path_makes_one_file_name(tmp_path: Path) -> None:
    """``kafkalab run --profile some/dir/mine.yaml``: the cell's samples and fragment are
    one file each in their folder (the profile's slashes are made safe), so the cells
    merge and the spectrum finds them."""
    lab = LabData(tmp_path)
    f = lab.cell_file("2026-11-22", "r1", "rest", "1kb", "some/dir/mine.yaml")
    assert f.parent == tmp_path / "samples/run_date=2026-11-22/run_id=r1"
    assert f.name == "part-rest-1kb-some_dir_mine.yaml.parquet"
    frag = lab.write_cell_fragment("r1", {"scenario": "rest", "payload": "1kb",
                                          "profile": "some/dir/mine.yaml", "status": "complete"})
    assert frag.parent == lab.cell_fragments_dir("r1")
    assert [c["profile"] for c in lab.cell_fragments("r1")] == ["some/dir/mine.yaml"]
