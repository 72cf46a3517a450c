"""The Airflow Connections the lab reads, one hook-style class each, returning typed settings.

| conn id | class | settings |
|---|---|---|
| ``kafkalab_cluster`` (optional) | :class:`ClusterConnection` | the cluster descriptor path (``extra.descriptor_path``) |
| ``kafkalab_alert_webhook`` (optional) | :class:`AlertWebhookConnection` | :class:`AlertWebhook` (URL, body format, report base URL) |

A Connection is looked up only when a settings method is called (inside a task), never when
the class is built, and a missing Connection is not an error: each class says what is used
instead. Airflow is imported inside the lookup, so this module is cheap at DAG-parse time.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, get_args

from kafkalab.errors import ConfigError
from kafkalab.paths import default_descriptor_path
from kafkalab.store import LabData

if TYPE_CHECKING:
    from kafkalab.alerts import AlertFormat

log = logging.getLogger(__name__)

CLUSTER_CONN_ID = "kafkalab_cluster"
ALERT_CONN_ID = "kafkalab_alert_webhook"


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


def connection_extra(conn: Any) -> dict[str, Any]:
    """A Connection's ``extra`` as a dict (empty when absent or not a JSON object)."""
    try:
        extra = conn.extra_dejson
    except Exception:
        return {}
    return dict(extra) if isinstance(extra, Mapping) else {}


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


@dataclass(frozen=True)
class AlertWebhook:
    """Where and how alerts are posted. The URL is a secret: never log it."""

    url: str
    """The whole webhook URL; empty when the Connection names no host."""
    fmt: AlertFormat
    """The body format: ``slack`` (blocks) or ``generic`` (the lab's JSON)."""
    report_base_url: str | None = None
    """Where the report directory is served; None: alerts link a ``file://`` URI."""

    @classmethod
    def from_connection(cls, conn: Any) -> AlertWebhook:
        """The settings of a webhook Connection.

        * ``extra.webhook_url``: the whole URL (wins over everything else);
        * else ``[schema://]host[:port]`` + path, where the scheme is ``schema`` when it is
          ``http``/``https`` (HttpHook's convention, default ``https`` unless ``conn_type``
          is ``http``), the path is ``extra.endpoint``, else the password (Slack-webhook
          style: the secret token path lives in the password), else a non-scheme ``schema``
          (what the URI form ``http://host:port/path`` puts there);
        * ``host`` may itself be a full ``http(s)://...`` URL;
        * ``extra.format``: ``slack`` (default) or ``generic``; ``extra.report_base_url``:
          where the report directory is served (default: a ``file://`` link).

        Raises:
            ConfigError: ``extra.format`` is neither ``slack`` nor ``generic``.
        """
        extra = connection_extra(conn)
        fmt = _alert_format(extra.get("format") or "slack", getattr(conn, "conn_id", None))
        report_base = str(extra["report_base_url"]) if extra.get("report_base_url") else None
        if extra.get("webhook_url"):
            return cls(str(extra["webhook_url"]), fmt, report_base)
        host = (conn.host or "").strip()
        schema = (conn.schema or "").strip()
        path = str(extra.get("endpoint") or "") or (conn.password or "")
        if not path and schema and schema.lower() not in ("http", "https"):
            path = schema
        if host.startswith(("http://", "https://")):
            base = host.rstrip("/")
        else:
            if not host:
                return cls("", fmt, report_base)
            scheme = schema.lower() if schema.lower() in ("http", "https") else (
                "http" if (conn.conn_type or "") == "http" else "https")
            base = f"{scheme}://{host}" + (f":{conn.port}" if conn.port else "")
        if path and not path.startswith("/"):
            path = "/" + path
        return cls(base + path, fmt, report_base)

    def report_url(self, run_id: str, data: LabData | None = None) -> str:
        """Link to a run's report page: ``<report_base_url>/<run_id>/index.html``, or the
        ``file://`` URI of the page in ``data`` (default: the lab data directory)."""
        if self.report_base_url:
            return f"{self.report_base_url.rstrip('/')}/{run_id}/index.html"
        lab = data if data is not None else LabData()
        return (lab.report_page_dir(run_id) / "index.html").as_uri()


def _alert_format(value: Any, conn_id: str | None) -> AlertFormat:
    from kafkalab.alerts import AlertFormat

    for fmt in get_args(AlertFormat):
        if value == fmt:
            return fmt
    known = " or ".join(repr(f) for f in get_args(AlertFormat))
    raise ConfigError(f"Connection {conn_id or ALERT_CONN_ID!r}: extra.format must be {known}, "
                      f"got {value!r}")


class AlertWebhookConnection(LabConnection):
    """``kafkalab_alert_webhook``: the webhook alerts are posted to (see
    :meth:`AlertWebhook.from_connection` for the Connection's fields)."""

    default_conn_id = ALERT_CONN_ID

    def settings(self) -> AlertWebhook | None:
        """The webhook settings; None when the Connection is missing or names no URL."""
        conn = self.get_connection()
        if conn is None:
            return None
        hook = AlertWebhook.from_connection(conn)
        return hook if hook.url else None


__all__ = [
    "ALERT_CONN_ID",
    "CLUSTER_CONN_ID",
    "AlertWebhook",
    "AlertWebhookConnection",
    "ClusterConnection",
    "LabConnection",
    "connection_extra",
]
