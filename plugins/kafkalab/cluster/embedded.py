"""The embedded lab cluster: ``kafkalab cluster up / status / down``.

Two flavors, both bound to 127.0.0.1 only:

- ``kafka09``: real Apache Kafka 0.9.0.1 (JVM) — one ZooKeeper + 1..N brokers, started
  with ``java -cp <libs>`` directly (the distribution's ``bin/*.sh`` fail on Java 17).
- ``noida``: the noida-db emulator (modern protocol, single node, *not* Kafka).

Processes run in their own session with output in log files, so they outlive the CLI.
``<lab_dir>/cluster/state.json`` records exactly what was started (pids, ports, command
lines, a per-process *marker* that must appear in ``/proc/<pid>/cmdline``); ``down`` and
``kill_broker`` only ever signal a pid whose command line still carries its marker.

Layout under ``<lab_dir>/cluster/``: ``state.json``, ``config/`` (zookeeper.properties,
serverN.properties), ``logs/`` (``zookeeper/``, ``brokerN/``, ``noida/``: stdout.log plus
log4j files), ``data/`` (``zookeeper``, ``brokerN``, ``noida``). The descriptor goes to
``<lab_dir>/cluster.yaml``.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import importlib.util
import json
import os
import shutil
import signal as _signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafkalab.cluster.descriptor import (
    ClusterDescriptor,
    jvm_classpath,
    librdkafka_config,
    save_descriptor,
)
from kafkalab.cluster.distribution import KAFKA_VERSION, ensure_java, ensure_kafka_distribution
from kafkalab.errors import ClusterError, ConfigError

__all__ = [
    "DEFAULT_BROKER_PORT",
    "DEFAULT_NOIDA_PORT",
    "DEFAULT_ZK_PORT",
    "HOST",
    "cluster_down",
    "cluster_status",
    "cluster_up",
    "kill_broker",
    "restart_broker",
]

HOST = "127.0.0.1"
DEFAULT_ZK_PORT = 12181
DEFAULT_BROKER_PORT = 19092
DEFAULT_NOIDA_PORT = 19192
STOP_TIMEOUT_S = 15.0

BROKER_JVM_OPTS = [
    "-Xms256m",
    "-Xmx512m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
]
ZK_JVM_OPTS = ["-Xmx128m", "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true"]

Progress = Callable[[str], None]


def _noop(_msg: str) -> None:
    pass


# --------------------------------------------------------------------------- small helpers


def _resolve_lab(lab_dir: Path | str | None) -> Path:
    if lab_dir is None:
        from kafkalab.paths import lab_dir as default_lab_dir

        return default_lab_dir()
    return Path(lab_dir).expanduser().resolve()


def _cluster_dir(lab: Path) -> Path:
    return lab / "cluster"


def _state_path(lab: Path) -> Path:
    return _cluster_dir(lab) / "state.json"


def _descriptor_path(lab: Path) -> Path:
    return lab / "cluster.yaml"


def _now_iso() -> str:
    return datetime.now(UTC).isoformat()


def _write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=False)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_state(lab: Path) -> dict[str, Any] | None:
    p = _state_path(lab)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        # unreadable state: treat as stale (its processes cannot be verified)
        return {"flavor": "unknown", "brokers": 0, "processes": [], "corrupt": True}
    return data if isinstance(data, dict) else None


@contextlib.contextmanager
def _locked(lab: Path) -> Iterator[None]:
    d = _cluster_dir(lab)
    d.mkdir(parents=True, exist_ok=True)
    with (d / ".lock").open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _proc_cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _reap(pid: int) -> None:
    """Collect an exited child of this process (tests run the cluster as children)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rpartition(")")[2].split()[0:1]
    if state and state[0] in ("Z", "X"):
        _reap(pid)
        return False
    return True


def _is_ours(proc: dict[str, Any]) -> bool:
    """True when proc['pid'] runs and its command line still carries proc['marker']."""
    pid = int(proc.get("pid") or 0)
    if not _pid_alive(pid):
        return False
    args = _proc_cmdline(pid)
    return bool(args) and proc.get("marker") in (args or [])


