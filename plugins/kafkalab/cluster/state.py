"""The embedded cluster's state file: what ``cluster up`` started, and the lock around it.

Layout under ``<lab_dir>/cluster/``:

- ``state.json``: one :class:`ClusterState` (flavor, broker count, ports, and one
  :class:`ProcessRecord` per process: pid, port, command line, log, ownership *marker*);
- ``.lock``: an ``flock`` held by ``up``, ``down`` and ``kill_broker`` while they read and
  change the state (two CLIs never start the same cluster twice);
- ``config/``, ``logs/``, ``data/``: written by the flavors' launchers
  (:mod:`kafkalab.cluster.flavors`);
- ``tls/``: the CA and broker keystore of a cluster started with a SASL_SSL listener
  (:mod:`kafkalab.cluster.tls`).

The descriptor of the running cluster goes to ``<lab_dir>/cluster.yaml``; that of its
SASL_SSL listener, when it has one, to ``<lab_dir>/cluster-sasl-ssl.yaml``. ``state.json`` is
written with :func:`kafkalab.store.atomic_write_json` (keys in insertion order).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

from kafkalab.paths import default_descriptor_path
from kafkalab.store import atomic_write_json

__all__ = [
    "SECURE_DESCRIPTOR_NAME",
    "ClusterState",
    "ProcessRecord",
    "cluster_dir",
    "descriptor_path",
    "locked",
    "now_iso",
    "read_state",
    "remove_state",
    "resolve_lab",
    "secure_descriptor_path",
    "state_path",
    "tls_dir",
    "write_state",
]

class ProcessRecord(TypedDict):
    """One process the cluster started, as recorded in ``state.json``."""

    role: str
    """``zookeeper``, ``broker`` (a KRaft node, broker and controller in one process, is
    ``broker``) or ``proxy`` (the link proxies of a cluster started with ``--links``)."""
    id: int | None
    """Broker id; None for ZooKeeper."""
    port: int
    """The port clients are told (and the readiness checks connect to)."""
    bound_port: NotRequired[int]
    """The port the process binds itself, when it is not ``port``: a node of a cluster with
    links (``port`` is its client proxy's, :mod:`kafkalab.cluster.links.layout`). What a stop
    waits to be released and a restart needs free (:func:`kafkalab.cluster.processes.
    own_port`)."""
    marker: str
    """A string one argument of the process's command line contains: ownership proof
    (a recycled pid never carries it)."""
    config: str | None
    log: str
    """stdout + stderr of the process."""
    logs_dir: str
    cmdline: list[str]
    cwd: str
    pid: int
    env: NotRequired[dict[str, str]]
    """Environment variables set over the lab's own when it was started (and restarted)."""


class ClusterState(TypedDict, total=False):
    """The whole ``state.json``."""

    version: int
    flavor: str
    brokers: int
    lab_dir: str
    started_at: str
    descriptor_path: str
    processes: list[ProcessRecord]
    kafka_home: str
    zookeeper_port: int
    """Where the flavor has ZooKeeper: its port."""
    broker_ports: list[int]
    kafka_version: str
    """A KRaft cluster: the Kafka release it runs."""
    cluster_id: str
    """A KRaft cluster: the id its directories were formatted with."""
    controller_ports: list[int]
    """A KRaft cluster: node i's controller listener (a voter of the quorum)."""
    sasl_ssl_ports: list[int]
    """A cluster started with ``--sasl-ssl``: node i's SASL_SSL listener."""
    broker_settings: dict[str, str]
    """A cluster started with ``--broker-setting``: those properties (kraft)."""
    tls_ca: str | None
    """A cluster started with ``--sasl-ssl``: the CA certificate its clients trust."""
    links: dict[str, Any]
    """A cluster started with ``--links``: its link layout (:class:`kafkalab.cluster.links.
    layout.LinkLayout`: nodes, base and control port, the proxies' API port)."""
    startup_s: float
    ready_at: str
    corrupt: bool


def now_iso() -> str:
    """The current UTC time, ISO 8601 (``started_at``, ``ready_at``)."""
    return datetime.now(UTC).isoformat()


def resolve_lab(lab_dir: Path | str | None) -> Path:
    """``lab_dir`` made absolute, or the lab's default (:func:`kafkalab.paths.lab_dir`)."""
    if lab_dir is None:
        from kafkalab.paths import lab_dir as default_lab_dir

        return default_lab_dir()
    return Path(lab_dir).expanduser().absolute()


def cluster_dir(lab: Path) -> Path:
    """``<lab>/cluster``: state, lock, configs, logs and data of the embedded cluster."""
    return lab / "cluster"


def state_path(lab: Path) -> Path:
    """``<lab>/cluster/state.json``."""
    return cluster_dir(lab) / "state.json"


def descriptor_path(lab: Path) -> Path:
    """``<lab>/cluster.yaml``: the descriptor of the running embedded cluster."""
    return default_descriptor_path(lab)


SECURE_DESCRIPTOR_NAME = "embedded-sasl-ssl"
"""The ``name`` of the descriptor at :func:`secure_descriptor_path` (an ``external`` one: it
is deleted with the cluster's state)."""


def secure_descriptor_path(lab: Path) -> Path:
    """``<lab>/cluster-sasl-ssl.yaml``: the descriptor of the running cluster's SASL_SSL
    listener (``cluster up --sasl-ssl``)."""
    return lab / "cluster-sasl-ssl.yaml"


def tls_dir(lab: Path) -> Path:
    """``<lab>/cluster/tls``: the CA and keystore of the cluster's SASL_SSL listener."""
    return cluster_dir(lab) / "tls"


def read_state(lab: Path) -> ClusterState | None:
    """The recorded state, None when there is none.

    An unreadable file gives a *corrupt* state with no processes: it is treated as stale
    (processes that cannot be verified are never signalled).
    """
    try:
        data = json.loads(state_path(lab).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"flavor": "unknown", "brokers": 0, "processes": [], "corrupt": True}
    return cast(ClusterState, data) if isinstance(data, dict) else None


def write_state(lab: Path, state: ClusterState) -> None:
    """Write ``state.json`` atomically (a reader sees the old or the new state)."""
    atomic_write_json(state_path(lab), state, sort_keys=False)


def remove_state(lab: Path, state: ClusterState | None,
                 is_embedded: Callable[[dict[str, Any]], bool]) -> None:
    """Forget the cluster: delete ``state.json`` and the descriptor(s) it wrote.

    A descriptor file is deleted only when ``is_embedded`` says its content describes an
    embedded cluster (a user's own descriptor at that path is left alone).
    """
    state_path(lab).unlink(missing_ok=True)
    paths = {descriptor_path(lab), secure_descriptor_path(lab)}
    if state and state.get("descriptor_path"):
        paths.add(Path(state["descriptor_path"]))
    for p in paths:
        if p.is_file() and is_embedded(_yaml_mapping(p)):
            p.unlink(missing_ok=True)


def _yaml_mapping(p: Path) -> dict[str, Any]:
    """The YAML mapping in ``p`` (read, bounded, by :func:`kafkalab.yamlio.read_yaml`);
    empty when unreadable, too large or not a mapping."""
    from kafkalab.errors import ConfigError
    from kafkalab.yamlio import read_yaml

    try:
        return read_yaml(p)
    except ConfigError:
        return {}


@contextlib.contextmanager
def locked(lab: Path) -> Iterator[None]:
    """Hold the cluster's lock (``<lab>/cluster/.lock``, exclusive ``flock``) for the block."""
    d = cluster_dir(lab)
    d.mkdir(parents=True, exist_ok=True)
    with (d / ".lock").open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
