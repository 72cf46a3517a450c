"""How busy the host was while a cell measured: CPU used by other processes, run queue, steal.

A cell's figures come from two snapshots, one just before its window and one just after
(never inside the timed loop: nothing here runs while a message is timed):

* ``/proc/stat``'s aggregate ``cpu`` line (clock ticks of every core: user, nice, system,
  idle, iowait, irq, softirq, steal) and its ``procs_running``;
* the CPU time (user + system, and that of reaped children) of the lab's own processes:
  this process, its live descendants (a ``jvm-e2e`` JVM, a spawned client) and the brokers
  listening on the cell's bootstrap ports on this machine (:func:`lab_pids`), each
  identified by pid *and* start time, so a recycled pid is never counted.

:func:`host_load` turns the pair into :class:`HostLoad`: ``host_cpu_pct`` (every process,
percent of all cores' capacity over the window), ``lab_cpu_pct`` (the lab's processes),
``host_other_cpu_pct`` (the difference: work that shared the machine), ``steal_pct`` (the
hypervisor's, where the kernel reports it), ``run_queue_avg`` (runnable tasks, the mean of
the two snapshots, the reader itself not counted) and ``cpu_count``. Linux only: elsewhere
(no ``/proc/stat``) :func:`snapshot` returns None and a cell has no host figures.

Whether a cell counts as measured on a busy host is the drift config's rule
(:mod:`kafkalab.drift.busy`); the columns are documented in ``docs/metrics-schema.md``
(the manifest's ``cells[].host``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_PROC_STAT = Path("/proc/stat")

_BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")
"""The ``cpu`` line's fields of time spent running something (``guest`` is inside ``user``)."""
_ALL_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
"""The ``cpu`` line's fields that together are the cores' whole capacity."""


@dataclass(frozen=True)
class HostSnapshot:
    """The host at one instant: its CPU counters and the lab's processes' CPU times."""

    monotonic_s: float
    cpu_ticks: dict[str, int]
    """``/proc/stat``'s aggregate ``cpu`` fields (:data:`_ALL_FIELDS`), in clock ticks."""
    steal_reported: bool
    """The kernel's ``cpu`` line has a ``steal`` field."""
    procs_running: int | None
    """Runnable tasks at this instant, this reader included (``/proc/stat``)."""
    lab_cpu_s: dict[tuple[int, float], float]
    """(pid, create time) -> CPU seconds (user + system + reaped children's) of each of the
    lab's processes."""


@dataclass(frozen=True)
class HostLoad:
    """How busy the host was over a cell's window (see the module docstring)."""

    host_window_s: float
    host_cpu_pct: float
    lab_cpu_pct: float
    host_other_cpu_pct: float
    steal_pct: float | None
    run_queue_avg: float | None
    cpu_count: int

    def to_dict(self) -> dict[str, Any]:
        """The figures as the manifest's ``cells[].host`` stores them (rounded)."""
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def _read_proc_stat() -> tuple[dict[str, int], bool, int | None] | None:
    """``/proc/stat``'s aggregate cpu fields, whether steal is reported, and
    ``procs_running``; None where there is no ``/proc/stat``."""
    try:
        text = _PROC_STAT.read_text()
    except OSError:
        return None
    ticks: dict[str, int] = {}
    steal = False
    running: int | None = None
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            values = [int(x) for x in parts[1:]]
            steal = len(values) >= len(_ALL_FIELDS)
            ticks = {name: (values[i] if i < len(values) else 0)
                     for i, name in enumerate(_ALL_FIELDS)}
        elif parts and parts[0] == "procs_running" and len(parts) > 1:
            running = int(parts[1])
    return (ticks, steal, running) if ticks else None


def listening_pids(ports: Iterable[int]) -> set[int]:
    """The pids of this machine's processes listening on TCP ``ports`` (those this user may
    see): the local brokers of a cell's bootstrap servers. Empty when none or unknown."""
    import psutil

    wanted = {int(p) for p in ports}
    if not wanted:
        return set()
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        return set()
    return {c.pid for c in conns
            if c.pid and c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port in wanted}


def local_ports(bootstrap_servers: Iterable[str]) -> set[int]:
    """The ports of the ``host:port`` entries of ``bootstrap_servers`` that name this
    machine (loopback or ``localhost``)."""
    out: set[int] = set()
    for server in bootstrap_servers:
        host, _, port = server.strip().rpartition(":")
        host = host.strip("[]").lower()
        if port.isdigit() and (host in ("localhost", "::1", "") or host.startswith("127.")):
            out.add(int(port))
    return out


