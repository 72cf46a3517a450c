"""What a local Spark standalone cluster is: its ports, workers, files and command lines.

Pure: nothing here reads a file, opens a socket or starts a process (the PySpark folder is
found with :func:`importlib.util.find_spec`, which does not import PySpark). The lifecycle
(start, status, stop) is :mod:`kafkalab.spark.standalone`.

Ports (defaults in brackets; Airflow's UI has 8080, Spark's own worker-UI default 8081 is
left to a user's own Spark):

| process | RPC port | web UI port |
|---|---|---|
| master | ``master_port`` [7077] | ``webui_port`` [8180] |
| worker *i* (1..N) | ``master_port + i`` [7078, 7079] | ``webui_port + i`` [8181, 8182] |

Files under ``<lab_dir>/spark/`` (:class:`SparkLayout`)::

    state.json, .lock          what `up` started (pids, ports, markers) and its lock
    auth.properties            the shared secret (mode 0600): spark.authenticate, its secret
    conf/                      SPARK_CONF_DIR: master.properties, worker-<i>.properties (0600)
    logs/master.log, logs/worker-<i>.log   stdout + stderr of each daemon
    work/worker-<i>/           SPARK_WORKER_DIR: one app-*/<executor id>/ folder per executor

Each daemon's ``--properties-file`` path is in its command line from the first instant
(``spark-class`` is a bash script that ``exec``s Java with the same arguments): it is the
process's ownership *marker* (:func:`kafkalab.procs.runs`).

**Authentication.** The master, the workers and every application authenticate each other
with a shared secret (Spark's ``spark.authenticate``): without it, any local process could
submit code to the cluster's RPC port. ``up`` generates the secret once
(:func:`auth_properties`, ``auth.properties``, mode 0600) and writes it into every daemon's
properties file (mode 0600, never on a command line); each lab submission passes that file to
``spark-submit --properties-file`` (:func:`kafkalab.spark.submit.auth_properties_file`).
Executors get it from their worker (Spark passes it in their environment).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kafkalab.errors import ClusterError, ConfigError
from kafkalab.procs import HOST

__all__ = [
    "DAEMON_JAVA_OPTS",
    "DAEMON_MEMORY",
    "DEFAULT_MASTER_PORT",
    "DEFAULT_WEBUI_PORT",
    "DEFAULT_WORKERS",
    "DEFAULT_WORKER_CORES",
    "DEFAULT_WORKER_MEMORY",
    "MASTER_CLASS",
    "MAX_WORKERS",
    "MIN_WORKER_MEMORY_MB",
    "SECRET_BYTES",
    "WORKER_CLASS",
    "SparkLayout",
    "StandaloneSpec",
    "auth_properties",
    "daemon_env",
    "master_command",
    "master_properties",
    "memory_mb",
    "spark_home",
    "worker_command",
    "worker_properties",
]

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"

DEFAULT_MASTER_PORT = 7077
DEFAULT_WEBUI_PORT = 8180
DEFAULT_WORKERS = 2
DEFAULT_WORKER_CORES = 1
DEFAULT_WORKER_MEMORY = "1g"
MAX_WORKERS = 8
"""At most this many workers on one machine."""
MIN_WORKER_MEMORY_MB = 1024
"""A worker needs room for one executor of Spark's default ``spark.executor.memory`` (1g);
with less, an application waits for executors forever."""
DAEMON_MEMORY = "512m"
"""``SPARK_DAEMON_MEMORY``: the heap of the master and worker JVMs (not the executors')."""
DAEMON_JAVA_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true"
"""``SPARK_DAEMON_JAVA_OPTS`` of the master and workers (not the executors): they schedule,
they do not compute, so the quick-starting C1 compiler and the serial collector do (a
daemon's start-up on two cores is mostly JIT work)."""

SECRET_BYTES = 32
"""Random bytes of the cluster's shared secret (written as hex: 256 bits, Spark's default
``spark.authenticate.secretBitLength``)."""

_MEMORY = re.compile(r"^([1-9][0-9]*)([mMgG])$")


def memory_mb(text: str) -> int:
    """``512m`` / ``1g`` / ``2G`` in MiB.

    Raises:
        ConfigError: not a whole number followed by ``m`` or ``g``.
    """
    m = _MEMORY.match(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise ConfigError(f"--worker-memory {text!r} is not like 1g or 1536m")
    return int(m.group(1)) * (1024 if m.group(2).lower() == "g" else 1)


@dataclass(frozen=True)
class StandaloneSpec:
    """One master and ``workers`` workers on 127.0.0.1 (ports in the module's table)."""

    master_port: int = DEFAULT_MASTER_PORT
    webui_port: int = DEFAULT_WEBUI_PORT
    workers: int = DEFAULT_WORKERS
    worker_cores: int = DEFAULT_WORKER_CORES
    worker_memory: str = DEFAULT_WORKER_MEMORY

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:<master_port>``: what ``KAFKALAB_SPARK_MASTER`` is set to."""
        return f"spark://{HOST}:{self.master_port}"

    @property
    def webui_url(self) -> str:
        """The master's web UI; its JSON view is ``<webui_url>/json/``."""
        return f"http://{HOST}:{self.webui_port}"

    def worker_port(self, i: int) -> int:
        """RPC port of worker ``i`` (1-based)."""
        return self.master_port + i

    def worker_webui_port(self, i: int) -> int:
        """Web UI port of worker ``i`` (1-based)."""
        return self.webui_port + i

    def ports(self) -> dict[str, int]:
        """Every port the cluster listens on, by what it is (``master``, ``master UI``,
        ``worker 1``, ``worker 1 UI``, ...)."""
        out = {"master": self.master_port, "master UI": self.webui_port}
        for i in range(1, self.workers + 1):
            out[f"worker {i}"] = self.worker_port(i)
            out[f"worker {i} UI"] = self.worker_webui_port(i)
        return out

    def validate(self) -> StandaloneSpec:
        """Return self when the cluster can be started as asked.

        Raises:
            ConfigError: one line naming the option (``--workers``, ``--port``, ...).
        """
        for name, value in (("--workers", self.workers), ("--worker-cores", self.worker_cores),
                            ("--port", self.master_port), ("--webui-port", self.webui_port)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{name} must be an integer, got {value!r}")
        if not 1 <= self.workers <= MAX_WORKERS:
            raise ConfigError(f"--workers must be 1..{MAX_WORKERS}, got {self.workers}")
        if self.worker_cores < 1:
            raise ConfigError(f"--worker-cores must be at least 1, got {self.worker_cores}")
        if memory_mb(self.worker_memory) < MIN_WORKER_MEMORY_MB:
            raise ConfigError(f"--worker-memory {self.worker_memory} is below 1g (Spark's "
                              "default executor memory: no executor would fit)")
        for name, port, top in (("--port", self.master_port, self.worker_port(self.workers)),
                                ("--webui-port", self.webui_port,
                                 self.worker_webui_port(self.workers))):
            if port < 1024 or top > 65535:
                raise ConfigError(f"{name} {port}: the cluster needs {port}..{top}, "
                                  "which must lie in 1024..65535")
        seen: dict[int, str] = {}
        for what, port in self.ports().items():
            if port in seen:
                raise ConfigError(f"--port {self.master_port} and --webui-port "
                                  f"{self.webui_port} overlap: {seen[port]} and {what} "
                                  f"would both use port {port}")
            seen[port] = what
        return self

    def as_dict(self) -> dict[str, Any]:
        """The spec as recorded in ``state.json``."""
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> StandaloneSpec:
        """The spec recorded in ``state.json`` (unknown keys ignored)."""
        keys = cls.__dataclass_fields__
        return cls(**{k: v for k, v in doc.items() if k in keys})


@dataclass(frozen=True)
class SparkLayout:
    """The files of the standalone cluster of one lab dir (``<lab>/spark/``)."""

    lab: Path

    @property
    def root(self) -> Path:
        """``<lab>/spark``."""
        return self.lab / "spark"

    @property
    def state_path(self) -> Path:
        """``<lab>/spark/state.json``."""
        return self.root / "state.json"

    @property
    def lock_path(self) -> Path:
        """``<lab>/spark/.lock``: held by ``up`` and ``down``."""
        return self.root / ".lock"

    @property
    def auth_path(self) -> Path:
        """``<lab>/spark/auth.properties``: the shared secret (mode 0600), a Spark properties
        file that ``spark-submit --properties-file`` reads (:func:`auth_properties`)."""
        return self.root / "auth.properties"

    @property
    def conf_dir(self) -> Path:
        """``SPARK_CONF_DIR`` of the daemons (no user ``spark-env.sh`` leaks in)."""
        return self.root / "conf"

    @property
    def logs_dir(self) -> Path:
        """``<lab>/spark/logs``."""
        return self.root / "logs"

    @property
    def work_root(self) -> Path:
        """``<lab>/spark/work``: the workers' work dirs."""
        return self.root / "work"

    def properties(self, role: str, i: int | None = None) -> Path:
        """``conf/master.properties`` or ``conf/worker-<i>.properties`` (the marker)."""
        return self.conf_dir / (f"{role}.properties" if i is None else f"{role}-{i}.properties")

    def log(self, role: str, i: int | None = None) -> Path:
        """``logs/master.log`` or ``logs/worker-<i>.log``."""
        return self.logs_dir / (f"{role}.log" if i is None else f"{role}-{i}.log")

    def work_dir(self, i: int) -> Path:
        """``work/worker-<i>``: where worker ``i`` runs its executors."""
        return self.work_root / f"worker-{i}"


def spark_home() -> Path:
    """The installed PySpark's folder (its ``bin/spark-class`` and ``jars/``).

    Raises:
        ClusterError: PySpark is not installed, or its ``bin/spark-class`` is missing.
    """
    found = importlib.util.find_spec("pyspark")
    if found is None or not found.origin:
        raise ClusterError("PySpark is not installed in this Python; run `make setup`")
    home = Path(found.origin).parent
    if not (home / "bin" / "spark-class").is_file():
        raise ClusterError(f"{home}/bin/spark-class not found: PySpark's launcher is missing")
    return home


def auth_properties(secret: str) -> str:
    """The Spark properties that turn on authentication with the shared ``secret``: the
    whole of ``auth.properties``, and part of every daemon's properties file."""
    if not re.fullmatch(r"[0-9a-f]{32,}", secret):
        raise ValueError("the Spark secret must be 32 or more lower-case hex digits")
    return f"spark.authenticate=true\nspark.authenticate.secret={secret}\n"


def master_properties(secret: str) -> str:
    """``conf/master.properties``: authentication with ``secret`` (:func:`auth_properties`),
    no REST submission server (it would listen on 6066)."""
    return ("# written by kafkalab spark up; rewritten on every start\n"
            "spark.master.rest.enabled=false\n" + auth_properties(secret))


def worker_properties(secret: str) -> str:
    """``conf/worker-<i>.properties``: authentication with ``secret``; finished
    applications' folders are removed after a day (the work dir does not grow without end)."""
    return ("# written by kafkalab spark up; rewritten on every start\n"
            "spark.worker.cleanup.enabled=true\n"
            "spark.worker.cleanup.interval=3600\n"
            "spark.worker.cleanup.appDataTtl=86400\n" + auth_properties(secret))


def master_command(home: Path, spec: StandaloneSpec, layout: SparkLayout) -> list[str]:
    """``spark-class org.apache.spark.deploy.master.Master`` on 127.0.0.1."""
    return [str(home / "bin" / "spark-class"), MASTER_CLASS,
            "--host", HOST, "--port", str(spec.master_port),
            "--webui-port", str(spec.webui_port),
            "--properties-file", str(layout.properties("master"))]


def worker_command(home: Path, spec: StandaloneSpec, layout: SparkLayout, i: int) -> list[str]:
    """``spark-class org.apache.spark.deploy.worker.Worker spark://127.0.0.1:<port>`` for
    worker ``i`` (1-based)."""
    return [str(home / "bin" / "spark-class"), WORKER_CLASS, spec.master_url,
            "--host", HOST, "--port", str(spec.worker_port(i)),
            "--webui-port", str(spec.worker_webui_port(i)),
            "--cores", str(spec.worker_cores), "--memory", spec.worker_memory,
            "--work-dir", str(layout.work_dir(i)),
            "--properties-file", str(layout.properties("worker", i))]


def daemon_env(home: Path, layout: SparkLayout,
               base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of the master and worker JVMs (and so of the executors).

    ``SPARK_LOCAL_IP=127.0.0.1`` makes every listener (web UIs included) bind to loopback;
    ``SPARK_CONF_DIR`` is the lab's own (no user ``spark-env.sh`` or ``spark-defaults.conf``);
    ``PYSPARK_PYTHON`` is this Python (executors take the driver's, this is the fallback).
    """
    env = dict(os.environ if base is None else base)
    for leaked in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET"):
        env.pop(leaked, None)
    env.update({
        "SPARK_HOME": str(home),
        "SPARK_CONF_DIR": str(layout.conf_dir),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        "SPARK_DAEMON_JAVA_OPTS": DAEMON_JAVA_OPTS,
        "SPARK_WORKER_DIR": str(layout.work_root),
        "PYSPARK_PYTHON": env.get("PYSPARK_PYTHON") or sys.executable,
        "GX_ANALYTICS_ENABLED": "false",
    })
    return env
