"""Secrets (issue 26, "Secrets"): one rule (:mod:`kafkalab.redact`) for what is a secret; an
inline JAAS config or other secret in a descriptor is refused without being echoed, a value
typed into ``secret_env`` is never echoed, and an alert Connection's token stays out of
``repr`` and is masked by Airflow's log masker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kafkalab.alerts.webhook import AlertWebhook
from kafkalab.cluster.descriptor import ClusterDescriptor, librdkafka_config, public_view
from kafkalab.cluster.flavors import load_descriptor
from kafkalab.config.mapping import settings_view
from kafkalab.errors import ConfigError
from kafkalab.redact import looks_secret, looks_secret_header

REPO = Path(__file__).resolve().parents[2]

PASSWORD = "s3cr3t-P@ss!"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        f'username="lab" password="{PASSWORD}";')

DESCRIPTOR = """\
name: secrets
flavor: external
protocol: modern
bootstrap_servers: 127.0.0.1:9
broker_count: 1
"""


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``kafkalab`` entry point in a subprocess."""
    return subprocess.run([sys.executable, "-m", "kafkalab.cli", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "KAFKALAB_HOME": str(tmp_path / "lab")})


def provision_with(tmp_path: Path, descriptor: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(tmp_path, "topics", "provision", "--workload", "images-quick",
                   "--profile", "default", "--cluster", str(descriptor), "--json")


@pytest.mark.parametrize("key", [
    "sasl.jaas.config", "sasl.password", "ssl.key.password", "ssl.keystore.key",
    "ssl.key.pem", "sasl.oauthbearer.client.secret", "sasl.oauthbearer.config",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.private.key.pem", "sasl_plain_password", "ssl_password",
])
def test_every_secret_property_is_refused_inline(tmp_path: Path, key: str) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(DESCRIPTOR + f"client_properties:\n  {key}: '{JAAS}'\n")
    with pytest.raises(ConfigError) as ei:
        load_descriptor(p)
    assert f"{key!r} is a secret" in str(ei.value) and "secret_env" in str(ei.value)
    assert PASSWORD not in str(ei.value) and "PlainLoginModule" not in str(ei.value)


def test_the_rule_keeps_ordinary_settings() -> None:
    for key in ("sasl.username", "ssl.ca.location", "ssl.certificate.pem",
                "ssl.keystore.location", "sasl.oauthbearer.token.endpoint.url",
                "sasl.mechanism", "security.protocol", "client.id"):
        assert not looks_secret(key), key
    for header in ("Authorization", "X-Api-Key", "X-Auth-Token"):
        assert looks_secret_header(header), header
    assert not looks_secret_header("Content-Type")
    # the settings views use the same rule
    assert settings_view({"producer": {"sasl.jaas.config": JAAS, "acks": "all"}}) == {
        "producer.acks": "all"}


def test_an_inline_jaas_config_never_reaches_the_cli_output(tmp_path: Path) -> None:
    p = tmp_path / "jaas.yaml"
    p.write_text(DESCRIPTOR + f"client_properties:\n  sasl.jaas.config: '{JAAS}'\n")
    proc = provision_with(tmp_path, p)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "'sasl.jaas.config' is a secret" in proc.stderr
    assert PASSWORD not in proc.stdout + proc.stderr


def test_a_secret_typed_into_secret_env_is_not_echoed(tmp_path: Path) -> None:
    p = tmp_path / "env.yaml"
    p.write_text(DESCRIPTOR + f"secret_env:\n  sasl.password: '{PASSWORD}'\n")
    with pytest.raises(ConfigError) as ei:
        load_descriptor(p)
    assert str(ei.value).startswith(
        f"cluster descriptor {p}: invalid secret_env: 'sasl.password': the value is not an "
        "environment variable name (a value of 12 characters, not shown")
    assert PASSWORD not in str(ei.value)
    proc = provision_with(tmp_path, p)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "not an environment variable name" in proc.stderr
    assert PASSWORD not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


def test_a_password_that_looks_like_a_name_is_not_named(monkeypatch: pytest.MonkeyPatch) -> None:
    secret_word = "hunter2isMyPassword"  # a valid name, but not one of a variable
    monkeypatch.delenv(secret_word, raising=False)
    d = ClusterDescriptor(flavor="external", protocol="modern", bootstrap_servers="h:9",
                          broker_count=1, secret_env={"sasl.password": secret_word})
    with pytest.raises(ConfigError) as ei:
        librdkafka_config(d)
    assert secret_word not in str(ei.value)
    assert "(a name of 19 characters, not shown" in str(ei.value)
    assert "secret_env: sasl.password" in str(ei.value)
    # a usual (upper-case) name is still named, as before
    monkeypatch.delenv("KLAB_TEST_NO_SUCH_VAR", raising=False)
    named = d.model_copy(update={"secret_env": {"sasl.password": "KLAB_TEST_NO_SUCH_VAR"}})
    with pytest.raises(ConfigError, match="environment variable KLAB_TEST_NO_SUCH_VAR is not set"):
        librdkafka_config(named)
    assert public_view(named)["secret_env"] == {"sasl.password": "KLAB_TEST_NO_SUCH_VAR"}


TOKEN = "tok-3f9a77c1e2d4"
API_KEY = "k3y-5be0c8d1a9"


@pytest.fixture
def http_connection(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """An ``http`` alert Connection (Airflow's own class) whose token is in extra.endpoint."""
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "airflow-home"))
    from airflow.sdk import Connection

    return Connection(conn_id="hook", conn_type="http", host="127.0.0.1", port=8123,
                      extra=f'{{"endpoint": "/hooks/{TOKEN}", "X-Api-Key": "{API_KEY}"}}')


