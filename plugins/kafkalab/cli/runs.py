"""``kafkalab runs``: every run of the data directory and its state."""

from __future__ import annotations

import argparse
from typing import Any

from kafkalab.cli.options import SubParsers, add_data_option, add_json_option
from kafkalab.cli.output import say, say_json


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``runs``."""
    pruns = sub.add_parser("runs", help="list the runs in the data directory and their state",
                           description="One line per run: id, state (complete, incomplete, "
                           "failed, running, or stale: running with no live owner), cells, "
                           "command, and its outputs that are stale after a cell was re-measured.")
    pruns.set_defaults(handler=cmd_runs)
    add_json_option(pruns, "print the runs as one JSON document")
    add_data_option(pruns, reads=True)


def cmd_runs(args: argparse.Namespace) -> int:
    """One line per run (or ``--json``)."""
    from kafkalab.kinds import kind_name
    from kafkalab.store import LabData

    lab = LabData(args.data_dir)
    docs = lab.manifests()
    if args.json:
        runs = [{"run_id": rid, "state": lab.run_state(rid),
                 "reason": lab.run_state_reason(rid) if lab.run_state(rid) == "stale" else None,
                 "kind": kind_name(doc), "started_at": doc.get("started_at"),
                 "cells": len(doc.get("cells") or []), "command": doc.get("command"),
                 "stale_outputs": doc.get("stale_outputs") or []} for rid, doc in docs.items()]
        say_json({"data_dir": str(lab.root), "runs": runs})
        return 0
    if not docs:
        say(f"no runs in {lab.root}")
        return 0
    for rid, doc in docs.items():
        state = lab.run_state(rid)
        cells = doc.get("cells") or []
        extra = f" ({lab.run_state_reason(rid)})" if state == "stale" else ""
        stale = doc.get("stale_outputs") or []
        if stale:
            extra += f"; stale: {', '.join(stale)}"
        say(f"{rid}  {state:<10} {len(cells):>3} cells  {doc.get('command', '')}{extra}")
    return 0


__all__ = ["add_parser", "cmd_runs"]
