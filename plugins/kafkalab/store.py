"""The lab data directory: every path in it, every read of it, and the one atomic writer.

The schema of each file is documented in ``docs/metrics-schema.md`` (samples, manifests,
fragments), ``docs/aggregates-schema.md`` (aggregates, validation) and
``docs/drift-and-alerts.md`` (drift records, alert state); this module is the one place that
knows where those files live. Layout under the data directory (:func:`kafkalab.paths.data_dir`)::

    samples/run_date=<YYYY-MM-DD>/run_id=<id>/part-<scenario>-<payload>-<profile>.parquet
    load/run_date=<YYYY-MM-DD>/run_id=<id>/cell=<cell>/      a load run's cells
    faults/run_date=<YYYY-MM-DD>/run_id=<id>/trial=<trial>/  a fault run's trials
    startup/run_date=<YYYY-MM-DD>/run_id=<id>/  a start-up run: probes.parquet, run.json
    runs/<id>.json                          run manifest
    runs/<id>/cells/<scenario>-<payload>-<profile>.json   one fragment per measured cell
    runs/<id>/                              scratch of the run's scenarios (tool settings, logs)
    aggregates/run_id=<id>/part-*.parquet   written by spark_jobs/aggregate_metrics.py
    aggregates/load/run_id=<id>/, aggregates/faults/run_id=<id>/   the other kinds' tables
    validation/<id>.json, validation/<id>.html, validation/docs/   spark_jobs/validate_metrics.py
    validation/<id>-load.json, validation/<id>-faults.json   the other kinds' results
    drift/run_id=<id>/drift.parquet         drift records
    alerts/state.json                       what was already announced
    reports/index.html, reports/<id>/index.html   the trend report

Every file the library writes goes through :func:`atomic_write`: a temporary file in the
same directory, fsynced, renamed over the target, and the directory fsynced; on any failure
the temporary file is removed and the old file (if any) is left as it was. A reader never
sees half a file. The Spark jobs receive these paths as arguments and write Parquet with
Spark's own committer, and the validation JSON with this module's :func:`atomic_write`: at
module level this file imports only the standard library, so it ships to Spark nodes that
lack the package as a lone ``--py-files`` file (``kafkalab.spark.submit``); keep it so.

Where a kind of run (:mod:`kafkalab.kinds`: latency, load, faults) keeps its measured
files, aggregates and validation result is that kind's entry; the methods that take a
``kind`` ask it (imported lazily: this file must stay a lone-file module for Spark).

No I/O happens at import time or in :class:`LabData`'s constructor.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import secrets
import socket
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    import pandas as pd

    from kafkalab.kinds import RunKind

log = logging.getLogger(__name__)

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._=-]")

SAMPLES_DIR = "samples"
RUNS_DIR = "runs"
AGGREGATES_DIR = "aggregates"
VALIDATION_DIR = "validation"
DRIFT_DIR = "drift"
ALERTS_DIR = "alerts"
REPORTS_DIR = "reports"
MATRICES_DIR = "versions"

DERIVED_OUTPUTS: tuple[str, ...] = ("aggregates", "validation", "drift", "report")
"""A run's outputs computed from its samples (``stale_outputs`` in the manifest)."""

START_LOCK_WAIT_S = 30.0
"""How long a run that starts waits for another process's lock of its manifest."""

STALE_AFTER_S = 6 * 3600.0
"""A ``running`` run with no write for this long has no live owner: it is stale."""

"""The top-level folders of a data directory, for callers that address it by URI
(``s3a://bucket/lab/samples``) rather than through :class:`LabData`."""


