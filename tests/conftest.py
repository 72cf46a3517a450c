"""Shared test setup: markers by folder, quiet third-party noise, no network."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

_MARK_BY_FOLDER = {"unit": "unit", "integration": "integration", "spark": "spark",
                   "browser": "browser", "e2e": "airflow"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        folder = Path(str(item.fspath)).parent.name
        mark = _MARK_BY_FOLDER.get(folder)
        if mark:
            item.add_marker(getattr(pytest.mark, mark))
