"""Delivering an alert body: one JSON POST to a webhook, failures as :class:`AlertError`."""

from __future__ import annotations

import json
import logging
from typing import Any

from kafkalab.alerts.secrets import redact_url, scrub_url
from kafkalab.errors import AlertError

log = logging.getLogger(__name__)

MAX_REPLY_CHARS = 200
"""How much of a refusing webhook's reply an error message quotes (scrubbed)."""


def send_alert(webhook_url: str, body: dict[str, Any], timeout_s: float = 10) -> None:
    """POST ``body`` as JSON to the webhook; any 2xx answer is success.

    Raises:
        AlertError: on a connection problem, a timeout or a non-2xx answer. The message
            shows only :func:`redact_url` of the webhook, never its path or token, and the
            underlying exception (whose text holds the URL) is not chained.
    """
    import requests

    where = redact_url(webhook_url)
    if not webhook_url:
        raise AlertError("alert webhook URL is empty")
    problem: str | None = None
    try:
        resp = requests.post(
            webhook_url,
            data=json.dumps(body, allow_nan=False, default=str).encode("utf-8"),
            headers={"Content-Type": "application/json"},
            timeout=timeout_s,
        )
    except requests.Timeout:
        problem = f"alert webhook {where}: no answer within {timeout_s:g} s"
    except requests.RequestException as exc:
        problem = f"alert webhook {where}: {type(exc).__name__} (cannot deliver)"
    else:
        if not 200 <= resp.status_code < 300:
            detail = scrub_url((resp.text or "")[:MAX_REPLY_CHARS].strip(), webhook_url)
            problem = f"alert webhook {where}: HTTP {resp.status_code} {detail}".rstrip()
    if problem is not None:
        log.warning("%s", problem)
        # Raised outside the except block: no __context__ carrying the URL.
        raise AlertError(problem)
    log.info("alert delivered to %s", where)


__all__ = ["send_alert"]
