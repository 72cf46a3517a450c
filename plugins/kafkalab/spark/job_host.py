"""Warm processes for the lab's Spark Connect jobs: each job a process of its own, forked from
one that has already imported what every job imports.

A Spark Connect job is a Python program (:func:`kafkalab.spark.connect.run_job`). Started
as ``python <script>``, each one first imports PySpark's Connect client, pandas, PyArrow and
Great Expectations: ~4-5 CPU seconds on the 2-core machine before its first line, more than
its Spark work on a small run, paid again by every job (a demo night runs one; ``airflow
dags test`` of a version matrix eight).

Here a job runs in a process forked from a *job host*: ``python -m kafkalab.spark.job_host``,
started by a process on its first job (:func:`run_script`), which imports
:mod:`kafkalab.spark.job_preload` once, then forks a child per job it is asked for over a
Unix socket in a 0700 folder of its own. The child is the job's process, as ``python
<script> <args>`` would be: ``__main__`` is the script (:func:`runpy.run_path`), its folder
first on ``sys.path`` and the environment's ``PYTHONPATH`` after it, the caller's working
directory, the environment the caller gives, standard output and error on the descriptor the
caller sends, its exit code (``sys.exit``; 1 and the traceback on standard error for an
exception; minus the signal that killed it) sent back. Nothing of the caller's process is
in it: the host is a fresh interpreter, not a fork of the caller; a DAG task's process that
measures next holds no Spark, GX or gRPC state. The host ends when the process that started
it does (its standard input closes) and is idle between jobs.

Where it pays: a process that runs several jobs, with the host started ahead of the first
(:func:`prestart`, which turns it on: ``kafkalab demo`` while its Spark Connect server
starts; an ``airflow dags test`` process of the lab's, whose tasks run in it, while it warms
up). Elsewhere (:func:`active` is false: a real Airflow task's process, ``kafkalab
aggregate``) each job is a ``python <script>``, as before. Measured on one night's ``aggregate_metrics --validate-out`` against a warm
server (2026-12-07, the slow 2-core machine): a job ~2.5 CPU s and ~8 s from the host,
~7 CPU s and ~10.5 s as ``python <script>``; the host's own imports ~5 CPU s once. ``$KAFKALAB_SPARK_JOB_HOST=off``
runs every job as ``python <script>`` instead.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from kafkalab import procs
from kafkalab.paths import PACKAGE_DIR

JOB_HOST_ENV = "KAFKALAB_SPARK_JOB_HOST"
"""``off``: every job a ``python <script>`` of its own instead (:func:`usable`)."""

START_TIMEOUT_S = 120.0
"""How long a host may take to import and listen (a hang, not a speed check)."""

_MAX_REQUEST = 1 << 20


class JobTimeout(Exception):
    """The job ran longer than it was given (it was killed)."""


def usable() -> bool:
    """Whether jobs run from a job host here (unless ``$KAFKALAB_SPARK_JOB_HOST`` is
    ``off``)."""
    return os.environ.get(JOB_HOST_ENV, "").strip().lower() != "off"


# --------------------------------------------------------------------------- the caller's side


class _Host:
    """A running host: its process and socket."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="kafkalab-job-host-"))  # 0700
        self.socket_path = self.folder / "jobs.sock"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(
            [str(PACKAGE_DIR.parent), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                        if p)]))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kafkalab.spark.job_host", str(self.socket_path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        assert self.proc.stdout is not None
        if not _ready_within(self.proc.stdout, START_TIMEOUT_S):
            self.proc.kill()
            self.proc.wait()
            self.discard()
            raise OSError(f"the Spark job host did not start (exit {self.proc.poll()})")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def discard(self) -> None:
        """Remove the socket's folder of a host that has ended: one that ends by itself
        removes it, one that was killed cannot."""
        if not self.alive():
            shutil.rmtree(self.folder, ignore_errors=True)


def _ready_within(stream: IO[str], timeout_s: float) -> bool:
    """Whether the host said ``ready`` on ``stream`` within ``timeout_s`` (before it, a line
    an import printed is passed over)."""
    said: list[bool] = []

    def read() -> None:
        said.append(any(line.strip() == "ready" for line in iter(stream.readline, "")))

    # any() stops at "ready": the rest of the stream is never read (the host prints no more)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout_s)
    return bool(said and said[0])


_lock = threading.Lock()
_host: _Host | None = None
_wanted = False


def active() -> bool:
    """Whether this process's jobs run from its host: once :func:`prestart` was called (by a
    process that runs several jobs), unless :func:`usable` says no. A process that runs one
    job (a real Airflow task's) runs it as ``python <script>``: a host would import the same
    modules, only later (a job imports GX on a thread while its session starts)."""
    return _wanted and usable()


def _running_host() -> _Host:
    """This process's host, started on first use (and again if it died)."""
    global _host
    with _lock:
        if _host is None or not _host.alive():
            if _host is None:
                atexit.register(_discard_ended)
            else:
                _host.discard()  # one that was killed: its folder, then a new host
            _host = _Host()
        return _host


def _discard_ended() -> None:
    """At this process's exit: the folder of its host if that host was killed (a living one
    ends when this process does, and removes its folder itself)."""
    if _host is not None:
        _host.discard()


def prestart() -> None:
    """Have this process's jobs run from a host (:func:`active`), and start it now, in the
    background, so that its imports overlap other work (a Spark driver starting, ``dags
    test`` warming up) instead of delaying the first job; a host that cannot start is left
    to the first job (which starts it again, or says why)."""
    global _wanted
    if not usable():
        return
    _wanted = True

    def start() -> None:
        with contextlib.suppress(OSError):
            _running_host()

    threading.Thread(target=start, name="kafkalab-job-host-start", daemon=True).start()


