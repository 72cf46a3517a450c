"""Java, which every JVM the lab starts needs (Kafka brokers, ZooKeeper, Kafka's tools)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from kafkalab.errors import ClusterError

__all__ = ["ensure_java", "properties_text"]


def ensure_java() -> str:
    """Path of the ``java`` executable (PATH, then $JAVA_HOME/bin)."""
    java = shutil.which("java")
    if java is None and os.environ.get("JAVA_HOME"):
        candidate = Path(os.environ["JAVA_HOME"]) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            java = str(candidate)
    if java is None:
        raise ClusterError("java not found; run `make setup`")
    return java


def properties_text(props: dict[str, Any], what: str) -> str:
    """A Java ``.properties`` file of ``props`` (in their order), under a comment saying the
    lab wrote it for ``what`` and rewrites it on every ``cluster up``."""
    lines = [f"# written by kafkalab ({what}); regenerated on every `cluster up`"]
    lines += [f"{k}={v}" for k, v in props.items()]
    return "\n".join(lines) + "\n"
