"""The one AdminClient factory and the reachability check (no broker: nothing listens)."""

from __future__ import annotations

import socket

import pytest

from kafkalab.cluster.admin import admin_client, check_reachable
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.errors import ClusterError, ConfigError


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _descriptor(**extra: object) -> ClusterDescriptor:
    return ClusterDescriptor(
        flavor="noida",
        protocol="modern",
        bootstrap_servers=f"127.0.0.1:{_closed_port()}",
        broker_count=1,
        **extra,  # type: ignore[arg-type]
    )


def test_unreachable_cluster_is_named() -> None:
    d = _descriptor()
    with pytest.raises(
        ClusterError,
        match=rf"^cannot reach Kafka at {d.bootstrap_servers} within 1 s \(KafkaException\)$",
    ):
        check_reachable(d, timeout_s=1.0)


def test_missing_secret_is_a_config_error_not_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKALAB_TEST_NO_SUCH_SECRET", raising=False)
    d = _descriptor(secret_env={"sasl.password": "KAFKALAB_TEST_NO_SUCH_SECRET"})
    with pytest.raises(ConfigError, match="KAFKALAB_TEST_NO_SUCH_SECRET is not set"):
        check_reachable(d, timeout_s=1.0)
    with pytest.raises(ConfigError):
        admin_client(d)
