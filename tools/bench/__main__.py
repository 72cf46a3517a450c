"""``python -m tools.bench`` (``make bench``): run the bench parts and write their JSON.

The parts are described in :mod:`tools.bench`. Results go to
``<project root>/bench/results/bench-<utc>.json`` (or ``--out``); scratch data (the bench
runs' cells, the fake Spark samples, the nightly run's Airflow home, the report part's
fabricated history) to
``<lab_dir>/bench/<utc>/``.

The result file is one JSON object: ``started_at`` (ISO 8601 UTC), ``host``, ``python``,
``complete`` (false until every chosen part finished without error), ``wall_s`` (monotonic
seconds so far), ``error`` (one line, only when a part failed), and one key per part that ran
(``overhead`` and ``kafka`` for (a)-(c), ``load``, ``spark_aggregation`` and ``spark_goals``,
``nightly``, ``faults``, ``connect``, ``nodes``, ``demo``, ``report``, ``links``, ``canary``),
each as its module
documents it. A part that measures a broker names its flavor and Kafka version in its
``cluster``. The file is rewritten after every part, so what was measured before a failure or
a Ctrl-C stays written.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafkalab.errors import LabError
from kafkalab.paths import lab_dir, project_root
from kafkalab.store import atomic_write
from tools.bench import cluster_facts


def results_dir() -> Path:
    """``<project root>/bench/results``: where the bench's JSON files are kept."""
    return project_root() / "bench" / "results"


def _row_counts(text: str) -> list[int]:
    """``--spark-rows``: comma-separated positive row counts."""
    try:
        counts = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated row counts, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"expected positive row counts, got {text!r}")
    return counts


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


PARTS: tuple[str, ...] = ("kafka", "load", "spark", "nightly", "faults", "report", "connect",
                          "nodes", "demo", "links", "canary")
"""The parts ``--only`` selects: kafka = (a)-(c), load = (f), spark = (d), nightly = (e),
faults = (g) (consumer faults and ordering under a leader failover), report = (h) (the
report's cost as the history grows, on fabricated nights), connect = (i) (one night's Spark
work through spark-submit vs a warm Spark Connect server), nodes = (j) (a 3-node KRaft
cluster's start without and with the nodes' class-data archive), demo = (k) (``make demo`` by
phase against issue 25's budget), links = (l), canary = (m) (the canary against a minimal loop,
its CPU per record, the busy-host mark's cost)."""


