"""Degradable links between a cluster's nodes and its clients: slow them, throttle them, cut
them, heal them, and prove they are healed.

``kafkalab cluster up --links`` (a kraft cluster) routes every node's client, replication
and controller traffic (and a second client plane, ``solo``, for one client on a link of its
own) through its own proxies (:mod:`~kafkalab.cluster.links.layout`: which
proxy carries which link; :mod:`~kafkalab.cluster.links.toxiproxy`: the proxy program and
why it is Toxiproxy). The proxy server is one of the cluster's processes (role ``proxy``,
recorded in its state file): ``down`` stops it after the nodes, ``up`` restarts it, healed,
if it died, and a stale one goes with the stale state.

A **link fault** (:class:`LinkFault`) acts on every link between two sides (node sets, or
the clients) on the planes it names, in both directions:

- ``delay``: each direction gets ``one_way_ms`` (± ``jitter_ms``): the round trip grows by
  twice ``one_way_ms``;
- ``limit``: each direction carries at most ``rate_kbps`` KB/s;
- ``cut``: nothing gets through either way; open connections stay open and silent (the
  proxy drops what it reads) until the heal closes them, new ones are accepted and stay
  silent too.

:meth:`Links.heal` removes every toxic at once (connections that were cut are closed then,
so both ends reconnect instead of reading a stream with a hole in it);
:func:`wait_healed` proves it: no toxic left on any proxy and, as every node itself answers
(each keeps its own copy of the metadata), every broker present and every partition's ISR
equal to its replicas.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kafkalab import procs
from kafkalab.cluster.links.layout import (
    CLIENT_PLANES,
    CLIENTS,
    PLANES,
    LinkLayout,
    Plane,
    ProxySpec,
)
from kafkalab.cluster.links.toxiproxy import Toxiproxy, ensure_toxiproxy
from kafkalab.cluster.processes import start_process
from kafkalab.cluster.state import ClusterState, cluster_dir
from kafkalab.errors import ClusterError, ConfigError
from kafkalab.progress import Progress

__all__ = ["LINK_FAULTS", "MAX_ONE_WAY_MS", "STALE_LINKS", "LinkFault", "Links", "healed_problem",
           "links_dir", "links_for", "replication_delay", "stale_links", "start_links",
           "wait_healed"]

LinkFaultKind = Literal["delay", "limit", "cut"]

LINK_FAULTS: tuple[LinkFaultKind, ...] = ("delay", "limit", "cut")

MAX_ONE_WAY_MS = 10_000.0
"""The largest one-way delay a link takes (10 s: beyond it the fault is a cut)."""

_API_WAIT_S = 15.0
_VIEW_TRIES = 20
"""Fresh clients a node's own metadata view is asked through before giving up for a poll."""


def links_dir(lab: Path) -> Path:
    """``<lab>/cluster/links``: the proxies' config, the nodes' host files, its log."""
    return cluster_dir(lab) / "links"


