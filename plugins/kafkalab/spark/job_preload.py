"""What the job host (:mod:`kafkalab.spark.job_host`) imports once, before it forks a job:
what every lab Spark job imports first. Importing this module is its whole effect.

Great Expectations' analytics are off first (its import reads the setting), as the jobs
themselves set it (``spark_jobs/_gx.py``)."""

from __future__ import annotations

import os

os.environ["GX_ANALYTICS_ENABLED"] = "false"

import great_expectations  # noqa: F401  (~4 CPU s: the bulk of a job's start)
import pandas  # noqa: F401
import pyarrow  # noqa: F401
import pyspark.sql.connect.session  # noqa: F401
