"""One Python process that runs Airflow CLI commands (``airflow dags test …``) one after the
other, for test_airflow_dags_test.py.

Every ``airflow dags test`` process pays the same before its first task: starting Python and
Airflow (~15 s on the 2-core machine under load) and building the in-process execution API
on its first task (~10-20 s). The commands run here are Airflow's own (its CLI parser and
command functions, as ``airflow …`` runs them, as :mod:`kafkalab.airflow.dags_test_dates`
does for ``make demo``), in the environment :func:`kafkalab.airflow.launcher.airflow_env`
gives ``airflow dags test``; only the process is shared, so the module pays that once.

Run as a script (``python airflow_cli.py``), the child reads one JSON request a line on
standard input: ``{"argv": [...], "env": {name: value}, "log": path}``. It lays ``env`` over
its environment for that command only, sends the command's whole output (standard output
and error: Airflow's and every task's log) to the file ``log``, and answers one JSON line
``{"exit_code": n, "wall_s": s}`` on standard output (``exit_code`` as the ``airflow``
command would exit: 0, or 1 for a failed DAG run). End of input ends it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

CHILD = Path(__file__).resolve()


def _exit_code(exc: SystemExit) -> int:
    """``airflow dags test`` ends a failed DAG run with ``SystemExit("DagRun failed")``."""
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


def _run_one(parser: Any, argv: list[str], env: Mapping[str, str], log: str) -> int:
    """One Airflow command in this process, its output to ``log``, ``env`` laid over the
    environment while it runs; its exit code."""
    saved_env = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    sys.stdout.flush()
    sys.stderr.flush()
    saved_fds = os.dup(1), os.dup(2)
    with open(log, "ab", buffering=0) as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        try:
            args = parser.parse_args(argv)
            args.func(args)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc)
        except Exception:
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved_fds[0], 1)
            os.dup2(saved_fds[1], 2)
            for fd in saved_fds:
                os.close(fd)
            for k, v in saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return code


def child_main() -> int:
    """The child: requests on standard input, one answer line each on standard output."""
    status = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever is printed between commands goes to standard error
    from airflow.cli.cli_parser import get_parser

    from kafkalab.airflow.dags_test_dates import poll_dag_test_faster
    from kafkalab.spark import job_host

    parser = get_parser()
    poll_dag_test_faster()  # as make demo's process: no 1 s wait after a skipped branch
    job_host.prestart()  # as make demo's process: its tasks' Spark Connect jobs from a host
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        started = time.monotonic()
        code = _run_one(parser, list(request["argv"]), dict(request.get("env") or {}),
                        str(request["log"]))
        status.write(json.dumps({"exit_code": code,
                                 "wall_s": round(time.monotonic() - started, 3)}) + "\n")
    return 0


def _end(code: int) -> None:
    """Exit now: every command's results are committed and its log closed; Python's own
    finalisation of Airflow's modules takes ~5 s and does nothing the tests read."""
    import logging

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class AirflowCli:
    """The parent's handle on one child process, started at once (it imports Airflow while
    the caller goes on) and again by a command after it ended."""

    def __init__(self, env: Mapping[str, str], stderr_log: Path) -> None:
        self._env = dict(env)
        self._stderr_log = stderr_log
        self._proc: subprocess.Popen[str] | None = None
        self._stderr: IO[bytes] | None = None
        self._start()

    def _start(self) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            if self._stderr is not None:
                self._stderr.close()
            self._stderr = self._stderr_log.open("ab")
            self._proc = subprocess.Popen([sys.executable, str(CHILD)], env=self._env,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._stderr, text=True)
        return self._proc

    def run(self, argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None,
            timeout_s: float = 600) -> int:
        """Run ``airflow <argv>`` in the child, its output to ``log``; its exit code. A
        command still running after ``timeout_s`` kills the child (the next command starts a
        new one) and raises ``TimeoutError``."""
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        print("+ airflow", " ".join(argv), f"(output: {log})", flush=True)
        proc.stdin.write(json.dumps({"argv": list(argv), "env": dict(env or {}),
                                     "log": str(log)}) + "\n")
        proc.stdin.flush()
        timer = threading.Timer(timeout_s, proc.kill)
        timer.daemon = True
        timer.start()
        try:
            answer = proc.stdout.readline()
        finally:
            timer.cancel()
        if not answer:
            code = proc.wait()
            raise TimeoutError(f"airflow {' '.join(argv)}: the child ended (exit {code}) "
                               f"without an answer; see {log} and {self._stderr_log}")
        return int(json.loads(answer)["exit_code"])

    def close(self) -> None:
        """End the child (end of its input), killed if it does not end within 60 s."""
        if self._proc is not None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


if __name__ == "__main__":
    _end(child_main())
