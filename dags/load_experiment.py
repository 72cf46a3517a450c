"""``load_experiment``: one load run (open loop, fan-out), triggered by hand from the UI's form."""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import dag

from kafkalab.airflow.chains.load import build_load_chain
from kafkalab.airflow.dag_args import dag_args
from kafkalab.airflow.forms import load_params
from kafkalab.airflow.run_ids import RUN_PREFIXES

DOC_MD = """
### Load experiment

One producer at a fixed target rate (open loop: message *i* is due at start + *i*/R, a late
send is never skipped nor caught up silently) fans out to N consumers that each receive
every message (seed 003's HYDRA). The **trigger form** gives the grid: consumers × rates ×
acks, with the settings every cell shares (duration, warm-up, payload, profile, client,
partitions, an optional consumer pause).

`name_run` → `start_load_run` (validates every cell against the client budget, checks the
cluster) → `run_load_cell` × cells (one at a time; each starts its consumer shards as
subprocesses, with a start barrier before the producer) → `finish_load_run` →
`aggregate_load` (Spark) → `validate_load` (Spark + Great Expectations) → `check_drift` →
`publish_report` → `send_alerts` → `verify_outcome`.

**Trigger rules.** `finish_load_run` runs when some cells failed (what was measured is kept,
the run is `incomplete`). `check_drift`, `publish_report` and `send_alerts` run `all_done`.
`verify_outcome` runs only when a task failed (`one_failed`) and fails itself, so the DAG run
is marked failed; in a healthy run it is *skipped*.

**Shard placement** `tasks`: each consumer shard is a `consume_load_shard` task of its own
(pool `kafkalab_shards`, a sensor that waits rescheduled until its cell starts), so on a
Celery or Kubernetes deployment one cell's consumers spread over the workers; the workers
must share the data directory. Needs a running scheduler (not `airflow dags test`).

**One measurement at a time.** `start_load_run` and `run_load_cell` run in the one-slot pool
`kafkalab_measure`, shared with the latency DAGs. The report shows the run's page: rx rate
and loss vs consumers per rate (acks side by side), latency vs throughput with the knee, lag
over time, every cell's figures.

Data: `$KAFKALAB_DATA_DIR` (default `<repo>/lab-data`). Connections: `spark_default`,
`kafkalab_cluster` (optional), `kafkalab_alert_webhook` (optional). See `docs/airflow.md`.
"""


@dag(**dag_args(
    schedule=None,
    retry_delay=timedelta(seconds=30),
    params=load_params(consumers=[1, 5], rates=[100.0, 500.0], duration_s=10.0, warmup_s=2.0),
    tags=["kafkalab", "load", "experiment"],
    doc_md=DOC_MD,
))
def load_experiment() -> None:
    build_load_chain(run_prefix=RUN_PREFIXES["load_experiment"])


load_experiment()
