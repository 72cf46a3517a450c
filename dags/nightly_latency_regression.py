"""``nightly_latency_regression``: the nightly matrix of ``include/workloads/nightly.yaml``."""

from __future__ import annotations

import os
from datetime import timedelta

from airflow.sdk import dag

from kafkalab.airflow.chains.nightly import build_nightly_chain
from kafkalab.airflow.dag_args import dag_args
from kafkalab.airflow.forms import nightly_switch_params, run_params
from kafkalab.airflow.run_ids import (
    NIGHTLY_FANOUT_PREFIX,
    NIGHTLY_FAULTS_PREFIX,
    NIGHTLY_VERSIONS_PREFIX,
    RUN_PREFIXES,
)

DOC_MD = """
### Nightly latency regression

Every night (`$KAFKALAB_NIGHTLY_CRON`, default `@daily`) the matrix of
`include/workloads/nightly.yaml` (read by the tasks, not at parse time) is measured on the
cluster, aggregated and validated with Spark, compared with the previous runs (robust
drift rule, `include/drift.yaml`), published in the trend report and new drifts are
announced on the `kafkalab_alert_webhook` connection. A failed DAG run is announced too
(`on_failure_callback`).

400 messages a cell, so the p50 and p99 the alerts judge are defined (with two-sided 95 %
intervals). Its cluster tasks share the one-slot pool `kafkalab_measure` with every other
DAG. Same chain and trigger rules as `latency_experiment`: the report and the drift check run
even when validation failed; `verify_outcome` then fails the DAG run. One run at a time, no
catch-up; tasks retry once (validation never: it is deterministic). Lab run ids look like
`nightly-20261122T000000Z`: the night measured (the logical date), so a back-filled or
`dags test` night sorts where it belongs (`…-<hash>` when the Airflow run id names another
time). The run page's **Lab report** tab shows its report. See `docs/airflow.md`.

**Fan-out cell.** After the latency cells, one small load cell
(`include/workloads/nightly-fanout.yaml`: 5 consumers × 200 msg/s × 10 s, 1 KB, assign) is
measured as a load run of its own (`nightly-fanout-<time>`): `name_load_run` →
`start_load_run` → `run_load_cell` → `finish_load_run` → `aggregate_load` → `validate_load`;
`check_drift`, `publish_report`, `send_alerts` and `verify_outcome` cover both runs. The
param `fanout_cell` (default true) turns it off: `start_load_run` and what follows it are
then *skipped* (`make demo` does, to stay short).

**Metrics for dashboards.** After the report, `export_metrics` writes the Prometheus text
file (`$KAFKALAB_PROM_TEXTFILE`, default `<data>/metrics/kafkalab.prom`) for node_exporter's
textfile collector, whatever the night's outcome; `include/grafana/kafkalab.json` reads it
(`docs/prometheus.md`).

**Fault trial.** Then one SIGKILL of the partition leader under the durability profile, on
the 3-broker fault cluster, as a fault run of its own (`nightly-faults-<time>`):
`name_fault_run` → `start_fault_run` → `run_fault_trial` → `finish_fault_run` →
`aggregate_faults` → `validate_faults` (an acked message lost fails it). Its report page,
its alert and its verdict join the nightly's: `verify_outcome` fails the DAG run when the
trial lost an acked message. The param `fault_trial` (default true) turns it off:
`start_fault_run` and what follows it are then *skipped*.

**Version matrix.** When the param `version_matrix` names Kafka versions (the baseline
first; default none), the night ends with a version matrix on them (`nightly-versions-<time>`:
each version `version_matrix_rounds` times, default 3, alternating, on fresh one-broker
clusters; one load cell of 500 msg/s and one first-message trial a round): `name_matrix_run`
→ `run_matrix` → `finish_matrix` → `plan_aggregations` → `aggregate_version_run` →
`judge_versions`, which **fails** naming the series when a version regressed against the
first, so the DAG run fails and its `run_failed` alert says what regressed. No Spark job
runs while it measures. See `docs/versions.md`.
"""


@dag(**dag_args(
    schedule=os.environ.get("KAFKALAB_NIGHTLY_CRON", "@daily"),
    retry_delay=timedelta(minutes=2),
    params={**run_params(workload="nightly", scenarios=[], payloads=[], profiles=[],
                         messages=None),
            **nightly_switch_params()},
    tags=["kafkalab", "latency", "nightly", "regression"],
    doc_md=DOC_MD,
))
def nightly_latency_regression() -> None:
    build_nightly_chain(run_prefix=RUN_PREFIXES["nightly_latency_regression"],
                        fanout_prefix=NIGHTLY_FANOUT_PREFIX, fault_prefix=NIGHTLY_FAULTS_PREFIX,
                        matrix_prefix=NIGHTLY_VERSIONS_PREFIX)


nightly_latency_regression()
