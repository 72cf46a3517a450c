"""``kafkalab canary``: probe a cluster continuously, live on ``/metrics``
(:mod:`kafkalab.canary`; docs/canary.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kafkalab.cli.options import SubParsers, add_cluster_option, add_data_option, add_json_option
from kafkalab.cli.output import err, say, say_json

OPTION_OF_FIELD = {
    "topic": "--topic", "interval_ms": "--interval-ms", "record_bytes": "--record-bytes",
    "acks": "--acks", "replication_factor": "--replication-factor",
    "produce_timeout_ms": "--produce-timeout-ms", "consume_deadline_ms": "--consume-deadline-ms",
    "lost_after_s": "--lost-after-s", "warmup_s": "--warmup-s", "topic_check_s": "--topic-check-s",
    "report_interval_s": "--report-interval-s", "metrics_address": "--metrics-address",
    "metrics_port": "--metrics-port", "out_dir": "--out", "duration_s": "--duration",
}
"""The option that sets each :class:`~kafkalab.canary.spec.CanarySpec` field."""


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``canary``."""
    from kafkalab.canary.spec import DEFAULT_METRICS_PORT, DEFAULT_TOPIC

    p = sub.add_parser(
        "canary", help="probe a cluster continuously: per-broker availability and latency "
        "from the intended send time, live on /metrics",
        description="A long-running probe of any cluster the lab can reach: one record per "
        "partition per interval into a topic with a partition led by every broker, read back "
        "by a consumer; produce and consume availability, lost/duplicated/late records and "
        "e2e latency per broker and partition, served to Prometheus. Stops on SIGTERM or "
        "Ctrl-C (or --duration), writing what it measured. See docs/canary.md.")
    p.set_defaults(handler=cmd_canary)
    add_cluster_option(p)
    p.add_argument("--topic", default=DEFAULT_TOPIC, help="the canary's own topic, created "
                   "or checked at start (default %(default)s)")
    p.add_argument("--interval-ms", type=int, default=1000,
                   help="one record per partition every this many ms (default 1000)")
    p.add_argument("--record-bytes", type=int, default=100, help="record value size (default 100)")
    p.add_argument("--acks", choices=["all", "1"], default="all",
                   help="acks=all with the idempotent producer (default), or 1")
    p.add_argument("--replication-factor", type=int, default=None,
                   help="of a topic the canary creates (default min(3, brokers))")
    p.add_argument("--produce-timeout-ms", type=int, default=5000,
                   help="a record not acked by then failed (message.timeout.ms; default 5000)")
    p.add_argument("--consume-deadline-ms", type=int, default=5000,
                   help="a record read later than its intended time + this is not consumed "
                   "in time (default 5000)")
    p.add_argument("--lost-after-s", type=float, default=60.0,
                   help="an acked record not read by its intended time + this is lost "
                   "(default 60)")
    p.add_argument("--warmup-s", type=float, default=5.0,
                   help="records intended in the first seconds are counted apart, out of every "
                   "figure (default 5)")
    p.add_argument("--topic-check-s", type=float, default=30.0,
                   help="re-check the brokers for one that leads no partition (default 30)")
    p.add_argument("--report-interval-s", type=float, default=10.0,
                   help="rewrite summary.json and log an interval histogram (default 10)")
    p.add_argument("--metrics-address", default="127.0.0.1",
                   help="the /metrics endpoint's address (default 127.0.0.1)")
    p.add_argument("--metrics-port", type=int, default=DEFAULT_METRICS_PORT,
                   help="its port (default %(default)s; 0: no endpoint)")
    p.add_argument("--hdr-log", action="store_true",
                   help="also write each interval's latency HdrHistograms to <out>/latency.hlog")
    p.add_argument("--duration", type=float, default=None,
                   help="stop after this many seconds (default: run until SIGTERM)")
    p.add_argument("--out", type=Path, default=None,
                   help="where summary.json goes (default <data>/canary/<id>)")
    add_data_option(p)
    add_json_option(p, "print the final summary as one JSON document")


def _spec(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from kafkalab.canary.spec import CanarySpec
    from kafkalab.cli.options import as_options
    from kafkalab.errors import ConfigError
    from kafkalab.paths import data_dir
    from kafkalab.run_ids import new_run_id

    out = args.out or (args.data_dir or data_dir()) / "canary" / new_run_id()
    try:
        return CanarySpec(
            topic=args.topic, interval_ms=args.interval_ms, record_bytes=args.record_bytes,
            acks=args.acks, replication_factor=args.replication_factor,
            produce_timeout_ms=args.produce_timeout_ms,
            consume_deadline_ms=args.consume_deadline_ms, lost_after_s=args.lost_after_s,
            warmup_s=args.warmup_s,
            topic_check_s=args.topic_check_s, report_interval_s=args.report_interval_s,
            metrics_address=args.metrics_address, metrics_port=args.metrics_port,
            out_dir=out, hdr_log=args.hdr_log, duration_s=args.duration)
    except ValidationError as exc:
        raise ConfigError(as_options(exc, OPTION_OF_FIELD)) from None


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def _ms(doc: dict[str, Any], name: str) -> str:
    value = doc.get(f"{name}_ms")
    return f"{value:.1f}" if value is not None else f"- ({doc.get(f'{name}_reason')})"


def cmd_canary(args: argparse.Namespace) -> int:
    """Run the canary; print its per-broker table (or ``--json``). Exit 0 when it stopped as
    asked (duration or signal)."""
    from prometheus_client import CollectorRegistry

    from kafkalab.canary.engine import run_canary
    from kafkalab.cluster.flavors import load_descriptor
    from kafkalab.paths import default_descriptor_path

    spec = _spec(args)
    d = load_descriptor(args.cluster or default_descriptor_path())
    if spec.metrics_port:
        err(f"canary: /metrics on http://{spec.metrics_address}:{spec.metrics_port}/metrics")
    err(f"canary: summary in {spec.out_dir / 'summary.json'}")
    summary = run_canary(spec, d, progress=err, registry=CollectorRegistry())
    if args.json:
        say_json(summary)
        return 0
    say(f"canary on {d.flavor} {d.version} ({summary['stop_reason']}): "
        f"{summary['records_sent']} records sent, leader changes "
        f"{sum(summary['leader_changes'].values())}")
    say(f"{'broker':>7} {'produce':>9} {'consume':>9} {'lost':>5} {'dup':>4} {'late':>5} "
        f"{'open':>5}  e2e p50 / p99 ms (no leader change)")
    for b in summary["brokers"]:
        lat = b["e2e_latency"]
        say(f"{b['broker']:>7} {_pct(b['produce_availability']):>9} "
            f"{_pct(b['consume_availability']):>9} {b['lost']:>5} {b['duplicated']:>4} "
            f"{b['late']:>5} {b['unresolved_at_stop']:>5}  {_ms(lat, 'p50')} / {_ms(lat, 'p99')}")
    return 0


__all__ = ["add_parser", "cmd_canary"]
