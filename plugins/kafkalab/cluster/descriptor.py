"""The cluster descriptor: how to reach a cluster (docs/metrics-schema.md, "Cluster descriptor").

This module is the model and the client configurations built from it; a descriptor read
from YAML is validated against the broker flavors at the edge
(:func:`kafkalab.cluster.flavors.load_descriptor`), where its ``flavor`` must be one the
lab knows and accept its ``protocol``.

Secrets never live in the descriptor: ``secret_env`` maps a librdkafka property to the
*name* of an environment variable; its value is read only when a client config is built
(:func:`librdkafka_config`, :func:`kafka_python_config`) and never logged or written (and
registered with Airflow's log masker in a task). What counts as a secret, and how a name
typed there is shown, is :mod:`kafkalab.redact`'s rule. Property values are scalars: a
nested list or mapping where one value is meant is refused, naming the key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from kafkalab.cluster.features import LEGACY_PROTOCOL, PROTOCOLS, kafka_features
from kafkalab.errors import ClusterError, ConfigError
from kafkalab.redact import env_name_problem, looks_secret, mask_in_airflow_logs, shown_env_name
from kafkalab.store import atomic_write
from kafkalab.yamlio import scalar_texts

EMULATOR_LABEL = "EMULATOR — not Kafka"
"""The label every table, chart and report shows beside a figure measured on an emulator
broker (``is_emulator``): its latencies say nothing about Apache Kafka."""


def emulator_note(d: ClusterDescriptor) -> str:
    """The one-line warning printed and logged when a run measures an emulator broker."""
    return f"{d.version} is an EMULATOR, not Apache Kafka: its latencies say nothing about Kafka"

__all__ = [
    "ClusterDescriptor",
    "jvm_classpath",
    "kafka_python_config",
    "librdkafka_config",
    "public_view",
    "resolve_kafka_home",
    "save_descriptor",
    "string_properties",
]


def string_properties(v: Any) -> Any:
    """Kafka properties as strings, as a validator sees them before checking: a mapping's
    keys and values become strings (``True`` -> ``"true"``, ``3`` -> ``"3"``); anything
    else is returned as given (for the validator to refuse).

    Raises:
        ValueError: a name or value that is not one scalar (a list, a mapping, nothing),
            naming the key but not quoting the value (:func:`kafkalab.yamlio.scalar_texts`).
    """
    return scalar_texts(v)


class ClusterDescriptor(BaseModel):
    """One cluster, exactly as the YAML in docs/metrics-schema.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "embedded"
    flavor: str
    """The broker flavor (:data:`kafkalab.cluster.flavors.FLAVORS`): checked where a
    descriptor is loaded."""
    protocol: str
    version: str = "unknown"
    is_emulator: bool = False
    bootstrap_servers: str
    broker_count: int = Field(ge=1)
    zookeeper: str | None = None
    kafka_home: str | None = None
    client_properties: dict[str, str] = Field(default_factory=dict)
    secret_env: dict[str, str] = Field(default_factory=dict)

    @field_validator("flavor")
    @classmethod
    def _flavor_name(cls, v: str) -> str:
        if not v or not all(c.isalnum() or c in "-_" for c in v):
            raise ValueError(f"{v!r} is not a flavor name")
        return v

    @field_validator("protocol")
    @classmethod
    def _known_protocol(cls, v: str) -> str:
        if v not in PROTOCOLS:
            raise ValueError(f"Input should be {' or '.join(repr(p) for p in PROTOCOLS)}")
        return v

    @field_validator("version", "name", mode="before")
    @classmethod
    def _stringify(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int | float) else v

    @field_validator("bootstrap_servers", mode="before")
    @classmethod
    def _join_servers(cls, v: Any) -> Any:
        if isinstance(v, list | tuple):
            if not all(isinstance(x, str | int) for x in v):
                raise ValueError("expected host:port entries (text), got a nested value")
            return ",".join(str(x).strip() for x in v)
        return v

    @field_validator("bootstrap_servers")
    @classmethod
    def _check_servers(cls, v: str) -> str:
        parts = [p.strip() for p in v.split(",") if p.strip()]
        if not parts:
            raise ValueError("must list at least one host:port")
        for p in parts:
            host, sep, port = p.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f"{p!r} is not host:port")
        return ",".join(parts)

    @field_validator("client_properties", mode="before")
    @classmethod
    def _stringify_props(cls, v: Any) -> Any:
        return string_properties(v)

    @field_validator("client_properties")
    @classmethod
    def _no_inline_secrets(cls, v: dict[str, str]) -> dict[str, str]:
        for key in v:
            if looks_secret(key):
                # never echo the value
                raise ValueError(
                    f"{key!r} is a secret: put the name of an environment variable in "
                    f"secret_env ({key}: ENV_VAR_NAME) instead of the value"
                )
        return v

    @field_validator("secret_env")
    @classmethod
    def _env_names(cls, v: dict[str, str]) -> dict[str, str]:
        for key, env in v.items():
            problem = env_name_problem(env)
            if problem:
                raise ValueError(f"{key!r}: the value {problem}")  # never echo the value
        return v

    @property
    def servers(self) -> list[str]:
        return self.bootstrap_servers.split(",")

    @property
    def is_legacy(self) -> bool:
        """Kafka 0.9's protocol (clients must be told the version: no ApiVersions)."""
        return self.protocol == LEGACY_PROTOCOL

    def kafka_home_path(self) -> Path | None:
        return Path(self.kafka_home) if self.kafka_home else None


# --------------------------------------------------------------------------- load / save


