"""Processes and ports of the services the lab starts (Kafka, ZooKeeper, Airflow, Spark).

One set of helpers for every launcher, so "is it alive", "is it still ours" and "is the
port free" have one answer. Linux first (``/proc``); where ``/proc`` is missing, liveness
falls back to ``kill(pid, 0)`` and ownership cannot be verified (callers are told so by
:func:`cmdline` returning None).

Everything binds and probes ``127.0.0.1`` (:data:`HOST`) unless told otherwise.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from kafkalab.errors import ClusterError, ConfigError

HOST = "127.0.0.1"
"""The only address the lab's services bind to."""

_PROC = Path("/proc")


# --------------------------------------------------------------------------- processes


_EXEC_SETTLE_S = 2.0
"""How long :func:`cmdline` waits for the arguments of a process still inside ``execve``."""

_PF_KTHREAD = 0x00200000  # per-process flag in /proc/<pid>/stat: a kernel thread


def cmdline(pid: int) -> list[str] | None:
    """The command line of ``pid``; None when it cannot be read (gone, or no ``/proc``).

    A child is briefly visible with an empty command line right after ``Popen`` returned:
    the kernel closes the close-on-exec pipe that ``Popen`` waits on at exec's point of no
    return, and sets the new image's arguments only later. An empty command line of a live
    process that is not a kernel thread is therefore read again until the arguments appear
    (at most :data:`_EXEC_SETTLE_S`)."""
    deadline = time.monotonic() + _EXEC_SETTLE_S
    while True:
        try:
            raw = (_PROC / str(pid) / "cmdline").read_bytes()
        except OSError:
            return None
        if raw.strip(b"\0") or not _may_be_execing(pid) or time.monotonic() > deadline:
            return [a.decode(errors="replace") for a in raw.split(b"\0") if a]
        time.sleep(0.002)


def _may_be_execing(pid: int) -> bool:
    """True when ``pid`` runs and is no kernel thread (whose command line is always empty)."""
    try:
        fields = (_PROC / str(pid) / "stat").read_text().rpartition(")")[2].split()
        state, flags = fields[0], int(fields[6])
    except (OSError, IndexError, ValueError):
        return False
    return state not in ("Z", "X") and not flags & _PF_KTHREAD


def reap(pid: int) -> None:
    """Collect ``pid`` if it is an exited child of this process (no zombie left behind)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def pid_alive(pid: int | None) -> bool:
    """True while ``pid`` runs; a zombie counts as dead (and is reaped when it is ours)."""
    if not pid or pid <= 0:
        return False
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except FileNotFoundError:
        if _PROC.is_dir():
            return False
        return _signal_zero(pid)
    except OSError:
        return _signal_zero(pid)
    state = stat.rpartition(")")[2].split()[0:1]
    if state and state[0] in ("Z", "X"):
        reap(pid)
        return False
    return True


def _signal_zero(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def runs(pid: int | None, marker: str | bytes) -> bool:
    """True when ``pid`` is alive and one argument of its command line contains ``marker``
    (guards against a recycled pid). Without ``/proc`` the pid is trusted."""
    if not pid or not pid_alive(pid):
        return False
    args = cmdline(pid)
    if args is None:
        return True
    m = marker.decode(errors="replace") if isinstance(marker, bytes) else marker
    return any(m in a for a in args)


def wait_gone(pid: int, timeout_s: float, poll_s: float = 0.02) -> bool:
    """Wait until ``pid`` has exited (reaping it); True when it did within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(poll_s)
    reap(pid)
    return True


def stop(pid: int, sig: int = signal.SIGTERM, timeout_s: float = 15.0,
         group: bool = False) -> str:
    """Send ``sig`` to ``pid`` (its process group when ``group``), wait for it to exit, and
    SIGKILL it after ``timeout_s``.

    Returns:
        ``"not-running"``, ``"stopped"`` (exited after ``sig``), ``"killed"`` (``sig`` was
        SIGKILL) or ``"killed (no exit after SIGTERM)"``.
    """
    if not pid_alive(pid):
        reap(pid)
        return "not-running"
    _send(pid, sig, group)
    if wait_gone(pid, timeout_s):
        return "killed" if sig == signal.SIGKILL else "stopped"
    _send(pid, signal.SIGKILL, group)
    wait_gone(pid, 5.0)
    return "killed (no exit after SIGTERM)" if sig != signal.SIGKILL else "killed"


