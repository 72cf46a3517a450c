"""``kafkalab faults``: bad input is one line and exit 2, before any cluster is started."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--fault", "sigkill"], "--fault: Input should be 'none', 'sigkill-leader'"),
        (["--profile", "default", "--fault", "kill-follower"], "needs a follower, but profile default has replication factor 1"),
        (["--fault", "sigstop-leader", "--duration", "12"], "too short for sigstop-leader"),
        (["--fault-at", "1", "--warmup", "2"], "inside the warm-up"),
        (["--rate", "0"], "--rate: Input should be greater than 0"),
        (["--trials", "0"], "--trials must be at least 1"),
        (["--profile", "nosuch"], "nosuch"),
        (["--fault", "kill-consumer", "--consumers", "4", "--partitions", "2"],
         "partitions=2 is fewer than the group's 4 consumers"),
        (["--fault", "kill-consumer", "--duration", "10"], "too short for kill-consumer"),
        (["--fault", "leave-consumer", "--rejoin-after", "30", "--duration", "20"], "too short for leave-consumer"),
        (["--fault", "sigkill-leader", "--commit", "after"], "--commit applies to the consumer faults"),
        (["--fault", "kill-consumer", "--commit", "sometimes"], "--commit: Input should be 'auto', 'after' or 'before'"),
        (["--fault", "leave-consumer", "--session-timeout-ms", "500"],
         "--session-timeout-ms: Input should be greater than or equal to 1000"),
        (["--fault", "kill-consumer", "--session-timeout-ms", "3000", "--heartbeat-ms", "3000"],
         "--heartbeat-ms=3000 must be shorter than --session-timeout-ms=3000"),
        (["--max-in-flight", "9"], "--max-in-flight: Input should be less than or equal to 5"),
        (["--client", "kafka-go"], "--client: unknown client 'kafka-go'"),
        (["--idempotence", "maybe"], "--idempotence: 'maybe' is not on or off"),
        (["--fault", "sigkill-leader", "--static-membership", "on"],
         "--static-membership applies to the consumer faults"),
        (["--fault", "kill-consumer", "--static-membership", "yes"],
         "--static-membership: 'yes' is not on or off"),
        (["--fault", "sigkill-leader", "--rebalance", "cooperative"],
         "--rebalance applies to the consumer faults"),
        (["--fault", "kill-consumer", "--rebalance", "sticky"],
         "--rebalance: Input should be 'eager', 'cooperative' or 'consumer'"),
        (["--fault", "kill-consumer", "--client", "kafka-python", "--rebalance", "consumer"],
         "kafka-python has no KIP-848 consumer protocol"),
        (["--profile", "default", "--idempotence", "on"],
         "profile default with idempotence on: producer: producer_properties sets "
         "enable.idempotence=true, which needs acks=all"),
    ],
)
def test_bad_fault_input_is_one_line_and_starts_nothing(
        args: list[str], expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """In this process (the console script's own path is tested in test_bad_inputs.py): ports
    that can never be taken, so a check that came too late would fail to start anything."""
    from kafkalab.cli import main

    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path / "lab"))
    monkeypatch.setenv("KAFKALAB_FAULTS_CONTROL_PORT", "1")
    monkeypatch.setenv("KAFKALAB_FAULTS_BASE_PORT", "1")
    try:
        code = main(["faults", "run", *args, "--data-dir", str(tmp_path / "data")])
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    assert code == 2, captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], captured.err
    assert "Traceback" not in captured.err and not captured.out.strip()
    assert not (tmp_path / "lab" / "faults").exists() and not (tmp_path / "data" / "faults").exists()


def _profile_file(tmp_path: Path, name: str, extra: str) -> Path:
    """A copy of the default profile (compressed with zstd when ``extra`` is empty) under
    ``name`` with ``extra`` YAML appended."""
    from kafkalab.paths import include_dir

    text = (include_dir() / "profiles" / "default.yaml").read_text()
    if not extra:
        text = text.replace("compression: none", "compression: zstd", 1)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text.replace("name: default", f"name: {name}", 1) + extra)
    return path


@pytest.mark.parametrize(
    ("command", "extra", "args", "expected"),
    [
        (["faults", "run"], "producer_properties: {max.block.ms: 1000}\n", [],
         "'max.block.ms' is not supported by confluent-kafka"),
        (["load"], "producer_properties: {max.block.ms: 1000}\n", [],
         "'max.block.ms' is not supported by confluent-kafka"),
    ],
)
def test_a_profile_the_client_or_the_broker_cannot_take_is_refused_before_anything_starts(
        command: list[str], extra: str, args: list[str], expected: str, tmp_path: Path) -> None:
    """The load and fault paths run the same profile checks as ``kafkalab run``: a property
    the client does not know is one line and exit 2 before a broker is started or a byte
    sent. (What a broker cannot take — zstd on Kafka 0.9 — is checked against the cluster's
    descriptor: ``tests/unit/test_profile_properties.py``.)"""
    profile = _profile_file(tmp_path, "custom", extra)
    env = {**os.environ, "KAFKALAB_HOME": str(tmp_path / "lab"),
           "KAFKALAB_FAULTS_CONTROL_PORT": "1", "KAFKALAB_FAULTS_BASE_PORT": "1"}
    proc = subprocess.run([sys.executable, "-m", "kafkalab.cli", *command, "--profile",
                           str(profile), *args, "--data-dir", str(tmp_path / "data")],
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "lab" / "faults").exists() and not (tmp_path / "data" / "faults").exists()
