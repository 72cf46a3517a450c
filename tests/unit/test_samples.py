"""Streaming a cell's rows to disk (kafkalab.samples.CellWriter) and reading them back."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkalab.errors import RunError
from kafkalab.samples import (
    FLUSH_ROWS,
    SAMPLE_SCHEMA,
    CellContext,
    CellWriter,
    Sample,
    read_cell,
    read_samples,
    runtime_versions,
    settings_json,
)
from kafkalab.store import LabData


def _ctx() -> CellContext:
    return CellContext(
        run_id="r1", scenario="confluent-kafka", client="confluent-kafka", client_version="2",
        profile="latency", workload="w", payload="1kb", payload_encoding="raw",
        payload_bytes=1056, cluster_flavor="kafka09", broker_version="0.9.0.1",
        broker_is_emulator=False, topic="t", planned_messages=3000, message_timeout_ms=1000.0,
        broker_count=1, client_settings=settings_json({"linger.ms": 0, "acks": "1"}))


def _row(seq: int) -> Sample:
    return Sample(sample_kind="message", seq=seq, send_ts_ns=seq * 1000,
                  receive_ts_ns=seq * 1000 + 500, loop_mode="overlapped")


def _cell_path(tmp_path: Path) -> Path:
    return LabData(tmp_path).cell_file("2026-11-22", "r1", "confluent-kafka", "1kb", "latency")


def test_rows_reach_the_disk_while_the_cell_runs(tmp_path: Path) -> None:
    path = _cell_path(tmp_path)
    w = CellWriter(path, _ctx)
    for seq in range(FLUSH_ROWS + 5):
        w.write(_row(seq))
    assert w.rows_written == FLUSH_ROWS                  # one row group is already on disk
    temp = [p for p in path.parent.iterdir() if p.name.startswith(".")]
    assert len(temp) == 1 and temp[0].stat().st_size > 0 and not path.exists()
    assert w.close() == FLUSH_ROWS + 5
    table = read_cell(path)
    assert table.num_rows == FLUSH_ROWS + 5 and table.schema.names == SAMPLE_SCHEMA.names
    first = table.slice(0, 1).to_pylist()[0]
    assert first["e2e_latency_ms"] == 500 / 1e6 and first["planned_messages"] == 3000
    assert first["client_settings"] == '{"acks": "1", "linger.ms": "0"}'
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_re_measured_cell_replaces_its_file_and_an_empty_one_removes_it(tmp_path: Path) -> None:
    path = _cell_path(tmp_path)
    w = CellWriter(path, _ctx())
    w.write(_row(0))
    w.close()
    w = CellWriter(path, _ctx())
    for seq in range(3):
        w.write(_row(seq))
    w.close()
    assert read_cell(path).num_rows == 3
    CellWriter(path, _ctx()).close()
    assert not path.exists()


def test_abort_keeps_the_earlier_file(tmp_path: Path) -> None:
    path = _cell_path(tmp_path)
    w = CellWriter(path, _ctx())
    w.write(_row(0))
    w.close()
    w = CellWriter(path, _ctx())
    w.write(_row(1))
    w.abort()
    assert read_cell(path).column("seq").to_pylist() == [0]
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_corrupt_file_is_an_error_not_a_silent_gap(tmp_path: Path) -> None:
    path = _cell_path(tmp_path)
    w = CellWriter(path, _ctx())
    w.write(_row(0))
    w.close()
    assert read_samples(tmp_path, "r1").num_rows == 1
    bad = path.with_name("part-rest-1kb-latency.parquet")
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(RunError, match=r"part-rest-1kb-latency\.parquet is unreadable"):
        read_samples(tmp_path, "r1")


def test_files_of_schema_1_read_with_the_new_columns_null(tmp_path: Path) -> None:
    old = pa.schema([f for f in SAMPLE_SCHEMA if f.name not in (
        "wall_ts_ns", "loop_mode", "cold_start", "planned_messages", "message_timeout_ms",
        "broker_count", "client_settings")])
    path = _cell_path(tmp_path)
    path.parent.mkdir(parents=True)
    row = {name: None for name in old.names} | {"sample_kind": "message", "seq": 0}
    pq.write_table(pa.Table.from_pylist([row], schema=old), path)
    table = read_samples(tmp_path)
    assert table.num_rows == 1 and table.column("planned_messages").to_pylist() == [None]
    assert table.column("run_id").to_pylist() == ["r1"]


def test_the_java_version_skips_the_picked_up_note_and_the_options_are_recorded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1")
    monkeypatch.delenv("JAVA_TOOL_OPTIONS", raising=False)
    versions = runtime_versions(java=True)
    assert "version" in versions["java"] and "Picked up" not in versions["java"]
    assert versions["java_options"] == "JDK_JAVA_OPTIONS=-XX:TieredStopAtLevel=1"
    monkeypatch.delenv("JDK_JAVA_OPTIONS")
    assert "java_options" not in runtime_versions(java=True)
    assert "java" not in runtime_versions()
