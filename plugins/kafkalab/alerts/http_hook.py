""":class:`AlertHttpHook`: Airflow's ``HttpHook`` as the lab posts generic alerts with it.

Imported only when an alert is delivered (the HTTP provider is not cheap to import).
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

from airflow.providers.http.hooks.http import HttpHook

from kafkalab.alerts.webhook import LAB_EXTRA_KEYS

HOOK_LOG = logging.getLogger("kafkalab.alerts.hooks")
"""The logger the hooks (and ``slack_sdk``) write to during a delivery; while one runs, its
records are scrubbed of the webhook's secrets (:mod:`kafkalab.alerts.delivery`)."""


class AlertHttpHook(HttpHook):
    """``HttpHook`` that does not send the lab's ``extra`` keys (:data:`LAB_EXTRA_KEYS`:
    ``format``, ``report_base_url``, ``endpoint``) as request headers (``HttpHook`` sends
    every ``extra`` key it does not know as a header), and logs to :data:`HOOK_LOG`.

    Everything else is ``HttpHook``'s: the URL (``host`` / ``schema`` / ``port``), basic auth
    from login and password, the other ``extra`` keys as headers, ``timeout`` / ``proxies`` /
    ``verify``.
    """

    _log = HOOK_LOG  # type: ignore[assignment]

    @classmethod
    def get_connection(cls, conn_id: str) -> Any:
        """The Connection ``conn_id`` with the lab's keys taken out of its ``extra``."""
        conn = copy.copy(super().get_connection(conn_id))
        extra = {k: v for k, v in dict(conn.extra_dejson or {}).items()
                 if k not in LAB_EXTRA_KEYS}
        conn.extra = json.dumps(extra) if extra else None
        return conn


__all__ = ["HOOK_LOG", "AlertHttpHook"]
