"""Load YAML into the typed models, once, with errors that name the file and the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from kafkalab.config.models import Profile, Workload
from kafkalab.errors import ConfigError
from kafkalab.paths import include_dir

M = TypeVar("M", bound=BaseModel)


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse one YAML mapping; a missing file or a syntax error becomes a ConfigError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}:{where}: malformed YAML: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def describe_validation_error(exc: ValidationError) -> str:
    """The first problem of a pydantic error as `key.path: message`."""
    err = exc.errors()[0]
    key = ".".join(str(p) for p in err["loc"]) or "(top level)"
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown key"
    elif err["type"] == "missing":
        msg = "missing required key"
    msg = msg.removeprefix("Value error, ")
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{key}: {msg}{more}"


def parse_model(model: type[M], data: dict[str, Any], source: str) -> M:
    """Validate ``data`` as ``model``; errors name ``source`` and the offending key."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid {describe_validation_error(exc)}") from None


DEFAULT_WORKLOAD = "images-http-vs-kafka"
"""The workload of a run that names none: seed 000's comparison."""

WORKLOAD_ALIASES: dict[str, str] = {
    "seed000": DEFAULT_WORKLOAD,
    "demo": "images-quick",
    "bench": "bench-latency",
}
"""Former workload names, still accepted: the name a field note or an old command used ->
the workload's descriptive name today."""


def _named_yaml(kind: str, name_or_path: str) -> Path:
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
    path = _named_yaml("profiles", name_or_path)
    return parse_model(Profile, read_yaml(path), str(path))


def load_workload(name_or_path: str) -> Workload:
    """A workload by name (``include/workloads/<name>.yaml``) or by path."""
    path = _named_yaml("workloads", name_or_path)
    return parse_model(Workload, read_yaml(path), str(path))


def known_names(kind: str) -> list[str]:
    """Names of the profiles or workloads shipped under include/."""
    return sorted(p.stem for p in (include_dir() / kind).glob("*.yaml"))



