"""``python -m tools.slowdown [--factor 2] -- <command>``: run a command as on a machine whose
every core is ``factor`` times slower, to check the budgets of issues 24 and 25 (``make test``
25 min and ``make demo`` 3 min "on a machine twice as slow") by measuring instead of dividing.

How: one real-time (``SCHED_FIFO``) busy loop pinned to each core takes ``1 - 1/factor`` of
every 2 ms on it and sleeps the rest. A real-time task runs before every ordinary one, so on
each core everything else (the command and all it starts) gets ``1/factor`` of the time, be it
one busy thread or many: a slower core, with a stall of at most ~1 ms where a slower core
would stretch the work evenly. Time spent waiting (sleeps, timeouts, the network) is not
stretched: it is not on a slower machine either. A CPU quota or ``cpu.shares`` were tried
first and rejected: with them one busy process ran only x1.2 slower (``--calibrate``).
``--calibrate`` runs busy loops on one and on every core, plain then slowed down, and prints
the slowdown each saw (2026-11-28, ``--factor 2``, nothing else running: x1.99 for one
process; x2.04 and x2.10 for two, one per core).

Needs root (real-time scheduling); without it, one line and exit 2. The whole machine is
slowed down while it runs, so run nothing else meanwhile. The summary (wall time, exit code)
goes to standard error and, with ``--json``, to a file (``{"command", "factor", "cores",
"wall_s", "exit_code", "started_utc"}``). The command's exit code is returned. The loops stop
with the command, on Ctrl-C, and by themselves when this process dies.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

READY_TIMEOUT_S = 10.0
"""How long a busy loop may take to start and become real-time."""

PERIOD_S = 0.002
"""The burner's cycle on its core: busy ``PERIOD_S * (1 - 1/factor)``, then asleep."""

BURN = """import os, sys, time
core, busy, idle, parent = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), os.getppid()
os.sched_setaffinity(0, {core})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
os.write(1, b"ready\\n")
while os.getppid() == parent:
    end = time.perf_counter() + busy
    while time.perf_counter() < end:
        pass
    time.sleep(idle)
"""
"""The real-time busy loop of one core (its arguments: the core, the busy and idle seconds of
a cycle); it writes ``ready`` once real-time and ends when the process that started it is
gone."""


class SlowdownError(Exception):
    """The machine cannot be slowed down this way (one line for the user)."""


LOOP = ("import os, time\nend = time.monotonic() + float(__import__('sys').argv[1])\nn = 0\n"
        "while time.monotonic() < end:\n    n += 1\nos.write(1, f'{n}\\n'.encode())\n")
"""Counts loop turns for the seconds its argument names: a core's speed as the loop sees it.
The count and its newline go out in one ``write`` (atomic on a pipe): the loops share one
standard output, and ``print`` writes the number and the newline apart, so two counts could
interleave into one ("1708249" "1656558" "\\n" "\\n", seen about one run in four)."""


def calibration_command(processes: int, seconds: float = 3.0) -> list[str]:
    """A shell command that runs ``processes`` loops (:data:`LOOP`) at once and prints their
    counts: run it plain and under the slowdown, the ratio is the slowdown each one saw."""
    loop = f"{shlex.quote(sys.executable)} -c {shlex.quote(LOOP)} {seconds}"
    return ["bash", "-c", " & ".join([loop] * processes) + " & wait"]


def _burners(factor: float) -> list[subprocess.Popen[bytes]]:
    """One :data:`BURN` loop per core this process may use; raises SlowdownError when one
    cannot become real-time."""
    busy, idle = PERIOD_S * (1 - 1 / factor), PERIOD_S / factor
    procs = [subprocess.Popen([sys.executable, "-c", BURN, str(core), str(busy), str(idle)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for core in sorted(os.sched_getaffinity(0))]
    for p in procs:
        assert p.stdout is not None and p.stderr is not None
        ready, _, _ = select.select([p.stdout], [], [], READY_TIMEOUT_S)
        if not ready or p.stdout.readline() != b"ready\n":
            _stop(procs)
            err = p.stderr.read().decode().strip() if p.poll() is not None else ""
            raise SlowdownError("could not start a real-time busy loop (root needed): "
                                + (err.splitlines()[-1] if err else "it did not say ready"))
    return procs


def _stop(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.kill()
        p.wait()


def run(command: Sequence[str], factor: float, json_out: Path | None = None) -> int:
    """Run ``command`` with every core ``factor`` times slower; returns its exit code.

    Raises:
        SlowdownError: ``factor`` below 1, or no real-time scheduling (not root).
    """
    if factor < 1:
        raise SlowdownError(f"--factor {factor}: must be at least 1")
    burners = _burners(factor) if factor > 1 else []
    started = datetime.now(UTC)
    t0 = time.monotonic()
    code = 1
    try:
        proc = subprocess.Popen(list(command))
        try:
            code = proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
            code = proc.wait()
    finally:
        _stop(burners)
    wall_s = time.monotonic() - t0
    cores = len(os.sched_getaffinity(0))
    summary = {"command": list(command), "factor": factor, "cores": cores,
               "wall_s": round(wall_s, 1), "exit_code": code,
               "started_utc": started.isoformat(timespec="seconds")}
    print(f"slowdown x{factor:g} on {cores} cores: {wall_s:.1f} s wall, exit {code}",
          file=sys.stderr)
    if json_out:
        json_out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return code


def _counts(command: Sequence[str], factor: float | None) -> list[int]:
    if factor is None:
        out = subprocess.run(list(command), capture_output=True, text=True, check=True).stdout
    else:
        tmp = Path(f"/tmp/kafkalab-slowdown-{os.getpid()}.out")
        run(["bash", "-c", f'{shlex.join(command)} > {tmp}'], factor)
        out = tmp.read_text()
        tmp.unlink()
    return [int(x) for x in out.split()]


def calibrate(factor: float) -> int:
    """Loops on one core and on every core, plain then under the slowdown; prints the
    slowdown each loop saw (the goal: ``factor`` in both)."""
    for n in (1, len(os.sched_getaffinity(0))):
        cmd = calibration_command(n)
        plain, slow = sorted(_counts(cmd, None)), sorted(_counts(cmd, factor))
        seen = [round(p / s_, 2) for p, s_ in zip(plain, slow, strict=True)]
        print(f"{n} busy process(es): slowed down x{', x'.join(map(str, seen))} "
              f"(asked x{factor:g})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.slowdown", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--factor", type=float, default=2.0,
                        help="how many times slower each core is (default 2)")
    parser.add_argument("--json", type=Path, help="also write the summary to this file")
    parser.add_argument("--calibrate", action="store_true",
                        help="instead of a command: loops on 1 and on every core, plain then "
                             "slowed down; prints the slowdown each saw")
    parser.add_argument("command", nargs="*", help="the command (after --)")
    args = parser.parse_args(argv)
    if not args.calibrate and not args.command:
        parser.error("a command to run (after --), or --calibrate")
    try:
        if args.calibrate:
            return calibrate(args.factor)
        return run(args.command, args.factor, args.json)
    except SlowdownError as e:
        print(f"slowdown: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
