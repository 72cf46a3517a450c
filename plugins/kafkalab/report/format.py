"""Text for the report's HTML: escaping, number formats, relative links, inlined assets.

Everything here is pure except :func:`asset`, which reads a file shipped inside the package
(``kafkalab/report/assets/``), never one from the data directory.
"""

from __future__ import annotations

import html
import os
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kafkalab.cluster.descriptor import EMULATOR_LABEL
from kafkalab.values import as_float

MISSING = "—"
"""What a table shows for a value that is absent."""


def esc(value: Any) -> str:
    """HTML-escape any value (quotes included; None -> empty)."""
    return "" if value is None else html.escape(str(value), quote=True)


def fmt_num(value: Any) -> str:
    """A number for tables: 3-4 significant digits, thousands separators, '—' if missing."""
    f = as_float(value)
    if f is None:
        return MISSING
    a = abs(f)
    if a >= 1000:
        return f"{f:,.0f}"
    if a >= 100:
        return f"{f:.1f}"
    if a >= 1:
        return f"{f:.2f}"
    if a == 0:
        return "0"
    return f"{f:.3g}"


def fmt_count(value: Any) -> str:
    """A count: ``1,000``; ``—`` if missing."""
    f = as_float(value)
    return MISSING if f is None else f"{int(f):,}"


def fmt_pct(value: Any) -> str:
    """A signed percentage (``+12.3%``), '—' if missing."""
    f = as_float(value)
    return MISSING if f is None else f"{f:+.1f}%"


def rel_href(target: Path, from_dir: Path) -> str:
    """A relative, URL-quoted href from a page in ``from_dir`` to ``target``."""
    rel = os.path.relpath(target, from_dir).replace(os.sep, "/")
    return quote(rel, safe="/._-=")


def asset(name: str) -> str:
    """The text of ``assets/<name>`` (the report's CSS and script, inlined in every page)."""
    return resources.files("kafkalab.report").joinpath("assets", name).read_text("utf-8")


def emu_span() -> str:
    """The inline emulator label placed beside a figure measured on an emulator broker."""
    return f'<span class="emu">{esc(EMULATOR_LABEL)}</span>'


def emu_mark(emulator: bool) -> str:
    """`` <the emulator label>`` after a name or caption when ``emulator``, else ``""``."""
    return f" {emu_span()}" if emulator else ""


def emu_banner(detail: str = "") -> str:
    """The emulator banner above a chart or page; ``detail`` (HTML) follows the label."""
    return f'<div class="emu-banner">{esc(EMULATOR_LABEL)}{detail}</div>'


__all__ = [
    "MISSING",
    "asset",
    "emu_banner",
    "emu_mark",
    "emu_span",
    "esc",
    "fmt_count",
    "fmt_num",
    "fmt_pct",
    "rel_href",
]
