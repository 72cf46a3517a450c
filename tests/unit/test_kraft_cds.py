"""The KRaft nodes' class-data archive (``kafkalab.cluster.flavors.kraft.cds``): where it
lives, when a node maps it, and that a failed recording leaves nothing behind.

The recording itself runs a real node: ``make setup`` does it, and the integration tests'
nodes start with the archive it wrote (``tests/integration/test_kraft.py`` checks their
command lines)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kafkalab.cluster.flavors.kraft import cds

pytestmark = pytest.mark.unit

JAVA = shutil.which("java") or "/usr/bin/java"


def test_the_archive_is_keyed_by_java_and_class_path(tmp_path: Path) -> None:
    a = cds.archive_path(tmp_path, JAVA, "/x/a.jar:/x/b.jar")
    assert a.parent == tmp_path.resolve() / cds.ARCHIVE_DIR_NAME
    assert a.name.startswith("kafka-") and a.suffix == ".jsa"
    assert cds.archive_path(tmp_path, JAVA, "/x/a.jar:/x/b.jar") == a
    assert cds.archive_path(tmp_path, JAVA, "/x/a.jar:/x/c.jar") != a
    assert cds.archive_path(tmp_path, "/no/such/java", "/x/a.jar:/x/b.jar") != a


def test_a_node_maps_the_archive_only_when_it_exists_and_is_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cp = "/x/a.jar"
    assert cds.jvm_options(tmp_path, JAVA, cp) == []
    path = cds.archive_path(tmp_path, JAVA, cp)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    options = cds.jvm_options(tmp_path, JAVA, cp)
    assert options[0] == f"-XX:SharedArchiveFile={path}"
    assert "-Xlog:cds=off" in options  # a foreign archive never writes to a tool's output
    monkeypatch.setenv(cds.CDS_ENV, "off")
    assert cds.jvm_options(tmp_path, JAVA, cp) == []
    assert cds.ensure_archive(tmp_path, JAVA, cp, [], tmp_path / "log4j2.properties") is None


def test_a_failed_recording_says_why_and_leaves_no_archive(tmp_path: Path) -> None:
    said: list[str] = []
    got = cds.ensure_archive(tmp_path, JAVA, str(tmp_path / "missing.jar"), [],
                             tmp_path / "log4j2.properties", said.append)
    assert got is None
    assert said[-1].startswith("no class-data archive for the KRaft nodes (")
    folder = tmp_path.resolve() / cds.ARCHIVE_DIR_NAME
    assert not list(folder.iterdir())  # neither the archive nor a partial one
