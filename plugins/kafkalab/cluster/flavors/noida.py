"""Flavor ``noida``: the noida-db emulator (modern Kafka protocol, single node, *not* Kafka).

Runs the binary shipped inside the ``noida-db`` wheel, bound to 127.0.0.1. Files under
``<lab_dir>/cluster/``: ``logs/noida/stdout.log`` and ``data/noida/`` (its data directory,
which is also its ownership marker). Every figure measured on it is labelled EMULATOR.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
from pathlib import Path

from kafkalab import procs
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.cluster.features import MODERN_PROTOCOL
from kafkalab.cluster.flavors.base import EmbeddedFlavor
from kafkalab.cluster.processes import start_process
from kafkalab.cluster.state import ClusterState, cluster_dir
from kafkalab.errors import ClusterError
from kafkalab.progress import Progress

__all__ = ["FLAVOR", "Noida", "noida_binary"]

NAME = "noida"


def _noida_version() -> str:
    try:
        return f"noida-db {importlib.metadata.version('noida-db')}"
    except importlib.metadata.PackageNotFoundError:
        return "noida-db"


def _descriptor(port: int) -> ClusterDescriptor:
    """The descriptor of the embedded noida emulator on ``port`` (``is_emulator``)."""
    return ClusterDescriptor(
        name="embedded",
        flavor=NAME,
        protocol=MODERN_PROTOCOL,
        version=_noida_version(),
        is_emulator=True,
        bootstrap_servers=f"{procs.HOST}:{port}",
        broker_count=1,
    )


def noida_binary() -> Path:
    """The ``noida-db`` executable inside the installed ``noida_db`` package.

    Raises:
        ClusterError: noida-db is not installed, or its binary is missing.
    """
    spec = importlib.util.find_spec("noida_db")
    if spec is None or not spec.submodule_search_locations:
        raise ClusterError("noida-db is not installed in this environment; run `make setup`")
    binary = Path(next(iter(spec.submodule_search_locations))) / "noida-db"
    if not binary.is_file():
        raise ClusterError(f"noida-db binary not found at {binary}")
    if not os.access(binary, os.X_OK):
        with contextlib.suppress(OSError):
            binary.chmod(0o755)
    return binary


def _start(lab: Path, port: int, state: ClusterState, progress: Progress) -> ClusterDescriptor:
    """Start noida-db on ``port`` (not waiting for it) and record it in ``state``.

    Raises:
        ClusterError: noida-db is missing, or ``port`` is in use.
    """
    binary = noida_binary()
    procs.check_ports_free([port])
    data = cluster_dir(lab) / "data" / "noida"
    logs = cluster_dir(lab) / "logs" / "noida"
    data.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    cmd = [
        str(binary),
        "start",
        "--only",
        "kafka",
        "--host",
        procs.HOST,
        "--kafka-port",
        str(port),
        "--data-dir",
        str(data),
    ]
    state.update({"flavor": NAME, "brokers": 1, "broker_ports": [port]})
    progress(f"starting noida-db (Kafka protocol emulator) on {procs.HOST}:{port}")
    start_process(
        lab,
        state,
        role="broker",
        proc_id=0,
        port=port,
        marker=str(data),
        config=None,
        cmd=cmd,
        logs_dir=logs,
    )
    return _descriptor(port)


class Noida(EmbeddedFlavor):
    """The noida-db emulator: one node, modern protocol, not Apache Kafka."""

    name = NAME
    label = "noida-db (a Kafka protocol emulator, not Kafka)"
    emulator = True
    protocols = (MODERN_PROTOCOL,)
    max_brokers = 1
    default_base_port = 19192
    fixed_broker_ids = False  # it picks its own node id

    @property
    def version(self) -> str:
        """``noida-db <its package version>`` (read when asked, never at import)."""
        return _noida_version()

    def start(self, lab: Path, brokers: int, base_port: int, control_port: int | None,
              state: ClusterState, progress: Progress,
              sasl_ssl_port: int | None = None) -> ClusterDescriptor:
        return _start(lab, base_port, state, progress)

    def descriptor(self, state: ClusterState) -> ClusterDescriptor:
        return _descriptor(int(state["broker_ports"][0]))

    def broker_data_dir(self, lab: Path, broker_id: int) -> Path:
        """``<lab>/cluster/data/noida`` (its one data directory)."""
        return cluster_dir(lab) / "data" / NAME


FLAVOR = Noida()
"""The registry's entry (:data:`kafkalab.cluster.flavors.FLAVORS`)."""
