"""The one way to reach a cluster's admin API: a confluent-kafka ``AdminClient`` built from a
cluster descriptor (secrets resolved from the environment by :func:`librdkafka_config`).

The client is built on demand (``confluent_kafka`` is imported inside the function, never at
import time); it connects lazily, on its first request.
"""

from __future__ import annotations

from typing import Any

from kafkalab.cluster.descriptor import ClusterDescriptor, librdkafka_config
from kafkalab.errors import ClusterError, ConfigError

__all__ = ["admin_client", "check_reachable"]

_MIN_CONNECT_TIMEOUT_MS = 1000
"""librdkafka refuses ``socket.connection.setup.timeout.ms`` below 1 s."""


def admin_client(
    descriptor: ClusterDescriptor, timeout_s: float | None = None, *, quiet: bool = False
) -> Any:
    """An ``AdminClient`` for ``descriptor``.

    Args:
        descriptor: the cluster to reach.
        timeout_s: when given, a connection attempt gives up after this long
            (``socket.connection.setup.timeout.ms``, at least 1 s).
        quiet: no librdkafka log at all (``log_level=0``): for polling a cluster that is
            still starting, where "Connection refused" is expected. Otherwise only errors are
            logged (``log_level=3``) unless the descriptor's client properties say otherwise.
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
    return AdminClient(conf)


def check_reachable(descriptor: ClusterDescriptor, timeout_s: float = 10.0) -> int:
    """Ask the cluster for metadata; returns the broker count or fails naming the address.

    Raises:
        ClusterError: ``cannot reach Kafka at <bootstrap> within <N> s (<exception type>)``.
        ConfigError: a secret's environment variable (``secret_env``) is not set.
    """
    try:
        meta = admin_client(descriptor, timeout_s, quiet=True).list_topics(timeout=timeout_s)
    except ConfigError:
        raise  # a secret's environment variable is missing: say so, not "cannot reach"
    except Exception as exc:
        raise ClusterError(
            f"cannot reach Kafka at {descriptor.bootstrap_servers} within {timeout_s:.0f} s "
            f"({type(exc).__name__})"
        ) from None
    return len(meta.brokers)
