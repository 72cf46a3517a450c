"""Where a load cell's consumer shards run, and how the cell starts, waits for and stops them.

``shard_placement`` ``subprocess`` (the default) starts them as processes of the cell's own
process (``python -m kafkalab.load.shard``); ``tasks`` starts none and waits at the start
barrier for shards started by someone else (the ``consume_load_shard`` Airflow tasks, which
may run on other workers that share the data directory; :func:`shard_turn` tells such a task
when to join). The cell and its shards talk only through the cell directory
(:mod:`kafkalab.load.shard`: ``.plan.json``, ``.ready-NNN``, ``.start.json``, ``.stop.json``,
``.shard-NNN.json``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kafkalab.errors import RunError
from kafkalab.load import files
from kafkalab.load.files import ProcessCpu
from kafkalab.load.shard import plan_path, ready_path, result_path, start_path, stop_path
from kafkalab.load.spec import LoadCellSpec
from kafkalab.paths import plugins_dir
from kafkalab.progress import Progress, noop
from kafkalab.scenarios.base import now_ns
from kafkalab.store import atomic_write_json, read_json

BARRIER_TIMEOUT_S = 60.0
"""How long the producer waits for every shard to be positioned (plus 0.2 s per consumer)."""

TASKS_BARRIER_TIMEOUT_S = 180.0
"""The same, when the shards are Airflow tasks: they must first be scheduled and queued."""

SHARD_PLACEMENTS = ("subprocess", "tasks")
"""Where a cell's consumer shards run: processes of the cell, or tasks started elsewhere."""


def _shard_env() -> dict[str, str]:
    """The environment of a shard process: this one's, with the lab's ``plugins/`` first on
    ``PYTHONPATH`` (``python -m kafkalab.load.shard`` must import the same package)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(plugins_dir()), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def spawn_shards(spec: LoadCellSpec, cell: Path, logs: Path) -> list[subprocess.Popen[bytes]]:
    """Start the cell's shards as child processes (``python -m kafkalab.load.shard PLAN K``),
    each logging to ``logs/shard-NNN.log``."""
    env = _shard_env()
    procs = []
    for k in range(spec.shards):
        out = open(logs / f"shard-{k:03d}.log", "wb")  # noqa: SIM115 - owned by the child
        procs.append(subprocess.Popen([sys.executable, "-m", "kafkalab.load.shard",
                                       str(plan_path(cell)), str(k)],
                                      stdout=out, stderr=subprocess.STDOUT, env=env))
        out.close()
    return procs


def _wait_or_kill(proc: subprocess.Popen[Any], timeout_s: float) -> None:
    """Wait for ``proc`` to end, up to ``timeout_s``; then kill it (and reap it)."""
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _shard_failure(cell: Path, k: int, logs: Path) -> str:
    """Why shard ``k`` failed: its result's error, else the last line of its log."""
    doc = read_json(result_path(cell, k))
    if isinstance(doc, dict) and doc.get("error"):
        return str(doc["error"])
    from kafkalab.procs import last_line

    return last_line(logs / f"shard-{k:03d}.log") or "exited"


