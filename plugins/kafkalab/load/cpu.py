"""CPU used while a load cell runs: this process's, the brokers' on this host, the host's.

The cell records each load-generator process's CPU seconds per wall second (``processes`` in
``cell.json``; above :data:`kafkalab.load.cell.CLIENT_BOUND_CPU_FRAC` the cell is
``client_bound``), the local brokers' (``broker_cpu_frac``) and the whole host's
(``host_cpu_busy_frac``): a cell whose clients or host ran out of CPU measured the machine,
not Kafka.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kafkalab.cluster.descriptor import ClusterDescriptor


def cpu_seconds() -> float:
    """This process's CPU time (user + system, all threads)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def broker_cpu_seconds(d: ClusterDescriptor) -> dict[int, float] | None:
    """CPU seconds of the brokers that run on this host (by pid, found by listening port);
    None for a remote cluster."""
    from kafkalab.procs import pid_listening_on

    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for server in d.servers:
        host, _, port = server.rpartition(":")
        if host not in ("127.0.0.1", "localhost") or not port.isdigit():
            continue
        pid = pid_listening_on(int(port))
        if pid is None:
            continue
        try:
            fields_ = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            out[pid] = (int(fields_[11]) + int(fields_[12])) / tick
        except (OSError, ValueError, IndexError):
            continue
    return out or None


def host_cpu_times() -> tuple[int, int] | None:
    """``(busy, total)`` jiffies of every CPU of this host (``/proc/stat``), or None."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    values = [int(v) for v in first[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return sum(values) - idle, sum(values)


def host_busy_frac(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """Share of the host's CPU capacity that was busy between two readings (1.0: every core
    busy): whoever used it — the clients, the brokers, or anything else on the machine."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return round((after[0] - before[0]) / (after[1] - before[1]), 4)


def broker_cpu_frac(before: dict[int, float] | None, after: dict[int, float] | None,
                    wall_s: float) -> float | None:
    """CPU seconds the local brokers used per wall second between two
    :func:`broker_cpu_seconds` readings (None when either is unknown)."""
    if not before or not after or wall_s <= 0:
        return None
    used = sum(after[p] - before[p] for p in before if p in after)
    return round(used / wall_s, 4)


@dataclass(frozen=True)
class CpuStart:
    """The readings at the start of a measuring span (:func:`cpu_start`)."""

    broker_cpu_s: dict[int, float] | None
    host_times: tuple[int, int] | None
    process_cpu_s: float
    monotonic_s: float


@dataclass(frozen=True)
class CpuUse:
    """What a measuring span used (:func:`cpu_used_since`)."""

    process_cpu_s: float
    """This process's CPU seconds over the span."""
    wall_s: float
    """The span's wall seconds."""
    broker_cpu_frac: float | None
    """The local brokers' CPU seconds per wall second (None: remote or unknown)."""
    host_cpu_busy_frac: float | None
    """Share of the host's CPU capacity busy (None: unknown)."""


def cpu_start(d: ClusterDescriptor) -> CpuStart:
    """Read the brokers', the host's and this process's CPU and the clock now."""
    return CpuStart(broker_cpu_seconds(d), host_cpu_times(), cpu_seconds(), time.monotonic())


def cpu_used_since(start: CpuStart, d: ClusterDescriptor) -> CpuUse:
    """What this process, the local brokers and the host used since ``start``."""
    process_cpu_s, wall_s = cpu_seconds() - start.process_cpu_s, time.monotonic() - start.monotonic_s
    return CpuUse(process_cpu_s, wall_s,
                  broker_cpu_frac(start.broker_cpu_s, broker_cpu_seconds(d), wall_s),
                  host_busy_frac(start.host_times, host_cpu_times()))


def other_cpu_pct(busy_frac: float | None, cpu_count: int | None,
                  processes: Sequence[tuple[str | None, str | None, float | None]],
                  broker_cpu_frac: float | None) -> float | None:
    """The share of the host's CPUs busy with work other than the lab's while a load cell
    ran (``host_other_cpu_pct``, percent of all cores: the busy-host rule's figure,
    :mod:`kafkalab.drift.busy`): ``host_cpu_busy_frac`` less the lab's processes on the
    producer's host (``processes``: ``(role, host, cpu_frac)``; the producer's host is the
    one whose CPUs were read) and the local brokers' ``broker_cpu_frac``, over
    ``cpu_count``; never below 0. None when the host's figures are unknown.
    ``spark_jobs/aggregate_load.py`` computes the same (a unit test keeps them equal)."""
    if busy_frac is None or not cpu_count:
        return None
    here = next((h for role, h, _ in processes if role == "producer"), None)
    lab_cores = sum(f or 0.0 for _, h, f in processes if h == here) + (broker_cpu_frac or 0.0)
    return round(max(0.0, float(busy_frac) - lab_cores / cpu_count) * 100.0, 3)
