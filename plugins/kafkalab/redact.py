"""What is a secret, and how it is kept out of everything the lab prints, logs or writes.

* **Client settings.** :func:`looks_secret` is the one rule for a Kafka client setting whose
  value is a secret (a password, a private key, a JAAS config), in librdkafka or
  kafka-python spelling: a cluster descriptor refuses one in ``client_properties`` (it must
  come through ``secret_env``), and settings views (the manifest's ``client_settings``, the
  report's settings section) leave it out.
* **Webhook URLs.** The path (and query, and user info) of a webhook URL carries its token.
  :func:`redact_url` is the only form ever shown, and :func:`scrub_url` removes the URL and
  its secret parts from a text (an error message, a reply body) before it is shown.

Pure functions of the standard library.
"""

from __future__ import annotations

from urllib.parse import urlsplit

SECRET_PROPERTIES = frozenset(
    {
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.truststore.password",
        "sasl.oauthbearer.client.secret",
        "ssl.key.pem",
        "ssl_key",
        "sasl_oauth_token_provider",
    }
)
"""Client properties whose values are secrets though their names do not say so."""


def looks_secret(key: str) -> bool:
    """True for a client setting whose value must never be recorded (a password, a secret,
    a private key, a JAAS config), in librdkafka or kafka-python spelling."""
    k = key.lower()
    return k in SECRET_PROPERTIES or "password" in k or "secret" in k or "jaas" in k


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


__all__ = ["SECRET_PROPERTIES", "looks_secret", "redact_url", "scrub_url"]
