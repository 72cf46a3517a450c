"""YAML files into typed models, once, with errors that name the file and the key.

Every YAML the lab reads (profiles, workloads, load and fault workloads, the drift rules,
cluster descriptors) goes through :func:`read_yaml` and :func:`parse_model`, so a bad key is
worded the same way everywhere: ``<file>: invalid <key.path>: <problem>``.

This is also the one place where a YAML file's size is bounded, since a file may come from
an Airflow trigger (``cluster_descriptor`` is any path):

* at most :data:`MAX_YAML_BYTES` bytes, UTF-8 text (a binary file is a :class:`ConfigError`,
  not a ``UnicodeDecodeError``);
* anchors and aliases (``&a`` / ``*a``) are expanded at most to :data:`MAX_EXPANDED_SIZE`
  (a "billion laughs" file of 553 bytes expands to hundreds of millions of characters as
  soon as anything turns it into text), and never into themselves;
* nested no deeper than Python's recursion allows (PyYAML composes recursively).

:func:`scalar_texts` is the rule for a mapping of Kafka properties (or broker assumptions):
its names and values are single scalars, given back as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from kafkalab.errors import ConfigError

M = TypeVar("M", bound=BaseModel)

MAX_YAML_BYTES = 1024 * 1024
"""The largest YAML file the lab reads (1 MiB; the lab's own are a few KiB)."""

MAX_EXPANDED_SIZE = 4 * MAX_YAML_BYTES
"""The largest a YAML document may be once its aliases are expanded: one per node plus the
characters of every scalar. A file without aliases stays below ``2 * MAX_YAML_BYTES``."""


class _TooLarge(Exception):
    """Aliases that expand past :data:`MAX_EXPANDED_SIZE`, or into themselves."""


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _expanded_size(root: yaml.Node, limit: int = MAX_EXPANDED_SIZE) -> int:
    """The size of a composed YAML document with every alias expanded (one per node plus the
    characters of each scalar), counted once per distinct node (linear in the file).

    Raises:
        _TooLarge: the size passes ``limit``, or an alias refers to a node that contains it
            (a recursive document).
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # the path from the root to the node being counted
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            own = len(node.value) if isinstance(node, yaml.ScalarNode) else 0
            size = 1 + own + sum(sizes[id(c)] for c in _children(node))
            if size > limit:
                raise _TooLarge(f"its aliases expand past {limit:,} characters")
            sizes[key] = size
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise _TooLarge("an alias refers to a node that contains it")
        open_nodes.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in open_nodes:
                raise _TooLarge("an alias refers to a node that contains it")
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _read_text(path: Path) -> str:
    """The file's text: at most :data:`MAX_YAML_BYTES`, UTF-8."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_YAML_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    if len(raw) > MAX_YAML_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_YAML_BYTES // 2**20} MiB: not a YAML "
                          "file of the lab's")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (an invalid byte at offset {exc.start}: "
                          "a binary file?)") from None


def _load(text: str, path: Path) -> Any:
    """``yaml.safe_load`` of ``text``, refusing an alias expansion past the bound."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            _expanded_size(node)
        except _TooLarge as exc:
            raise ConfigError(f"{path}: refused: {exc} (a YAML bomb?)") from None
        return loader.construct_document(node)
    finally:
        loader.dispose()


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse one YAML mapping (bounded as the module doc says).

    Raises:
        ConfigError: a missing, unreadable, too large or non-UTF-8 file; a syntax error; an
            alias expansion past :data:`MAX_EXPANDED_SIZE`; nesting too deep; a top level
            that is not a mapping.
    """
    text = _read_text(path)
    try:
        data = _load(text, path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}:{where}: malformed YAML: {problem}") from None
    except RecursionError:
        raise ConfigError(f"{path}: refused: nested too deeply") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


_SCALARS = (str, int, float)
"""What one property name or value may be (``bool`` is an ``int``)."""


def scalar_texts(value: object) -> object:
    """A YAML mapping of scalars (Kafka properties, broker assumptions) as text: ``True`` ->
    ``"true"``, ``3`` -> ``"3"``. Anything but a mapping is returned as given, for the
    model's own validation to refuse.

    Raises:
        ValueError: a name or value that is not one scalar (a list, a mapping, nothing):
            the message names the key and the type, never the value.
    """
    if not isinstance(value, dict):
        return value
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(k, _SCALARS):
            raise ValueError(f"a name must be text, got a {type(k).__name__}")
        if not isinstance(v, _SCALARS):
            got = "nothing (null)" if v is None else f"a {type(v).__name__}"
            raise ValueError(f"{str(k)!r}: expected a single value (text, a number or "
                             f"true/false), got {got}")
        out[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


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


__all__ = [
    "MAX_EXPANDED_SIZE",
    "MAX_YAML_BYTES",
    "describe_validation_error",
    "parse_model",
    "read_yaml",
    "scalar_texts",
]
