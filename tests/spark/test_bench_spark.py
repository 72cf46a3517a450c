"""The Spark bench (tools.bench.spark): its pandas reference agrees with the Spark job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafkalab.catalog import SCENARIOS
from tools.bench.spark import bench_aggregation


def test_bench_aggregation_pandas_reference_matches_spark(spark: Any, tmp_path: Path) -> None:
    (result,) = bench_aggregation([3000], tmp_path, spark=spark, seed=2)
    assert result["rows"] == 3000 and result["cells"] == len(SCENARIOS) * 2 * 2
    assert result["results_match"] is True
    assert result["spark_seconds"] > 0 and result["pandas_seconds"] > 0
    assert not (tmp_path / "rows=3000").exists()          # data removed unless keep_data
