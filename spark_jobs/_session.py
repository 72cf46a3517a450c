"""What every Spark job of the lab shares: the session, input plumbing, percentiles, writer.

This file is shipped with the jobs: ``spark-submit --py-files spark_jobs/_session.py
spark_jobs/<job>.py ...`` (the DAG takes the path from
``kafkalab.spark.submit.spark_py_files()``). Run locally (``spark-submit`` or
``python spark_jobs/<job>.py``), the script's own folder is on ``sys.path`` and this module
is found beside it. A job imports it as::

    if __package__:  # imported as spark_jobs.<job> (tests, tools)
        from . import _session as shared
    else:            # run as a script: beside it, or shipped with --py-files
        import _session as shared

Needs only PySpark and two modules of the lab's package that import nothing but the standard
library: :mod:`kafkalab.stats` (the one definition of a percentile, its minimum sample
counts and confidence intervals; the jobs use it as :data:`stats`) and the one atomic writer,
:func:`kafkalab.store.atomic_write`. A Spark node without the ``kafkalab`` package gets them
as lone files: ``spark_py_files()`` ships ``plugins/kafkalab/stats.py`` and
``plugins/kafkalab/store.py`` with ``_session.py``, importable there as ``stats`` and
``store``.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

try:  # the lab's statistics and atomic writer, from the installed package ...
    from kafkalab import stats
    from kafkalab.store import atomic_write as _atomic_write
except ImportError:  # ... or, on a Spark node without it, the files shipped with --py-files
    import stats  # type: ignore[no-redef]
    from store import atomic_write as _atomic_write  # type: ignore[no-redef]

__all__ = [
    "CELL_KEYS",
    "LOOPBACK_HOST",
    "METRIC_PERCENTILES",
    "SAMPLES_RUN_GLOB",
    "InputError",
    "build_session",
    "count_if",
    "driver_frame",
    "job_session",
    "local_builder",
    "local_path_missing",
    "percentile_columns",
    "read_parquet",
    "run_sample_paths",
    "stats",
    "typed",
    "write_json_atomic",
    "write_text_atomic",
]

LOOPBACK_HOST = "127.0.0.1"
"""The address a local driver binds to: nothing listens beyond this host."""

CELL_KEYS: tuple[str, ...] = ("run_id", "scenario", "client", "payload", "profile")
"""The columns that name a cell: one aggregate row per combination."""

METRIC_PERCENTILES: dict[str, dict[str, tuple[int, int]]] = {
    "e2e_latency_ms": dict(stats.PERCENTILE_FRACTIONS),
    "publish_latency_ms": {"p50": (1, 2), "p95": (19, 20), "p99": (99, 100)},
    "round_trip_ms": {"p50": (1, 2), "p99": (99, 100)},
}
"""The percentiles the aggregation computes per latency column, as exact fractions
``(numerator, denominator)``: nearest rank = ``ceil(n * num / den)``. Output columns are
``<column>_<name>`` in this order (``docs/aggregates-schema.md``); the validation checks them
in the same order. The e2e ones are :data:`kafkalab.stats.PERCENTILE_FRACTIONS`; every one
needs its :data:`kafkalab.stats.MIN_SAMPLES`."""


class InputError(Exception):
    """The input cannot be processed (missing path, no rows for the run id, missing columns)."""


def percentile_columns(metric: str) -> tuple[str, ...]:
    """``<metric>_p50``, ... : the percentile columns of ``metric`` in ascending order."""
    return tuple(f"{metric}_{name}" for name in METRIC_PERCENTILES[metric])


# --------------------------------------------------------------------------- sessions


def local_builder(app_name: str, master: str) -> SparkSession.Builder:
    """A builder for a loopback-only local session: no UI, no console progress bar."""
    return (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", LOOPBACK_HOST)
        .config("spark.driver.bindAddress", LOOPBACK_HOST)
    )


def build_session(app_name: str) -> tuple[SparkSession, bool]:
    """The session of spark-submit, or a loopback-only local one when run by plain python.

    Plain python uses ``$KAFKALAB_SPARK_MASTER`` (default ``local[2]``). Returns
    ``(session, owned)``; ``owned`` is false when a session was already active (e.g.
    ``main()`` called from a test or a notebook): the caller must not stop it then.
    """
    owned = SparkSession.getActiveSession() is None
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # launched by spark-submit: its settings rule
        builder = SparkSession.builder.appName(app_name)
    else:
        builder = local_builder(app_name, os.environ.get("KAFKALAB_SPARK_MASTER", "local[2]"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if not spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
        # the default (200) makes small runs crawl; scale with the cores instead
        parallelism = spark.sparkContext.defaultParallelism
        spark.conf.set("spark.sql.shuffle.partitions", str(max(2, 2 * parallelism)))
    spark.conf.set("spark.sql.debug.maxToStringFields", "200")
    return spark, owned


@contextlib.contextmanager
def job_session(app_name: str) -> Iterator[SparkSession]:
    """:func:`build_session` for the length of a ``with`` block; stopped after it if owned."""
    spark, owned = build_session(app_name)
    try:
        yield spark
    finally:
        if owned:
            spark.stop()


# --------------------------------------------------------------------------- input


def local_path_missing(path: str) -> bool:
    """True when ``path`` is a local path (no URI scheme) that does not exist."""
    return "://" not in path and not path.startswith("file:") and not os.path.exists(path)


SAMPLES_RUN_GLOB = "run_date=*/run_id={run_id}"
"""Where one run's raw samples lie below the samples root (``docs/metrics-schema.md``)."""


