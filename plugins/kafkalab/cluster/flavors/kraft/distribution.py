"""Apache Kafka 4.x as a dependency: its jars from Maven Central, pinned and verified.

``ensure_kafka(lab, version)`` is idempotent. It returns ``<lab>/kafka4/<version>`` (its
``libs/`` holds the broker, ``kafka-tools`` and a log4j2 binding) once that folder carries
the ``INSTALLED`` marker; otherwise it resolves the committed POM (``pom.xml`` beside this
module) with Maven (``dependency:copy-dependencies``, runtime scope, strict checksums)
into a temporary folder, checks every jar against the committed list ``jars-<version>.sha256``
(the same names, each with its sha256; nothing more, nothing less), and only then gives the
folder its final name. Maven keeps what it downloaded in ``~/.m2``, so once fetched it works
offline. ``python -m tools.lock_kafka VERSION`` writes a new version's list.

The version is a setting: :data:`DEFAULT_KAFKA_VERSION`, or ``$KAFKALAB_KAFKA_VERSION``
(read when asked, never at import) for a version matrix; a version without a committed list
is refused.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kafkalab.cluster.java import ensure_java
from kafkalab.errors import ClusterError, ConfigError
from kafkalab.progress import Progress, noop

__all__ = [
    "DEFAULT_KAFKA_VERSION",
    "KAFKA_VERSION_ENV",
    "MIN_JAVA",
    "POM",
    "ensure_kafka",
    "java_major",
    "kafka_home_path",
    "kafka_version",
    "lock_path",
    "locked_versions",
    "read_lock",
    "resolve_with_maven",
    "sha256_of",
    "verify_jars",
]

DEFAULT_KAFKA_VERSION = "4.4.0"
"""The Apache Kafka release the lab runs unless ``$KAFKALAB_KAFKA_VERSION`` says otherwise:
the newest 4.x Maven Central serves here."""

KAFKA_VERSION_ENV = "KAFKALAB_KAFKA_VERSION"
"""The environment variable that picks another pinned release (a version matrix)."""

MIN_JAVA = 17
"""Kafka 4.x brokers and tools need Java 17 (KIP-1013)."""

_HERE = Path(__file__).resolve().parent
POM = _HERE / "pom.xml"
"""The committed POM: the broker (``kafka_2.13``), ``kafka-tools``, the log4j2 binding."""

_MARKER = "INSTALLED"
_LOCK_LINE = re.compile(r"^([0-9a-f]{64})  (\S+\.jar)$")
_MVN_TIMEOUT_S = 900


def kafka_version() -> str:
    """The pinned Kafka 4.x release to run (``$KAFKALAB_KAFKA_VERSION`` or the default).

    Raises:
        ConfigError: a version without a committed jar list.
    """
    version = os.environ.get(KAFKA_VERSION_ENV, "").strip() or DEFAULT_KAFKA_VERSION
    if version not in locked_versions():
        raise ConfigError(
            f"${KAFKA_VERSION_ENV}={version}: no pinned jar list for Kafka {version} (pinned: "
            f"{', '.join(locked_versions())}); write one with `python -m tools.lock_kafka {version}`")
    return version


@contextmanager
def pinned_version(version: str) -> Iterator[None]:
    """Within the block, :func:`kafka_version` is ``version`` (``$KAFKALAB_KAFKA_VERSION`` set,
    restored after): the version matrix starts each version's clusters so.

    Raises:
        ConfigError: a version without a committed jar list.
    """
    before = os.environ.get(KAFKA_VERSION_ENV)
    os.environ[KAFKA_VERSION_ENV] = version
    try:
        kafka_version()  # refuses an unpinned version before anything starts
        yield
    finally:
        if before is None:
            os.environ.pop(KAFKA_VERSION_ENV, None)
        else:
            os.environ[KAFKA_VERSION_ENV] = before


def lock_path(version: str) -> Path:
    """The committed list of the jars of Kafka ``version`` with their sha256."""
    return _HERE / f"jars-{version}.sha256"


def locked_versions() -> tuple[str, ...]:
    """Every Kafka version with a committed jar list, oldest first."""
    found = [p.name[len("jars-"):-len(".sha256")] for p in _HERE.glob("jars-*.sha256")]
    return tuple(sorted(found, key=lambda v: tuple(int(x) for x in re.findall(r"\d+", v))))


def read_lock(version: str) -> dict[str, str]:
    """``{jar file name: sha256}`` of Kafka ``version``'s committed list.

    Raises:
        ConfigError: no list, or a line that is not ``<sha256>  <name>.jar``.
    """
    path = lock_path(version)
    if not path.is_file():
        raise ConfigError(f"no pinned jar list for Kafka {version} at {path}")
    out: dict[str, str] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = _LOCK_LINE.match(line.strip())
        if m is None:
            raise ConfigError(f"{path}:{n}: expected '<sha256>  <name>.jar', got {line!r}")
        out[m.group(2)] = m.group(1)
    return out


def kafka_home_path(lab: Path | str, version: str) -> Path:
    """``<lab>/kafka4/<version>``: where Kafka ``version`` is installed (``libs/``)."""
    return Path(lab) / "kafka4" / version


def sha256_of(path: Path) -> str:
    """The hex sha256 of a file."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_jars(libs: Path, expected: dict[str, str]) -> None:
    """Check that ``libs`` holds exactly the jars of ``expected``, each with its sha256.

    Raises:
        ClusterError: one line naming the first missing, unexpected or altered jar.
    """
    present = {p.name for p in libs.glob("*.jar")}
    missing = sorted(set(expected) - present)
    extra = sorted(present - set(expected))
    if missing:
        raise ClusterError(f"{libs}: {len(missing)} pinned jar(s) missing, e.g. {missing[0]}")
    if extra:
        raise ClusterError(f"{libs}: {len(extra)} jar(s) not in the pinned list, e.g. {extra[0]}")
    for name, digest in sorted(expected.items()):
        actual = sha256_of(libs / name)
        if actual != digest:
            raise ClusterError(f"checksum mismatch for {name}: sha256 {actual[:12]}..., pinned "
                               f"{digest[:12]}...; a corrupted download or a changed artifact")


