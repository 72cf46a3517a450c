"""The Airflow Connections the lab reads, one hook-style class each, returning typed settings.

| conn id | class | settings |
|---|---|---|
| ``kafkalab_cluster`` (optional) | :class:`ClusterConnection` | the cluster descriptor path (``extra.descriptor_path``) |
| ``kafkalab_alert_webhook`` (optional) | :class:`AlertWebhookConnection` | :class:`kafkalab.alerts.webhook.AlertWebhook` (conn type ``slackwebhook`` or ``http``, body format, report base URL) |

A Connection is looked up only when a settings method is called (inside a task), never when
the class is built, and a missing Connection is not an error: each class says what is used
instead. Airflow is imported inside the lookup, so this module is cheap at DAG-parse time.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

from kafkalab.alerts.webhook import ALERT_CONN_ID, AlertWebhook, connection_extra
from kafkalab.paths import default_descriptor_path

log = logging.getLogger(__name__)

CLUSTER_CONN_ID = "kafkalab_cluster"


class LabConnection:
    """One Airflow Connection, looked up lazily (base of the lab's connection classes).

    Args:
        conn_id: the Connection id (default: the class's :attr:`default_conn_id`).
    """

    default_conn_id: ClassVar[str]

    def __init__(self, conn_id: str | None = None) -> None:
        self.conn_id = conn_id or self.default_conn_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.conn_id!r})"

    def get_connection(self) -> Any | None:
        """The Airflow Connection, or None when it is not defined (or Airflow is missing)."""
        try:
            from airflow.sdk import BaseHook
            from airflow.sdk.exceptions import AirflowNotFoundException
        except ImportError:  # pragma: no cover - Airflow is part of the stack
            return None
        try:
            return BaseHook.get_connection(self.conn_id)
        except AirflowNotFoundException:
            return None


# --------------------------------------------------------------------------- cluster


class ClusterConnection(LabConnection):
    """``kafkalab_cluster``: where the cluster descriptor YAML is (``extra.descriptor_path``)."""

    default_conn_id = CLUSTER_CONN_ID

    def descriptor_path(self, override: str | None = None) -> Path:
        """The descriptor to use: ``override`` (the DAG's ``cluster_descriptor`` param), else
        the Connection's ``extra.descriptor_path``, else
        :func:`kafkalab.paths.default_descriptor_path` (``<lab_dir>/cluster.yaml``)."""
        if override:
            return Path(override).expanduser()
        conn = self.get_connection()
        configured = connection_extra(conn).get("descriptor_path") if conn is not None else None
        if configured:
            return Path(str(configured)).expanduser()
        return default_descriptor_path()


# --------------------------------------------------------------------------- alert webhook


class AlertWebhookConnection(LabConnection):
    """``kafkalab_alert_webhook``: the Connection alerts are delivered through (see
    :meth:`AlertWebhook.from_connection` for its fields)."""

    default_conn_id = ALERT_CONN_ID

    def settings(self) -> AlertWebhook | None:
        """The webhook settings; None when the Connection is missing or names no target
        (an ``http`` one without a host, a ``slackwebhook`` one without a password: logged).

        Raises:
            ConfigError: a malformed Connection (:meth:`AlertWebhook.from_connection`).
        """
        conn = self.get_connection()
        if conn is None:
            return None
        hook = AlertWebhook.from_connection(conn)
        if not hook.url:
            log.warning("Connection %r names no alert target (%s without %s): alerts not sent",
                        self.conn_id, hook.conn_type,
                        "a password" if hook.conn_type == "slackwebhook" else "a host")
            return None
        return hook


__all__ = [
    "CLUSTER_CONN_ID",
    "AlertWebhookConnection",
    "ClusterConnection",
    "LabConnection",
]
