"""Every fixed port the lab or its tests and benches bind lies below Linux's ephemeral range.

A port inside ``net.ipv4.ip_local_port_range`` (32768-60999 by default) can be taken at any
moment as the local end of some outgoing connection, by any process: a test cluster on such
a port failed to start in CI ("Address already in use" for a KRaft listener at 33492 while
the other lanes were busy). So every port constant (a module-level name ending in ``PORT``
bound to an integer, alone or in a tuple assignment) of ``plugins/``, ``tools/`` and
``tests/``, and every flavor's default ports, must leave room for a 3-node cluster below the
range's start."""

from __future__ import annotations

import ast
from pathlib import Path

from kafkalab.cluster.flavors import embedded_flavor, embedded_flavor_names
from kafkalab.paths import project_root

EPHEMERAL_START = 32768
"""Linux's default first ephemeral port (``ip_local_port_range``)."""
NODES_ROOM = 10
"""Ports after a base port a cluster may use (brokers base..base+N-1)."""


def _ephemeral_start() -> int:
    """The lower of Linux's default and this machine's setting."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return EPHEMERAL_START
    return min(low, EPHEMERAL_START)


def _port_constants(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, int]] = []
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            pairs = [(node.target, node.value)]
        elif isinstance(node, ast.Assign):
            pairs = []
            for target in node.targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs += list(zip(target.elts, node.value.elts, strict=False))
                else:
                    pairs.append((target, node.value))
        else:
            continue
        for target, value in pairs:
            if (isinstance(target, ast.Name) and target.id.endswith("PORT")
                    and isinstance(value, ast.Constant) and isinstance(value.value, int)
                    and value.value > 0):
                found.append((target.id, value.value))
    return found


def test_every_fixed_port_is_below_the_ephemeral_range() -> None:
    root = project_root()
    limit = _ephemeral_start() - NODES_ROOM
    files = [p for d in ("plugins", "tools", "tests") for p in (root / d).rglob("*.py")]
    constants = {f"{p.relative_to(root)}:{name}": port
                 for p in files for name, port in _port_constants(p)}
    assert len(constants) > 30  # the scan sees the tests' ports
    for flavor in (embedded_flavor(n) for n in embedded_flavor_names()):
        for attr in ("default_base_port", "default_control_port", "default_sasl_ssl_port"):
            port = getattr(flavor, attr, None)
            if port:
                constants[f"{flavor.name}.{attr}"] = port
    inside = {k: v for k, v in constants.items() if v >= limit}
    assert not inside, f"ports at or above {limit} (ephemeral range from {limit + NODES_ROOM})"
