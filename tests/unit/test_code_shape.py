"""The house rules issue 24 set, checked on the code as it is: no function of the package
longer than 120 lines, and a broker flavor's name only in its own module (everything else
asks the flavor registry, ``kafkalab.cluster.flavors``)."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "plugins" / "kafkalab"

MAX_FUNCTION_LINES = 120


def _sources(*folders: Path) -> list[Path]:
    return sorted(p for folder in folders for p in folder.rglob("*.py"))


def test_no_function_of_the_package_is_longer_than_120_lines() -> None:
    long = []
    for path in _sources(PACKAGE):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines})")
    assert long == []


def test_a_flavors_name_appears_only_in_its_own_module() -> None:
    """No runtime module outside ``cluster/flavors/kafka09/`` (and the registry that lists
    the flavors) holds the name ``kafka09`` in code, a string or a comment: the rest of the
    lab asks the registry (:data:`~kafkalab.cluster.flavors.DEFAULT_EMBEDDED`,
    :data:`~kafkalab.cluster.flavors.FAULT_CLUSTER`, a flavor's features)."""
    own = PACKAGE / "cluster" / "flavors"
    found = []
    for path in _sources(PACKAGE, ROOT / "dags"):
        if path.is_relative_to(own / "kafka09") or path == own / "__init__.py":
            continue
        text = path.read_text(encoding="utf-8")
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if "kafka09" in tok.string:
                found.append(f"{path.relative_to(ROOT)}:{tok.start[0]}")
    assert found == []