def _port_free(port: int) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((HOST, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _port_open(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def _listen_inodes(port: int) -> set[str]:
    """Socket inodes in LISTEN state on ``port`` (any address), from /proc/net/tcp*."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) < 10:
                continue
            local, st, inode = cols[1], cols[3], cols[9]
            if st == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{inode}]")
    return inodes


def _pid_listening_on(port: int) -> int | None:
    """Best effort: the pid holding a LISTEN socket on ``port``."""
    inodes = _listen_inodes(port)
    if not inodes:
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in inodes:
                        return int(entry.name)
        except OSError:
            continue
    return None


def _check_ports_free(ports: list[int]) -> None:
    for port in ports:
        # bind() can also fail for a port that only has closing connections left
        # (FIN_WAIT of a process just stopped); Java binds it anyway: only a listener counts
        if not _port_free(port) and (_listen_inodes(port) or _port_open(port, 0.3)):
            pid = _pid_listening_on(port)
            who = f" (by pid {pid})" if pid else ""
            raise ClusterError(f"port {port} on {HOST} is already in use{who}")


def _last_line(path: str | Path | None) -> str:
    if not path:
        return ""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 8192))
            lines = [ln.strip() for ln in fh.read().decode(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [ln for ln in lines if ln and "GLIBC_2.39" not in ln]
    return lines[-1][:300] if lines else ""


def _spawn(cmd: list[str], log_path: Path, cwd: Path) -> int:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as out:
        out.write(f"\n=== {_now_iso()} kafkalab starts: {' '.join(cmd)}\n".encode())
        out.flush()
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=str(cwd),
            start_new_session=True,
            close_fds=True,
        )
    return proc.pid


def _zk_command(port: int, word: str, timeout: float = 2.0) -> str:
    """A ZooKeeper four-letter-word command (ruok, dump, ...)."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


def _registered_broker_ids(zk_port: int) -> set[int]:
    dump = _zk_command(zk_port, "dump")
    return {
        int(line.strip().rsplit("/", 1)[1])
        for line in dump.splitlines()
        if line.strip().startswith("/brokers/ids/") and line.strip().rsplit("/", 1)[1].isdigit()
    }


def _wait_broker_ids_free(
    zk_port: int, ids: set[int], progress: Progress, timeout: float = 30.0
) -> None:
    """Wait until ZooKeeper has expired the sessions of dead brokers ``ids``.

    A broker restarted while its old ephemeral /brokers/ids/N still exists dies with
    "A broker is already registered on the path /brokers/ids/N" (Kafka 0.9); the node goes
    away when the dead broker's session times out (zookeeper.session.timeout.ms = 6 s).
    """
    deadline = time.monotonic() + timeout
    told = False
    while ids & (held := _registered_broker_ids(zk_port)):
        if not told:
            progress(
                f"waiting for ZooKeeper to expire the old session of broker(s) {sorted(ids & held)} "
                "(up to 6 s)"
            )
            told = True
        if time.monotonic() > deadline:
            raise ClusterError(
                f"ZooKeeper on {HOST}:{zk_port} still holds /brokers/ids/{sorted(ids & held)[0]} "
                f"after {timeout:.0f} s; run `kafkalab cluster down` and up again"
            )
        time.sleep(0.2)


def _props_text(props: dict[str, Any]) -> str:
    lines = ["# written by kafkalab (embedded lab cluster); regenerated on every `cluster up`"]
    lines += [f"{k}={v}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


def _describe(proc: dict[str, Any]) -> str:
    return "zookeeper" if proc["role"] == "zookeeper" else f"{proc['role']} {proc['id']}"


# --------------------------------------------------------------------------- readiness


def _metadata_brokers(descriptor: ClusterDescriptor, timeout: float) -> set[int]:
    from confluent_kafka.admin import AdminClient

    conf: dict[str, Any] = dict(librdkafka_config(descriptor))
    conf["log_level"] = 0  # no "Connection refused" noise while brokers start
    conf["socket.connection.setup.timeout.ms"] = max(1000, int(timeout * 1000))
    admin = AdminClient(conf)
    md = admin.list_topics(timeout=timeout)
    return set(md.brokers)


def _wait_ready(
    state: dict[str, Any],
    descriptor: ClusterDescriptor,
    deadline: float,
    progress: Progress,
) -> None:
    procs = state["processes"]
    zk = next((p for p in procs if p["role"] == "zookeeper"), None)
    # kafka09 broker ids are ours (0..N-1); noida picks its own node id
    expected_ids = {int(p["id"]) for p in procs if p["role"] == "broker"} if zk else set()

    def check_alive() -> None:
        for p in procs:
            if not _pid_alive(int(p["pid"])):
                last = _last_line(p["log"])
                raise ClusterError(
                    f"{_describe(p)} (pid {p['pid']}) exited during start-up; see {p['log']}"
                    + (f" (last line: {last})" if last else "")
                )

    def timeout_error(what: str, proc: dict[str, Any] | None = None) -> ClusterError:
        logs = proc["log"] if proc else ", ".join(sorted({p["log"] for p in procs}))
        return ClusterError(f"cluster did not become ready in time ({what}); see {logs}")

    # 1. ports accept connections
    for p in procs:
        while not _port_open(int(p["port"])):
            check_alive()
            if time.monotonic() > deadline:
                raise timeout_error(f"{_describe(p)} is not listening on {HOST}:{p['port']}", p)
            time.sleep(0.1)
    # 2. kafka09: all brokers registered in ZooKeeper and a controller elected
    if zk is not None:
        while True:
            dump = _zk_command(int(zk["port"]), "dump")
            registered = {
                int(line.strip().rsplit("/", 1)[1])
                for line in dump.splitlines()
                if line.strip().startswith("/brokers/ids/")
                and line.strip().rsplit("/", 1)[1].isdigit()
            }
            has_controller = any(line.strip() == "/controller" for line in dump.splitlines())
            if expected_ids <= registered and has_controller:
                break
            check_alive()
            if time.monotonic() > deadline:
                missing = sorted(expected_ids - registered)
                what = (
                    f"brokers {missing} not registered in ZooKeeper"
                    if missing
                    else "no controller elected"
                )
                raise timeout_error(what)
            time.sleep(0.2)
    # 3. metadata (through every broker) lists all expected brokers
    n = descriptor.broker_count
    for p in procs:
        if p["role"] == "zookeeper":
            continue
        single = descriptor.model_copy(update={"bootstrap_servers": f"{HOST}:{p['port']}"})
        seen: set[int] = set()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise timeout_error(
                    f"metadata from {HOST}:{p['port']} lists {len(seen)} of {n} brokers", p
                )
            try:
                seen = _metadata_brokers(single, timeout=min(5.0, max(1.0, remaining)))
            except Exception:  # KafkaException while the broker is still starting
                seen = set()
            if len(seen) >= n and (not expected_ids or expected_ids <= seen):
                break
            check_alive()
            time.sleep(0.2)
    progress("all brokers answer metadata requests")


# --------------------------------------------------------------------------- building blocks


def _kafka09_layout(lab: Path) -> dict[str, Path]:
    c = _cluster_dir(lab)
    return {"config": c / "config", "logs": c / "logs", "data": c / "data"}


def _wipe_if_topology_changed(lab: Path, n: int, progress: Progress) -> None:
    data = _cluster_dir(lab) / "data"
    marker = data / "kafka09-topology.json"
    try:
        old = json.loads(marker.read_text())
    except (OSError, ValueError):
        old = None
    if old is not None and old.get("brokers") != n:
        progress(
            f"previous kafka09 data was made by {old.get('brokers')} broker(s), not {n}: "
            "wiping ZooKeeper and broker data"
        )
        shutil.rmtree(data / "zookeeper", ignore_errors=True)
        for d in data.glob("broker*"):
            shutil.rmtree(d, ignore_errors=True)
    _write_json_atomic(marker, {"brokers": n})


def _kafka09_descriptor(n: int, zk_port: int, ports: list[int], home: Path) -> ClusterDescriptor:
    return ClusterDescriptor(
        name="embedded",
        flavor="kafka09",
        protocol="legacy-0.9",
        version=KAFKA_VERSION,
        is_emulator=False,
        bootstrap_servers=",".join(f"{HOST}:{p}" for p in ports),
        broker_count=n,
        zookeeper=f"{HOST}:{zk_port}",
        kafka_home=str(home),
    )


def _noida_version() -> str:
    try:
        return f"noida-db {importlib.metadata.version('noida-db')}"
    except importlib.metadata.PackageNotFoundError:
        return "noida-db"


def _noida_descriptor(port: int) -> ClusterDescriptor:
    return ClusterDescriptor(
        name="embedded",
        flavor="noida",
        protocol="modern",
        version=_noida_version(),
        is_emulator=True,
        bootstrap_servers=f"{HOST}:{port}",
        broker_count=1,
    )


def _noida_binary() -> Path:
    spec = importlib.util.find_spec("noida_db")
    if spec is None or not spec.submodule_search_locations:
        raise ClusterError("noida-db is not installed in this environment; run `make setup`")
    binary = Path(next(iter(spec.submodule_search_locations))) / "noida-db"
    if not binary.is_file():
        raise ClusterError(f"noida-db binary not found at {binary}")
    if not os.access(binary, os.X_OK):
        with contextlib.suppress(OSError):
            binary.chmod(0o755)
    return binary


def _start_kafka09(
    lab: Path,
    n: int,
    zk_port: int,
    base_port: int,
    state: dict[str, Any],
    progress: Progress,
) -> ClusterDescriptor:
    home = ensure_kafka_distribution(lab, progress)
    java = ensure_java()
    cp = jvm_classpath(home)
    ports = [base_port + i for i in range(n)]
    _check_ports_free([zk_port, *ports])
    lay = _kafka09_layout(lab)
    for d in lay.values():
        d.mkdir(parents=True, exist_ok=True)
    _wipe_if_topology_changed(lab, n, progress)
    log4j = home / "config" / "log4j.properties"
    descriptor = _kafka09_descriptor(n, zk_port, ports, home)
    state.update(
        {
            "flavor": "kafka09",
            "brokers": n,
            "kafka_home": str(home),
            "zookeeper_port": zk_port,
            "broker_ports": ports,
        }
    )

    # ZooKeeper
    zk_conf = lay["config"] / "zookeeper.properties"
    zk_logs = lay["logs"] / "zookeeper"
    zk_logs.mkdir(parents=True, exist_ok=True)
    zk_conf.write_text(
        _props_text(
            {
                "dataDir": lay["data"] / "zookeeper",
                "clientPort": zk_port,
                "clientPortAddress": HOST,
                "maxClientCnxns": 0,
                "tickTime": 2000,
            }
        )
    )
    zk_cmd = [
        java,
        *ZK_JVM_OPTS,
        f"-Dlog4j.configuration=file:{log4j}",
        f"-Dkafka.logs.dir={zk_logs}",
        "-cp",
        cp,
        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        str(zk_conf),
    ]
    progress(f"starting ZooKeeper on {HOST}:{zk_port}")
    zk_proc: dict[str, Any] = {
        "role": "zookeeper",
        "id": None,
        "port": zk_port,
        "marker": str(zk_conf),
        "config": str(zk_conf),
        "log": str(zk_logs / "stdout.log"),
        "logs_dir": str(zk_logs),
        "cmdline": zk_cmd,
        "cwd": str(zk_logs),
    }
    zk_proc["pid"] = _spawn(zk_cmd, Path(zk_proc["log"]), zk_logs)
    state["processes"].append(zk_proc)
    _write_json_atomic(_state_path(lab), state)
    deadline = time.monotonic() + 30
    while _zk_command(zk_port, "ruok", timeout=0.5).strip() != "imok":
        if not _pid_alive(zk_proc["pid"]):
            raise ClusterError(
                f"ZooKeeper exited during start-up; see {zk_proc['log']}"
                f" (last line: {_last_line(zk_proc['log'])})"
            )
        if time.monotonic() > deadline:
            raise ClusterError(
                f"ZooKeeper did not answer on {HOST}:{zk_port} within 30 s; see {zk_proc['log']}"
            )
        time.sleep(0.1)

    # after a crash, ZooKeeper restores the dead brokers' sessions until they time out
    _wait_broker_ids_free(zk_port, set(range(n)), progress)

    # brokers
    for i, port in enumerate(ports):
        conf = lay["config"] / f"server{i}.properties"
        logs = lay["logs"] / f"broker{i}"
        logs.mkdir(parents=True, exist_ok=True)
        conf.write_text(
            _props_text(
                {
                    "broker.id": i,
                    "listeners": f"PLAINTEXT://{HOST}:{port}",
                    # with only advertised.host.name set, 0.9 would advertise port 9092
                    "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
                    "advertised.host.name": HOST,
                    "advertised.port": port,
                    "host.name": HOST,
                    "port": port,
                    "log.dirs": lay["data"] / f"broker{i}",
                    "zookeeper.connect": f"{HOST}:{zk_port}",
                    "zookeeper.connection.timeout.ms": 10000,
                    "message.max.bytes": 16777216,
                    "replica.fetch.max.bytes": 16777216,
                    "socket.request.max.bytes": 104857600,
                    "auto.create.topics.enable": "false",
                    "delete.topic.enable": "true",
                    "offsets.topic.replication.factor": min(3, n),
                    "offsets.topic.num.partitions": 1,
                    "num.partitions": 1,
                    "default.replication.factor": 1,
                    "unclean.leader.election.enable": "false",
                    "group.min.session.timeout.ms": 1000,
                    "controlled.shutdown.enable": "true",
                    "controlled.shutdown.retry.backoff.ms": 1000,
                    "log.cleaner.dedupe.buffer.size": 16777216,
                }
            )
        )
        cmd = [
            java,
            *BROKER_JVM_OPTS,
            f"-Dlog4j.configuration=file:{log4j}",
            f"-Dkafka.logs.dir={logs}",
            "-cp",
            cp,
            "kafka.Kafka",
            str(conf),
        ]
        progress(f"starting broker {i} on {HOST}:{port}")
        proc: dict[str, Any] = {
            "role": "broker",
            "id": i,
            "port": port,
            "marker": str(conf),
            "config": str(conf),
            "log": str(logs / "stdout.log"),
            "logs_dir": str(logs),
            "cmdline": cmd,
            "cwd": str(logs),
        }
        proc["pid"] = _spawn(cmd, Path(proc["log"]), logs)
        state["processes"].append(proc)
        _write_json_atomic(_state_path(lab), state)
    return descriptor


def _start_noida(
    lab: Path, port: int, state: dict[str, Any], progress: Progress
) -> ClusterDescriptor:
    binary = _noida_binary()
    _check_ports_free([port])
    data = _cluster_dir(lab) / "data" / "noida"
    logs = _cluster_dir(lab) / "logs" / "noida"
    data.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    cmd = [
        str(binary),
        "start",
        "--only",
        "kafka",
        "--host",
        HOST,
        "--kafka-port",
        str(port),
        "--data-dir",
        str(data),
    ]
    state.update({"flavor": "noida", "brokers": 1, "broker_ports": [port]})
    progress(f"starting noida-db (Kafka protocol emulator) on {HOST}:{port}")
    proc: dict[str, Any] = {
        "role": "broker",
        "id": 0,
        "port": port,
        "marker": str(data),
        "config": None,
        "log": str(logs / "stdout.log"),
        "logs_dir": str(logs),
        "cmdline": cmd,
        "cwd": str(logs),
    }
    proc["pid"] = _spawn(cmd, Path(proc["log"]), logs)
    state["processes"].append(proc)
    _write_json_atomic(_state_path(lab), state)
    return _noida_descriptor(port)


def _stop_process(proc: dict[str, Any], sig: int, timeout: float) -> dict[str, Any]:
    pid = int(proc.get("pid") or 0)
    report = {"role": proc["role"], "id": proc.get("id"), "pid": pid, "port": proc.get("port")}
    if not _pid_alive(pid):
        return {**report, "action": "not-running"}
    if not _is_ours(proc):
        return {**report, "action": "skipped (pid now belongs to another process)"}
    t0 = time.monotonic()
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
    action = "stopped" if sig != _signal.SIGKILL else "killed"
    while _pid_alive(pid):
        if time.monotonic() - t0 > timeout:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, _signal.SIGKILL)
            action = "killed (no exit after SIGTERM)"
            t1 = time.monotonic()
            while _pid_alive(pid) and time.monotonic() - t1 < 5:
                time.sleep(0.05)
            break
        time.sleep(0.05)
    _reap(pid)
    return {**report, "action": action, "seconds": round(time.monotonic() - t0, 3)}


def _stop_all(state: dict[str, Any], progress: Progress) -> list[dict[str, Any]]:
    procs = list(state.get("processes", []))
    brokers = sorted(
        (p for p in procs if p["role"] != "zookeeper"), key=lambda p: -int(p.get("id") or 0)
    )
    # stop the controller last-ish: order does not matter much with controlled shutdown
    out = []
    for p in [*brokers, *(p for p in procs if p["role"] == "zookeeper")]:
        r = _stop_process(p, _signal.SIGTERM, STOP_TIMEOUT_S)
        if r["action"] != "not-running":
            progress(f"{_describe(p)} (pid {r['pid']}): {r['action']}")
        out.append(r)
    return out


def _descriptor_from_state(state: dict[str, Any]) -> ClusterDescriptor:
    if state["flavor"] == "kafka09":
        return _kafka09_descriptor(
            int(state["brokers"]),
            int(state["zookeeper_port"]),
            [int(p) for p in state["broker_ports"]],
            Path(state["kafka_home"]),
        )
    return _noida_descriptor(int(state["broker_ports"][0]))


def _describe_cluster(flavor: str, n: int) -> str:
    return f"a {flavor} cluster with {n} broker{'s' if n != 1 else ''}"


def _remove_state(lab: Path, state: dict[str, Any] | None) -> None:
    _state_path(lab).unlink(missing_ok=True)
    desc = Path(state["descriptor_path"]) if state and state.get("descriptor_path") else None
    for p in {desc, _descriptor_path(lab)} - {None}:
        assert p is not None
        if p.is_file() and _is_embedded_descriptor(p):
            p.unlink(missing_ok=True)


def _is_embedded_descriptor(p: Path) -> bool:
    try:
        import yaml

        data = yaml.safe_load(p.read_text())
    except Exception:
        return False
    return (
        isinstance(data, dict)
        and data.get("name") == "embedded"
        and data.get("flavor")
        in (
            "kafka09",
            "noida",
        )
    )


def _restart_dead(lab: Path, state: dict[str, Any], progress: Progress) -> list[dict[str, Any]]:
    """Start again the processes of ``state`` that are not running (ZooKeeper first)."""
    restarted = []
    order = sorted(state["processes"], key=lambda p: 0 if p["role"] == "zookeeper" else 1)
    for p in order:
        if _is_ours(p):
            continue
        _check_ports_free([int(p["port"])])
        zk = next((z for z in state["processes"] if z["role"] == "zookeeper"), None)
        if zk is not None and p["role"] == "broker":
            _wait_broker_ids_free(int(zk["port"]), {int(p["id"])}, progress)
        progress(f"restarting {_describe(p)} on {HOST}:{p['port']}")
        p["pid"] = _spawn(list(p["cmdline"]), Path(p["log"]), Path(p["cwd"]))
        restarted.append({"role": p["role"], "id": p.get("id"), "pid": p["pid"]})
        _write_json_atomic(_state_path(lab), state)
        if p["role"] == "zookeeper":
            deadline = time.monotonic() + 30
            while _zk_command(int(p["port"]), "ruok", 0.5).strip() != "imok":
                if time.monotonic() > deadline or not _pid_alive(p["pid"]):
                    raise ClusterError(f"ZooKeeper did not come back; see {p['log']}")
                time.sleep(0.1)
    return restarted


# --------------------------------------------------------------------------- public API


def cluster_up(
    flavor: str = "kafka09",
    brokers: int = 1,
    lab_dir: Path | str | None = None,
    base_port: int | None = None,
    zk_port: int | None = None,
    timeout_s: float = 60.0,
    progress: Progress | None = None,
) -> ClusterDescriptor:
    """Start the embedded cluster (or return it when the same one is already up).

    ``base_port``: first broker port (kafka09: brokers use base_port..base_port+N-1,
    default 19092; noida: default 19192). ``zk_port``: ZooKeeper (default 12181).
    A different cluster already up → ClusterError. Dead processes of the same cluster
    (e.g. after :func:`kill_broker`) are started again. Stale state (all pids gone or
    reused by other programs) is removed and the cluster starts fresh.
    """
    progress = progress or _noop
    if flavor not in ("kafka09", "noida"):
        raise ConfigError(f"unknown cluster flavor {flavor!r}: use kafka09 or noida")
    if not isinstance(brokers, int) or brokers < 1:
        raise ConfigError(f"--brokers must be a positive integer, got {brokers!r}")
    if flavor == "noida" and brokers != 1:
        raise ConfigError("noida is single-node: use --brokers 1 (replication needs kafka09)")
    if flavor == "kafka09" and brokers > 9:
        raise ConfigError("--brokers: at most 9 brokers on one machine")
    for name, port in (("--base-port", base_port), ("--zk-port", zk_port)):
        if port is not None and not (1024 <= int(port) <= 65535 - brokers):
            raise ConfigError(f"{name} {port} is outside 1024..{65535 - brokers}")
    lab = _resolve_lab(lab_dir)

    with _locked(lab):
        state = _read_state(lab)
        if state is not None:
            procs = state.get("processes", [])
            alive = [p for p in procs if _is_ours(p)]
            same = state.get("flavor") == flavor and int(state.get("brokers", 0)) == brokers
            if alive and not same:
                raise ClusterError(
                    f"{_describe_cluster(state['flavor'], int(state['brokers']))} is already up; "
                    "run `kafkalab cluster down` first"
                )
            if alive and same:
                if base_port is not None and int(state["broker_ports"][0]) != base_port:
                    raise ClusterError(
                        f"{_describe_cluster(flavor, brokers)} is already up on port "
                        f"{state['broker_ports'][0]}, not {base_port}; run `kafkalab cluster down` first"
                    )
                descriptor = _descriptor_from_state(state)
                restarted = _restart_dead(lab, state, progress)
                _wait_ready(state, descriptor, time.monotonic() + timeout_s, progress)
                dpath = Path(state.get("descriptor_path") or _descriptor_path(lab))
                if not dpath.is_file():
                    save_descriptor(descriptor, dpath)
                if restarted:
                    progress(
                        f"{_describe_cluster(flavor, brokers)} was degraded: restarted "
                        + ", ".join(
                            f"{r['role']} {r['id'] if r['id'] is not None else ''}".strip()
                            for r in restarted
                        )
                    )
                else:
                    progress(
                        f"{_describe_cluster(flavor, brokers)} is already up "
                        f"({descriptor.bootstrap_servers}); nothing to do"
                    )
                return descriptor
            # stale: nothing of ours runs any more
            progress("removing stale cluster state (its processes are gone)")
            _remove_state(lab, state)

        t0 = time.monotonic()
        state = {
            "version": 1,
            "flavor": flavor,
            "brokers": brokers,
            "lab_dir": str(lab),
            "started_at": _now_iso(),
            "descriptor_path": str(_descriptor_path(lab)),
            "processes": [],
        }
        try:
            if flavor == "kafka09":
                descriptor = _start_kafka09(
                    lab,
                    brokers,
                    zk_port or DEFAULT_ZK_PORT,
                    base_port or DEFAULT_BROKER_PORT,
                    state,
                    progress,
                )
            else:
                descriptor = _start_noida(lab, base_port or DEFAULT_NOIDA_PORT, state, progress)
            _wait_ready(state, descriptor, t0 + timeout_s, progress)
        except BaseException:
            if state["processes"]:
                _stop_all(state, _noop)
                _remove_state(lab, state)
            raise
        state["startup_s"] = round(time.monotonic() - t0, 3)
        state["ready_at"] = _now_iso()
        _write_json_atomic(_state_path(lab), state)
        save_descriptor(descriptor, _descriptor_path(lab))
        progress(
            f"{_describe_cluster(flavor, brokers)} is up in {state['startup_s']:.1f} s "
            f"({descriptor.bootstrap_servers}); descriptor: {_descriptor_path(lab)}"
        )
        return descriptor


def cluster_status(lab_dir: Path | str | None = None) -> dict[str, Any]:
    """State of the embedded cluster: ``up`` / ``degraded`` / ``down``, per process."""
    lab = _resolve_lab(lab_dir)
    state = _read_state(lab)
    dpath = _descriptor_path(lab)
    if state is None:
        return {
            "state": "down",
            "status": "down",
            "lab_dir": str(lab),
            "descriptor_path": str(dpath) if dpath.is_file() else None,
            "processes": [],
        }
    procs = []
    for p in state.get("processes", []):
        alive = _is_ours(p)
        procs.append(
            {
                "role": p["role"],
                "id": p.get("id"),
                "pid": p.get("pid"),
                "alive": alive,
                "listening": alive and _port_open(int(p["port"]), 0.3),
                "port": p.get("port"),
                "address": f"{HOST}:{p.get('port')}",
                "log": p.get("log"),
                "logs_dir": p.get("logs_dir"),
            }
        )
    n_alive = sum(1 for p in procs if p["alive"])
    if procs and n_alive == len(procs):
        overall = "up"
    elif n_alive:
        overall = "degraded"
    else:
        overall = "down"  # stale state: `up` cleans it
    return {
        "state": overall,
        "status": overall,  # alias of "state"
        "flavor": state.get("flavor"),
        "brokers": state.get("brokers"),
        "started_at": state.get("started_at"),
        "startup_s": state.get("startup_s"),
        "lab_dir": str(lab),
        "state_path": str(_state_path(lab)),
        "descriptor_path": state.get("descriptor_path") if dpath.is_file() else None,
        "stale": overall == "down",
        "processes": procs,
    }


def cluster_down(
    lab_dir: Path | str | None = None,
    wipe_data: bool = False,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Stop exactly the processes ``up`` started (brokers first, ZooKeeper last).

    Each is sent SIGTERM (brokers do a controlled shutdown), then SIGKILL after 15 s.
    Removes the state file and the descriptor; ``wipe_data`` also deletes the data dirs.
    Returns one dict per process: role, id, pid, port, action, seconds.
    """
    progress = progress or _noop
    lab = _resolve_lab(lab_dir)
    with _locked(lab):
        state = _read_state(lab)
        stopped = _stop_all(state, progress) if state else []
        _remove_state(lab, state)
        if wipe_data:
            data = _cluster_dir(lab) / "data"
            if data.exists():
                shutil.rmtree(data)
                progress(f"wiped {data}")
        if state is None:
            progress("no embedded cluster is up")
    return stopped


def _find_broker(state: dict[str, Any] | None, broker_id: int) -> dict[str, Any]:
    if state is None:
        raise ClusterError("no embedded cluster is up; run `kafkalab cluster up`")
    for p in state.get("processes", []):
        if p["role"] == "broker" and int(p["id"]) == int(broker_id):
            return p
    ids = [p["id"] for p in state.get("processes", []) if p["role"] == "broker"]
    raise ConfigError(f"no broker {broker_id} in the embedded cluster (brokers: {ids})")


def kill_broker(lab_dir: Path | str | None, broker_id: int, signal: int = 9) -> dict[str, Any]:
    """Send ``signal`` (default SIGKILL) to broker ``broker_id`` of the embedded cluster.

    For availability experiments; the state keeps the broker, so ``status`` says
    ``degraded`` and ``cluster_up``/``restart_broker`` start it again.
    """
    lab = _resolve_lab(lab_dir)
    with _locked(lab):
        p = _find_broker(_read_state(lab), broker_id)
        if not _is_ours(p):
            return {"broker_id": broker_id, "pid": p.get("pid"), "action": "not-running"}
        t0 = time.monotonic()
        os.kill(int(p["pid"]), signal)
        if signal in (_signal.SIGKILL, _signal.SIGTERM):
            while _pid_alive(int(p["pid"])) and time.monotonic() - t0 < STOP_TIMEOUT_S:
                time.sleep(0.02)
        _reap(int(p["pid"]))
        return {
            "broker_id": broker_id,
            "pid": p["pid"],
            "port": p["port"],
            "signal": int(signal),
            "action": "signalled",
            "ts_ns": time.time_ns(),
        }


def restart_broker(
    lab_dir: Path | str | None,
    broker_id: int,
    timeout_s: float = 60.0,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Start a stopped broker again (same command line) and wait until metadata lists it."""
    progress = progress or _noop
    lab = _resolve_lab(lab_dir)
    with _locked(lab):
        state = _read_state(lab)
        p = _find_broker(state, broker_id)
        assert state is not None
        if _is_ours(p):
            return {"broker_id": broker_id, "pid": p["pid"], "action": "already-running"}
        t0 = time.monotonic()
        restarted = _restart_dead(lab, state, progress)
        _wait_ready(state, _descriptor_from_state(state), t0 + timeout_s, progress)
        return {
            "broker_id": broker_id,
            "pid": p["pid"],
            "action": "restarted",
            "restarted": restarted,
            "seconds": round(time.monotonic() - t0, 3),
        }
