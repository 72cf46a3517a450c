"""YAML files into typed models, once, with errors that name the file and the key.

Every YAML the lab reads (profiles, workloads, load and fault workloads, the drift rules,
cluster descriptors) goes through :func:`read_yaml` and :func:`parse_model`, so a bad key is
worded the same way everywhere: ``<file>: invalid <key.path>: <problem>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from kafkalab.errors import ConfigError

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


__all__ = ["describe_validation_error", "parse_model", "read_yaml"]
