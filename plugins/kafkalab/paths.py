"""Where the lab keeps its things. Pure functions: no I/O at import time.

- ``repo_root()``: the nearest ancestor of the current directory holding a
  ``pyproject.toml`` whose project name is ``kafkalab``; else the current directory.
- ``lab_dir()``: ``$KAFKALAB_HOME`` or ``<root>/.lab`` (Kafka distribution, embedded
  cluster state, descriptor).
- ``data_dir()``: ``$KAFKALAB_DATA_DIR`` or ``<root>/lab-data`` (measurements).
- ``default_descriptor_path()``: ``<lab_dir>/cluster.yaml``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_NAME_RE = re.compile(r'^\s*name\s*=\s*["\']kafkalab["\']\s*$', re.MULTILINE)


def _is_kafkalab_root(directory: Path) -> bool:
    pyproject = directory / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return False
    return bool(_NAME_RE.search(text))


def repo_root(start: Path | None = None) -> Path:
    """The kafkalab checkout containing ``start`` (default: cwd), else ``start`` itself."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if _is_kafkalab_root(directory):
            return directory
    return here


def lab_dir() -> Path:
    env = os.environ.get("KAFKALAB_HOME")
    if env:
        return Path(env).expanduser().resolve()
    return repo_root() / ".lab"


def data_dir() -> Path:
    env = os.environ.get("KAFKALAB_DATA_DIR")
    if env:
        return Path(env).expanduser().resolve()
    return repo_root() / "lab-data"


def default_descriptor_path() -> Path:
    return lab_dir() / "cluster.yaml"