def resolve_kafka_home(raw: str, descriptor_path: Path) -> str:
    """A descriptor's ``kafka_home`` as an absolute path: as given when absolute, else the
    first of (the descriptor's folder, the project root) that holds a ``libs/`` folder."""
    p = Path(raw).expanduser()
    if p.is_absolute():
        return str(p)
    from kafkalab.paths import project_root

    candidates = [descriptor_path.parent / p, project_root() / p]
    for c in candidates:
        if (c / "libs").is_dir():
            return str(c.resolve())
    return str(candidates[1].resolve())


def save_descriptor(d: ClusterDescriptor, path: Path | str) -> Path:
    """Write ``d`` as YAML atomically (:func:`kafkalab.store.atomic_write`); returns the path."""
    p = Path(path)
    data = d.model_dump(mode="json")
    for key in ("zookeeper", "kafka_home"):
        if data.get(key) is None:
            data.pop(key, None)
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
    atomic_write(p, text)
    return p


# --------------------------------------------------------------------------- client configs


def _read_secrets(d: ClusterDescriptor) -> dict[str, str]:
    out: dict[str, str] = {}
    for prop, env in d.secret_env.items():
        value = os.environ.get(env)
        if not value:
            raise ConfigError(
                f"environment variable {shown_env_name(env)} is "
                f"{'empty' if value == '' else 'not set'} (cluster descriptor secret_env: {prop})"
            )
        out[prop] = value
    mask_in_airflow_logs(*out.values())
    return out


def librdkafka_config(d: ClusterDescriptor) -> dict[str, str]:
    """Properties for confluent-kafka clients (secrets resolved from the environment)."""
    conf: dict[str, str] = {"bootstrap.servers": d.bootstrap_servers}
    conf.update(d.client_properties)
    conf.update(_read_secrets(d))
    for k, v in kafka_features(d.protocol, None).librdkafka_defaults.items():
        conf.setdefault(k, v)
    return conf


_KP_DIRECT = {
    "security.protocol": "security_protocol",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.crl.location": "ssl_crlfile",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "client.id": "client_id",
}
_KP_INT = {
    "request.timeout.ms": "request_timeout_ms",
    "reconnect.backoff.ms": "reconnect_backoff_ms",
    "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "metadata.max.age.ms": "metadata_max_age_ms",
    "socket.connection.setup.timeout.ms": "socket_connection_timeout_ms",
}


def kafka_python_config(d: ClusterDescriptor) -> dict[str, Any]:
    """Keyword arguments for kafka-python clients (KafkaProducer/KafkaConsumer/KafkaAdminClient).

    Maps the security settings kafka-python understands (PLAIN / SCRAM-SHA-256/512 /
    GSSAPI, SSL CA / certificate / key); other librdkafka-only properties are ignored.
    """
    props = dict(d.client_properties)
    props.update(_read_secrets(d))
    conf: dict[str, Any] = {"bootstrap_servers": d.servers}
    api_version = kafka_features(d.protocol, None).kafka_python_api_version
    if api_version is not None:
        conf["api_version"] = api_version
    for src, dst in _KP_DIRECT.items():
        if src in props:
            conf[dst] = props[src]
    for src, dst in _KP_INT.items():
        if src in props:
            try:
                conf[dst] = int(props[src])
            except ValueError:
                raise ConfigError(
                    f"cluster descriptor client_properties.{src} must be an integer"
                ) from None
    if "security_protocol" in conf:
        conf["security_protocol"] = str(conf["security_protocol"]).upper()
    mech = props.get("sasl.mechanism") or props.get("sasl.mechanisms")
    if mech:
        mech = mech.strip().upper()
        if mech not in {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER"}:
            raise ConfigError(
                f"cluster descriptor client_properties.sasl.mechanism={mech} is not supported by kafka-python"
            )
        conf["sasl_mechanism"] = mech
    algo = props.get("ssl.endpoint.identification.algorithm")
    if algo is not None and algo.strip().lower() in {"", "none"}:
        conf["ssl_check_hostname"] = False
    verify = props.get("enable.ssl.certificate.verification")
    if verify is not None and verify.strip().lower() == "false":
        conf["ssl_check_hostname"] = False
    return conf


def public_view(d: ClusterDescriptor) -> dict[str, Any]:
    """What manifests and logs may show: no secret values, only env var names."""
    return {
        "name": d.name,
        "flavor": d.flavor,
        "protocol": d.protocol,
        "version": d.version,
        "is_emulator": d.is_emulator,
        "bootstrap_servers": d.bootstrap_servers,
        "broker_count": d.broker_count,
        "zookeeper": d.zookeeper,
        "kafka_home": d.kafka_home,
        "client_properties": {k: v for k, v in d.client_properties.items() if not looks_secret(k)},
        "secret_env": dict(d.secret_env),
    }


# --------------------------------------------------------------------------- JVM


_EXCLUDED_JAR_PARTS = ("-javadoc", "-scaladoc", "-sources", "-test")


def jvm_classpath(kafka_home: Path | str) -> str:
    """Classpath of a Kafka installation: libs/*.jar minus docs, sources and test jars."""
    libs = Path(kafka_home) / "libs"
    if not libs.is_dir():
        raise ClusterError(f"no Kafka installation at {kafka_home}: {libs} is missing")
    jars = sorted(
        str(p.resolve())
        for p in libs.iterdir()
        if p.suffix == ".jar" and not any(part in p.name for part in _EXCLUDED_JAR_PARTS)
    )
    if not jars:
        raise ClusterError(f"no jars in {libs}")
    return os.pathsep.join(jars)
