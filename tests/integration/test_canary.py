"""``kafkalab canary`` against a real 3-node KRaft cluster, scraped by a real Prometheus
(Debian's ``prometheus``, started here on loopback), and ``kafkalab export prometheus``'s file
through a real node_exporter's textfile collector.

Ports (their own, below the ephemeral range): the cluster's brokers 23100-23102 and
controllers 23110-23112, the canary's /metrics 23120, Prometheus 23121, node_exporter 23122.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from kafkalab.cluster import ClusterDescriptor, cluster_down, cluster_up
from kafkalab.cluster.admin import admin_client
from kafkalab.cluster.descriptor import save_descriptor
from kafkalab.cluster.embedded import kill_broker
from kafkalab.cluster.state import read_state
from kafkalab.paths import include_dir
from tests.export_lab import build_export_lab
from tests.labs import prepare_lab

pytestmark = pytest.mark.integration

CANARY_BASE_PORT, CANARY_CONTROL_PORT = 23100, 23110
CANARY_METRICS_PORT, CANARY_PROMETHEUS_PORT, CANARY_NODE_EXPORTER_PORT = 23120, 23121, 23122
REPO = Path(__file__).resolve().parents[2]
RULES = include_dir() / "prometheus" / "kafkalab-canary-rules.yml"
DASHBOARD = include_dir() / "grafana" / "kafkalab.json"



class Query:
    """Instant queries against the test's Prometheus."""

    def __init__(self, base: str) -> None:
        self.base = base

    def __call__(self, expr: str) -> list[dict[str, Any]]:
        doc = requests.get(f"{self.base}/api/v1/query", params={"query": expr}, timeout=10).json()
        assert doc["status"] == "success", (expr, doc)
        return list(doc["data"]["result"])


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, ClusterDescriptor]]:
    lab = prepare_lab(tmp_path_factory.mktemp("canary-lab"))
    try:
        yield lab, cluster_up("kraft", 3, lab_dir=lab, base_port=CANARY_BASE_PORT,
                              control_port=CANARY_CONTROL_PORT)
    finally:
        cluster_down(lab)


