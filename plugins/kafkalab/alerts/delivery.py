"""Delivering an alert body through Airflow's providers, failures as :class:`AlertError`.

* a ``slackwebhook`` Connection: ``SlackWebhookHook.send(text=..., blocks=...)``
  (apache-airflow-providers-slack);
* an ``http`` Connection: ``HttpHook(method="POST").run(endpoint, json=body)``
  (apache-airflow-providers-http), through :class:`kafkalab.alerts.http_hook.AlertHttpHook`,
  which keeps the lab's ``extra`` keys out of the request headers.

The hooks read the Connection themselves (inside a task through the Task SDK, which masks
its password in the task log; elsewhere from ``AIRFLOW_CONN_<ID>``). The target is the
typed :class:`kafkalab.alerts.webhook.AlertWebhook`; its URL is a secret: error
messages and the hooks' own log lines show only its redacted form (:func:`scrub_secrets`).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from kafkalab.errors import AlertError
from kafkalab.redact import scrub_url

if TYPE_CHECKING:
    from kafkalab.alerts.webhook import AlertWebhook

log = logging.getLogger(__name__)

MAX_REPLY_CHARS = 200
"""How much of a refusing webhook's reply an error message quotes (scrubbed)."""

_SLACK_REFUSAL = re.compile(r"Response body: (?P<body>.*), Status Code: (?P<status>\d+)", re.S)


MIN_SECRET_SEGMENT_CHARS = 6
"""A path segment of the webhook URL at least this long is scrubbed wherever it appears
(a token quoted under another path, e.g. in a refusing server's reply)."""

SCRUBBED_LOGGERS: tuple[str, ...] = ("urllib3.connectionpool",)
"""Library loggers besides the hooks' that name the request path (at DEBUG): scrubbed too
while a delivery runs."""


def scrub_secrets(text: str, webhook: AlertWebhook) -> str:
    """``text`` without the webhook's URL, its path, query and user info, any path segment of
    :data:`MIN_SECRET_SEGMENT_CHARS` or more, nor any of its
    :attr:`~kafkalab.alerts.webhook.AlertWebhook.secrets`."""
    from urllib.parse import urlsplit

    out = scrub_url(text, webhook.url)
    paths = [webhook.endpoint or ""]
    with suppress(ValueError):
        paths.append(urlsplit(webhook.url).path)
    for path in paths:
        if len(path) > 1:
            out = out.replace(path, "/***")
    for secret in webhook.secrets:
        if secret and len(secret) > 1:
            out = out.replace(secret, "***")
    for path in paths:
        for segment in path.split("/"):
            if len(segment) >= MIN_SECRET_SEGMENT_CHARS:
                out = out.replace(segment, "***")
    return out


class _ScrubFilter(logging.Filter):
    """Rewrites a log record's message with :func:`scrub_secrets`."""

    def __init__(self, webhook: AlertWebhook) -> None:
        super().__init__()
        self.webhook = webhook

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler
            return True
        clean = scrub_secrets(message, self.webhook)
        if clean != message:
            record.msg, record.args = clean, None
        return True


@contextmanager
def _scrubbed_hook_log(webhook: AlertWebhook) -> Iterator[logging.Logger]:
    """:data:`~kafkalab.alerts.http_hook.HOOK_LOG`, scrubbing the webhook's secrets from it
    (and from :data:`SCRUBBED_LOGGERS`) while the block runs."""
    from kafkalab.alerts.http_hook import HOOK_LOG

    scrub = _ScrubFilter(webhook)
    loggers = [HOOK_LOG, *(logging.getLogger(name) for name in SCRUBBED_LOGGERS)]
    for logger in loggers:
        logger.addFilter(scrub)
    try:
        yield HOOK_LOG
    finally:
        for logger in loggers:
            logger.removeFilter(scrub)


