"""Reading Kafka 0.9's ``TopicCommand`` output (no broker, no JVM)."""

from __future__ import annotations

import re

from kafkalab.topics.topic_command import (
    TopicDescription,
    command_error,
    literal_topic_regex,
    parse_describe,
)

# captured from kafka.admin.TopicCommand --describe on the embedded 0.9.0.1 cluster
DESCRIBE_OUT = (
    "Topic:lat.a-b\tPartitionCount:2\tReplicationFactor:1\t"
    "Configs:max.message.bytes=2000000,retention.ms=60000\n"
    "\tTopic: lat.a-b\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\n"
    "\tTopic: lat.a-b\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0\n"
    "Topic:plain\tPartitionCount:1\tReplicationFactor:1\tConfigs:\n"
    "\tTopic: plain\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\n"
)


def test_describe_reads_every_topic_header() -> None:
    assert parse_describe(DESCRIBE_OUT) == {
        "lat.a-b": TopicDescription(
            partitions=2,
            replication_factor=1,
            configs={"max.message.bytes": "2000000", "retention.ms": "60000"},
        ),
        "plain": TopicDescription(partitions=1, replication_factor=1, configs={}),
    }


def test_describe_three_replicas_and_noise() -> None:
    out = (
        "[2026-01-01 00:00:00,000] WARN some log4j line (org.I0Itec.zkclient.ZkClient)\n"
        "Topic:lat.rf3\tPartitionCount:1\tReplicationFactor:3\t"
        "Configs:min.insync.replicas=2, max.message.bytes=10485760\n"
        "\tTopic: lat.rf3\tPartition: 0\tLeader: 1\tReplicas: 1,2,0\tIsr: 1,2,0\n"
    )
    got = parse_describe(out)
    assert list(got) == ["lat.rf3"]
    assert got["lat.rf3"].replication_factor == 3
    # spaces around the items are not part of keys or values
    assert got["lat.rf3"].configs == {"min.insync.replicas": "2", "max.message.bytes": "10485760"}


def test_describe_of_nothing() -> None:
    assert parse_describe("") == {}
    assert parse_describe("\tTopic: x\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\n") == {}


def test_error_line_wins_even_with_exit_code_zero() -> None:
    out = (
        'Error while executing topic command : requirement failed: Unknown configuration "no.such".\n'
        "[2026-01-01 00:00:00,000] ERROR java.lang.IllegalArgumentException: requirement failed\n"
    )
    assert command_error(out, 0) == 'requirement failed: Unknown configuration "no.such".'


def test_failure_without_error_line_is_the_last_output_line() -> None:
    assert command_error("starting\nException in thread main: boom\n", 1) == (
        "Exception in thread main: boom"
    )
    assert command_error("", 1) == "no output"


def test_success() -> None:
    assert command_error(DESCRIBE_OUT, 0) is None
    assert command_error('Created topic "lat.x".\n', 0) is None


def test_literal_topic_regex_matches_only_the_name() -> None:
    pattern = re.compile(literal_topic_regex("lat.a-b.c"))
    assert pattern.fullmatch("lat.a-b.c")
    assert not pattern.fullmatch("latxa-bxc")  # a bare "." would match any character
    assert literal_topic_regex("plain") == "plain"
