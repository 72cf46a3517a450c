"""``airflow dags test`` for several logical dates in one process (what ``make demo`` runs).

``python -m kafkalab.airflow.dags_test_dates DAG_ID --dates D1,D2,... [--conf JSON] [--prepare]
[--gate]``

Each date is one ``airflow dags test DAG_ID DATE -c JSON``: the same Airflow command
function (``airflow.cli.commands.dag_command.dag_test``, through Airflow's own CLI parser),
called once per date, one date after the other. One process saves what every
``airflow dags test`` pays before its first task: starting Python and Airflow, and building
the in-process execution API (~10 s a date on the 2-core machine). ``--prepare`` first runs
``airflow db migrate`` and ``airflow pools import`` of the lab's pools
(:func:`kafkalab.airflow.pools.write_pools_file`) the same way, in the same process.

``--gate`` lets the caller use the start-up: after the prepare step the process pays what
the first date would pay before its first task (:func:`warm_up`: Airflow's DAG command, the
DAG files' imports, the in-process execution API), then waits for one line on standard input
before the first date. End of input without a line (the caller gave up) ends the process
with exit 1 and no date run. ``make demo`` starts it while seed 000's Spark aggregation
runs, after seed 000's measurement: nothing of it overlaps a measurement.

Output: Airflow's own output (every task's log) goes to standard error, each step preceded
by a line ``===== DAG_ID DATE =====`` (``===== prepare =====``); standard output carries one
JSON object per finished step, ``{"step": "prepare" | "date", "name", "exit_code",
"wall_s"}`` (``exit_code`` 0: it succeeded; 1: the DAG run failed or the step could not
run), so a caller can report each date as it ends. A failed prepare step ends the process
before any date. The process exits 0 when every step succeeded, else 1; 2 for bad
arguments.

Run it with the lab's Airflow environment (:func:`kafkalab.airflow.launcher.airflow_env`);
:func:`kafkalab.airflow.launcher.dags_test_dates` does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import CodeType
from typing import IO, SupportsIndex

PREPARE_MARKER = "===== prepare ====="
"""The log line that opens the output of ``--prepare``."""


def date_marker(dag_id: str, date: str) -> str:
    """The log line that opens the output of ``date``."""
    return f"===== {dag_id} {date} ====="


def _exit_code(exc: SystemExit) -> int:
    """``dags test`` ends a failed DAG run with ``SystemExit("DagRun failed")``."""
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


def _run_cli(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    """One Airflow CLI command, in this process; its exit code (a traceback goes to
    standard error)."""
    try:
        args = parser.parse_args(argv)
        args.func(args)
        return 0
    except SystemExit as exc:
        return _exit_code(exc)
    except Exception:  # one step that cannot run must not hide the others' results
        traceback.print_exc(file=sys.stderr)
        return 1


def _report(status: IO[str], step: str, name: str, code: int, started: float) -> None:
    sys.stderr.flush()
    status.write(json.dumps({"step": step, "name": name, "exit_code": code,
                             "wall_s": round(time.monotonic() - started, 3)}) + "\n")
    status.flush()


def prepare(parser: argparse.ArgumentParser, status: IO[str]) -> int:
    """``airflow db migrate``, then ``airflow pools import`` of the lab's pools; returns 0
    when both succeeded."""
    from kafkalab.airflow.pools import write_pools_file

    print(PREPARE_MARKER, file=sys.stderr, flush=True)
    started = time.monotonic()
    code = _run_cli(parser, ["db", "migrate"])
    if code == 0:
        with tempfile.TemporaryDirectory(prefix="kafkalab-pools-") as tmp:
            code = _run_cli(parser, ["pools", "import", str(write_pools_file(Path(tmp)))])
    _report(status, "prepare", "prepare", code, started)
    return 1 if code else 0


def warm_up() -> float:
    """Pay now what the first ``dags test`` pays before its first task runs: import
    Airflow's DAG command, parse the DAG files once (their imports stay), start the Spark
    jobs' host when they run against a Spark Connect server (:func:`kafkalab.spark.job_host.
    prestart`), build the in-process execution API its tasks talk to and send it one request (its first request
    starts the app: ~3 s on the 2-core machine, paid by the first task otherwise). Returns the
    seconds it took. A failure is printed (standard error) and left to the first date, which
    pays the same again."""
    started = time.monotonic()
    try:
        import httpx
        from airflow.cli.commands import dag_command  # noqa: F401  (imported for its cost)
        from airflow.dag_processing.dagbag import DagBag
        from airflow.sdk.execution_time.supervisor import in_process_api_server
        from airflow.settings import DAGS_FOLDER

        DagBag(dag_folder=DAGS_FOLDER)
        from kafkalab.airflow.launcher import SPARK_MASTER_ENV
        from kafkalab.spark import connect, job_host

        if connect.is_connect_url(os.environ.get(SPARK_MASTER_ENV)):  # the tasks' jobs
            job_host.prestart()
        api = in_process_api_server()
        api.app  # noqa: B018  (a cached property: built now, used by every task)
        # not closed: the transport is the one every task's client uses
        httpx.Client(transport=api.transport,
                     base_url="http://in-process.invalid./").get("health").raise_for_status()
    except Exception:  # a warm-up is an optimisation: the dates still run without it
        print("warm-up failed; the first date pays it:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
    return time.monotonic() - started


DAG_TEST_POLL_S = 0.05
"""How long ``DAG.test``'s loop waits when no task is ready, in this process (Airflow's
own: 1 s)."""


def poll_dag_test_faster(poll_s: float = DAG_TEST_POLL_S,
                         loop_code: CodeType | None = None) -> bool:
    """Shorten the 1 s wait of ``DAG.test``'s scheduling loop (Airflow 3.3, fixed in its
    code) to ``poll_s``; returns whether it could.

    That loop waits 1 s whenever a pass finds no task ready, which happens once for each
    skipped branch: the nightly skips its fan-out and fault parts unless asked (2 s a date),
    and the tasks downstream of a skip become ready only on the next pass. Here nothing
    outside the loop changes the database (no scheduler, executor or triggerer), so a short
    wait loses nothing. Only ``time.sleep`` calls made by ``DAG.test`` itself are shortened
    (the caller's code object is checked); every other sleep in the process, the tasks'
    included, is untouched. If Airflow's ``DAG.test`` is not found, nothing is changed.
    ``loop_code``: the code whose sleeps are shortened instead of ``DAG.test``'s (tests)."""
    if loop_code is None:
        try:
            from airflow.sdk.definitions.dag import DAG
        except ImportError:
            return False
        loop_code = getattr(DAG.test, "__code__", None)
        if loop_code is None:
            return False
    real_sleep = time.sleep

    def sleep(seconds: float | SupportsIndex) -> None:
        if sys._getframe(1).f_code is loop_code:
            seconds = min(float(seconds), poll_s)
        real_sleep(seconds)

    time.sleep = sleep
    return True


def wait_for_gate(stream: IO[str]) -> bool:
    """Block until the caller writes a line on ``stream``; ``False`` at end of input."""
    return bool(stream.readline())


def run_dates(parser: argparse.ArgumentParser, dag_id: str, dates: Sequence[str],
              conf: str | None, status: IO[str]) -> int:
    """Run ``airflow dags test`` for each date in turn; one JSON line per date on ``status``.
    Returns 0 when every date succeeded, else 1."""
    worst = 0
    for date in dates:
        print(date_marker(dag_id, date), file=sys.stderr, flush=True)
        started = time.monotonic()
        code = _run_cli(parser, ["dags", "test", dag_id, date] + (["-c", conf] if conf else []))
        _report(status, "date", date, code, started)
        worst = max(worst, 1 if code else 0)
    return worst


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; see the module."""
    p = argparse.ArgumentParser(prog="python -m kafkalab.airflow.dags_test_dates",
                                description="airflow dags test for several logical dates, "
                                "in one process")
    p.add_argument("dag_id")
    p.add_argument("--dates", required=True, help="comma-separated logical dates (YYYY-MM-DD)")
    p.add_argument("--conf", default=None, help="the DAG run conf (JSON), for every date")
    p.add_argument("--prepare", action="store_true",
                   help="first migrate the metadata DB and import the lab's pools")
    p.add_argument("--gate", action="store_true",
                   help="after --prepare, warm up, then wait for a line on standard input "
                   "before the first date")
    args = p.parse_args(argv)
    dates = [d.strip() for d in args.dates.split(",") if d.strip()]
    if not dates:
        p.error("--dates: no date given")
    if args.conf is not None:
        try:
            json.loads(args.conf)
        except json.JSONDecodeError as exc:
            p.error(f"--conf is not valid JSON ({exc.msg} at column {exc.colno})")
    # Keep standard output for the status lines: everything else, Airflow's logging and
    # whatever a task prints included, goes to standard error.
    status = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    try:
        from airflow.cli.cli_parser import get_parser

        parser = get_parser()
        poll_dag_test_faster()
        if args.prepare and prepare(parser, status):
            return 1
        if args.gate:
            print(f"warm-up: {warm_up():.1f} s; waiting for the caller's go",
                  file=sys.stderr, flush=True)
            if not wait_for_gate(sys.stdin):
                print("standard input closed before the go: no date run", file=sys.stderr)
                return 1
        return run_dates(parser, args.dag_id, dates, args.conf, status)
    finally:
        status.close()


if __name__ == "__main__":
    sys.exit(main())
