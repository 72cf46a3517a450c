"""Topic provisioning on the lab clusters (idempotent).

- ``modern`` protocol (noida, external modern Kafka): confluent-kafka AdminClient
  (create_topics / describe_configs / incremental_alter_configs / create_partitions).
- ``legacy-0.9`` (Kafka 0.9 has no CreateTopics API): Kafka's own
  ``kafka.admin.TopicCommand --zookeeper`` from the descriptor's ``kafka_home``.

After create/alter, :func:`provision_topics` waits until metadata shows a leader for every
partition, so a producer can start right away.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kafkalab.cluster.descriptor import ClusterDescriptor, jvm_classpath, librdkafka_config
from kafkalab.errors import ClusterError, ConfigError

__all__ = ["TopicSpec", "delete_topics", "describe_topic", "provision_topics"]

Progress = Callable[[str], None]

_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
#: message.max.bytes of the embedded kafka09 brokers (see cluster/embedded.py)
EMBEDDED_MESSAGE_MAX_BYTES = 16777216
#: Kafka 0.9's default message.max.bytes
KAFKA09_DEFAULT_MESSAGE_MAX_BYTES = 1000012


def _noop(_msg: str) -> None:
    pass


class TopicSpec(BaseModel):
    """A topic as a profile wants it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    partitions: int = Field(default=1, ge=1)
    replication_factor: int = Field(default=1, ge=1)
    configs: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _valid_name(cls, v: str) -> str:
        if not _TOPIC_RE.match(v) or v in (".", ".."):
            raise ValueError(f"{v!r} is not a valid Kafka topic name ([A-Za-z0-9._-], 1-249 chars)")
        return v

    @field_validator("configs", mode="before")
    @classmethod
    def _stringify(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {
                str(k): (str(x).lower() if isinstance(x, bool) else str(x)) for k, x in v.items()
            }
        return v


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _check_specs(descriptor: ClusterDescriptor, specs: list[TopicSpec]) -> None:
    seen: set[str] = set()
    for s in specs:
        if s.name in seen:
            raise ConfigError(f"topic {s.name!r} is listed twice")
        seen.add(s.name)
        if s.replication_factor > descriptor.broker_count:
            raise ConfigError(
                f"profile asks for replication.factor={s.replication_factor} (topic {s.name}) "
                f"but the cluster has {_plural(descriptor.broker_count, 'broker')}"
            )


# --------------------------------------------------------------------------- metadata


def _admin(descriptor: ClusterDescriptor) -> Any:
    from confluent_kafka.admin import AdminClient

    conf: dict[str, Any] = dict(librdkafka_config(descriptor))
    conf.setdefault("log_level", 3)
    return AdminClient(conf)


def _topic_metadata(admin: Any, name: str, timeout: float) -> Any | None:
    """TopicMetadata of ``name`` or None when the cluster does not know it."""
    from confluent_kafka import KafkaError, KafkaException

    try:
        # all topics: asking 0.9 for one unknown topic trips librdkafka's Metadata v0 parser
        md = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(f"cannot read metadata from the cluster: {exc.args[0]}") from None
    tm = md.topics.get(name)
    if tm is None:
        return None
    if tm.error is not None and tm.error.code() in (
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_TOPIC,
    ):
        return None
    return tm


def _wait_for_leaders(
    descriptor: ClusterDescriptor, name: str, partitions: int, timeout_s: float
) -> None:
    admin = _admin(descriptor)
    deadline = time.monotonic() + timeout_s
    last = "unknown to the cluster"
    while True:
        remaining = deadline - time.monotonic()
        try:
            tm = _topic_metadata(admin, name, timeout=min(5.0, max(0.5, remaining)))
        except ClusterError as exc:
            tm, last = None, str(exc)
        if tm is not None:
            parts = tm.partitions
            leaderless = [p for p, pm in parts.items() if pm.leader < 0]
            if len(parts) >= partitions and not leaderless:
                return
            last = (
                f"{len(parts)} of {partitions} partitions known, leaderless: {sorted(leaderless)}"
            )
        if remaining <= 0:
            raise ClusterError(
                f"topic {name} on {descriptor.bootstrap_servers} has no leader for every "
                f"partition after {timeout_s:.0f} s ({last})"
            )
        time.sleep(0.1)


def _partition_details(tm: Any) -> list[dict[str, Any]]:
    return [
        {
            "partition": p,
            "leader": pm.leader,
            "replicas": list(pm.replicas),
            "isr": list(pm.isrs),
        }
        for p, pm in sorted(tm.partitions.items())
    ]


# --------------------------------------------------------------------------- legacy (0.9)


def _legacy_tools(descriptor: ClusterDescriptor) -> tuple[str, str, Path]:
    if not descriptor.zookeeper or not descriptor.kafka_home:
        raise ClusterError(
            f"topic admin on Kafka 0.9 ({descriptor.bootstrap_servers}) goes through ZooKeeper "
            "with Kafka's own TopicCommand: the cluster descriptor needs `zookeeper` and "
            "`kafka_home` (a Kafka installation with libs/)"
        )
    from kafkalab.cluster.distribution import ensure_java

    home = Path(descriptor.kafka_home)
    return ensure_java(), jvm_classpath(home), home


def _topic_command(descriptor: ClusterDescriptor, args: list[str], timeout_s: float) -> str:
    java, cp, home = _legacy_tools(descriptor)
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
        "kafka.admin.TopicCommand",
        "--zookeeper",
        str(descriptor.zookeeper),
        *args,
    ]
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
        raise ClusterError(
            f"kafka.admin.TopicCommand {' '.join(args[:3])} timed out (ZooKeeper {descriptor.zookeeper})"
        ) from None
    out = proc.stdout + proc.stderr
    err_line = next(
        (ln.strip() for ln in out.splitlines() if "Error while executing topic command" in ln), None
    )
    if proc.returncode != 0 or err_line:
        msg = err_line or (out.strip().splitlines() or ["no output"])[-1]
        msg = msg.replace("Error while executing topic command : ", "")
        if "Unknown configuration" in msg or "Invalid" in msg or "larger than available" in msg:
            raise ConfigError(f"kafka.admin.TopicCommand refused {' '.join(args[:3])}: {msg}")
        raise ClusterError(
            f"kafka.admin.TopicCommand {' '.join(args[:3])} failed (ZooKeeper "
            f"{descriptor.zookeeper}): {msg}"
        )
    return proc.stdout


