"""Kafka 0.9's own topic tool, ``kafka.admin.TopicCommand --zookeeper``: running it and
reading its output.

Kafka 0.9 has no CreateTopics API: topic admin goes through ZooKeeper with the tool from the
descriptor's ``kafka_home``, run as ``java -cp <libs>`` (its ``bin/*.sh`` fail on Java 17).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kafkalab.cluster.descriptor import ClusterDescriptor, jvm_classpath
from kafkalab.cluster.flavors import flavor_of
from kafkalab.cluster.java import ensure_java
from kafkalab.errors import ClusterError, ConfigError

__all__ = [
    "TopicDescription",
    "command_error",
    "literal_topic_regex",
    "parse_describe",
    "run_topic_command",
]

_ERROR_PREFIX = "Error while executing topic command"
_REFUSALS = ("Unknown configuration", "Invalid", "larger than available")
"""Error texts that mean the request was wrong (ConfigError), not the cluster."""

_HEADER_RE = re.compile(
    r"^Topic:\s*(?P<name>\S+)\s+PartitionCount:\s*(?P<p>\d+)\s+ReplicationFactor:\s*(?P<rf>\d+)\s+Configs:\s*(?P<configs>.*)$"
)


@dataclass(frozen=True)
class TopicDescription:
    """A topic as ``TopicCommand --describe`` prints it (configs: the topic's overrides)."""

    partitions: int
    replication_factor: int
    configs: dict[str, str]


def parse_describe(out: str) -> dict[str, TopicDescription]:
    """The topics of ``TopicCommand --describe`` output, by name.

    Only the header line of each topic is read (``Topic:<name> PartitionCount:<n>
    ReplicationFactor:<rf> Configs:<k=v,...>``); the per-partition lines are skipped.
    """
    topics: dict[str, TopicDescription] = {}
    for line in out.splitlines():
        m = _HEADER_RE.match(line.strip())
        if not m:
            continue
        configs: dict[str, str] = {}
        for item in m["configs"].strip().split(","):
            if "=" in item:
                k, _, v = item.partition("=")
                configs[k.strip()] = v.strip()
        topics[m["name"]] = TopicDescription(int(m["p"]), int(m["rf"]), configs)
    return topics


def literal_topic_regex(name: str) -> str:
    """``name`` as a regex matching only itself: TopicCommand's ``--alter``, ``--describe``
    and ``--delete`` treat ``--topic`` as a regex (0.9 Whitelist); ``.`` is the only
    regex character a topic name can hold."""
    return name.replace(".", "[.]")


def _legacy_tools(descriptor: ClusterDescriptor) -> tuple[str, str, Path, str]:
    """``(java, classpath, kafka_home, TopicCommand's class)`` of the descriptor's cluster.

    Raises:
        ClusterError: no ``zookeeper``/``kafka_home``, or a distribution without the tool.
    """
    if not descriptor.zookeeper or not descriptor.kafka_home:
        raise ClusterError(
            f"topic admin on Kafka 0.9 ({descriptor.bootstrap_servers}) goes through ZooKeeper "
            "with Kafka's own TopicCommand: the cluster descriptor needs `zookeeper` and "
            "`kafka_home` (a Kafka installation with libs/)"
        )
    tool = flavor_of(descriptor).features(descriptor).tools.topic_command
    if tool is None:
        raise ClusterError(f"Kafka {descriptor.version}'s distribution has no TopicCommand "
                           "with --zookeeper")
    home = Path(descriptor.kafka_home)
    return ensure_java(), jvm_classpath(home), home, tool


def command_error(out: str, returncode: int) -> str | None:
    """What went wrong according to TopicCommand's output, None when it succeeded (it can
    print an error and still exit 0)."""
    err_line = next((ln.strip() for ln in out.splitlines() if _ERROR_PREFIX in ln), None)
    if returncode == 0 and not err_line:
        return None
    msg = err_line or (out.strip().splitlines() or ["no output"])[-1]
    return msg.replace(f"{_ERROR_PREFIX} : ", "")


def run_topic_command(descriptor: ClusterDescriptor, args: list[str], timeout_s: float) -> str:
    """Run ``TopicCommand --zookeeper <descriptor.zookeeper> <args>``; its stdout.

    Raises:
        ClusterError: no ``zookeeper``/``kafka_home`` in the descriptor, a timeout (at least
            30 s: the JVM starts cold), or a failure of the cluster.
        ConfigError: the request was refused (unknown config, invalid value, more replicas
            than brokers).
    """
    java, cp, home, tool = _legacy_tools(descriptor)
    log4j = home / "config" / "tools-log4j.properties"
    cmd = [
        java,
        "-Xmx256m",
        "-XX:TieredStopAtLevel=1",
        "-Djava.net.preferIPv4Stack=true",
        "-Djava.awt.headless=true",
        f"-Dlog4j.configuration=file:{log4j}",
        "-cp",
        cp,
        tool,
        "--zookeeper",
        str(descriptor.zookeeper),
        *args,
    ]
    what = f"kafka.admin.TopicCommand {' '.join(args[:3])}"
    try:
        proc = subprocess.run(
            cmd,
            input="y\n",  # 0.9 asks "Are you sure?" for rf>1 with a large max.message.bytes
            capture_output=True,
            text=True,
            timeout=max(30.0, timeout_s),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ClusterError(f"{what} timed out (ZooKeeper {descriptor.zookeeper})") from None
    msg = command_error(proc.stdout + proc.stderr, proc.returncode)
    if msg is not None:
        if any(r in msg for r in _REFUSALS):
            raise ConfigError(f"kafka.admin.TopicCommand refused {' '.join(args[:3])}: {msg}")
        raise ClusterError(f"{what} failed (ZooKeeper {descriptor.zookeeper}): {msg}")
    return proc.stdout
