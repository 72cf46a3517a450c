"""``python -m tools.bench``'s result file: rewritten after every part, so a part that fails
or a Ctrl-C keeps what the parts before it measured, and ``complete`` says whether every
chosen part finished. The parts themselves are stood in for (their own tests run them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tools.bench.demo
import tools.bench.report
from kafkalab.errors import ClusterError
from tools.bench.__main__ import main
from tools.bench.demo import DEMO_BUDGET_HERE_S, DEMO_BUDGET_S, phases

RUN = {**phases([(2.0, "Kafka 4.4.0: 1 broker(s) at 127.0.0.1:19292 (ready in 2 s)"),
                 (92.0, "demo done in 1 min 32 s")]),
       "exit_code": 0, "wall_s": 92.5, "budget_ratio": 1.022}
DEMO = {"budget_s": DEMO_BUDGET_S, "budget_here_s": DEMO_BUDGET_HERE_S, "data_dir": "/x",
        "runs": [RUN]}


def _demo_part(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path / "lab"))
    monkeypatch.setattr(tools.bench.demo, "bench_demo", lambda: DEMO)
    return tmp_path / "bench.json"


def _fail(exc: BaseException) -> Any:
    def part(*_args: Any, **_kwargs: Any) -> Any:
        raise exc
    return part


def test_a_ctrl_c_in_a_later_part_keeps_the_earlier_parts_figures(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    out = _demo_part(monkeypatch, tmp_path)
    monkeypatch.setattr(tools.bench.report, "bench_report", _fail(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        main(["--only", "demo,report", "--out", str(out)])
    written = json.loads(out.read_text())
    assert written["demo"] == DEMO and written["complete"] is False
    assert "report" not in written and written["wall_s"] >= 0


def test_a_lab_error_is_one_line_in_the_file_and_exit_1(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
        ) -> None:
    out = _demo_part(monkeypatch, tmp_path)
    monkeypatch.setattr(tools.bench.report, "bench_report",
                        _fail(ClusterError("no broker answers")))
    assert main(["--only", "demo,report", "--out", str(out)]) == 1
    written = json.loads(out.read_text())
    assert written["demo"] == DEMO and written["error"] == "no broker answers"
    assert written["complete"] is False
    assert "bench: error: no broker answers" in capsys.readouterr().err


def test_a_finished_bench_is_complete(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    out = _demo_part(monkeypatch, tmp_path)
    assert main(["--only", "demo", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["complete"] is True and written["demo"] == DEMO and "error" not in written
