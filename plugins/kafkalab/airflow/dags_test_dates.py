"""``airflow dags test`` for several logical dates in one process (what ``make demo`` runs).

``python -m kafkalab.airflow.dags_test_dates DAG_ID --dates D1,D2,... [--conf JSON] [--prepare]``

Each date is one ``airflow dags test DAG_ID DATE -c JSON``: the same Airflow command
function (``airflow.cli.commands.dag_command.dag_test``, through Airflow's own CLI parser),
called once per date, one date after the other. One process saves what every
``airflow dags test`` pays before its first task: starting Python and Airflow, and building
the in-process execution API (~10 s a date on the 2-core machine). ``--prepare`` first runs
``airflow db migrate`` and ``airflow pools import`` of the lab's pools
(:func:`kafkalab.airflow.pools.write_pools_file`) the same way, in the same process.

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
from typing import IO

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
        if args.prepare and prepare(parser, status):
            return 1
        return run_dates(parser, args.dag_id, dates, args.conf, status)
    finally:
        status.close()


if __name__ == "__main__":
    sys.exit(main())
