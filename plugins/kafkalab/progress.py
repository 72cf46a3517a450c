"""Progress callbacks: how long-running library functions tell the caller what they do.

A :data:`Progress` takes one human-readable line. The CLI prints it to stderr, an Airflow
task logs it, a test collects it in a list; :func:`noop` ignores it.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str], None]
"""One line of progress (no trailing newline)."""


def noop(_msg: str) -> None:
    """A :data:`Progress` that says nothing."""
    return None


__all__ = ["Progress", "noop"]
