"""``kafkalab``: the lab's command line.

Every user error (bad option, bad YAML, cluster down, port taken, unreachable broker) is a
:class:`~kafkalab.errors.LabError`: printed as one ``kafkalab: error: …`` line, exit code 2-4,
no traceback. Anything else is a bug and keeps its traceback.

One module per command group adds its sub-command and holds its command: ``cluster``,
``topics``, ``run``, ``load`` (``load`` and ``maxrate``), ``faults``, ``spark``, ``demo``,
``runs``, ``compare``, ``versions``, ``aggregate``, ``export``, ``report``, ``drift``, ``startup``,
``canary``;
``options`` holds
what they share to read arguments, ``output`` how they print. :func:`build_parser` only
assembles them, in the order ``--help`` lists them.
"""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from kafkalab.cli import (
    aggregate,
    canary,
    cluster,
    compare,
    demo,
    drift,
    export,
    faults,
    load,
    report,
    run,
    runs,
    spark,
    startup,
    topics,
    versions,
)
from kafkalab.cli.options import LabParser, subcommands
from kafkalab.cli.output import err
from kafkalab.errors import LabError

EPILOG = """\
examples:
  kafkalab cluster up                       # real Apache Kafka 4.x on KRaft, on 127.0.0.1
  kafkalab topics provision --workload images-http-vs-kafka --profile latency
  kafkalab run --scenario rest,kafka-python,confluent-kafka,jvm-e2e \\
               --payload 1mb,10mb --profile latency --messages 20
  kafkalab cluster down

  kafkalab aggregate                        # Spark, validation, drift, report of the newest run
  kafkalab compare RUN_A RUN_B              # side by side; exit 1 when RUN_B regressed
  kafkalab versions run --versions 4.1.2,4.4.0 --rounds 3   # does upgrading make us slower?
  kafkalab canary --cluster prod.yaml       # per-broker availability and latency on /metrics

Data goes to lab-data/ in the project (or --data-dir / KAFKALAB_DATA_DIR), wherever the command
is run from; cluster state to .lab/ (KAFKALAB_HOME). The schema of every file is in
docs/metrics-schema.md. --json on any command that prints results gives one JSON document
(docs/cli.md).
"""

COMMAND_GROUPS = (cluster, topics, run, load, faults, startup, canary, spark, demo, runs,
                  compare, versions, aggregate, export, report, drift)
"""The command modules, in the order ``kafkalab --help`` lists their commands."""


def build_parser() -> argparse.ArgumentParser:
    """The full command tree (also used to check that every --help is complete)."""
    p = LabParser(prog="kafkalab", description="Kafka Latency Lab: measure how fast and how "
                  "safely Kafka moves data.", epilog=EPILOG,
                  formatter_class=argparse.RawDescriptionHelpFormatter)
    from kafkalab import __version__

    p.add_argument("--version", action="version", version=f"kafkalab {__version__}")
    sub = subcommands(p, "command", "COMMAND")
    for group in COMMAND_GROUPS:
        group.add_parser(sub)
    return p


@contextmanager
def _terminate_as_interrupt() -> Iterator[list[int]]:
    """Within the block, SIGTERM (``kill``, a service manager's stop) is handled as Ctrl-C
    is: the command's ``KeyboardInterrupt`` path keeps what was measured, stops its consumer
    shards and heals what a fault broke, where SIGTERM's default would end the process at
    once (a fault run killed so had left a consumer shard running for half an hour). Yields
    the signals received."""
    received: list[int] = []

    def interrupt(signum: int, _frame: object) -> None:
        received.append(signum)
        # once: a second SIGTERM must not break off the cleanup the first one started
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield received  # signal handlers belong to the main thread
        return
    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield received
    finally:
        # None: the handler was not installed from Python; the default is the closest
        signal.signal(signal.SIGTERM, before if before is not None else signal.SIG_DFL)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kafkalab`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    with _terminate_as_interrupt() as signals:
        try:
            code: int = args.handler(args)
            return code
        except LabError as exc:
            err(f"kafkalab: error: {exc}")
            return exc.exit_code
        except KeyboardInterrupt:
            how = "terminated (SIGTERM)" if signals else "interrupted"
            err(f"kafkalab: {how}; what was measured is kept (run marked incomplete)")
            return 143 if signals else 130


__all__ = ["COMMAND_GROUPS", "EPILOG", "build_parser", "main"]
