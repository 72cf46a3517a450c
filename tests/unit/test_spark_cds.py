"""The Spark driver's class-data archive (kafkalab.spark.cds): where it lives, when a job's
conf gets it, and that it is keyed by PySpark and the Java binary. Recording it for real runs
in ``make setup`` (tools/setup_assets.py) and is exercised by every Spark task after it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkalab.spark import cds


@pytest.fixture
def fake_java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``java`` on a JAVA_HOME of its own, and a lab home of its own."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path / "lab"))
    monkeypatch.delenv(cds.CDS_ENV, raising=False)
    return java


def test_the_archive_is_keyed_by_pyspark_and_the_java_binary(fake_java: Path,
                                                            tmp_path: Path) -> None:
    path = cds.archive_path()
    assert path is not None
    assert path.parent == tmp_path / "lab" / cds.ARCHIVE_DIR_NAME
    assert path.name.startswith("pyspark-") and path.suffix == ".jsa"
    stat = fake_java.stat()
    os.utime(fake_java, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a new JDK build
    assert cds.archive_path() != path


def test_a_conf_gets_the_archive_only_when_it_exists(fake_java: Path) -> None:
    conf = {"spark.driver.extraJavaOptions": "-XX:+UseSerialGC", "spark.ui.enabled": "false"}
    assert cds.with_archive(conf) == conf  # not recorded yet
    path = cds.archive_path()
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    got = cds.with_archive(conf)
    assert got["spark.driver.extraJavaOptions"] == f"-XX:+UseSerialGC -XX:SharedArchiveFile={path}"
    assert conf["spark.driver.extraJavaOptions"] == "-XX:+UseSerialGC"  # the input is kept
    assert cds.with_archive({})["spark.driver.extraJavaOptions"] == f"-XX:SharedArchiveFile={path}"
    # a conf that already names an archive keeps its own
    own = {"spark.driver.extraJavaOptions": "-XX:SharedArchiveFile=/elsewhere.jsa"}
    assert cds.with_archive(own) == own


@pytest.mark.parametrize("value", ["off", "OFF", "0", "false", "no"])
def test_the_archive_can_be_turned_off(fake_java: Path, monkeypatch: pytest.MonkeyPatch,
                                       value: str) -> None:
    path = cds.archive_path()
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    monkeypatch.setenv(cds.CDS_ENV, value)
    assert not cds.enabled()
    assert cds.with_archive({}) == {}
    assert cds.ensure_archive() is None  # nothing recorded either


def test_no_java_means_no_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert cds.java_binary() is None
    assert cds.archive_path() is None
    assert cds.with_archive({"a": "b"}) == {"a": "b"}
