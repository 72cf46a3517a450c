"""The broker flavors the lab knows: one registry, one class a flavor.

| flavor | module | what it is |
|---|---|---|
| ``kraft`` | :mod:`~kafkalab.cluster.flavors.kraft` | the real Apache Kafka 4.x in KRaft mode, from Maven Central, started here (the default; the fault cluster) |
| ``kafka09`` | :mod:`~kafkalab.cluster.flavors.kafka09` | the real Apache Kafka 0.9.0.1 with ZooKeeper, started here (opt-in: the field notes' era) |
| ``external`` | :mod:`~kafkalab.cluster.flavors.external` | a user's cluster, reached through a descriptor |

Everything that differs between flavors is asked of the flavor (:mod:`.base`): the command
line's ``--flavor`` choices, descriptor validation, ``cluster up`` / ``status`` / ``down``,
topic administration, the fault experiments, the report. No other module compares a
flavor's name. A descriptor is validated here, at the edge (:func:`parse_descriptor`,
:func:`load_descriptor`): the flavor must be known and accept the descriptor. A retired
flavor (:data:`RETIRED`) is refused with its reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafkalab.cluster.descriptor import ClusterDescriptor, resolve_kafka_home
from kafkalab.cluster.flavors import external, kafka09, kraft
from kafkalab.cluster.flavors.base import EmbeddedFlavor, Flavor
from kafkalab.errors import ClusterError, ConfigError
from kafkalab.yamlio import parse_model, read_yaml

__all__ = [
    "DEFAULT_EMBEDDED",
    "FAULT_CLUSTER",
    "FLAVORS",
    "RETIRED",
    "EmbeddedFlavor",
    "Flavor",
    "embedded_flavor",
    "embedded_flavor_names",
    "flavor_for_version",
    "flavor_of",
    "get_flavor",
    "load_descriptor",
    "parse_descriptor",
]

FLAVORS: dict[str, Flavor] = {
    f.name: f for f in (kraft.FLAVOR, kafka09.FLAVOR, external.FLAVOR)}
"""Every flavor by name, in the order the command line lists them."""

RETIRED: dict[str, str] = {
    "noida": "the noida-db emulator was retired: its latencies said nothing about Kafka, and "
             "the real Kafka 4.x it stood in for now runs here (`kafkalab cluster up`; "
             "docs/clusters.md, \"Retired flavors\")",
}
"""Flavors the lab no longer has, with why and what to use instead (the error a descriptor
or ``--flavor`` naming one gets)."""

DEFAULT_EMBEDDED: EmbeddedFlavor = kraft.FLAVOR
"""What ``kafkalab cluster up`` starts without ``--flavor`` (and the demo, the DAGs' tests)."""

FAULT_CLUSTER: EmbeddedFlavor = kraft.FLAVOR
"""The flavor of the fault experiments' own three-broker cluster (it must
:attr:`~kafkalab.cluster.flavors.base.EmbeddedFlavor.hosts_faults`)."""


def get_flavor(name: str) -> Flavor:
    """The flavor named ``name``.

    Raises:
        ConfigError: ``unknown cluster flavor 'x' (known: kraft, kafka09, external)``, or
            a retired flavor's reason.
    """
    try:
        return FLAVORS[name]
    except KeyError:
        if name in RETIRED:
            raise ConfigError(f"cluster flavor {name!r}: {RETIRED[name]}") from None
        raise ConfigError(f"unknown cluster flavor {name!r} (known: {', '.join(FLAVORS)})") from None


def embedded_flavor_names() -> tuple[str, ...]:
    """The flavors ``kafkalab cluster up`` can start, default first."""
    rest = [n for n, f in FLAVORS.items() if f.embedded and f is not DEFAULT_EMBEDDED]
    return (DEFAULT_EMBEDDED.name, *rest)


def embedded_flavor(name: str) -> EmbeddedFlavor:
    """The embedded flavor named ``name``.

    Raises:
        ConfigError: an unknown name, or a flavor the lab does not start
            (``unknown cluster flavor 'x': use kraft or kafka09``), or a retired one.
    """
    flavor = FLAVORS.get(name)
    if name in RETIRED:
        raise ConfigError(f"cluster flavor {name!r}: {RETIRED[name]}")
    if not isinstance(flavor, EmbeddedFlavor):
        raise ConfigError(f"unknown cluster flavor {name!r}: use "
                          f"{' or '.join(embedded_flavor_names())}")
    return flavor


def flavor_for_version(version: str) -> EmbeddedFlavor:
    """The embedded flavor that runs Kafka ``version`` (the default flavor first).

    Raises:
        ConfigError: no embedded flavor runs it (naming every version that one does).
    """
    flavors = [embedded_flavor(n) for n in embedded_flavor_names()]
    for flavor in flavors:
        if version in flavor.runnable_versions():
            return flavor
    known = [v for f in flavors for v in f.runnable_versions()]
    raise ConfigError(f"no embedded broker runs Kafka {version} (the lab runs "
                      f"{', '.join(known)})")


def flavor_of(d: ClusterDescriptor) -> Flavor:
    """The flavor of a descriptor.

    Raises:
        ConfigError: its flavor is not one the lab knows.
    """
    return get_flavor(d.flavor)


def parse_descriptor(data: Any, source: Path | str = "<dict>") -> ClusterDescriptor:
    """Validate parsed YAML as a descriptor of a known flavor that accepts it; errors name
    ``source`` and the offending key.

    Raises:
        ConfigError: one line (``cluster descriptor <source>: invalid flavor: ...``).
    """
    where = f"cluster descriptor {source}"
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping at the top level, "
                          f"got {type(data).__name__}")
    d = parse_model(ClusterDescriptor, data, where)
    flavor = FLAVORS.get(d.flavor)
    if d.flavor in RETIRED:
        raise ConfigError(f"{where}: flavor {d.flavor!r}: {RETIRED[d.flavor]}")
    if flavor is None:
        raise ConfigError(f"{where}: invalid flavor: {d.flavor!r} is not one of "
                          f"{', '.join(FLAVORS)}")
    try:
        flavor.check_descriptor(d)
    except ValueError as exc:
        raise ConfigError(f"{where}: invalid protocol: {exc}") from None
    return d


def load_descriptor(path: Path | str) -> ClusterDescriptor:
    """The descriptor in ``path`` (:func:`parse_descriptor`; a relative ``kafka_home`` is
    resolved against the descriptor's folder, then the project root).

    Raises:
        ClusterError: no ``cluster.yaml`` there, the file ``kafkalab cluster up`` writes in a
            lab's folder (``cluster not up: no descriptor at ...``).
        ConfigError: a descriptor of another name that is not there (a typo is the user's,
            exit 2), or an invalid descriptor.
    """
    from kafkalab.paths import default_descriptor_path

    p = Path(path)
    if not p.is_file():
        if p.name != default_descriptor_path().name or p.is_dir():
            raise ConfigError(f"cluster descriptor {p}: "
                              + ("a directory, not a file" if p.is_dir() else "no such file"))
        raise ClusterError(
            f"cluster not up: no descriptor at {p}; run `kafkalab cluster up` or pass --cluster FILE"
        )
    d = parse_descriptor(read_yaml(p), p)
    if d.kafka_home:
        d = d.model_copy(update={"kafka_home": resolve_kafka_home(d.kafka_home, p)})
    return d
