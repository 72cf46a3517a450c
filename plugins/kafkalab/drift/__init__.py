"""Drift detection over the aggregates of successive runs.

One role per module:

| module | role |
|---|---|
| :mod:`kafkalab.drift.config` | the rules: ``include/drift.yaml`` validated into typed settings |
| :mod:`kafkalab.drift.records` | the drift record table: series columns, record columns, dtypes |
| :mod:`kafkalab.drift.busy` | a busy host: the cells' host figures, the ``busy_host`` rule (pure) |
| :mod:`kafkalab.drift.history` | reading aggregates + run facts, run order, drift files on disk |
| :mod:`kafkalab.drift.detect` | the robust rule (MAD + confidence intervals) on every series (pure) |
| :mod:`kafkalab.drift.episodes` | where a series stands: in alert, recovered, clear (pure) |
| :mod:`kafkalab.drift.acceptances` | accepted levels (``kafkalab drift accept``), ``drift/acceptances.json`` |
| :mod:`kafkalab.drift.task` | :func:`run_drift`: load, detect, store |

The rule and the record schema are documented in ``docs/drift-and-alerts.md``; where the
files live, in :mod:`kafkalab.store`.
"""

from kafkalab.drift.acceptances import (
    ACCEPTANCES_SCHEMA,
    Acceptance,
    load_acceptances,
    plan_acceptance,
    record_acceptance,
    save_acceptances,
)
from kafkalab.drift.busy import BUSY_VERDICT, HOST_COLUMNS, busy_reason
from kafkalab.drift.config import (
    AlertSettings,
    BusyHostRule,
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
    detect_drift,
    evaluate_series,
    series_key,
    undefined_reason,
)
from kafkalab.drift.episodes import Standing, Step, standing
from kafkalab.drift.history import (
    load_history,
    load_prior_records,
    read_drift,
    run_order,
    write_drift,
)
from kafkalab.drift.records import (
    DRIFT_COLUMNS,
    SERIES_COLUMNS,
    AlertStatus,
    Verdict,
    records_to_dicts,
)
from kafkalab.drift.task import run_drift

__all__ = [
    "ACCEPTANCES_SCHEMA",
    "BUSY_VERDICT",
    "DRIFT_COLUMNS",
    "HOST_COLUMNS",
    "MAD_SCALE",
    "SERIES_COLUMNS",
    "Acceptance",
    "AlertSettings",
    "AlertStatus",
    "BusyHostRule",
    "Direction",
    "DriftConfig",
    "DriftDefaults",
    "MetricRule",
    "ResolvedRule",
    "Standing",
    "Step",
    "Verdict",
    "busy_reason",
    "detect_drift",
    "evaluate_series",
    "load_acceptances",
    "load_drift_config",
    "load_drift_config_or_default",
    "load_history",
    "load_prior_records",
    "parse_drift_config",
    "plan_acceptance",
    "read_drift",
    "record_acceptance",
    "records_to_dicts",
    "run_drift",
    "run_order",
    "save_acceptances",
    "series_key",
    "standing",
    "undefined_reason",
    "write_drift",
]
