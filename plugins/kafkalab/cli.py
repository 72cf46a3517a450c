"""``kafkalab``: the lab's command line.

Every user error (bad option, bad YAML, cluster down, port taken, unreachable broker) is a
:class:`~kafkalab.errors.LabError`: printed as one ``kafkalab: error: …`` line, exit code 2-4,
no traceback. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafkalab.config.loader import DEFAULT_WORKLOAD
from kafkalab.errors import ConfigError, LabError

EPILOG = """\
examples:
  kafkalab cluster up                       # real Apache Kafka 0.9.0.1 + ZooKeeper on 127.0.0.1
  kafkalab topics provision --workload images-http-vs-kafka --profile latency
  kafkalab run --scenario rest,kafka-python,confluent-kafka,jvm-e2e \\
               --payload 1mb,10mb --profile latency --messages 20
  kafkalab cluster down

  kafkalab aggregate                        # Spark, validation, drift, report of the newest run
  kafkalab compare RUN_A RUN_B              # side by side; exit 1 when RUN_B regressed

Data goes to lab-data/ in the project (or --data-dir / KAFKALAB_DATA_DIR), wherever the command
is run from; cluster state to .lab/ (KAFKALAB_HOME). The schema of every file is in
docs/metrics-schema.md. --json on any command that prints results gives one JSON document
(docs/cli.md).
"""


def _int_list(value: str) -> list[int]:
    try:
        return [int(v) for v in _csv(value)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {value!r}") from None


def _float_list(value: str) -> list[float]:
    try:
        return [float(v) for v in _csv(value)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {value!r}") from None


def _csv(value: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors in the lab's one-line format."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The full command tree (also used to check that every --help is complete)."""
    p = _Parser(prog="kafkalab", description="Kafka Latency Lab: measure how fast and how "
                "safely Kafka moves data.", epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    from kafkalab import __version__

    p.add_argument("--version", action="version", version=f"kafkalab {__version__}")
    sub = _subcommands(p, "command", "COMMAND")

    # cluster ---------------------------------------------------------------------------
    pc = sub.add_parser("cluster", help="start, inspect or stop the embedded cluster",
                        description="The embedded cluster, of one of the flavors the lab starts: "
                        + _flavor_help() + ". Everything binds 127.0.0.1; state, data and logs "
                        "live under .lab/cluster/.")
    csub = _subcommands(pc, "cluster_command")
    up = csub.add_parser("up", help="start the cluster (no-op when the same one is up)",
                         description="Start the flavor's processes (its coordination service, then the "
                         "brokers), wait until every broker "
                         "answers metadata, and write the cluster descriptor .lab/cluster.yaml "
                         "that every other command uses.")
    up.add_argument("--brokers", type=int, choices=(1, 3), default=1, help="number of brokers (default 1)")
    up.add_argument("--flavor", choices=_flavor_names(), default=_flavor_names()[0],
                    help=_flavor_help())
    up.add_argument("--base-port", type=int, default=None,
                    help="first broker port (default " + _port_defaults("default_base_port") + ")")
    up.add_argument("--control-port", "--zk-port", dest="control_port", type=int, default=None,
                    help="port of its coordination service (default "
                    + _port_defaults("default_control_port") + ")")
    _json_arg(up, "print the cluster's public descriptor as one JSON document")
    cst = csub.add_parser("status", help="show processes, ports, log files",
                          description="Show whether the embedded cluster is up, its processes "
                          "and where its logs are: a table, or --json. Exit 0 only when up.")
    _json_arg(cst, "print the status as one JSON document")
    down = csub.add_parser("down", help="stop exactly the processes `up` started",
                           description="Stop the brokers (controlled shutdown), then its coordination "
                           "service (ZooKeeper), by PID.")
    down.add_argument("--wipe", action="store_true", help="also delete the cluster's data")
    _json_arg(down, "print the stopped processes as one JSON document")

    # topics ----------------------------------------------------------------------------
    pt = sub.add_parser("topics", help="provision topics for a workload and profiles",
                        description="Topic administration.")
    tsub = _subcommands(pt, "topics_command")
    prov = tsub.add_parser("provision", help="create or align topics (idempotent)",
                           description="Create the topic of each (workload, profile) pair with the "
                           "profile's partitions, replication factor and topic configs; existing "
                           "topics are altered where Kafka allows it. Kafka 0.9 goes through "
                           "ZooKeeper with Kafka's own TopicCommand.")
    prov.add_argument("--workload", default=DEFAULT_WORKLOAD, help=f"workload name or YAML path (default {DEFAULT_WORKLOAD})")
    prov.add_argument("--profile", type=_csv, default=None, help="profile name(s), comma-separated (default: the workload's)")
    _json_arg(prov, "print each topic's outcome in one JSON document")
    _cluster_arg(prov)

    # run -------------------------------------------------------------------------------
    pr = sub.add_parser("run", help="measure scenarios × payloads × profiles",
                        description="Run a workload: every scenario × payload × profile cell, "
                        "closed loop (one message in flight), warm-up recorded and excluded, lost / "
                        "duplicate / late messages counted, first-message delay measured in "
                        "subscribe and assign mode. Prints a comparison table; writes samples "
                        "(Parquet) and a run manifest under the data directory. Exits non-zero "
                        "if any cell failed.",
                        epilog=_run_epilog(),
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    pr.add_argument("--workload", default=DEFAULT_WORKLOAD, help=f"workload name or YAML path (default {DEFAULT_WORKLOAD})")
    pr.add_argument("--scenario", type=_csv, default=None, help="comma-separated scenarios (default: the workload's)")
    pr.add_argument("--payload", type=_csv, default=None, help="comma-separated payloads (default: the workload's)")
    pr.add_argument("--profile", type=_csv, default=None, help="comma-separated profiles (default: the workload's)")
    pr.add_argument("--messages", type=int, default=None, help="measured messages per cell (after warm-up)")
    pr.add_argument("--warmup", type=int, default=None, help="warm-up messages per cell (recorded, excluded)")
    pr.add_argument("--encoding", choices=("raw", "base64"), default=None, help="payload encoding (default: the workload's)")
    pr.add_argument("--consumer-mode", choices=("subscribe", "assign"), default=None,
                    help="how the measuring consumer gets its partitions")
    pr.add_argument("--run-id", default=None, help="run id (default: time-based); re-running one replaces its rows")
    pr.add_argument("--http-port", type=int, default=0, help="port of the rest scenario's server (default: any free)")
    pr.add_argument("--no-provision", action="store_true", help="do not create/alter topics first")
    pr.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    _cluster_arg(pr)
    _data_arg(pr)
    # load / maxrate ------------------------------------------------------------------
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
                        "  kafkalab load --consumers 3 --rate 300 --duration 20 --pause-at 5 --pause-for 3",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    pl.add_argument("--workload", default=None, help="a load workload (include/workloads/, kind: load) instead of the options below")
    pl.add_argument("--consumers", type=_int_list, default=[1], help="consumers per cell, comma-separated (default 1)")
    pl.add_argument("--rate", type=_float_list, default=[100.0], help="target msg/s, comma-separated (default 100)")
    pl.add_argument("--duration", type=float, default=10.0, help="seconds per cell, warm-up included (default 10)")
    pl.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds, excluded from the figures (default 2)")
    pl.add_argument("--acks", type=_csv, default=None, help="0, 1 and/or all, comma-separated (default: the profile's)")
    pl.add_argument("--payload", type=_csv, default=["1kb"], help="payload(s) (default 1kb)")
    pl.add_argument("--encoding", choices=("raw", "base64"), default="raw", help="payload encoding (default raw)")
    pl.add_argument("--profile", default="default", help="tuning profile (default default)")
    pl.add_argument("--client", choices=("confluent-kafka", "kafka-python"), default="confluent-kafka",
                    help="the producer's client (consumers are confluent-kafka)")
    pl.add_argument("--partitions", type=int, default=1, help="partitions of the load topic (default 1)")
    pl.add_argument("--consumer-mode", choices=("assign", "group"), default="assign",
                    help="assign: no group (default); group: one consumer group per consumer")
    pl.add_argument("--consumers-per-process", type=int, default=10, help="consumers per consumer process (default 10)")
    pl.add_argument("--drain", type=float, default=5.0, help="seconds consumers may catch up after the producer stops (default 5)")
    pl.add_argument("--pause-at", type=float, default=None, help="consumers pause at this second …")
    pl.add_argument("--pause-for", type=float, default=None, help="… for this many seconds (lag grows, then drains)")
    pl.add_argument("--run-id", default=None, help="run id (default: time-based); re-running one replaces the cells it measures")
    pl.add_argument("--json", action="store_true",
                    help="print {run_id, status, cells: [one object per cell]} as one JSON document")
    _cluster_arg(pl)
    _data_arg(pl)
    pm = sub.add_parser("maxrate", help="find the maximum sustainable rate",
                        description="Step search for the highest rate at which the achieved rate "
                        "is ≥ 98 % of the target, lag does not grow, nothing fails, the publish "
                        "delay p99 stays under its bound and e2e p99 under the objective. Reports "
                        "msg/s and MB/s, the knee where latency climbs, what ran out (client or "
                        "broker CPU), three repeats at the found rate and a check at 1.1×. Lists "
                        "search every payload × acks × partitions × profile and end with one "
                        "line per combination.")
    pm.add_argument("--payload", type=_csv, default=["1kb"], help="payload(s), comma-separated (default 1kb)")
    pm.add_argument("--encoding", choices=("raw", "base64"), default="raw", help="payload encoding (default raw)")
    pm.add_argument("--acks", type=_csv, default=None, help="0, 1 and/or all, comma-separated (default: the profile's)")
    pm.add_argument("--profile", type=_csv, default=["default"],
                    help="tuning profile(s) (default default; the replication factor is the profile's)")
    pm.add_argument("--partitions", type=_int_list, default=[1], help="partitions, comma-separated (default 1)")
    pm.add_argument("--consumers", type=int, default=1, help="consumers (default 1)")
    pm.add_argument("--start-rate", type=float, default=1000.0, help="first step's msg/s (default 1000)")
    pm.add_argument("--step-duration", type=float, default=6.0, help="seconds per step, warm-up included (default 6)")
    pm.add_argument("--objective-p99-ms", type=float, default=100.0, help="e2e p99 objective in ms (default 100)")
    pm.add_argument("--repeats", type=int, default=3, help="repeats at the found rate (default 3)")
    pm.add_argument("--run-id", default=None, help="run id (default: time-based)")
    pm.add_argument("--json", action="store_true", help="print the result as JSON")
    _cluster_arg(pm)
    _data_arg(pm)
    # faults ---------------------------------------------------------------------------
    pf = sub.add_parser("faults", help="broker and consumer faults: durability, availability, "
                        "delivery semantics",
                        description="Break a broker of the 3-broker fault cluster during a "
                        "fixed-rate run and count every acked message that was lost; or kill a "
                        "member of a consumer group and count every record processed twice or "
                        "never. See docs/faults.md and docs/consumer-faults.md.")
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
    _json_arg(pfd, "print the stopped processes as one JSON document")
    pfr.add_argument("--profile", type=_csv, default=["durability"], help="profile(s), comma-separated (default durability)")
    pfr.add_argument("--fault", type=_csv, default=["sigkill-leader"], help="fault(s), comma-separated (default sigkill-leader)")
    pfr.add_argument("--acks", type=_csv, default=None, help="0, 1 and/or all (default: the profile's)")
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
    pfr.add_argument("--client", choices=["confluent-kafka", "kafka-python"], default="confluent-kafka",
                     help="the producer's and the group members' client (default confluent-kafka)")
    pfr.add_argument("--max-in-flight", type=_csv, default=None,
                     help="producer max.in.flight.requests.per.connection, 1-5, comma-separated for "
                     "one trial set each (default: the profile's); 1 keeps order through retries")
    pg = pfr.add_argument_group(
        "consumer faults (kill-consumer, leave-consumer)",
        "A group of --consumers members (one process each) processes the stream; member 0 is "
        "SIGKILLed or leaves cleanly at --fault-at. Kafka 0.9: eager rebalancing, no static "
        "membership, no cooperative rebalancing.")
    pg.add_argument("--commit", type=_csv, default=None,
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
    pg.add_argument("--rejoin-after", type=float, default=None,
                    help="the failed member comes back this many seconds after the fault (default: never)")
    pfr.add_argument("--cluster-lab", default=None, help="lab dir of the embedded cluster to break (default <lab>/faults)")
    pfr.add_argument("--keep-topics", action="store_true", help="keep each trial's topic (default: deleted after the check)")
    pfr.add_argument("--run-id", default=None, help="run id (default: time-based)")
    pfr.add_argument("--json", action="store_true",
                     help="print {run_id, status, manifest, trials: [one object per trial]} as one JSON document")
    _data_arg(pfr)
    # spark ----------------------------------------------------------------------------
    psk = sub.add_parser("spark", help="start, inspect or stop a local Spark standalone cluster",
                         description="A real Spark standalone cluster on this machine: one "
                         "master and workers from the installed PySpark's spark-class, bound "
                         "to 127.0.0.1; state, logs and work dirs under .lab/spark/ "
                         "(KAFKALAB_HOME). Send the lab's Spark jobs to it with the line `up` "
                         "prints: export KAFKALAB_SPARK_MASTER=spark://127.0.0.1:7077. See "
                         "docs/spark.md.")
    sksub = _subcommands(psk, "spark_command")
    skup = sksub.add_parser("up", help="start master and workers (no-op when the same cluster is up)",
                            description="Start the master, then the workers, and wait until "
                            "the master lists every worker ALIVE. Prints `# ...` lines and the "
                            "export line on stdout, so `eval \"$(kafkalab spark up)\"` sets it. "
                            "Ports: master --port, its web UI --webui-port; worker i uses "
                            "--port + i and --webui-port + i.")
    skup.add_argument("--port", type=int, default=7077, help="master RPC port (default 7077; workers 7078, 7079, ...)")
    skup.add_argument("--webui-port", type=int, default=8180,
                      help="master web UI port (default 8180; workers' UIs 8181, 8182, ...)")
    skup.add_argument("--workers", type=int, default=2, help="number of workers (default 2)")
    skup.add_argument("--worker-cores", type=int, default=1, help="cores per worker (default 1)")
    skup.add_argument("--worker-memory", default="1g", help="memory per worker, e.g. 1g or 1536m (default 1g)")
    skup.add_argument("--timeout", type=float, default=120.0,
                      help="seconds to wait for every worker to register (default 120)")
    _json_arg(skup, "print the cluster's status as one JSON document (instead of the export line)")
    skst = sksub.add_parser("status", help="show master, workers, pids, cores, memory",
                            description="Whether the cluster is up (every daemon running and "
                            "every worker registered ALIVE), degraded or down; exit 0 only when up.")
    skst.add_argument("--json", action="store_true", help="print the status as JSON")
    skdn = sksub.add_parser("down", help="stop exactly the processes `up` started",
                            description="Stop the workers (with their executors) then the "
                            "master, by PID, and forget them.")
    skdn.add_argument("--wipe", action="store_true", help="also delete the workers' work dirs (executor logs)")
    _json_arg(skdn, "print the stopped processes as one JSON document")
    pdemo = sub.add_parser(
        "demo", help="the quickstart: seed 000's table, then the nightly DAG over 4 dates",
        description="Start the embedded cluster, run seed 000's comparison and print its "
        "table, then run the nightly DAG (airflow dags test) once per date with one line per "
        "date; Airflow's logs go to a file under .lab/logs/. What `make demo` runs.")
    pdemo.add_argument("--dates", type=_csv, default=None,
                       help="logical dates of the nightly runs (default "
                       "2026-11-18,2026-11-19,2026-11-20,2026-11-21)")
    pdemo.add_argument("--nightly-conf", default=None, metavar="JSON",
                       help="DAG run conf laid over the demo's small nightly matrix")
    pdemo.add_argument("--workload", default=None, help="seed 000's workload (default images-quick)")
    pdemo.add_argument("--no-seed000", action="store_true", help="skip seed 000's comparison")
    pdemo.add_argument("--no-seed000-aggregate", action="store_true",
                       help="measure seed 000 but skip its Spark aggregation (kafkalab aggregate): "
                       "its report page then shows no aggregates")
    pdemo.add_argument("--no-nightly", action="store_true", help="skip the nightly DAG runs")
    pdemo.add_argument("--log", type=Path, default=None,
                       help="log file (default .lab/logs/demo-<time>.log)")
    _cluster_arg(pdemo)
    _data_arg(pdemo)

    pruns = sub.add_parser("runs", help="list the runs in the data directory and their state",
                           description="One line per run: id, state (complete, incomplete, "
                           "failed, running, or stale: running with no live owner), cells, "
                           "command, and its outputs that are stale after a cell was re-measured.")
    _json_arg(pruns, "print the runs as one JSON document")
    _data_arg(pruns)
    # compare / aggregate / export ---------------------------------------------------
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
        "  kafkalab compare RUN_A RUN_B --json | jq '.shared[].metrics[] | select(.verdict == \"regressed\")'",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    pcmp.add_argument("run_a", metavar="RUN_A", help="the reference run (its id, as `kafkalab runs` lists it)")
    pcmp.add_argument("run_b", metavar="RUN_B", help="the run judged against RUN_A")
    pcmp.add_argument("--config", type=Path, default=None, help="drift rules YAML (default include/drift.yaml, else the built-in rules; a file given must exist and parse)")
    _json_arg(pcmp, "print the comparison as one JSON document")
    _data_arg(pcmp)
    pagg = sub.add_parser(
        "aggregate", help="run the Spark aggregation, validation, drift and report of a run",
        description="What the DAGs run after a measurement, for a run made on the command "
        "line: the Spark aggregation and the Great Expectations validation through "
        "spark-submit (the DAGs' own jobs, arguments and settings; master "
        "$KAFKALAB_SPARK_MASTER, default local[*]), then the drift check and the report. "
        "Latency runs: aggregate_metrics, validate_metrics, drift, report; load runs: "
        "aggregate_load, validate_load, drift, report; fault runs: aggregate_faults, "
        "validate_faults, report. A failed validation is shown and drift and the report still "
        "run, as in the DAG. A run still being measured is refused (aggregate it once it has "
        "ended). Exit 0 when validated, 1 when the validation failed, 2 on bad input (no "
        "such run, a run still running, no samples), 4 when a Spark job failed. Job logs: "
        ".lab/logs/aggregate-<run>-<job>.log. See docs/cli.md.",
        epilog="examples:\n  kafkalab run --scenario confluent-kafka --payload 1kb --messages 200\n"
        "  kafkalab aggregate                 # the newest run\n"
        "  kafkalab aggregate --run-id 20261122T010203Z-1a2b3c\n"
        "  KAFKALAB_SPARK_MASTER=spark://127.0.0.1:7077 kafkalab aggregate",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    pagg.add_argument("--run-id", default=None, help="the run (default: the newest, by start time)")
    _json_arg(pagg, "print the outcome (jobs, validation, drift, report) as one JSON document")
    _data_arg(pagg)
    pexp = sub.add_parser("export", help="export the latest figures for other tools (Prometheus)",
                          description="Exports of the lab's results. See docs/prometheus.md.")
    esub = _subcommands(pexp, "export_command")
    eprom = esub.add_parser(
        "prometheus", help="write a Prometheus text file for node_exporter's textfile collector",
        description="Write the latest figures as a Prometheus text file (format 0.0.4), "
        "atomically: the last successful run's time per kind, p50/p99 per latency and load "
        "series, messages sent and lost, fault losses, the drift state of every series "
        "(label emulator=\"true\" on the noida emulator's). A percentile that is undefined "
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
    _json_arg(eprom, "print {path, samples per metric} as one JSON document")
    _data_arg(eprom)
    # report / drift ------------------------------------------------------------------
    prep = sub.add_parser("report", help="build the static HTML trend report",
                          description="Build lab-data/reports/: one page per run and an index, "
                          "self-contained (opens offline). Reads the aggregates written by the "
                          "Spark job (spark_jobs/aggregate_metrics.py).")
    prep.add_argument("--run-id", default=None, help="the run to feature (default: the latest)")
    _json_arg(prep, "print {report, index} as one JSON document")
    _data_arg(prep)
    pdr = sub.add_parser("drift", help="check a run for drift (default), or accept a new level",
                         usage="kafkalab drift [check] [--run-id RUN] [--config FILE] "
                         "[--data-dir DIR]\n       kafkalab drift accept SERIES|RUN "
                         "[--note TEXT] [--data-dir DIR]",
                         description="Robust drift check of one run (include/drift.yaml): "
                         "median ± k·MAD and a minimum\nrelative change, and non-overlapping "
                         "95 % confidence intervals where the aggregates have\nthem, against "
                         "the good earlier runs of the same series (complete, validated, no "
                         "stale\noutputs, not flagged themselves). Writes "
                         "lab-data/drift/run_id=<id>/drift.parquet and prints\nthe flags. "
                         "`kafkalab drift` is `kafkalab drift check`.",
                         epilog="examples:\n  kafkalab drift\n  kafkalab drift check --run-id RUN\n"
                         "  kafkalab drift accept 'SCENARIO|CLIENT|...|METRIC'\n"
                         "  kafkalab drift accept RUN --note 'new disks'",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    _drift_check_args(pdr, None)
    dsub = pdr.add_subparsers(dest="drift_command", metavar="ACTION", parser_class=_Parser,
                              prog="kafkalab drift")  # not the two-line usage above
    dchk = dsub.add_parser("check", help="judge a run (the default action)",
                           description="Judge one run (default: the latest) and store its "
                           "drift records.")
    _drift_check_args(dchk, argparse.SUPPRESS)
    dacc = dsub.add_parser("accept", help="accept the new level of a drifting series or run",
                           description="Accept the new level of a series in alert (its "
                           "baseline then starts at the first drifting run of the alert), or "
                           "of every series flagged in RUN (from RUN). Stored in "
                           "lab-data/drift/acceptances.json; no recovery is announced for them.")
    dacc.add_argument("target", metavar="SERIES|RUN",
                      help="a series key (as printed by `kafkalab drift`, contains '|') or a run id")
    dacc.add_argument("--note", default=None, help="why the level is accepted (kept in the file)")
    dacc.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                      help="print the acceptances as one JSON document")
    dacc.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS,
                      help="lab data directory (default: $KAFKALAB_DATA_DIR, else lab-data/ in the project)")
    return p


def _drift_check_args(p: argparse.ArgumentParser, default: Any) -> None:
    """The options of a drift check; ``default`` None on ``drift`` itself, SUPPRESS on
    ``drift check`` (so that an option given before ``check`` is not reset)."""
    p.add_argument("--run-id", default=default, help="the run to check (default: the latest)")
    p.add_argument("--config", type=Path, default=default,
                   help="drift rules YAML (default include/drift.yaml)")
    p.add_argument("--data-dir", type=Path, default=default,
                   help="lab data directory (default: $KAFKALAB_DATA_DIR, else lab-data/ in the project)")
    p.add_argument("--json", action="store_true", default=False if default is None else default,
                   help="print the records and counts as one JSON document")


def _subcommands(p: argparse.ArgumentParser, dest: str,
                 metavar: str = "ACTION") -> argparse._SubParsersAction[Any]:
    """A required level of sub-commands whose parsers report errors in one line."""
    sub = p.add_subparsers(dest=dest, metavar=metavar, parser_class=_Parser)
    sub.required = True
    return sub


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


def _flavor_names() -> tuple[str, ...]:
    """``cluster up --flavor``'s choices, default first (the flavor registry's)."""
    from kafkalab.cluster.flavors import embedded_flavor_names

    return embedded_flavor_names()


def _flavor_help() -> str:
    """Each flavor ``cluster up`` starts, with its label (the default first)."""
    from kafkalab.cluster.flavors import embedded_flavor

    names = _flavor_names()
    return "; ".join(f"{n}: {embedded_flavor(n).label}" + (" (default)" if n == names[0] else "")
                     for n in names)


def _port_defaults(attribute: str) -> str:
    """Each embedded flavor's default of a port, as ``<flavor> <port>; ...``."""
    from kafkalab.cluster.flavors import embedded_flavor

    parts = []
    for n in _flavor_names():
        f = embedded_flavor(n)
        port = getattr(f, attribute)
        if port is not None:
            what = f" ({f.control_port_name})" if attribute == "default_control_port" else ""
            parts.append(f"{n} {port}{what}")
    return "; ".join(parts)


def _fault_flavor_name() -> str:
    from kafkalab.cluster.flavors import FAULT_CLUSTER

    return FAULT_CLUSTER.name


def _cluster_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cluster", type=Path, default=None,
                   help="cluster descriptor YAML (default: .lab/cluster.yaml written by `cluster up`)")


def _json_arg(p: argparse.ArgumentParser, text: str = "print the result as one JSON document") -> None:
    p.add_argument("--json", action="store_true", help=text)


def _data_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", type=Path, default=None, help="lab data directory (default: $KAFKALAB_DATA_DIR, else lab-data/ in the project)")


def _say(msg: str) -> None:
    print(msg, flush=True)


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _descriptor(path: Path | None) -> Any:
    from kafkalab.cluster.flavors import load_descriptor
    from kafkalab.paths import default_descriptor_path

    return load_descriptor(path or default_descriptor_path())


def cmd_cluster(args: argparse.Namespace) -> int:
    from kafkalab.cluster.embedded import cluster_down, cluster_status, cluster_up

    if args.cluster_command == "up":
        d = cluster_up(flavor=args.flavor, brokers=args.brokers, base_port=args.base_port,
                       control_port=args.control_port, progress=_err)
        from kafkalab.cluster.descriptor import EMULATOR_LABEL
        from kafkalab.paths import default_descriptor_path

        if args.json:
            from kafkalab.cluster.descriptor import public_view
            from kafkalab.values import jsonable

            _say(json.dumps({"status": "up", "emulator": d.is_emulator,
                             "descriptor_path": str(default_descriptor_path()),
                             "cluster": jsonable(public_view(d))}, indent=2, default=str))
            return 0
        label = f" ({EMULATOR_LABEL})" if d.is_emulator else ""
        _say(f"cluster up: {d.flavor} {d.version}{label}, {d.broker_count} broker(s) at {d.bootstrap_servers}")
        if d.zookeeper:
            _say(f"zookeeper: {d.zookeeper}")
        _say(f"descriptor: {default_descriptor_path()}")
        return 0
    if args.cluster_command == "status":
        st = cluster_status()
        _say(json.dumps(st, indent=2, default=str) if args.json else format_cluster_status(st))
        return 0 if st.get("status") == "up" else 1
    stopped = cluster_down(wipe_data=args.wipe, progress=_err)
    _say_stopped(stopped, "cluster down", args.json)
    return 0


def _say_stopped(stopped: list[dict[str, Any]], what: str, as_json: bool) -> None:
    """The processes a ``down`` stopped: one line each, or ``{"stopped": [...]}``."""
    if as_json:
        _say(json.dumps({"stopped": stopped}, indent=2, default=str))
        return
    if not stopped:
        _say(f"{what}: nothing was running")
    for proc in stopped:
        _say(f"{proc.get('role', '?')} pid {proc.get('pid')}: {proc.get('action', '?')}")


def format_cluster_status(st: dict[str, Any]) -> str:
    """``kafkalab cluster status`` as a table: the overall state, then one row per process
    (role, id, pid, alive, listening, address, log)."""
    from kafkalab.cluster.descriptor import EMULATOR_LABEL

    procs = st.get("processes") or []
    if not procs:
        return (f"cluster: {st.get('status')} (no processes recorded in {st.get('lab_dir')}; "
                "start it with: kafkalab cluster up)")
    from kafkalab.cluster.flavors import FLAVORS

    flavor = st.get("flavor") or "?"
    known = FLAVORS.get(flavor)
    label = f" ({EMULATOR_LABEL})" if known is not None and known.emulator else ""
    lines = [f"cluster: {st.get('status')}  {flavor}{label}, {st.get('brokers')} broker(s), "
             f"started {st.get('started_at') or '?'}"
             + ("  (stale state: processes gone; `kafkalab cluster up` cleans it)"
                if st.get("stale") else "")]
    head = ("role", "id", "pid", "alive", "listening", "address", "log")
    rows = [(str(p.get("role")), "" if p.get("id") is None else str(p.get("id")),
             str(p.get("pid")), "yes" if p.get("alive") else "NO",
             "yes" if p.get("listening") else "NO", str(p.get("address")), str(p.get("log") or ""))
            for p in procs]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        lines.append("  " + "  ".join(v.ljust(widths[i]) for i, v in enumerate(r)).rstrip())
    if st.get("descriptor_path"):
        lines.append(f"descriptor: {st['descriptor_path']}")
    lines.append(f"state: {st.get('state_path')}")
    return "\n".join(lines)


def cmd_topics(args: argparse.Namespace) -> int:
    from kafkalab.config import load_profile, load_workload
    from kafkalab.runner import topic_specs
    from kafkalab.topics import provision_topics

    w = load_workload(args.workload)
    profiles = [load_profile(n) for n in (args.profile or w.profiles)]
    d = _descriptor(args.cluster)
    outcomes = list(provision_topics(d, topic_specs(w, profiles), progress=_err))
    if args.json:
        _say(json.dumps({"topics": outcomes}, indent=2, default=str))
        return 0
    for outcome in outcomes:
        _say(f"{outcome['topic']}: {outcome['action']}" + (f" ({outcome['detail']})" if outcome.get("detail") else ""))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from kafkalab.runner import build_run_request, execute
    from kafkalab.summary import format_run_summary, json_summary

    req = build_run_request(
        args.workload, scenarios=args.scenario, payloads=args.payload, profiles=args.profile,
        overrides={"messages": args.messages, "warmup_messages": args.warmup,
                   "encoding": args.encoding, "consumer_mode": args.consumer_mode},
        option_names={"messages": "--messages", "warmup_messages": "--warmup",
                      "encoding": "--encoding", "consumer_mode": "--consumer-mode"},
        data_dir=args.data_dir, descriptor_path=args.cluster, run_id=args.run_id,
        http_port=args.http_port, provision=not args.no_provision,
    )
    result = execute(req, progress=_err)
    if args.json:
        rows = [json_summary(c) for c in result.cells]
        _say(json.dumps({"run_id": result.run_id, "status": result.status, "cells": rows},
                        indent=2, default=str))
    else:
        _say("")
        _say(format_run_summary(result.cells))
        _say(f"run {result.run_id}: {result.status}; manifest {result.manifest_path}")
    if result.status != "complete":
        _err(f"kafkalab: error: run {result.run_id} is {result.status}: some cells failed (see the table)")
        return 4
    return 0


def _load_cells(args: argparse.Namespace) -> tuple[list[Any], str]:
    """The cells of ``kafkalab load``: a workload's sweep, or the options' product."""
    from pydantic import ValidationError

    from kafkalab.errors import ConfigError
    from kafkalab.load.spec import LoadCellSpec
    from kafkalab.yamlio import describe_validation_error

    if args.workload:
        from kafkalab.load.workloads import load_load_workload

        w = load_load_workload(args.workload)
        return w.cells(), w.name
    cells = []
    try:
        for payload in args.payload:
            for acks in (args.acks or [None]):
                for consumers in args.consumers:
                    for rate in args.rate:
                        cells.append(LoadCellSpec(
                            client=args.client, payload=payload, encoding=args.encoding,
                            profile=args.profile, acks=acks, consumers=consumers,
                            rate_msgs_per_s=rate, duration_s=args.duration,
                            warmup_s=args.warmup, partitions=args.partitions,
                            consumer_mode=args.consumer_mode,
                            consumers_per_shard=args.consumers_per_process, drain_s=args.drain,
                            pause_at_s=args.pause_at, pause_for_s=args.pause_for))
    except ValidationError as exc:
        raise ConfigError(_option_names(describe_validation_error(exc))) from None
    return cells, "adhoc"


_OPTION_NAMES = {"rate_msgs_per_s": "--rate", "duration_s": "--duration", "warmup_s": "--warmup",
                 "consumers_per_shard": "--consumers-per-process", "drain_s": "--drain",
                 "pause_at_s": "--pause-at", "pause_for_s": "--pause-for",
                 "consumers": "--consumers", "partitions": "--partitions", "acks": "--acks",
                 "payload": "--payload"}


def _option_names(text: str) -> str:
    """``key: message`` of a validation error with the key as the option a user typed."""
    key, _, message = text.partition(": ")
    if key == "(top level)":
        return message
    return f"{_OPTION_NAMES.get(key, key)}: {message}"


def cmd_load(args: argparse.Namespace) -> int:
    from kafkalab.load.run import LoadRequest, execute_load
    from kafkalab.load.summary import format_load_table, json_cell

    cells, name = _load_cells(args)
    req = LoadRequest(cells=cells, data_dir=args.data_dir, descriptor_path=args.cluster,
                      run_id=args.run_id, command="kafkalab load " + " ".join(sys.argv[2:]),
                      workload_name=name)
    result = execute_load(req, progress=_err)
    if args.json:
        _say(json.dumps({"run_id": result.run_id, "status": result.status,
                         "cells": [json_cell(c) for c in result.cells]}, indent=2, default=str))
    else:
        _say("")
        _say(format_load_table(result.cells))
        _say("")
        _say("rate, achieved, rx avg in msg/s; e2e = intended send time → record in the consumer's "
             "hands (corrected for coordinated omission), svc = actual send → receipt, pub = "
             "send − intended; ms, exact nearest-rank over every consumer's expected messages "
             "(missing ones count as +inf); n<100: too few for p99. failing = consumers missing "
             "an acked message after the drain.")
        _say(f"run {result.run_id}: {result.status}; manifest {result.manifest_path}")
    if result.status != "complete":
        _err(f"kafkalab: error: run {result.run_id} is {result.status}: some cells failed (see above)")
        return 4
    return 0


def _fault_help() -> dict[str, str]:
    from kafkalab.faults.spec import FAULT_HELP

    return FAULT_HELP


_FAULT_OPTION_NAMES = {"rate_msgs_per_s": "--rate", "duration_s": "--duration",
                       "warmup_s": "--warmup", "fault_at_s": "--fault-at", "down_s": "--down",
                       "fault": "--fault", "acks": "--acks", "trial": "--trials",
                       "partitions": "--partitions", "payload": "--payload",
                       "commit": "--commit", "consumers": "--consumers",
                       "session_timeout_ms": "--session-timeout-ms",
                       "heartbeat_interval_ms": "--heartbeat-ms",
                       "auto_commit_interval_ms": "--auto-commit-interval-ms",
                       "batch_msgs": "--batch-msgs", "rejoin_after_s": "--rejoin-after",
                       "max_in_flight": "--max-in-flight"}


def cmd_faults(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    if args.faults_command == "down":
        from kafkalab.cluster import cluster_down
        from kafkalab.faults.inject import fault_cluster_lab

        stopped = cluster_down(fault_cluster_lab(args.cluster_lab), wipe_data=args.wipe, progress=_err)
        _say_stopped(stopped, "faults down", args.json)
        return 0

    from kafkalab.config.loader import load_profile
    from kafkalab.errors import ConfigError
    from kafkalab.faults.engine import FaultRequest, execute_faults
    from kafkalab.faults.spec import CONSUMER_FAULTS, FaultTrialSpec, group_duration_s
    from kafkalab.faults.summary import format_consumer_table, format_fault_table
    from kafkalab.yamlio import describe_validation_error

    if args.trials < 1:
        raise ConfigError(f"--trials must be at least 1, got {args.trials}")
    if args.commit and not any(f in CONSUMER_FAULTS for f in args.fault):
        raise ConfigError(f"--commit applies to the consumer faults ({', '.join(CONSUMER_FAULTS)}); "
                          f"--fault is {','.join(args.fault)}")
    try:
        in_flight: list[int | None] = [int(x) for x in args.max_in_flight] if args.max_in_flight else [None]
    except ValueError:
        raise ConfigError(f"--max-in-flight must be whole numbers, got {','.join(args.max_in_flight)}") from None
    trials = []
    try:
        for profile in args.profile:
            for fault in args.fault:
                group = fault in CONSUMER_FAULTS
                for commit in ((args.commit or ["after"]) if group else [None]):
                    for acks, mif in itertools.product(args.acks or [None], in_flight):
                        for k in range(1, args.trials + 1):
                            extra: dict[str, object] = {}
                            if group:
                                extra = {"commit": commit, "consumers": args.consumers,
                                         "session_timeout_ms": args.session_timeout_ms,
                                         "heartbeat_interval_ms": args.heartbeat_ms,
                                         "auto_commit_interval_ms": args.auto_commit_interval_ms,
                                         "batch_msgs": args.batch_msgs,
                                         "rejoin_after_s": args.rejoin_after}
                            partitions = (args.partitions if args.partitions is not None
                                          else 2 * args.consumers if group else 1)
                            duration = args.duration
                            if duration is None:
                                duration = 20.0
                                if group:
                                    session = (args.session_timeout_ms or
                                               load_profile(profile).consumer.session_timeout_ms)
                                    duration = max(duration, group_duration_s(
                                        fault, args.fault_at, session, args.rejoin_after))
                            trials.append(FaultTrialSpec(
                                profile=profile, fault=fault, acks=acks, trial=k,
                                rate_msgs_per_s=args.rate, duration_s=duration,
                                warmup_s=args.warmup, fault_at_s=args.fault_at, down_s=args.down,
                                payload=args.payload, partitions=partitions, client=args.client,
                                max_in_flight=mif, **extra))
    except ValidationError as exc:
        text = describe_validation_error(exc)
        key, _, msg = text.partition(": ")
        raise ConfigError(msg if key == "(top level)" else
                          f"{_FAULT_OPTION_NAMES.get(key, key)}: {msg}") from None
    req = FaultRequest(trials=trials, data_dir=args.data_dir, run_id=args.run_id,
                       cluster_lab=args.cluster_lab, keep_topics=args.keep_topics,
                       command="kafkalab faults " + " ".join(sys.argv[2:]))
    result = execute_faults(req, progress=_err)
    if args.json:
        _say(json.dumps({"run_id": result.run_id, "status": result.status,
                         "manifest": str(result.manifest_path), "trials": result.trials},
                        indent=2, default=str))
    else:
        broker = [t for t in result.trials if not t.get("commit")]
        consumer_trials = [t for t in result.trials if t.get("commit")]
        if broker:
            _say("")
            _say(format_fault_table(broker))
            _say("")
            _say("lost = acked by the cluster, absent from the re-read from offset 0 (in logs: a "
                 "broker's log segments still hold it); dup = extra copies; unavail = longest gap "
                 "between acks after the fault; leader / isr = fault → new leader / full ISR "
                 "(ZooKeeper); ms.")
        if consumer_trials:
            _say("")
            _say(format_consumer_table(consumer_trials))
            _say("")
            _say("redeliv = records the group processed again; lost = records the topic holds "
                 "that no member processed; exp = the same from the offsets at the death "
                 "(processed past the commit / committed past the processed); pause = death → "
                 "the successor's first record on the moved partitions; assigned = death → their "
                 "new assignment; others = longest gap on the partitions that stayed (0.9 "
                 "rebalances eagerly); session / hb = the members' session timeout and heartbeat; ms.")
        _say(f"run {result.run_id}: {result.status}; manifest {result.manifest_path}")
    if result.status != "complete":
        _err(f"kafkalab: error: run {result.run_id} is {result.status}: some trials failed (see above)")
        return 4
    return 0


def cmd_maxrate(args: argparse.Namespace) -> int:
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
        result = find_max_rate(req, progress=_err)
        results.append(result)
        if not args.json:
            _say(format_max_rate(result))
            _say("")
    if args.json:
        _say(json.dumps(results[0] if len(results) == 1 else results, indent=2, default=str))
    elif len(results) > 1:
        _say(format_max_rate_matrix(results))
    return 0 if all(r.get("max_rate_msgs_per_s") is not None for r in results) else 4


def cmd_spark(args: argparse.Namespace) -> int:
    """``kafkalab spark up|status|down``: see :mod:`kafkalab.spark.standalone`."""
    from kafkalab.spark import StandaloneSpec, export_line, spark_down, spark_status, spark_up

    if args.spark_command == "up":
        spec = StandaloneSpec(master_port=args.port, webui_port=args.webui_port,
                              workers=args.workers, worker_cores=args.worker_cores,
                              worker_memory=args.worker_memory)
        st = spark_up(spec, timeout_s=args.timeout, progress=_err)
        if args.json:
            _say(json.dumps(st, indent=2, default=str))
            return 0
        workers = st["workers"]
        _say(f"# spark standalone up: master {st['master_url']} (web UI {st['webui_url']}), "
             f"{len(workers)} worker(s) × {spec.worker_cores} core(s), {spec.worker_memory}")
        _say(f"# logs: {Path(st['master']['log']).parent}; stop: kafkalab spark down")
        _say(export_line(st["master_url"]))
        return 0
    if args.spark_command == "status":
        st = spark_status()
        if args.json:
            _say(json.dumps(st, indent=2, default=str))
        elif st["master"] is None:
            _say(f"spark standalone: down (no state in {st['state_path']})")
        else:
            _say(f"spark standalone: {st['status']}  master {st['master_url']}  "
                 f"web UI {st['webui_url']}")
            m = st["master"]
            _say(f"  master    pid {m['pid']:<7} {'alive' if m['alive'] else 'gone':<5}  "
                 f"{m['status'] or 'not answering'}  log {m['log']}")
            for w in st["workers"]:
                used = (f"{w['cores']} core(s) ({w['cores_used']} used), {w['memory_mb']} MiB "
                        f"({w['memory_used_mb']} used)" if w["cores"] is not None else "")
                _say(f"  worker {w['id']:<2} pid {w['pid']:<7} {'alive' if w['alive'] else 'gone':<5}  "
                     f"{w['registered'] or 'not registered'}  127.0.0.1:{w['port']}  {used}")
            if st["apps"] is not None:
                _say(f"  apps: {len(st['apps']['active'])} running, {st['apps']['completed']} completed")
        return 0 if st["status"] == "up" else 1
    stopped = spark_down(wipe=args.wipe, progress=_err)
    if args.json:
        _say(json.dumps({"stopped": stopped}, indent=2, default=str))
        return 0
    if not stopped:
        _say("spark down: nothing was running")
    for proc in stopped:
        name = "master" if proc["role"] == "master" else f"worker {proc['id']}"
        _say(f"{name} pid {proc['pid']}: {proc['action']}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """``kafkalab demo``: see :mod:`kafkalab.demo`."""
    from kafkalab.demo import DEMO_DATES, DEMO_WORKLOAD, DemoPlan, parse_conf, run_demo
    from kafkalab.store import LabData

    try:
        conf = parse_conf(args.nightly_conf)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    dates = tuple(args.dates) if args.dates else DEMO_DATES
    for d in dates:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", d):
            raise ConfigError(f"--dates: {d!r} is not a date like 2026-11-18")
    plan = DemoPlan(workload=args.workload or DEMO_WORKLOAD, dates=dates, nightly_conf=conf,
                    seed000=not args.no_seed000,
                    aggregate_seed000=not args.no_seed000_aggregate, nightly=not args.no_nightly,
                    log_path=args.log, descriptor_path=args.cluster)
    return run_demo(plan, say=_say, lab=LabData(args.data_dir))


def cmd_runs(args: argparse.Namespace) -> int:
    from kafkalab.store import LabData

    lab = LabData(args.data_dir)
    docs = lab.manifests()
    if args.json:
        runs = [{"run_id": rid, "state": lab.run_state(rid),
                 "reason": lab.run_state_reason(rid) if lab.run_state(rid) == "stale" else None,
                 "kind": doc.get("kind") or "latency", "started_at": doc.get("started_at"),
                 "cells": len(doc.get("cells") or []), "command": doc.get("command"),
                 "stale_outputs": doc.get("stale_outputs") or []} for rid, doc in docs.items()]
        _say(json.dumps({"data_dir": str(lab.root), "runs": runs}, indent=2, default=str))
        return 0
    if not docs:
        _say(f"no runs in {lab.root}")
        return 0
    for rid, doc in docs.items():
        state = lab.run_state(rid)
        cells = doc.get("cells") or []
        extra = f" ({lab.run_state_reason(rid)})" if state == "stale" else ""
        stale = doc.get("stale_outputs") or []
        if stale:
            extra += f"; stale: {', '.join(stale)}"
        _say(f"{rid}  {state:<10} {len(cells):>3} cells  {doc.get('command', '')}{extra}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from kafkalab.report.build import build_report
    from kafkalab.store import LabData

    lab = LabData(args.data_dir)
    path = build_report(lab.root, run_id=args.run_id)
    if args.json:
        _say(json.dumps({"report": str(path), "index": str(lab.report_index_path())}, indent=2))
        return 0
    _say(f"report: {path}")
    return 0


def cmd_drift(args: argparse.Namespace) -> int:
    """``kafkalab drift [check]``: judge a run; ``kafkalab drift accept``: see
    :func:`cmd_drift_accept`."""
    if getattr(args, "drift_command", None) == "accept":
        return cmd_drift_accept(args)
    from kafkalab.drift import records_to_dicts, run_drift
    from kafkalab.store import LabData
    from kafkalab.values import as_float

    records, path = run_drift(LabData(args.data_dir).root, run_id=args.run_id,
                              config_path=args.config, require_run=args.run_id is not None)
    if getattr(args, "json", False):
        recs = records_to_dicts(records)
        _say(json.dumps({
            "run_id": recs[0]["run_id"] if recs else args.run_id,
            "path": str(path) if path else None, "series": len(recs),
            "drifts": sum(1 for r in recs if r.get("is_drift")),
            "alerting": sum(1 for r in recs if not r.get("is_drift")
                            and r.get("alert_status") == "alerting"),
            "recovered": sum(1 for r in recs if r.get("alert_status") == "recovered"),
            "undefined": sum(1 for r in recs if r.get("verdict") == "undefined"),
            "records": recs}, indent=2, default=str))
        return 0
    if path is None or len(records) == 0:
        _say("drift: no aggregates yet (run the aggregation first: kafkalab aggregate)")
        return 0

    def num(v: Any, fmt: str) -> str:
        f = as_float(v)
        return "n/a" if f is None else format(f, fmt)

    counts = {"drift": 0, "alerting": 0, "recovered": 0, "undefined": 0}
    for _, r in records.iterrows():
        key = r["series_key"]
        if bool(r["is_drift"]):
            counts["drift"] += 1
            ci = (f"; CI [{num(r['latest_ci_low'], '.3f')}, {num(r['latest_ci_high'], '.3f')}] vs "
                  f"[{num(r['baseline_ci_low'], '.3f')}, {num(r['baseline_ci_high'], '.3f')}]"
                  if r["rule"] == "mad+ci" else "")
            _say(f"DRIFT {key}: {num(r['baseline_value'], '.3f')} -> {num(r['latest_value'], '.3f')}"
                 f" ({num(r['change_pct'], '+.1f')}%, confidence {num(r['confidence'], '.2f')}{ci})")
        elif r["alert_status"] == "alerting":
            counts["alerting"] += 1
            _say(f"IN ALERT {key}: since run {r['alert_since_run_id']}, "
                 f"{r['good_runs']} good run(s) so far")
        elif r["alert_status"] == "recovered":
            counts["recovered"] += 1
            _say(f"RECOVERED {key}: after {r['good_runs']} consecutive good runs")
        if r["verdict"] == "undefined":
            counts["undefined"] += 1
    _say(f"drift: {counts['drift']} flag(s), {counts['alerting']} still in alert, "
         f"{counts['recovered']} recovered, {counts['undefined']} undefined (not checked) in "
         f"{len(records)} series; records: {path}")
    return 0


def cmd_drift_accept(args: argparse.Namespace) -> int:
    """``kafkalab drift accept SERIES|RUN``: accept the new level; prints what was accepted."""
    from kafkalab.alerts import accept_drift
    from kafkalab.store import LabData

    lab = LabData(getattr(args, "data_dir", None))
    accepted = accept_drift(lab.root, args.target, note=args.note)
    if getattr(args, "json", False):
        import dataclasses

        _say(json.dumps({"accepted": [dataclasses.asdict(a) for a in accepted],
                         "path": str(lab.drift_acceptances_path())}, indent=2, default=str))
        return 0
    for a in accepted:
        _say(f"accepted {a.series_key}: baseline from run {a.from_run_id} "
             f"(flags through run {a.through_run_id} no longer count)")
    _say(f"acceptances: {lab.drift_acceptances_path()}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """``kafkalab compare RUN_A RUN_B``: see :mod:`kafkalab.compare`."""
    from kafkalab.compare import compare_runs, format_comparison
    from kafkalab.store import LabData

    c = compare_runs(LabData(args.data_dir).root, args.run_a, args.run_b, args.config)
    if args.json:  # the document even when nothing is comparable ("comparable": false)
        _say(json.dumps(c.to_dict(), indent=2, default=str))
    if not c.comparable:  # a gate that checked nothing must not pass
        raise ConfigError(c.reason or "nothing comparable")
    if not args.json:
        _say(format_comparison(c))
    return 1 if c.regressed else 0


def cmd_aggregate(args: argparse.Namespace) -> int:
    """``kafkalab aggregate``: see :mod:`kafkalab.aggregate`."""
    from kafkalab.aggregate import aggregate_run, format_outcome

    outcome = aggregate_run(args.data_dir, args.run_id, progress=_err)
    _say(json.dumps(outcome.to_dict(), indent=2, default=str) if args.json
         else format_outcome(outcome))
    return 0 if outcome.validation_success else 1


def cmd_export(args: argparse.Namespace) -> int:
    """``kafkalab export prometheus``: see :mod:`kafkalab.export.prometheus`."""
    from kafkalab.export.prometheus import export_textfile

    done = export_textfile(args.data_dir, args.out)
    if args.json:
        _say(json.dumps(done, indent=2))
    else:
        n = sum(done["samples"].values())
        _say(f"prometheus: {n} samples of {sum(1 for v in done['samples'].values() if v)} "
             f"metrics in {done['path']}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kafkalab`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handlers = {"cluster": cmd_cluster, "topics": cmd_topics, "run": cmd_run,
                "report": cmd_report, "runs": cmd_runs, "drift": cmd_drift,
                "load": cmd_load, "maxrate": cmd_maxrate, "faults": cmd_faults,
                "demo": cmd_demo, "spark": cmd_spark, "compare": cmd_compare,
                "export": cmd_export, "aggregate": cmd_aggregate}
    try:
        return handlers[args.command](args)
    except LabError as exc:
        _err(f"kafkalab: error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        _err("kafkalab: interrupted; what was measured is kept (run marked incomplete)")
        return 130


if __name__ == "__main__":
    sys.exit(main())
