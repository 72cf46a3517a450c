"""What every Spark job of the lab shares: its session and command line, input plumbing, the
lab's statistics, rows built on the driver, and the writers (atomic files, a run's tables).

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

import argparse
import contextlib
import glob
import json
import os
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

try:  # the lab's statistics and atomic writer, from the installed package ...
    from kafkalab import stats
    from kafkalab.store import atomic_write as _atomic_write

    _LAB_INSTALLED = True
except ImportError:  # ... or, on a Spark node without it, the files shipped with --py-files
    import stats  # type: ignore[no-redef]
    from store import atomic_write as _atomic_write  # type: ignore[no-redef]

    _LAB_INSTALLED = False

__all__ = [
    "CELL_KEYS",
    "DRIVER_STATIC_CONF",
    "LOOPBACK_HOST",
    "METRIC_PERCENTILES",
    "SAMPLES_RUN_GLOB",
    "InputError",
    "build_session",
    "count_if",
    "driver_frame",
    "job_parser",
    "job_session",
    "local_builder",
    "local_dir",
    "local_path_missing",
    "percentile_columns",
    "read_parquet",
    "read_run_docs",
    "read_run_rows",
    "read_run_table",
    "run_job",
    "run_sample_paths",
    "run_tables_main",
    "stats",
    "swap_in_run_tables",
    "typed",
    "write_json_atomic",
    "write_run_tables",
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


DRIVER_STATIC_CONF: dict[str, str] = {"spark.python.sql.dataFrameDebugging.enabled": "false"}
"""The settings a driver starts with, for a job run by plain python (:func:`local_builder`): a
copy of ``kafkalab.spark.submit.DRIVER_STATIC_CONF`` (which says why; spark-submit gives it
to every other driver), since a job imports only kafkalab's lone files
(``tests/unit/test_tools.py``); ``tests/unit/test_spark_submit.py`` keeps the two equal."""


def local_builder(app_name: str, master: str) -> SparkSession.Builder:
    """A builder for a loopback-only local session: no UI, no console progress bar; on a
    ``local[*]`` master with the lab's package installed, the lab's Python worker daemon
    (``kafkalab.spark.worker_daemon``: PySpark's, without a per-task cost of CPython 3.11);
    the settings every lab driver starts with (:data:`DRIVER_STATIC_CONF`: they cannot be
    changed once the session runs)."""
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", LOOPBACK_HOST)
        .config("spark.driver.bindAddress", LOOPBACK_HOST)
    )
    for key, value in DRIVER_STATIC_CONF.items():
        builder = builder.config(key, value)
    if _LAB_INSTALLED and (master == "local" or master.startswith("local[")):
        builder = builder.config("spark.python.daemon.module", "kafkalab.spark.worker_daemon")
    return builder


CONNECT_SCHEME = "sc://"
"""A ``$KAFKALAB_SPARK_MASTER`` that starts with it names a Spark Connect server: the job
runs as its client (``kafkalab.spark.connect``)."""


def build_session(app_name: str) -> tuple[SparkSession, bool]:
    """The session of spark-submit, a Spark Connect one, or a loopback-only local one when
    run by plain python.

    Plain python uses ``$KAFKALAB_SPARK_MASTER`` (default ``local[2]``); an ``sc://host:port``
    there makes the job a client of that Spark Connect server (a session of its own on the
    server's driver, whose settings rule; always owned: the job's process stops it).
    Returns ``(session, owned)``; ``owned`` is false when a classic session was already
    active (e.g. ``main()`` called from a test or a notebook): the caller must not stop it
    then.
    """
    master = os.environ.get("KAFKALAB_SPARK_MASTER", "local[2]")
    if "PYSPARK_GATEWAY_PORT" not in os.environ and master.startswith(CONNECT_SCHEME):
        return _with_lab_settings(
            SparkSession.builder.remote(master).appName(app_name).getOrCreate()), True
    owned = SparkSession.getActiveSession() is None
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # launched by spark-submit: its settings rule
        builder = SparkSession.builder.appName(app_name)
    else:
        builder = local_builder(app_name, master)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if not spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
        # the default (200) makes small runs crawl; scale with the cores instead
        parallelism = spark.sparkContext.defaultParallelism
        spark.conf.set("spark.sql.shuffle.partitions", str(max(2, 2 * parallelism)))
    return _with_lab_settings(spark), owned


def _with_lab_settings(spark: SparkSession) -> SparkSession:
    """The session settings every job sets, classic or Connect alike."""
    spark.conf.set("spark.sql.debug.maxToStringFields", "200")
    return spark


@contextlib.contextmanager
def job_session(app_name: str) -> Iterator[SparkSession]:
    """:func:`build_session` for the length of a ``with`` block; stopped after it if owned."""
    spark, owned = build_session(app_name)
    try:
        yield spark
    finally:
        if owned:
            spark.stop()


# --------------------------------------------------------------------------- command line


def job_parser(prog: str, description: str, required: Mapping[str, str]
               ) -> argparse.ArgumentParser:
    """A job's argument parser with the options of ``required`` (``--flag`` -> help), each
    required, in that order; a job adds its optional ones."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    for flag, help_ in required.items():
        parser.add_argument(flag, required=True, help=help_)
    return parser


def run_job(prog: str, work: Callable[[SparkSession], int],
            inputs: Mapping[str, str] | None = None,
            warm_up: Callable[[], object] | None = None) -> int:
    """Run a job's ``work`` in its session (:func:`job_session`, app ``kafkalab-<prog>``)
    and return its exit code; bad input is one line ``<prog>: error: …`` on stderr and exit
    code 2.

    ``inputs`` (what -> path): a local path among them that does not exist is bad input
    (``<what> path not found: <path>``) before any JVM starts. ``warm_up`` is called next,
    before the session is built (a validation imports Great Expectations meanwhile).
    :class:`InputError` raised by ``work`` is bad input; the session is stopped (if owned)
    before this returns.
    """
    for what, path in (inputs or {}).items():
        if local_path_missing(path):
            print(f"{prog}: error: {what} path not found: {path}", file=sys.stderr)
            return 2
    if warm_up is not None:
        warm_up()
    try:
        with job_session(f"kafkalab-{prog.replace('_', '-')}") as spark:
            return work(spark)
    except InputError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2


def run_tables_main(argv: Sequence[str] | None,
                    run: Callable[[SparkSession, str, str, str], Mapping[str, int]], *,
                    prog: str, description: str, source: tuple[str, str, str],
                    out_help: str,
                    validate: Callable[[SparkSession, str, str, str], object] | None = None,
                    warm_up: Callable[[], object] | None = None) -> int:
    """The command line of a job that aggregates one run into tables (``aggregate_load``,
    ``aggregate_faults``): ``--<source> PATH --out PATH --run-id ID``. Runs ``run(spark,
    source path, out, run id)`` (which returns the rows written per table) through
    :func:`run_job` and prints ``<prog>: wrote <n> <table>, … rows for run <id> to
    <out>/run_id=<id>``; returns the exit code (0 success, 2 bad input).

    ``source``: the option (``--load``), what it names in an error (``load samples``) and
    its help. ``validate``: the job also takes ``--validate-out DIR`` and, given it, then
    calls ``validate(spark, out, run id, DIR)`` in the same session (one JVM start instead
    of two); the exit code is still the aggregation's (the verdict is in the result file).
    ``warm_up``: called while the JVM starts when ``--validate-out`` is given.
    """
    flag, what, source_help = source
    parser = job_parser(prog, description, {flag: source_help, "--out": out_help,
                                            "--run-id": "the run to aggregate"})
    if validate is not None:
        parser.add_argument("--validate-out", default=None, metavar="DIR",
                            help="then validate the run in the same Spark session, as its "
                            "validation job does with --out DIR: one JVM start instead of two")
    args = parser.parse_args(argv)
    source_path = getattr(args, flag.removeprefix("--").replace("-", "_"))
    validate_out = getattr(args, "validate_out", None)

    def aggregate(spark: SparkSession) -> int:
        counts = run(spark, source_path, args.out, args.run_id)
        written = ", ".join(f"{n} {name}" for name, n in counts.items())
        print(f"{prog}: wrote {written} rows for run {args.run_id} to "
              f"{os.path.join(args.out, f'run_id={args.run_id}')}")
        if validate is not None and validate_out is not None:
            validate(spark, args.out, args.run_id, validate_out)
        return 0

    return run_job(prog, aggregate, inputs={what: source_path},
                   warm_up=warm_up if validate_out is not None else None)


# --------------------------------------------------------------------------- input


def local_path_missing(path: str) -> bool:
    """True when ``path`` is a local path (no URI scheme) that does not exist."""
    return "://" not in path and not path.startswith("file:") and not os.path.exists(path)


def local_dir(path: str) -> Path | None:
    """``path`` as a local directory, or None when it is a non-local URI."""
    if path.startswith("file:"):
        return Path(urlparse(path).path)
    if "://" in path:
        return None
    return Path(path)


def is_connect(spark: SparkSession) -> bool:
    """True for a Spark Connect session (no ``sparkContext``, no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def refuse_uri_through_connect(spark: SparkSession, root: str) -> None:
    """Refuse a non-local data path in a Spark Connect session: listing and renaming files
    there needs the driver's Hadoop ``FileSystem``, which a Connect client cannot reach.

    Raises:
        InputError: ``<root> is not a local path: ...``.
    """
    if is_connect(spark):
        raise InputError(f"{root} is not a local path: a job run through Spark Connect "
                         "needs a local data directory (spark-submit reads URIs)")


def read_run_docs(spark: SparkSession, root: str, run_id: str, unit: str, name: str
                  ) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every JSON object ``name`` of one run's ``<unit>=<id>`` folders below ``root``
    (``run_date=*/run_id=<run_id>/<unit>=*/<name>``: a load run's ``cell.json``, a fault
    run's ``trial.json``): id -> (run date, document), in path order. Read on the driver
    (plain Python for a local path, ``wholeTextFiles`` for a URI); none found: empty.

    Raises:
        InputError: ``<name> of <unit> <id> is not JSON: …`` (or ``is not an object``).
    """
    pattern = f"run_date=*/run_id={run_id}/{unit}=*/{name}"
    texts: list[tuple[str, str]]
    local = local_dir(root)
    if local is not None:
        texts = [(str(f), f.read_text(encoding="utf-8")) for f in sorted(local.glob(pattern))]
    else:
        refuse_uri_through_connect(spark, root)
        try:
            texts = spark.sparkContext.wholeTextFiles(f"{root}/{pattern}").collect()
        except Exception:  # py4j: no file matches the glob
            texts = []
    docs: dict[str, tuple[str, dict[str, Any]]] = {}
    for path, text in texts:
        parts = path.replace("\\", "/").split("/")
        unit_id = parts[-2].removeprefix(f"{unit}=")
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise InputError(f"{name} of {unit} {unit_id} is not JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise InputError(f"{name} of {unit} {unit_id} is not an object")
        docs[unit_id] = (parts[-4].removeprefix("run_date="), doc)
    return docs


def read_run_rows(spark: SparkSession, root: str, run_id: str, unit: str, file_glob: str,
                  schema: str) -> DataFrame:
    """The rows of the ``file_glob`` Parquet files in one run's ``<unit>=<id>`` folders below
    ``root``, read with ``schema`` (DDL; a column a file lacks reads as null, extra columns
    are ignored), with a ``<unit>_id`` column from the path; an empty DataFrame when the run
    has no such file. Hidden files (``.``) are skipped."""
    from pyspark.errors import AnalysisException

    path = f"{root}/run_date=*/run_id={run_id}/{unit}=*/{file_glob}"
    try:
        df = spark.read.schema(schema).parquet(path)
        df.columns  # noqa: B018  # Spark Connect reads lazily: a missing file must fail here
    except AnalysisException:
        return spark.createDataFrame([], f"{schema}, {unit}_id string")
    unit_id = F.regexp_extract(F.col("_metadata.file_path"), rf"/{unit}=([^/]+)/[^/]+$", 1)
    return df.withColumn(f"{unit}_id", unit_id)


def read_run_table(spark: SparkSession, aggregates: str, run_id: str, table: str
                   ) -> DataFrame:
    """One run's aggregate table ``<aggregates>/run_id=<id>/<table>.parquet``.

    Raises:
        InputError: ``no <table> for run id <id> under <aggregates>`` (a local path), or
            Spark cannot read it (:func:`read_parquet`).
    """
    path = f"{aggregates.rstrip('/')}/run_id={run_id}/{table}.parquet"
    if local_path_missing(path):
        raise InputError(f"no {table} for run id {run_id} under {aggregates}")
    return read_parquet(spark, path, table)


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
        df = reader.parquet(*paths)
        df.columns  # noqa: B018  # Spark Connect reads lazily: a bad path must fail here
        return df
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


def swap_in_run_tables(tables: Mapping[str, DataFrame], out_path: str, run_id: str) -> str:
    """Write ``tables`` (name -> DataFrame) as ``<out_path>/run_id=<id>/<name>.parquet`` (one
    file each) and return the run's directory.

    Written to a hidden staging directory beside it, then swapped in as a whole (rename the
    old directory away, rename the new one in, delete the old): readers skip hidden names,
    so they see the earlier tables or the new ones, never a mix; other runs are untouched.
    """
    spark = next(iter(tables.values())).sparkSession
    root = out_path.rstrip("/")
    target = f"{root}/run_id={run_id}"
    token = uuid.uuid4().hex[:12]
    staging = f"{root}/.staging-{run_id}-{token}"
    old = f"{root}/.old-{run_id}-{token}"
    if local_dir(root) is not None:
        return _swap_in_local(tables, local_dir(target), local_dir(staging), local_dir(old))
    refuse_uri_through_connect(spark, root)
    jvm = spark.sparkContext._jvm
    path_of = jvm.org.apache.hadoop.fs.Path  # type: ignore[union-attr]
    fs = path_of(target).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    moved = False
    try:
        for name, df in tables.items():
            df.coalesce(1).write.mode("error").parquet(f"{staging}/{name}.parquet")
        if fs.exists(path_of(target)):
            if not fs.rename(path_of(target), path_of(old)):
                raise OSError(f"cannot move {target} aside")
            moved = True
        if not fs.rename(path_of(staging), path_of(target)):
            raise OSError(f"cannot rename {staging} to {target}")
        moved = False
    except BaseException:
        if moved and not fs.exists(path_of(target)):  # the earlier tables back in place
            fs.rename(path_of(old), path_of(target))
        raise
    finally:
        for leftover in (staging, old):
            if fs.exists(path_of(leftover)):
                fs.delete(path_of(leftover), True)
    return target


def _swap_in_local(tables: Mapping[str, DataFrame], target: Path | None, staging: Path | None,
                   old: Path | None) -> str:
    """:func:`swap_in_run_tables` below a local directory: the same staging and renames
    through the driver's file system (a Spark Connect client has no JVM to ask)."""
    import shutil

    assert target is not None and staging is not None and old is not None
    moved = False
    try:
        for name, df in tables.items():
            df.coalesce(1).write.mode("error").parquet(str(staging.absolute()
                                                           / f"{name}.parquet"))
        if target.exists():
            target.rename(old)
            moved = True
        staging.rename(target)
        moved = False
    except BaseException:
        if moved and not target.exists():  # the earlier tables back in place
            old.rename(target)
        raise
    finally:
        for leftover in (staging, old):
            if leftover.exists():
                shutil.rmtree(leftover)
    return str(target)


def write_run_tables(tables: Mapping[str, DataFrame], out_path: str, run_id: str
                     ) -> dict[str, int]:
    """Count and write one run's ``tables`` (:func:`swap_in_run_tables`); returns the rows
    written per table. Each table is cached for the two passes and released after."""
    cached = {name: df.cache() for name, df in tables.items()}
    try:
        counts = {name: df.count() for name, df in cached.items()}
        swap_in_run_tables(cached, out_path, run_id)
    finally:
        for df in cached.values():
            df.unpersist()
    return counts


def write_json_atomic(path: str, doc: dict[str, Any]) -> None:
    """:func:`write_text_atomic` of ``doc`` as indented JSON (key order kept, final newline)."""
    write_text_atomic(path, json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n")
