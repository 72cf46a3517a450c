"""Lists that must be written twice because they cross a deployment boundary (the Spark jobs
run without most of the lab's package) or a presentation table: each copy is checked here
against its one source, so adding a scenario or a percentile cannot leave one behind."""

from __future__ import annotations

from fractions import Fraction

import pyarrow as pa

import spark_jobs._session as spark_session
import spark_jobs.validate_metrics as vm
from kafkalab import stats
from kafkalab.catalog import CATALOG, LOOP_MODES, SCENARIOS, scenario_spec
from kafkalab.report.latency_sections import BAR_COLORS
from kafkalab.samples import SAMPLE_SCHEMA
from kafkalab.scenarios.jvm_e2e import TOOL_STATISTICS, JvmEndToEndScenario
from kafkalab.scenarios.kafka_client import FIRST_MESSAGE_MODES
from kafkalab.stats import PERCENTILES

_SPARK_TYPE_OF_ARROW = {pa.string(): "StringType", pa.int64(): "LongType",
                        pa.int32(): "IntegerType", pa.float64(): "DoubleType",
                        pa.bool_(): "BooleanType"}


def test_validation_accepts_exactly_the_catalog_and_the_tool() -> None:
    assert vm.SAMPLE_VALUE_SETS["scenario"] == list(SCENARIOS)
    assert vm.SAMPLE_VALUE_SETS["statistic"] == list(TOOL_STATISTICS)
    assert vm.SAMPLE_VALUE_SETS["consumer_mode"] == list(FIRST_MESSAGE_MODES)
    assert vm.SAMPLE_VALUE_SETS["loop_mode"] == list(LOOP_MODES)


def test_validation_checks_exactly_the_samples_schema() -> None:
    expected = {"run_id": "StringType", "run_date": "StringType"} | {
        f.name: _SPARK_TYPE_OF_ARROW[f.type] for f in SAMPLE_SCHEMA}
    assert expected == vm.SAMPLE_SPARK_TYPES


def test_spark_e2e_percentiles_are_the_harness_percentiles() -> None:
    spark = [Fraction(num, den)
             for num, den in spark_session.METRIC_PERCENTILES["e2e_latency_ms"].values()]
    assert spark == [Fraction(str(q)) for q in PERCENTILES]
    assert spark_session.METRIC_PERCENTILES["e2e_latency_ms"] == stats.PERCENTILE_FRACTIONS


def test_every_spark_percentile_has_a_minimum_sample_count() -> None:
    for percentiles in spark_session.METRIC_PERCENTILES.values():
        assert set(percentiles) <= set(stats.MIN_SAMPLES)


def test_spark_jobs_use_the_harness_statistics_themselves() -> None:
    """No copy to keep in step: the jobs' ranks, minimum counts and intervals are
    ``kafkalab.stats`` itself (shipped to Spark nodes as a lone file)."""
    assert spark_session.stats is stats


def test_confidence_ranks_bracket_the_percentile_rank() -> None:
    """The intervals the jobs take: each holds the nearest rank, widens less than the sample
    grows, and is None on the side too few values can cover."""
    quantile_ci_ranks = spark_session.stats.quantile_ci_ranks
    for n in (10, 100, 1000, 100_000):
        lo, hi = quantile_ci_ranks(n, 0.5)
        rank = stats.fraction_rank(n, 1, 2)
        assert lo is not None and hi is not None and lo <= rank <= hi
        assert hi - lo < n
    assert quantile_ci_ranks(5, 0.5) == (None, None)   # 2 · 0.5^5 > 5 %
    assert quantile_ci_ranks(100, 0.99)[1] is None     # 0.99^100 > 2.5 %
    assert quantile_ci_ranks(0, 0.5) == (None, None)


def test_every_scenario_has_a_bar_colour_and_the_tool_is_the_catalog_client() -> None:
    assert set(SCENARIOS) <= set(BAR_COLORS)
    assert JvmEndToEndScenario().client == scenario_spec("jvm-e2e").client
    assert {s.name for s in CATALOG if not s.per_message} == {"jvm-e2e"}


def test_spark_host_busy_threshold_is_the_engines() -> None:
    from kafkalab.load.summary import HOST_BUSY_FRAC
    from spark_jobs.aggregate_load import HOST_BUSY_FRAC as SPARK_HOST_BUSY_FRAC

    assert SPARK_HOST_BUSY_FRAC == HOST_BUSY_FRAC
