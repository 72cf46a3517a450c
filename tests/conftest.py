"""Shared test setup: markers by folder, quiet third-party noise, no network."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
"""JVM options for every JVM the tests start (Kafka nodes and tools, Spark drivers,
spark-submits from Airflow's tasks), through ``JDK_JAVA_OPTIONS``: the tests' JVMs live
seconds to minutes, and the C2 compiler's background work is most of their CPU on the
2-core machine (a third to two fifths less CPU measured for a Spark and a fault test file,
2026-11-27). No test asserts a speed; figures the tests measure are never published, and
their manifests name the options (``versions.java_options``). ``make bench`` and
``make demo`` run outside pytest with the JVMs' defaults. ``KAFKALAB_TEST_JVM_OPTIONS``
replaces the options (empty: none)."""

_jvm_options = os.environ.get("KAFKALAB_TEST_JVM_OPTIONS", TEST_JVM_OPTIONS).strip()
if _jvm_options and _jvm_options not in os.environ.get("JDK_JAVA_OPTIONS", ""):
    os.environ["JDK_JAVA_OPTIONS"] = " ".join(
        filter(None, (os.environ.get("JDK_JAVA_OPTIONS", "").strip(), _jvm_options)))

_MARK_BY_FOLDER = {"unit": "unit", "integration": "integration", "spark": "spark",
                   "browser": "browser", "e2e": "airflow"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        folder = Path(str(item.fspath)).parent.name
        mark = _MARK_BY_FOLDER.get(folder)
        if mark:
            item.add_marker(getattr(pytest.mark, mark))