def run_sample_paths(samples_path: str, run_ids: Sequence[str], what: str = "samples") -> list[str]:
    """The folders of ``run_ids`` below the samples root: only they are listed and read, so a
    job's cost does not grow with the history beside them (Spark lists and merges the schema
    of every file it is given).

    A local root is globbed here, so a run with no folder is named; any other URI is handed
    to Spark as a glob (``<root>/run_date=*/run_id=<id>``), which resolves it on its
    filesystem.

    Raises:
        InputError: ``no <what> for run id(s) … under <root>`` (a local root without them).
    """
    root = samples_path.rstrip("/")
    if "://" in root or root.startswith("file:"):
        return [f"{root}/{SAMPLES_RUN_GLOB.format(run_id=run_id)}" for run_id in run_ids]
    found: list[str] = []
    missing: list[str] = []
    for run_id in run_ids:
        pattern = f"{glob.escape(root)}/{SAMPLES_RUN_GLOB.format(run_id=glob.escape(run_id))}"
        dirs = sorted(p for p in glob.glob(pattern) if os.path.isdir(p))
        found += dirs
        if not dirs:
            missing.append(run_id)
    if missing:
        raise InputError(f"no {what} for run id(s) {', '.join(missing)} under {samples_path}")
    return found


def read_parquet(spark: SparkSession, path: str | Sequence[str], what: str,
                 base_path: str | None = None) -> DataFrame:
    """Read the Hive-partitioned Parquet below ``path``, partition values as strings.

    The files' schemas are merged (``mergeSchema``): files written under an older schema
    version lack the newer columns and read them as null, and no file's columns are dropped
    because Spark happened to take its schema from an older file.

    ``path``: one path, or several (partitions of one dataset: give ``base_path``).
    ``base_path``: the dataset root when ``path`` is one partition below it, so the partition
    columns (``run_id``, ``run_date``) are kept.

    Raises:
        InputError: ``cannot read <what> at <path>: <first line of Spark's error>``.
    """
    from pyspark.errors import AnalysisException

    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    reader = spark.read.option("mergeSchema", "true")
    if base_path is not None:  # read one partition and keep its column (e.g. run_id=<id>)
        reader = reader.option("basePath", base_path)
    paths = [path] if isinstance(path, str) else list(path)
    try:
        return reader.parquet(*paths)
    except AnalysisException as exc:
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        where = base_path if len(paths) > 1 and base_path else paths[0]
        raise InputError(f"cannot read {what} at {where}: {first_line}") from None


# --------------------------------------------------------------------------- columns and rows


def count_if(cond: Column) -> Column:
    """An aggregate: the number of the group's rows where ``cond`` holds (0 when none; a row
    where it is null does not count), as a long."""
    return F.sum(F.when(cond, F.lit(1)).otherwise(F.lit(0))).cast("long")


def typed(value: Any, type_: str) -> Any:
    """``value`` as its Spark column takes it (None stays None).

    The rows a job builds on the driver carry what their JSON documents held, and JSON has one
    kind of number: a number goes to its column's numeric type (``float`` for ``double``,
    ``int`` for ``bigint`` / ``int``), which ``createDataFrame`` needs (it refuses an int in a
    double column). Any other value is left as it is: a string column takes any value as
    Spark's own text of it (a JSON ``true`` reads ``"true"``, not Python's ``"True"``), and a
    boolean column refuses anything but a bool rather than guess (``bool("false")`` is
    true)."""
    if value is None:
        return None
    if type_ == "double":
        return float(value)
    if type_ in ("bigint", "int"):
        return int(value)
    return value


def driver_frame(spark: SparkSession, rows: Iterable[Mapping[str, Any]],
                 schema: Mapping[str, str]) -> DataFrame:
    """A DataFrame of ``rows`` built on the driver (dicts by column name; a key a row lacks is
    null) with ``schema`` (column -> Spark DDL type, in order), every value :func:`typed`."""
    ddl = ", ".join(f"{c} {t}" for c, t in schema.items())
    return spark.createDataFrame(
        [tuple(typed(r.get(c), t) for c, t in schema.items()) for r in rows], ddl)


# --------------------------------------------------------------------------- output


def write_text_atomic(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` so that a reader sees the old file or the whole new
    one: :func:`kafkalab.store.atomic_write`."""
    _atomic_write(path, text)


def write_json_atomic(path: str, doc: dict[str, Any]) -> None:
    """:func:`write_text_atomic` of ``doc`` as indented JSON (key order kept, final newline)."""
    write_text_atomic(path, json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n")
