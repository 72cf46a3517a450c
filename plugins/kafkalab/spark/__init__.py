"""Spark for the lab: how its jobs are submitted, and a local Spark standalone cluster
(``kafkalab spark up|status|down``: a master and workers from the installed PySpark's
``spark-class``, on 127.0.0.1, stopped by PID).

| module | role |
|---|---|
| :mod:`~kafkalab.spark.spec` | ports, workers, files and command lines (pure) |
| :mod:`~kafkalab.spark.master_api` | the master's JSON view as typed data |
| :mod:`~kafkalab.spark.standalone` | start, report, stop; the state file |
| :mod:`~kafkalab.spark.cds` | the driver JVM's class-data archive: faster ``spark-submit`` starts |
| :mod:`~kafkalab.spark.cds_warmup` | the job that archive is recorded from |
| :mod:`~kafkalab.spark.submit` | what a lab Spark job is submitted with (script, args, conf, env, py-files): the DAGs' ``SparkSubmitOperator`` tasks and ``kafkalab aggregate`` |
| :mod:`~kafkalab.spark.worker_daemon` | the Python workers' daemon of executors that run from the lab's venv (PySpark's, minus a per-task cost of CPython 3.11) |
| :mod:`~kafkalab.spark.connect` | a Spark Connect server (one warm driver) and a job run as its client in the caller's process (``KAFKALAB_SPARK_MASTER=sc://…``, ``make demo``) |
"""

from kafkalab.spark.spec import StandaloneSpec
from kafkalab.spark.standalone import export_line, spark_down, spark_status, spark_up

__all__ = ["StandaloneSpec", "export_line", "spark_down", "spark_status", "spark_up"]