_HEADER_RE = re.compile(
    r"^Topic:\s*(?P<name>\S+)\s+PartitionCount:\s*(?P<p>\d+)\s+ReplicationFactor:\s*(?P<rf>\d+)\s+Configs:\s*(?P<configs>.*)$"
)


def _legacy_describe_all(
    descriptor: ClusterDescriptor, timeout_s: float
) -> dict[str, dict[str, Any]]:
    out = _topic_command(descriptor, ["--describe"], timeout_s)
    topics: dict[str, dict[str, Any]] = {}
    for line in out.splitlines():
        m = _HEADER_RE.match(line.strip())
        if not m:
            continue
        configs: dict[str, str] = {}
        for item in m["configs"].strip().split(","):
            if "=" in item:
                k, _, v = item.partition("=")
                configs[k.strip()] = v.strip()
        topics[m["name"]] = {
            "partitions": int(m["p"]),
            "replication_factor": int(m["rf"]),
            "configs": configs,
        }
    return topics


def _literal_topic_regex(name: str) -> str:
    # TopicCommand's --alter/--describe/--delete treat --topic as a regex (0.9 Whitelist)
    return name.replace(".", "[.]")


def _provision_legacy(
    descriptor: ClusterDescriptor, specs: list[TopicSpec], timeout_s: float, progress: Progress
) -> list[dict[str, Any]]:
    existing = _legacy_describe_all(descriptor, timeout_s)
    results = []
    for s in specs:
        cur = existing.get(s.name)
        if cur is None:
            args = [
                "--create",
                "--topic",
                s.name,
                "--partitions",
                str(s.partitions),
                "--replication-factor",
                str(s.replication_factor),
            ]
            for k, v in s.configs.items():
                args += ["--config", f"{k}={v}"]
            progress(
                f"creating topic {s.name} ({s.partitions} partitions, rf={s.replication_factor})"
            )
            _topic_command(descriptor, args, timeout_s)
            results.append(
                {
                    "topic": s.name,
                    "action": "created",
                    "detail": f"partitions={s.partitions} replication_factor={s.replication_factor}"
                    + "".join(f" {k}={v}" for k, v in s.configs.items()),
                }
            )
        else:
            _refuse_shrink_or_rf(descriptor, s, cur["partitions"], cur["replication_factor"])
            changes = []
            differing = {k: v for k, v in s.configs.items() if cur["configs"].get(k) != v}
            if differing:
                args = ["--alter", "--topic", _literal_topic_regex(s.name)]
                for k, v in differing.items():
                    args += ["--config", f"{k}={v}"]
                progress(f"altering configs of topic {s.name}: {differing}")
                _topic_command(descriptor, args, timeout_s)
                changes += [f"{k}: {cur['configs'].get(k)} -> {v}" for k, v in differing.items()]
            if s.partitions > cur["partitions"]:
                progress(f"adding partitions to {s.name}: {cur['partitions']} -> {s.partitions}")
                _topic_command(
                    descriptor,
                    [
                        "--alter",
                        "--topic",
                        _literal_topic_regex(s.name),
                        "--partitions",
                        str(s.partitions),
                    ],
                    timeout_s,
                )
                changes.append(f"partitions: {cur['partitions']} -> {s.partitions}")
            results.append(
                {
                    "topic": s.name,
                    "action": "altered" if changes else "exists",
                    "detail": "; ".join(changes) if changes else "matches the spec",
                }
            )
        _wait_for_leaders(descriptor, s.name, s.partitions, timeout_s)
    return results