@dataclass(frozen=True)
class LinkFault:
    """What to do to the links between ``side_a`` and ``side_b`` on ``planes``.

    A side is a tuple of node ids; ``side_b`` may be ``("clients",)`` (the source of the
    client planes' links, ``client`` and ``solo``), which only those planes have.
    """

    kind: LinkFaultKind
    side_a: tuple[int, ...]
    side_b: tuple[int | str, ...]
    planes: tuple[Plane, ...] = PLANES
    one_way_ms: float = 0.0
    jitter_ms: float = 0.0
    rate_kbps: int = 0

    def problem(self, nodes: int) -> str | None:
        """Why a cluster of ``nodes`` nodes cannot take this fault, or None."""
        if self.kind not in LINK_FAULTS:
            return f"{self.kind!r} is not a link fault ({', '.join(LINK_FAULTS)})"
        bad = [p for p in self.planes if p not in PLANES]
        if bad or not self.planes:
            return f"planes must be among {', '.join(PLANES)}, got {', '.join(self.planes) or 'none'}"
        ids = [*self.side_a, *(b for b in self.side_b if b != CLIENTS)]
        out = [i for i in ids if not isinstance(i, int) or not 0 <= i < nodes]
        if out:
            return f"node {out[0]} is not one of the cluster's nodes 0..{nodes - 1}"
        if not self.side_a or not self.side_b:
            return "a link fault needs a node on each side"
        if set(self.side_a) & set(self.side_b):
            return "a node cannot be on both sides of a link fault"
        peers = [p for p in self.planes if p not in CLIENT_PLANES]
        if peers and nodes < 2:
            return "a one-node cluster has no replication or controller links"
        if self.kind == "delay" and not 0 < self.one_way_ms <= MAX_ONE_WAY_MS:
            return f"a delay must be in (0, {MAX_ONE_WAY_MS:g}] ms one way, got {self.one_way_ms:g}"
        if self.kind == "delay" and not 0 <= self.jitter_ms <= self.one_way_ms:
            return f"jitter must be in [0, one-way delay], got {self.jitter_ms:g} ms"
        if self.kind == "delay" and (self.one_way_ms != int(self.one_way_ms)
                                     or self.jitter_ms != int(self.jitter_ms)):
            return (f"delays are whole milliseconds (Toxiproxy's unit), got "
                    f"{self.one_way_ms:g} ± {self.jitter_ms:g} ms")
        if self.kind == "limit" and self.rate_kbps < 1:
            return f"a bandwidth limit must be at least 1 KB/s, got {self.rate_kbps}"
        return None

    def toxics(self) -> list[tuple[str, str, dict[str, Any]]]:
        """``(toxic type, name stem, attributes)`` this fault puts on each stream."""
        if self.kind == "delay":
            return [("latency", "delay", {"latency": round(self.one_way_ms),
                                          "jitter": round(self.jitter_ms)})]
        if self.kind == "limit":
            return [("bandwidth", "limit", {"rate": self.rate_kbps})]
        return [("timeout", "cut", {"timeout": 0})]

    def describe(self) -> str:
        what = {"delay": f"delay {self.one_way_ms:g} ms one way"
                         + (f" ± {self.jitter_ms:g}" if self.jitter_ms else ""),
                "limit": f"limit {self.rate_kbps} KB/s", "cut": "cut"}[self.kind]
        a = ",".join(map(str, self.side_a))
        b = ",".join(map(str, self.side_b))
        return f"{what} between nodes {a} and {b} ({'+'.join(self.planes)})"


@dataclass
class Links:
    """The links of one running cluster (:meth:`of` its state)."""

    layout: LinkLayout
    api: Toxiproxy

    @classmethod
    def of(cls, state: ClusterState | None) -> Links | None:
        """The links of the cluster ``state`` records; None when it was started without, or
        with the links of an older version (:func:`stale_links`)."""
        data = (state or {}).get("links")
        if not isinstance(data, dict) or not LinkLayout.is_current(data):
            return None
        layout = LinkLayout.from_state(data)
        return cls(layout, Toxiproxy(procs.HOST, layout.api_port))

    def select(self, fault: LinkFault) -> list[ProxySpec]:
        """The proxies carrying a link between the fault's sides on its planes."""
        a, b = set(fault.side_a), set(fault.side_b)
        chosen = []
        for p in self.layout.proxies():
            if p.plane not in fault.planes:
                continue
            if p.plane in CLIENT_PLANES:
                if (CLIENTS in b and p.destination in a) or (CLIENTS in a and p.destination in b):
                    chosen.append(p)
            elif (p.source in a and p.destination in b) or (p.source in b and p.destination in a):
                chosen.append(p)
        return chosen

    def apply(self, fault: LinkFault) -> list[str]:
        """Put ``fault`` on its links (replacing a fault of the same kind there); the names of
        the proxies it touched.

        Raises:
            ConfigError: the cluster cannot take it (one line, nothing touched).
            ClusterError: the proxies' API failed.
        """
        problem = fault.problem(self.layout.nodes)
        if problem:
            raise ConfigError(f"link fault: {problem}")
        chosen = self.select(fault)
        if not chosen:
            raise ConfigError(f"link fault: no link matches {fault.describe()}")
        for proxy in chosen:
            for kind, stem, attrs in fault.toxics():
                for stream in ("upstream", "downstream"):
                    self.api.add_toxic(proxy.name, f"{stem}-{stream}", kind, stream, attrs)
        return [p.name for p in chosen]

    def remove(self, fault: LinkFault) -> None:
        """Take ``fault``'s toxics off its links (what else is on them stays)."""
        for proxy in self.select(fault):
            for _kind, stem, _attrs in fault.toxics():
                for stream in ("upstream", "downstream"):
                    self.api.remove_toxic(proxy.name, f"{stem}-{stream}")

    def every_pair(self, kind: LinkFaultKind, planes: tuple[Plane, ...],
                   one_way_ms: float = 0.0) -> list[LinkFault]:
        """``kind`` on every link between two nodes on ``planes`` (one fault per node and
        the nodes after it)."""
        n = self.layout.nodes
        return [LinkFault(kind, (i,), tuple(range(i + 1, n)), planes, one_way_ms)
                for i in range(n - 1)]

    def heal(self) -> None:
        """Remove every toxic from every proxy (and enable any disabled one)."""
        self.api.reset()

    def clear(self, planes: tuple[Plane, ...]) -> list[str]:
        """Remove every toxic from the proxies of ``planes`` (whatever put it there: a cell
        that died before taking its own off); the names of the toxics removed."""
        names = {p.name for p in self.layout.proxies() if p.plane in planes}
        removed = []
        for proxy, toxics in self.toxics().items():
            if proxy in names:
                for t in toxics:
                    self.api.remove_toxic(proxy, str(t.get("name")))
                    removed.append(f"{proxy}/{t.get('name')}")
        return removed

    def toxics(self) -> dict[str, list[dict[str, Any]]]:
        """The toxics on each proxy that has any, as Toxiproxy reports them."""
        return {name: list(p.get("toxics") or []) for name, p in self.api.proxies().items()
                if p.get("toxics")}

    def status(self) -> list[dict[str, Any]]:
        """One row per proxy: name, plane, source, destination, listen, enabled, toxics."""
        live = self.api.proxies()
        rows = []
        for p in self.layout.proxies():
            got = live.get(p.name) or {}
            rows.append({"proxy": p.name, "plane": p.plane, "source": p.source,
                         "destination": p.destination, "listen": p.listen,
                         "present": bool(got), "enabled": bool(got.get("enabled")),
                         "toxics": [f"{t.get('type')}:{t.get('stream')}:"
                                    f"{json.dumps(t.get('attributes'), sort_keys=True)}"
                                    for t in got.get("toxics") or []]})
        return rows


