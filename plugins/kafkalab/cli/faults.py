"""``kafkalab faults run|down``: broker and consumer faults on the lab's own 3-broker fault
cluster (:mod:`kafkalab.faults`)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from kafkalab.cli.options import (
    SubParsers,
    add_data_option,
    add_json_option,
    add_txn_options,
    as_options,
    csv_list,
    run_id_arg,
)
from kafkalab.cli.output import err, say, say_json, say_stopped

if TYPE_CHECKING:
    from kafkalab.faults.engine import FaultRequest
    from kafkalab.faults.spec import FaultPlan

OPTION_OF_FIELD = {"rate_msgs_per_s": "--rate", "duration_s": "--duration",
                   "warmup_s": "--warmup", "fault_at_s": "--fault-at", "down_s": "--down",
                   "fault": "--fault", "acks": "--acks", "trial": "--trials",
                   "partitions": "--partitions", "payload": "--payload",
                   "commit": "--commit", "consumers": "--consumers",
                   "session_timeout_ms": "--session-timeout-ms",
                   "heartbeat_interval_ms": "--heartbeat-ms",
                   "auto_commit_interval_ms": "--auto-commit-interval-ms",
                   "batch_msgs": "--batch-msgs", "rejoin_after_s": "--rejoin-after",
                   "max_in_flight": "--max-in-flight", "client": "--client",
                   "txn_msgs": "--txn-msgs", "txn_abort_every": "--txn-abort-every",
                   "idempotence": "--idempotence", "static_membership": "--static-membership",
                   "rebalance": "--rebalance"}
"""The option that sets each field of a fault trial (a refused value is named by it)."""


def _fault_help() -> dict[str, str]:
    from kafkalab.faults.spec import FAULT_HELP

    return FAULT_HELP


def _fault_flavor_name() -> str:
    from kafkalab.cluster.flavors import FAULT_CLUSTER

    return FAULT_CLUSTER.name


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``faults`` and its actions ``run`` and ``down``."""
    pf = sub.add_parser("faults", help="broker and consumer faults: durability, availability, "
                        "delivery semantics",
                        description="Break a broker of the 3-broker fault cluster during a "
                        "fixed-rate run and count every acked message that was lost; or kill a "
                        "member of a consumer group and count every record processed twice or "
                        "never. See docs/faults.md and docs/consumer-faults.md.")
    pf.set_defaults(handler=cmd_faults)
    fsub = pf.add_subparsers(dest="faults_command", required=True)
    pfr = fsub.add_parser(
        "run", help="run fault trials (profiles × faults × trials) and print a table",
        description="Each trial: a fresh topic on the lab's own 3-broker "
        f"{_fault_flavor_name()} cluster "
        "(<lab>/faults, started or reused; ports $KAFKALAB_FAULTS_CONTROL_PORT / "
        "$KAFKALAB_FAULTS_BASE_PORT, default 12381 / 19392-19394), one producer at --rate and "
        "one live consumer; the fault at --fault-at, healed --down seconds later; then a fresh "
        "consumer re-reads the topic from offset 0 and every message is judged (acked-but-lost "
        "ones are looked up in the brokers' logs with DumpLogSegments). Faults: "
        + "; ".join(f"{k}: {v}" for k, v in _fault_help().items()),
        epilog="examples:\n  kafkalab faults run --profile durability --fault sigkill-leader --trials 5\n"
        "  kafkalab faults run --fault kill-consumer,leave-consumer --commit auto,after,before "
        "--session-timeout-ms 6000 --trials 1\n"
        "  kafkalab faults run --profile durability --fault sigkill-leader --client kafka-python "
        "--max-in-flight 1,5 --trials 2\n"
        "  kafkalab faults run --profile durability,availability,default --fault none,sigkill-leader,"
        "sigterm-leader --trials 5\n  kafkalab faults run --profile availability --acks 1 "
        "--fault lossy-leader-crash --trials 1 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    pfd = fsub.add_parser("down", help="stop the fault cluster (the lab's own 3 brokers)",
                          description="Stop exactly the processes of the fault cluster "
                          "(<lab>/faults, or --cluster-lab) that `faults run` started.")
    pfd.add_argument("--cluster-lab", default=None, help="lab dir of the fault cluster (default <lab>/faults)")
    pfd.add_argument("--wipe", action="store_true", help="also delete its data")
    add_json_option(pfd, "print the stopped processes as one JSON document")
    _add_run_options(pfr)


def _add_run_options(pfr: argparse.ArgumentParser) -> None:
    """The options of ``faults run``: the trials, then the consumer faults' group."""
    pfr.add_argument("--profile", type=csv_list, default=["durability"], help="profile(s), comma-separated (default durability)")
    pfr.add_argument("--fault", type=csv_list, default=["sigkill-leader"], help="fault(s), comma-separated (default sigkill-leader)")
    pfr.add_argument("--acks", type=csv_list, default=None, help="0, 1 and/or all (default: the profile's)")
    pfr.add_argument("--trials", type=int, default=5, help="trials per profile × fault × acks (default 5)")
    pfr.add_argument("--rate", type=float, default=500.0, help="target msg/s (default 500)")
    pfr.add_argument("--duration", type=float, default=None,
                     help="seconds per trial, warm-up included (default 20; a consumer fault: at "
                     "least 6 s past the session timeout and the rejoin)")
    pfr.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds (default 2)")
    pfr.add_argument("--fault-at", type=float, default=6.0, help="second of the schedule the fault starts (default 6)")
    pfr.add_argument("--down", type=float, default=None, help="seconds the fault lasts (default: the fault's own)")
    pfr.add_argument("--payload", default="1kb", help="payload (default 1kb)")
    pfr.add_argument("--partitions", type=int, default=None,
                     help="partitions of each trial's topic (default 1; consumer faults: 2 per consumer)")
    pfr.add_argument("--client", type=csv_list, default=None,
                     help="the producer's and the group members' client: confluent-kafka, "
                     "kafka-python, comma-separated for one trial set each (default "
                     "confluent-kafka)")
    pfr.add_argument("--idempotence", type=csv_list, default=None,
                     help="the producer's enable.idempotence: on, off, comma-separated for one "
                     "trial set each (default: the profile's; on needs acks=all and Kafka 0.11+)")
    pfr.add_argument("--max-in-flight", type=csv_list, default=None,
                     help="producer max.in.flight.requests.per.connection, 1-5, comma-separated for "
                     "one trial set each (default: the profile's); 1 keeps order through retries")
    pg = pfr.add_argument_group(
        "consumer faults (kill-consumer, leave-consumer, cut-consumer)",
        "A group of --consumers members (one process each) processes the stream; member 0 is "
        "SIGKILLed, leaves cleanly or is cut from the cluster (every link of its own, for --down "
        "seconds, default the session timeout + 4 s; a cluster with degradable links) at "
        "--fault-at. Kafka 0.9: eager rebalancing, no static membership, no cooperative "
        "rebalancing; KIP-848's protocol needs Kafka 4.0.")
    pg.add_argument("--commit", type=csv_list, default=None,
                    help="commit strategy/ies, comma-separated: auto (the client's auto commit), after "
                    "(commit after processing: at-least-once), before (commit before processing: "
                    "at-most-once) (default after)")
    pg.add_argument("--consumers", type=int, default=3, help="members of the group (default 3)")
    pg.add_argument("--session-timeout-ms", type=int, default=None,
                    help="members' session.timeout.ms (default: the profile's; 1000-30000)")
    pg.add_argument("--heartbeat-ms", type=int, default=None,
                    help="members' heartbeat.interval.ms (default: a third of the session timeout)")
    pg.add_argument("--auto-commit-interval-ms", type=int, default=5000,
                    help="auto.commit.interval.ms of --commit auto (default 5000)")
    pg.add_argument("--batch-msgs", type=int, default=100,
                    help="records a member processes (and commits) per batch (default 100)")
    pg.add_argument("--static-membership", type=csv_list, default=None,
                    help="the members' group membership: on (static: a group.instance.id each, "
                    "KIP-345), off (dynamic), comma-separated for one trial set each (default "
                    "off)")
    pg.add_argument("--rebalance", type=csv_list, default=None,
                    help="how the group rebalances, comma-separated for one trial set each: eager "
                    "(classic protocol, range assignor), cooperative (classic, cooperative-sticky: "
                    "only moved partitions stop), consumer (KIP-848's protocol, confluent-kafka "
                    "only; the session and heartbeat are set on the group) (default: the clients' "
                    "own, eager)")
    pg.add_argument("--rejoin-after", type=float, default=None,
                    help="the failed member comes back this many seconds after the fault (default: never)")
    add_txn_options(pfr, what="broker faults (the checker re-reads committed and uncommitted)")
    pfr.add_argument("--cluster-lab", default=None, help="lab dir of the embedded cluster to break (default <lab>/faults)")
    pfr.add_argument("--keep-topics", action="store_true", help="keep each trial's topic (default: deleted after the check)")
    pfr.add_argument("--run-id", type=run_id_arg, default=None, help="run id (default: time-based)")
    pfr.add_argument("--json", action="store_true",
                     help="print {run_id, status, manifest, trials: [one object per trial]} as one JSON document")
    add_data_option(pfr)


def fault_plan(args: argparse.Namespace) -> FaultPlan:
    """The trials ``faults run`` asks for (:class:`kafkalab.faults.spec.FaultPlan`), after the
    checks of its own options.

    Raises:
        ConfigError: ``--trials`` below 1, ``--commit``, ``--static-membership`` or
            ``--rebalance`` without a consumer fault, a
            ``--max-in-flight`` that is not whole numbers, an unknown ``--client`` or
            ``--idempotence`` value.
    """
    from kafkalab.errors import ConfigError
    from kafkalab.faults.spec import CONSUMER_FAULTS, FaultPlan

    if args.trials < 1:
        raise ConfigError(f"--trials must be at least 1, got {args.trials}")
    for option, given in (("--commit", args.commit), ("--static-membership", args.static_membership),
                          ("--rebalance", args.rebalance)):
        if given and not any(f in CONSUMER_FAULTS for f in args.fault):
            raise ConfigError(f"{option} applies to the consumer faults "
                              f"({', '.join(CONSUMER_FAULTS)}); --fault is {','.join(args.fault)}")
    try:
        in_flight = [int(x) for x in args.max_in_flight or []]
    except ValueError:
        raise ConfigError(f"--max-in-flight must be whole numbers, got {','.join(args.max_in_flight)}") from None
    txns = list(args.txn_msgs or [])
    if (txns or args.txn_abort_every is not None) and all(f in CONSUMER_FAULTS for f in args.fault):
        raise ConfigError(f"--txn-msgs applies to the broker faults; --fault is {','.join(args.fault)}")
    clients = list(args.client or [])
    unknown = [c for c in clients if c not in ("confluent-kafka", "kafka-python")]
    if unknown:
        raise ConfigError(f"--client: unknown client {unknown[0]!r} (known: confluent-kafka, "
                          "kafka-python)")
    switch = {"on": True, "off": False}
    for option, values in (("--idempotence", args.idempotence),
                           ("--static-membership", args.static_membership)):
        bad = [v for v in values or [] if v not in switch]
        if bad:
            raise ConfigError(f"{option}: {bad[0]!r} is not on or off")
    return FaultPlan(profiles=args.profile, faults=args.fault, acks=args.acks or [],
                     max_in_flight=in_flight,
                     idempotence=[switch[v] for v in args.idempotence or []],
                     static_membership=[switch[v] for v in args.static_membership or []],
                     rebalance=list(args.rebalance or []),
                     txn_msgs=txns, txn_abort_every=args.txn_abort_every,
                     clients=clients, commits=args.commit or [], trials=args.trials,
                     rate_msgs_per_s=args.rate, duration_s=args.duration, warmup_s=args.warmup,
                     fault_at_s=args.fault_at, down_s=args.down, payload=args.payload,
                     partitions=args.partitions, consumers=args.consumers,
                     session_timeout_ms=args.session_timeout_ms,
                     heartbeat_interval_ms=args.heartbeat_ms,
                     auto_commit_interval_ms=args.auto_commit_interval_ms,
                     batch_msgs=args.batch_msgs, rejoin_after_s=args.rejoin_after)


def fault_request(args: argparse.Namespace) -> FaultRequest:
    """The trials ``faults run`` asks for, planned by :func:`kafkalab.faults.spec.plan_trials`
    (as the DAGs plan theirs), as the engine's request.

    Raises:
        ConfigError: one line naming the option.
    """
    from pydantic import ValidationError

    from kafkalab.errors import ConfigError
    from kafkalab.faults.engine import FaultRequest
    from kafkalab.faults.spec import plan_trials
    from kafkalab.load.spec import PlanRefused

    try:
        trials = plan_trials(fault_plan(args))
    except PlanRefused as exc:
        raise ConfigError(as_options(exc.error, OPTION_OF_FIELD)) from None
    except ValidationError as exc:  # the grid's own bounds (FaultPlan)
        raise ConfigError(as_options(exc, {**OPTION_OF_FIELD, "trials": "--trials"})) from None
    return FaultRequest(trials=trials, data_dir=args.data_dir, run_id=args.run_id,
                        cluster_lab=args.cluster_lab, keep_topics=args.keep_topics,
                        command="kafkalab faults " + " ".join(sys.argv[2:]))


def cmd_faults(args: argparse.Namespace) -> int:
    """``faults down``, or ``faults run``: the trials, the tables (or ``--json``); exit 4 when
    a trial failed."""
    if args.faults_command == "down":
        from kafkalab.cluster import cluster_down
        from kafkalab.faults.inject import fault_cluster_lab

        stopped = cluster_down(fault_cluster_lab(args.cluster_lab), wipe_data=args.wipe, progress=err)
        say_stopped(stopped, "faults down", args.json)
        return 0
    from kafkalab.faults.engine import execute_faults

    result = execute_faults(fault_request(args), progress=err)
    if args.json:
        say_json({"run_id": result.run_id, "status": result.status,
                  "manifest": str(result.manifest_path), "trials": result.trials})
    else:
        _say_tables(result.trials)
        say(f"run {result.run_id}: {result.status}; manifest {result.manifest_path}")
    if result.status != "complete":
        err(f"kafkalab: error: run {result.run_id} is {result.status}: some trials failed (see above)")
        return 4
    return 0


def _say_tables(trials: list[dict[str, Any]]) -> None:
    """The broker faults' table and the consumer faults' table, each with its legend."""
    from kafkalab.faults.summary import format_consumer_table, format_fault_table

    broker = [t for t in trials if not t.get("commit")]
    consumer_trials = [t for t in trials if t.get("commit")]
    if broker:
        say("")
        say(format_fault_table(broker))
        say("")
        say("lost = acked by the cluster, absent from the re-read from offset 0 (in logs: a "
            "broker's log segments still hold it); dup = extra copies; unavail = longest gap "
            "between acks after the fault; leader / isr = fault → new leader / full ISR "
            "(where the cluster's flavor reads them: the Admin API, or ZooKeeper on Kafka 0.9); "
            "ctrl = fault → a new controller-quorum leader (KRaft controller faults); ms.")
    if consumer_trials:
        say("")
        say(format_consumer_table(consumer_trials))
        say("")
        say("redeliv = records the group processed again; lost = records the topic holds "
            "that no member processed; exp = the same from the offsets at the death "
            "(processed past the commit / committed past the processed); pause = death → "
            "the successor's first record on the moved partitions; assigned = death → their "
            "new assignment; others = longest gap on the partitions that stayed (0.9 "
            "rebalances eagerly); session / hb = the members' session timeout and heartbeat; ms.")


__all__ = ["OPTION_OF_FIELD", "add_parser", "cmd_faults", "fault_plan", "fault_request"]