def test_the_webhook_token_is_out_of_repr_and_masked_by_airflow(http_connection: Any) -> None:
    hook = AlertWebhook.from_connection(http_connection)
    assert hook.endpoint == f"/hooks/{TOKEN}" and hook.secrets == (API_KEY,)
    for text in (repr(hook), str(hook), hook.where):
        assert TOKEN not in text and API_KEY not in text
    from airflow.sdk.log import redact

    line = f"POST http://127.0.0.1:8123/hooks/{TOKEN} X-Api-Key: {API_KEY}"
    masked = redact(line)
    assert TOKEN not in masked and API_KEY not in masked and "***" in masked


def test_a_secret_that_is_a_prefix_of_the_webhook_url_leaves_no_token_visible(
        http_connection: Any) -> None:
    """Airflow's masker joins its patterns in no set order: another webhook's URL on the same
    host, a prefix of this one, may match first (``***s/<token>``). The token is masked on
    its own too."""
    from airflow.sdk.log import mask_secret, redact

    mask_secret("http://127.0.0.1:8123/hook")   # another Connection's, registered first
    AlertWebhook.from_connection(http_connection)
    masked = redact(f"POST http://127.0.0.1:8123/hooks/{TOKEN}")
    assert TOKEN not in masked and "***" in masked


def test_the_alerts_work_without_airflow(monkeypatch: pytest.MonkeyPatch) -> None:
    # the masker cannot be imported: the webhook is still read, nothing raised
    monkeypatch.setitem(sys.modules, "airflow.sdk.log", None)
    conn = SimpleNamespace(conn_id="hook", conn_type="http", host="127.0.0.1", port=8123,
                           schema="", login=None, password=None,
                           extra_dejson={"endpoint": f"/hooks/{TOKEN}"})
    hook = AlertWebhook.from_connection(conn)
    assert hook.url == f"http://127.0.0.1:8123/hooks/{TOKEN}" and TOKEN not in repr(hook)
    assert hook.secret_values() == (hook.url, f"/hooks/{TOKEN}", TOKEN)
    # and a process without Airflow never imports it to mask
    probe = ("import sys; from kafkalab.redact import mask_in_airflow_logs; "
             "mask_in_airflow_logs('x' * 12); assert 'airflow' not in sys.modules")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
