"""``resilience_experiment``: broker faults (durability and availability), triggered by hand
from the UI's form."""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import dag

from kafkalab.airflow.chains.faults import build_fault_chain
from kafkalab.airflow.dag_args import dag_args
from kafkalab.airflow.forms import fault_params
from kafkalab.airflow.run_ids import RUN_PREFIXES

DOC_MD = """
### Resilience experiment

Breaks the 3-broker **fault cluster** (`<lab>/faults`, Kafka 4.x on KRaft: three combined
broker+controller nodes, started or reused by the run; never the cluster of the latency and
load runs) while a fixed-rate producer writes
to a fresh topic, heals it, re-reads every partition and counts every acked message that
was lost, every failed one that is present, duplicates, reordering, and how long producers
and the consumer went without progress. The **trigger form** gives the matrix: profiles ×
faults × acks, each cell `trials` times (median and max in the report), at one rate and
duration. Fault `none` is the no-fault control.

`name_run` → `start_fault_run` (validates every trial, starts the fault cluster) →
`run_fault_trial` × trials (one at a time, trial 1 of every cell first; the map index reads
`durability sigkill-leader #1`) → `finish_fault_run` → `aggregate_faults` (Spark) →
`validate_faults` (Spark + Great Expectations: under the durability profile no acked message
may be lost) → `publish_report` → `send_alerts` → `verify_outcome`.

**Trigger rules.** `finish_fault_run` runs when some trials failed (what was measured is
kept, the run is `incomplete`). `publish_report` and `send_alerts` run `all_done`: a loss
under the durability profile fails `validate_faults`, and still gets its report page (the
loss shown as a finding) and its alert. `verify_outcome` runs only when a task failed
(`one_failed`) and fails itself, naming the failed checks, so the DAG run is marked failed;
in a healthy run it is *skipped*. A trial that finds loss is a result, never retried away.

**One measurement at a time.** `start_fault_run` and `run_fault_trial` run in the one-slot
pool `kafkalab_measure`, shared with every other DAG.

Data: `$KAFKALAB_DATA_DIR` (default `<repo>/lab-data`), trials under
`faults/run_date=…/run_id=faults-…/trial=…/`. Connections: `spark_default`,
`kafkalab_alert_webhook` (optional). See `docs/airflow.md` and `docs/faults.md`.
"""


@dag(**dag_args(
    schedule=None,
    retry_delay=timedelta(seconds=30),
    params=fault_params(profiles=["durability"], faults=["none", "sigkill-leader"], trials=5,
                        rate_msgs_per_s=500.0, duration_s=None),
    tags=["kafkalab", "faults", "experiment"],
    doc_md=DOC_MD,
))
def resilience_experiment() -> None:
    build_fault_chain(run_prefix=RUN_PREFIXES["resilience_experiment"])


resilience_experiment()
