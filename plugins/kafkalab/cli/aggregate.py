"""``kafkalab aggregate``: the DAGs' Spark jobs, drift and report for a command-line run
(:mod:`kafkalab.aggregate`)."""

from __future__ import annotations

import argparse
from typing import Any

from kafkalab.cli.options import SubParsers, add_data_option, add_json_option, run_id_arg
from kafkalab.cli.output import err, say, say_json


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``aggregate``."""
    pagg = sub.add_parser(
        "aggregate", help="run the Spark aggregation, validation, drift and report of a run",
        description="What the DAGs run after a measurement, for a run made on the command "
        "line: the Spark aggregation and the Great Expectations validation through "
        "spark-submit (the DAGs' own jobs, arguments and settings; master "
        "$KAFKALAB_SPARK_MASTER, default local[*]), then the drift check and the report. "
        "Latency runs: aggregate_metrics, validate_metrics, drift, report; load runs: "
        "aggregate_load, validate_load, drift, report; fault runs: aggregate_faults, "
        "validate_faults, report; start-up runs: aggregate_startup, validate_startup, "
        "report. A failed validation is shown and drift and the report still "
        "run, as in the DAG. A run still being measured is refused (aggregate it once it has "
        "ended). Exit 0 when validated, 1 when the validation failed, 2 on bad input (no "
        "such run, a run still running, no samples), 4 when a Spark job failed. Job logs: "
        ".lab/logs/aggregate-<run>-<job>.log. See docs/cli.md.",
        epilog="examples:\n  kafkalab run --scenario confluent-kafka --payload 1kb --messages 200\n"
        "  kafkalab aggregate                 # the newest run\n"
        "  kafkalab aggregate --run-id 20261122T010203Z-1a2b3c\n"
        "  KAFKALAB_SPARK_MASTER=spark://127.0.0.1:7077 kafkalab aggregate",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    pagg.set_defaults(handler=cmd_aggregate)
    pagg.add_argument("--run-id", type=run_id_arg, default=None, help="the run (default: the newest, by start time)")
    pagg.add_argument("--one-session", action="store_true",
                      help="a latency, load or start-up run: the aggregation also validates "
                      "in its own Spark session (one JVM start instead of two, as the DAG "
                      "param one_spark_session); a fault run runs both jobs")
    add_json_option(pagg, "print the outcome (jobs, validation, drift, report) as one JSON document")
    add_data_option(pagg, reads=True)


def cmd_aggregate(args: argparse.Namespace) -> int:
    """``kafkalab aggregate``: see :mod:`kafkalab.aggregate`."""
    from kafkalab.aggregate import aggregate_run, format_outcome

    outcome = aggregate_run(args.data_dir, args.run_id, progress=err,
                            one_session=args.one_session)
    if args.json:
        say_json(outcome.to_dict())
    else:
        say(format_outcome(outcome))
    return 0 if outcome.validation_success else 1


__all__ = ["add_parser", "cmd_aggregate"]
