"""``kafkalab drift [check]`` (judge a run) and ``kafkalab drift accept`` (accept a new
level): :mod:`kafkalab.drift`, :mod:`kafkalab.alerts`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kafkalab.cli.options import LabParser, SubParsers, existing_data_dir_arg, run_id_arg
from kafkalab.cli.output import say, say_json


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``drift`` and its actions ``check`` (the default) and ``accept``."""
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
    pdr.set_defaults(handler=cmd_drift)
    _drift_check_args(pdr, None)
    dsub = pdr.add_subparsers(dest="drift_command", metavar="ACTION", parser_class=LabParser,
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
    dacc.add_argument("--data-dir", type=existing_data_dir_arg, default=argparse.SUPPRESS,
                      help="lab data directory (default: $KAFKALAB_DATA_DIR, else lab-data/ in the project)")


def _drift_check_args(p: argparse.ArgumentParser, default: Any) -> None:
    """The options of a drift check; ``default`` None on ``drift`` itself, SUPPRESS on
    ``drift check`` (so that an option given before ``check`` is not reset)."""
    p.add_argument("--run-id", type=run_id_arg, default=default, help="the run to check (default: the latest)")
    p.add_argument("--config", type=Path, default=default,
                   help="drift rules YAML (default include/drift.yaml)")
    p.add_argument("--data-dir", type=existing_data_dir_arg, default=default,
                   help="lab data directory (default: $KAFKALAB_DATA_DIR, else lab-data/ in the project)")
    p.add_argument("--json", action="store_true", default=False if default is None else default,
                   help="print the records and counts as one JSON document")


def cmd_drift(args: argparse.Namespace) -> int:
    """``kafkalab drift [check]``: judge a run; ``kafkalab drift accept``: see
    :func:`cmd_drift_accept`."""
    if getattr(args, "drift_command", None) == "accept":
        return cmd_drift_accept(args)
    from kafkalab.drift import records_to_dicts, run_drift
    from kafkalab.store import LabData

    records, path = run_drift(LabData(args.data_dir).root, run_id=args.run_id,
                              config_path=args.config, require_run=args.run_id is not None)
    if getattr(args, "json", False):
        recs = records_to_dicts(records)
        say_json({
            "run_id": recs[0]["run_id"] if recs else args.run_id,
            "path": str(path) if path else None, "series": len(recs),
            "drifts": sum(1 for r in recs if r.get("is_drift")),
            "alerting": sum(1 for r in recs if not r.get("is_drift")
                            and r.get("alert_status") == "alerting"),
            "recovered": sum(1 for r in recs if r.get("alert_status") == "recovered"),
            "undefined": sum(1 for r in recs if r.get("verdict") == "undefined"),
            "busy_host": sum(1 for r in recs if r.get("verdict") == "busy_host"),
            "records": recs})
        return 0
    if path is None or len(records) == 0:
        say("drift: no aggregates yet (run the aggregation first: kafkalab aggregate)")
        return 0
    _say_records(records, path)
    return 0


def _say_records(records: Any, path: Path) -> None:
    """One line per flagged, alerting, recovered or busy-host series, then the counts."""
    from kafkalab.values import as_float

    def num(v: Any, fmt: str) -> str:
        f = as_float(v)
        return "n/a" if f is None else format(f, fmt)

    counts = {"drift": 0, "alerting": 0, "recovered": 0, "undefined": 0, "busy_host": 0}
    for _, r in records.iterrows():
        key = r["series_key"]
        if bool(r["is_drift"]):
            counts["drift"] += 1
            ci = (f"; CI [{num(r['latest_ci_low'], '.3f')}, {num(r['latest_ci_high'], '.3f')}] vs "
                  f"[{num(r['baseline_ci_low'], '.3f')}, {num(r['baseline_ci_high'], '.3f')}]"
                  if r["rule"] == "mad+ci" else "")
            say(f"DRIFT {key}: {num(r['baseline_value'], '.3f')} -> {num(r['latest_value'], '.3f')}"
                f" ({num(r['change_pct'], '+.1f')}%, confidence {num(r['confidence'], '.2f')}{ci})")
        elif r["alert_status"] == "alerting":
            counts["alerting"] += 1
            say(f"IN ALERT {key}: since run {r['alert_since_run_id']}, "
                f"{r['good_runs']} good run(s) so far")
        elif r["alert_status"] == "recovered":
            counts["recovered"] += 1
            say(f"RECOVERED {key}: after {r['good_runs']} consecutive good runs")
        if r["verdict"] == "undefined":
            counts["undefined"] += 1
        if r["verdict"] == "busy_host":
            counts["busy_host"] += 1
            say(f"BUSY HOST {key}: {r['note']}")
    say(f"drift: {counts['drift']} flag(s), {counts['alerting']} still in alert, "
        f"{counts['recovered']} recovered, {counts['undefined']} undefined (not checked), "
        f"{counts['busy_host']} measured on a busy host (not judged) in "
        f"{len(records)} series; records: {path}")


def cmd_drift_accept(args: argparse.Namespace) -> int:
    """``kafkalab drift accept SERIES|RUN``: accept the new level; prints what was accepted."""
    from kafkalab.alerts import accept_drift
    from kafkalab.store import LabData

    lab = LabData(getattr(args, "data_dir", None))
    accepted = accept_drift(lab.root, args.target, note=args.note)
    if getattr(args, "json", False):
        import dataclasses

        say_json({"accepted": [dataclasses.asdict(a) for a in accepted],
                  "path": str(lab.drift_acceptances_path())})
        return 0
    for a in accepted:
        say(f"accepted {a.series_key}: baseline from run {a.from_run_id} "
            f"(flags through run {a.through_run_id} no longer count)")
    say(f"acceptances: {lab.drift_acceptances_path()}")
    return 0


__all__ = ["add_parser", "cmd_drift", "cmd_drift_accept"]
