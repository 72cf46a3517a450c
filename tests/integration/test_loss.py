"""Messages really are lost, against a real Kafka 0.9.0.1 broker: the broker process is
frozen (SIGSTOP) in the middle of a closed loop and again at its end, so the loss paths of
the harness run for real. Every sent message ends as exactly one row; the ones frozen
mid-run arrive after their timeout (``late``, streamed to the sink as they arrive), the
ones frozen at the end never reach the consumer within the run (``lost``, written by
``finish``): sent = received + lost + error.

The pauses are meant to stay below the broker's ZooKeeper session timeout (6 s), but on a
loaded machine a frozen JVM can still lose its session and take a moment to re-register:
every test waits until ZooKeeper lists the broker again (and a controller) before it goes on,
so the next test never meets a broker that is not there yet."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalab.cluster import ClusterDescriptor, cluster_status, zookeeper
from kafkalab.config.loader import load_profile
from kafkalab.config.models import Workload
from kafkalab.payloads import load_body
from kafkalab.samples import ListSink, Sample
from kafkalab.scenarios import get_scenario
from kafkalab.scenarios.base import Cell
from kafkalab.topics import TopicSpec, provision_topics

MESSAGES = 30
TIMEOUT_S = 0.5
"""message_timeout_s: a message not back within 0.5 s is lost (late if it comes later)."""
MID_PAUSE_S = 1.6
"""The mid-run freeze: more than three message timeouts."""
END_PAUSE_S = 3.2
"""The freeze at the end: longer than the last three messages' timeouts plus the 0.5 s
grace period, shorter than the producer's final flush (10 s) and ZooKeeper's 6 s."""

pytestmark = pytest.mark.jvm_defaults  # times a frozen broker against timeouts: JVMs as users run them



class _FreezingSink(ListSink):
    """A sink that freezes the broker (SIGSTOP) *synchronously* when it holds ``at`` rows —
    in the scenario's own thread, before its next send, so the freeze never comes too late
    on a busy machine — and thaws it (SIGCONT) ``pause_s`` later from a timer, or when the
    test ends, whichever is first."""

    def __init__(self, pid: int, plan: list[tuple[int, float]]) -> None:
        super().__init__()
        self.pid = pid
        self.plan = list(plan)
        self.rows_at_freeze: list[int] = []
        self._lock = threading.Lock()
        self._frozen = False
        self._timer: threading.Timer | None = None

    def write(self, sample: Sample) -> None:
        super().write(sample)
        if self.plan and len(self.rows) >= self.plan[0][0]:
            _at, pause_s = self.plan.pop(0)
            with self._lock:
                self.thaw_now()
                self.rows_at_freeze.append(len(self.rows))
                os.kill(self.pid, signal.SIGSTOP)
                self._frozen = True
                self._timer = threading.Timer(pause_s, self.thaw)
                self._timer.daemon = True
                self._timer.start()

    def thaw(self) -> None:
        with self._lock:
            self.thaw_now()

    def thaw_now(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._frozen:
            os.kill(self.pid, signal.SIGCONT)
            self._frozen = False


STABLE_S = 1.0
REGISTER_TIMEOUT_S = 60.0
"""How long a thawed broker may take to be listed by ZooKeeper again."""


def _wait_registered(descriptor: ClusterDescriptor) -> None:
    """Return once ZooKeeper lists every broker of ``descriptor`` and a controller."""
    assert descriptor.zookeeper is not None
    port = int(descriptor.zookeeper.rsplit(":", 1)[1])
    deadline = time.monotonic() + REGISTER_TIMEOUT_S
    seen_since: float | None = None
    while True:
        try:
            text = zookeeper.dump(port)
            ok = (len(zookeeper.registered_broker_ids(text)) >= descriptor.broker_count
                  and zookeeper.has_controller(text))
        except OSError:
            ok = False
        if ok:
            # registered, and still registered a second later: a session that was about to
            # expire after a freeze has expired (and re-registered) by then
            seen_since = seen_since if seen_since is not None else time.monotonic()
            if time.monotonic() - seen_since >= STABLE_S:
                return
        else:
            seen_since = None
        assert time.monotonic() < deadline, "the broker did not re-register in ZooKeeper"
        time.sleep(0.1)


@pytest.fixture()
def loss_topic(kafka09_cluster: ClusterDescriptor) -> Iterator[str]:
    _wait_registered(kafka09_cluster)
    name = f"klab-loss-{uuid.uuid4().hex[:8]}"
    provision_topics(kafka09_cluster, [TopicSpec(name=name, partitions=1, replication_factor=1)])
    yield name
    _wait_registered(kafka09_cluster)   # leave the shared broker as the next test expects it


def _broker_pid(lab: Path) -> int:
    (broker,) = [p for p in cluster_status(lab)["processes"] if p["role"] == "broker"]
    assert broker["alive"]
    return int(broker["pid"])


def _message_rows(rows: list[Sample]) -> list[Sample]:
    return [r for r in rows if r.sample_kind == "message"]


@pytest.mark.parametrize("scenario", ["confluent-kafka", "confluent-kafka-serial", "kafka-python"])
def test_a_frozen_broker_loses_messages_and_every_one_is_a_row(
        kafka09_lab: tuple[Path, ClusterDescriptor], loss_topic: str, tmp_path: Path,
        scenario: str) -> None:
    lab, descriptor = kafka09_lab
    workload = Workload(name="loss", messages=MESSAGES, warmup_messages=0, encoding="raw",
                        consumer_mode="assign", first_message_probes=0,
                        message_timeout_s=TIMEOUT_S)
    sink = _FreezingSink(_broker_pid(lab), [(10, MID_PAUSE_S), (MESSAGES - 3, END_PAUSE_S)])
    cell = Cell(run_id="loss", workload=workload, profile=load_profile("latency"),
                payload="1kb", body=load_body("1kb", "raw", tmp_path), topic=loss_topic,
                descriptor=descriptor, work_dir=tmp_path, sink=sink)
    progress: list[Any] = []
    try:
        get_scenario(scenario).run(cell, progress.append)
    finally:
        sink.thaw()
        for tracker in cell.trackers:
            tracker.finish()
    assert sink.rows_at_freeze == [10, MESSAGES - 3], "the broker was not frozen twice, on time"

    rows = _message_rows(sink.rows)
    firsts = [r for r in rows if r.status != "duplicate"]
    n = Counter(r.status for r in firsts)
    # every sent message is exactly one row: sent = received + lost + error
    assert sorted(r.seq for r in firsts) == list(range(MESSAGES))
    assert n["ok"] + n["late"] + n["lost"] + n["error"] == MESSAGES
    assert n["late"] >= 1, n   # frozen mid-run, arrived after its timeout
    assert n["lost"] >= 1, n   # frozen at the end, never back within the run
    assert n["ok"] >= 10, n
    for r in firsts:
        assert r.loop_mode == get_scenario(scenario).loop_mode and r.send_ts_ns is not None
        if r.status in ("ok", "late"):
            assert r.receive_ts_ns is not None and r.e2e_latency_ms is not None
            assert (r.e2e_latency_ms > TIMEOUT_S * 1000) == (r.status == "late")
        if r.status == "lost":
            assert r.receive_ts_ns is None and r.e2e_latency_ms is None
    # rows are streamed: late ones were written while the loop still ran (before the end
    # freeze), the lost ones are the last rows written (by finish)
    assert min(i for i, r in enumerate(rows) if r.status == "late") < sink.rows_at_freeze[1]
    assert all(r.status == "lost" for r in rows[len(rows) - n["lost"]:])
