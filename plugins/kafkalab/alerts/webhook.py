"""The settings of the alert Connection (``kafkalab_alert_webhook``): where and how alerts
are delivered, as typed data (:class:`AlertWebhook`).

The Airflow side (looking the Connection up, lazily, inside a task) is
:class:`kafkalab.airflow.connections.AlertWebhookConnection`; this module only reads a
Connection object it is given, so it imports nothing of Airflow itself. Its secrets (the
URL's path, ``extra.endpoint``, the password, secret headers) are kept out of
``repr(AlertWebhook)`` and registered with Airflow's log masker when a Connection is read
(:func:`kafkalab.redact.mask_in_airflow_logs`, a no-op without Airflow).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args
from urllib.parse import quote, urlsplit

from kafkalab.alerts.bodies import AlertFormat
from kafkalab.errors import ConfigError
from kafkalab.redact import looks_secret_header, mask_in_airflow_logs, redact_url
from kafkalab.urls import report_http_url

ALERT_CONN_ID = "kafkalab_alert_webhook"
"""The Connection alerts are delivered through."""


def connection_extra(conn: Any) -> dict[str, Any]:
    """A Connection's ``extra`` as a dict (empty when absent or not a JSON object)."""
    try:
        extra = conn.extra_dejson
    except Exception:
        return {}
    return dict(extra) if isinstance(extra, Mapping) else {}



AlertConnType = Literal["slackwebhook", "http"]
"""The Connection types an alert is delivered through: ``slackwebhook``
(``SlackWebhookHook``, apache-airflow-providers-slack) or ``http`` (``HttpHook``,
apache-airflow-providers-http)."""

ALERT_CONN_TYPES: tuple[AlertConnType, ...] = get_args(AlertConnType)

LAB_EXTRA_KEYS: tuple[str, ...] = ("format", "report_base_url", "endpoint", "webhook_url")
"""Keys of the alert Connection's ``extra`` that the lab reads (``webhook_url`` only to
refuse it). ``HttpHook`` would send every other key of ``extra`` as a request header, so
these are taken out before it sees the Connection."""

SLACK_DEFAULT_HOST = "hooks.slack.com/services"
"""``SlackWebhookHook``'s host when the Connection names none."""