def _problem(exc: BaseException, webhook: AlertWebhook, timeout_s: float) -> str:
    """One line saying why a delivery failed, scrubbed of the webhook's secrets."""
    import socket

    import requests

    where = f"alert webhook {webhook.where}"
    if isinstance(exc, requests.Timeout | socket.timeout | TimeoutError):
        return f"{where}: no answer within {timeout_s:g} s"
    if isinstance(exc, requests.ConnectionError | OSError):
        reason = getattr(exc, "reason", None)
        if isinstance(reason, socket.timeout | TimeoutError):
            return f"{where}: no answer within {timeout_s:g} s"
        return f"{where}: {type(exc).__name__} (cannot deliver)"
    text = " ".join(str(exc).split())
    refused = _SLACK_REFUSAL.search(text)
    if refused:
        body = refused.group("body").strip("'\"")[:MAX_REPLY_CHARS]
        text = f"HTTP {refused.group('status')} {body}"
    return scrub_secrets(f"{where}: {text[:MAX_REPLY_CHARS * 2]}".rstrip(), webhook)


def _send_slack(webhook: AlertWebhook, body: Mapping[str, Any], timeout_s: float,
                logger: logging.Logger) -> None:
    from airflow.providers.slack.hooks.slack_webhook import SlackWebhookHook

    if "blocks" not in body and "text" not in body:
        raise AlertError(f"alert webhook {webhook.where}: a slackwebhook Connection takes a "
                         "Slack body (text, blocks), not the generic one")
    hook = SlackWebhookHook(slack_webhook_conn_id=webhook.conn_id,
                            timeout=max(1, math.ceil(timeout_s)), logger=logger)
    hook.send(text=body.get("text"), blocks=body.get("blocks"))


def _send_http(webhook: AlertWebhook, body: Mapping[str, Any], timeout_s: float) -> str | None:
    """POST through :class:`AlertHttpHook`; the problem with a non-2xx answer, else None."""
    from kafkalab.alerts.http_hook import AlertHttpHook

    hook = AlertHttpHook(method="POST", http_conn_id=webhook.conn_id)
    resp = hook.run(endpoint=webhook.endpoint, json=body,
                    headers={"Content-Type": "application/json"},
                    extra_options={"timeout": timeout_s, "check_response": False})
    if 200 <= resp.status_code < 300:
        return None
    detail = " ".join((resp.text or "")[:MAX_REPLY_CHARS].split())
    return scrub_secrets(f"alert webhook {webhook.where}: HTTP {resp.status_code} {detail}",
                         webhook).rstrip()


def send_alert(webhook: AlertWebhook, body: dict[str, Any], timeout_s: float = 10) -> None:
    """Deliver ``body`` through the hook of the webhook's Connection type.

    ``slackwebhook``: ``SlackWebhookHook.send(text=, blocks=)`` (success: HTTP 200);
    ``http``: ``HttpHook`` ``POST`` of ``body`` as JSON to the Connection's URL +
    ``extra.endpoint`` (success: any 2xx).

    Raises:
        AlertError: on a connection problem, a timeout, a refusing answer or a Connection the
            hook cannot use. One line showing only the redacted URL and the Connection id,
            never the path, token or password; the hook's exception (whose text may hold the
            URL) is not chained.
    """
    if not webhook.url:
        raise AlertError(f"alert Connection {webhook.conn_id!r} names no webhook")
    problem: str | None = None
    with _scrubbed_hook_log(webhook) as logger:
        try:
            if webhook.conn_type == "slackwebhook":
                _send_slack(webhook, body, timeout_s, logger)
            else:
                problem = _send_http(webhook, body, timeout_s)
        except AlertError as exc:
            problem = str(exc)
        except Exception as exc:  # the providers raise AirflowException, requests', urllib's
            problem = _problem(exc, webhook, timeout_s)
    if problem is not None:
        log.warning("%s", problem)
        # Raised outside the except block: no __context__ carrying the URL.
        raise AlertError(problem)
    log.info("alert delivered to %s", webhook.where)


__all__ = ["MAX_REPLY_CHARS", "MIN_SECRET_SEGMENT_CHARS", "SCRUBBED_LOGGERS", "scrub_secrets",
           "send_alert"]
