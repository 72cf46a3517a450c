"""``kafkalab report``: the static HTML trend report (:mod:`kafkalab.report.build`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from kafkalab.cli.options import SubParsers, add_data_option, add_json_option, run_id_arg
from kafkalab.cli.output import say


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``report``."""
    prep = sub.add_parser("report", help="build the static HTML trend report",
                          description="Build lab-data/reports/: one page per run and an index, "
                          "self-contained (opens offline). Reads the aggregates written by the "
                          "Spark job (spark_jobs/aggregate_metrics.py).")
    prep.set_defaults(handler=cmd_report)
    prep.add_argument("--run-id", type=run_id_arg, default=None, help="the run to feature (default: the latest)")
    add_json_option(prep, "print {report, index} as one JSON document")
    add_data_option(prep, reads=True)


def cmd_report(args: argparse.Namespace) -> int:
    """Build the report; print the featured page's path (or ``--json``)."""
    from kafkalab.errors import ConfigError
    from kafkalab.report.build import build_report
    from kafkalab.store import LabData

    lab = LabData(args.data_dir)
    if args.run_id is not None:
        try:
            manifest = lab.manifest(args.run_id)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"run {args.run_id}: its manifest is unreadable ({exc})") from None
        if manifest is None:
            raise ConfigError(f"no run {args.run_id} in {lab.root} (`kafkalab runs` lists them)")
    path = build_report(lab.root, run_id=args.run_id)
    if args.json:
        say(json.dumps({"report": str(path), "index": str(lab.report_index_path())}, indent=2))
        return 0
    say(f"report: {path}")
    return 0


__all__ = ["add_parser", "cmd_report"]
