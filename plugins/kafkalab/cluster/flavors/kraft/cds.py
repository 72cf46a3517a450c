"""Class-data sharing for the KRaft nodes: a JVM start-up archive that makes every node start
and every ``StorageTool format`` cost less CPU.

A KRaft node spends most of its start loading and verifying a few thousand of Kafka's classes.
Java's class-data sharing (CDS) records the loaded classes once in an archive
(``-XX:ArchiveClassesAtExit``) and maps it at every later start (``-XX:SharedArchiveFile``).
Measured on the 2-core machine (``make bench`` part (j), a 3-node ``cluster up``, medians):
10.5 s -> 6.4 s until every broker answers, 5.2 -> 3.2 CPU seconds a node (user + system);
a ``format`` 2.1 -> 1.3 CPU s. A 3-node cluster saves ~6 s of CPU at each start, which the
test suite pays dozens of times and a fault run at every restart.
Class loading is all it changes: the archive holds no compiled code, and a node runs the same
classes with the same settings once it has started.

- :func:`ensure_archive` records the archive once per installation and Java (the flavor's
  ``install``, hence ``make setup`` and the first ``cluster up``): a throw-away node in a
  temporary folder on two free loopback ports, formatted, started until it serves, then
  stopped cleanly (the JVM writes the archive at exit), ~10 s. Recording is best effort: when
  it fails, one line says so and the nodes start without the archive.
- :func:`jvm_options` gives the options that map it when it exists and is enabled.

The archive lives beside the jars (``<kafka home>/cds/``) and is keyed by the Java binary (its
real path and modification time) and the class path, so another JDK or jar set gets another
archive instead of a stale one. A stale or foreign archive costs only the speed-up: the JVM's
default ``-Xshare:auto`` then starts without it, and its CDS warnings are turned off so they
never reach a node's log or a tool's output. ``$KAFKALAB_KAFKA_CDS=off`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from kafkalab.progress import Progress, noop

__all__ = ["ARCHIVE_DIR_NAME", "CDS_ENV", "archive_path", "enabled", "ensure_archive",
           "jvm_options"]

CDS_ENV = "KAFKALAB_KAFKA_CDS"
"""``off``: no archive is used or recorded."""

ARCHIVE_DIR_NAME = "cds"
"""``<kafka home>/cds/``: the archives (``kafka-<digest>.jsa``)."""

QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
"""The JVM's CDS messages off (a mismatched archive is a warning on stdout otherwise)."""

RECORD_TIMEOUT_S = 120.0
"""Longest the recording node may take to serve, and then to stop and write the archive."""

_RECORD_CLUSTER_ID = "kafkalab-cds-record0"

_SERVE_POLL_S = 0.2
"""How often the recording node's client port is tried until it serves (within
:data:`RECORD_TIMEOUT_S`; a node gives no other sign that it has started)."""


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether the archive is used and recorded (``$KAFKALAB_KAFKA_CDS`` is not ``off``)."""
    value = (os.environ if env is None else env).get(CDS_ENV, "").strip().lower()
    return value not in ("off", "0", "false", "no")


def archive_path(home: Path, java: str, classpath: str) -> Path:
    """Where the archive of this installation, Java and class path lives."""
    binary = Path(shutil.which(java) or java).resolve()
    stamp = binary.stat().st_mtime_ns if binary.exists() else 0
    digest = hashlib.sha256(f"{binary}:{stamp}\n{classpath}".encode()).hexdigest()[:12]
    return Path(home).resolve() / ARCHIVE_DIR_NAME / f"kafka-{digest}.jsa"


def jvm_options(home: Path, java: str, classpath: str) -> list[str]:
    """The options that map the archive into a Kafka JVM started with exactly ``classpath``,
    or ``[]`` when it is turned off or not recorded."""
    if not enabled():
        return []
    path = archive_path(home, java, classpath)
    return [f"-XX:SharedArchiveFile={path}", *QUIET] if path.is_file() else []


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serving(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _record_properties(folder: Path) -> tuple[Path, int]:
    """The throw-away node's configuration and its client port."""
    broker, controller = _free_port(), _free_port()
    conf = folder / "node.properties"
    conf.write_text("\n".join([
        "process.roles=broker,controller", "node.id=0",
        f"controller.quorum.voters=0@127.0.0.1:{controller}",
        f"listeners=PLAINTEXT://127.0.0.1:{broker},CONTROLLER://127.0.0.1:{controller}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{broker}",
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"log.dirs={folder / 'data'}", "offsets.topic.replication.factor=1",
        "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1", ""]))
    return conf, broker


def _record(java: str, classpath: str, node_opts: list[str], log4j2: Path, partial: Path,
            folder: Path) -> str | None:
    """Run the throw-away node; None when the archive was written, else why not."""
    conf, port = _record_properties(folder)
    base = [java, *QUIET, f"-Dlog4j2.configurationFile={log4j2}",
            f"-Dkafka.logs.dir={folder / 'logs'}", "-cp", classpath]
    fmt = subprocess.run([*base, "kafka.tools.StorageTool", "format",
                          f"--cluster-id={_RECORD_CLUSTER_ID}", "-c", str(conf)],
                         capture_output=True, text=True, timeout=RECORD_TIMEOUT_S, check=False)
    if fmt.returncode != 0:
        return f"format exited {fmt.returncode}"
    with (folder / "node.out").open("w") as out:
        node = subprocess.Popen([*base[:1], *node_opts, f"-XX:ArchiveClassesAtExit={partial}",
                                 *base[1:], "kafka.Kafka", str(conf)],
                                stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + RECORD_TIMEOUT_S
            while not _serving(port):
                if node.poll() is not None:
                    return f"the node exited {node.returncode} before it served"
                if time.monotonic() > deadline:
                    return f"the node did not serve within {RECORD_TIMEOUT_S:.0f} s"
                time.sleep(_SERVE_POLL_S)
            node.send_signal(signal.SIGTERM)
            code = node.wait(timeout=RECORD_TIMEOUT_S)
        finally:
            if node.poll() is None:
                node.kill()
                node.wait()
    if code not in (0, 128 + signal.SIGTERM) or not partial.is_file():
        return f"the node exited {code} without writing the archive"
    return None


def ensure_archive(home: Path, java: str, classpath: str, node_opts: list[str], log4j2: Path,
                   progress: Progress = noop) -> Path | None:
    """Record the archive of ``home`` for ``java`` and ``classpath`` unless it exists
    (idempotent); returns its path, or None when turned off or when the recording failed
    (one line through ``progress``: the nodes then start without it).

    The node runs with ``node_opts`` (the nodes' own JVM options) so that it loads what they
    load. The archive is written under a temporary name and renamed into place, so a
    concurrent or interrupted recording never leaves a partial archive behind."""
    if not enabled():
        return None
    path = archive_path(home, java, classpath)
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    progress(f"recording the KRaft nodes' class-data archive {path.name} (once, ~10 s)")
    with tempfile.TemporaryDirectory(prefix="kafkalab-kafka-cds-") as scratch:
        try:
            problem = _record(java, classpath, node_opts, log4j2, partial, Path(scratch))
        except (OSError, subprocess.SubprocessError) as exc:
            problem = str(exc)
    if problem is not None:
        partial.unlink(missing_ok=True)
        progress(f"no class-data archive for the KRaft nodes ({problem}); they start without")
        return None
    os.replace(partial, path)
    return path
