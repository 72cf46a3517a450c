"""The re-measurement rule (kafkalab.attempts) and the two directory kinds that use it: a load
cell (``cell=<id>/``) and a fault trial (``trial=<id>/``). A failed, interrupted or empty
re-run never deletes a complete measurement; a crash leaves nothing a reader sees."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kafkalab.attempts import attempt_path, recover, replaces, settle


@pytest.mark.parametrize(("earlier", "complete", "data", "expected"), [
    (True, True, True, True), (True, False, True, False), (True, False, False, False),
    (False, True, True, True), (False, False, True, True), (False, False, False, False),
    (False, True, False, True),
])
def test_the_rule(earlier: bool, complete: bool, data: bool, expected: bool) -> None:
    assert replaces(earlier_complete=earlier, attempt_complete=complete,
                    attempt_has_data=data) is expected


def _dir(path: Path, status: str, marker: str) -> Path:
    path.mkdir(parents=True)
    (path / "cell.json").write_text(json.dumps({"status": status, "marker": marker}))
    return path


def _marker(path: Path) -> str:
    return str(json.loads((path / "cell.json").read_text())["marker"])


def test_a_directory_attempt_is_swapped_in_or_set_aside(tmp_path: Path) -> None:
    final = _dir(tmp_path / "cell=c1", "complete", "good")
    _dir(attempt_path(final), "failed", "second")
    kept = settle(final, replace=False)
    assert _marker(final) == "good"
    assert kept is not None and kept.name.startswith(".failed-") and _marker(kept) == "second"
    _dir(attempt_path(final), "complete", "third")
    assert settle(final, replace=True) is None
    assert _marker(final) == "third"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["cell=c1", kept.name])


def test_a_file_attempt_replaces_and_an_empty_complete_one_removes(tmp_path: Path) -> None:
    final = tmp_path / "part-a.parquet"
    final.write_text("old")
    attempt_path(final).write_text("new")
    settle(final, replace=True)
    assert final.read_text() == "new" and not attempt_path(final).exists()
    settle(final, replace=True)  # a complete re-measurement that found nothing
    assert not final.exists()


def test_recover_puts_back_a_half_swapped_directory_and_sets_a_crashed_attempt_aside(
        tmp_path: Path) -> None:
    final = tmp_path / "trial=t1"
    _dir(final.with_name(".replaced-trial=t1"), "complete", "good")   # crash between renames
    _dir(attempt_path(final), "running", "crashed")
    kept = recover(final)
    assert _marker(final) == "good" and not final.with_name(".replaced-trial=t1").exists()
    assert kept is not None and _marker(kept) == "crashed" and not attempt_path(final).exists()
    assert recover(final) is None


def test_a_load_cell_that_fails_again_keeps_the_complete_cell(tmp_path: Path) -> None:
    from kafkalab.load.cell import settle_cell

    final = _dir(tmp_path / "cell=c1", "complete", "good")
    setup: Any = SimpleNamespace(final=final)
    _dir(attempt_path(final), "failed", "retry")
    kept = settle_cell(setup, "failed")
    assert _marker(final) == "good" and kept is not None and _marker(kept) == "retry"
    _dir(attempt_path(final), "interrupted", "ctrl-c")
    assert settle_cell(setup, "interrupted") is not None and _marker(final) == "good"
    _dir(attempt_path(final), "complete", "rerun")
    assert settle_cell(setup, "complete") is None and _marker(final) == "rerun"
    # the fault engine's own directory: nothing to settle
    assert settle_cell(SimpleNamespace(final=None), "failed") is None  # type: ignore[arg-type]


def test_a_fault_trial_attempt_settles_the_same_way(tmp_path: Path) -> None:
    from kafkalab.faults import engine

    final = tmp_path / "trial=t1"
    final.mkdir()
    (final / "trial.json").write_text(json.dumps({"status": "complete", "ended_at": "then"}))
    attempt = attempt_path(final)
    attempt.mkdir()
    (attempt / "trial.json").write_text("{}")
    lines: list[str] = []
    t: Any = SimpleNamespace(tdir=attempt, doc={"status": "failed"}, summary={"trial_id": "t1"})
    engine._settle_trial(t, lines.append)
    assert json.loads((final / "trial.json").read_text())["status"] == "complete"
    assert t.tdir.name.startswith(".failed-") and "earlier complete trial" in lines[0]
    attempt.mkdir()
    (attempt / "trial.json").write_text(json.dumps({"status": "complete"}))
    t = SimpleNamespace(tdir=attempt, doc={"status": "complete"}, summary={"trial_id": "t1"})
    engine._settle_trial(t, lines.append)
    assert t.tdir == final and json.loads((final / "trial.json").read_text()) == {
        "status": "complete"}
