"""What the runner keeps when a cell goes wrong, and what a re-run replaces (no broker needed:
the scenario is a stand-in that writes rows and then fails the way a real one can)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kafkalab import runner
from kafkalab.progress import noop
from kafkalab.samples import Sample, read_samples
from kafkalab.scenarios.base import Cell
from kafkalab.store import LabData


class _Scenario:
    """Writes ``rows`` message rows, then raises ``fail`` (if any)."""

    name = "rest"
    client = "requests"

    def __init__(self, rows: int, fail: BaseException | None = None) -> None:
        self.rows, self.fail = rows, fail

    def client_version(self) -> str:
        return "test"

    def client_settings(self, cell: Cell) -> dict[str, str]:
        return {"timeout_s": str(cell.workload.message_timeout_s)}

    def run(self, cell: Cell, progress: Any) -> None:
        for seq in range(self.rows):
            cell.sink.write(Sample(sample_kind="message", seq=seq, send_ts_ns=seq,
                                   receive_ts_ns=seq + 1_000, loop_mode="request"))
        if self.fail is not None:
            raise self.fail


def _request(tmp_path: Path, payloads: list[str], run_id: str = "r1") -> runner.RunRequest:
    return runner.build_run_request("nightly", scenarios=["rest"], payloads=payloads,
                                    profiles=["latency"], data_dir=tmp_path, run_id=run_id,
                                    overrides={"messages": 5, "warmup_messages": 0})


def _use(monkeypatch: pytest.MonkeyPatch, scenario: _Scenario) -> None:
    monkeypatch.setattr(runner, "get_scenario", lambda name: scenario)


def test_a_cell_that_raises_keeps_what_it_measured(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, _Scenario(3, RuntimeError("broker went away")))
    result = runner.execute(_request(tmp_path, ["1kb"]), noop)
    assert result.status == "failed"
    cell = result.cells[0]
    assert cell.status == "failed" and cell.rows == 3
    assert "broker went away" in str(cell.reason) and "3 rows measured" in str(cell.reason)
    rows = read_samples(tmp_path, "r1").to_pylist()
    assert [r["seq"] for r in rows] == [0, 1, 2]
    assert rows[0]["client_settings"] == '{"timeout_s": "30.0"}' and rows[0]["planned_messages"] == 5
    manifest = LabData(tmp_path).manifest("r1") or {}
    assert manifest["status"] == "failed" and manifest["cells"][0]["rows"] == 3
    assert manifest["client_settings"] == {"rest/latency": {"timeout_s": "30.0"}}
    assert manifest["environment"]["cpu_count"] and "load_avg_end" in manifest["environment"]


def test_a_failed_write_fails_the_cell_and_still_closes_the_manifest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalab import samples

    _use(monkeypatch, _Scenario(2))

    def disk_full(self: samples.CellWriter) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(samples.CellWriter, "flush", disk_full)
    result = runner.execute(_request(tmp_path, ["1kb"]), noop)
    assert result.cells[0].status == "failed" and "No space left" in str(result.cells[0].reason)
    assert (LabData(tmp_path).manifest("r1") or {})["status"] == "failed"
    assert LabData(tmp_path).run_state("r1") == "failed"


def test_re_running_one_cell_replaces_only_that_cell(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    lab = LabData(tmp_path)
    _use(monkeypatch, _Scenario(5))
    assert runner.execute(_request(tmp_path, ["1kb", "10kb"]), noop).status == "complete"
    (lab.aggregates_dir / "run_id=r1").mkdir(parents=True)   # the pipeline had aggregated it
    _use(monkeypatch, _Scenario(4))
    again = runner.execute(_request(tmp_path, ["10kb"]), noop)
    assert again.status == "complete"
    rows = read_samples(tmp_path, "r1").to_pylist()
    assert sorted((r["payload"], r["seq"]) for r in rows) == (
        [("10kb", s) for s in range(4)] + [("1kb", s) for s in range(5)])
    manifest = lab.manifest("r1") or {}
    assert manifest["payloads"] == ["1kb", "10kb"] and len(manifest["cells"]) == 2
    assert manifest["stale_outputs"] == ["aggregates"] and len(manifest["reopened_at"]) == 1


def test_a_re_run_with_another_workload_is_refused(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalab.errors import ConfigError

    _use(monkeypatch, _Scenario(5))
    runner.execute(_request(tmp_path, ["1kb"]), noop)
    other = runner.build_run_request("nightly", scenarios=["rest"], payloads=["1kb"],
                                     profiles=["latency"], data_dir=tmp_path, run_id="r1",
                                     overrides={"messages": 7, "warmup_messages": 0})
    with pytest.raises(ConfigError, match="re-run its cells with the same workload"):
        runner.execute(other, noop)
    assert len(read_samples(tmp_path, "r1")) == 5


def test_first_payload_probes_only_in_the_runs_first_payload(tmp_path: Path) -> None:
    req = runner.build_run_request("images-quick", scenarios=["rest"],
                                   payloads=["3mb", "1mb"], data_dir=tmp_path)
    assert req.workload.first_message_probes_at == "first-payload"
    assert runner.cell_workload(req, "3mb").first_message_probes == 1  # the run's first
    assert runner.cell_workload(req, "1mb").first_message_probes == 0
    every = runner.build_run_request("images-http-vs-kafka", scenarios=["rest"],
                                     payloads=["3mb", "1mb"], data_dir=tmp_path)
    assert every.workload.first_message_probes_at == "every-payload"
    assert runner.cell_workload(every, "1mb").first_message_probes == every.workload.first_message_probes


def _cell_file(tmp_path: Path) -> Path:
    return LabData(tmp_path).run_sample_files("r1")[0]


@pytest.mark.parametrize("second", [_Scenario(0, RuntimeError("broker gone")),
                                    _Scenario(2, RuntimeError("broker gone")),
                                    _Scenario(0)],
                         ids=["failed-empty", "failed-with-rows", "complete-but-empty-is-skip"])
def test_a_re_measurement_that_does_not_complete_keeps_the_good_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, second: _Scenario) -> None:
    from kafkalab.scenarios.base import Skipped

    lab = LabData(tmp_path)
    _use(monkeypatch, _Scenario(5))
    assert runner.execute(_request(tmp_path, ["1kb"]), noop).status == "complete"
    before = _cell_file(tmp_path).read_bytes()
    if second.fail is None:  # a scenario the re-run skips
        second.fail = Skipped("client missing")
    _use(monkeypatch, second)
    lines: list[str] = []
    again = runner.execute(_request(tmp_path, ["1kb"]), lines.append)
    assert _cell_file(tmp_path).read_bytes() == before     # the good rows, untouched
    assert [r["seq"] for r in read_samples(tmp_path, "r1").to_pylist()] == list(range(5))
    (frag,) = lab.cell_fragments("r1")
    assert frag["status"] == "complete" and frag["rows"] == 5
    (attempt,) = frag["attempts"]
    assert attempt["status"] == again.cells[0].status != "complete"
    assert attempt["rows"] == second.rows
    kept = sorted(p.name for p in _cell_file(tmp_path).parent.iterdir() if p.name.startswith("."))
    if second.rows:   # what the failed attempt measured is kept beside, hidden from readers
        assert kept == [attempt["kept_file"]] and kept[0].startswith(".failed-")
    else:
        assert kept == [] and attempt["kept_file"] is None
    assert any("earlier complete measurement (5 rows" in line for line in lines)
    manifest = lab.manifest("r1") or {}
    assert manifest["status"] == "complete" and manifest["cells"][0]["rows"] == 5


def test_a_failed_first_measurement_is_replaced_by_a_later_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, _Scenario(2, RuntimeError("broker gone")))
    runner.execute(_request(tmp_path, ["1kb"]), noop)
    assert len(read_samples(tmp_path, "r1")) == 2      # a failed first attempt still lands
    _use(monkeypatch, _Scenario(1, RuntimeError("gone again")))
    runner.execute(_request(tmp_path, ["1kb"]), noop)  # failed over failed: the newer rows
    assert len(read_samples(tmp_path, "r1")) == 1
    _use(monkeypatch, _Scenario(0, RuntimeError("and again")))
    runner.execute(_request(tmp_path, ["1kb"]), noop)  # nothing measured: the 1 row stays
    assert len(read_samples(tmp_path, "r1")) == 1
    _use(monkeypatch, _Scenario(4))
    assert runner.execute(_request(tmp_path, ["1kb"]), noop).status == "complete"
    assert len(read_samples(tmp_path, "r1")) == 4
    (frag,) = LabData(tmp_path).cell_fragments("r1")
    assert frag["status"] == "complete" and [a["reason"] for a in frag["attempts"]] == [
        "RuntimeError: and again"]


def test_a_crashed_attempt_is_set_aside_and_never_read(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalab.attempts import attempt_path

    _use(monkeypatch, _Scenario(5))
    runner.execute(_request(tmp_path, ["1kb"]), noop)
    final = _cell_file(tmp_path)
    attempt_path(final).write_bytes(b"half a parquet file")   # a process killed mid-cell
    assert len(read_samples(tmp_path, "r1")) == 5             # readers never see it
    _use(monkeypatch, _Scenario(3))
    runner.execute(_request(tmp_path, ["1kb"]), noop)
    assert len(read_samples(tmp_path, "r1")) == 3
    hidden = [p.name for p in final.parent.iterdir() if p.name.startswith(".")]
    assert len(hidden) == 1 and hidden[0].startswith(".failed-")


def _running_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      owner: dict[str, Any]) -> None:
    """A run r1 measured once, then left ``running`` by ``owner``."""
    _use(monkeypatch, _Scenario(5))
    runner.execute(_request(tmp_path, ["1kb"]), noop)
    lab = LabData(tmp_path)
    doc = lab.manifest("r1") or {}
    lab.write_manifest({**doc, "status": "running", "owner": owner})


def test_a_run_with_a_live_owner_is_refused_in_one_line(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import socket

    from kafkalab.errors import ConfigError

    _running_manifest(tmp_path, monkeypatch,
                      {"host": socket.gethostname(), "pid": os.getppid(), "kind": "cli"})
    before = read_samples(tmp_path, "r1").to_pylist()
    with pytest.raises(ConfigError) as err:
        runner.execute(_request(tmp_path, ["1kb"]), noop)
    assert "\n" not in str(err.value)
    assert f"run r1 is being measured by cli process {os.getppid()}" in str(err.value)
    assert read_samples(tmp_path, "r1").to_pylist() == before   # nothing touched
    assert (LabData(tmp_path).manifest("r1") or {})["status"] == "running"


def test_a_dead_owner_or_airflow_retrying_its_own_run_may_reopen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket
    import subprocess
    import sys

    from kafkalab.errors import ConfigError

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    _running_manifest(tmp_path, monkeypatch,
                      {"host": socket.gethostname(), "pid": int(dead), "kind": "cli"})
    assert runner.execute(_request(tmp_path, ["1kb"]), noop).status == "complete"
    lab = LabData(tmp_path)
    lab.write_manifest({**(lab.manifest("r1") or {}), "status": "running",
                        "owner": {"host": "worker-2", "pid": 1, "kind": "airflow"}})
    req = _request(tmp_path, ["1kb"])
    req.owner_kind = "airflow"
    assert runner.start_run(req)["run_id"] == "r1"       # Airflow re-running its own tasks
    assert runner.start_run(req)["run_id"] == "r1"       # the owning process itself, again
    lab.write_manifest({**(lab.manifest("r1") or {}),  # ... but not a CLI beside Airflow
                        "owner": {"host": "worker-2", "pid": 1, "kind": "airflow"}})
    with pytest.raises(ConfigError, match="r1 is being measured by airflow process 1 on worker-2"):
        runner.start_run(_request(tmp_path, ["1kb"]))


def test_a_run_whose_lock_another_process_holds_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    from kafkalab import store
    from kafkalab.errors import ConfigError

    _use(monkeypatch, _Scenario(5))
    runner.execute(_request(tmp_path, ["1kb"]), noop)
    lock = store.lock_path(LabData(tmp_path).manifest_path("r1"))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys; f = open(sys.argv[1], 'a'); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()", str(lock)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(store, "START_LOCK_WAIT_S", 0.2)
        with pytest.raises(ConfigError, match="being started or closed by another process"):
            runner.execute(_request(tmp_path, ["1kb"]), noop)
        with pytest.raises(store.LockBusy), LabData(tmp_path).run_lock("r1", wait_s=0):
            pass
    finally:
        holder.communicate("")
    with LabData(tmp_path).run_lock("r1", wait_s=0), LabData(tmp_path).run_lock("r1", wait_s=0):
        pass   # free again, and re-entrant within a process
