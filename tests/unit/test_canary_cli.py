"""``kafkalab canary``'s edges: its settings from the command line, bad input in one line, and
a partition added mid-run (the topic check's thread) reaching the sender and the consumer."""

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


class _Producer:
    """A producer that records what it is asked to send; refuses while ``full``."""

    def __init__(self) -> None:
        self.sent: list[int] = []
        self.full = False

    def produce(self, topic: str, *, value: bytes, key: bytes, partition: int) -> None:
        if self.full:
            raise BufferError("Local: Queue full")
        self.sent.append(partition)


def test_a_partition_added_for_a_new_broker_is_read_and_written_from_the_next_tick(
        tmp_path: Path) -> None:
    from kafkalab.canary.engine import _Run
    from kafkalab.canary.spec import CanarySpec
    from kafkalab.canary.topic import TopicView
    from kafkalab.cluster.descriptor import ClusterDescriptor

    d = ClusterDescriptor(flavor="external", protocol="modern",
                          bootstrap_servers="127.0.0.1:1", broker_count=3)
    said: list[str] = []
    run = _Run(CanarySpec(out_dir=tmp_path, warmup_s=0), d, None, TopicView(2, (0, 1)), None,
               said.append)
    try:
        producer = _Producer()
        run._send_tick(producer, 0)
        assert producer.sent == [0, 1]
        run.shared.view = TopicView(3, (0, 1, 2), added=(2,))  # the topic check's thread
        run._send_tick(producer, 1_000_000_000)
        assert producer.sent == [0, 1, 0, 1, 2]
        assert run.shared.assign.get_nowait() == [2]  # the consumer thread assigns it
        assert said == ["canary: partitions [2] added for brokers [2]"]
        producer.full = True  # a refused send is a failed one, never a silent gap
        run._send_tick(producer, 2_000_000_000)
        assert run.sent == 8 and run.figures.totals[-1].produce_attempts == 3
        assert run.figures.totals[-1].produce_acked == 0
    finally:
        run.writer.close()
