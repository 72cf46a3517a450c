"""The direction of imports is a test: import-linter's contracts in ``pyproject.toml``
(``[tool.importlinter]``) hold for the code as it is (``make lint`` runs the same check)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _lint_imports() -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("lint-imports")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "plugins"), str(ROOT)]))
    return subprocess.run([str(exe), "--no-cache"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def test_the_layers_hold_and_no_package_has_an_import_cycle() -> None:
    done = _lint_imports()
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "broken" not in done.stdout.split("Contracts:")[-1].replace("0 broken", "")


def test_the_contracts_cover_every_top_level_module_of_the_package() -> None:
    """A new module or subpackage of ``kafkalab`` must be placed in a layer (else the layers
    contract says nothing about it)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    placed = {name.strip() for layer in layers["layers"]
              for name in layer.replace("|", ":").split(":")}
    package = ROOT / "plugins" / "kafkalab"
    present = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    present |= {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert present - placed == set(), "modules in no layer of pyproject.toml"
    assert placed - present == set(), "layers naming modules that do not exist"
