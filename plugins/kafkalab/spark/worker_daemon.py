"""Spark's Python worker daemon for executors that run from the lab's own virtualenv:
``pyspark.daemon`` with the installed PySpark's zipped copies taken off the import path.

Spark starts every Python worker with ``$SPARK_HOME/python/lib/pyspark.zip`` and
``py4j-*-src.zip`` first on ``PYTHONPATH``, and each task begins with
``importlib.invalidate_caches()``. On CPython 3.10 and 3.11 a zip importer re-reads its whole
archive directory there, in Python (CPython issue gh-103200, found by Spark's developers with
these two zips; fixed in 3.12 only): ``pyspark.zip``'s ~1,300 entries cost every task tens of
milliseconds of CPU. The lab's Python is 3.11; measured on the 2-core machine
(``tests/spark/test_aggregate_load.py``, 2026-11-28): 85 s of CPU with the zips, 74 s without.

When PySpark is installed in the worker's Python and ``SPARK_HOME`` is that installation (a
``pip install pyspark``: the lab's ``local[*]`` sessions, its Spark Connect server and its
standalone cluster), the zips hold the very files the installation holds, so nothing is lost by
importing from the installation instead. Any other layout (a Spark distribution whose Python
has no PySpark) keeps its zips untouched.

Spark runs it as ``python -m kafkalab.spark.worker_daemon <worker module>`` when a session's
``spark.python.daemon.module`` names it (:func:`kafkalab.spark.submit.with_worker_daemon`);
importing the module does nothing.
"""

from __future__ import annotations

import runpy
import sys
import zipfile
import zipimport
from collections.abc import Sequence
from importlib.machinery import PathFinder
from pathlib import Path

DAEMON = "pyspark.daemon"
"""The daemon this one runs once the path is cleaned."""


def _top_level_names(archive: str) -> set[str]:
    """The top-level packages and modules of a zip archive."""
    with zipfile.ZipFile(archive) as z:
        return {Path(n.split("/", 1)[0]).stem for n in z.namelist()
                if n.endswith(".py") or "/" in n}


def redundant_zips(path: Sequence[str]) -> list[str]:
    """The entries of ``path`` that are zips inside the ``python/lib`` folder of the PySpark
    that ``path``'s other entries import, and whose every top-level package those entries
    import too (PySpark's own copy of itself, and of the py4j it pins); empty when no entry
    outside a zip holds PySpark."""
    plain = [p for p in path if not p.endswith(".zip")]
    spec = PathFinder.find_spec("pyspark", plain)
    if spec is None or not spec.submodule_search_locations:
        return []
    lib = Path(next(iter(spec.submodule_search_locations))).resolve() / "python" / "lib"
    return [p for p in path
            if p.endswith(".zip") and Path(p).resolve().parent == lib and Path(p).is_file()
            and all(PathFinder.find_spec(name, plain) is not None
                    for name in _top_level_names(p))]


def drop_redundant_zips() -> list[str]:
    """Remove :func:`redundant_zips` from ``sys.path`` and from the import system's caches;
    returns what was removed."""
    dropped = redundant_zips(sys.path)
    for entry in dropped:
        while entry in sys.path:
            sys.path.remove(entry)
        sys.path_importer_cache.pop(entry, None)
        zipimport._zip_directory_cache.pop(entry, None)  # type: ignore[attr-defined]
    return dropped


def main() -> None:
    """Clean the path, then run :data:`DAEMON` as Spark would (``sys.argv`` unchanged: its
    first argument names the worker module)."""
    drop_redundant_zips()
    runpy.run_module(DAEMON, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
