"""Webhook URLs are secrets: their printable form, and scrubbing them out of text.

The path (and query, and user info) of a webhook URL carries its token. Nothing the lab
prints, logs or sends contains it: :func:`redact_url` is the only form ever shown, and
:func:`scrub_url` removes the URL and its secret parts from a text (an error message, a
reply body) before it is shown.
"""

from __future__ import annotations

from urllib.parse import urlsplit


def redact_url(url: str) -> str:
    """Return ``scheme://host[:port]/***`` for a URL: no user info, path, query or fragment."""
    try:
        parts = urlsplit(str(url))
        host = parts.hostname
        port = parts.port
    except ValueError:
        return "***"
    if not parts.scheme or not host:
        return "***"
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc = f"{netloc}:{port}"
    return f"{parts.scheme}://{netloc}/***"


def scrub_url(text: str, url: str) -> str:
    """``text`` with ``url`` replaced by :func:`redact_url` of it, and its path, query,
    password and user name (any longer than one character) replaced by ``/***``."""
    if not url:
        return text
    out = text.replace(url, redact_url(url))
    try:
        parts = urlsplit(url)
    except ValueError:
        return out
    for secret in (parts.path, parts.query, parts.password or "", parts.username or ""):
        if secret and len(secret) > 1:
            out = out.replace(secret, "/***")
    return out


__all__ = ["redact_url", "scrub_url"]
