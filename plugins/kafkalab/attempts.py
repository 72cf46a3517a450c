"""Re-measurement: an attempt replaces what it re-measures only when that loses nothing.

A latency cell's Parquet file, a load cell's directory and a fault trial's directory are each
*measured in an attempt*: written under a hidden sibling name (:func:`attempt_path`,
``.attempt-<name>``), which every reader skips (the lab's globs name ``part-*``, ``cell=*``,
``trial=*``; Spark and Hadoop skip names starting with ``.`` or ``_``). When the attempt ends,
:func:`settle` decides (:func:`replaces`):

* the attempt **replaces** the earlier measurement (renamed over it; the earlier one is
  removed) when it completed, or when there is no earlier complete measurement to protect and
  the attempt has something to show;
* otherwise the earlier measurement **stays** as it was, and the attempt is kept beside it as
  ``.failed-<UTC stamp>-<name>`` (hidden: never aggregated, kept for inspection; ``make
  clean-data`` removes it with the rest of the data).

So a re-run that fails, is skipped or finds nothing never deletes a good measurement, and a
first measurement that fails still lands where the reports find it (with its ``failed``
status). A crash leaves at most a hidden ``.attempt-`` (moved aside as ``.failed-`` by
:func:`recover` at the next attempt) or, in the instant between the two renames of a
directory swap, a hidden ``.replaced-<name>`` that :func:`recover` puts back.

Stdlib only; no I/O at import.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from kafkalab.store import _fsync_dir

ATTEMPT_PREFIX = ".attempt-"
FAILED_PREFIX = ".failed-"
REPLACED_PREFIX = ".replaced-"


def attempt_path(final: Path) -> Path:
    """Where an attempt at ``final`` (a file or a directory) is written: ``.attempt-<name>``."""
    final = Path(final)
    return final.with_name(ATTEMPT_PREFIX + final.name)


def final_path(attempt: Path) -> Path:
    """Where the attempt written at ``attempt`` (an :func:`attempt_path`) lands when it
    replaces: the inverse of :func:`attempt_path`."""
    attempt = Path(attempt)
    return attempt.with_name(attempt.name.removeprefix(ATTEMPT_PREFIX))


def replaces(*, earlier_complete: bool, attempt_complete: bool, attempt_has_data: bool) -> bool:
    """Whether an attempt takes the place of the earlier measurement (see the module's rule).

    ``earlier_complete``: an earlier measurement exists and completed; ``attempt_complete``:
    this attempt completed; ``attempt_has_data``: it wrote something (rows, a ``cell.json``).
    """
    if attempt_complete:
        return True
    return not earlier_complete and attempt_has_data


def _stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _set_aside(attempt: Path, final: Path) -> Path:
    """Rename ``attempt`` to ``.failed-<stamp>-<name>`` beside ``final`` (a free name)."""
    base = f"{FAILED_PREFIX}{_stamp()}-{final.name}"
    kept = final.with_name(base)
    n = 1
    while kept.exists():
        n += 1
        kept = final.with_name(f"{FAILED_PREFIX}{_stamp()}.{n}-{final.name}")
    os.rename(attempt, kept)
    return kept


def settle(final: Path, *, replace: bool) -> Path | None:
    """End the attempt at ``final`` (written at :func:`attempt_path`).

    ``replace`` (from :func:`replaces`): the attempt is renamed over ``final`` (a directory is
    swapped through ``.replaced-<name>``, then the earlier one is removed); with nothing in
    the attempt, ``final`` is removed (a complete re-measurement that found nothing).
    Otherwise ``final`` stays and the attempt, if any, is kept as ``.failed-<stamp>-<name>``.

    Returns the path of a kept failed attempt, else None. The parent directory is fsynced.
    """
    final = Path(final)
    attempt = attempt_path(final)
    kept: Path | None = None
    if not replace:
        if attempt.exists():
            kept = _set_aside(attempt, final)
    elif not attempt.exists():
        _remove(final)
    elif attempt.is_dir() and final.exists():
        old = final.with_name(REPLACED_PREFIX + final.name)
        _remove(old)
        os.rename(final, old)
        os.rename(attempt, final)
        _remove(old)
    else:
        os.replace(attempt, final)
    _fsync_dir(final.parent)
    return kept


def recover(final: Path) -> Path | None:
    """Before a new attempt at ``final``: put back an earlier measurement a crash left as
    ``.replaced-<name>`` (when ``final`` is missing), and move a crashed attempt aside as
    ``.failed-…`` (its rows are kept, never aggregated). Returns the path of that kept attempt,
    else None."""
    final = Path(final)
    old = final.with_name(REPLACED_PREFIX + final.name)
    if old.exists():
        if final.exists():
            _remove(old)
        else:
            os.rename(old, final)
    attempt = attempt_path(final)
    if not attempt.exists():
        return None
    return _set_aside(attempt, final)


__all__ = ["ATTEMPT_PREFIX", "FAILED_PREFIX", "REPLACED_PREFIX", "attempt_path", "final_path",
           "recover", "replaces", "settle"]
