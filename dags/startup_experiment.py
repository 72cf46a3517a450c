"""``startup_experiment``: seed 000's question — where a new consumer's first-message delay
goes — measured on the lab's own Kafka 4.x cluster, triggered by hand from the UI's form."""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import dag

from kafkalab.airflow.chains.startup import build_startup_chain
from kafkalab.airflow.dag_args import dag_args
from kafkalab.airflow.forms import startup_params
from kafkalab.airflow.run_ids import RUN_PREFIXES

DOC_MD = """
### Start-up experiment (seed 000: the first message's delay)

Times new consumers from their construction to their first record, and the parts of that
delay (client ready, partitions assigned, first fetch; on a cold cluster, when
`__consumer_offsets` was led and the group's coordinator answered), in every case the
**trigger form** asks for: the cluster's very first group (cold) or a warm cluster, the
broker's `group.initial.rebalance.delay.ms` (a cluster each), the classic or the KIP-848
consumer group protocol, one or several members, and `assign()` with no group, for each
client. kafka-python has no KIP-848 protocol: the run lists that pair as not measured.

The probes run on the run's **own one-node Kafka 4.x cluster** (`<lab>/startup`, ports in
the form), started fresh, wiped before every cold probe and stopped at the end, on the worker
that runs `run_startup`; never the cluster of the other runs.

`name_run` → `run_startup` (pool `kafkalab_measure`; never retried: a run is measured whole)
→ `aggregate_startup` (Spark: `startup_probes`, `startup_cases`, then in the same session
the Great Expectations suite `startup`) → `validate_startup` (its verdict) →
`publish_report` (the run's page: the answer in one line per question, the cases, a chart)
→ `verify_outcome`.

**Trigger rules.** A probe that times out is a row of the run: `run_startup` fails naming
how many, and `aggregate_startup` and `publish_report` still run (`all_done`) on what was
measured. `verify_outcome` runs only when a task failed (`one_failed`) and fails itself,
naming the run's problems, so the DAG run is marked failed; in a healthy run it is
*skipped*.

Data: `$KAFKALAB_DATA_DIR` (default `<repo>/lab-data`), probes under
`startup/run_date=…/run_id=startup-…/`. See `docs/first-message.md` and `docs/airflow.md`.
"""


@dag(**dag_args(
    schedule=None,
    retry_delay=timedelta(seconds=30),
    params=startup_params(clients=["confluent-kafka", "kafka-python"], delays_ms=[0, 3000],
                          protocols=["classic", "consumer"], members=[1, 3], trials=5),
    tags=["kafkalab", "startup", "experiment"],
    doc_md=DOC_MD,
))
def startup_experiment() -> None:
    build_startup_chain(run_prefix=RUN_PREFIXES["startup_experiment"])


startup_experiment()