def await_barrier(spec: LoadCellSpec, cell: Path, procs: list[subprocess.Popen[bytes]],
                  logs: Path, timeout_s: float, external: bool = False) -> None:
    """Wait until every shard has positioned all its consumers at the log end.

    A shard that stopped before it was ready fails the cell at once: a process that exited
    (``subprocess``) or a result file written without a ready file (``tasks``).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        missing = [k for k in range(spec.shards) if not ready_path(cell, k).exists()]
        if not missing:
            return
        for k in missing:
            ended = (procs[k].poll() is not None) if not external else result_path(cell, k).exists()
            if ended and not ready_path(cell, k).exists():
                raise RunError(f"consumer shard {k} stopped before it was ready: "
                               f"{_shard_failure(cell, k, logs)}")
        if time.monotonic() > deadline:
            if external:
                raise RunError(
                    f"consumer shard task(s) {', '.join(map(str, missing))} did not join within "
                    f"{timeout_s:.0f} s (start barrier): shard placement 'tasks' needs a running "
                    f"scheduler with {spec.shards + 1} free task slots and room in the shard "
                    f"pool; `airflow dags test` runs one task at a time, use 'subprocess' there")
            raise RunError(f"consumers not positioned within {timeout_s:.0f} s (start barrier)")
        time.sleep(0.02)


def await_shards(spec: LoadCellSpec, cell: Path, procs: list[subprocess.Popen[bytes]],
                 logs: Path, external: bool = False) -> list[dict[str, Any]]:
    """Every shard's result once the drain is over (up to ``drain_s`` + 60 s; a shard process
    still running then is killed), in shard order; a shard without a result file is
    ``failed`` with the reason its log gives."""
    deadline = time.monotonic() + spec.drain_s + 60
    if external:  # shard tasks elsewhere: their result files are all there is
        while time.monotonic() < deadline and not all(
                result_path(cell, k).exists() for k in range(spec.shards)):
            time.sleep(0.05)
    for p in procs:
        _wait_or_kill(p, max(0.1, deadline - time.monotonic()))
    out = []
    for k in range(spec.shards):
        doc = read_json(result_path(cell, k))
        out.append(doc if isinstance(doc, dict) else
                   {"shard": k, "status": "failed", "error": _shard_failure(cell, k, logs)})
    return out


def stop_shards(cell: Path, procs: list[subprocess.Popen[bytes]],
                external_shards: int = 0) -> list[ProcessCpu]:
    """Tell running shards to stop (they write their rows and exit), then make sure; returns
    the CPU entries of the shards that wrote a result.

    ``external_shards``: shards started elsewhere (tasks); they are told through the stop
    file and waited for (their result files) up to 25 s; they cannot be killed from here.
    """
    if not procs and not external_shards:
        return []
    if not stop_path(cell).exists():
        atomic_write_json(stop_path(cell), {"stop_ts_ns": now_ns(), "targets": {}})
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            _wait_or_kill(p, 10)
    if external_shards:
        joined = [k for k in range(external_shards) if ready_path(cell, k).exists()]
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline and not all(result_path(cell, k).exists()
                                                      for k in joined):
            time.sleep(0.05)
    docs = [read_json(result_path(cell, k)) for k in range(max(len(procs), external_shards))]
    return [ProcessCpu.of_result(doc) for doc in docs if isinstance(doc, dict)]


def shard_turn(cell: Path, shard: int, token: str) -> str:
    """Whether shard ``shard`` of the cell in ``cell`` (placement ``tasks``) should join now.

    Returns:
        ``"join"``: this attempt's plan (its ``placement_token`` is ``token``) is up, the cell
        is running and waits at the start barrier, and this shard has not joined yet;
        ``"wait"``: no plan of this attempt yet (an earlier cell is still measuring);
        ``"done"``: this shard already joined this attempt and wrote its result;
        ``"ended"``: this attempt's cell ended (or passed its barrier) without this shard.
    """
    plan = read_json(plan_path(cell))
    # Two keys of cell.json, read as they are (not as a files.CellDoc): a trigger asks every
    # second, and a cell of another attempt may hold any document.
    meta = read_json(files.cell_json_path(cell))
    if not isinstance(plan, dict) or plan.get("placement_token") != token \
            or not isinstance(meta, dict) or meta.get("placement_token") != token:
        return "wait"
    if ready_path(cell, shard).exists():
        return "done" if result_path(cell, shard).exists() else "ended"
    if meta.get("status") != "running" or start_path(cell).exists() \
            or result_path(cell, shard).exists():
        return "ended"
    return "join"


def run_shard_process(cell: Path, shard: int, progress: Progress = noop,
                      settled: Path | None = None) -> dict[str, Any]:
    """Run shard ``shard`` of the cell in ``cell`` as a child process
    (``python -m kafkalab.load.shard``) until it ends; its output goes to ``progress`` line by
    line. Returns its result file (``status`` ``complete``, ``failed`` or ``interrupted``).

    ``settled``: where the cell's files are once its producer has ended the attempt
    (:mod:`kafkalab.attempts`: ``cell`` is the attempt directory, renamed to ``settled`` as
    soon as every shard's result is in, which may be before this reads it)."""
    env = _shard_env()
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab.load.shard", str(plan_path(cell)),
                             str(shard)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            progress(line.rstrip())
        proc.wait()
    except BaseException:
        proc.send_signal(signal.SIGINT)  # the shard writes its rows and its result, then exits
        _wait_or_kill(proc, 20)
        raise
    doc = read_json(result_path(cell, shard))
    if doc is None and settled is not None:  # the cell ended and its attempt took its place
        doc = read_json(result_path(settled, shard))
    if isinstance(doc, dict):
        return doc
    return {"shard": shard, "status": "failed",
            "error": f"the shard process exited with code {proc.returncode} and no result"}


def remove_extra_shard_files(cell: Path, shards: int) -> None:
    """A re-run with fewer shards must not leave the earlier run's extra files behind."""
    for kind in (files.receipts_path, files.lag_path):
        for f in kind.every(cell):
            k = kind.shard_of(f)
            if k is not None and k >= shards:
                f.unlink(missing_ok=True)
