"""Class-data sharing for the Spark driver: a JVM start-up archive that makes every
``spark-submit`` of the lab start faster.

A lab job lives 10-20 s on a few thousand rows, and about half of that is the driver JVM
loading and verifying Spark's classes. Java's class-data sharing (CDS) records the loaded
classes once in an archive (``-XX:ArchiveClassesAtExit``) and maps it at every later start
(``-XX:SharedArchiveFile``). Measured on the 2-core machine: ``aggregate_metrics`` 16 s ->
11 s, ``validate_metrics`` 21 s -> 18 s, an empty job 12.5 s -> 8.5 s.

- :func:`ensure_archive` records the archive from :mod:`kafkalab.spark.cds_warmup` (Parquet,
  aggregation, window, join, Arrow): ``make setup`` runs it once (~30-40 s).
- :func:`with_archive` adds ``-XX:SharedArchiveFile`` to the driver's JVM options when the
  archive exists; the lab's Spark operators call it when a task runs (never at parse time).

The archive is keyed by the PySpark version and the Java binary (its real path and
modification time), so a new PySpark or JDK gets a new archive instead of a stale one. A
stale or foreign archive costs only the speed-up: the JVM's default ``-Xshare:auto`` then
starts without it. ``$KAFKALAB_SPARK_CDS=off`` turns the archive off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from kafkalab.errors import LabError
from kafkalab.paths import lab_dir

CDS_ENV = "KAFKALAB_SPARK_CDS"
"""``off``: no archive is used or recorded."""

ARCHIVE_DIR_NAME = "spark-cds"
"""``<lab_dir>/spark-cds/``: the archives (``pyspark-<version>-java-<digest>.jsa``)."""

JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"

RECORD_TIMEOUT_S = 600.0
"""Longest a recording may take (it takes ~30-40 s on 2 cores)."""


DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""JVM flags of a job's driver (``spark.driver.extraJavaOptions``; in local mode the driver
runs the tasks too). A nightly job lives ~10-20 s on a few thousand rows: most of its CPU
went to the JIT's optimizing compiler (C2) and the parallel GC's threads, both of which
compete for the machine's two cores and pay off only in long runs. C1 alone and the serial
collector start faster. ``$KAFKALAB_SPARK_DRIVER_JAVA_OPTIONS`` replaces them (empty: the
JVM's defaults, better for runs of 10^7 rows and more)."""

LAUNCHER_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""JVM flags of spark-submit's launcher (``$SPARK_LAUNCHER_OPTS``: the short-lived JVM that
builds the driver's command line)."""


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether the archive is used (``$KAFKALAB_SPARK_CDS`` is not ``off``)."""
    value = (os.environ if env is None else env).get(CDS_ENV, "").strip().lower()
    return value not in ("off", "0", "false", "no")


def java_binary(env: Mapping[str, str] | None = None) -> Path | None:
    """The ``java`` that ``spark-submit`` starts: ``$JAVA_HOME/bin/java``, else the one on
    ``PATH`` (resolved through its symlinks), or None."""
    env = os.environ if env is None else env
    home = env.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java",
                                                                        path=env.get("PATH"))
    if not found or not Path(found).is_file():
        return None
    return Path(found).resolve()


def archive_path(env: Mapping[str, str] | None = None) -> Path | None:
    """Where the archive of this PySpark and this Java lives, or None (no Java or PySpark)."""
    java = java_binary(env)
    try:
        pyspark_version = version("pyspark")
    except PackageNotFoundError:
        return None
    if java is None:
        return None
    key = f"{java}:{java.stat().st_mtime_ns}"
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
    return lab_dir() / ARCHIVE_DIR_NAME / f"pyspark-{pyspark_version}-java-{digest}.jsa"


def with_archive(conf: Mapping[str, str], env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``conf`` with ``-XX:SharedArchiveFile=<archive>`` added to the driver's JVM options
    when the archive exists and is enabled; else ``conf`` unchanged (a copy)."""
    out = dict(conf)
    if not enabled(env):
        return out
    path = archive_path(env)
    if path is None or not path.is_file():
        return out
    options = out.get(JAVA_OPTIONS_KEY, "")
    if "SharedArchiveFile" in options or "ArchiveClassesAtExit" in options:
        return out
    out[JAVA_OPTIONS_KEY] = f"{options} -XX:SharedArchiveFile={path}".strip()
    return out


def ensure_archive(progress: Callable[[str], None] | None = None,
                   timeout_s: float = RECORD_TIMEOUT_S) -> Path | None:
    """Record the archive unless it exists (idempotent); returns its path, or None when
    turned off or when there is no Java or PySpark.

    The warm-up job runs through the venv's ``spark-submit`` in local mode; the archive is
    written to a temporary name and renamed into place, so a concurrent or interrupted
    recording never leaves a partial archive behind.

    Raises:
        LabError: the recording failed (the message has the end of its output).
    """
    if not enabled():
        return None
    path = archive_path()
    if path is None or path.is_file():
        return path
    spark_submit = Path(sys.executable).parent / "spark-submit"
    if not spark_submit.is_file():
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    if progress:
        progress(f"recording the Spark driver's class-data archive {path.name} (once, ~40 s)")
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    warmup = Path(__file__).with_name("cds_warmup.py")
    options = (f"{DRIVER_JAVA_OPTIONS} -XX:ArchiveClassesAtExit={partial} "
               "-Xlog:cds=off -Xlog:cds+dynamic=off")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LAUNCHER_OPTS=os.environ.get("SPARK_LAUNCHER_OPTS", LAUNCHER_OPTS))
    with tempfile.TemporaryDirectory(prefix="kafkalab-cds-") as scratch:
        cmd = [str(spark_submit), "--master", "local[2]",
               "--conf", "spark.ui.enabled=false", "--conf", "spark.ui.showConsoleProgress=false",
               "--conf", "spark.driver.host=127.0.0.1",
               "--conf", "spark.driver.bindAddress=127.0.0.1",
               "--conf", "spark.sql.shuffle.partitions=4", "--conf", "spark.log.level=WARN",
               "--conf", f"{JAVA_OPTIONS_KEY}={options}", str(warmup), scratch]
        try:
            done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as exc:
            partial.unlink(missing_ok=True)
            raise LabError(f"recording the Spark class-data archive took over {timeout_s:.0f} s"
                           ) from exc
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise LabError(f"recording the Spark class-data archive failed (exit "
                       f"{done.returncode}): {tail}")
    os.replace(partial, path)
    return path


__all__ = [
    "ARCHIVE_DIR_NAME",
    "CDS_ENV",
    "DRIVER_JAVA_OPTIONS",
    "LAUNCHER_OPTS",
    "archive_path",
    "enabled",
    "ensure_archive",
    "java_binary",
    "with_archive",
]
