"""Lists that must be written twice because they cross a deployment boundary (the Spark jobs
run without most of the lab's package) or a presentation table: each copy is checked here
against its one source, so adding a scenario or a percentile cannot leave one behind."""

from __future__ import annotations

from fractions import Fraction

import spark_jobs._session as spark_session
import spark_jobs.validate_metrics as vm
from kafkalab.report.sections import BAR_COLORS
from kafkalab.scenarios.catalog import CATALOG, SCENARIOS, scenario_spec
from kafkalab.scenarios.jvm_e2e import TOOL_STATISTICS, JvmEndToEndScenario
from kafkalab.scenarios.kafka_client import FIRST_MESSAGE_MODES
from kafkalab.stats import PERCENTILES


def test_validation_accepts_exactly_the_catalog_and_the_tool() -> None:
    assert vm.SAMPLE_VALUE_SETS["scenario"] == list(SCENARIOS)
    assert vm.SAMPLE_VALUE_SETS["statistic"] == list(TOOL_STATISTICS)
    assert vm.SAMPLE_VALUE_SETS["consumer_mode"] == list(FIRST_MESSAGE_MODES)


def test_spark_e2e_percentiles_are_the_harness_percentiles() -> None:
    spark = [Fraction(num, den)
             for num, den in spark_session.METRIC_PERCENTILES["e2e_latency_ms"].values()]
    assert spark == [Fraction(str(q)) for q in PERCENTILES]


def test_every_scenario_has_a_bar_colour_and_the_tool_is_the_catalog_client() -> None:
    assert set(SCENARIOS) <= set(BAR_COLORS)
    assert JvmEndToEndScenario().client == scenario_spec("jvm-e2e").client
    assert {s.name for s in CATALOG if not s.per_message} == {"jvm-e2e"}
