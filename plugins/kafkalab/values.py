"""Coercing loosely typed values (pandas cells, numpy scalars, JSON, XCom) into plain ones.

Aggregates and drift records come back from Parquet as numpy scalars, ``NaN`` or ``pd.NA``;
XCom and JSON files need plain values. These helpers are the one place that decides what a
missing number or a boolean-ish string means.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def is_missing(value: Any) -> bool:
    """True for None, NaN, ``pd.NA`` and ``pd.NaT``; False for anything else (lists included)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    try:
        import pandas as pd

        return bool(pd.isna(value))
    except (TypeError, ValueError, ImportError):
        return False


def as_float(value: Any) -> float | None:
    """A finite float, or None for a missing, non-numeric or infinite value."""
    if is_missing(value):
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def as_bool(value: Any) -> bool:
    """Truthiness as the lab's files mean it: missing is False; the strings ``true``, ``1``
    and ``yes`` (any case) are True, every other string False."""
    if is_missing(value):
        return False
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def jsonable(value: Any) -> Any:
    """Recursively turn ``value`` into JSON-able plain values.

    numpy scalars become Python numbers; NaN and infinities become None; mappings get string
    keys; tuples and sets become lists; anything else unknown (paths, datetimes) its ``str``.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v) for v in value]
    if hasattr(value, "item"):
        try:
            return jsonable(value.item())
        except (TypeError, ValueError):
            pass
    return str(value)


__all__ = ["as_bool", "as_float", "is_missing", "jsonable"]
