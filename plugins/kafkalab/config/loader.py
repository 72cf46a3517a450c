"""Profiles and workloads by name or path, read once into their typed models (the YAML
reading and the wording of a bad key: :mod:`kafkalab.yamlio`)."""

from __future__ import annotations

from pathlib import Path

from kafkalab.config.models import Profile, Workload
from kafkalab.errors import ConfigError
from kafkalab.paths import include_dir
from kafkalab.yamlio import parse_model, read_yaml

DEFAULT_WORKLOAD = "images-http-vs-kafka"
"""The workload of a run that names none: seed 000's comparison."""

WORKLOAD_ALIASES: dict[str, str] = {
    "seed000": DEFAULT_WORKLOAD,
    "demo": "images-quick",
    "bench": "bench-latency",
}
"""Former workload names, still accepted: the name a field note or an old command used ->
the workload's descriptive name today."""


def named_yaml_path(kind: str, name_or_path: str) -> Path:
    """The YAML of a profile or workload (``kind``: ``profiles`` or ``workloads``): a path as
    given (a ``.yaml``/``.yml`` name or one with a folder), else
    ``include/<kind>/<name>.yaml`` (a former workload name through :data:`WORKLOAD_ALIASES`).

    Raises:
        ConfigError: an unknown name (the message lists the known ones).
    """
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or len(candidate.parts) > 1:
        return candidate  # a path the user gave (relative to where they run the command)
    if kind == "workloads":
        name_or_path = WORKLOAD_ALIASES.get(name_or_path, name_or_path)
    path = include_dir() / kind / f"{name_or_path}.yaml"
    if not path.exists():
        known = known_names(kind)
        raise ConfigError(f"unknown {kind[:-1]} {name_or_path!r} (known: {', '.join(known)})")
    return path


def load_profile(name_or_path: str) -> Profile:
    """A profile by name (``include/profiles/<name>.yaml``) or by path."""
    path = named_yaml_path("profiles", name_or_path)
    return parse_model(Profile, read_yaml(path), str(path))


def load_workload(name_or_path: str) -> Workload:
    """A workload by name (``include/workloads/<name>.yaml``) or by path."""
    path = named_yaml_path("workloads", name_or_path)
    return parse_model(Workload, read_yaml(path), str(path))


def known_names(kind: str) -> list[str]:
    """Names of the profiles or workloads shipped under include/."""
    return sorted(p.stem for p in (include_dir() / kind).glob("*.yaml"))



