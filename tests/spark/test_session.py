"""Tests of what the Spark jobs share (spark_jobs/_session.py) that no single job's output
shows on its own."""

from __future__ import annotations

import os
from typing import Any

import pytest

from spark_jobs import _session as shared

SCHEMA = {"broker_version": "string", "rate_msgs_per_s": "double", "acked_msgs": "bigint",
          "partitions": "int", "recovered": "boolean", "drained": "boolean",
          "error": "string"}


def test_the_session_starts_without_pysparks_call_site_capture(spark: Any) -> None:
    """The tests' session comes from the jobs' ``local_builder``, which gives a driver the
    settings every lab driver starts with (its copy ``spark_jobs._session.DRIVER_STATIC_CONF``,
    kept equal to ``kafkalab.spark.submit.DRIVER_STATIC_CONF`` by a unit test): PySpark then
    records no Python call site per DataFrame call (several py4j round trips each)."""
    from pyspark.errors.utils import is_debugging_enabled

    from kafkalab.spark.submit import DRIVER_STATIC_CONF

    assert {k: spark.conf.get(k) for k in DRIVER_STATIC_CONF} == DRIVER_STATIC_CONF
    assert DRIVER_STATIC_CONF["spark.python.sql.dataFrameDebugging.enabled"] == "false"
    assert is_debugging_enabled() is False


def test_the_sessions_driver_runs_the_jvm_options_of_a_jobs_driver(spark: Any) -> None:
    """The tests' in-process driver JVM gets what a job's spark-submit gives its driver
    (C1 only, the serial collector, the class-data archive once recorded), read back from the
    running JVM: it once ran the JVM's defaults and 16 % more CPU."""
    from kafkalab.spark.cds import DRIVER_JAVA_OPTIONS
    from tests.spark_settings import driver_java_options

    jvm = spark.sparkContext._jvm
    running = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                   .getInputArguments())
    wanted = driver_java_options().split()
    if "KAFKALAB_SPARK_DRIVER_JAVA_OPTIONS" not in os.environ:  # a user's own replaces them
        assert set(DRIVER_JAVA_OPTIONS.split()) <= set(wanted)
    assert set(wanted) <= set(running), running


def test_driver_rows_take_their_columns_types(spark: Any) -> None:
    """A row built on the driver from a JSON document (a ``cell.json``, a ``trial.json``)
    holds what JSON held. A number becomes its column's numeric type (an int in a double
    column a float, a float count in a bigint column an int); a string column takes any
    value as Spark's text of it: a number its digits, a JSON ``true`` ``"true"`` (the two
    copies of this rule once differed here: one wrote Python's ``"True"``); null stays null
    and a key the row lacks is null."""
    row = {"broker_version": 3.7, "rate_msgs_per_s": 1000, "acked_msgs": 12.0,
           "partitions": "3", "recovered": True, "drained": False, "error": True}
    df = shared.driver_frame(spark, [row, {}], SCHEMA)
    assert df.dtypes == [("broker_version", "string"), ("rate_msgs_per_s", "double"),
                         ("acked_msgs", "bigint"), ("partitions", "int"),
                         ("recovered", "boolean"), ("drained", "boolean"), ("error", "string")]
    first, empty = (r.asDict() for r in df.collect())
    assert first == {"broker_version": "3.7", "rate_msgs_per_s": 1000.0, "acked_msgs": 12,
                     "partitions": 3, "recovered": True, "drained": False, "error": "true"}
    assert empty == dict.fromkeys(SCHEMA)


def test_a_boolean_column_refuses_what_is_not_a_bool(spark: Any) -> None:
    """No guessing from truthiness (the other copy once did): ``"false"`` or ``0`` in a
    boolean column is refused, where ``bool("false")`` would have made it true."""
    from pyspark.errors import PySparkTypeError

    for value in ("false", 0):
        with pytest.raises(PySparkTypeError, match="recovered"):
            shared.driver_frame(spark, [{"recovered": value}], {"recovered": "boolean"})


def test_typed_keeps_values_of_the_right_type_as_they_are() -> None:
    """What the latency aggregation's rows hold (Spark's own values) is unchanged."""
    for value, type_ in (("kafka-python", "string"), (True, "boolean"), (False, "boolean"),
                         (2.5, "double"), (7, "bigint"), (None, "string")):
        assert shared.typed(value, type_) == value
        assert type(shared.typed(value, type_)) is type(value)


def test_count_if_counts_the_rows_where_the_condition_holds(spark: Any) -> None:
    from pyspark.sql import functions as F

    df = spark.createDataFrame([("a", 1), ("a", None), ("a", 3), ("b", 4)], "k string, v int")
    counted = df.groupBy("k").agg(shared.count_if(F.col("v") > 1).alias("n"),
                                  shared.count_if(F.col("v") > 9).alias("none"))
    assert dict(counted.dtypes)["n"] == "bigint"
    assert {r["k"]: (r["n"], r["none"]) for r in counted.collect()} == {"a": (1, 0), "b": (1, 0)}


def test_python_workers_come_from_the_labs_daemon_without_pysparks_zips(spark: Any) -> None:
    """The session's Python workers are forked from ``kafkalab.spark.worker_daemon``: a
    Python function runs on them and gives its result, and their import path holds neither
    of the zips Spark puts first on it (each would be re-read by every task on CPython 3.11),
    while PySpark and py4j are imported from the installation those zips copy."""
    from pyspark.sql import functions as F

    def where(_: int) -> str:
        import sys

        import py4j
        import pyspark
        zips = [p for p in sys.path if p.endswith(".zip") and "pyspark" in p]
        return "|".join([",".join(zips), pyspark.__file__, py4j.__file__])

    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == \
        "kafkalab.spark.worker_daemon"
    rows = spark.range(4).select(F.udf(where, "string")("id").alias("w")).collect()
    seen = {r.w for r in rows}
    assert len(seen) == 1
    zips, pyspark_file, py4j_file = seen.pop().split("|")
    assert zips == ""
    assert ".zip" not in pyspark_file and ".zip" not in py4j_file
    import pyspark
    assert pyspark_file == pyspark.__file__
