"""The one AdminClient factory and the reachability check (no broker: nothing listens)."""

from __future__ import annotations

import socket

import pytest

from kafkalab.cluster.admin import admin_client, check_reachable, unreachable_line
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.errors import ClusterError, ConfigError


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _descriptor(**extra: object) -> ClusterDescriptor:
    return ClusterDescriptor(
        flavor="external",
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


def test_an_empty_secret_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKALAB_TEST_EMPTY_SECRET", "")
    d = _descriptor(secret_env={"sasl.password": "KAFKALAB_TEST_EMPTY_SECRET"})
    with pytest.raises(ConfigError, match="KAFKALAB_TEST_EMPTY_SECRET is empty"):
        check_reachable(d, timeout_s=1.0)


class _Err:
    """What librdkafka hands an ``error_cb``: a KafkaError's name() and str()."""

    def __init__(self, name: str, text: str) -> None:
        self._name, self._text = name, text

    def name(self) -> str:
        return self._name

    def str(self) -> str:
        return self._text


SECURED = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
           "sasl.username": "alice", "ssl.ca.location": "/etc/ca.pem"}


def test_refused_credentials_name_the_user_and_the_variable_not_the_value() -> None:
    d = _descriptor(client_properties=SECURED, secret_env={"sasl.password": "ALICE_PW"})
    errors = [_Err("_ALL_BROKERS_DOWN", "1/1 brokers are down"),
              _Err("_AUTHENTICATION", "SASL authentication error: Authentication failed "
                   "during authentication due to invalid credentials with SASL mechanism "
                   "SCRAM-SHA-512")]
    line = unreachable_line(d, 10.0, RuntimeError("x"), errors)
    assert line == (f"Kafka at {d.bootstrap_servers} refused user 'alice' (SCRAM-SHA-512): "
                    "check the password in $ALICE_PW")


def test_an_untrusted_ca_names_the_ca_file() -> None:
    d = _descriptor(client_properties=SECURED, secret_env={"sasl.password": "ALICE_PW"})
    errors = [_Err("_SSL", "ssl://127.0.0.1:1/bootstrap: SSL handshake failed: error:0A000086:"
                   "SSL routines::certificate verify failed: broker certificate could not be "
                   "verified")]
    line = unreachable_line(d, 10.0, RuntimeError("x"), errors)
    assert line == (f"TLS handshake with Kafka at {d.bootstrap_servers} failed (certificate "
                    "verify failed): is ssl.ca.location (/etc/ca.pem) the CA that signed the "
                    "brokers' certificates?")
    assert "\n" not in line


def test_no_client_error_is_the_plain_timeout() -> None:
    d = _descriptor()
    assert unreachable_line(d, 3.0, RuntimeError("x"), []) == \
        f"cannot reach Kafka at {d.bootstrap_servers} within 3 s (RuntimeError)"