@contextmanager
def prometheus(tmp: Path, targets: dict[str, int], rules: list[Path]) -> Iterator[Query]:
    """A real Prometheus on 127.0.0.1 scraping ``targets`` (job -> port) every second and
    evaluating ``rules`` every second; yields an instant-query function."""
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "rule_files": [str(r) for r in rules],
              "scrape_configs": [{"job_name": job, "static_configs": [
                  {"targets": [f"127.0.0.1:{port}"]}]} for job, port in targets.items()]}
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    log = (tmp / "prometheus.log").open("w")
    proc = subprocess.Popen(["prometheus", f"--config.file={tmp / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{CANARY_PROMETHEUS_PORT}",
                             "--log.level=warn"], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{CANARY_PROMETHEUS_PORT}"
    try:
        _until(lambda: _ok(f"{base}/-/ready"), 60, "Prometheus ready")
        yield Query(base)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _ok(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _until(check: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Poll ``check`` until it returns something truthy (returned) or fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.5)


def _summary(out: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads((out / "summary.json").read_text()))
    except (OSError, ValueError):
        return None


def _broker(summary: dict[str, Any], broker: int) -> dict[str, Any]:
    return next(b for b in summary["brokers"] if b["broker"] == str(broker))


def _leaders(d: ClusterDescriptor, topic: str) -> dict[int, int]:
    md = admin_client(d).list_topics(topic, timeout=10)
    return {p: part.leader for p, part in md.topics[topic].partitions.items()}


def _panels(canary: bool) -> dict[str, list[str]]:
    """The dashboard's panels (title -> queries) of the canary row or the others, with
    Grafana's variables as a query at "All" would have them."""
    dash = json.loads(DASHBOARD.read_text())
    out = {}
    for panel in dash["panels"]:
        exprs = [re.sub(r"\$[a-z]+\b", ".*", t["expr"].replace("$__rate_interval", "1m"))
                 for t in panel.get("targets", [])]
        if exprs and any("kafkalab_canary_" in e for e in exprs) == canary:
            out[panel["title"]] = exprs
    return out


def _stopped_broker_p99(out: Path, broker: int) -> dict[str, Any] | None:
    summary = _summary(out)
    lat = _broker(summary, broker)["e2e_latency"] if summary else None
    return lat if lat and lat["p99_ms"] is not None and lat["p99_ms"] >= 1500 else None


def test_the_canary_sees_a_stalled_and_a_dead_broker_and_prometheus_reads_it(
        three: tuple[Path, ClusterDescriptor], tmp_path: Path) -> None:
    lab, d = three
    desc = save_descriptor(d, tmp_path / "cluster.yaml")
    out = tmp_path / "canary"
    # a canary topic of an older cluster: brokers 0 and 1 lead a partition, 2 none
    from confluent_kafka.admin import NewTopic

    admin = admin_client(d)
    admin.create_topics([NewTopic("kafkalab-canary", 2, replica_assignment=[[0, 1, 2], [1, 2, 0]])])[
        "kafkalab-canary"].result(timeout=30)
    env = {**os.environ, "KAFKALAB_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": os.pathsep.join(
        [str(REPO / "plugins"), str(REPO)])}
    # acks=1: a dead broker's partition fails, the others' writes do not wait for it (with
    # acks=all every partition it follows waits until it is fenced: docs/canary.md)
    canary = subprocess.Popen(
        [sys.executable, "-m", "kafkalab.cli", "canary", "--cluster", str(desc), "--acks", "1",
         "--interval-ms", "50", "--warmup-s", "3", "--report-interval-s", "1",
         "--metrics-port", str(CANARY_METRICS_PORT), "--duration", "300", "--hdr-log",
         "--out", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with prometheus(tmp_path / "prom", {"kafkalab-canary": CANARY_METRICS_PORT},
                        [RULES]) as query:
            _run_faults(lab, d, out, query)
            canary.send_signal(signal.SIGTERM)  # a service manager's stop
            stdout, stderr = canary.communicate(timeout=120)
    finally:
        if canary.poll() is None:
            canary.kill()
            canary.wait()
    assert canary.returncode == 0, stderr
    summary = _summary(out)
    assert summary and summary["status"] == "stopped" and summary["stop_reason"] == "signal SIGTERM"
    assert summary["cluster"]["version"] == d.version and summary["warmup_records"] > 0
    assert "records sent" in stdout
    assert "3 partitions, brokers [0, 1, 2] (a partition added for brokers [2])" in stderr
    _check_hdr_log(out / "latency.hlog")


def _run_faults(lab: Path, d: ClusterDescriptor, out: Path, query: Query) -> None:
    leaders = _until(lambda: (got := _leaders(d, "kafkalab-canary")) and len(got) == 3 and got,
                     60, "the canary's partition for broker 2")
    assert sorted(leaders.values()) == [0, 1, 2]  # a partition led by every broker
    _until(lambda: (s := _summary(out)) and all(
        b["e2e_latency"]["n"] >= 100 for b in s["brokers"] if b["broker"] != "unknown")
        and len(s["brokers"]) >= 3, 60, "100 records per broker")
    stalled, dead = leaders[1], leaders[2]
    state = read_state(lab)
    assert state is not None
    pid = next(p["pid"] for p in state["processes"] if p["role"] == "broker" and p["id"] == stalled)
    os.kill(pid, signal.SIGSTOP)
    time.sleep(2.0)
    os.kill(pid, signal.SIGCONT)
    # the records intended during the stall wait for it: measured from their intended time
    lat = _until(lambda: _stopped_broker_p99(out, stalled), 30, "the stalled broker's p99")
    assert lat["n"] >= 100 and lat["p99_ms"] >= 1500, lat
    before = _summary(out)
    assert before is not None
    kill_broker(lab, dead, signal.SIGKILL)
    moved = _until(lambda: _moved(out, dead), 90, "partition 2 acked on a new leader")
    # its partition's sends failed, or were acked only after the failover, past the produce
    # deadline (summary.json is rewritten every second: wait for the one after the move)
    after = _until(lambda: (s := _summary(out)) and _broker(s, dead)["produce_acked"] < _broker(
        s, dead)["produce_attempts"] and s["leader_changes"].get("2", 0) >= 1 and s, 30,
        "the dead leader's failed sends and the producer seeing its partition move")
    for b in (0, 1, 2):
        if b != dead:  # the live leaders' writes never failed
            row = _broker(after, b)
            assert row["produce_acked"] == row["produce_attempts"] > 0, row
    assert moved  # partition 2 recovered: records sent to its new leader were acked
    _check_prometheus(query, dead)
    # the broker comes back and a preferred-leader election moves partition 2 home: a
    # leadership move on purpose, counted apart from the latency SLO
    cluster_up("kraft", 3, lab_dir=lab, base_port=CANARY_BASE_PORT, control_port=CANARY_CONTROL_PORT)
    assert _until(lambda: _gauge("kafkalab_canary_brokers_leading_none") == 1, 60,
                  "the restarted broker leading nothing")
    _until(lambda: _elect_preferred(d, 2), 60, "partition 2 led by its preferred leader again")
    back = _until(lambda: (s := _summary(out)) and s["leader_changes"].get("2", 0) >= 2 and s,
                  30, "the producer seeing the move back")
    assert _until(lambda: _gauge("kafkalab_canary_brokers_leading_none") == 0, 30,
                  "every broker leading its partition") is not None
    apart = sum(b["e2e_latency_leader_change"]["n"] for b in back["brokers"])
    assert apart > 0, back["brokers"]  # records across the moves, kept out of the SLO's histogram


def _gauge(name: str) -> float | None:
    """A gauge of the canary's /metrics (None when unreadable)."""
    try:
        text = requests.get(f"http://127.0.0.1:{CANARY_METRICS_PORT}/metrics", timeout=5).text
    except requests.RequestException:
        return None
    m = re.search(rf"^{name} ([0-9.e+-]+)$", text, re.MULTILINE)
    return float(m.group(1)) if m else None


def _elect_preferred(d: ClusterDescriptor, partition: int) -> bool:
    """Ask for a preferred-leader election of the canary's ``partition``; True once its
    preferred leader leads it."""
    from confluent_kafka import ElectionType, KafkaException, TopicPartition

    admin = admin_client(d)
    with contextlib.suppress(KafkaException):  # not in the ISR yet, or already elected
        admin.elect_leaders(ElectionType.PREFERRED,
                            [TopicPartition("kafkalab-canary", partition)]).result(timeout=10)
    part = admin.list_topics("kafkalab-canary", timeout=10).topics["kafkalab-canary"].partitions[
        partition]
    return bool(part.leader == part.replicas[0])


def _moved(out: Path, dead: int) -> bool:
    """Partition 2 is acked again, on another leader (its counters in /metrics)."""
    try:
        text = requests.get(f"http://127.0.0.1:{CANARY_METRICS_PORT}/metrics", timeout=5).text
    except requests.RequestException:
        return False
    acked = re.findall(r'kafkalab_canary_produce_acked_total\{broker="(\d+)",partition="2"\} '
                       r"([0-9.e+]+)", text)
    return any(int(b) != dead and float(v) > 0 for b, v in acked)


def _check_prometheus(query: Query, dead: int) -> None:
    rules = yaml.safe_load(RULES.read_text())["groups"]
    recorded = [r["record"] for g in rules for r in g["rules"] if "record" in r]
    _until(lambda: all(query(name) for name in recorded), 60, "every recording rule's series")
    fast = next(r for g in rules for r in g["rules"]
                if r.get("alert") == "KafkaCanaryProduceAvailabilityFastBurn")
    firing = _until(lambda: query(fast["expr"]), 30, "the produce burn alert's condition")
    burning = {s["metric"]["broker"] for s in firing}
    # that broker, no other (records sent while the producer knew no leader are "unknown")
    assert str(dead) in burning and not burning & {"0", "1", "2"} - {str(dead)}, firing
    panels = _panels(canary=True)
    assert len(panels) == 6
    for title, exprs in panels.items():  # every canary panel has data
        assert any(query(e) for e in exprs), title
    doc = requests.get(f"{query.base}/api/v1/rules", timeout=10).json()
    health = {r["name"]: r["health"] for g in doc["data"]["groups"] for r in g["rules"]}
    assert len(health) == len(recorded) + sum(1 for g in rules for r in g["rules"] if "alert" in r)
    assert set(health.values()) == {"ok"}, health


def _check_hdr_log(path: Path) -> None:
    from hdrh.histogram import HdrHistogram
    from hdrh.log import HistogramLogReader

    reader = HistogramLogReader(str(path), HdrHistogram(1, 3_600_000_000, 3))
    tags, total = set(), 0
    while (hist := reader.get_next_interval_histogram()) is not None:
        tags.add(hist.get_tag())
        total += hist.get_total_count()
    assert {"broker-0", "broker-1", "broker-2"} <= tags and total > 300


def test_node_exporter_serves_the_export_to_prometheus_and_the_dashboard_finds_it(
        tmp_path: Path) -> None:
    data = build_export_lab(tmp_path / "data")
    textfiles = tmp_path / "textfile"
    env = {**os.environ, "KAFKALAB_DATA_DIR": str(data), "PYTHONPATH": os.pathsep.join(
        [str(REPO / "plugins"), str(REPO)])}
    subprocess.run([sys.executable, "-m", "kafkalab.cli", "export", "prometheus", "--out",
                    str(textfiles / "kafkalab.prom")], env=env, check=True, capture_output=True)
    exporter = subprocess.Popen(
        ["prometheus-node-exporter", "--collector.disable-defaults", "--collector.textfile",
         f"--collector.textfile.directory={textfiles}",
         f"--web.listen-address=127.0.0.1:{CANARY_NODE_EXPORTER_PORT}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with prometheus(tmp_path / "prom", {"node": CANARY_NODE_EXPORTER_PORT}, []) as query:
            _until(lambda: query('kafkalab_latency_p50_ms'), 60, "the export's series")
            panels = _panels(canary=False)
            assert len(panels) >= 8
            for title, exprs in panels.items():  # every panel finds the export's series
                assert any(query(e) for e in exprs), title
            mtime = query('node_textfile_mtime_seconds{file=~".*kafkalab.prom"}')
            assert mtime and float(mtime[0]["value"][1]) > 0
    finally:
        exporter.terminate()
        exporter.wait(timeout=30)
