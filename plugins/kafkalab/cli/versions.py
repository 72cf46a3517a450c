"""``kafkalab versions run|verdict``: the broker-version matrix (:mod:`kafkalab.versions`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kafkalab.cli.options import (
    SubParsers,
    add_data_option,
    add_group,
    add_json_option,
    add_txn_options,
    as_options,
    csv_list,
    int_list,
    run_id_arg,
)
from kafkalab.cli.output import say, say_json

OPTION_OF_FIELD = {"versions": "--versions", "rounds": "--rounds", "rate_msgs_per_s": "--rate",
                   "duration_s": "--duration", "warmup_s": "--warmup", "consumers": "--consumers",
                   "partitions": "--partitions", "txn_msgs": "--txn-msgs",
                   "txn_abort_every": "--txn-abort-every", "base_port": "--base-port",
                   "control_port": "--control-port"}
"""The option that sets each field of the matrix or its cell (a refused value is named by it)."""

STARTUP_OPTIONS = {"trials": "--startup-trials", "protocols": "--startup-protocol",
                   "delays_ms": "--startup-delay-ms", "members": "--startup-members"}
MAX_RATE_OPTIONS = {"start_rate": "--max-rate-start",
                    "step_duration_s": "--max-rate-step-duration",
                    "objective_p99_ms": "--max-rate-objective-ms",
                    "repeats": "--max-rate-repeats", "max_steps": "--max-rate-steps"}
FAULT_OPTIONS = {"trials": "--fault-trials", "fault": "--fault", "profile": "--fault-profile",
                 "rate_msgs_per_s": "--fault-rate", "duration_s": "--fault-duration"}
"""The options of the matrix's parts (each part's fields named by its own options)."""


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``versions`` and its actions ``run`` and ``verdict``."""
    from kafkalab.versions.spec import DEFAULT_BASE_PORT, DEFAULT_CONTROL_PORT

    actions = add_group(
        sub, "versions", cmd_versions, "versions_command",
        help="does upgrading make us slower? one workload on several Kafka versions, judged",
        description="Run one load cell on every Kafka version given, alternating (A B, B A, "
        "...), each round on a fresh one-broker cluster of that version, one load run per "
        "version, and before it the first-message delay of new consumers (start-up cases, "
        "one start-up run per version), and after it, with --max-rate, the maximum "
        "sustainable rate, and with --fault-trials, broker-fault trials on a fresh 3-broker "
        "cluster of the version; then judge every version against the first: the change of the median over "
        "the rounds with its 95 %% bootstrap interval, and the drift rule's verdict. Kafka "
        "0.9.0.1 is the legacy point where the cell can run on it. See docs/versions.md.")
    pr = actions.add_parser(
        "run", help="measure the matrix, aggregate each version's run, print the verdict",
        description="Measure the cell on every version (rounds alternating, a fresh cluster "
        "each), aggregate each version's load run with Spark (validation, report) and print "
        "the verdict. Exit 1 when a version regressed.",
        epilog="examples:\n  kafkalab versions run --versions 4.1.2,4.4.0 --rounds 3 --rate 1000\n"
        "  kafkalab versions run --versions 4.4.0,4.1.2,0.9.0.1 --rounds 3 --rate 500 --consumers 3\n"
        "  kafkalab versions run --versions 4.1.2,4.4.0 --max-rate --fault-trials 2",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    pr.add_argument("--versions", type=csv_list, required=True,
                    help="Kafka versions, the baseline first (pinned 4.x releases, 0.9.0.1)")
    pr.add_argument("--rounds", type=int, default=3,
                    help="fresh-cluster rounds per version (default 3; the drift rule's "
                    "baseline needs 3)")
    pr.add_argument("--rate", type=float, default=500.0, help="target msg/s (default 500)")
    pr.add_argument("--consumers", type=int, default=1, help="consumers (default 1)")
    pr.add_argument("--duration", type=float, default=12.0,
                    help="seconds per cell, warm-up included (default 12)")
    pr.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds (default 2)")
    pr.add_argument("--acks", default=None, help="0, 1 or all (default: the profile's)")
    pr.add_argument("--payload", default="1kb", help="payload (default 1kb)")
    pr.add_argument("--profile", default="default", help="tuning profile (default default)")
    pr.add_argument("--client", choices=("confluent-kafka", "kafka-python"),
                    default="confluent-kafka", help="the producer's client")
    pr.add_argument("--partitions", type=int, default=1, help="partitions (default 1)")
    add_txn_options(pr, what="the cell (one size)")
    pr.add_argument("--startup-trials", type=int, default=1,
                    help="first-message trials of every start-up case each round, before the "
                    "cell, with the cell's client (default 1; 0: no first-message delay)")
    pr.add_argument("--startup-protocol", type=csv_list, default=["classic", "consumer"],
                    help="group.protocol of the subscribe cases (default classic,consumer; "
                    "consumer only where the broker and the client speak KIP-848)")
    pr.add_argument("--startup-delay-ms", type=int_list, default=[0],
                    help="the broker's group.initial.rebalance.delay.ms values (default 0; "
                    "Kafka 0.9 has no such setting)")
    pr.add_argument("--startup-members", type=int_list, default=[1],
                    help="members of one new group started at once (default 1)")
    pr.add_argument("--max-rate", action="store_true",
                    help="also search the maximum sustainable rate each round, after the cell "
                    "on its cluster (kafkalab maxrate's search and pass rule; minutes a round)")
    pr.add_argument("--max-rate-start", type=float, default=None,
                    help="the search's first rate (default --rate)")
    pr.add_argument("--max-rate-step-duration", type=float, default=6.0,
                    help="seconds per search step, warm-up included (default 6)")
    pr.add_argument("--max-rate-objective-ms", type=float, default=100.0,
                    help="a step passes only with e2e p99 under this (default 100)")
    pr.add_argument("--max-rate-repeats", type=int, default=1,
                    help="repeats of the found rate, each must pass (default 1)")
    pr.add_argument("--max-rate-steps", type=int, default=14,
                    help="at most this many steps of the bracketing search (default 14; the "
                    "repeats and the 1.1x check come on top)")
    pr.add_argument("--fault-trials", type=int, default=0,
                    help="broker-fault trials each round, last, on a fresh 3-broker cluster of "
                    "the version (default 0: none; kafkalab faults run's trials)")
    pr.add_argument("--fault", default="sigkill-leader",
                    help="the broker fault of those trials (default sigkill-leader)")
    pr.add_argument("--fault-profile", default="durability",
                    help="their tuning profile (default durability)")
    pr.add_argument("--fault-rate", type=float, default=500.0,
                    help="their producer's rate, msg/s (default 500)")
    pr.add_argument("--fault-duration", type=float, default=None,
                    help="their schedule, seconds (default 20, or longer when the fault and "
                    "its heal need it: 23 for partition-leader)")
    pr.add_argument("--base-port", type=int, default=DEFAULT_BASE_PORT,
                    help=f"the matrix clusters' broker port (default {DEFAULT_BASE_PORT})")
    pr.add_argument("--control-port", type=int, default=DEFAULT_CONTROL_PORT,
                    help="their controller / ZooKeeper port (default "
                    f"{DEFAULT_CONTROL_PORT})")
    pr.add_argument("--no-aggregate", action="store_true",
                    help="measure only (aggregate each run and judge later: `kafkalab versions "
                    "verdict ID`)")
    pr.add_argument("--matrix-id", type=run_id_arg, default=None,
                    help="the matrix id (default: time-based)")
    add_json_option(pr, "print {matrix, verdict} as one JSON document")
    add_data_option(pr)
    pv = actions.add_parser(
        "verdict", help="judge a measured matrix (its runs aggregated)",
        description="Every version of the matrix against its first: per series and metric the "
        "median over the rounds, the change with its 95 %% bootstrap interval and the drift "
        "rule's verdict. Exit 1 when a version regressed. See docs/versions.md.")
    pv.add_argument("matrix_id", type=run_id_arg, metavar="MATRIX_ID",
                    help="the matrix (`kafkalab versions run` prints its id; "
                    "lab-data/versions/<id>.json)")
    pv.add_argument("--config", type=Path, default=None,
                    help="drift rules YAML (default include/drift.yaml)")
    add_json_option(pv, "print the verdict as one JSON document")
    add_data_option(pv, reads=True)


def matrix_spec(args: argparse.Namespace) -> Any:
    """The :class:`~kafkalab.versions.spec.MatrixSpec` the options ask for.

    Raises:
        ConfigError: a value the spec or its cell refuses, named by its option.
    """
    from pydantic import ValidationError

    from kafkalab.errors import ConfigError
    from kafkalab.load.spec import LoadCellSpec
    from kafkalab.versions.spec import MatrixFaults, MatrixMaxRate, MatrixSpec, MatrixStartup

    def part(model: Any, options: dict[str, str], **fields: Any) -> Any:
        try:
            return model(**fields)
        except ValidationError as exc:
            raise ConfigError(as_options(exc, options)) from None

    txns = list(args.txn_msgs or [])
    if len(txns) > 1:
        raise ConfigError("--txn-msgs: a version matrix measures one cell: give one size")
    try:
        cell = LoadCellSpec(client=args.client, payload=args.payload, profile=args.profile,
                            acks=args.acks, consumers=args.consumers,
                            rate_msgs_per_s=args.rate, duration_s=args.duration,
                            warmup_s=args.warmup, partitions=args.partitions,
                            txn_msgs=(txns[0] or None) if txns else None,
                            txn_abort_every=args.txn_abort_every)
        startup = part(MatrixStartup, STARTUP_OPTIONS, trials=args.startup_trials,
                       protocols=args.startup_protocol, delays_ms=args.startup_delay_ms,
                       members=args.startup_members)
        max_rate = part(MatrixMaxRate, MAX_RATE_OPTIONS, enabled=args.max_rate,
                        start_rate=args.max_rate_start,
                        step_duration_s=args.max_rate_step_duration,
                        objective_p99_ms=args.max_rate_objective_ms,
                        repeats=args.max_rate_repeats, max_steps=args.max_rate_steps)
        faults = part(MatrixFaults, FAULT_OPTIONS, trials=args.fault_trials, fault=args.fault,
                      profile=args.fault_profile, rate_msgs_per_s=args.fault_rate,
                      duration_s=args.fault_duration)
        return MatrixSpec(versions=args.versions, rounds=args.rounds, cell=cell, startup=startup,
                          max_rate=max_rate, faults=faults, base_port=args.base_port,
                          control_port=args.control_port)
    except ValidationError as exc:
        raise ConfigError(as_options(exc, OPTION_OF_FIELD)) from None


def cmd_versions(args: argparse.Namespace) -> int:
    """``kafkalab versions run|verdict``: exit 1 when a version regressed."""
    from kafkalab.store import LabData
    from kafkalab.versions.verdict import format_verdict, matrix_verdict, write_verdict

    if args.versions_command == "run":
        from kafkalab.cli.output import err
        from kafkalab.versions.matrix import MatrixRequest, run_matrix

        spec = matrix_spec(args)
        progress = (lambda _m: None) if args.json else err
        doc = run_matrix(MatrixRequest(spec=spec, data_dir=args.data_dir,
                                       matrix_id=args.matrix_id), progress)
        if args.no_aggregate:
            if args.json:
                say_json({"matrix": doc, "verdict": None})
            else:
                say(f"matrix {doc['matrix_id']}: {doc['status']}; judge it with `kafkalab "
                    f"versions verdict {doc['matrix_id']}` once its runs are aggregated")
            return 0
        _aggregate(args.data_dir, doc, progress)
        matrix_id = str(doc["matrix_id"])
    else:
        doc, matrix_id = None, args.matrix_id
    v = matrix_verdict(LabData(args.data_dir).root, matrix_id,
                       getattr(args, "config", None))
    write_verdict(args.data_dir, v)
    _publish_report(args.data_dir, v.runs[v.baseline])
    if args.json:
        say_json({"matrix": doc, "verdict": v.to_dict()} if doc is not None else v.to_dict())
    else:
        say(format_verdict(v))
    return 1 if v.regressed else 0


def _publish_report(data_dir: Path | None, run_id: str) -> None:
    """Rebuild the report's overview (its version matrices) and the baseline run's page."""
    from kafkalab.report.build import build_report
    from kafkalab.store import LabData

    build_report(LabData(data_dir).root, run_id=run_id)


def _aggregate(data_dir: Path | None, doc: dict[str, Any], progress: Any) -> None:
    """Aggregate, validate and report each version's runs (Spark, as ``kafkalab aggregate``):
    its load run and its start-up run, each where a round was measured."""
    from kafkalab.aggregate import aggregate_run
    from kafkalab.versions.matrix import measured_runs

    todo = measured_runs(doc)
    for version in doc["runs"]:
        if not any(doc["runs"][version] == r for r, _ in todo):
            progress(f"Kafka {version}: no complete round of the load cell")
    for run_id, kind in todo:
        progress(f"aggregating {kind.label} run {run_id}")
        aggregate_run(data_dir, run_id, progress=progress, one_session=True)


__all__ = ["add_parser", "cmd_versions", "matrix_spec"]
