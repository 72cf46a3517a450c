"""``kafkalab load`` (the open loop, fan-out) and ``kafkalab maxrate`` (the maximum
sustainable rate): :mod:`kafkalab.load`."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from kafkalab.cli.options import (
    SubParsers,
    add_cluster_option,
    add_data_option,
    add_txn_options,
    as_options,
    csv_list,
    float_list,
    int_list,
    run_id_arg,
)
from kafkalab.cli.output import err, say, say_json

if TYPE_CHECKING:
    from kafkalab.load.run import LoadRequest
    from kafkalab.load.spec import LoadCellSpec, LoadPlan

OPTION_OF_FIELD = {"rate_msgs_per_s": "--rate", "duration_s": "--duration", "warmup_s": "--warmup",
                   "consumers_per_shard": "--consumers-per-process", "drain_s": "--drain",
                   "pause_at_s": "--pause-at", "pause_for_s": "--pause-for",
                   "consumers": "--consumers", "partitions": "--partitions", "acks": "--acks",
                   "payload": "--payload", "link_delay_ms": "--link-delay-ms",
                   "client_link_delay_ms": "--client-link-delay-ms", "fetch_from": "--fetch-from",
                   "thin_consumer": "--thin-consumer", "thin_link_kbps": "--thin-link-kbps",
                   "thin_link_delay_ms": "--thin-link-delay-ms", "txn_msgs": "--txn-msgs",
                   "txn_abort_every": "--txn-abort-every"}
"""The option that sets each field of a load cell (a refused value is named by it)."""


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``load`` and ``maxrate``."""
    pl = sub.add_parser("load", help="open-loop fixed-rate load: one producer → N consumers",
                        description="Latency under load (seed 003's HYDRA): one producer sends "
                        "at a fixed rate (message i is due at start + i/R; latency is measured "
                        "from that intended time, so stalls are not hidden), N consumers each "
                        "receive every message. Per cell: achieved vs target rate, rx rate, "
                        "loss, failing clients, duplicates, e2e (from intended) and service "
                        "latency, publish delay, lag over time, client CPU. Lists give a sweep "
                        "(consumers × rates). Writes load/ samples and a run manifest.",
                        epilog="examples:\n  kafkalab load --consumers 5 --rate 500 --duration 10\n"
                        "  kafkalab load --consumers 1,5,10 --rate 200,1000 --acks 0,1 --json\n"
                        "  kafkalab load --workload hydra-local\n"
                        "  kafkalab load --consumers 3 --rate 300 --duration 20 --pause-at 5 --pause-for 3\n"
                        "  kafkalab load --rate 500 --acks all --txn-msgs 0,1,10,100 --duration 20\n"
                        "  kafkalab load --consumers 3 --rate 200 --thin-consumer 0 --thin-link-kbps 50",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    pl.set_defaults(handler=cmd_load)
    pl.add_argument("--workload", default=None, help="a load workload (include/workloads/, kind: load) instead of the options below")
    pl.add_argument("--consumers", type=int_list, default=[1], help="consumers per cell, comma-separated (default 1)")
    pl.add_argument("--rate", type=float_list, default=[100.0], help="target msg/s, comma-separated (default 100)")
    pl.add_argument("--duration", type=float, default=10.0, help="seconds per cell, warm-up included (default 10)")
    pl.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds, excluded from the figures (default 2)")
    pl.add_argument("--acks", type=csv_list, default=None, help="0, 1 and/or all, comma-separated (default: the profile's)")
    pl.add_argument("--payload", type=csv_list, default=["1kb"], help="payload(s) (default 1kb)")
    pl.add_argument("--encoding", choices=("raw", "base64"), default="raw", help="payload encoding (default raw)")
    pl.add_argument("--profile", default="default", help="tuning profile (default default)")
    pl.add_argument("--client", choices=("confluent-kafka", "kafka-python"), default="confluent-kafka",
                    help="the producer's client (consumers are confluent-kafka)")
    pl.add_argument("--partitions", type=int, default=1, help="partitions of the load topic (default 1)")
    add_txn_options(pl, what="cells")
    pl.add_argument("--link-delay-ms", type=float_list, default=None,
                    help="one-way delays (ms) on every replication link between the nodes, a "
                    "cell each, whole ms, e.g. 0,1,2,5: what a replica in another zone costs (a "
                    "cluster started with `cluster up --brokers 3 --links`)")
    pl.add_argument("--client-link-delay-ms", type=float_list, default=None,
                    help="the clients sit beside one follower: one-way delays (ms) on their "
                    "links to every other node, a cell each (a cluster started with --links)")
    pl.add_argument("--fetch-from", type=csv_list, default=None,
                    help="leader and/or follower, comma-separated, a cell each: follower makes "
                    "the consumers name the near follower's rack (client.rack) so they read "
                    "from it (KIP-392); needs --client-link-delay-ms")
    pl.add_argument("--thin-consumer", type=int, default=None,
                    help="HYDRA on a thin pipe: this consumer (0-based) gets links of its own "
                    "(the cluster's solo plane; a cluster started with --links), degraded by "
                    "--thin-link-kbps and/or --thin-link-delay-ms while every other consumer "
                    "keeps the shared links")
    pl.add_argument("--thin-link-kbps", type=int, default=None,
                    help="the thin consumer's link carries at most this many KB/s each way")
    pl.add_argument("--thin-link-delay-ms", type=float, default=None,
                    help="the thin consumer's link is delayed this much (ms) one way")
    pl.add_argument("--consumer-mode", choices=("assign", "group"), default="assign",
                    help="assign: no group (default); group: one consumer group per consumer")
    pl.add_argument("--consumers-per-process", type=int, default=10, help="consumers per consumer process (default 10)")
    pl.add_argument("--drain", type=float, default=5.0, help="seconds consumers may catch up after the producer stops (default 5)")
    pl.add_argument("--pause-at", type=float, default=None, help="consumers pause at this second …")
    pl.add_argument("--pause-for", type=float, default=None, help="… for this many seconds (lag grows, then drains)")
    pl.add_argument("--run-id", type=run_id_arg, default=None, help="run id (default: time-based); re-running one replaces the cells it measures")
    pl.add_argument("--json", action="store_true",
                    help="print {run_id, status, cells: [one object per cell]} as one JSON document")
    add_cluster_option(pl)
    add_data_option(pl)
    _add_maxrate_parser(sub)


def _add_maxrate_parser(sub: SubParsers[Any]) -> None:
    pm = sub.add_parser("maxrate", help="find the maximum sustainable rate",
                        description="Step search for the highest rate at which the achieved rate "
                        "is ≥ 98 % of the target, lag does not grow, nothing fails, the publish "
                        "delay p99 stays under its bound and e2e p99 under the objective. Reports "
                        "msg/s and MB/s, the knee where latency climbs, what ran out (client or "
                        "broker CPU), three repeats at the found rate and a check at 1.1×. Lists "
                        "search every payload × acks × partitions × profile and end with one "
                        "line per combination.")
    pm.set_defaults(handler=cmd_maxrate)
    pm.add_argument("--payload", type=csv_list, default=["1kb"], help="payload(s), comma-separated (default 1kb)")
    pm.add_argument("--encoding", choices=("raw", "base64"), default="raw", help="payload encoding (default raw)")
    pm.add_argument("--acks", type=csv_list, default=None, help="0, 1 and/or all, comma-separated (default: the profile's)")
    pm.add_argument("--profile", type=csv_list, default=["default"],
                    help="tuning profile(s) (default default; the replication factor is the profile's)")
    pm.add_argument("--partitions", type=int_list, default=[1], help="partitions, comma-separated (default 1)")
    pm.add_argument("--consumers", type=int, default=1, help="consumers (default 1)")
    pm.add_argument("--start-rate", type=float, default=1000.0, help="first step's msg/s (default 1000)")
    pm.add_argument("--step-duration", type=float, default=6.0, help="seconds per step, warm-up included (default 6)")
    pm.add_argument("--objective-p99-ms", type=float, default=100.0, help="e2e p99 objective in ms (default 100)")
    pm.add_argument("--repeats", type=int, default=3, help="repeats at the found rate (default 3)")
    pm.add_argument("--run-id", type=run_id_arg, default=None, help="run id (default: time-based)")
    pm.add_argument("--json", action="store_true", help="print the result as JSON")
    add_cluster_option(pm)
    add_data_option(pm)


def load_plan(args: argparse.Namespace) -> LoadPlan:
    """The grid the options ask for (:class:`kafkalab.load.spec.LoadPlan`)."""
    from kafkalab.load.spec import LoadPlan

    return LoadPlan(consumers=args.consumers, rates_msgs_per_s=args.rate, acks=args.acks or [],
                    payloads=args.payload, client=args.client, encoding=args.encoding,
                    profile=args.profile, duration_s=args.duration, warmup_s=args.warmup,
                    partitions=args.partitions, consumer_mode=args.consumer_mode,
                    consumers_per_shard=args.consumers_per_process, drain_s=args.drain,
                    pause_at_s=args.pause_at, pause_for_s=args.pause_for,
                    txn_msgs=args.txn_msgs or [], txn_abort_every=args.txn_abort_every,
                    link_delay_ms=args.link_delay_ms or [],
                    client_link_delay_ms=args.client_link_delay_ms or [],
                    fetch_from=args.fetch_from or [], thin_consumer=args.thin_consumer,
                    thin_link_kbps=args.thin_link_kbps,
                    thin_link_delay_ms=args.thin_link_delay_ms)


def load_cells(args: argparse.Namespace) -> tuple[list[LoadCellSpec], str]:
    """The cells of ``kafkalab load`` and the run's workload name: a workload's sweep, or the
    options' grid (``adhoc``), both planned by :func:`kafkalab.load.spec.plan_cells`.

    Raises:
        ConfigError: a refused cell, named by the option (``--rate: Input should be ...``).
    """
    from kafkalab.errors import ConfigError
    from kafkalab.load.spec import PlanRefused, plan_cells

    if args.workload:
        from kafkalab.load.workloads import load_load_workload

        w = load_load_workload(args.workload)
        return w.cells(), w.name
    from pydantic import ValidationError

    try:
        return plan_cells(load_plan(args)), "adhoc"
    except PlanRefused as exc:
        raise ConfigError(as_options(exc.error, OPTION_OF_FIELD)) from None
    except ValidationError as exc:  # the grid's own bounds (LoadPlan)
        raise ConfigError(as_options(exc, {**OPTION_OF_FIELD, "rates_msgs_per_s": "--rate"})) \
            from None


def load_request(args: argparse.Namespace) -> LoadRequest:
    """The load run the options ask for, as the engine's request."""
    from kafkalab.load.run import LoadRequest

    cells, name = load_cells(args)
    return LoadRequest(cells=cells, data_dir=args.data_dir, descriptor_path=args.cluster,
                       run_id=args.run_id, command="kafkalab load " + " ".join(sys.argv[2:]),
                       workload_name=name)


def cmd_load(args: argparse.Namespace) -> int:
    """Measure every cell; the table (or ``--json``); exit 4 when a cell failed."""
    from kafkalab.load.run import execute_load
    from kafkalab.load.summary import format_load_table, json_cell

    result = execute_load(load_request(args), progress=err)
    if args.json:
        say_json({"run_id": result.run_id, "status": result.status,
                  "cells": [json_cell(c) for c in result.cells]})
    else:
        say("")
        say(format_load_table(result.cells))
        say("")
        say("rate, achieved, rx avg in msg/s; e2e = intended send time → record in the consumer's "
            "hands (corrected for coordinated omission), svc = actual send → receipt, pub = "
            "send − intended; ms, exact nearest-rank over every consumer's expected messages "
            "(missing ones count as +inf); n<100: too few for p99. failing = consumers missing "
            "an acked message after the drain.")
        say(f"run {result.run_id}: {result.status}; manifest {result.manifest_path}")
    if result.status != "complete":
        err(f"kafkalab: error: run {result.run_id} is {result.status}: some cells failed (see above)")
        return 4
    return 0


def cmd_maxrate(args: argparse.Namespace) -> int:
    """Search every payload × acks × partitions × profile; exit 4 when one found no rate."""
    from kafkalab.errors import ConfigError
    from kafkalab.load.maxrate import (
        MaxRateRequest,
        find_max_rate,
        format_max_rate,
        format_max_rate_matrix,
    )

    for a in args.acks or []:
        if a not in ("0", "1", "all"):
            raise ConfigError(f"--acks: {a!r} is not one of 0, 1, all")
    combos = [(pl, ak, pa, pr) for pr in args.profile for pl in args.payload
              for ak in (args.acks or [None]) for pa in args.partitions]
    if len(combos) > 1 and args.run_id:
        raise ConfigError("--run-id names one search; drop it to search several combinations")
    results = []
    for payload, acks, partitions, profile in combos:
        req = MaxRateRequest(payload=payload, encoding=args.encoding, acks=acks,
                             profile=profile, partitions=partitions,
                             consumers=args.consumers, start_rate=args.start_rate,
                             step_duration_s=args.step_duration,
                             objective_p99_ms=args.objective_p99_ms, repeats=args.repeats,
                             data_dir=args.data_dir, descriptor_path=args.cluster,
                             run_id=args.run_id)
        result = find_max_rate(req, progress=err)
        results.append(result)
        if not args.json:
            say(format_max_rate(result))
            say("")
    if args.json:
        say_json(results[0] if len(results) == 1 else results)
    elif len(results) > 1:
        say(format_max_rate_matrix(results))
    return 0 if all(r.get("max_rate_msgs_per_s") is not None for r in results) else 4


__all__ = ["OPTION_OF_FIELD", "add_parser", "cmd_load", "cmd_maxrate", "load_cells", "load_plan",
           "load_request"]
