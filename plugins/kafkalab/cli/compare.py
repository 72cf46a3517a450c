"""``kafkalab compare RUN_A RUN_B``: two runs side by side (:mod:`kafkalab.compare`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kafkalab.cli.options import SubParsers, add_data_option, add_json_option, run_id_arg
from kafkalab.cli.output import say, say_json
from kafkalab.errors import ConfigError


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``compare``."""
    pcmp = sub.add_parser(
        "compare", help="two runs side by side; exit 1 when RUN_B regressed",
        description="Every series the two runs share (same cell, measured the same way; an "
        "emulator's cells apart), each metric present in their aggregates (e2e p50, p99, "
        "p99.9, the message rate, the drift-checked ones), RUN_A's and RUN_B's value, the "
        "change and a verdict by the drift rule of include/drift.yaml with RUN_A as a "
        "one-run baseline: RUN_B regressed when it moved the bad way by at least the "
        "metric's minimum relative change and, where both have them, the 95 % confidence "
        "intervals do not overlap (used only with one row of the series in each run). Each "
        "run's state, validation and stale outputs are shown; a RUN_A the drift check would "
        "not take as a baseline is judged against anyway, with a warning. Series of one run "
        "only are listed. Exit 1 when anything regressed, 0 otherwise, 2 on bad input or when "
        "nothing was comparable (no shared series, or no judged metric with a value in both: "
        "one line says which facts differ; --json still prints the document, \"comparable\": "
        "false). See docs/cli.md.",
        epilog="examples:\n  kafkalab compare 20261120T010203Z-aaaaaa 20261121T010203Z-bbbbbb\n"
        "  kafkalab compare RUN_ON_4_1 RUN_ON_4_4 --across-versions   # an upgrade's verdict\n"
        "  kafkalab compare RUN_A RUN_B --json | jq '.shared[].metrics[] | select(.verdict == \"regressed\")'",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    pcmp.set_defaults(handler=cmd_compare)
    pcmp.add_argument("run_a", type=run_id_arg, metavar="RUN_A", help="the reference run (its id, as `kafkalab runs` lists it)")
    pcmp.add_argument("run_b", type=run_id_arg, metavar="RUN_B", help="the run judged against RUN_A")
    pcmp.add_argument("--across-versions", action="store_true",
                      help="an upgrade: key the series without the broker's flavor and version, "
                      "so a cell measured on two Kafka releases is one series and RUN_B's "
                      "verdict is the upgrade's (rounds on fresh clusters: kafkalab versions)")
    pcmp.add_argument("--config", type=Path, default=None, help="drift rules YAML (default include/drift.yaml, else the built-in rules; a file given must exist and parse)")
    add_json_option(pcmp, "print the comparison as one JSON document")
    add_data_option(pcmp, reads=True)


def cmd_compare(args: argparse.Namespace) -> int:
    """``kafkalab compare RUN_A RUN_B``: see :mod:`kafkalab.compare`."""
    from kafkalab.compare import compare_runs, format_comparison
    from kafkalab.store import LabData

    c = compare_runs(LabData(args.data_dir).root, args.run_a, args.run_b, args.config,
                     across_versions=args.across_versions)
    if args.json:  # the document even when nothing is comparable ("comparable": false)
        say_json(c.to_dict())
    if not c.comparable:  # a gate that checked nothing must not pass
        raise ConfigError(c.reason or "nothing comparable")
    if not args.json:
        say(format_comparison(c))
    return 1 if c.regressed else 0


__all__ = ["add_parser", "cmd_compare"]
