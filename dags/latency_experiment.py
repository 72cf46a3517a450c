"""``latency_experiment``: one latency run, triggered by hand from the UI's form."""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import dag

from kafkalab.airflow.chains.latency import build_latency_chain
from kafkalab.airflow.dag_args import dag_args
from kafkalab.airflow.forms import run_params
from kafkalab.airflow.run_ids import RUN_PREFIXES
from kafkalab.catalog import SCENARIOS
from kafkalab.config.loader import DEFAULT_WORKLOAD

DOC_MD = """
### Latency experiment

Runs one latency experiment, chosen in the **trigger form**: scenarios × payloads ×
profiles of a workload, each cell measured as its own (mapped) task, then aggregated and
validated with Spark, drift-checked, reported and announced.

`name_run` → `check_cluster` → `prepare_run` (topics) → `measure_cell` × cells (one at a time)
→ `close_run` → `aggregate_metrics` (Spark) → `validate_metrics` (Spark + Great Expectations)
→ `check_drift` → `publish_report` → `send_alerts` → `verify_outcome`.

**Trigger rules.** `close_run` runs when some cells failed (what was measured is kept, the
run is `incomplete`). `check_drift`, `publish_report` and `send_alerts` run `all_done`: a
failed validation still gets a report that shows it. `verify_outcome` runs only when a task
failed (`one_failed`) and fails itself, so the DAG run is marked failed; in a healthy run it
is *skipped*.

**One measurement at a time.** `prepare_run` and `measure_cell` run in the one-slot pool
`kafkalab_measure`, shared with the nightly DAG: two DAGs never load the cluster at once.
**Re-measured cells.** When a cell of a run is measured again, the run's aggregates,
validation, drift records and report are marked stale; the tasks that compute them recompute
and clear the mark.

Data: `$KAFKALAB_DATA_DIR` (default `<repo>/lab-data`). Connections: `spark_default`,
`kafkalab_cluster` (optional, `extra.descriptor_path`), `kafkalab_alert_webhook` (optional).
See `docs/airflow.md`.
"""


@dag(**dag_args(
    schedule=None,
    retry_delay=timedelta(seconds=30),
    params=run_params(workload=DEFAULT_WORKLOAD, scenarios=list(SCENARIOS), payloads=["1mb"],
                      profiles=["latency"], messages=20),
    tags=["kafkalab", "latency", "experiment"],
    doc_md=DOC_MD,
))
def latency_experiment() -> None:
    build_latency_chain(run_prefix=RUN_PREFIXES["latency_experiment"])


latency_experiment()
