"""Drift detection over the aggregates of successive runs.

One role per module:

| module | role |
|---|---|
| :mod:`kafkalab.drift.config` | the rules: ``include/drift.yaml`` validated into typed settings |
| :mod:`kafkalab.drift.records` | the drift record table: columns, dtypes, plain-dict form |
| :mod:`kafkalab.drift.history` | reading aggregates + manifests, run order, drift files on disk |
| :mod:`kafkalab.drift.detect` | the robust rule applied to every series (pure) |
| :mod:`kafkalab.drift.task` | :func:`run_drift`: load, detect, store |

The rule and the record schema are documented in ``docs/drift-and-alerts.md``; where the
files live, in :mod:`kafkalab.store`.
"""

from kafkalab.drift.config import (
    AlertSettings,
    Direction,
    DriftConfig,
    DriftDefaults,
    MetricRule,
    ResolvedRule,
    load_drift_config,
    load_drift_config_or_default,
    parse_drift_config,
)
from kafkalab.drift.detect import (
    MAD_SCALE,
    SERIES_COLUMNS,
    detect_drift,
    evaluate_series,
    series_key,
)
from kafkalab.drift.history import load_history, read_drift, run_order, write_drift
from kafkalab.drift.records import DRIFT_COLUMNS, Verdict, records_to_dicts
from kafkalab.drift.task import run_drift

__all__ = [
    "DRIFT_COLUMNS",
    "MAD_SCALE",
    "SERIES_COLUMNS",
    "AlertSettings",
    "Direction",
    "DriftConfig",
    "DriftDefaults",
    "MetricRule",
    "ResolvedRule",
    "Verdict",
    "detect_drift",
    "evaluate_series",
    "load_drift_config",
    "load_drift_config_or_default",
    "load_history",
    "parse_drift_config",
    "read_drift",
    "records_to_dicts",
    "run_drift",
    "run_order",
    "series_key",
    "write_drift",
]