def java_major(java: str) -> int:
    """The major version of the ``java`` executable (``17`` for ``17.0.15``).

    Raises:
        ClusterError: it does not run or does not say its version.
    """
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClusterError(f"cannot run {java} -version ({type(exc).__name__})") from None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
    if m is None:
        raise ClusterError(f"{java} -version did not say its version")
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def _check_java() -> str:
    java = ensure_java()
    major = java_major(java)
    if major < MIN_JAVA:
        raise ClusterError(f"Java {major} is too old for Apache Kafka 4.x (needs {MIN_JAVA}+): "
                           "install openjdk-17 or set JAVA_HOME")
    return java


def resolve_with_maven(version: str, dest: Path, progress: Progress = noop) -> None:
    """Copy Kafka ``version``'s runtime jars into ``dest`` with Maven over :data:`POM`.

    Raises:
        ClusterError: no ``mvn``, or Maven failed (its last ERROR line, e.g. an unreachable
            repository or an artifact Maven Central does not serve).
    """
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ClusterError(f"mvn not found: Maven is needed once to fetch Apache Kafka {version} "
                           "from Maven Central; install it (apt-get install maven) or run "
                           "`make setup`")
    progress(f"resolving Apache Kafka {version} (broker, tools, log4j2) from Maven Central "
             "with Maven (~55 MB the first time)")
    cmd = [mvn, "-B", "-q", "-C", "-f", str(POM), "dependency:copy-dependencies",
           "-DincludeScope=runtime", f"-Dkafka.version={version}", f"-DoutputDirectory={dest}"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_MVN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ClusterError(f"Maven did not resolve Apache Kafka {version} within "
                           f"{_MVN_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines()
                 if "ERROR" in ln and ln.strip() not in ("[ERROR]", "")]
        why = re.sub(r"\x1b\[[0-9;]*m", "", lines[0] if lines else "no output").strip()
        raise ClusterError(f"Maven could not fetch Apache Kafka {version} (offline, or an "
                           f"artifact missing?): {why[:300]}")


def ensure_kafka(lab: Path | str, version: str | None = None,
                 progress: Progress | None = None) -> Path:
    """The installation of Kafka ``version`` (default :func:`kafka_version`) under ``lab``,
    fetched and verified first when it is not there yet (see the module doc).

    Raises:
        ConfigError: a version without a committed jar list.
        ClusterError: Java older than 17, no Maven, Maven failed, or a jar is missing,
            unexpected or altered (nothing half-installed is left under the final name).
    """
    progress = progress or noop
    version = version or kafka_version()
    expected = read_lock(version)
    home = kafka_home_path(lab, version)
    if (home / _MARKER).is_file():
        return home
    _check_java()
    home.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{version}.", dir=home.parent))
    try:
        resolve_with_maven(version, tmp / "libs", progress)
        verify_jars(tmp / "libs", expected)
        (tmp / _MARKER).write_text(f"Apache Kafka {version}: {len(expected)} jars, sha256 "
                                   f"as in {lock_path(version).name}\n")
        if home.exists():  # a half-made earlier attempt without the marker
            shutil.rmtree(home)
        os.replace(tmp, home)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    progress(f"Apache Kafka {version}: {len(expected)} jars verified in {home / 'libs'}")
    return home