def run_script(script: Path, argv: Sequence[str], env: Mapping[str, str],
               sink: Callable[[str], None] | None = None, out_fd: int | None = None,
               timeout_s: float | None = None) -> int:
    """Run ``script`` with ``argv`` and environment ``env`` in a process forked from this
    process's job host; return its exit code (negative: killed by that signal, as
    :mod:`subprocess` says).

    Output (standard output and error together): each line to ``sink``, or to the open
    descriptor ``out_fd``, or (neither) to this process's standard output.

    Raises:
        JobTimeout: it ran longer than ``timeout_s`` (it was killed).
        OSError: the host could not be started or reached.
    """
    host = _running_host()
    read_fd = -1
    if sink is not None:
        read_fd, write_fd = os.pipe()
    else:
        write_fd = os.dup(out_fd if out_fd is not None else sys.stdout.fileno())
    request = json.dumps({"script": str(script), "argv": [str(a) for a in argv],
                          "env": dict(env), "cwd": os.getcwd()}).encode() + b"\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.connect(str(host.socket_path))
            socket.send_fds(conn, [request], [write_fd])
        finally:
            os.close(write_fd)  # the job holds its own copy
        replies = conn.makefile("r", encoding="utf-8")
        started = replies.readline()
        if not started:
            if read_fd >= 0:
                os.close(read_fd)
            raise OSError(f"the Spark job host ended before {script.name} started")
        pid = int(json.loads(started)["pid"])
        try:
            with procs.kill_after(timeout_s, lambda: _kill_group(pid)) as timed_out:
                if read_fd >= 0:
                    with open(read_fd, encoding="utf-8", errors="replace") as lines:
                        read_fd = -1
                        for line in lines:
                            sink(line.rstrip("\n"))  # type: ignore[misc]
                reply = replies.readline()
        except BaseException:  # interrupted: the job does not outlive its caller
            _kill_group(pid)
            raise
        finally:
            if read_fd >= 0:
                os.close(read_fd)
    if timed_out.is_set():
        raise JobTimeout(f"{script.name} ran longer than {timeout_s:.0f} s")
    if not reply:
        raise OSError(f"the Spark job host ended while {script.name} ran")
    return int(json.loads(reply)["exit_code"])


def _kill_group(pid: int) -> None:
    """Kill the job ``pid`` and what it started (its process group; the job itself if it
    was killed before it made the group)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        with contextlib.suppress(OSError):  # it ended already
            os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------------- the host


def _child(request: dict[str, object], fd: int) -> None:
    """The job's process (in the forked child): never returns."""
    code = 1
    try:
        os.setpgid(0, 0)  # a timeout kills the job and whatever it started
        signal.signal(signal.SIGINT, signal.default_int_handler)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        sys.stdout = open(1, "w", buffering=1, encoding="utf-8",  # noqa: SIM115
                          errors="replace", closefd=False)
        sys.stderr = open(2, "w", buffering=1, encoding="utf-8",  # noqa: SIM115
                          errors="replace", closefd=False)
        env = {str(k): str(v) for k, v in dict(request["env"]).items()}  # type: ignore[call-overload]
        script = str(request["script"])
        os.chdir(str(request["cwd"]))
        os.environ.clear()
        os.environ.update(env)
        extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:0] = [os.path.dirname(script), *(p for p in extra if p not in sys.path)]
        sys.argv = [script, *(str(a) for a in request["argv"])]  # type: ignore[attr-defined]
        import runpy

        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except BaseException:  # what the interpreter does with an uncaught exception
            import traceback

            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _exit_code(code: object) -> int:
    """The process exit code of ``sys.exit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _serve(socket_path: str) -> None:
    """Import the jobs' modules, listen, and fork a child per request until standard input
    closes (the caller ended); then remove the socket and its folder."""
    try:
        _listen(socket_path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(socket_path)
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(socket_path))


def _listen(socket_path: str) -> None:
    """:func:`_serve`'s loop."""
    # ends with its caller (standard input closing), not with the terminal's Ctrl-C
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import kafkalab.spark.job_preload  # noqa: F401  (the point of the host)

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(8)
    running: dict[int, socket.socket] = {}
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(sys.stdin, selectors.EVENT_READ, "stdin")
    print("ready", flush=True)
    while True:
        for key, _ in sel.select(timeout=0.1):
            if key.data == "stdin":
                if not sys.stdin.readline():
                    for pid in running:
                        _kill_group(pid)
                    return
            else:
                conn, _ = listener.accept()
                data, fds, _, _ = socket.recv_fds(conn, _MAX_REQUEST, 1)
                while data and not data.endswith(b"\n"):  # a long request in parts
                    more = conn.recv(_MAX_REQUEST)
                    if not more:
                        break
                    data += more
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    conn.close()
                    _child(json.loads(data), fds[0])
                os.close(fds[0])
                conn.sendall((json.dumps({"pid": pid}) + "\n").encode())
                running[pid] = conn
        for pid in list(running):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                conn = running.pop(pid)
                with contextlib.suppress(OSError):  # the caller is gone
                    conn.sendall((json.dumps(
                        {"exit_code": os.waitstatus_to_exitcode(status)}) + "\n").encode())
                conn.close()


if __name__ == "__main__":
    _serve(sys.argv[1])