@dataclass(frozen=True)
class AlertWebhook:
    """Where and how alerts are delivered: the settings of the alert Connection.

    Delivery goes through the Airflow hook of :attr:`conn_type`, which reads the
    Connection :attr:`conn_id` itself; :attr:`url` is what that hook posts to, kept only to
    print its redacted form and to scrub it (and :attr:`secrets`) out of error messages.
    Neither is part of the ``repr``, nor is :attr:`endpoint` (the path, which carries the
    token): never log them.
    """

    url: str = field(repr=False)
    """The URL the hook posts to (a secret); empty when the Connection names no target."""
    fmt: AlertFormat
    """The body format: ``slack`` (Block Kit) or ``generic`` (the lab's JSON)."""
    report_base_url: str | None = None
    """``extra.report_base_url``: where the report directory is served (wins over the
    api-server's route, see :meth:`report_url`)."""
    conn_id: str = ALERT_CONN_ID
    """The Connection the hook reads."""
    conn_type: AlertConnType = "http"
    """``slackwebhook`` (``SlackWebhookHook``) or ``http`` (``HttpHook``)."""
    endpoint: str | None = field(default=None, repr=False)
    """``http`` only: the path ``HttpHook`` posts to (``extra.endpoint``; a secret)."""
    secrets: tuple[str, ...] = field(default=(), repr=False, compare=False)
    """Other secret values (the password, an ``Authorization`` header) to scrub from
    messages."""

    @classmethod
    def from_connection(cls, conn: Any) -> AlertWebhook:
        """The settings of an alert Connection (fields in ``docs/drift-and-alerts.md``).

        * ``conn_type`` ``slackwebhook``: the Slack body through ``SlackWebhookHook``; the
          password is the webhook token (``T000/B000/XXXX``, the host defaulting to
          ``hooks.slack.com/services``) or the whole webhook URL; ``extra.format`` must be
          absent or ``slack``.
        * ``conn_type`` ``http``: ``POST`` through ``HttpHook`` to ``[schema://]host[:port]``
          (``schema`` ``http`` or ``https``, default ``http``; ``host`` may be a whole URL)
          + ``extra.endpoint``; ``extra.format`` ``generic`` (default) or ``slack``; a login
          and password are basic auth, other ``extra`` keys request headers.
        * ``extra.report_base_url`` (both): where the report directory is served.

        Raises:
            ConfigError: another ``conn_type``; an unknown ``extra.format``; a Slack body
                format other than ``slack`` on a ``slackwebhook`` Connection; the earlier
                forms (``extra.webhook_url``; an ``http`` Connection with a password but no
                login, the token path of a Slack webhook; a ``schema`` that is a URI path),
                each with what to write instead.
        """
        webhook = cls._parse(conn)
        mask_in_airflow_logs(*webhook.secret_values())
        return webhook

    @classmethod
    def _parse(cls, conn: Any) -> AlertWebhook:
        """:meth:`from_connection` without registering the secrets with Airflow's masker."""
        conn_id = str(getattr(conn, "conn_id", None) or ALERT_CONN_ID)
        extra = connection_extra(conn)
        conn_type = str(getattr(conn, "conn_type", None) or "").strip().lower()
        where = f"Connection {conn_id!r}"
        if conn_type not in ALERT_CONN_TYPES:
            raise ConfigError(
                f"{where}: conn_type must be 'slackwebhook' (Slack, SlackWebhookHook) or 'http' "
                f"(a JSON webhook, HttpHook), got {conn_type or None!r}")
        if extra.get("webhook_url"):
            raise ConfigError(
                f"{where}: extra.webhook_url is no longer read: a Slack webhook is "
                "conn_type 'slackwebhook' with the whole URL as its password; another webhook "
                "is conn_type 'http' with the URL's scheme://host[:port] as host and its path "
                "as extra.endpoint")
        report_base = str(extra["report_base_url"]) if extra.get("report_base_url") else None
        password = str(getattr(conn, "password", None) or "").strip()
        secrets = tuple(s for s in (password, *_secret_extras(extra)) if s)
        host = str(getattr(conn, "host", None) or "").strip()
        schema = str(getattr(conn, "schema", None) or "").strip()
        if conn_type == "slackwebhook":
            fmt = _alert_format(extra.get("format") or "slack", conn_id)
            if fmt != "slack":
                raise ConfigError(f"{where}: a 'slackwebhook' Connection posts Slack bodies: "
                                  f"extra.format must be 'slack' or absent, got {fmt!r} (a "
                                  "generic JSON webhook is conn_type 'http')")
            return cls(_slack_url(host, schema, password), fmt, report_base, conn_id,
                       "slackwebhook", None, secrets)
        fmt = _alert_format(extra.get("format") or "generic", conn_id)
        if password and not getattr(conn, "login", None):
            raise ConfigError(
                f"{where}: an 'http' Connection with a password but no login (HttpHook sends a "
                "password only as basic auth with a login); a Slack webhook's token is now the "
                "password of a Connection of conn_type 'slackwebhook'")
        if schema and schema.lower() not in ("http", "https"):
            raise ConfigError(
                f"{where}: its schema is not http or https but a value of {len(schema)} "
                "characters, not shown: the URI form puts the path (a webhook's secret) there, "
                "and HttpHook builds the URL scheme from it: give the path as "
                "extra.endpoint, e.g. 'http://127.0.0.1:8123/http?endpoint=%2Fhook'")
        endpoint = str(extra.get("endpoint") or "") or None
        return cls(_http_url(host, schema, getattr(conn, "port", None), endpoint), fmt,
                   report_base, conn_id, "http", endpoint, secrets)

    def secret_values(self) -> tuple[str, ...]:
        """Every secret this webhook holds: the URL when it has a path or query, that path
        and query, :attr:`endpoint`, the token-like segments of the path
        (:func:`_token_segments`) and :attr:`secrets` (what Airflow's masker is given).

        The segments are given on their own because Airflow's masker joins its patterns in
        no set order: another secret that is a prefix of this URL (another webhook on the
        same host) may match first and leave the rest of the URL, token included, unmasked.
        """
        parts: list[str] = [*self.secrets]
        if self.endpoint and len(self.endpoint) > 1:
            parts += [self.endpoint, *_token_segments(self.endpoint)]
        try:
            split = urlsplit(self.url)
        except ValueError:
            return (self.url, *parts) if self.url else tuple(parts)
        hidden = [p for p in (split.path, split.query, split.password or "") if len(p) > 1]
        if hidden:
            parts[:0] = [self.url, *hidden, *_token_segments(split.path)]
        return tuple(dict.fromkeys(p for p in parts if p))

    @property
    def where(self) -> str:
        """The printable form of the target: ``scheme://host[:port]/***`` and the
        Connection id (never the path or token)."""
        return f"{redact_url(self.url)} (Connection {self.conn_id!r})"

    def report_url(self, run_id: str) -> str:
        """The http link to a run's report page that alerts carry.

        ``<extra.report_base_url>/<run_id>/index.html`` when the Connection sets it (a
        ``file://`` base gives a ``file://`` link: only when so configured), else the
        api-server's route of the report plugin,
        :func:`kafkalab.urls.report_http_url` (``<[api] base_url>/kafkalab/
        reports/<run_id>/index.html``, ``http://localhost:8080`` without ``[api] base_url``,
        as Airflow's own log links).
        """
        if self.report_base_url:
            return f"{self.report_base_url.rstrip('/')}/{quote(run_id, safe='')}/index.html"
        return report_http_url(run_id)


