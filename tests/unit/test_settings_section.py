"""The run page's "Client settings" section, built from a manifest whose settings the
scenarios themselves recorded."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.config.models import Profile, Workload
from kafkalab.report.settings_section import settings_section
from kafkalab.scenarios import get_scenario
from kafkalab.scenarios.base import Cell

SECRET = "s3cr3t-value"


def _manifest(tmp_path: Path) -> dict[str, object]:
    """A manifest as the runner writes it: each scenario's recorded settings under
    ``scenario/profile`` and the profile's dump under ``profiles``."""
    profile = Profile.model_validate({
        "name": "latency", "goal": "latency", "producer": {"acks": "all"},
        "producer_properties": {"linger.ms": 5, "client.id": "lab<&>"},
        "consumer_properties": {"heartbeat.interval.ms": 1000},
        "topic_configs": {"retention.ms": 60000},
    })
    d = ClusterDescriptor(
        flavor="kafka09", protocol="legacy-0.9", bootstrap_servers="h1:9092", broker_count=1,
        client_properties={"security.protocol": "SASL_PLAINTEXT", "sasl.username": "lab"},
        secret_env={"sasl.password": "KLAB_TEST_UNSET_SECRET"},
    )
    cell = Cell(run_id="r1", workload=Workload(name="w"), profile=profile, payload="1kb",
                body=b"x", topic="t", descriptor=d, work_dir=tmp_path)
    settings = {f"{name}/latency": get_scenario(name).client_settings(cell)
                for name in ("confluent-kafka", "kafka-python", "jvm-e2e", "rest")}
    # what the manifest holds is JSON
    return json.loads(json.dumps({"client_settings": settings,
                                  "profiles": {"latency": profile.model_dump()}}))


def _row(html: str, caption: str, key: str) -> list[str]:
    """The cells (text) of the row for ``key`` in the table captioned ``caption``."""
    table = re.search(rf"<caption>{re.escape(caption)}</caption>(.*?)</table>", html, re.S)
    assert table, caption
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.group(1), re.S):
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
        if cells and cells[0] == key:
            return cells
    raise AssertionError(f"no row {key} in {caption}")


def test_a_table_per_client_with_value_and_origin(tmp_path: Path) -> None:
    html = settings_section(_manifest(tmp_path))
    assert html.startswith('<section id="client-settings"><h2>Client settings</h2>')
    assert html.count('<table class="client-settings">') == 4
    c = "confluent-kafka/latency"
    assert _row(html, c, "producer.linger.ms") == ["producer.linger.ms", "5",
                                                   "producer_properties linger.ms"]
    assert _row(html, c, "producer.acks") == ["producer.acks", "-1", "profile producer.acks"]
    assert _row(html, c, "consumer.heartbeat.interval.ms")[2] == \
        "consumer_properties heartbeat.interval.ms"
    assert _row(html, c, "producer.bootstrap.servers")[2] == "cluster descriptor"
    assert _row(html, c, "consumer.auto.offset.reset")[1:] == ["latest", "lab"]
    assert _row(html, c, "harness.loop_mode")[2] == "lab (harness)"
    k = "kafka-python/latency"
    assert _row(html, k, "producer.linger_ms")[1:] == ["5", "producer_properties linger.ms"]
    # given as None: the client's default, with the knob that asked for it
    assert _row(html, k, "producer.compression_type")[1:] == ["client default",
                                                             "profile producer.compression"]
    assert _row(html, k, "profile producer.buffer_memory_bytes")[2] == \
        "not applied: kafka-python 3 has no buffer_memory"
    j = "jvm-e2e/latency"
    assert _row(html, j, "producer.linger.ms")[1:] == ["0", "tool (fixed)"]
    assert _row(html, j, "producer_properties linger.ms")[2] == \
        "not applied: the tool forces linger.ms=0"
    assert _row(html, "rest/latency", "http.method")[1:] == ["POST", "lab (harness)"]
    assert "<code>retention.ms=60000</code>" in html


def test_values_are_escaped_and_secrets_absent(tmp_path: Path) -> None:
    html = settings_section(_manifest(tmp_path))
    assert "lab&lt;&amp;&gt;" in html and "lab<&>" not in html
    assert SECRET not in html and "password" not in html


def test_old_or_empty_manifests(tmp_path: Path) -> None:
    assert settings_section({}) == ""
    assert settings_section({"client_settings": {}}) == ""
    m = _manifest(tmp_path)
    m["profiles"] = {"latency": {"name": "latency", "goal": "latency", "gone": 1}}
    html = settings_section(m)  # the profile no longer validates: values stay, origins not
    assert _row(html, "confluent-kafka/latency", "producer.linger.ms") == [
        "producer.linger.ms", "5", "—"]


def test_the_run_page_ends_with_the_section(tmp_path: Path) -> None:
    """build_report puts the section on the run's page (after the checks), from the
    manifest alone."""
    from kafkalab.report.build import build_report
    from kafkalab.store import LabData

    lab = LabData(tmp_path / "data")
    lab.write_manifest({"run_id": "r1", "status": "complete", "kind": "latency", "cells": [],
                        "started_at": "2026-11-22T00:00:00+00:00", **_manifest(tmp_path)})
    page = build_report(lab.root, run_id="r1").read_text()
    assert page.count('<section id="client-settings">') == 1
    assert _row(page, "confluent-kafka/latency", "producer.linger.ms")[1] == "5"
    assert SECRET not in page


def test_the_brokers_settings_are_shown_beside_the_clients() -> None:
    from kafkalab.report.settings_section import settings_section

    manifest = {"cluster": {"flavor": "kraft", "version": "4.4.0"},
                "broker_settings": {"broker_id": 0,
                                    "settings": {"message.max.bytes": "16777216",
                                                 "group.initial.rebalance.delay.ms": "3000",
                                                 "sasl.password": "x"},
                                    "sources": {"message.max.bytes": "static_broker_config",
                                                "group.initial.rebalance.delay.ms": "default_config"}}}
    html = settings_section(manifest)
    assert "Broker settings" in html and "broker 0 of kraft 4.4.0" in html
    assert "<code>message.max.bytes</code></td><td>16777216</td><td>static broker config" in html
    assert "group.initial.rebalance.delay.ms" in html and "sasl.password" not in html
    assert settings_section({"cluster": {"flavor": "kafka09"}, "broker_settings": None}) == ""
