"""Part (j): a 3-node KRaft cluster's start with and without the nodes' class-data archive
(:mod:`kafkalab.cluster.flavors.kraft.cds`).

Alternating rounds (off, on, off, on, ...) of ``cluster up --brokers 3`` in a lab of its own
on the bench's own ports; each round formats fresh directories (``cluster down --wipe``
after it), so each start pays the same work. Per round: the wall time of ``cluster_up`` (install check,
format, start, until every broker answers metadata) and the CPU seconds (user + system, from
``/proc/<pid>/stat``) each node's JVM had spent when the cluster was ready. The medians and
their ratio (archive / none) are the figures; the archive only changes class loading, so
the two arms start the same Kafka with the same settings.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

from tools.bench import cluster_facts

BENCH_NODES_BASE_PORT = 32092
BENCH_NODES_CONTROL_PORT = 32192
"""Part (j)'s ports (3 nodes each), apart from every test's and the lab's defaults."""

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def _one_start(lab: Path, archive: bool) -> dict[str, Any]:
    from kafkalab.cluster import cluster_down, cluster_status, cluster_up
    from kafkalab.cluster.flavors.kraft import cds

    saved = os.environ.get(cds.CDS_ENV)
    os.environ[cds.CDS_ENV] = "on" if archive else "off"
    try:
        t0 = time.perf_counter()
        d = cluster_up("kraft", 3, lab_dir=lab, base_port=BENCH_NODES_BASE_PORT,
                       control_port=BENCH_NODES_CONTROL_PORT)
        wall_s = time.perf_counter() - t0
        cpu = [_cpu_s(int(p["pid"])) for p in cluster_status(lab)["processes"]]
    finally:
        cluster_down(lab, wipe_data=True)
        if saved is None:
            os.environ.pop(cds.CDS_ENV, None)
        else:
            os.environ[cds.CDS_ENV] = saved
    return {"archive": archive, "up_s": round(wall_s, 2), "node_cpu_s": cpu,
            "cluster": cluster_facts(d)}


def bench_nodes(work: Path, rounds: int = 3) -> dict[str, Any]:
    """Part (j): ``rounds`` alternating starts of each arm; medians and ratios."""
    lab = work / "lab"
    lab.mkdir(parents=True, exist_ok=True)
    runs = [_one_start(lab, archive) for _ in range(rounds) for archive in (False, True)]

    def median(archive: bool, key: str) -> float:
        values = [sum(r[key]) / len(r[key]) if isinstance(r[key], list) else r[key]
                  for r in runs if r["archive"] is archive]
        return round(statistics.median(values), 2)

    med = {arm: {"up_s": median(on, "up_s"), "node_cpu_s": median(on, "node_cpu_s")}
           for arm, on in (("none", False), ("archive", True))}
    return {"cluster": runs[0]["cluster"], "rounds": rounds, "runs": runs, "median": med,
            "archive_over_none": {k: round(med["archive"][k] / med["none"][k], 3)
                                  for k in ("up_s", "node_cpu_s")}}


def print_nodes(result: dict[str, Any]) -> None:
    """Part (j)'s lines."""
    m, r = result["median"], result["archive_over_none"]
    print("\n(j) a 3-node KRaft cluster's start: without vs with the nodes' class-data archive "
          f"(median of {result['rounds']} alternating rounds)")
    for arm in ("none", "archive"):
        print(f"  {arm:<8} cluster up {m[arm]['up_s']:6.2f} s   CPU a node "
              f"{m[arm]['node_cpu_s']:5.2f} s")
    print(f"  ratio archive/none: cluster up {r['up_s']:.2f}, CPU a node {r['node_cpu_s']:.2f}")
