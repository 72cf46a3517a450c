"""What is a secret, and how it is kept out of everything the lab prints, logs or writes.

The one secrets module: every check of "is this a secret?" and every rule for showing one
lives here, so a new kind of secret is added once.

* **Client settings.** :func:`looks_secret` is the one rule for a Kafka client setting whose
  value is a secret (a password or passphrase, a private key, a JAAS config, an OAuth client
  secret), in librdkafka, Java or kafka-python spelling: a cluster descriptor refuses one in
  ``client_properties`` (it must come through ``secret_env``), and settings views (the
  manifest's ``client_settings``, the report's settings section) leave it out.
* **Environment variable names.** ``secret_env`` holds the *name* of a variable; a value
  typed there by mistake is the secret itself. :func:`env_name_problem` says what is wrong
  with a name without quoting it, and :func:`shown_env_name` gives a name only when it looks
  like one (``KAFKALAB_SASL_PASSWORD``), else its length.
* **HTTP headers.** :func:`looks_secret_header` names an ``extra`` key of an ``http`` alert
  Connection (a request header) whose value is a secret (``Authorization``, ``X-Api-Key``).
* **Webhook URLs.** The path (and query, and user info) of a webhook URL carries its token.
  :func:`redact_url` is the only form ever shown, and :func:`scrub_url` removes the URL and
  its secret parts from a text (an error message, a reply body) before it is shown.
* **Airflow's log masker.** :func:`mask_in_airflow_logs` registers secret values with
  Airflow's secrets masker (``airflow.sdk.log.mask_secret``), so a task log shows ``***``
  in their place; a no-op in a process without Airflow.

Pure functions of the standard library (Airflow is imported lazily, and only where it is
already loaded).
"""

from __future__ import annotations

import re
import sys
from urllib.parse import urlsplit

SECRET_PROPERTIES = frozenset(
    {
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.truststore.password",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.config",
        "ssl.key.pem",
        "ssl.keystore.key",
        "ssl_key",
        "sasl_oauth_token_provider",
    }
)
"""Client properties whose values are secrets though their names do not say so
(``sasl.oauthbearer.config`` may carry a client secret, ``ssl.keystore.key`` is Java's
private key in PEM)."""

SECRET_NAME_PARTS: tuple[str, ...] = ("password", "passwd", "passphrase", "secret", "jaas",
                                      "credential")
"""A client property whose name contains one of these is a secret (``sasl.jaas.config``
carries ``password="…"``; ``…private.key.passphrase``)."""

SECRET_HEADER_PARTS: tuple[str, ...] = ("auth", "token", "secret", "password", "key")
"""An HTTP header (an ``extra`` key of an ``http`` alert Connection) whose name contains one
of these carries a secret (``Authorization``, ``X-Api-Key``, ``X-Auth-Token``)."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_USUAL_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def looks_secret(key: str) -> bool:
    """True for a client setting whose value must never be recorded (a password, a secret,
    a private key, a JAAS config), in librdkafka, Java or kafka-python spelling."""
    k = str(key).lower()
    return (k in SECRET_PROPERTIES or any(part in k for part in SECRET_NAME_PARTS)
            or k.endswith("key.pem"))


def looks_secret_header(name: str) -> bool:
    """True for an HTTP header whose value is a secret (:data:`SECRET_HEADER_PARTS`)."""
    n = str(name).lower()
    return any(part in n for part in SECRET_HEADER_PARTS)


def env_name_problem(name: object) -> str | None:
    """What is wrong with ``name`` as the name of an environment variable, without quoting
    it (it may be the secret itself, typed in by mistake); None for a valid name."""
    if not isinstance(name, str) or not name:
        return "is not an environment variable name (it is empty or not text)"
    if _ENV_NAME.fullmatch(name):
        return None
    return (f"is not an environment variable name (a value of {len(name)} characters, not "
            "shown: letters, digits and _ expected; give the variable's name, e.g. "
            "KAFKALAB_SASL_PASSWORD, never the secret itself)")


def shown_env_name(name: str) -> str:
    """``name`` when it looks like an environment variable's name (upper case, digits, _),
    else ``(a name of N characters, not shown: …)``: a lower-case word there may be a
    password typed in by mistake."""
    if _USUAL_ENV_NAME.fullmatch(name):
        return name
    return f"(a name of {len(name)} characters, not shown: is it the secret itself?)"


def mask_in_airflow_logs(*secrets: str) -> None:
    """Register ``secrets`` with Airflow's secrets masker (``airflow.sdk.log.mask_secret``:
    the task process and its supervisor), so a task log shows ``***`` in their place.

    A no-op where Airflow is not loaded (the CLI, a shard): no Airflow log to mask there,
    and no reason to import Airflow. Empty values are skipped; Airflow itself skips values
    shorter than ``[logging] min_length_masked_secret``.
    """
    if "airflow" not in sys.modules:
        return
    try:
        from airflow.sdk.log import mask_secret
    except ImportError:
        return
    for secret in secrets:
        if secret:
            mask_secret(secret)


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


__all__ = [
    "SECRET_HEADER_PARTS",
    "SECRET_NAME_PARTS",
    "SECRET_PROPERTIES",
    "env_name_problem",
    "looks_secret",
    "looks_secret_header",
    "mask_in_airflow_logs",
    "redact_url",
    "scrub_url",
    "shown_env_name",
]
