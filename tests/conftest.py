"""Shared test setup: markers by folder, quiet third-party noise, no network."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tools.run_tests import CPU_GROUP_ENV

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Spark's Python workers run the tests' interpreter (the venv's), as the Makefile sets: run
# outside make, a worker started as PATH's python3 could not import kafkalab (63 Spark tests
# erred so, 2026-12-07)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
"""JVM options for every JVM the tests start (Kafka nodes and tools, Spark drivers,
spark-submits from Airflow's tasks), through ``JDK_JAVA_OPTIONS``: the tests' JVMs live
seconds to minutes, and the C2 compiler's background work is most of their CPU on the
2-core machine (a third to two fifths less CPU measured for a Spark and a fault test file,
2026-11-27). No test asserts a speed; figures the tests measure are never published, and
their manifests name the options (``versions.java_options``). ``make bench`` and
``make demo`` run outside pytest with the JVMs' defaults. ``KAFKALAB_TEST_JVM_OPTIONS``
replaces the options (empty: none).

Tests that time a broker (the load engine's open loop against the closed loop, a broker
stall against its own times, a frozen broker against the clients' timeouts) are marked
``jvm_defaults``: when a
pytest process collects one, none of its JVMs gets the options (C1-only code shifts such
comparisons: a low-rate open-loop p50 once fell outside the closed loop's band)."""

_JVM_ENV = "JDK_JAVA_OPTIONS"
_saved_jvm_env: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    """Add the test JVM options to ``JDK_JAVA_OPTIONS`` (before any test starts a JVM)."""
    global _saved_jvm_env
    options = os.environ.get("KAFKALAB_TEST_JVM_OPTIONS", TEST_JVM_OPTIONS).strip()
    current = os.environ.get(_JVM_ENV, "")
    if options and options not in current:
        _saved_jvm_env = current
        os.environ[_JVM_ENV] = " ".join(filter(None, (current.strip(), options)))


def pytest_collection_finish(session: pytest.Session) -> None:
    """A ``jvm_defaults`` test among the collected ones: no test JVM options in this process
    (fixtures and tests start JVMs only after collection)."""
    if _saved_jvm_env is None:
        return
    if any(item.get_closest_marker("jvm_defaults") for item in session.items):
        if _saved_jvm_env:
            os.environ[_JVM_ENV] = _saved_jvm_env
        else:
            os.environ.pop(_JVM_ENV, None)


_MARK_BY_FOLDER = {"unit": "unit", "integration": "integration", "spark": "spark",
                   "browser": "browser", "e2e": "airflow"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        folder = Path(str(item.fspath)).parent.name
        mark = _MARK_BY_FOLDER.get(folder)
        if mark:
            item.add_marker(getattr(pytest.mark, mark))


_cpu_by_test: list[tuple[float, str]] = []


def _group_cpu_s() -> float | None:
    """CPU seconds used so far in the step's ``cpuacct`` cgroup (:data:`CPU_GROUP_ENV`, set
    by ``tools/run_tests.py``: servers the tests or their fixtures run are included); None
    outside ``make test``."""
    group = os.environ.get(CPU_GROUP_ENV)
    if not group:
        return None
    try:
        return int(Path(group, "cpuacct.usage").read_text()) / 1e9
    except (OSError, ValueError):
        return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    """CPU of the whole step while this test (its setup and teardown included) ran."""
    before = _group_cpu_s()
    yield
    after = _group_cpu_s()
    if before is not None and after is not None:
        _cpu_by_test.append((after - before, item.nodeid))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The costliest tests by CPU, when ``make test`` ran this step in a cgroup."""
    if not _cpu_by_test:
        return
    write = terminalreporter.write_line
    write(f"=== CPU seconds by test (the step's cgroup; {sum(c for c, _ in _cpu_by_test):.0f} s "
          f"in {len(_cpu_by_test)} tests), the 25 costliest:")
    for cpu_s, nodeid in sorted(_cpu_by_test, reverse=True)[:25]:
        write(f"{cpu_s:8.1f} s  {nodeid}")
