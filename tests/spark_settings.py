"""Spark settings the tests give the Spark JVMs they start themselves (never the jobs'
own, never a user's)."""

from __future__ import annotations

from typing import Any

INTERPRETED = {"spark.sql.codegen.wholeStage": "false",
               "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
"""Spark SQL settings of the Spark tests' shared session and of their spark-submits
(``tests/spark/conftest.py``), of the Spark Connect server the e2e DAG tests' tasks run
against (``tests/e2e/test_airflow_dags_test.py``) and of the standalone cluster test's
application and local reference (``tests/integration/test_spark_standalone.py``):
expressions and operators are interpreted instead of compiled to Java (Spark's own test
setting ``factoryMode``; the results are the same by Spark's contract, which Spark's suite
checks in both modes). The tests' data are tiny, so compiling each new plan's code with
Janino (and the class lookups it makes on PySpark's classpath) was much of the work: 15 %
less CPU for the same four load and fault aggregations in one JVM (2026-11-28: 50.6 CPU-s
against 59.7; with local[1] as well 40-42 against 49-52, not taken: it would stop exercising
the jobs' multi-partition paths); the e2e DAG tests' server used 18 % less for the version
matrix's four jobs (2026-12-07: 50.6 CPU-s against 61.8, its start included). The jobs
themselves never set these; ``make demo`` (and ``test_make_demo.py``), the scheduler stack's
spark-submits (``test_airflow_scheduler.py``), ``kafkalab aggregate``
(``test_cli_aggregate.py``) and the Spark Connect tests run Spark's defaults."""


def driver_java_options() -> str:
    """The JVM options of the tests' in-process driver: those of the driver a job's
    spark-submit starts (``kafkalab.spark.cds.DRIVER_JAVA_OPTIONS``: C1 only, the serial
    collector; the class-data archive when ``make setup`` recorded it,
    :func:`kafkalab.spark.submit.runtime_conf`). Until 2026-12-08 this driver ran the JVM's
    defaults (the G1 collector, no archive) under the tests' ``JDK_JAVA_OPTIONS`` (C1):
    five Spark test files' costliest tests in one session took 16 % more CPU so (164, 178
    and 175 CPU-s against 142, 147 and 145, alternated on one machine)."""
    from kafkalab.spark.cds import JAVA_OPTIONS_KEY
    from kafkalab.spark.submit import runtime_conf, spark_conf

    return runtime_conf(spark_conf()).get(JAVA_OPTIONS_KEY, "")


def local_test_session() -> Any:
    """The tests' loopback-only ``local[2]`` SparkSession (the jobs' builder, two shuffle
    partitions for two cores, :data:`INTERPRETED`, :func:`driver_java_options`): the active
    one if this process has one (``getOrCreate``), else a new one."""
    from kafkalab.spark.cds import JAVA_OPTIONS_KEY
    from spark_jobs._session import local_builder

    builder = (local_builder("kafkalab-tests", "local[2]")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2"))
    for key, value in INTERPRETED.items():
        builder = builder.config(key, value)
    if options := driver_java_options():
        builder = builder.config(JAVA_OPTIONS_KEY, options)
    return builder.getOrCreate()
