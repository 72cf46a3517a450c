"""``kafkalab run``: a latency run, cell by cell (:mod:`kafkalab.runner`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kafkalab.cli.options import (
    SubParsers,
    add_cluster_option,
    add_data_option,
    csv_list,
    run_id_arg,
)
from kafkalab.cli.output import err, say, say_json
from kafkalab.config.loader import DEFAULT_WORKLOAD

if TYPE_CHECKING:
    from kafkalab.runner import RunRequest

OPTION_OF_KEY = {"messages": "--messages", "warmup_messages": "--warmup",
                 "encoding": "--encoding", "consumer_mode": "--consumer-mode"}
"""The option that overrides each workload key (refusals name the option)."""


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``run``."""
    pr = sub.add_parser("run", help="measure scenarios × payloads × profiles",
                        description="Run a workload: every scenario × payload × profile cell, "
                        "closed loop (one message in flight), warm-up recorded and excluded, lost / "
                        "duplicate / late messages counted, first-message delay measured in "
                        "subscribe and assign mode. Prints a comparison table; writes samples "
                        "(Parquet) and a run manifest under the data directory. Exits non-zero "
                        "if any cell failed.",
                        epilog=_run_epilog(),
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    pr.set_defaults(handler=cmd_run)
    pr.add_argument("--workload", default=DEFAULT_WORKLOAD, help=f"workload name or YAML path (default {DEFAULT_WORKLOAD})")
    pr.add_argument("--scenario", type=csv_list, default=None, help="comma-separated scenarios (default: the workload's)")
    pr.add_argument("--payload", type=csv_list, default=None, help="comma-separated payloads (default: the workload's)")
    pr.add_argument("--profile", type=csv_list, default=None, help="comma-separated profiles (default: the workload's)")
    pr.add_argument("--messages", type=int, default=None, help="measured messages per cell (after warm-up)")
    pr.add_argument("--warmup", type=int, default=None, help="warm-up messages per cell (recorded, excluded)")
    pr.add_argument("--encoding", choices=("raw", "base64"), default=None, help="payload encoding (default: the workload's)")
    pr.add_argument("--consumer-mode", choices=("subscribe", "assign"), default=None,
                    help="how the measuring consumer gets its partitions")
    pr.add_argument("--run-id", type=run_id_arg, default=None, help="run id (default: time-based); re-running one replaces its rows")
    pr.add_argument("--http-port", type=int, default=0, help="port of the rest scenario's server (default: any free)")
    pr.add_argument("--no-provision", action="store_true", help="do not create/alter topics first")
    pr.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    add_cluster_option(pr)
    add_data_option(pr)


def _run_epilog() -> str:
    """The names ``run`` accepts, from the catalog, the payloads and include/profiles/."""
    from kafkalab.catalog import SCENARIOS
    from kafkalab.config import known_names
    from kafkalab.payloads import IMAGE_SPECS, RANDOM_BODY_SIZES_BYTES

    return (f"scenarios: {', '.join(SCENARIOS)}\n"
            f"payloads:  {', '.join(RANDOM_BODY_SIZES_BYTES)} (random bytes), "
            f"{', '.join(IMAGE_SPECS)} (JPEG)\n"
            f"profiles:  {', '.join(known_names('profiles'))}\n"
            f"workloads: {', '.join(known_names('workloads'))}")


def run_request(args: argparse.Namespace) -> RunRequest:
    """The run the options ask for, through :func:`kafkalab.runner.build_run_request` (the
    Airflow tasks' way too)."""
    from kafkalab.runner import build_run_request

    return build_run_request(
        args.workload, scenarios=args.scenario, payloads=args.payload, profiles=args.profile,
        overrides={"messages": args.messages, "warmup_messages": args.warmup,
                   "encoding": args.encoding, "consumer_mode": args.consumer_mode},
        option_names=OPTION_OF_KEY,
        data_dir=args.data_dir, descriptor_path=args.cluster, run_id=args.run_id,
        http_port=args.http_port, provision=not args.no_provision,
    )


def cmd_run(args: argparse.Namespace) -> int:
    """Measure every cell; the table (or ``--json``); exit 4 when a cell failed."""
    from kafkalab.runner import execute
    from kafkalab.summary import format_run_summary, json_summary

    result = execute(run_request(args), progress=err)
    if args.json:
        rows = [json_summary(c) for c in result.cells]
        say_json({"run_id": result.run_id, "status": result.status, "cells": rows})
    else:
        say("")
        say(format_run_summary(result.cells))
        say(f"run {result.run_id}: {result.status}; manifest {result.manifest_path}")
    if result.status != "complete":
        err(f"kafkalab: error: run {result.run_id} is {result.status}: some cells failed (see the table)")
        return 4
    return 0


__all__ = ["OPTION_OF_KEY", "add_parser", "cmd_run", "run_request"]
