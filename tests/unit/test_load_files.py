"""Names of a load cell's files (kafkalab.load.files, kafkalab.load.shard)."""

from __future__ import annotations

import json
from pathlib import Path

from kafkalab.load import files
from kafkalab.load.shard import ready_path, result_path
from kafkalab.load.spec import LoadCellSpec


def test_every_shard_file_is_numbered_in_three_digits(tmp_path: Path) -> None:
    assert files.receipts_path(tmp_path, 7) == tmp_path / "receipts-007.parquet"
    assert files.lag_path(tmp_path, 12) == tmp_path / "lag-012.parquet"
    assert ready_path(tmp_path, 0) == tmp_path / ".ready-000"
    assert result_path(tmp_path, 1) == tmp_path / ".shard-001.json"
    assert files.sends_path(tmp_path) == tmp_path / "sends.parquet"
    assert files.cell_json_path(tmp_path) == tmp_path / "cell.json"


def test_shard_files_are_found_in_shard_order_with_their_numbers(tmp_path: Path) -> None:
    for name in ("lag-010.parquet", "lag-002.parquet", "lag-x.parquet", "receipts-001.parquet",
                 ".lag-003.parquet.tmp"):
        (tmp_path / name).touch()
    found = files.lag_path.every(tmp_path)
    assert [p.name for p in found] == ["lag-002.parquet", "lag-010.parquet", "lag-x.parquet"]
    assert [files.lag_path.shard_of(p) for p in found] == [2, 10, None]


def _started_cell() -> files.CellDoc:
    """cell.json as the engine writes it when a cell starts."""
    return files.CellDoc(
        schema_version=files.LOAD_SCHEMA_VERSION, cell_id="c", run_id="r", run_date="2026-11-22",
        status="running", error=None, spec=LoadCellSpec(), acks="1", topic="t", partitions=1,
        payload_bytes=1056,
        cluster=files.CellCluster(flavor="kafka09", version="0.9.0.1", is_emulator=False,
                                  broker_count=None),
        client="confluent-kafka", client_version="2", client_settings={"producer.acks": "1"},
        t0_ns=None, measure_start_ns=None, stop_ts_ns=None, drain_end_ts_ns=None, pause=None,
        processes=[], client_bound=False, broker_cpu_frac=None, started_at="2026-11-22T00:00:00",
        shard_placement="subprocess", placement_token=None, cross_host_clock=False,
        barrier_wait_s=None)


STARTED_KEYS = [
    "schema_version", "cell_id", "run_id", "run_date", "status", "error", "spec", "acks",
    "topic", "partitions", "payload_bytes", "cluster", "client", "client_version",
    "client_settings", "t0_ns", "measure_start_ns", "stop_ts_ns", "drain_end_ts_ns", "pause",
    "processes", "client_bound", "broker_cpu_frac", "started_at", "shard_placement",
    "placement_token", "cross_host_clock", "barrier_wait_s"]


def test_cell_json_holds_the_later_fields_only_once_they_are_set(tmp_path: Path) -> None:
    doc = _started_cell()
    written = doc.document()
    assert list(written) == STARTED_KEYS
    assert written["spec"] == LoadCellSpec().model_dump() and written["t0_ns"] is None
    assert written["cluster"] == {"flavor": "kafka09", "version": "0.9.0.1",
                                  "is_emulator": False, "broker_count": None}
    doc.host_cpu_busy_frac = None      # the producer ran; the host's CPU was not readable
    doc.processes.append(files.ProcessCpu.of_result({"shard": 0, "status": "failed"}))
    doc.ended_at, doc.summary = "2026-11-22T00:01:00", {"cell_id": "c", "status": "failed"}
    written = doc.document()
    assert list(written) == [*STARTED_KEYS, "host_cpu_busy_frac", "ended_at", "summary"]
    assert written["host_cpu_busy_frac"] is None
    assert written["processes"] == [{"role": None, "shard": 0, "pid": None, "host": None,
                                     "cpu_s": None, "wall_s": None, "cpu_frac": None}]
    doc.write(tmp_path)
    assert json.loads(files.cell_json_path(tmp_path).read_text()) == written
    back = files.CellDoc.read(tmp_path)
    assert back is not None and back.document() == written
    assert files.CellDoc.read(tmp_path / "nothing") is None
