"""When is a freshly started (or healed) embedded cluster ready?

Three checks, in order, each until a shared deadline, failing at once when one of the
cluster's processes dies:

1. every process accepts TCP connections on its port;
2. the flavor says nothing else keeps it from serving
   (:meth:`~kafkalab.cluster.flavors.base.EmbeddedFlavor.registration_problem`: e.g. every
   broker registered in ZooKeeper and a controller elected);
3. the metadata read through each broker lists every broker of the cluster.
"""

from __future__ import annotations

import time

from kafkalab import procs
from kafkalab.cluster.admin import admin_client
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.cluster.flavors.base import EmbeddedFlavor
from kafkalab.cluster.processes import describe, exited_error
from kafkalab.cluster.state import ClusterState, ProcessRecord
from kafkalab.errors import ClusterError
from kafkalab.progress import Progress

__all__ = ["metadata_brokers", "wait_ready"]


def metadata_brokers(descriptor: ClusterDescriptor, timeout_s: float) -> set[int]:
    """Ids of the brokers the cluster's metadata lists (no log noise while brokers start).

    Raises:
        confluent_kafka.KafkaException: no answer within ``timeout_s``.
    """
    md = admin_client(descriptor, timeout_s, quiet=True).list_topics(timeout=timeout_s)
    return set(md.brokers)


def wait_ready(
    flavor: EmbeddedFlavor,
    state: ClusterState,
    descriptor: ClusterDescriptor,
    deadline: float,
    progress: Progress,
) -> None:
    """Return when the cluster of ``state`` (of ``flavor``) is ready (see the module doc).

    Args:
        deadline: a :func:`time.monotonic` value.

    Raises:
        ClusterError: a process exited (naming its log), or ``deadline`` passed (naming
            what was not ready and where to look).
    """
    records = state["processes"]
    # broker i has id i, unless the flavor's server picks its own
    expected_ids = (
        {int(p["id"]) for p in records if p["role"] == "broker" and p["id"] is not None}
        if flavor.fixed_broker_ids
        else set()
    )

    def check_alive() -> None:
        for p in records:
            if not procs.pid_alive(int(p["pid"])):
                raise exited_error(p)

    def timeout_error(what: str, proc: ProcessRecord | None = None) -> ClusterError:
        logs = proc["log"] if proc else ", ".join(sorted({p["log"] for p in records}))
        return ClusterError(f"cluster did not become ready in time ({what}); see {logs}")

    # 1. ports accept connections
    for p in records:
        while not procs.port_open(int(p["port"])):
            check_alive()
            if time.monotonic() > deadline:
                raise timeout_error(
                    f"{describe(p)} is not listening on {procs.HOST}:{p['port']}", p
                )
            time.sleep(0.1)
    # 2. what the flavor still waits for (brokers registered, a controller elected)
    while (problem := flavor.registration_problem(state)) is not None:
        check_alive()
        if time.monotonic() > deadline:
            raise timeout_error(problem)
        time.sleep(0.2)
    # 3. metadata (through every broker) lists all expected brokers
    n = descriptor.broker_count
    for p in records:
        if p["role"] != "broker":
            continue
        single = descriptor.model_copy(update={"bootstrap_servers": f"{procs.HOST}:{p['port']}"})
        seen: set[int] = set()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise timeout_error(
                    f"metadata from {procs.HOST}:{p['port']} lists {len(seen)} of {n} brokers", p
                )
            try:
                seen = metadata_brokers(single, timeout_s=min(5.0, max(1.0, remaining)))
            except Exception:  # KafkaException while the broker is still starting
                seen = set()
            if len(seen) >= n and (not expected_ids or expected_ids <= seen):
                break
            check_alive()
            time.sleep(0.2)
    progress("all brokers answer metadata requests")
