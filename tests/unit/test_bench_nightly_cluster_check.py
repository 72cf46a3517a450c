"""Bench part (e) refuses, in one line and before the DAG starts, when the cluster is not there.

No broker, Spark or Airflow runs here: the descriptor is missing, or names a closed port.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest

from kafkalab.cluster.descriptor import ClusterDescriptor, save_descriptor
from kafkalab.errors import ClusterError

HINT = 'run "kafkalab cluster up" first'


def _closed_port() -> int:
    """A port in 45000-45999 on 127.0.0.1 that refuses connections (45871 unless taken)."""
    for port in (*range(45871, 46000), *range(45000, 45871)):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return port
    pytest.skip("every port in 45000-45999 accepts connections")


@pytest.fixture
def no_dag(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record (and refuse) any attempt to start the DAG."""
    calls: list[Any] = []

    def dags_test(*args: Any, **kwargs: Any) -> int:
        calls.append((args, kwargs))
        raise AssertionError("the DAG must not start without a cluster")

    monkeypatch.setattr("kafkalab.airflow.launcher.dags_test", dags_test)
    return calls


def test_bench_nightly_without_a_descriptor_is_refused_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        no_dag: list[Any]) -> None:
    from tools.bench.__main__ import main

    lab = tmp_path / "lab"
    monkeypatch.setenv("KAFKALAB_HOME", str(lab))
    out = tmp_path / "result.json"
    assert main(["--only", "nightly", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bench: error: nightly: no cluster at {lab / 'cluster.yaml'}; {HINT}"]
    result = json.loads(out.read_text())
    assert result["error"] == f"nightly: no cluster at {lab / 'cluster.yaml'}; {HINT}"
    assert "nightly" not in result
    assert no_dag == []


def test_bench_nightly_refusal_keeps_the_results_of_earlier_parts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        no_dag: list[Any]) -> None:
    import tools.bench.spark as spark
    from tools.bench.__main__ import main

    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path / "lab"))
    monkeypatch.setattr(spark, "bench_aggregation", lambda *a, **k: [{"rows": 1}])
    monkeypatch.setattr(spark, "goals", lambda results: [{"goal": "g", "met": True}])
    monkeypatch.setattr(spark, "format_results", lambda results: ["spark figures"])
    out = tmp_path / "result.json"
    assert main(["--only", "spark,nightly", "--out", str(out)]) == 1
    result = json.loads(out.read_text())
    assert result["spark_aggregation"] == [{"rows": 1}]
    assert result["error"].startswith("nightly: no cluster at ")
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert no_dag == []


def test_bench_nightly_with_brokers_that_do_not_answer_is_refused(
        tmp_path: Path, no_dag: list[Any]) -> None:
    from tools.bench.nightly import check_nightly_cluster

    port = _closed_port()
    path = save_descriptor(ClusterDescriptor(
        flavor="kafka09", protocol="legacy-0.9", version="0.9.0.1",
        bootstrap_servers=f"127.0.0.1:{port}", broker_count=1), tmp_path / "cluster.yaml")
    with pytest.raises(ClusterError) as exc_info:
        check_nightly_cluster(path, timeout_s=1.0)
    message = str(exc_info.value)
    assert message == (f"nightly: the cluster of {path} does not answer (cannot reach Kafka at "
                       f"127.0.0.1:{port} within 1 s (KafkaException)); {HINT}")
    assert "\n" not in message
    assert no_dag == []


def test_bench_nightly_run_checks_before_it_makes_anything(
        tmp_path: Path, no_dag: list[Any]) -> None:
    from tools.bench.nightly import bench_nightly_run

    work = tmp_path / "nightly"
    missing = tmp_path / "nowhere" / "cluster.yaml"
    with pytest.raises(ClusterError, match=rf"^nightly: no cluster at {re.escape(str(missing))}; "):
        bench_nightly_run(work, descriptor_path=missing)
    assert not work.exists()
    assert no_dag == []
