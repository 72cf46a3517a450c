"""``make clean-data``: delete the lab's data directory, after saying what is in it and
asking.

The data directory (:func:`kafkalab.paths.data_dir`: ``lab-data/`` or
``$KAFKALAB_DATA_DIR``) holds every measurement, aggregate, report, drift acceptance and the
alert state; nothing else of the lab's is in it, and ``make clean`` (caches and services
only) never touches it. This asks for the word ``delete`` on a terminal; without a terminal
it refuses unless ``--yes`` (``make clean-data CONFIRM=yes``) is given.

Exit codes: 0 deleted (or nothing to delete), 2 refused or not confirmed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path


def _describe(root: Path) -> str:
    from kafkalab.store import LabData

    lab = LabData(root)
    runs = len(list(lab.runs_dir.glob("*.json"))) if lab.runs_dir.is_dir() else 0
    size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    extra = [what for what, path in (("drift acceptances", lab.drift_acceptances_path()),
                                     ("the alert state", lab.alert_state_path()))
             if path.exists()]
    return (f"{root}: {runs} run(s), {size / 2**20:.1f} MiB"
            + (f", {' and '.join(extra)}" if extra else ""))


def main(argv: list[str] | None = None) -> int:
    from kafkalab.paths import data_dir

    parser = argparse.ArgumentParser(prog="make clean-data", description=__doc__.split("\n")[0])
    parser.add_argument("--yes", action="store_true", help="do not ask (for scripts)")
    args = parser.parse_args(argv)
    root = data_dir()
    if not root.exists():
        print(f"{root}: nothing to delete")
        return 0
    if not root.is_dir() or root.is_symlink():
        print(f"make clean-data: {root} is not a directory of the lab's; refusing", file=sys.stderr)
        return 2
    print(f"make clean-data deletes every measurement in {_describe(root)}")
    if not args.yes:
        if not sys.stdin.isatty():
            print("make clean-data: not confirmed (no terminal): run `make clean-data "
                  "CONFIRM=yes` to delete it", file=sys.stderr)
            return 2
        if input("type 'delete' to delete it: ").strip() != "delete":
            print("make clean-data: not confirmed; nothing deleted", file=sys.stderr)
            return 2
    shutil.rmtree(root)
    print(f"{root}: deleted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
