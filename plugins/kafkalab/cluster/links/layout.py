"""Where each link of a cluster with degradable links runs: ports, addresses, proxy names,
and the per-node host files that route a node's connections through its own proxies.

A node of such a cluster (``cluster up --links``) has three listeners, one per **plane**,
each bound to 127.0.0.1 on a port of its own:

| plane | node listener | reached through |
|---|---|---|
| ``client`` | ``PLAINTEXT`` on ``control_port + 20 + i`` | one proxy per node on ``127.0.0.1:base_port + i`` (the advertised address: what clients, the lab and the descriptor use) |
| ``replication`` | ``REPLICATION`` on ``control_port + 10 + i`` (``inter.broker.listener.name``) | one proxy per (source node, node) pair on ``127.77.0.<source + 1>``, same port |
| ``controller`` | ``CONTROLLER`` on ``control_port + i`` (a voter of the quorum) | one proxy per (source node, node) pair on ``127.77.0.<source + 1>``, same port |
| ``solo`` | ``SOLO`` on ``control_port + 40 + i`` | one proxy per node on ``127.78.0.1``, same port (the advertised address of that listener) |

The ``solo`` plane is a second client plane: a client bootstrapped to it
(:meth:`LinkLayout.solo_bootstrap`) is told only the ``SOLO`` listener's advertised
addresses (a broker answers metadata with the listener the request came in on), so every
connection it opens goes through the ``solo`` proxies and a toxic there degrades its link
alone: one consumer of a fan-out cell on a thin pipe while the others keep theirs.

Kafka advertises one address per listener to every peer, so a peer-to-peer link can only be
told apart by who resolves the name: node ``i`` is advertised as ``kafkalab-node<i>`` on its
replication and controller ports, and each node's JVM resolves every such name to its *own*
source address (``-Djdk.net.hosts.file`` pointing at ``links/hosts-node<s>``). Its
connection to node ``d`` on a plane therefore goes through the proxy for ``(s, d, plane)``
and nothing else, and a toxic on that proxy degrades exactly that link (both directions of
the connections ``s`` opens; ``d``'s connections to ``s`` are the ``(d, s)`` proxy's).
Every address is loopback (``127.0.0.0/8``), so nothing leaves the machine. The proxies'
HTTP API listens on ``127.0.0.1:control_port + 30``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from kafkalab import procs

__all__ = [
    "API_OFFSET",
    "CLIENTS",
    "CLIENT_OFFSET",
    "CLIENT_PLANES",
    "PLANES",
    "RACK_AWARE_SELECTOR",
    "REPLICATION_OFFSET",
    "SOLO_HOST",
    "SOLO_OFFSET",
    "LinkLayout",
    "Plane",
    "ProxySpec",
    "node_name",
    "rack_of",
    "source_host",
]

Plane = Literal["client", "replication", "controller", "solo"]

PLANES: tuple[Plane, ...] = ("client", "replication", "controller", "solo")
"""The kinds of traffic a link carries, each degradable on its own."""

CLIENT_PLANES: tuple[Plane, ...] = ("client", "solo")
"""The planes whose links run from the clients to a node (the others run node to node)."""

CLIENTS = "clients"
"""The source of every client-plane link: producers, consumers and the lab's Admin calls
(on the ``client`` plane), or the one client bootstrapped to the ``solo`` plane."""

REPLICATION_OFFSET = 10
"""Node i's replication listener is on ``control_port + 10 + i``."""

CLIENT_OFFSET = 20
"""Node i's own client listener (behind its client proxy) is on ``control_port + 20 + i``."""

API_OFFSET = 30
"""The proxies' HTTP API is on ``control_port + 30``."""

SOLO_OFFSET = 40
"""Node i's solo-client listener is on ``control_port + 40 + i`` (and its proxy on the same
port of :data:`SOLO_HOST`)."""

SOLO_HOST = "127.78.0.1"
"""The loopback address the ``solo`` plane's proxies listen on (advertised to its client)."""

_SOURCE_NET = "127.77.0."


def source_host(source: int) -> str:
    """The loopback address node ``source``'s peer connections leave through."""
    return f"{_SOURCE_NET}{source + 1}"


RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
"""``replica.selector.class`` of a linked cluster: a consumer that names its rack
(``client.rack``) is served by a replica in that rack (KIP-392, fetch from follower)."""


def rack_of(node: int) -> str:
    """Node ``node``'s ``broker.rack`` in a linked cluster: every node a rack of its own, so
    that "clients in node 2's rack" is a choice of links to slow (every other node's)."""
    return f"rack{node}"


def node_name(node: int) -> str:
    """The host name node ``node`` is advertised under on the replication and controller
    planes (resolved by each node's own host file)."""
    return f"kafkalab-node{node}"


@dataclass(frozen=True)
class ProxySpec:
    """One proxied link: its proxy's name and addresses, the plane it carries, its source
    (a node id, or :data:`CLIENTS`) and destination node."""

    name: str
    plane: Plane
    source: int | str
    destination: int
    listen: str
    upstream: str

    def toxiproxy(self) -> dict[str, Any]:
        """The proxy as Toxiproxy's ``-config`` file and API take it."""
        return {"name": self.name, "listen": self.listen, "upstream": self.upstream,
                "enabled": True}