# --------------------------------------------------------------------------- atomic writes


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], mode: int | None = None) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` through, appearing whole or not at all.

    The file is a temporary one in the same directory; when the block ends normally it is
    fsynced, renamed over ``path``, and the directory is fsynced. On any failure (disk full,
    interrupt, an exception in the block) the temporary file is removed and the exception
    propagates; ``path`` is untouched. For data produced in pieces (a Parquet writer).
    Missing parent directories are created.

    ``mode``: the file's permission bits (e.g. ``0o644`` for a file another user's process
    reads), set on the temporary file before the rename; default None keeps the temporary
    file's 0600 (owner only).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def atomic_write(path: str | os.PathLike[str], data: bytes | str,
                 mode: int | None = None) -> Path:
    """Write ``data`` to ``path`` so that a reader sees the old file or the whole new one
    (:func:`atomic_file`); ``str`` data is encoded as UTF-8. ``mode``: the file's permission
    bits (default None: 0600, owner only). Returns ``path``."""
    with atomic_file(path, mode) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)


def atomic_write_json(path: str | os.PathLike[str], doc: Any, *, sort_keys: bool = True) -> Path:
    """:func:`atomic_write` of ``doc`` as indented JSON with a final newline.

    Values JSON does not know (paths, datetimes) are written as strings; NaN and infinities
    are refused (``ValueError``): sanitise with :func:`kafkalab.values.jsonable` first.
    """
    text = json.dumps(doc, indent=2, sort_keys=sort_keys, allow_nan=False, default=str)
    return atomic_write(path, text + "\n")


def private_token(path: str | os.PathLike[str], nbytes: int = 16) -> str:
    """The secret kept in ``path`` (one line), made once: ``nbytes`` random bytes as hex
    (safe in a URL, a config line and a command line), written with :func:`atomic_write`
    (mode 0600). A file that is missing, unreadable or empty gets a new secret."""
    with contextlib.suppress(OSError):
        kept = Path(path).read_text().strip()
        if kept:
            return kept
    fresh = secrets.token_hex(nbytes)
    atomic_write(path, fresh + "\n")
    return fresh


# --------------------------------------------------------------------------- locks


class LockBusy(TimeoutError):
    """Another process holds the lock (:func:`locked`) longer than the caller would wait."""


_LOCK_POLL_S = 0.05
"""How often :func:`locked` retries a lock another process holds: ``flock`` has no timeout
of its own (a blocking call would wait forever, and ``SIGALRM`` is not for a library called
from any thread)."""

_LOCKS_GUARD = threading.Lock()
_LOCKS: dict[str, tuple[threading.RLock, list[int]]] = {}
"""Per lock file: a re-entrant lock for this process's threads, and ``[fd, depth]``."""


def lock_path(path: str | os.PathLike[str]) -> Path:
    """The lock file of ``path``: the hidden ``.<name>.lock`` beside it."""
    p = Path(path)
    return p.with_name(f".{p.name}.lock")


@contextlib.contextmanager
def locked(path: str | os.PathLike[str], *, wait_s: float = 120.0) -> Iterator[None]:
    """Hold the exclusive lock of ``path`` (an advisory ``flock`` on :func:`lock_path`) for a
    read-modify-write of it: a run's manifest, the alert state, the drift acceptances.

    Re-entrant within a process (a holder may call code that locks the same path again).
    ``wait_s``: how long to wait for another process's lock (0: do not wait).

    Raises:
        LockBusy: another process still holds it after ``wait_s``.
    """
    key = str(lock_path(path).absolute())
    with _LOCKS_GUARD:
        rlock, state = _LOCKS.setdefault(key, (threading.RLock(), [-1, 0]))
    with rlock:
        if state[1] == 0:
            Path(key).parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(key, os.O_RDWR | os.O_CREAT, 0o600)
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        os.close(fd)
                        raise LockBusy(f"{path} is locked by another process "
                                       f"(lock file {key})") from None
                    time.sleep(_LOCK_POLL_S)
            state[0] = fd
        state[1] += 1
        try:
            yield
        finally:
            state[1] -= 1
            if state[1] == 0:
                fd, state[0] = state[0], -1
                os.close(fd)  # closing the descriptor releases the flock


def read_json(path: str | os.PathLike[str]) -> Any:
    """The parsed JSON of ``path``, or None when the file does not exist.

    Raises:
        OSError, ValueError: the file exists but cannot be read or parsed.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return json.loads(text)


def safe_name(name: str) -> str:
    """A file-system-safe form of a run id or cell name (one path component)."""
    return _UNSAFE_NAME.sub("_", name) or "_"


# --------------------------------------------------------------------------- the data dir


class LabData:
    """One lab data directory: where each file lives, and how it is read and written.

    Args:
        root: the data directory (default :func:`kafkalab.paths.data_dir`). Nothing is
            created until something is written.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        if root is None:
            from kafkalab.paths import data_dir

            root = data_dir()
        self.root = Path(root).expanduser().absolute()

    def __repr__(self) -> str:
        return f"LabData({str(self.root)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LabData) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    # -- folders ----------------------------------------------------------------------

    @property
    def samples_dir(self) -> Path:
        """``samples/``: raw samples, Hive-partitioned by ``run_date`` and ``run_id``."""
        return self.root / SAMPLES_DIR

    @property
    def runs_dir(self) -> Path:
        """``runs/``: manifests, cell fragments and per-run scratch."""
        return self.root / RUNS_DIR

    @property
    def aggregates_dir(self) -> Path:
        """``aggregates/``: one Parquet partition per run (written by the Spark job)."""
        return self.root / AGGREGATES_DIR

    @property
    def validation_dir(self) -> Path:
        """``validation/``: Great Expectations results per run, and Data Docs."""
        return self.root / VALIDATION_DIR

    @property
    def validation_docs_dir(self) -> Path:
        """``validation/docs/``: the GX Data Docs site."""
        return self.validation_dir / "docs"

    # -- the folders of a kind of run ---------------------------------------------------

    def measured_dir(self, kind: RunKind | str) -> Path:
        """The folder of a kind's measured files: ``samples/`` (latency), ``load/``,
        ``faults/``, ``startup/`` (partitioned ``run_date=<day>/run_id=<id>/``)."""
        return self.root / _kind(kind).measured_dir

    def kind_aggregates_dir(self, kind: RunKind | str) -> Path:
        """The folder of a kind's aggregates: ``aggregates/`` (latency), ``aggregates/load/``,
        ``aggregates/faults/``."""
        sub = _kind(kind).aggregates_subdir
        return self.aggregates_dir / sub if sub else self.aggregates_dir

    def run_aggregates_dir(self, run_id: str, kind: RunKind | str | None = None) -> Path:
        """``<kind's aggregates>/run_id=<run_id>``: one run's aggregates (latency when no
        ``kind`` is given)."""
        return self.kind_aggregates_dir(kind or "latency") / f"run_id={run_id}"

    def run_aggregate_ids(self, kind: RunKind | str) -> list[str]:
        """The runs with aggregates of ``kind`` (``run_id=<id>/`` folders), sorted."""
        root = self.kind_aggregates_dir(kind)
        if not root.is_dir():
            return []
        return sorted(p.name.split("=", 1)[1] for p in root.iterdir()
                      if p.is_dir() and p.name.startswith("run_id="))

    @property
    def drift_dir(self) -> Path:
        """``drift/``: drift records, one partition per run."""
        return self.root / DRIFT_DIR

    @property
    def alerts_dir(self) -> Path:
        """``alerts/``: the alert de-duplication state."""
        return self.root / ALERTS_DIR

    @property
    def reports_dir(self) -> Path:
        """``reports/``: the static trend report."""
        return self.root / REPORTS_DIR

    @property
    def matrices_dir(self) -> Path:
        """``versions/``: the version matrices' files (:mod:`kafkalab.versions.matrix`)."""
        return self.root / MATRICES_DIR

    def matrix_path(self, matrix_id: str) -> Path:
        """``versions/<matrix_id>.json``."""
        return self.matrices_dir / f"{matrix_id}.json"

    def matrix_verdict_path(self, matrix_id: str) -> Path:
        """``versions/<matrix_id>.verdict.json``: the matrix's last verdict."""
        return self.matrices_dir / f"{matrix_id}.verdict.json"

    def matrix_ids(self) -> list[str]:
        """Every version matrix with a matrix file, oldest first (ids sort by time)."""
        if not self.matrices_dir.is_dir():
            return []
        return sorted(p.stem for p in self.matrices_dir.glob("*.json")
                      if not p.name.endswith(".verdict.json"))

    # -- run manifests -----------------------------------------------------------------

    def manifest_path(self, run_id: str) -> Path:
        """``runs/<run_id>.json``."""
        return self.runs_dir / f"{run_id}.json"

    def manifest(self, run_id: str) -> dict[str, Any] | None:
        """A run's manifest, or None when the run does not exist or its file is unreadable."""
        path = self.manifest_path(run_id)
        try:
            doc = read_json(path)
        except (OSError, ValueError) as exc:
            log.warning("run manifest %s unreadable (%s)", path, exc)
            return None
        return doc if isinstance(doc, dict) else None

    def manifests(self) -> dict[str, dict[str, Any]]:
        """Every run manifest by run id (sorted by file name; unreadable files are logged
        and left out)."""
        out: dict[str, dict[str, Any]] = {}
        if not self.runs_dir.is_dir():
            return out
        for f in sorted(self.runs_dir.glob("*.json")):
            try:
                doc = read_json(f)
            except (OSError, ValueError) as exc:
                log.warning("run manifest %s unreadable (%s); skipped", f, exc)
                continue
            if isinstance(doc, dict):
                out[str(doc.get("run_id") or f.stem)] = doc
        return out

    def write_manifest(self, doc: Mapping[str, Any]) -> Path:
        """Write (replace) the manifest of ``doc["run_id"]`` atomically."""
        return atomic_write_json(self.manifest_path(str(doc["run_id"])), dict(doc))

    def run_work_dir(self, run_id: str) -> Path:
        """``runs/<run_id>/``: scratch of the run's scenarios (tool settings and printouts)."""
        return self.runs_dir / run_id

    # -- cells: samples and fragments ----------------------------------------------------

    @staticmethod
    def cell_file_name(scenario: str, payload: str, profile: str) -> str:
        """``part-<scenario>-<payload>-<profile>.parquet``, each part :func:`safe_name`d (a
        profile given as a YAML path holds slashes)."""
        return f"part-{safe_name(scenario)}-{safe_name(payload)}-{safe_name(profile)}.parquet"

    def cell_file(self, run_date: str, run_id: str, scenario: str, payload: str,
                  profile: str) -> Path:
        """Where one cell's raw samples live."""
        return (self.samples_dir / f"run_date={run_date}" / f"run_id={run_id}"
                / self.cell_file_name(scenario, payload, profile))

    def run_sample_files(self, run_id: str) -> list[Path]:
        """Every samples file of ``run_id`` (under any run date)."""
        return sorted(self.samples_dir.glob(f"run_date=*/run_id={run_id}/part-*.parquet"))

    def clear_run_samples(self, run_id: str) -> None:
        """Remove a run's samples files (every run date)."""
        for f in self.run_sample_files(run_id):
            f.unlink(missing_ok=True)

    def cell_fragments_dir(self, run_id: str) -> Path:
        """``runs/<run_id>/cells/``."""
        return self.run_work_dir(run_id) / "cells"

    def cell_fragment_path(self, run_id: str, scenario: str, payload: str, profile: str) -> Path:
        """``runs/<run_id>/cells/<scenario>-<payload>-<profile>.json`` (each part
        :func:`safe_name`d)."""
        return (self.cell_fragments_dir(run_id)
                / f"{safe_name(scenario)}-{safe_name(payload)}-{safe_name(profile)}.json")

    def write_cell_fragment(self, run_id: str, fragment: Mapping[str, Any]) -> Path:
        """Write one cell's fragment (``scenario``, ``payload``, ``profile`` and its outcome)."""
        path = self.cell_fragment_path(run_id, str(fragment["scenario"]),
                                       str(fragment["payload"]), str(fragment["profile"]))
        return atomic_write_json(path, dict(fragment))

    def cell_fragment(self, run_id: str, scenario: str, payload: str,
                      profile: str) -> dict[str, Any] | None:
        """One cell's fragment, or None when the cell was never measured in this run.

        Raises:
            OSError, ValueError: the fragment exists but is unreadable.
        """
        path = self.cell_fragment_path(run_id, scenario, payload, profile)
        if not path.exists():
            return None
        doc = read_json(path)
        return doc if isinstance(doc, dict) else None

    def cell_fragments(self, run_id: str) -> list[dict[str, Any]]:
        """Every cell fragment of ``run_id``, sorted by file name.

        Raises:
            OSError, ValueError: a fragment exists but is unreadable (a run is never closed
                over a fragment it cannot read).
        """
        out = []
        for f in sorted(self.cell_fragments_dir(run_id).glob("*.json")):
            doc = read_json(f)
            if isinstance(doc, dict):
                out.append(doc)
        return out

    def clear_cell_fragments(self, run_id: str) -> None:
        """Remove the cell fragments of ``run_id``."""
        for f in self.cell_fragments_dir(run_id).glob("*.json"):
            f.unlink(missing_ok=True)

    # -- validation ----------------------------------------------------------------------

    def validation_path(self, run_id: str, kind: RunKind | str | None = None) -> Path:
        """``validation/<run_id><suffix>.json``: the GX result document of a run of ``kind``
        (suffix ``-load``, ``-faults``; none for latency, the default)."""
        suffix = _kind(kind).validation_suffix if kind is not None else ""
        return self.validation_dir / f"{run_id}{suffix}.json"

    def validation_html_path(self, run_id: str, kind: RunKind | str | None = None) -> Path:
        """``validation/<run_id><suffix>.html``: its offline HTML summary."""
        return self.validation_path(run_id, kind).with_suffix(".html")

    def validation(self, run_id: str, kind: RunKind | str | None = None) -> dict[str, Any] | None:
        """A run's validation result (:meth:`validation_path`; for a kind with a suffix, the
        plain ``validation/<run_id>.json`` when its own file is absent, as runs validated
        before the suffixes were); None when there is none yet; an unreadable file is
        ``{"success": None, "failed": [], "unreadable": True}`` (never mistaken for a pass)."""
        if kind is not None and _kind(kind).validation_suffix:
            own = self._validation_doc(self.validation_path(run_id, kind))
            return own if own is not None else self._validation_doc(self.validation_path(run_id))
        return self._validation_doc(self.validation_path(run_id))

    @staticmethod
    def _validation_doc(path: Path) -> dict[str, Any] | None:
        try:
            doc = read_json(path)
        except (OSError, ValueError):
            return {"success": None, "failed": [], "unreadable": True}
        if doc is None:
            return None
        return doc if isinstance(doc, dict) else {"success": None, "failed": [], "unreadable": True}

    # -- drift -----------------------------------------------------------------------------

    def drift_path(self, run_id: str) -> Path:
        """``drift/run_id=<run_id>/drift.parquet``."""
        return self.drift_dir / f"run_id={run_id}" / "drift.parquet"

    def drift(self, run_id: str) -> pd.DataFrame | None:
        """A run's stored drift records as written (None when absent); the columns are
        normalised by :func:`kafkalab.drift.read_drift`."""
        import pyarrow.parquet as pq

        path = self.drift_path(run_id)
        if not path.exists():
            return None
        return pq.read_table(path).to_pandas()

    # -- alerts -----------------------------------------------------------------------------

    def alert_state_path(self) -> Path:
        """``alerts/state.json``."""
        return self.alerts_dir / "state.json"

    def alert_state(self) -> dict[str, Any] | None:
        """The alert state as stored; None when absent or unreadable (logged)."""
        path = self.alert_state_path()
        try:
            doc = read_json(path)
        except (OSError, ValueError) as exc:
            log.warning("alert state %s unreadable (%s)", path, exc)
            return None
        return doc if isinstance(doc, dict) else None

    def write_alert_state(self, state: Mapping[str, Any]) -> Path:
        """Write the alert state atomically."""
        return atomic_write_json(self.alert_state_path(), dict(state))

    # -- reports -----------------------------------------------------------------------------

    def report_index_path(self, out_dir: str | os.PathLike[str] | None = None) -> Path:
        """``reports/index.html`` (or ``<out_dir>/index.html``): the overview page."""
        return Path(out_dir) / "index.html" if out_dir is not None else self.reports_dir / "index.html"

    def report_page_dir(self, run_id: str, out_dir: str | os.PathLike[str] | None = None) -> Path:
        """``reports/<run_id>/``: the folder of one run's page (a file-system-safe name)."""
        base = Path(out_dir) if out_dir is not None else self.reports_dir
        return base / safe_name(run_id)

    def reports(self) -> list[Path]:
        """The run pages written so far (``reports/*/index.html``), sorted."""
        return sorted(self.reports_dir.glob("*/index.html"))

    # -- run state: stale outputs and stale runs -------------------------------------------

    def derived_outputs(self, run_id: str, kind: RunKind | str | None = None) -> list[str]:
        """Which of a run's derived outputs exist (:data:`DERIVED_OUTPUTS` order): the ones a
        re-measured cell makes stale. ``kind`` (default: the manifest's,
        :func:`kafkalab.kinds.kind_of`) says where its aggregates and validation are."""
        from kafkalab.kinds import kind_of

        k = _kind(kind) if kind is not None else kind_of(self.manifest(run_id))
        present = {
            "aggregates": self.run_aggregates_dir(run_id, k).is_dir(),
            "validation": self.validation_path(run_id, k).exists(),
            "drift": self.drift_path(run_id).exists(),
            "report": (self.report_page_dir(run_id) / "index.html").exists(),
        }
        return [name for name in DERIVED_OUTPUTS if present[name]]

    def output_files(self, run_id: str, output: str,
                     kind: RunKind | str | None = None) -> list[Path]:
        """The files that hold one of a run's derived outputs (:data:`DERIVED_OUTPUTS`),
        those that exist: its aggregates' Parquet files, its validation result, its drift
        records, its report page. ``kind`` (default: the manifest's) says where its
        aggregates and validation are."""
        from kafkalab.kinds import kind_of

        k = _kind(kind) if kind is not None else kind_of(self.manifest(run_id))
        if output == "aggregates":
            d = self.run_aggregates_dir(run_id, k)
            return sorted(p for p in d.rglob("*.parquet") if p.is_file()) if d.is_dir() else []
        path = {"validation": self.validation_path(run_id, k),
                "drift": self.drift_path(run_id),
                "report": self.report_page_dir(run_id) / "index.html"}.get(output)
        return [path] if path is not None and path.is_file() else []

    def clear_stale(self, run_id: str, output: str) -> bool:
        """Remove ``output`` from the run's ``stale_outputs`` once it was recomputed; returns
        whether the manifest changed."""
        with self.run_lock(run_id):
            doc = self.manifest(run_id)
            if doc is None or output not in (doc.get("stale_outputs") or []):
                return False
            doc["stale_outputs"] = [o for o in doc["stale_outputs"] if o != output]
            self.write_manifest(doc)
            return True

    @contextlib.contextmanager
    def run_lock(self, run_id: str | None, *, wait_s: float = 120.0) -> Iterator[None]:
        """Hold the lock of a run's manifest (:func:`locked`) for a read-modify-write of it,
        or while a run starts (the check that nobody else measures it, then its manifest).
        ``run_id`` None (a new run, no id yet): nothing to lock.

        Raises:
            LockBusy: another process holds it after ``wait_s``.
        """
        if run_id is None:
            yield
            return
        with locked(self.manifest_path(run_id), wait_s=wait_s):
            yield

    @contextlib.contextmanager
    def starting(self, run_id: str | None, owner_kind: str) -> Iterator[None]:
        """While a run starts or is re-opened (the block reads the earlier manifest and
        writes the new one): the run's lock held, and nobody else measuring it
        (:meth:`refuse_live_owner`).

        Raises:
            ConfigError: ``run_id`` is not a safe run id
                (:func:`kafkalab.run_ids.run_id_problem`), another process holds the run's
                lock for :data:`START_LOCK_WAIT_S`, or measures the run.
        """
        from kafkalab.errors import ConfigError  # package side only (never on a Spark node)
        from kafkalab.run_ids import run_id_problem

        problem = run_id_problem(run_id) if run_id is not None else None
        if problem:
            raise ConfigError(problem)
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(self.run_lock(run_id, wait_s=START_LOCK_WAIT_S))
            except LockBusy:
                raise ConfigError(f"run {run_id} is being started or closed by another process "
                                  "right now; try again in a moment") from None
            self.refuse_live_owner(run_id, owner_kind)
            yield

    def refuse_live_owner(self, run_id: str | None, owner_kind: str) -> None:
        """Refuse to start or re-open ``run_id`` while another process measures it: its
        manifest is ``running`` and its owner is alive (:meth:`run_state`). An Airflow run
        re-opening an Airflow-owned run is let through: that is Airflow retrying or clearing
        its own tasks, which its pools and ``max_active_runs`` already serialise; so is the
        owning process itself.

        Raises:
            ConfigError: the run has a live owner (one line: who, and what to do).
        """
        from kafkalab.errors import ConfigError  # package side only (never on a Spark node)

        if run_id is None:
            return
        doc = self.manifest(run_id)
        if doc is None or self.run_state(run_id) != "running":
            return
        owner = doc.get("owner") or {}
        if owner.get("kind") == "airflow" and owner_kind == "airflow":
            return
        if owner.get("pid") == os.getpid() and owner.get("host") == socket.gethostname():
            return  # this process re-opens its own run (kafkalab maxrate's steps)
        raise ConfigError(
            f"run {run_id} is being measured by {owner.get('kind') or 'a'} process "
            f"{owner.get('pid')} on {owner.get('host')}: wait for it to end (or, if that process "
            f"is gone, until the run turns stale after {STALE_AFTER_S / 3600:g} h without a "
            "write), or use a new --run-id")

    def last_activity(self, run_id: str) -> float | None:
        """When the run last wrote anything (manifest, fragment or samples file), as a POSIX
        time; None when nothing exists. The run's heartbeat."""
        paths = [self.manifest_path(run_id), *self.cell_fragments_dir(run_id).glob("*.json"),
                 *self.run_sample_files(run_id)]
        times = []
        for p in paths:
            try:
                times.append(p.stat().st_mtime)
            except OSError:
                continue
        return max(times) if times else None

    def run_state(self, run_id: str, now: float | None = None) -> str:
        """``complete``, ``incomplete``, ``failed``, ``running`` or ``stale`` (a run still
        ``running`` whose owner is gone: a ``cli`` owner on this host whose process is dead,
        or no write for :data:`STALE_AFTER_S`); ``missing`` when there is no manifest."""
        return self._state(run_id, now)[0]

    def run_state_reason(self, run_id: str, now: float | None = None) -> str:
        """Why :meth:`run_state` says what it says, in a few words."""
        return self._state(run_id, now)[1]

    def stale_runs(self, now: float | None = None) -> list[str]:
        """The ids of every stale run."""
        return [rid for rid, doc in self.manifests().items()
                if doc.get("status") == "running" and self.run_state(rid, now) == "stale"]

    def _state(self, run_id: str, now: float | None) -> tuple[str, str]:
        from kafkalab.procs import pid_alive  # package side only (never on a Spark node)

        doc = self.manifest(run_id)
        if doc is None:
            return "missing", "no manifest"
        status = str(doc.get("status") or "running")
        if status != "running":
            return status, f"closed {status}"
        owner = doc.get("owner") or {}
        pid = owner.get("pid")
        if (owner.get("kind") == "cli" and owner.get("host") == socket.gethostname()
                and isinstance(pid, int) and not pid_alive(pid)):
            return "stale", f"running, but its process {pid} on this host is gone"
        last = self.last_activity(run_id)
        idle_s = (now if now is not None else time.time()) - last if last is not None else None
        if idle_s is not None and idle_s > STALE_AFTER_S:
            return "stale", f"running, but nothing was written for {idle_s / 3600:.1f} h"
        return "running", "running"

    # -- drift acceptances -------------------------------------------------------------------

    def drift_acceptances_path(self) -> Path:
        """``drift/acceptances.json``: the drift levels a person accepted
        (``kafkalab drift accept``; schema in ``docs/drift-and-alerts.md``)."""
        return self.drift_dir / "acceptances.json"

    def drift_acceptances(self) -> dict[str, Any] | None:
        """The acceptances document as stored; None when absent.

        Raises:
            OSError, ValueError: the file exists but cannot be read or parsed (acceptances
                are never silently dropped).
        """
        doc = read_json(self.drift_acceptances_path())
        if doc is not None and not isinstance(doc, dict):
            raise ValueError(f"{self.drift_acceptances_path()}: not a JSON object")
        return doc

    def write_drift_acceptances(self, doc: Mapping[str, Any]) -> Path:
        """Write the acceptances document atomically (:func:`atomic_write_json`)."""
        return atomic_write_json(self.drift_acceptances_path(), dict(doc))


def _kind(kind: RunKind | str) -> RunKind:
    """``kind`` as a :class:`kafkalab.kinds.RunKind` (a name is looked up)."""
    from kafkalab.kinds import RunKind, run_kind

    return kind if isinstance(kind, RunKind) else run_kind(kind)


__all__ = [
    "AGGREGATES_DIR",
    "ALERTS_DIR",
    "DERIVED_OUTPUTS",
    "DRIFT_DIR",
    "REPORTS_DIR",
    "RUNS_DIR",
    "SAMPLES_DIR",
    "STALE_AFTER_S",
    "VALIDATION_DIR",
    "LabData",
    "atomic_file",
    "atomic_write",
    "atomic_write_json",
    "read_json",
    "safe_name",
]
