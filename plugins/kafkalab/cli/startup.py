"""``kafkalab startup run``: where a new consumer's first-message delay goes, on the lab's own
Kafka 4.x cluster (:mod:`kafkalab.startup`; docs/first-message.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kafkalab.cli.options import (
    SubParsers,
    add_data_option,
    add_json_option,
    csv_list,
    int_list,
    run_id_arg,
)
from kafkalab.cli.output import err, say, say_json


def _port(value: str) -> int:
    if not value.isdigit() or not 1024 <= int(value) <= 65000:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port in 1024..65000")
    return int(value)


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``startup`` and its action ``run``."""
    from kafkalab.cluster.flavors import embedded_flavor_names
    from kafkalab.startup.spec import DEFAULT_BASE_PORT, DEFAULT_CONTROL_PORT

    ps = sub.add_parser("startup", help="seed 000: where a new consumer's first-message delay "
                        "goes (cold/warm cluster, rebalance delay, group protocol, assign)",
                        description="Time new consumers from their construction to their first "
                        "record on the lab's own one-node Kafka 4.x cluster (started fresh, "
                        "wiped after), in every case: cold cluster (its first group) or warm, "
                        "the broker's group.initial.rebalance.delay.ms, the classic or the "
                        "KIP-848 consumer group protocol, one or several members, or assign() "
                        "with no group. See docs/first-message.md.")
    ps.set_defaults(handler=cmd_startup)
    ssub = ps.add_subparsers(dest="startup_command", required=True)
    pr = ssub.add_parser("run", help="measure every case and print its table and the answer")
    pr.add_argument("--client", type=csv_list, default=["confluent-kafka", "kafka-python"],
                    help="clients (default confluent-kafka,kafka-python)")
    pr.add_argument("--delay-ms", type=int_list, default=None,
                    help="the broker's group.initial.rebalance.delay.ms values, a cluster each "
                    "(default 0,3000: Kafka's sample configs and its default; 0 on a broker "
                    "without the setting, before Kafka 0.11)")
    pr.add_argument("--protocol", type=csv_list, default=["classic", "consumer"],
                    help="group.protocol values of the subscribe cases (default classic,consumer)")
    pr.add_argument("--members", type=int_list, default=[1, 3],
                    help="consumers of one new group started at once (default 1,3)")
    pr.add_argument("--trials", type=int, default=5, help="probes per case (default 5)")
    pr.add_argument("--timeout", type=float, default=30.0,
                    help="seconds a probe waits for its first record (default 30)")
    pr.add_argument("--flavor", choices=embedded_flavor_names(), default=embedded_flavor_names()[0],
                    help="the broker of the run's own cluster (default %(default)s; an older "
                    "broker for contrast: on Kafka 0.9.0.1 only --delay-ms 0 and the classic "
                    "protocol apply)")
    pr.add_argument("--base-port", type=_port, default=DEFAULT_BASE_PORT,
                    help=f"the start-up cluster's broker port (default {DEFAULT_BASE_PORT})")
    pr.add_argument("--control-port", type=_port, default=DEFAULT_CONTROL_PORT,
                    help=f"its KRaft controller port (default {DEFAULT_CONTROL_PORT})")
    pr.add_argument("--run-id", type=run_id_arg, default=None,
                    help="the run's id (default a new one; an existing run is refused)")
    add_data_option(pr)
    add_json_option(pr)


def cmd_startup(args: argparse.Namespace) -> int:
    """``startup run``: the cases' table and the answer (or ``--json``); exit 4 when a probe
    timed out or failed."""
    from kafkalab.cluster.flavors import embedded_flavor
    from kafkalab.startup.engine import StartupRequest, execute_startup
    from kafkalab.startup.spec import KAFKA_DEFAULT_INITIAL_REBALANCE_DELAY_MS, StartupSpec
    from kafkalab.startup_figures import LEGEND, format_table

    delays = args.delay_ms
    if delays is None:
        has_delay = embedded_flavor(args.flavor).embedded_features().initial_rebalance_delay
        delays = [0, KAFKA_DEFAULT_INITIAL_REBALANCE_DELAY_MS] if has_delay else [0]
    spec = StartupSpec(clients=tuple(args.client), delays_ms=tuple(delays),
                       protocols=tuple(args.protocol), members=tuple(args.members),
                       trials=args.trials, timeout_s=args.timeout)
    result = execute_startup(StartupRequest(
        spec=spec, data_dir=args.data_dir, run_id=args.run_id, flavor=args.flavor,
        base_port=args.base_port,
        control_port=args.control_port, command="kafkalab startup " + " ".join(sys.argv[2:])),
        progress=err)
    if args.json:
        say_json({"run_id": result.run_id, "status": result.status,
                  "run_dir": str(result.run_dir), "failed_probes": result.failed_probes,
                  "answer": result.answer, "cases": result.cases})
    else:
        say("")
        say(format_table(result.cases))
        say("")
        say(f"medians in ms after each consumer's start (n = members × trials): {LEGEND}.")
        say("")
        for line in result.answer:
            say(line)
        say(f"run {result.run_id}: {result.status}; files in {result.run_dir}")
    if result.failed_probes:
        err(f"kafkalab: error: run {result.run_id}: {result.failed_probes} probe member(s) "
            "timed out or failed (rows with their status in probes.parquet)")
        return 4
    return 0


__all__ = ["add_parser", "cmd_startup"]
