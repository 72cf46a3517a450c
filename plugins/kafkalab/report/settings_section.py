"""The run page's "Client settings" section: what each client was actually given.

Reads the run manifest only (docs/metrics-schema.md, the manifest's ``client_settings`` and
``profiles``): one table per scenario and profile with every recorded setting, its value
and where it came from (a profile knob, the profile's ``producer_properties`` /
``consumer_properties``, the lab, the tool, the cluster descriptor), then the profile's
settings that client did not get (its own default applies), then the topic's configs.
Secrets are never in the manifest; a key that looks like one is still left out here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from kafkalab.config.mapping import (
    CLIENT_DEFAULT,
    DESCRIPTOR,
    LAB,
    TOOL,
    setting_origins,
    unapplied_settings,
)
from kafkalab.config.models import Profile
from kafkalab.errors import LabError
from kafkalab.redact import looks_secret
from kafkalab.report.format import esc

__all__ = ["settings_section"]

_PREFIX_ORIGINS = {"harness.": "lab (harness)", "tool.": TOOL, "http.": "lab (harness)"}


def _profile(dump: Any) -> Profile | None:
    """The manifest's copy of a profile as a model; None when it no longer validates (a
    manifest older than a change to the profile's fields)."""
    if not isinstance(dump, Mapping):
        return None
    try:
        return Profile.model_validate(dict(dump))
    except ValidationError:
        return None


def _origins(scenario: str, profile: Profile | None) -> tuple[dict[str, str], dict[str, str]]:
    """(origin of each recorded key, the profile's settings the client did not get)."""
    if profile is None:
        return {}, {}
    try:
        return setting_origins(scenario, profile), unapplied_settings(scenario, profile)
    except LabError:  # a property the client refuses today: the values stay, origins unknown
        return {}, {}


def _origin_of(key: str, origins: Mapping[str, str], known: bool) -> str:
    if key in origins:
        return origins[key]
    for prefix, origin in _PREFIX_ORIGINS.items():
        if key.startswith(prefix):
            return origin
    return DESCRIPTOR if known else "—"


def _table(cell: str, settings: Mapping[str, Any], profile: Profile | None) -> str:
    scenario = cell.split("/", 1)[0]
    origins, unapplied = _origins(scenario, profile)
    rows: list[str] = []
    for key in sorted(settings):
        if looks_secret(key.split(".", 1)[-1]):
            continue
        origin = _origin_of(key, origins, profile is not None)
        rows.append(f"<tr><td><code>{esc(key)}</code></td><td>{esc(settings[key])}</td>"
                    f"<td>{esc(origin)}</td></tr>")
    for key in sorted(set(origins) - set(settings)):  # given as None: the client's default
        if origins[key] == LAB:
            continue  # the lab's None (no group in assign mode) is no knob's default
        rows.append(f'<tr class="client-default"><td><code>{esc(key)}</code></td>'
                    f"<td>{esc(CLIENT_DEFAULT)}</td><td>{esc(origins[key])}</td></tr>")
    for what, why in unapplied.items():
        rows.append(f'<tr class="not-applied"><td>{esc(what)}</td><td>{esc(CLIENT_DEFAULT)}'
                    f"</td><td>not applied: {esc(why)}</td></tr>")
    topic = ""
    if profile is not None:
        configs = profile.topic.kafka_configs()
        topic = ("<p>Topic configs: " + ", ".join(
            f"<code>{esc(k)}={esc(v)}</code>" for k, v in configs.items()) + "</p>")
    return (f'<table class="client-settings"><caption>{esc(cell)}</caption><thead><tr>'
            "<th>property</th><th>value</th><th>came from</th></tr></thead><tbody>"
            + "".join(rows) + f"</tbody></table>{topic}")


def broker_table(manifest: Mapping[str, Any]) -> str:
    """The broker settings the run's manifest recorded (read through the Admin API when the
    run started: every setting not at Kafka's default, and the ones that shape latency and
    durability), one row each with where its value came from; empty when none were recorded
    (Kafka 0.9 has no DescribeConfigs)."""
    recorded = manifest.get("broker_settings")
    if not isinstance(recorded, Mapping) or not isinstance(recorded.get("settings"), Mapping):
        return ""
    cluster = manifest.get("cluster") or {}
    sources = recorded.get("sources") or {}
    rows = "".join(
        f"<tr><td><code>{esc(k)}</code></td><td>{esc(v)}</td>"
        f"<td>{esc(str(sources.get(k, '')).replace('_', ' '))}</td></tr>"
        for k, v in sorted(recorded["settings"].items()) if not looks_secret(k))
    return (f'<table class="broker-settings"><caption>broker {esc(recorded.get("broker_id"))} '
            f'of {esc(cluster.get("flavor", "?"))} {esc(cluster.get("version", ""))}'
            "</caption><thead><tr><th>broker setting</th><th>value</th><th>came from</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>")


def settings_section(manifest: Mapping[str, Any]) -> str:
    """The "Client settings" section of a run page, from the run's manifest: a table per
    ``scenario/profile`` (property, value, where it came from), then the broker's settings
    in effect. An empty string when the manifest records neither."""
    recorded = manifest.get("client_settings") or {}
    brokers = broker_table(manifest)
    if (not isinstance(recorded, Mapping) or not recorded) and not brokers:
        return ""
    if not isinstance(recorded, Mapping):
        recorded = {}
    profiles = manifest.get("profiles") or {}
    parts = ['<section id="client-settings"><h2>Client settings</h2>',
             "<p>What each client was given, after the profile was mapped to its own "
             "property names (secrets are never recorded). <em>came from</em>: a profile "
             "knob, the profile's Kafka properties, a setting the lab or the tool fixes, or "
             "the cluster descriptor; <em>client default</em>: the client chose.</p>"]
    for cell in sorted(recorded):
        settings = recorded[cell]
        if not isinstance(settings, Mapping):
            continue
        profile_name = cell.split("/", 1)[1] if "/" in cell else ""
        parts.append(_table(cell, settings, _profile(profiles.get(profile_name))))
    if brokers:
        parts.append("<h3>Broker settings</h3><p>What the broker ran with when the run "
                     "started (Admin API, DescribeConfigs): every setting not at Kafka's "
                     "default, and those that shape latency and durability.</p>" + brokers)
    parts.append("</section>")
    return "".join(parts)
