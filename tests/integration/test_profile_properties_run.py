"""A profile's Kafka properties on the real embedded Kafka 4.x (KRaft; zstd on 0.9.0.1): both clients run with
them, the topic gets its configs, the manifest records what each client was given and the
settings section shows where each value came from; zstd is refused before anything runs."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from kafkalab.cluster.descriptor import ClusterDescriptor, save_descriptor
from kafkalab.paths import include_dir
from kafkalab.report.settings_section import settings_section
from kafkalab.store import LabData
from kafkalab.topics import describe_topic

KAFKALAB = [sys.executable, "-m", "kafkalab.cli"]


def _kafkalab(*args: str, include: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if include is not None:
        env["KAFKALAB_INCLUDE_DIR"] = str(include)
    return subprocess.run([*KAFKALAB, *args], capture_output=True, text=True,
                          cwd=tempfile.gettempdir(), env=env, timeout=600)


def _include_with(tmp: Path, profile: Path) -> Path:
    """An include folder whose profiles/ holds ``profile`` only (a run names a profile by
    name: its cells' files are named after it), the rest the project's own."""
    include = tmp / "include"
    (include / "profiles").mkdir(parents=True)
    for part in ("workloads", "images", "drift.yaml"):
        (include / part).symlink_to(include_dir() / part)
    (include / "profiles" / profile.name).write_text(profile.read_text())
    return include


@pytest.fixture(scope="module")
def descriptor_file(kraft_cluster: ClusterDescriptor,
                    tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("desc") / "kraft.yaml"
    save_descriptor(kraft_cluster, path)
    return path


@pytest.fixture(scope="module")
def kafka09_descriptor_file(kafka09_cluster: ClusterDescriptor,
                            tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The legacy tier: Kafka 0.9.0.1, which has no zstd."""
    path = tmp_path_factory.mktemp("desc") / "kafka09.yaml"
    save_descriptor(kafka09_cluster, path)
    return path


def _profile(tmp: Path, name: str, **extra: object) -> Path:
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "goal": "latency", **extra}))
    return path


def test_properties_reach_both_clients_and_the_topic(
        kraft_cluster: ClusterDescriptor, descriptor_file: Path, tmp_path: Path) -> None:
    profile = _profile(
        tmp_path, "itest-props",
        producer_properties={"client.id": "kafkalab-itest", "request.timeout.ms": 20000},
        consumer_properties={"heartbeat.interval.ms": 1000, "check.crcs": True},
        topic_configs={"retention.ms": 600000})
    data = tmp_path / "data"
    proc = _kafkalab("run", "--scenario", "kafka-python,confluent-kafka", "--payload", "1kb",
                     "--profile", "itest-props", "--messages", "4", "--warmup", "1",
                     "--run-id", "itest-props", "--cluster", str(descriptor_file),
                     "--data-dir", str(data), include=_include_with(tmp_path, profile))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = LabData(data).manifest("itest-props")
    assert m is not None and m["status"] == "complete"
    c = m["client_settings"]["confluent-kafka/itest-props"]
    assert c["producer.client.id"] == "kafkalab-itest"
    assert c["producer.request.timeout.ms"] == "20000"
    assert c["consumer.heartbeat.interval.ms"] == "1000" and c["consumer.check.crcs"] == "true"
    k = m["client_settings"]["kafka-python/itest-props"]
    assert k["producer.client_id"] == "kafkalab-itest"
    assert k["consumer.heartbeat_interval_ms"] == "1000" and k["consumer.check_crcs"] == "true"
    topic = describe_topic(kraft_cluster, "klab-images-http-vs-kafka-itest-props")
    assert topic["configs"]["retention.ms"] == "600000"
    html = settings_section(m)
    assert "producer_properties client.id" in html and "retention.ms=600000" in html


def test_zstd_is_refused_on_0_9_before_anything_runs(kafka09_descriptor_file: Path,
                                                     tmp_path: Path) -> None:
    profile = _profile(tmp_path, "itest-zstd", producer={"compression": "zstd"})
    proc = _kafkalab("run", "--scenario", "confluent-kafka", "--payload", "1kb",
                     "--profile", str(profile), "--cluster", str(kafka09_descriptor_file),
                     "--data-dir", str(tmp_path / "data"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("kafkalab: error: profile itest-zstd: compression zstd "
                                   "needs Kafka 2.1 or later (produce API v7); the cluster is "
                                   "Kafka 0.9.0.1")
    assert not (tmp_path / "data" / "runs").exists()
