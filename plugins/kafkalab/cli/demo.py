"""``kafkalab demo``: the quickstart (:mod:`kafkalab.demo`)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from kafkalab.cli.options import (
    SubParsers,
    add_cluster_option,
    add_data_option,
    csv_list,
    int_list,
)
from kafkalab.cli.output import say
from kafkalab.errors import ConfigError


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``demo``."""
    pdemo = sub.add_parser(
        "demo", help="the quickstart: seed 000's table, then the nightly DAG over 4 dates",
        description="Start the embedded cluster, run seed 000's comparison and print its "
        "table, then run the nightly DAG (airflow dags test) once per date with one line per "
        "date; Airflow's logs go to a file under .lab/logs/. What `make demo` runs.")
    pdemo.set_defaults(handler=cmd_demo)
    pdemo.add_argument("--dates", type=csv_list, default=None,
                       help="logical dates of the nightly runs (default "
                       "2026-11-18,2026-11-19,2026-11-20,2026-11-21)")
    pdemo.add_argument("--nightly-conf", default=None, metavar="JSON",
                       help="DAG run conf laid over the demo's small nightly matrix")
    pdemo.add_argument("--workload", default=None, help="seed 000's workload (default images-quick)")
    pdemo.add_argument("--no-seed000", action="store_true", help="skip seed 000's comparison")
    pdemo.add_argument("--no-seed000-aggregate", action="store_true",
                       help="measure seed 000 but skip its Spark aggregation (kafkalab aggregate): "
                       "its report page then shows no aggregates")
    pdemo.add_argument("--no-startup", action="store_true",
                       help="skip the start-up run (seed 000's question on Kafka 4.x: where a "
                       "new consumer's first second goes)")
    pdemo.add_argument("--startup-ports", type=int_list, default=None, metavar="BROKER,CONTROLLER",
                       help="the start-up run's own cluster's two ports (default 19492,19692)")
    pdemo.add_argument("--no-nightly", action="store_true", help="skip the nightly DAG runs")
    pdemo.add_argument("--spark-submit", action="store_true",
                       help="run each Spark job as its own spark-submit (as the scheduled "
                       "nightly does by default) instead of against one Spark Connect server "
                       "the demo starts on 127.0.0.1:$KAFKALAB_SPARK_CONNECT_PORT (15102)")
    pdemo.add_argument("--log", type=Path, default=None,
                       help="log file (default .lab/logs/demo-<time>.log)")
    add_cluster_option(pdemo)
    add_data_option(pdemo)


def cmd_demo(args: argparse.Namespace) -> int:
    """``kafkalab demo``: see :mod:`kafkalab.demo`."""
    from kafkalab.demo import DEMO_DATES, DEMO_WORKLOAD, DemoPlan, parse_conf, run_demo
    from kafkalab.startup.spec import DEFAULT_BASE_PORT, DEFAULT_CONTROL_PORT
    from kafkalab.store import LabData

    try:
        conf = parse_conf(args.nightly_conf)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    dates = tuple(args.dates) if args.dates else DEMO_DATES
    ports = tuple(args.startup_ports) if args.startup_ports else (
        DEFAULT_BASE_PORT, DEFAULT_CONTROL_PORT)
    if len(ports) != 2 or len(set(ports)) != 2 or not all(1024 <= p <= 65000 for p in ports):
        raise ConfigError(f"--startup-ports: give two different ports in 1024..65000, got "
                          f"{','.join(map(str, ports))}")
    for d in dates:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", d):
            raise ConfigError(f"--dates: {d!r} is not a date like 2026-11-18")
    plan = DemoPlan(workload=args.workload or DEMO_WORKLOAD, dates=dates, nightly_conf=conf,
                    seed000=not args.no_seed000, startup=not args.no_startup,
                    startup_ports=(ports[0], ports[1]),
                    aggregate_seed000=not args.no_seed000_aggregate, nightly=not args.no_nightly,
                    log_path=args.log, descriptor_path=args.cluster,
                    spark_connect=not args.spark_submit)
    return run_demo(plan, say=say, lab=LabData(args.data_dir))


__all__ = ["add_parser", "cmd_demo"]
