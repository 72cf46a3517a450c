"""``tools.slowdown``: what it refuses, and its calibration loop (the slowdown itself needs
root and cgroups, and is used by hand: docs in the module)."""

from __future__ import annotations

import subprocess

import pytest

from tools import slowdown


def test_a_factor_below_one_is_refused_before_anything_changes() -> None:
    with pytest.raises(slowdown.SlowdownError, match="at least 1"):
        slowdown.run(["true"], 0.5)


def test_no_command_and_no_calibration_is_one_usage_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        slowdown.main([])
    assert e.value.code == 2
    assert "a command to run" in capsys.readouterr().err


def test_the_calibration_loops_run_side_by_side_and_count() -> None:
    out = subprocess.run(slowdown.calibration_command(2, seconds=0.2), capture_output=True,
                         text=True, check=True).stdout.split()
    assert len(out) == 2 and all(int(n) > 0 for n in out)
