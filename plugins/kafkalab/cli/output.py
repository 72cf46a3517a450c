"""How every command of ``kafkalab`` prints: its output on stdout (a line, or the one JSON
document of ``--json``), progress and errors on stderr."""

from __future__ import annotations

import json
import sys
from typing import Any


def say(msg: str) -> None:
    """A line of the command's output (stdout)."""
    print(msg, flush=True)


def err(msg: str) -> None:
    """A progress or error line (stderr)."""
    print(msg, file=sys.stderr, flush=True)


def say_json(doc: Any) -> None:
    """The command's one JSON document (stdout)."""
    say(json.dumps(doc, indent=2, default=str))


def say_stopped(stopped: list[dict[str, Any]], what: str, as_json: bool) -> None:
    """The processes a ``down`` stopped: one line each, or ``{"stopped": [...]}``."""
    if as_json:
        say_json({"stopped": stopped})
        return
    if not stopped:
        say(f"{what}: nothing was running")
    for proc in stopped:
        say(f"{proc.get('role', '?')} pid {proc.get('pid')}: {proc.get('action', '?')}")


__all__ = ["err", "say", "say_json", "say_stopped"]
