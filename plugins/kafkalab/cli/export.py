"""``kafkalab export prometheus``: the latest figures for node_exporter's textfile collector
(:mod:`kafkalab.export.prometheus`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kafkalab.cli.options import SubParsers, add_data_option, add_group, add_json_option
from kafkalab.cli.output import say


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``export`` and its action ``prometheus``."""
    esub = add_group(sub, "export", cmd_export, "export_command",
                     help="export the latest figures for other tools (Prometheus)",
                     description="Exports of the lab's results. See docs/prometheus.md.")
    eprom = esub.add_parser(
        "prometheus", help="write a Prometheus text file for node_exporter's textfile collector",
        description="Write the latest figures as a Prometheus text file (format 0.0.4), "
        "atomically: the last successful run's time per kind, p50/p99 per latency and load "
        "series, messages sent and lost, fault losses, the drift state of every series "
        "(label emulator=\"true\" on an emulator's: a descriptor marked is_emulator). A percentile that is undefined "
        "(too few samples) is left out, never 0. Point node_exporter's "
        "--collector.textfile.directory at the file's folder. See docs/prometheus.md; a "
        "Grafana dashboard is include/grafana/kafkalab.json.",
        epilog="examples:\n  kafkalab export prometheus\n"
        "  kafkalab export prometheus --out /var/lib/node_exporter/textfile/kafkalab.prom",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    eprom.add_argument("--out", type=Path, default=None,
                       help="the file to write, ending in .prom (default <data dir>/metrics/"
                       "kafkalab.prom); missing folders are created; written whole (a rename) "
                       "with mode 0644, so node_exporter's own user can read it")
    add_json_option(eprom, "print {path, samples per metric} as one JSON document")
    add_data_option(eprom, reads=True)


def cmd_export(args: argparse.Namespace) -> int:
    """``kafkalab export prometheus``: see :mod:`kafkalab.export.prometheus`."""
    from kafkalab.export.prometheus import export_textfile

    done = export_textfile(args.data_dir, args.out)
    if args.json:
        say(json.dumps(done, indent=2))
    else:
        n = sum(done["samples"].values())
        say(f"prometheus: {n} samples of {sum(1 for v in done['samples'].values() if v)} "
            f"metrics in {done['path']}")
    return 0


__all__ = ["add_parser", "cmd_export"]
