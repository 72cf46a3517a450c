"""``python -m tools.lock_kafka VERSION``: pin the jars of an Apache Kafka 4.x release.

Resolves the ``kraft`` flavor's committed POM for ``VERSION`` with Maven (strict checksums
against Maven Central) into a temporary folder and writes
``plugins/kafkalab/cluster/flavors/kraft/jars-VERSION.sha256``: one ``<sha256>  <jar>`` line
per jar, sorted by name. Review the list's diff before committing it: from then on
``make setup`` installs exactly those bytes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from kafkalab.cluster.flavors.kraft.distribution import lock_path, resolve_with_maven, sha256_of
from kafkalab.errors import LabError


def main(argv: list[str] | None = None) -> int:
    """Write the jar list of the version named on the command line; the exit code."""
    parser = argparse.ArgumentParser(prog="python -m tools.lock_kafka", description=__doc__)
    parser.add_argument("version", help="an Apache Kafka 4.x release, e.g. 4.4.0")
    args = parser.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="lock-kafka-") as tmp:
            libs = Path(tmp) / "libs"
            resolve_with_maven(args.version, libs, lambda m: print(m, flush=True))
            jars = sorted(libs.glob("*.jar"))
            lines = [f"{sha256_of(p)}  {p.name}" for p in jars]
    except LabError as exc:
        print(f"lock_kafka: error: {exc}", file=sys.stderr)
        return exc.exit_code
    out = lock_path(args.version)
    out.write_text(f"# Apache Kafka {args.version}: the jars `make setup` installs "
                   "(python -m tools.lock_kafka)\n" + "\n".join(lines) + "\n")
    print(f"wrote {out} ({len(lines)} jars)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