def _parts(text: str) -> frozenset[str]:
    """``--only``: comma-separated names from :data:`PARTS`."""
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [n for n in names if n not in PARTS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated parts from {', '.join(PARTS)}, got {text!r}")
    return frozenset(names)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench",
        description="The lab's speed checks (make bench); JSON in bench/results/.")
    parser.add_argument("--messages-1kb", type=_positive, default=1000,
                        help="measured 1 KB messages per client in part (b) (default 1000)")
    parser.add_argument("--messages-mb", type=_positive, default=20,
                        help="measured messages per cell at the seed 000 sizes (default 20)")
    parser.add_argument("--overhead-rounds", type=_positive, default=6,
                        help="A/B rounds of lab vs minimal loop in part (a) (default 6)")
    parser.add_argument("--overhead-messages-1kb", type=_positive, default=1000,
                        help="measured 1 KB messages per side and round in part (a) (default 1000)")
    parser.add_argument("--overhead-messages-1mb", type=_positive, default=150,
                        help="measured 1 MB messages per side and round in part (a) (default 150)")
    parser.add_argument("--spark", action="store_true", help="also benchmark the Spark aggregation")
    parser.add_argument("--spark-rows", type=_row_counts, default=[1_000_000, 10_000_000],
                        help="row counts of the Spark bench, comma-separated (default 1000000,10000000)")
    parser.add_argument("--spark-data-dir", type=Path, default=None,
                        help="keep the Spark bench's fake samples here and reuse them on the "
                             "next run (default: scratch, removed after each row count)")
    parser.add_argument("--nightly", action="store_true", help="also time one nightly DAG run by task")
    parser.add_argument("--faults", action="store_true",
                        help="also run part (g): consumer faults per commit strategy and client, "
                             "ordering under a leader failover by max.in.flight (~12 min)")
    parser.add_argument("--report", action="store_true",
                        help="also run part (h): the report, its spectra and change points and the "
                             "Prometheus export timed on fabricated histories (~3 min)")
    parser.add_argument("--report-nights", type=_row_counts, default=[7, 30, 90],
                        help="history sizes of part (h) in nights, comma-separated (default 7,30,90)")
    parser.add_argument("--report-all-pages-max", type=_positive, default=30,
                        help="part (h) times the whole report (every run's page) only up to this "
                             "many nights (default 30)")
    parser.add_argument("--connect", action="store_true",
                        help="also run part (i): one night's Spark work through spark-submit "
                             "vs a warm Spark Connect server")
    parser.add_argument("--nodes", action="store_true",
                        help="also run part (j): a 3-node KRaft cluster's start without and "
                             "with the nodes' class-data archive")
    parser.add_argument("--demo", action="store_true",
                        help="also run part (k): make demo twice, by phase, against its budget")
    parser.add_argument("--links", action="store_true",
                        help="also run part (l): what degradable links cost, and what a "
                             "replication delay adds to publish latency")
    parser.add_argument("--canary", action="store_true",
                        help="also run part (m): the canary against a minimal loop on the same "
                        "cluster and schedule, its CPU per record, the busy-host mark's cost")
    parser.add_argument("--skip-kafka", action="store_true", help="skip the Kafka latency parts")
    parser.add_argument("--load", action="store_true",
                        help="also run the load part (f): producer/consumer max rate against bare "
                             "loops and Kafka's tools, fan-out deliveries per client core")
    parser.add_argument("--load-messages", type=_positive, default=300_000,
                        help="messages per producer/consumer measurement of part (f) (default 300000)")
    parser.add_argument("--load-rounds", type=_positive, default=3,
                        help="alternating rounds of part (f)'s producer and consumer sides (default 3)")
    parser.add_argument("--only", type=_parts, default=None, metavar="PARTS",
                        help=f"run only these parts, comma-separated ({', '.join(PARTS)}); "
                             "not with --skip-kafka, --load, --spark, --nightly, --faults or "
                             "--report")
    parser.add_argument("--out", type=Path, default=None,
                        help="result file (default bench/results/bench-<UTC time>.json)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the chosen bench parts, print them and write the result file; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.only is not None and (args.skip_kafka or args.load or args.spark or args.nightly
                                  or args.faults or args.report or args.connect or args.nodes
                                  or args.demo or args.links or args.canary):
        parser.error("--only names the parts itself: drop --skip-kafka, --load, --spark, "
                     "--nightly, --faults, --report, --connect, --nodes, --demo, --links "
                     "and --canary")
    parts = args.only if args.only is not None else frozenset(
        name for name, on in (("kafka", not args.skip_kafka), ("load", args.load),
                              ("spark", args.spark), ("nightly", args.nightly),
                              ("faults", args.faults), ("report", args.report),
                              ("connect", args.connect), ("nodes", args.nodes),
                              ("demo", args.demo), ("links", args.links),
                              ("canary", args.canary)) if on)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    work = lab_dir() / "bench" / stamp
    work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"started_at": datetime.now(UTC).isoformat(), "host": platform.node(),
                              "python": platform.python_version(), "complete": False}
    out = args.out or results_dir() / f"bench-{stamp}.json"
    t0 = time.perf_counter()

    def save() -> None:
        """Write what is measured so far: a part that fails or a Ctrl-C loses none before it."""
        result["wall_s"] = time.perf_counter() - t0
        atomic_write(out, json.dumps(result, indent=2, default=str) + "\n")

    try:
        if "kafka" in parts:
            from kafkalab.cluster.embedded import cluster_up
            from kafkalab.cluster.flavors import DEFAULT_EMBEDDED
            from tools.bench.latency import bench_kafka, print_kafka
            from tools.bench.overhead import bench_overhead, print_overhead

            d = cluster_up(DEFAULT_EMBEDDED.name, 1, progress=lambda m: print(m, file=sys.stderr))
            result["overhead"] = {"cluster": cluster_facts(d), "rows": bench_overhead(
                d, args.overhead_rounds, args.overhead_messages_1kb, args.overhead_messages_1mb,
                work / "overhead")}
            print_overhead(result["overhead"]["rows"])
            result["kafka"] = bench_kafka(args.messages_1kb, args.messages_mb, work / "data")
            print_kafka(result["kafka"])
            save()
        if "load" in parts:
            from tools.bench.load import LoadBenchConfig, bench_load, print_load

            result["load"] = bench_load(work / "load", LoadBenchConfig(
                messages=args.load_messages, rounds=args.load_rounds))
            print_load(result["load"])
            save()
        if "spark" in parts:
            from tools.bench.spark import bench_aggregation, format_results, goals

            spark_work = args.spark_data_dir or work / "spark"
            result["spark_aggregation"] = bench_aggregation(
                args.spark_rows, spark_work, keep_data=args.spark_data_dir is not None)
            result["spark_goals"] = goals(result["spark_aggregation"])
            print("\n(d) Spark aggregation on local[2] against pandas/numpy")
            print("\n".join(format_results(result["spark_aggregation"])))
            save()
        if "nightly" in parts:
            from tools.bench.nightly import bench_nightly_run

            result["nightly"] = bench_nightly_run(work / "nightly")
            print("\n(e) one nightly run, wall time by task")
            for r in result["nightly"].get("tasks", []):
                print(f"  {r['task_id']:<28} {r['duration_s']:8.2f} s")
            save()
        if "faults" in parts:
            from tools.bench.faults import bench_faults, print_faults

            result["faults"] = bench_faults(work / "faults")
            print_faults(result["faults"])
            save()
        if "connect" in parts:
            from tools.bench.connect import bench_connect, print_connect

            result["connect"] = bench_connect(work / "connect")
            print_connect(result["connect"])
            save()
        if "nodes" in parts:
            from tools.bench.nodes import bench_nodes, print_nodes

            result["nodes"] = bench_nodes(work / "nodes")
            print_nodes(result["nodes"])
            save()
        if "links" in parts:
            from tools.bench.links import bench_links, print_links

            result["links"] = bench_links(work / "links")
            print_links(result["links"])
            save()
        if "canary" in parts:
            from tools.bench.canary import bench_canary, print_canary

            result["canary"] = bench_canary(work / "canary")
            print_canary(result["canary"])
            save()
        if "demo" in parts:
            from tools.bench.demo import bench_demo, print_demo

            result["demo"] = bench_demo()
            print_demo(result["demo"])
            save()
        if "report" in parts:
            from tools.bench.report import ReportBenchConfig, bench_report, print_report

            result["report"] = bench_report(work / "report", ReportBenchConfig(
                nights=tuple(args.report_nights), all_pages_max_nights=args.report_all_pages_max))
            print_report(result["report"])
            save()
    except LabError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        result["error"] = str(exc)
    except BaseException:
        save()  # an unexpected failure or Ctrl-C: the parts measured before it stay written
        print(f"\nresults so far: {out}", file=sys.stderr)
        raise
    result["complete"] = "error" not in result
    save()
    print(f"\nresults: {out}")
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
