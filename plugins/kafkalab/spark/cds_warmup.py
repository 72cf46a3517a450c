"""The job a class-data-sharing archive is recorded from (:mod:`kafkalab.spark.cds`).

``spark-submit cds_warmup.py SCRATCH_DIR``: a few thousand synthetic rows through what the
lab's jobs use — Parquet written and read, group-by with exact percentiles and counts, a
window, a join, a collect and an Arrow ``toPandas`` — so the driver JVM loads (and the
archive records) the classes those jobs load. It measures nothing and writes only under
``SCRATCH_DIR``. Needs only PySpark.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    """Run the warm-up in ``argv[0]`` (a scratch directory); returns the exit code."""
    from pyspark.sql import SparkSession, Window
    from pyspark.sql import functions as F

    if len(argv) != 1:
        print("usage: cds_warmup.py SCRATCH_DIR", file=sys.stderr)
        return 2
    scratch = argv[0].rstrip("/")
    spark = SparkSession.builder.appName("kafkalab-cds-warmup").getOrCreate()
    try:
        spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
        rows = spark.range(4000).select(
            (F.col("id") % 4).cast("string").alias("cell"),
            F.col("id").alias("seq"),
            (F.rand(7) * 10).alias("e2e_latency_ms"),
            F.when(F.col("id") % 97 == 0, F.lit("lost")).otherwise(F.lit("ok")).alias("status"),
        )
        rows.write.mode("overwrite").parquet(f"{scratch}/samples")
        read = spark.read.parquet(f"{scratch}/samples")
        agg = read.groupBy("cell").agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(F.when(F.col("status") == "lost", 1).otherwise(0)).alias("lost"),
            F.percentile(F.col("e2e_latency_ms"), F.lit(0.99)).alias("p99"),
            F.percentile_approx("e2e_latency_ms", 0.5).alias("p50"),
            F.min("seq").alias("first_seq"),
            F.max("seq").alias("last_seq"),
        )
        ranked = read.withColumn("rank", F.row_number().over(
            Window.partitionBy("cell").orderBy("e2e_latency_ms")))
        joined = ranked.join(agg, "cell").where(F.col("rank") <= F.col("n"))
        joined.groupBy("cell").count().collect()
        agg.write.mode("overwrite").parquet(f"{scratch}/aggregates")
        spark.read.parquet(f"{scratch}/aggregates").toPandas()
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