def _token_segments(path: str) -> list[str]:
    """The segments of a URL path that look like tokens: 8 characters or more with a digit
    in them, or 20 or more (``T0001/B0002/xoxb…`` of a Slack webhook; not ``hooks`` or
    ``services``)."""
    return [seg for seg in path.split("/")
            if (len(seg) >= 8 and any(c.isdigit() for c in seg)) or len(seg) >= 20]


def _secret_extras(extra: Mapping[str, Any]) -> list[str]:
    """Values of ``extra`` keys that name a secret header
    (:func:`kafkalab.redact.looks_secret_header`)."""
    return [str(v) for k, v in extra.items()
            if k not in LAB_EXTRA_KEYS and isinstance(v, str | int)
            and looks_secret_header(str(k)) and len(str(v)) > 3]


def _slack_url(host: str, schema: str, password: str) -> str:
    """The URL ``SlackWebhookHook`` posts to (its own rule): the password when it is a
    whole URL, else ``<schema or https>://<host or hooks.slack.com/services>/<password>``
    (``host`` itself may be a whole URL); empty without a password."""
    if not password:
        return ""
    if "://" in password:
        return password
    base = host if "://" in host else f"{schema or 'https'}://{host or SLACK_DEFAULT_HOST}"
    return (base.rstrip("/") + "/" + password.lstrip("/")).rstrip("/")


def _http_url(host: str, schema: str, port: Any, endpoint: str | None) -> str:
    """The URL ``HttpHook`` posts to (its own rule): ``host`` when it is a whole URL, else
    ``<schema or http>://host``, then ``:port``, then the endpoint; empty without a host."""
    if not host:
        return ""
    base = host if "://" in host else f"{schema or 'http'}://{host}"
    if port:
        base = f"{base}:{port}"
    ep = endpoint or ""
    if ep and not base.endswith("/") and not ep.startswith("/"):
        return f"{base}/{ep}"
    return base + ep


def _alert_format(value: Any, conn_id: str | None) -> AlertFormat:
    for fmt in get_args(AlertFormat):
        if value == fmt:
            return fmt
    known = " or ".join(repr(f) for f in get_args(AlertFormat))
    raise ConfigError(f"Connection {conn_id or ALERT_CONN_ID!r}: extra.format must be {known}, "
                      f"got {value!r}")


__all__ = [
    "ALERT_CONN_ID",
    "ALERT_CONN_TYPES",
    "LAB_EXTRA_KEYS",
    "SLACK_DEFAULT_HOST",
    "AlertConnType",
    "AlertWebhook",
    "connection_extra",
]
