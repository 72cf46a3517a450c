"""The embedded KRaft cluster's SASL_SSL listener (``kafkalab cluster up --sasl-ssl``): the
path a user takes to a secured cluster of their own, proven on a real broker.

Each node gets a third listener, ``SASL_SSL://127.0.0.1:<sasl port + i>``: TLS with the
lab's own CA (:mod:`kafkalab.cluster.tls`) and SCRAM-SHA-512 for user :data:`SASL_USER`.
The PLAINTEXT listener stays for the brokers' own replication and the lab's readiness
checks. The password is the user's: read from ``$KAFKALAB_SASL_PASSWORD`` when the cluster
starts, handed to the brokers through the Admin API (``AlterUserScramCredentials``, in this
process: never on a command line, never written; the brokers keep only its salted SCRAM
form in their metadata log).

``cluster up --sasl-ssl`` writes an ``external`` descriptor, ``<lab>/cluster-sasl-ssl.yaml``
(name :data:`~kafkalab.cluster.state.SECURE_DESCRIPTOR_NAME`), which names the password's environment variable in
``secret_env`` exactly as a user's descriptor of their own cluster would.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kafkalab import procs
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.cluster.features import MODERN_PROTOCOL
from kafkalab.cluster.state import SECURE_DESCRIPTOR_NAME
from kafkalab.cluster.tls import TlsMaterial
from kafkalab.errors import ClusterError, ConfigError

__all__ = [
    "LISTENER",
    "PASSWORD_ENV",
    "SASL_MECHANISM",
    "SASL_USER",
    "check_ports",
    "listener_properties",
    "read_password",
    "secure_descriptor",
    "upsert_user",
]

SASL_USER = "kafkalab"
"""The one SCRAM user of the embedded cluster."""
SASL_MECHANISM = "SCRAM-SHA-512"
PASSWORD_ENV = "KAFKALAB_SASL_PASSWORD"
"""The environment variable holding that user's password (at ``cluster up`` and for every
client: the descriptor's ``secret_env``)."""
SCRAM_ITERATIONS = 8192
"""PBKDF2 iterations of the stored credential (Kafka accepts 4096..16384)."""


def read_password() -> str:
    """The SCRAM user's password from ``$KAFKALAB_SASL_PASSWORD``.

    Raises:
        ConfigError: it is not set (or empty).
    """
    value = os.environ.get(PASSWORD_ENV, "")
    if not value:
        raise ConfigError(f"--sasl-ssl: set {PASSWORD_ENV} to the password the SCRAM user "
                          f"{SASL_USER!r} gets (the lab never stores it)")
    return value


LISTENER = "SASL_SSL"
"""The listener's name (and security protocol) in ``listeners``."""


def listener_properties(tls: TlsMaterial) -> dict[str, Any]:
    """A node's settings for its SASL_SSL listener (the launcher adds the listener itself to
    ``listeners``, ``advertised.listeners`` and the security protocol map)."""
    prefix = f"listener.name.{LISTENER.lower()}"
    return {
        "sasl.enabled.mechanisms": SASL_MECHANISM,
        f"{prefix}.{SASL_MECHANISM.lower()}.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        f"{prefix}.ssl.keystore.type": "PKCS12",
        f"{prefix}.ssl.keystore.location": tls.keystore_path,
        f"{prefix}.ssl.keystore.password": tls.keystore_password,
        f"{prefix}.ssl.key.password": tls.keystore_password,
    }


def upsert_user(admin: Any, password: str, timeout_s: float = 30.0) -> None:
    """Create or replace the SCRAM-SHA-512 credential of :data:`SASL_USER` through ``admin``
    (an ``AdminClient`` on the PLAINTEXT listener).

    Raises:
        ClusterError: the brokers refused it (its reason).
    """
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, SCRAM_ITERATIONS)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion(SASL_USER, info, password.encode("utf-8"))])
    try:
        for f in futures.values():
            f.result(timeout=timeout_s)
    except Exception as exc:  # KafkaException or a timeout: one line, without the password
        raise ClusterError(f"--sasl-ssl: the brokers refused the SCRAM credential of "
                           f"{SASL_USER!r}: {type(exc).__name__}: {exc}") from None


def secure_descriptor(ports: list[int], ca_path: Path, version: str,
                      home: Path) -> ClusterDescriptor:
    """The ``external`` descriptor of the SASL_SSL listeners on ``ports``: what a user's own
    descriptor of a secured cluster looks like (no secret in it: ``secret_env``)."""
    return ClusterDescriptor(
        name=SECURE_DESCRIPTOR_NAME,
        flavor="external",
        protocol=MODERN_PROTOCOL,
        version=version,
        bootstrap_servers=",".join(f"{procs.HOST}:{p}" for p in ports),
        broker_count=len(ports),
        kafka_home=str(home),
        client_properties={
            "security.protocol": LISTENER,
            "sasl.mechanism": SASL_MECHANISM,
            "sasl.username": SASL_USER,
            "ssl.ca.location": str(ca_path),
        },
        secret_env={"sasl.password": PASSWORD_ENV},
    )


def check_ports(base: int, n: int, taken: list[int]) -> list[int]:
    """The SASL_SSL ports of ``n`` nodes from ``base``, none of them among ``taken`` (the
    nodes' other listeners).

    Raises:
        ClusterError: one overlaps.
    """
    ports = [base + i for i in range(n)]
    clash = sorted(set(ports) & set(taken))
    if clash:
        raise ClusterError(f"--sasl-ssl-port {base}: port {clash[0]} is also a broker or "
                           "controller port of this cluster")
    return ports
