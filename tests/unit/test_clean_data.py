"""``make clean`` keeps every measurement; ``make clean-data`` deletes them only when asked and
confirmed (tools/clean_data.py), through the real Makefile where it matters."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _data(tmp_path: Path) -> Path:
    data = tmp_path / "lab-data"
    (data / "runs").mkdir(parents=True)
    (data / "runs" / "r1.json").write_text("{}")
    (data / "alerts").mkdir()
    (data / "alerts" / "state.json").write_text("{}")
    return data


def _run(args: list[str], data: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KAFKALAB_DATA_DIR": str(data)}
    return subprocess.run(args, cwd=ROOT, env=env, input=stdin, capture_output=True, text=True,
                          timeout=120)


def test_clean_data_without_a_terminal_or_confirmation_deletes_nothing(tmp_path: Path) -> None:
    data = _data(tmp_path)
    out = _run(["make", "-s", "clean-data"], data)
    assert out.returncode != 0 and data.joinpath("runs", "r1.json").exists()
    assert "not confirmed (no terminal): run `make clean-data CONFIRM=yes`" in out.stderr
    assert "1 run(s)" in out.stdout and "the alert state" in out.stdout
    assert "Traceback" not in out.stderr


def test_clean_data_with_confirmation_deletes_the_data_directory(tmp_path: Path) -> None:
    data = _data(tmp_path)
    out = _run(["make", "-s", "clean-data", "CONFIRM=yes"], data)
    assert out.returncode == 0, out.stderr
    assert not data.exists() and f"{data}: deleted" in out.stdout
    assert _run([sys.executable, "-m", "tools.clean_data", "--yes"], data).stdout.strip() == (
        f"{data}: nothing to delete")


def test_make_clean_names_no_data_directory() -> None:
    """The ``clean`` recipe removes caches only (run for real it would stop the user's
    services, so its recipe is read with ``make -n``)."""
    out = subprocess.run(["make", "-n", "clean"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    recipe = out.stdout
    assert "rm -rf .pytest_cache" in recipe and "lab-data" not in recipe
    assert "KAFKALAB_DATA_DIR" not in recipe
