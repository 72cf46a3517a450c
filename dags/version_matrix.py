"""``version_matrix``: does upgrading make us slower? One load cell on several Kafka versions,
triggered by hand from the UI's form."""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import dag

from kafkalab.airflow.chains.versions import build_version_chain
from kafkalab.airflow.dag_args import dag_args
from kafkalab.airflow.forms import version_params
from kafkalab.airflow.run_ids import RUN_PREFIXES

DOC_MD = """
### Version matrix

Runs one load cell on every Kafka version of the form (a pinned 4.x release, or 0.9.0.1, the
legacy point), **alternating** (A B, B A, ...) so a slow drift of the machine weighs on every
version alike, **each round on a fresh one-broker cluster** of that version
(`<lab>/versions/<version>`, ports 19892/19992, one at a time), one load run per version;
before each round's cell, the round's first-message trials (`startup_trials` of every
start-up case with the cell's client, on fresh clusters of the version), one start-up run
per version. Then judges every version against the first, series by series: the change of the median over
the rounds with its 95 % bootstrap interval, and the drift rule's verdict.

`name_run` → `run_matrix` (pool `kafkalab_measure`) → `finish_matrix` → `plan_aggregations` →
`aggregate_version_run` (Spark + Great Expectations, one per run: each version's load run
and start-up run, with its kind's job) → `judge_versions`
(fails naming the series and metrics when a version regressed) → `verify_outcome` (only when
a task failed). The matrix file: `versions/<run id>.json`; see `docs/versions.md`.
"""


@dag(**dag_args(
    schedule=None,
    retry_delay=timedelta(seconds=30),
    params=version_params(versions=["4.1.2", "4.4.0"], rounds=3, rate_msgs_per_s=500.0,
                          duration_s=12.0),
    tags=["kafkalab", "versions", "experiment"],
    doc_md=DOC_MD,
))
def version_matrix() -> None:
    build_version_chain(run_prefix=RUN_PREFIXES["version_matrix"])


version_matrix()
