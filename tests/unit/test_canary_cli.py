"""``kafkalab canary``'s edge: its settings from the command line, bad input in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.cli import build_parser, main
from kafkalab.cli.canary import _spec

pytestmark = pytest.mark.unit


def test_without_out_or_data_dir_the_summary_goes_under_the_lab_data_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(tmp_path))
    spec = _spec(build_parser().parse_args(["canary"]))
    assert spec.out_dir.parent == tmp_path / "canary"  # <data dir>/canary/<id>
    assert spec.metrics_address == "127.0.0.1" and spec.acks == "all"
    given = _spec(build_parser().parse_args(["canary", "--data-dir", str(tmp_path / "d")]))
    assert given.out_dir.parent == tmp_path / "d" / "canary"


@pytest.mark.parametrize(("argv", "line"), [
    (["--lost-after-s", "3"], "kafkalab: error: --lost-after-s: Input should be greater than or "
                              "equal to 5"),
    (["--consume-deadline-ms", "70000"], "kafkalab: error: --lost-after-s must be longer than "
                                         "--consume-deadline-ms: a record is late before it is lost"),
    (["--interval-ms", "5"], "kafkalab: error: --interval-ms: Input should be greater than or "
                             "equal to 10"),
])
def test_bad_settings_are_one_line_and_exit_2(argv: list[str], line: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["canary", "--out", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.strip() == line, err
