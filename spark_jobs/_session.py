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

Needs only PySpark and the lab's one atomic writer, :func:`kafkalab.store.atomic_write`. That
module imports nothing but the standard library, so a Spark node without the ``kafkalab``
package gets it as a lone file: ``spark_py_files()`` ships ``plugins/kafkalab/store.py`` with
``_session.py``, importable there as ``store``.
"""

from __future__ import annotations

import contextlib
import glob
import json
import math
import os
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

try:  # the lab's one atomic writer, from the installed package ...
    from kafkalab.store import atomic_write as _atomic_write
except ImportError:  # ... or, on a Spark node without it, the file shipped with --py-files
    from store import atomic_write as _atomic_write  # type: ignore[no-redef]

__all__ = [
    "CELL_KEYS",
    "CI_CONFIDENCE",
    "CI_PERCENTILES",
    "LOOPBACK_HOST",
    "METRIC_PERCENTILES",
    "MIN_SAMPLES",
    "SAMPLES_RUN_GLOB",
    "InputError",
    "build_session",
    "job_session",
    "local_builder",
    "local_path_missing",
    "percentile_columns",
    "quantile_ci_ranks",
    "read_parquet",
    "run_sample_paths",
    "write_json_atomic",
    "write_text_atomic",
]

LOOPBACK_HOST = "127.0.0.1"
"""The address a local driver binds to: nothing listens beyond this host."""

CELL_KEYS: tuple[str, ...] = ("run_id", "scenario", "client", "payload", "profile")
"""The columns that name a cell: one aggregate row per combination."""

METRIC_PERCENTILES: dict[str, dict[str, tuple[int, int]]] = {
    "e2e_latency_ms": {"p50": (1, 2), "p90": (9, 10), "p95": (19, 20), "p99": (99, 100),
                       "p999": (999, 1000)},
    "publish_latency_ms": {"p50": (1, 2), "p95": (19, 20), "p99": (99, 100)},
    "round_trip_ms": {"p50": (1, 2), "p99": (99, 100)},
}
"""The percentiles the aggregation computes per latency column, as exact fractions
``(numerator, denominator)``: nearest rank = ``ceil(n * num / den)``. Output columns are
``<column>_<name>`` in this order (``docs/aggregates-schema.md``); the validation checks them
in the same order. The e2e fractions are those of ``kafkalab.stats.PERCENTILES``: keep the two
in step."""

MIN_SAMPLES: dict[str, int] = {"p50": 1, "p90": 10, "p95": 20, "p99": 100, "p999": 1000}
"""The fewest values a percentile needs (``kafkalab.stats.MIN_SAMPLES``): below it the
percentile is null, reason ``n<100`` (etc.). Applies to every metric of
:data:`METRIC_PERCENTILES`."""

CI_PERCENTILES: tuple[str, ...] = ("p50", "p99")
"""The e2e percentiles that get a confidence interval (``kafkalab.stats.CI_PERCENTILES``)."""

CI_CONFIDENCE = 0.95
"""Coverage of those intervals (``kafkalab.stats.CI_CONFIDENCE``)."""


class InputError(Exception):
    """The input cannot be processed (missing path, no rows for the run id, missing columns)."""


def percentile_columns(metric: str) -> tuple[str, ...]:
    """``<metric>_p50``, ... : the percentile columns of ``metric`` in ascending order."""
    return tuple(f"{metric}_{name}" for name in METRIC_PERCENTILES[metric])


# --------------------------------------------------------------------------- statistics
# A copy of kafkalab.stats.quantile_ci_ranks (the Spark nodes run without the kafkalab
# package); tests/unit/test_lists_in_step.py checks that both give the same ranks.


def _log_binom_pmf(k: int, n: int, q: float) -> float:
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            + k * math.log(q) + (n - k) * math.log1p(-q))


def quantile_ci_ranks(n: int, q: float, confidence: float = CI_CONFIDENCE
                      ) -> tuple[int | None, int | None]:
    """1-based ranks ``(lo, hi)`` of a distribution-free ``confidence`` interval for the
    ``q`` quantile of ``n`` values: ``P(x_(lo) <= ξ_q < x_(hi)) >= confidence``.

    With F the Binomial(n, q) CDF and α = 1 − confidence: ``lo = max{l >= 1 : F(l−1) <= α/2}``
    and ``hi = min{u <= n : F(u−1) >= 1 − α/2}``; either is None when no rank qualifies (too
    few values for that side). The binomial mass is summed over a window of ±(10 sd + 10)
    around ``n·q`` (the rest is below 1e-20), so the cost grows with sd, not with n. The
    original is ``kafkalab.stats.quantile_ci_ranks``; ``tests/unit/test_lists_in_step.py``
    keeps the two identical.
    """
    if n <= 0 or not 0 < q < 1:
        return None, None
    alpha = 1.0 - confidence
    sd = math.sqrt(n * q * (1 - q))
    centre = int(n * q)
    lo_k = max(0, centre - int(10 * sd) - 10)
    hi_k = min(n, centre + int(10 * sd) + 10)
    cdf: dict[int, float] = {}
    total = 0.0
    for k in range(lo_k, hi_k + 1):
        total += math.exp(_log_binom_pmf(k, n, q))
        cdf[k] = total

    def F(k: int) -> float:
        if k < lo_k:
            return 0.0
        return cdf[min(k, hi_k)]

    lo = None
    for rank in range(min(n, hi_k + 1), 0, -1):
        if F(rank - 1) <= alpha / 2:
            lo = rank
            break
    hi = None
    for rank in range(max(1, lo_k), n + 1):
        if F(rank - 1) >= 1 - alpha / 2:
            hi = rank
            break
    return lo, hi


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


# --------------------------------------------------------------------------- output


def write_text_atomic(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` so that a reader sees the old file or the whole new
    one: :func:`kafkalab.store.atomic_write`."""
    _atomic_write(path, text)


def write_json_atomic(path: str, doc: dict[str, Any]) -> None:
    """:func:`write_text_atomic` of ``doc`` as indented JSON (key order kept, final newline)."""
    write_text_atomic(path, json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n")
