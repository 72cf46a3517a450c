"""The one way to reach a cluster's admin API: a confluent-kafka ``AdminClient`` built from a
cluster descriptor (secrets resolved from the environment by :func:`librdkafka_config`).

The client is built on demand (``confluent_kafka`` is imported inside the function, never at
import time); it connects lazily, on its first request.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from kafkalab.cluster.descriptor import ClusterDescriptor, librdkafka_config
from kafkalab.errors import ClusterError, ConfigError

__all__ = ["admin_client", "check_reachable", "unreachable_line"]

_MIN_CONNECT_TIMEOUT_MS = 1000
"""librdkafka refuses ``socket.connection.setup.timeout.ms`` below 1 s."""


def admin_client(
    descriptor: ClusterDescriptor, timeout_s: float | None = None, *, quiet: bool = False,
    error_cb: Callable[[Any], None] | None = None,
) -> Any:
    """An ``AdminClient`` for ``descriptor``.

    Args:
        descriptor: the cluster to reach.
        timeout_s: when given, a connection attempt gives up after this long
            (``socket.connection.setup.timeout.ms``, at least 1 s).
        quiet: no librdkafka log at all (``log_level=0``): for polling a cluster that is
            still starting, where "Connection refused" is expected. Otherwise only errors are
            logged (``log_level=3``) unless the descriptor's client properties say otherwise.
        error_cb: called with each client-level ``KafkaError`` (failed authentication, TLS
            handshake, all brokers down) when the client is polled.
    """
    from confluent_kafka.admin import AdminClient

    conf: dict[str, Any] = dict(librdkafka_config(descriptor))
    if timeout_s is not None:
        conf["socket.connection.setup.timeout.ms"] = str(
            max(_MIN_CONNECT_TIMEOUT_MS, int(timeout_s * 1000))
        )
    if quiet:
        conf["log_level"] = "0"
    else:
        conf.setdefault("log_level", "3")
    if error_cb is not None:
        conf["error_cb"] = error_cb
    return AdminClient(conf)


def check_reachable(descriptor: ClusterDescriptor, timeout_s: float = 10.0) -> int:
    """Ask the cluster for metadata; returns the broker count or fails naming the address.

    A refused login or a failed TLS handshake fails at once (no retry fixes them); anything
    else is retried until ``timeout_s``.

    Raises:
        ClusterError: one line (:func:`unreachable_line`): the credentials were refused, the
            TLS handshake failed, the client configuration is invalid, or ``cannot reach
            Kafka at <bootstrap> within <N> s``.
        ConfigError: a secret's environment variable (``secret_env``) is not set.
    """
    seen: list[Any] = []
    try:
        admin = admin_client(descriptor, timeout_s, quiet=True, error_cb=seen.append)
    except ConfigError:
        raise
    except Exception as exc:  # librdkafka refused a client property
        raise ClusterError(f"the client configuration of {descriptor.bootstrap_servers} is "
                           f"invalid: {exc}") from None
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            meta = admin.list_topics(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            return len(meta.brokers)
        except Exception as exc:
            with contextlib.suppress(Exception):
                admin.poll(0)  # serves the client's errors (refused login, TLS) to error_cb
            if time.monotonic() >= deadline or any(_is_final(e) for e in seen):
                raise ClusterError(unreachable_line(descriptor, timeout_s, exc, seen)) from None


_AUTHENTICATION = "_AUTHENTICATION"
_SSL = "_SSL"


def _is_final(error: Any) -> bool:
    """A client error no retry fixes: refused credentials, a failed TLS handshake."""
    return hasattr(error, "name") and error.name() in (_AUTHENTICATION, _SSL)


def unreachable_line(descriptor: ClusterDescriptor, timeout_s: float, exc: BaseException,
                     errors: list[Any]) -> str:
    """The one line saying why ``descriptor``'s cluster did not answer: refused credentials,
    a TLS handshake that failed (an untrusted CA), or no answer at all. Never a secret: the
    password's environment variable is named, not its value."""
    where = descriptor.bootstrap_servers
    props = descriptor.client_properties
    for e in errors:
        name = e.name() if hasattr(e, "name") else ""
        reason = e.str() if hasattr(e, "str") else str(e)
        if name == _AUTHENTICATION:
            user = props.get("sasl.username", "?")
            mech = props.get("sasl.mechanism") or props.get("sasl.mechanisms") or "SASL"
            env = descriptor.secret_env.get("sasl.password")
            hint = f"check the password in ${env}" if env else "check the credentials"
            return f"Kafka at {where} refused user {user!r} ({mech}): {hint}"
        if name == _SSL:
            ca = props.get("ssl.ca.location")
            hint = (f"is ssl.ca.location ({ca}) the CA that signed the brokers' certificates?"
                    if ca else "set ssl.ca.location to the CA that signed the brokers' "
                    "certificates")
            detail = "certificate verify failed" if "verify failed" in reason else \
                reason.split(":")[0]
            return f"TLS handshake with Kafka at {where} failed ({detail}): {hint}"
    return (f"cannot reach Kafka at {where} within {timeout_s:.0f} s "
            f"({type(exc).__name__})")