def _send(pid: int, sig: int, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        if group:  # not a group leader we may signal: the process itself
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        else:
            raise


@contextlib.contextmanager
def kill_after(timeout_s: float | None, kill: Callable[[], None]) -> Iterator[threading.Event]:
    """Call ``kill`` (on a timer thread) once ``timeout_s`` seconds have passed, unless the
    ``with`` block has ended first; ``None``: never. Yields an event that is set exactly when
    ``kill`` was called, so the caller can tell a timeout from any other end (a job killed
    by some other signal)."""
    fired = threading.Event()
    if timeout_s is None:
        yield fired
        return

    def fire() -> None:
        fired.set()
        kill()

    timer = threading.Timer(timeout_s, fire)
    timer.daemon = True
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()


def spawn(cmd: Sequence[str], log_path: Path, cwd: Path,
          env: Mapping[str, str] | None = None) -> int:
    """Start ``cmd`` in its own session (it outlives the caller), stdout and stderr appended
    to ``log_path`` after a header line; returns its pid."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as out:
        stamp = datetime.now(UTC).isoformat()
        out.write(f"\n=== {stamp} kafkalab starts: {' '.join(cmd)}\n".encode())
        out.flush()
        proc = subprocess.Popen(
            list(cmd), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            cwd=str(cwd), env=dict(env) if env is not None else None,
            start_new_session=True, close_fds=True,
        )
    return proc.pid


def last_line(path: str | Path | None, skip: Sequence[str] = ("GLIBC_2.39",)) -> str:
    """The last non-empty line of a log file (at most 300 characters), skipping lines that
    contain any of ``skip``; empty when the file cannot be read."""
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
    lines = [ln for ln in lines if ln and not any(s in ln for s in skip)]
    return lines[-1][:300] if lines else ""


_EXCEPTION_LINE = re.compile(r"^(?:Caused by: )?[\w.$]+(?:Exception|Error)(?::\s.*)?$")


def failure_line(path: str | Path | None) -> str:
    """Why a process in the log ``path`` failed, in one line (at most 300 characters): the
    last exception's message (``java.lang.RuntimeException: Stored node id 7 doesn't
    match ...``) rather than the stack frame a JVM prints last; else the last line."""
    if not path:
        return ""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 65536))
            lines = [ln.strip() for ln in fh.read().decode(errors="replace").splitlines()]
    except OSError:
        return ""
    found = [ln for ln in lines if _EXCEPTION_LINE.match(ln)]
    return found[-1][:300] if found else last_line(path)


# --------------------------------------------------------------------------- ports


def env_port(name: str, default: int, env: Mapping[str, str] | None = None) -> int:
    """The port in environment variable ``name`` of ``env`` (default ``os.environ``), or
    ``default`` when it is unset or empty.

    Raises:
        ConfigError: the variable is not a port number in 1024..65535.
    """
    raw = (os.environ if env is None else env).get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1024 <= int(raw) <= 65535:
        raise ConfigError(f"{name}={raw!r} is not a port number in 1024..65535")
    return int(raw)


def port_free(port: int, host: str = HOST) -> bool:
    """True when ``host:port`` can be bound right now."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def port_open(port: int, timeout_s: float = 0.5, host: str = HOST) -> bool:
    """True when something accepts a TCP connection on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def listen_inodes(port: int) -> set[str]:
    """Socket inodes in LISTEN state on ``port`` (any address), from ``/proc/net/tcp*``."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (_PROC / "net" / table).read_text().splitlines()[1:]
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


def pid_listening_on(port: int) -> int | None:
    """Best effort: the pid holding a LISTEN socket on ``port``."""
    inodes = listen_inodes(port)
    if not inodes:
        return None
    for entry in _PROC.iterdir():
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


def port_in_use(port: int, host: str = HOST) -> bool:
    """True when a listener holds ``port``. A port left only with closing connections
    (FIN_WAIT of a process just stopped) cannot be bound but is not in use: Java binds it."""
    return not port_free(port, host) and bool(listen_inodes(port) or port_open(port, 0.3, host))


def check_ports_free(ports: Sequence[int], host: str = HOST) -> None:
    """Refuse to start when a listener holds one of ``ports``.

    Raises:
        ClusterError: ``port N on 127.0.0.1 is already in use (by pid P)``.
    """
    for port in ports:
        if port_in_use(port, host):
            pid = pid_listening_on(port)
            who = f" (by pid {pid})" if pid else ""
            raise ClusterError(f"port {port} on {host} is already in use{who}")


def wait_port_released(port: int, timeout_s: float = 10.0, host: str = HOST) -> bool:
    """Wait until no listener holds ``port``; True when it was released within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while port_in_use(port, host):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


__all__ = [
    "HOST",
    "check_ports_free",
    "cmdline",
    "failure_line",
    "kill_after",
    "last_line",
    "listen_inodes",
    "pid_alive",
    "pid_listening_on",
    "port_free",
    "port_in_use",
    "port_open",
    "reap",
    "runs",
    "spawn",
    "stop",
    "wait_gone",
    "wait_port_released",
]