# --------------------------------------------------------------------------- modern


def _refuse_shrink_or_rf(
    descriptor: ClusterDescriptor, s: TopicSpec, partitions: int, rf: int
) -> None:
    if partitions > s.partitions:
        raise ConfigError(
            f"topic {s.name} on {descriptor.bootstrap_servers} has {partitions} partitions but the "
            f"profile asks for {s.partitions}: Kafka cannot reduce partitions; delete the topic "
            "or use another name"
        )
    if rf != s.replication_factor:
        raise ConfigError(
            f"topic {s.name} on {descriptor.bootstrap_servers} has replication.factor={rf} but the "
            f"profile asks for {s.replication_factor}: it cannot be changed in place; delete the "
            "topic or use another name"
        )


def _result(fut: Any, what: str, timeout_s: float) -> Any:
    from confluent_kafka import KafkaException

    try:
        return fut.result(timeout=timeout_s + 5)
    except KafkaException as exc:
        raise ClusterError(f"{what} failed: {exc.args[0].str()}") from None
    except TimeoutError:
        raise ClusterError(f"{what} timed out after {timeout_s:.0f} s") from None


def _modern_configs(admin: Any, name: str, timeout_s: float) -> dict[str, Any]:
    from confluent_kafka.admin import ConfigResource, ResourceType

    res = ConfigResource(ResourceType.TOPIC, name)
    futs = admin.describe_configs([res], request_timeout=timeout_s)
    return _result(next(iter(futs.values())), f"describe_configs({name})", timeout_s)


def _modern_alter(
    admin: Any, name: str, changes: dict[str, str], entries: dict[str, Any], timeout_s: float
) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        ResourceType,
    )

    res = ConfigResource(
        ResourceType.TOPIC,
        name,
        incremental_configs=[
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
            for k, v in changes.items()
        ],
    )
    try:
        futs = admin.incremental_alter_configs([res], request_timeout=timeout_s)
        next(iter(futs.values())).result(timeout=timeout_s + 5)
        return
    except KafkaException as exc:
        err = exc.args[0]
        if err.code() not in (
            err.UNSUPPORTED_VERSION,
            err._UNSUPPORTED_FEATURE,
            err.INVALID_REQUEST,
        ):
            raise ClusterError(f"altering configs of topic {name} failed: {err.str()}") from None
    # fallback: AlterConfigs replaces the whole set: keep the topic's other overrides
    keep = {
        k: e.value
        for k, e in entries.items()
        if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value and e.value is not None
    }
    keep.update(changes)
    futs = admin.alter_configs(
        [ConfigResource(ResourceType.TOPIC, name, set_config=keep)], request_timeout=timeout_s
    )
    _result(next(iter(futs.values())), f"alter_configs({name})", timeout_s)


