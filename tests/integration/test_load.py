"""The load engine against a real Kafka 4.x KRaft node: fan-out, a slowed consumer, pause and
drain, Ctrl-C, the maximum-rate search, a sweep, group consumers and shards started
elsewhere. No mocks: real producer, consumers and broker. The two tests whose verdict needs a
quiet machine (a broker stall, the closed loop at a low rate) are in
``test_load_timing.py``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from kafkalab.attempts import attempt_path
from kafkalab.load import files
from kafkalab.load.cell import run_load_cell
from kafkalab.load.run import LoadRequest, execute_load, finish_load_run, start_load_run
from kafkalab.load.shard import start_path
from kafkalab.load.spec import LoadCellSpec
from kafkalab.load.summary import format_load_table
from kafkalab.store import LabData
from tests.integration.loadkit import cell_dir as _cell_dir
from tests.integration.loadkit import one_cell as _one_cell
from tests.integration.loadkit import receipts as _receipts

KAFKALAB = [sys.executable, "-m", "kafkalab.cli"]


def test_fan_out_every_consumer_holds_every_acked_message(desc: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = subprocess.run([*KAFKALAB, "load", "--consumers", "3", "--consumers-per-process", "2",
                           "--rate", "300", "--duration", "4", "--warmup", "1", "--acks", "1",
                           "--run-id", "fanout", "--cluster", str(desc), "--data-dir", str(data),
                           "--json"], capture_output=True, text=True, timeout=300,
                          cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    (c,) = doc["cells"]
    assert doc["status"] == "complete"
    assert c["intended_msgs"] == 900 and c["warmup_msgs"] == 300
    assert c["acked_msgs"] + c["failed_msgs"] + c["indeterminate_msgs"] + c["unsent_msgs"] == 900
    assert c["acked_msgs"] == 900 and c["expected_msgs"] == 900
    assert (c["failing_clients"], c["loss_pct"], c["duplicates"]) == (0, 0.0, 0)
    # How close the machine came to 300 msg/s is its own business (a busy CI host once
    # achieved 276); the instrument must account for it. The achieved rate is the window's
    # sends over their span plus one interval, so any shortfall is the last send's publish
    # delay, which the cell reports (its max bounds it): never hidden, never a bonus.
    achieved, pub_max_s = c["achieved_rate_msgs_per_s"], c["publish_delay_max_ms"] / 1000
    assert 900 / (pub_max_s + 900 / 300) <= achieved * (1 + 1e-6)
    assert achieved <= 300 * (1 + 1e-6)
    assert c["e2e_p99_ms"] is not None and c["service_e2e_p99_ms"] is not None
    assert c["e2e_p50_ms"] >= c["service_e2e_p50_ms"]  # from intended ≥ from actual send
    assert "sent" in proc.stderr  # a progress line while it ran
    cell = _cell_dir(data, "fanout")
    r = _receipts(cell)
    assert sorted(r["shard"].unique()) == [0, 1]  # two consumer processes
    window = r[~r["is_warmup"] & ~r["duplicate"]]
    assert window.groupby("consumer")["seq"].nunique().to_dict() == {0: 900, 1: 900, 2: 900}
    meta = json.loads(files.cell_json_path(cell).read_text())
    roles = sorted(p["role"] for p in meta["processes"])
    assert roles == ["consumer-shard", "consumer-shard", "producer"]
    assert all(p["cpu_s"] is not None and p["wall_s"] > 0 for p in meta["processes"])
    manifest = LabData(data).manifest("fanout")
    assert manifest is not None and manifest["kind"] == "load" and manifest["status"] == "complete"
    assert not list(cell.glob(".*.tmp"))  # no temporary file left behind


def test_a_slowed_consumer_is_failing_and_the_others_are_not(desc: Path, tmp_path: Path) -> None:
    """20 ms a record is 50 records/s against 200 msg/s: ~150 of the 500 measured messages
    by the stop, ~50 more in the 1 s drain. The drain's end is a hard stop (a record fetched
    but not yet taken then is missing), so it is failing whatever its fetch batches were."""
    spec = LoadCellSpec(consumers=3, rate_msgs_per_s=200, duration_s=3, warmup_s=0.5, drain_s=1,
                        slow_consumer=1, slow_consumer_ms_per_record=20)
    s = _one_cell(tmp_path, desc, spec, "slow")
    detail = {c["consumer"]: c for c in s["consumers_detail"]}
    assert detail[1]["failing"] and detail[1]["missing_msgs"] > 0
    # far from complete: at 50 records/s it cannot have taken more than 4.5 s worth
    assert detail[1]["unique_msgs"] < 0.6 * s["expected_msgs"]
    assert not detail[0]["failing"] and not detail[2]["failing"]
    assert s["failing_clients"] == 1
    # It takes a record only 20 ms after the one before: at most 50 a second, +1 in the
    # window. (Not "slower than consumer 0": on a starved machine, a twice-slower one under
    # the whole suite, neither consumer took a record before the stop, both rates were 0.)
    assert detail[1]["rx_rate_msgs_per_s"] <= 51


def test_a_slowed_consumer_that_catches_up_in_the_drain_is_late_but_complete(
        desc: Path, tmp_path: Path) -> None:
    """The same slowed consumer with a drain long enough to work through its backlog (~300
    records at 50/s after the stop: ~6 s of 30): every message arrives, most after the
    stop. Late but complete is not failing; its lateness is counted."""
    spec = LoadCellSpec(consumers=2, rate_msgs_per_s=200, duration_s=3, warmup_s=0.5,
                        drain_s=30, slow_consumer=1, slow_consumer_ms_per_record=20)
    s = _one_cell(tmp_path, desc, spec, "slow-complete")
    detail = {c["consumer"]: c for c in s["consumers_detail"]}
    assert detail[1]["missing_msgs"] == 0 and not detail[1]["failing"]
    assert detail[1]["unique_msgs"] == s["expected_msgs"]
    assert detail[1]["late_msgs"] > 0.3 * s["expected_msgs"]
    assert s["failing_clients"] == 0 and s["late_msgs"] >= detail[1]["late_msgs"]


def test_pause_grows_lag_at_the_produce_rate_then_it_drains(desc: Path, tmp_path: Path) -> None:
    rate = 200.0
    spec = LoadCellSpec(consumers=2, rate_msgs_per_s=rate, duration_s=8, warmup_s=1,
                        pause_at_s=2, pause_for_s=3, lag_interval_s=0.5)
    s = _one_cell(tmp_path, desc, spec, "pause")
    assert s["failing_clients"] == 0
    lag = pq.read_table([str(p) for p in _cell_dir(tmp_path, "pause").glob("lag-*.parquet")]).to_pandas()
    meta = json.loads(files.cell_json_path(_cell_dir(tmp_path, "pause")).read_text())
    ps, pe = meta["pause"]["start_ns"], meta["pause"]["end_ns"]
    if s["pause_lag_peak_msgs"] is None:
        # Once, on a twice-slower machine under the whole suite, the shard took no sample
        # from 0.0 to 5.2 s: the engine must then say it has no peak, and be right.
        last = lag["sample_ts_ns"].between(pe - 0.5e9, pe)
        assert not last.any() and s["time_to_drain_s"] is None
        return
    # The produce rate is what the producer got acked, not the nominal 200 msg/s: on a starved
    # machine it falls behind and catches up, and a stalled shard (4.4 s once, 2x machine)
    # leaves two samples 0.1 s apart, whose slope is the producer's batching, not a rate.
    sends = pq.read_table(str(_cell_dir(tmp_path, "pause") / "sends.parquet")).to_pandas()
    acked = sends.loc[sends["outcome"] == "acked", "ack_ts_ns"]
    assert s["pause_lag_peak_msgs"] >= 0.7 * acked.between(ps, pe).sum()
    assert s["time_to_drain_s"] is not None and s["drain_rate_msgs_per_s"] > rate
    inside = lag[(lag["sample_ts_ns"] > ps + 0.5e9) & (lag["sample_ts_ns"] < pe) & lag["paused"]
                 & lag["lag_msgs"].notna()]
    for _, g in inside.groupby("consumer"):
        first, last = g.iloc[0], g.iloc[-1]
        assert last["position"] == first["position"]  # a paused consumer takes nothing
        grown = last["lag_msgs"] - first["lag_msgs"]
        assert grown == last["log_end_offset"] - first["log_end_offset"]
        # grows at the produce rate: by what was acked in between, within one interval's worth
        appended = ((acked > first["sample_ts_ns"]) & (acked <= last["sample_ts_ns"])).sum()
        assert abs(grown - appended) <= rate * 0.5 + 2
    # The broker's lag and the client backlog agree within one interval × rate once the
    # warm-up is counted: the backlog is of the expected set E (docs/aggregates-schema.md),
    # the lag of every record in the log. When the group's first assignment comes late (a
    # twice-slower machine: 12 records read by the peak, 5.5 s in) the peak lag still holds
    # the warm-up records (there 189 above the backlog, 188 of them warm-up).
    peak = lag.loc[lag["lag_msgs"].idxmax()]
    receipts = pq.read_table([str(p) for p in _cell_dir(tmp_path, "pause").glob("receipts-*.parquet")]
                             ).to_pandas()
    warm_acked = (sends["is_warmup"] & (sends["ack_ts_ns"] <= peak["sample_ts_ns"])).sum()
    warm_read = (receipts["is_warmup"] & ~receipts["duplicate"]
                 & (receipts["consumer"] == peak["consumer"])
                 & (receipts["receive_ts_ns"] <= peak["sample_ts_ns"])).sum()
    assert s["lag_peak_msgs"] == peak["lag_msgs"]
    assert abs(s["lag_peak_msgs"] - s["client_backlog_peak_msgs"] - (warm_acked - warm_read)
               ) <= rate * 0.5 + 2


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_keeps_what_was_measured(desc: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = subprocess.Popen([*KAFKALAB, "load", "--consumers", "2", "--rate", "200",
                             "--duration", "30", "--warmup", "1", "--run-id", "ctrlc",
                             "--cluster", str(desc), "--data-dir", str(data)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tempfile.gettempdir(), start_new_session=True,
                            # as from a terminal: a test runner started in the background
                            # (`make test &`) has SIGINT ignored, and children inherit that
                            preexec_fn=_sigint_default)
    deadline = time.monotonic() + 120
    while not list(data.glob("load/*/*/*/.start.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(3)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "what was measured is kept" in err
    assert "Traceback" not in err
    cell = _cell_dir(data, "ctrlc")
    meta = json.loads(files.cell_json_path(cell).read_text())
    assert meta["status"] == "interrupted"
    sends = pq.read_table(files.sends_path(cell)).to_pandas()
    outcomes = sends["outcome"].value_counts().to_dict()
    assert outcomes.get("acked", 0) >= 400 and outcomes.get("unsent", 0) > 2000
    assert len(_receipts(cell)) >= 400 * 2 * 0.9
    manifest = LabData(data).manifest("ctrlc")
    assert manifest is not None and manifest["status"] != "running"


def test_execute_load_over_a_sweep_runs_every_cell(desc: Path, tmp_path: Path) -> None:
    cells = [LoadCellSpec(consumers=c, rate_msgs_per_s=100, duration_s=2, warmup_s=0.5, acks=a)
             for c in (1, 2) for a in ("0", "1")]
    res = execute_load(LoadRequest(cells=cells, data_dir=tmp_path, descriptor_path=desc))
    assert res.status == "complete"
    assert sorted((c["consumers"], c["acks"]) for c in res.cells) == [(1, "0"), (1, "1"), (2, "0"), (2, "1")]
    assert all(c["loss_pct"] == 0.0 for c in res.cells)
    assert start_path(_any_cell(tmp_path, res.run_id)).exists()


def _any_cell(data: Path, run_id: str) -> Path:
    return files.run_cell_dirs(data, run_id)[0]


def test_kafka_python_producer_and_group_consumers(desc: Path, tmp_path: Path) -> None:
    spec = LoadCellSpec(client="kafka-python", consumer_mode="group", consumers=2, acks="all",
                        rate_msgs_per_s=200, duration_s=3, warmup_s=1)
    s = _one_cell(tmp_path, desc, spec, "kp-group")
    assert s["client"] == "kafka-python" and s["acks"] == "all"
    assert s["acked_msgs"] == s["intended_msgs"] == 400
    assert s["failing_clients"] == 0 and s["loss_pct"] == 0.0
    meta = json.loads(files.cell_json_path(_cell_dir(tmp_path, "kp-group")).read_text())
    assert meta["client_settings"]["producer.acks"] == "all"
    assert meta["client_settings"]["consumer.fetch.queue.backoff.ms"] == "1"


def test_shards_started_elsewhere_join_the_barrier_and_another_clock_is_labelled(
        desc: Path, tmp_path: Path) -> None:
    """Shard placement "tasks" without Airflow: the cell starts no shard and waits at the
    barrier; this test plays the two shard tasks. Shard 0 runs through run_shard_process (as
    consume_load_shard does); shard 1 claims another clock domain (a second host cannot be
    had here), so it maps its clock through the wall clocks and the cell says so."""
    from kafkalab.load import clock
    from kafkalab.load.placement import run_shard_process, shard_turn
    from kafkalab.load.shard import plan_path
    from kafkalab.samples import Manifest

    data = tmp_path / "data"
    spec = LoadCellSpec(consumers=2, consumers_per_shard=1, rate_msgs_per_s=200, duration_s=3,
                        warmup_s=1, acks="1")
    start_load_run(LoadRequest(cells=[spec], data_dir=data, descriptor_path=desc, run_id="tasks"))
    out: dict[str, Any] = {}

    def producer() -> None:
        try:
            out["summary"] = run_load_cell(data, "tasks", spec, desc, shard_placement="tasks",
                                           placement_token="dagrun-1")
        except Exception as exc:  # reported by the assertion below
            out["error"] = exc

    cell_thread = threading.Thread(target=producer)
    cell_thread.start()
    final = files.cell_dir(data, Manifest.load(data, "tasks").run_date, "tasks", spec.cell_id("1"))
    cell = attempt_path(final)  # where the cell is measured until it ends (kafkalab.attempts)
    deadline = time.monotonic() + 60
    while shard_turn(cell, 0, "dagrun-1") != "join":
        assert time.monotonic() < deadline and cell_thread.is_alive(), out
        time.sleep(0.05)
    assert shard_turn(cell, 0, "another-dag-run") == "wait"
    results: dict[int, Any] = {}
    shard0 = threading.Thread(target=lambda: results.update(
        {0: run_shard_process(cell, 0, settled=final)}))
    shard0.start()
    env = {**os.environ, clock.DOMAIN_ENV: "elsewhere",
           "PYTHONPATH": os.pathsep.join([str(Path(files.__file__).parents[2]),
                                          os.environ.get("PYTHONPATH", "")])}
    shard1 = subprocess.run([sys.executable, "-m", "kafkalab.load.shard", str(plan_path(cell)), "1"],
                            env=env, capture_output=True, text=True, timeout=120)
    shard0.join(timeout=120)
    cell_thread.join(timeout=120)
    finish_load_run(data, "tasks")
    assert "error" not in out, out
    assert shard1.returncode == 0, shard1.stdout + shard1.stderr
    assert results[0]["status"] == "complete"
    s = out["summary"]
    assert s["status"] == "complete" and s["shard_placement"] == "tasks"
    assert (s["failing_clients"], s["loss_pct"], s["duplicates"]) == (0, 0.0, 0)
    assert s["cross_host_clock"] is True and "cross_host_clock" in format_load_table([s])
    assert s["barrier_wait_s"] is not None and s["barrier_wait_s"] > 0
    assert not cell.exists()  # the complete attempt took the cell's place
    cell = final
    meta = json.loads(files.cell_json_path(cell).read_text())
    bases = {r["shard"]: r["clock"]["basis"] for r in meta["shards"]}
    assert bases == {0: clock.SAME_HOST, 1: clock.WALL_CLOCK}
    assert meta["shards"][1]["clock"]["domain"] == "elsewhere"
    # the same host really: the wall-clock mapping is off by read jitter only, never by the
    # difference of two unrelated clocks (which would make latencies hours long or negative)
    assert abs(meta["shards"][1]["clock"]["offset_ns"]) < 1_000_000
    r = _receipts(cell)
    assert set(r["consumer"]) == {0, 1}
    assert (r.loc[r["shard"] == 1, "e2e_latency_ms"] > 0).all()
    pids = {p["pid"] for p in meta["processes"]}
    assert len(pids) == 3  # the producer (this process) and two shard processes
