"""YAML inputs with bounds (issue 26, "Inputs with bounds"): a YAML bomb, a huge, binary,
recursive or too deeply nested file, and a nested value where one value is meant are each a
ConfigError through the real loaders, and one line with exit 2 from the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.cluster.flavors import load_descriptor
from kafkalab.config import load_profile
from kafkalab.errors import ConfigError
from kafkalab.topics.model import TopicSpec
from kafkalab.yamlio import MAX_YAML_BYTES, read_yaml

REPO = Path(__file__).resolve().parents[2]

DESCRIPTOR_HEAD = """\
name: bounds
flavor: external
protocol: modern
bootstrap_servers: 127.0.0.1:9
broker_count: 1
"""

PROFILE_HEAD = "name: bounds\ngoal: default\n"


def laughs(indent: str = "  ") -> str:
    """Billion laughs: nine levels of nine aliases each (9**9 "lol"s once expanded)."""
    lines = [f'{indent}a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"{indent}{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = name
    return "\n".join(lines) + "\n"


def bomb_descriptor(tmp_path: Path) -> Path:
    p = tmp_path / "bomb-cluster.yaml"
    p.write_text(DESCRIPTOR_HEAD + "client_properties:\n" + laughs())
    assert p.stat().st_size < 600  # the 553 bytes, give or take
    return p


def bomb_profile(tmp_path: Path) -> Path:
    p = tmp_path / "bomb-profile.yaml"
    p.write_text(PROFILE_HEAD + "broker_assumptions:\n" + laughs())
    assert p.stat().st_size < 600
    return p


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``kafkalab`` entry point in a subprocess (no cluster is ever reached: every
    input here is refused before)."""
    return subprocess.run([sys.executable, "-m", "kafkalab.cli", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "KAFKALAB_HOME": str(tmp_path / "lab")})


def assert_one_line_exit_2(proc: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("kafkalab: error: ")
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr
    for word in expected:
        assert word in lines[0], lines[0]
    assert proc.stdout == ""


def test_a_bomb_descriptor_is_refused_at_the_loader(tmp_path: Path) -> None:
    p = bomb_descriptor(tmp_path)
    with pytest.raises(ConfigError) as ei:
        load_descriptor(p)
    message = str(ei.value)
    assert str(p) in message and "YAML bomb" in message and len(message) < 300


def test_a_bomb_profile_is_refused_at_the_loader(tmp_path: Path) -> None:
    p = bomb_profile(tmp_path)
    with pytest.raises(ConfigError, match="aliases expand past"):
        load_profile(str(p))


def test_bombs_through_the_cli_are_one_line_and_exit_2(tmp_path: Path) -> None:
    cluster = bomb_descriptor(tmp_path)
    proc = run_cli(tmp_path, "topics", "provision", "--workload", "images-quick",
                   "--profile", "default", "--cluster", str(cluster))
    assert_one_line_exit_2(proc, str(cluster), "YAML bomb")
    profile = bomb_profile(tmp_path)
    proc = run_cli(tmp_path, "topics", "provision", "--workload", "images-quick",
                   "--profile", str(profile), "--cluster", str(tmp_path / "none.yaml"))
    assert_one_line_exit_2(proc, str(profile), "YAML bomb")


@pytest.mark.parametrize(("body", "expected"), [
    ("a: &a [*a]\n", "an alias refers to a node that contains it"),
    ("a: &a {b: *a}\n", "an alias refers to a node that contains it"),
    ("a: " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
])
def test_recursive_and_deep_documents_are_refused(tmp_path: Path, body: str,
                                                  expected: str) -> None:
    p = tmp_path / "odd.yaml"
    p.write_text(body)
    with pytest.raises(ConfigError, match=expected):
        read_yaml(p)


def test_size_and_encoding_are_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"# " + b"x" * MAX_YAML_BYTES + b"\n")
    with pytest.raises(ConfigError, match="larger than 1 MiB"):
        read_yaml(big)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"name: x\n\xff\xfe\x00\x81 not text\n")
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        read_yaml(binary)
    proc = run_cli(tmp_path, "topics", "provision", "--workload", "images-quick",
                   "--profile", str(binary), "--cluster", str(tmp_path / "none.yaml"))
    assert_one_line_exit_2(proc, str(binary), "not UTF-8 text")
    proc = run_cli(tmp_path, "topics", "provision", "--workload", "images-quick",
                   "--profile", "default", "--cluster", str(big))
    assert_one_line_exit_2(proc, str(big), "larger than 1 MiB")


def test_anchors_within_bounds_still_load(tmp_path: Path) -> None:
    p = tmp_path / "anchors.yaml"
    p.write_text(DESCRIPTOR_HEAD.replace("bootstrap_servers: 127.0.0.1:9",
                                         "bootstrap_servers: &bs 127.0.0.1:9")
                 + "client_properties:\n  client.id: *bs\n"
                 + "  request.timeout.ms: &t 5000\n  metadata.max.age.ms: *t\n")
    d = load_descriptor(p)
    assert d.client_properties == {"client.id": "127.0.0.1:9", "request.timeout.ms": "5000",
                                   "metadata.max.age.ms": "5000"}


@pytest.mark.parametrize(("section", "value", "got"), [
    ("client_properties", "[1, 2]", "got a list"),
    ("client_properties", "{a: 1}", "got a dict"),
    ("client_properties", "", "got nothing (null)"),
])
def test_a_nested_descriptor_property_names_its_key(tmp_path: Path, section: str, value: str,
                                                    got: str) -> None:
    p = tmp_path / "nested.yaml"
    p.write_text(DESCRIPTOR_HEAD + f"{section}:\n  sasl.mechanism: {value}\n")
    with pytest.raises(ConfigError) as ei:
        load_descriptor(p)
    assert str(ei.value) == (
        f"cluster descriptor {p}: invalid {section}: 'sasl.mechanism': expected a single "
        f"value (text, a number or true/false), {got}")


def test_nested_servers_assumptions_and_topic_configs_are_refused(tmp_path: Path) -> None:
    servers = tmp_path / "servers.yaml"
    servers.write_text(DESCRIPTOR_HEAD.replace("bootstrap_servers: 127.0.0.1:9",
                                               "bootstrap_servers: [127.0.0.1:9, [a, b]]"))
    with pytest.raises(ConfigError, match="invalid bootstrap_servers: expected host:port"):
        load_descriptor(servers)
    profile = tmp_path / "nested-profile.yaml"
    profile.write_text(PROFILE_HEAD + "broker_assumptions:\n  min.insync.replicas: {a: [1]}\n")
    with pytest.raises(ConfigError) as ei:
        load_profile(str(profile))
    assert str(ei.value) == (
        f"{profile}: invalid broker_assumptions: 'min.insync.replicas': expected a single "
        "value (text, a number or true/false), got a dict")
    with pytest.raises(ValueError, match=r"'retention\.ms': expected a single value"):
        TopicSpec(name="t", configs={"retention.ms": [1, 2]})  # type: ignore[dict-item]
    # scalars are still text, as before
    assert TopicSpec(name="t", configs={"x": True, "y": 3}).configs == {"x": "true", "y": "3"}