def _provision_modern(
    descriptor: ClusterDescriptor, specs: list[TopicSpec], timeout_s: float, progress: Progress
) -> list[dict[str, Any]]:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewPartitions, NewTopic

    admin = _admin(descriptor)
    results = []
    for s in specs:
        tm = _topic_metadata(admin, s.name, timeout=timeout_s)
        created = False
        if tm is None:
            progress(
                f"creating topic {s.name} ({s.partitions} partitions, rf={s.replication_factor})"
            )
            futs = admin.create_topics(
                [
                    NewTopic(
                        s.name,
                        num_partitions=s.partitions,
                        replication_factor=s.replication_factor,
                        config=dict(s.configs),
                    )
                ],
                operation_timeout=timeout_s,
                request_timeout=timeout_s,
            )
            try:
                futs[s.name].result(timeout=timeout_s + 5)
                created = True
            except KafkaException as exc:
                err = exc.args[0]
                if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    tm = None  # created concurrently: compare below
                elif err.code() in (
                    KafkaError.INVALID_REPLICATION_FACTOR,
                    KafkaError.INVALID_CONFIG,
                    KafkaError.INVALID_PARTITIONS,
                    KafkaError.POLICY_VIOLATION,
                ):
                    raise ConfigError(
                        f"the cluster ({descriptor.bootstrap_servers}) refused topic {s.name}: {err.str()}"
                    ) from None
                else:
                    raise ClusterError(
                        f"creating topic {s.name} on {descriptor.bootstrap_servers} failed: {err.str()}"
                    ) from None
        if created:
            results.append(
                {
                    "topic": s.name,
                    "action": "created",
                    "detail": f"partitions={s.partitions} replication_factor={s.replication_factor}"
                    + "".join(f" {k}={v}" for k, v in s.configs.items()),
                }
            )
            _wait_for_leaders(descriptor, s.name, s.partitions, timeout_s)
            continue
        if tm is None:
            _wait_for_leaders(descriptor, s.name, 1, timeout_s)
            tm = _topic_metadata(admin, s.name, timeout=timeout_s)
            assert tm is not None
        partitions = len(tm.partitions)
        rf = len(next(iter(tm.partitions.values())).replicas) if tm.partitions else 0
        _refuse_shrink_or_rf(descriptor, s, partitions, rf)
        changes = []
        if s.configs:
            entries = _modern_configs(admin, s.name, timeout_s)
            differing = {
                k: v for k, v in s.configs.items() if k not in entries or entries[k].value != v
            }
            if differing:
                progress(f"altering configs of topic {s.name}: {differing}")
                _modern_alter(admin, s.name, differing, entries, timeout_s)
                changes += [
                    f"{k}: {entries[k].value if k in entries else None} -> {v}"
                    for k, v in differing.items()
                ]
        if s.partitions > partitions:
            progress(f"adding partitions to {s.name}: {partitions} -> {s.partitions}")
            futs = admin.create_partitions(
                [NewPartitions(s.name, s.partitions)],
                operation_timeout=timeout_s,
                request_timeout=timeout_s,
            )
            _result(futs[s.name], f"create_partitions({s.name})", timeout_s)
            changes.append(f"partitions: {partitions} -> {s.partitions}")
        results.append(
            {
                "topic": s.name,
                "action": "altered" if changes else "exists",
                "detail": "; ".join(changes) if changes else "matches the spec",
            }
        )
        _wait_for_leaders(descriptor, s.name, s.partitions, timeout_s)
    return results


# --------------------------------------------------------------------------- public API


