"""Which clock a load cell's timestamps are on, when its processes may run on other hosts.

Every load timestamp (``intended_ts_ns``, ``send_ts_ns``, ``receive_ts_ns``,
``sample_ts_ns``) is CLOCK_MONOTONIC of the **producer's** host. A consumer shard on the
same kernel (the same *clock domain*: the same boot of the same machine, containers
included) reads the very same clock, and a receive time minus an intended time is exact.

A shard on another host (a consumer shard run as an Airflow task on another Celery or
Kubernetes worker) has a monotonic clock of its own, with an unknown origin. It cannot
subtract the producer's stamps from its own readings. The rule:

1. The producer writes its :func:`anchor` into the cell's plan: its clock domain and the
   difference ``monotonic - realtime`` of its host, read back to back.
2. A shard compares domains (:func:`domain`). The same domain: offset 0, basis
   ``same_host``. Another domain: it maps its monotonic readings onto the producer's through
   both hosts' realtime clocks (:func:`offset_to`), basis ``wall_clock``.
3. With basis ``wall_clock`` every latency of that shard carries the two hosts' wall-clock
   disagreement (NTP/chrony keep it from well under a millisecond on a LAN to several
   milliseconds, and nothing here measures it). The cell is then ``cross_host_clock`` in
   ``cell.json``, in the summary, in the aggregates and in the report, so such a latency is
   never shown as if it were exact.

The domain is the kernel's boot id (``/proc/sys/kernel/random/boot_id``), else the host
name. :data:`DOMAIN_ENV` overrides it; the tests use it to put a shard in a domain of its own
on this one machine (a second host cannot be had here).
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

DOMAIN_ENV = "KAFKALAB_CLOCK_DOMAIN"
"""When set, the clock domain of this process (instead of the boot id)."""

SAME_HOST = "same_host"
WALL_CLOCK = "wall_clock"

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
_READS = 7


def domain() -> str:
    """This process's clock domain: :data:`DOMAIN_ENV`, else ``boot:<boot id>``, else
    ``host:<host name>``."""
    override = os.environ.get(DOMAIN_ENV, "").strip()
    if override:
        return override
    try:
        return "boot:" + _BOOT_ID.read_text().strip()
    except OSError:
        return "host:" + socket.gethostname()


def mono_minus_wall_ns() -> int:
    """``CLOCK_MONOTONIC - CLOCK_REALTIME`` of this host in ns: of a few back-to-back
    (monotonic, realtime, monotonic) reads, the one whose monotonic bracket is narrowest."""
    best: tuple[int, int] | None = None
    for _ in range(_READS):
        a = time.monotonic_ns()
        w = time.time_ns()
        b = time.monotonic_ns()
        width = b - a
        value = (a + b) // 2 - w
        if best is None or width < best[0]:
            best = (width, value)
    assert best is not None
    return best[1]


def anchor() -> dict[str, Any]:
    """The producer's clock, written into a cell's plan: ``{"domain", "host",
    "mono_minus_wall_ns"}``."""
    return {"domain": domain(), "host": socket.gethostname(),
            "mono_minus_wall_ns": mono_minus_wall_ns()}


def offset_to(producer: dict[str, Any] | None) -> tuple[int, str]:
    """``(offset_ns, basis)``: add ``offset_ns`` to this process's monotonic readings to put
    them on the producer's clock.

    ``basis`` is :data:`SAME_HOST` (offset 0, exact) or :data:`WALL_CLOCK` (through both
    hosts' realtime clocks: exact only as far as they agree). A plan without an anchor (an
    older plan) is taken as the same host, as it always was.
    """
    if not producer or producer.get("domain") in (None, domain()):
        return 0, SAME_HOST
    return int(producer["mono_minus_wall_ns"]) - mono_minus_wall_ns(), WALL_CLOCK


__all__ = ["DOMAIN_ENV", "SAME_HOST", "WALL_CLOCK", "anchor", "domain", "mono_minus_wall_ns",
           "offset_to"]
