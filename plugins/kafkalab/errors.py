"""User-facing errors.

Every error a user can cause (bad input, a cluster that is down, a port that is taken)
is a :class:`LabError`. The CLI prints its message as one line and exits non-zero; no
traceback. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class LabError(Exception):
    """An error caused by input or environment, reported as one clear line."""

    exit_code: int = 2


class ConfigError(LabError):
    """A YAML file or an option is malformed or invalid."""


class ClusterError(LabError):
    """The cluster is not up, unreachable, or cannot do what was asked."""

    exit_code = 3


class RunError(LabError):
    """A measurement run failed; what was measured is kept and marked incomplete."""

    exit_code = 4


class RunNeverStartedError(RunError):
    """A step that needs a started run found none (no manifest): waiting cannot change that."""


class CellFailedError(RunError):
    """One cell's measurement failed; its samples and fragment are kept (run incomplete)."""


class AlertError(LabError):
    """An alert could not be delivered. The message never contains the webhook URL."""