def provision_topics(
    descriptor: ClusterDescriptor,
    specs: Iterable[TopicSpec],
    timeout_s: float = 30,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Make the topics match ``specs``. Returns [{topic, action: created|exists|altered, detail}].

    Raises ConfigError (before sending anything) when a spec asks for more replicas than
    the cluster has brokers, and when an existing topic has more partitions or another
    replication factor than asked (Kafka cannot change those in place).
    """
    progress = progress or _noop
    spec_list = list(specs)
    _check_specs(descriptor, spec_list)
    if not spec_list:
        return []
    if descriptor.is_legacy:
        return _provision_legacy(descriptor, spec_list, timeout_s, progress)
    return _provision_modern(descriptor, spec_list, timeout_s, progress)


def describe_topic(
    descriptor: ClusterDescriptor, name: str, timeout_s: float = 30
) -> dict[str, Any]:
    """Partitions, replication factor, configs and the effective max message size of a topic.

    ``configs``: on modern clusters every effective config; on 0.9 only the topic's
    overrides (from ZooKeeper; ``None`` when no kafka_home/zookeeper is known).
    ``max_message_bytes``: the topic's max.message.bytes (0.9 without override: the
    broker's message.max.bytes — 16777216 on the embedded cluster, else Kafka's default).
    """
    admin = _admin(descriptor)
    tm = _topic_metadata(admin, name, timeout=timeout_s)
    if tm is None:
        raise ClusterError(f"topic {name} does not exist on {descriptor.bootstrap_servers}")
    details = _partition_details(tm)
    out: dict[str, Any] = {
        "topic": name,
        "partitions": len(details),
        "replication_factor": len(details[0]["replicas"]) if details else 0,
        "partition_details": details,
    }
    if descriptor.is_legacy:
        configs: dict[str, str] | None = None
        if descriptor.zookeeper and descriptor.kafka_home:
            configs = _legacy_describe_all(descriptor, timeout_s).get(name, {}).get("configs", {})
        out["configs"] = configs
        out["configs_scope"] = "topic overrides" if configs is not None else "unknown"
        if configs and "max.message.bytes" in configs:
            out["max_message_bytes"] = int(configs["max.message.bytes"])
            out["max_message_bytes_source"] = "topic"
        elif descriptor.flavor == "kafka09" and descriptor.name == "embedded":
            out["max_message_bytes"] = EMBEDDED_MESSAGE_MAX_BYTES
            out["max_message_bytes_source"] = "embedded broker message.max.bytes"
        else:
            out["max_message_bytes"] = KAFKA09_DEFAULT_MESSAGE_MAX_BYTES
            out["max_message_bytes_source"] = "assumed Kafka 0.9 default message.max.bytes"
    else:
        entries = _modern_configs(admin, name, timeout_s)
        out["configs"] = {k: e.value for k, e in entries.items() if e.value is not None}
        out["configs_scope"] = "effective"
        mmb = out["configs"].get("max.message.bytes")
        out["max_message_bytes"] = int(mmb) if mmb and mmb.isdigit() else None
        out["max_message_bytes_source"] = "topic (effective)" if mmb else None
    return out


def delete_topics(
    descriptor: ClusterDescriptor, names: Iterable[str], timeout_s: float = 30
) -> list[dict[str, Any]]:
    """Delete topics (missing ones are reported as ``absent``). Waits until metadata drops them."""
    names = list(names)
    admin = _admin(descriptor)
    results = []
    for name in names:
        if _topic_metadata(admin, name, timeout=timeout_s) is None:
            results.append({"topic": name, "action": "absent"})
            continue
        if descriptor.is_legacy:
            _topic_command(
                descriptor, ["--delete", "--topic", _literal_topic_regex(name)], timeout_s
            )
        else:
            futs = admin.delete_topics(
                [name], operation_timeout=timeout_s, request_timeout=timeout_s
            )
            _result(futs[name], f"delete_topics({name})", timeout_s)
        deadline = time.monotonic() + timeout_s
        while _topic_metadata(admin, name, timeout=5) is not None:
            if time.monotonic() > deadline:
                raise ClusterError(f"topic {name} still exists {timeout_s:.0f} s after deletion")
            time.sleep(0.2)
        results.append({"topic": name, "action": "deleted"})
    return results