STALE_LINKS = ("its degradable links were started by an older kafkalab (they lack the solo "
               "plane): restart the cluster (kafkalab cluster down, then kafkalab cluster up "
               "--brokers 3 --links)")
"""What to do about a cluster whose links predate this version's planes."""


def stale_links(state: ClusterState | None) -> bool:
    """The cluster ``state`` records has links, but not every plane this version has."""
    data = (state or {}).get("links")
    return isinstance(data, dict) and not LinkLayout.is_current(data)


def links_for(descriptor_file: Path) -> Links | None:
    """The links of the embedded cluster whose descriptor is ``descriptor_file`` (the lab
    writes it to ``<lab>/cluster.yaml``); None for another cluster or one without links.

    Raises:
        ConfigError: that cluster's links predate this version's planes (:data:`STALE_LINKS`).
    """
    from kafkalab.cluster.state import read_state

    state = read_state(descriptor_file.resolve().parent)
    if state is None or Path(str(state.get("descriptor_path") or "")).resolve() != \
            descriptor_file.resolve():
        return None
    if stale_links(state):
        raise ConfigError(f"the embedded cluster at {descriptor_file}: {STALE_LINKS}")
    return Links.of(state)


@contextmanager
def replication_delay(links: Links, one_way_ms: float, progress: Progress) -> Iterator[None]:
    """Every replication link between two nodes delayed by ``one_way_ms`` each way while the
    block runs (nothing added for 0); those toxics removed afterwards, whatever happens."""
    faults = links.every_pair("delay", ("replication",), one_way_ms) if one_way_ms > 0 else []
    try:
        for fault in faults:
            links.apply(fault)
        if faults:
            progress(f"  links: replication delayed {one_way_ms:g} ms one way between every "
                     "two nodes")
        yield
    finally:
        for fault in faults:
            links.remove(fault)