@dataclass(frozen=True)
class LinkLayout:
    """The links of ``nodes`` nodes whose clients use ``base_port + i`` and whose quorum
    uses ``control_port + i``."""

    nodes: int
    base_port: int
    control_port: int

    @classmethod
    def from_state(cls, data: dict[str, Any]) -> LinkLayout:
        """The layout recorded in a cluster's state (``links``)."""
        return cls(int(data["nodes"]), int(data["base_port"]), int(data["control_port"]))

    def to_state(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "base_port": self.base_port,
                "control_port": self.control_port, "api_port": self.api_port,
                "planes": list(PLANES)}

    @staticmethod
    def is_current(data: dict[str, Any]) -> bool:
        """Whether links recorded as ``data`` have every plane of this version (a cluster
        started before the ``solo`` plane existed has no ``planes`` and no solo proxies)."""
        return set(data.get("planes") or ()) == set(PLANES)

    @property
    def api_port(self) -> int:
        return self.control_port + API_OFFSET

    def client_port(self, node: int) -> int:
        """The advertised client port of ``node`` (its client proxy)."""
        return self.base_port + node

    def listener_port(self, plane: Plane, node: int) -> int:
        """The port ``node``'s own listener of ``plane`` binds on 127.0.0.1."""
        offset = {"client": CLIENT_OFFSET, "replication": REPLICATION_OFFSET,
                  "controller": 0, "solo": SOLO_OFFSET}[plane]
        return self.control_port + offset + node

    def solo_bootstrap(self) -> str:
        """``bootstrap.servers`` of the client that gets the ``solo`` plane's links."""
        return ",".join(f"{SOLO_HOST}:{self.listener_port('solo', d)}"
                        for d in range(self.nodes))

    def proxy_name(self, plane: Plane, source: int | str, destination: int) -> str:
        if plane in CLIENT_PLANES:
            return f"{plane}-n{destination}"
        return f"{plane}-n{source}-n{destination}"

    def proxies(self) -> list[ProxySpec]:
        """Every proxy: one client proxy per node, then one per (source, destination) pair
        and peer plane (a node's link to itself included: the combined node's broker talks to
        its own controller through it, and it is never degraded), then one solo-client proxy
        per node."""
        out = [ProxySpec(self.proxy_name("client", CLIENTS, d), "client", CLIENTS, d,
                         f"{procs.HOST}:{self.client_port(d)}",
                         f"{procs.HOST}:{self.listener_port('client', d)}")
               for d in range(self.nodes)]
        for plane in ("replication", "controller"):
            for s in range(self.nodes):
                for d in range(self.nodes):
                    port = self.listener_port(plane, d)
                    out.append(ProxySpec(self.proxy_name(plane, s, d), plane, s, d,
                                         f"{source_host(s)}:{port}", f"{procs.HOST}:{port}"))
        for d in range(self.nodes):
            port = self.listener_port("solo", d)
            out.append(ProxySpec(self.proxy_name("solo", CLIENTS, d), "solo", CLIENTS, d,
                                 f"{SOLO_HOST}:{port}", f"{procs.HOST}:{port}"))
        return out

    def host_ports(self) -> dict[str, list[int]]:
        """Every port the cluster will bind, by address (checked free before it starts)."""
        local = [self.api_port, *(self.client_port(d) for d in range(self.nodes))]
        local += [self.listener_port(p, d) for p in PLANES for d in range(self.nodes)]
        peer = [self.listener_port(p, d) for p in ("replication", "controller")
                for d in range(self.nodes)]
        solo = [self.listener_port("solo", d) for d in range(self.nodes)]
        return {procs.HOST: local, SOLO_HOST: solo,
                **{source_host(s): peer for s in range(self.nodes)}}

    def hosts_file_text(self, source: int) -> str:
        """Node ``source``'s host file: every node's name resolves to ``source``'s own
        address (its proxies), ``localhost`` to 127.0.0.1."""
        names = " ".join(node_name(d) for d in range(self.nodes))
        return (f"# written by kafkalab: node {source}'s view of its peers (its proxies)\n"
                f"{procs.HOST} localhost\n{source_host(source)} {names}\n")

    def node_listeners(self, node: int) -> dict[str, str]:
        """The listener properties of ``node`` (``listeners``, ``advertised.listeners``,
        ``inter.broker.listener.name``, ``listener.security.protocol.map``) and the quorum's
        voters, every peer address by name; its rack (:func:`rack_of`) and the rack-aware
        replica selector, so a consumer can fetch from the replica beside it."""
        h = procs.HOST
        voters = ",".join(f"{d}@{node_name(d)}:{self.listener_port('controller', d)}"
                          for d in range(self.nodes))
        return {
            "controller.quorum.voters": voters,
            "listeners": (f"PLAINTEXT://{h}:{self.listener_port('client', node)},"
                          f"REPLICATION://{h}:{self.listener_port('replication', node)},"
                          f"CONTROLLER://{h}:{self.listener_port('controller', node)},"
                          f"SOLO://{h}:{self.listener_port('solo', node)}"),
            # the controller listener is advertised by name too: Kafka 4's Raft followers
            # connect to the endpoints the quorum leader advertises (KIP-853), not to the
            # voters' configured addresses, so a bound address here would bypass the proxies
            # (seen: a leader cut from the quorum still replayed its own fencing record)
            "advertised.listeners": (
                f"PLAINTEXT://{h}:{self.client_port(node)},"
                f"REPLICATION://{node_name(node)}:{self.listener_port('replication', node)},"
                f"CONTROLLER://{node_name(node)}:{self.listener_port('controller', node)},"
                f"SOLO://{SOLO_HOST}:{self.listener_port('solo', node)}"),
            "inter.broker.listener.name": "REPLICATION",
            "listener.security.protocol.map":
                "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT,SOLO:PLAINTEXT",
            "broker.rack": rack_of(node),
            "replica.selector.class": RACK_AWARE_SELECTOR,
        }