def lab_pids(extra: Iterable[int] = ()) -> set[int]:
    """This process, its live descendants and the ``extra`` pids (the local brokers)."""
    import psutil

    me = psutil.Process()
    pids = {me.pid, *extra}
    with contextlib.suppress(psutil.Error):
        pids |= {c.pid for c in me.children(recursive=True)}
    return pids


def _cpu_times(pids: Iterable[int]) -> dict[tuple[int, float], float]:
    """(pid, create time) -> CPU seconds of each readable process of ``pids`` (gone or
    unreadable ones are left out)."""
    import psutil

    out: dict[tuple[int, float], float] = {}
    for pid in pids:
        try:
            p = psutil.Process(pid)
            t = p.cpu_times()
            out[(pid, p.create_time())] = (t.user + t.system + t.children_user
                                          + t.children_system)
        except (psutil.Error, OSError):
            continue
    return out


def snapshot(broker_pids: Iterable[int] = ()) -> HostSnapshot | None:
    """The host now, with the CPU times of the lab's processes (:func:`lab_pids` with
    ``broker_pids``); None where ``/proc/stat`` cannot be read."""
    times = _cpu_times(lab_pids(broker_pids))
    stat = _read_proc_stat()
    if stat is None:
        return None
    ticks, steal, running = stat
    return HostSnapshot(monotonic_s=time.monotonic(), cpu_ticks=ticks, steal_reported=steal,
                        procs_running=running, lab_cpu_s=times)


def clock_ticks_per_s() -> int:
    """The kernel's clock ticks per second (``USER_HZ``, the unit of ``/proc/stat``)."""
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100


def host_load(start: HostSnapshot, end: HostSnapshot, cpu_count: int | None = None,
              ticks_per_s: int | None = None) -> HostLoad | None:
    """The figures of the window between two snapshots (pure); None when no clock tick
    passed between them.

    The lab's CPU is the sum over the processes at the end minus the sum at the start: a
    process started inside the window counts whole, one that ended and was reaped by this
    process is in this process's children's times. ``host_other_cpu_pct`` is the host's
    busy time less the lab's, never below 0."""
    hz = ticks_per_s or clock_ticks_per_s()
    d = {k: end.cpu_ticks.get(k, 0) - start.cpu_ticks.get(k, 0) for k in _ALL_FIELDS}
    total = sum(d.values())
    if total <= 0:
        return None
    busy = sum(d[k] for k in _BUSY_FIELDS)
    lab_s = max(0.0, sum(end.lab_cpu_s.values()) - sum(start.lab_cpu_s.values()))
    lab_ticks = min(float(busy), lab_s * hz)
    readings = [r - 1 for r in (start.procs_running, end.procs_running) if r is not None]
    return HostLoad(
        host_window_s=max(0.0, end.monotonic_s - start.monotonic_s),
        host_cpu_pct=100.0 * busy / total,
        lab_cpu_pct=100.0 * lab_ticks / total,
        host_other_cpu_pct=100.0 * max(0.0, busy - lab_ticks) / total,
        steal_pct=100.0 * d["steal"] / total if end.steal_reported else None,
        run_queue_avg=(sum(max(0, r) for r in readings) / len(readings)) if readings else None,
        cpu_count=int(cpu_count or os.cpu_count() or 1),
    )


class HostWindow:
    """A cell's measured window: :meth:`begin` just before it, :meth:`end` just after.

    Never raises: a host that cannot be read (no ``/proc``, a process that vanished) gives a
    cell no figures (None), never a failed cell."""

    def __init__(self, broker_pids: set[int], start: HostSnapshot | None) -> None:
        self._brokers = broker_pids
        self._start = start

    @classmethod
    def begin(cls, bootstrap_servers: Iterable[str] = ()) -> HostWindow:
        """Find the local brokers of ``bootstrap_servers`` (:func:`listening_pids`), then
        take the first snapshot (the last thing before the window)."""
        try:
            brokers = listening_pids(local_ports(bootstrap_servers))
            return cls(brokers, snapshot(brokers))
        except Exception:  # the host's figures are a note on a cell, never its failure
            return cls(set(), None)

    def end(self) -> dict[str, Any] | None:
        """Take the second snapshot (the first thing after the window) and return the
        window's figures (:meth:`HostLoad.to_dict`), or None when they cannot be known."""
        if self._start is None:
            return None
        try:
            last = snapshot(self._brokers)
            load = host_load(self._start, last) if last is not None else None
        except Exception:  # as in begin
            return None
        return load.to_dict() if load is not None else None


__all__ = [
    "HostLoad",
    "HostSnapshot",
    "HostWindow",
    "clock_ticks_per_s",
    "host_load",
    "lab_pids",
    "listening_pids",
    "local_ports",
    "snapshot",
]