def start_links(lab: Path, layout: LinkLayout, state: ClusterState, lab_home: Path,
                progress: Progress) -> list[str]:
    """Write the proxies' config and the nodes' host files, start the proxy server (recorded
    in ``state`` as role ``proxy``) and wait until every proxy listens; the JVM option each
    node needs, by node, as ``-Djdk.net.hosts.file=…`` arguments.

    Raises:
        ClusterError: Toxiproxy cannot be built or started (its ports,
            :meth:`~kafkalab.cluster.links.layout.LinkLayout.host_ports`, are the caller's to
            check first).
    """
    binary = ensure_toxiproxy(lab_home, progress)
    d = links_dir(lab)
    d.mkdir(parents=True, exist_ok=True)
    config = d / "proxies.json"
    config.write_text(json.dumps([p.toxiproxy() for p in layout.proxies()], indent=1) + "\n")
    options = []
    for s in range(layout.nodes):
        hosts = d / f"hosts-node{s}"
        hosts.write_text(layout.hosts_file_text(s))
        options.append(f"-Djdk.net.hosts.file={hosts}")
    state["links"] = layout.to_state()
    cmd = [str(binary), "-host", procs.HOST, "-port", str(layout.api_port),
           "-config", str(config)]
    progress(f"starting the link proxies ({len(layout.proxies())} links; API "
             f"{procs.HOST}:{layout.api_port})")
    start_process(lab, state, role="proxy", proc_id=None, port=layout.api_port,
                  marker=str(config), config=str(config), cmd=cmd, logs_dir=d,
                  env={"LOG_LEVEL": "warn"})
    wait_proxies(layout, d / "stdout.log")
    return options


def wait_proxies(layout: LinkLayout, log: Path, timeout_s: float = _API_WAIT_S) -> None:
    """Wait until the proxy server answers with every proxy of ``layout`` (its output in
    ``log``).

    Raises:
        ClusterError: not within ``timeout_s``.
    """
    api = Toxiproxy(procs.HOST, layout.api_port)
    want = {p.name for p in layout.proxies()}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if api.alive():
            missing = want - set(api.proxies())
            if not missing:
                return
        time.sleep(0.1)
    why = procs.last_line(log)
    raise ClusterError(f"the link proxies did not all listen within {timeout_s:g} s"
                       + (f": {why}" if why else "") + f"; see {log}")


def healed_problem(links: Links, descriptor: Any, timeout_s: float = 5.0) -> str | None:
    """What is not healed yet, or None: a toxic or disabled proxy left; or, as any one node
    itself answers (each keeps its own copy of the metadata, and they catch up one by one),
    a broker missing from the metadata or a partition whose ISR lacks a replica."""
    left = links.toxics()
    if left:
        return f"toxics left on {', '.join(sorted(left))}"
    off = [r["proxy"] for r in links.status() if not r["enabled"]]
    if off:
        return f"proxies disabled: {', '.join(off)}"
    for node in range(links.layout.nodes):
        problem = _node_view_problem(links, descriptor, node, timeout_s)
        if problem is not None:
            return problem
    return None


def _node_view_problem(links: Links, descriptor: Any, node: int, timeout_s: float) -> str | None:
    """What node ``node``'s own metadata says is not whole yet (a client bootstrapped to it
    alone; an answer another broker gave does not count), or None."""
    from kafkalab.cluster.admin import admin_client

    alone = descriptor.model_copy(
        update={"bootstrap_servers": f"{procs.HOST}:{links.layout.client_port(node)}"})
    md = None
    for _ in range(_VIEW_TRIES):  # librdkafka may ask another broker once it knows them
        try:
            md = admin_client(alone, timeout_s, quiet=True).list_topics(timeout=timeout_s)
        except Exception as exc:  # the metadata request failed: not healed yet
            return f"no metadata from node {node} ({type(exc).__name__})"
        if md.orig_broker_id in (node, -1):
            break
    else:
        return f"node {node} not asked ({_VIEW_TRIES} answers came from other brokers)"
    missing = set(range(links.layout.nodes)) - set(md.brokers)
    if missing:
        return f"node {node} sees broker(s) {sorted(missing)} missing from the metadata"
    for topic in md.topics.values():
        for part in topic.partitions.values():
            if set(part.isrs) != set(part.replicas):
                return (f"node {node} sees {topic.topic}-{part.id} with ISR "
                        f"{sorted(part.isrs)} of replicas {sorted(part.replicas)}")
    return None


def wait_healed(links: Links, descriptor: Any, timeout_s: float = 60.0) -> float:
    """Wait until :func:`healed_problem` finds nothing; the seconds it took.

    Raises:
        ClusterError: still not healed after ``timeout_s`` (what is not).
    """
    t0 = time.monotonic()
    problem: str | None = "not checked"
    while time.monotonic() - t0 < timeout_s:
        problem = healed_problem(links, descriptor)
        if problem is None:
            return time.monotonic() - t0
        time.sleep(0.2)
    raise ClusterError(f"the links were healed but the cluster is not whole after "
                       f"{timeout_s:g} s: {problem}")
