"""Degradable links (``cluster up --links``): which proxy carries which link, the nodes'
listeners and host files, and which faults a cluster refuses, before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.cluster.flavors import embedded_flavor
from kafkalab.cluster.flavors.kraft.launcher import node_properties
from kafkalab.cluster.links import LinkFault, Links
from kafkalab.cluster.links.layout import CLIENTS, LinkLayout, node_name, source_host
from kafkalab.cluster.links.toxiproxy import Toxiproxy
from kafkalab.errors import ConfigError

pytestmark = pytest.mark.unit

LAYOUT = LinkLayout(3, 20192, 20292)


def test_every_link_has_one_proxy_and_no_two_proxies_share_an_address() -> None:
    proxies = LAYOUT.proxies()
    # one client and one solo proxy per node, one per (source, destination) pair on each
    # peer plane
    assert len(proxies) == 3 + 2 * 3 * 3 + 3
    assert len({p.listen for p in proxies}) == len(proxies)
    assert len({p.name for p in proxies}) == len(proxies)
    client = [p for p in proxies if p.plane == "client"]
    assert [p.listen for p in client] == ["127.0.0.1:20192", "127.0.0.1:20193", "127.0.0.1:20194"]
    assert {p.source for p in client} == {CLIENTS}
    link = next(p for p in proxies if p.name == "replication-n2-n0")
    # node 2 reaches node 0's replication listener through its own source address
    assert link.listen == f"{source_host(2)}:20302" and link.upstream == "127.0.0.1:20302"
    solo = [p for p in proxies if p.plane == "solo"]
    assert [p.listen for p in solo] == ["127.78.0.1:20332", "127.78.0.1:20333", "127.78.0.1:20334"]
    assert LAYOUT.solo_bootstrap() == "127.78.0.1:20332,127.78.0.1:20333,127.78.0.1:20334"
    every = [port for ports in LAYOUT.host_ports().values() for port in ports]
    assert all(1024 < port < 32768 for port in every)


def test_a_nodes_listeners_advertise_peers_by_name_and_its_host_file_maps_them_to_its_proxies() -> None:
    props = node_properties(1, 20193, [20292, 20293, 20294], Path("/tmp/node1"), links=LAYOUT)
    assert props["controller.quorum.voters"] == (
        f"0@{node_name(0)}:20292,1@{node_name(1)}:20293,2@{node_name(2)}:20294")
    assert props["inter.broker.listener.name"] == "REPLICATION"
    assert props["advertised.listeners"] == (
        f"PLAINTEXT://127.0.0.1:20193,REPLICATION://{node_name(1)}:20303,"
        f"CONTROLLER://{node_name(1)}:20293,"  # Raft followers dial what the leader advertises
        "SOLO://127.78.0.1:20333")  # the solo client learns only its own proxies
    # the node binds its own listeners behind the proxies
    assert props["listeners"] == ("PLAINTEXT://127.0.0.1:20313,REPLICATION://127.0.0.1:20303,"
                                  "CONTROLLER://127.0.0.1:20293,SOLO://127.0.0.1:20333")
    hosts = LAYOUT.hosts_file_text(1).splitlines()
    assert "127.0.0.1 localhost" in hosts
    assert f"{source_host(1)} {node_name(0)} {node_name(1)} {node_name(2)}" in hosts


def test_a_fault_selects_both_directions_of_every_link_between_its_sides() -> None:
    links = Links(LAYOUT, Toxiproxy("127.0.0.1", 1))
    chosen = links.select(LinkFault("delay", (0,), (1, 2), ("replication",), 5.0))
    assert sorted(p.name for p in chosen) == [
        "replication-n0-n1", "replication-n0-n2", "replication-n1-n0", "replication-n2-n0"]
    both = links.select(LinkFault("cut", (0,), (1, 2), ("replication", "controller")))
    assert len(both) == 8 and not any(p.source == p.destination for p in both)
    clients = links.select(LinkFault("cut", (2,), (CLIENTS,), ("client",)))
    assert [p.name for p in clients] == ["client-n2"]
    solo = links.select(LinkFault("limit", (0, 1, 2), (CLIENTS,), ("solo",), rate_kbps=10))
    assert [p.name for p in solo] == ["solo-n0", "solo-n1", "solo-n2"]
    everyone = links.select(LinkFault("cut", (1,), (CLIENTS,)))  # every plane: both client ones
    assert sorted(p.name for p in everyone) == ["client-n1", "solo-n1"]


@pytest.mark.parametrize(("fault", "nodes", "says"), [
    (LinkFault("delay", (0,), (1,), ("replication",), 0.0), 3, "a delay must be in"),
    (LinkFault("delay", (0,), (1,), ("replication",), 20_000.0), 3, "a delay must be in"),
    (LinkFault("delay", (0,), (1,), ("replication",), 5.0, 9.0), 3, "jitter"),
    (LinkFault("limit", (0,), (1,), ("replication",)), 3, "at least 1 KB/s"),
    (LinkFault("cut", (0,), (3,)), 3, "node 3 is not one of"),
    (LinkFault("cut", (0,), (0, 1)), 3, "both sides"),
    (LinkFault("cut", (0,), (CLIENTS,), ("replication",)), 1, "one-node cluster"),
    (LinkFault("cut", (0,), (1,), ("wan",)), 3, "planes must be among"),  # type: ignore[arg-type]
])
def test_a_fault_the_cluster_cannot_have_is_refused_in_one_line(
        fault: LinkFault, nodes: int, says: str) -> None:
    problem = fault.problem(nodes)
    assert problem is not None and says in problem and "\n" not in problem
    links = Links(LinkLayout(nodes, 20192, 20292), Toxiproxy("127.0.0.1", 1))
    with pytest.raises(ConfigError, match=r"^link fault: "):
        links.apply(fault)  # refused before the proxies' API is called (port 1: nothing)


def test_links_are_refused_where_the_flavor_or_listeners_cannot_have_them() -> None:
    with pytest.raises(ConfigError, match="no degradable links"):
        embedded_flavor("kafka09").check_request(3, None, None, links=True)
    with pytest.raises(ConfigError, match="do not go together"):
        embedded_flavor("kraft").check_request(3, None, None, sasl_ssl_port=19792, links=True)
    embedded_flavor("kraft").check_request(3, None, None, links=True)


def test_links_started_before_the_solo_plane_are_stale_not_silently_short_of_proxies() -> None:
    from kafkalab.cluster.links import stale_links

    current = {"links": LAYOUT.to_state()}
    assert LinkLayout.is_current(current["links"]) and Links.of(current) is not None
    old = {"links": {k: v for k, v in LAYOUT.to_state().items() if k != "planes"}}
    assert Links.of(old) is None and stale_links(old)  # restart it, say so
    assert not stale_links({}) and not stale_links(current)
    with pytest.raises(ConfigError, match="whole milliseconds"):
        Links(LAYOUT, Toxiproxy("127.0.0.1", 1)).apply(
            LinkFault("delay", (0,), (1,), ("replication",), 0.5))
