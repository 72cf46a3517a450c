"""``kafkalab aggregate --one-session`` for real: a run with samples and a manifest but no
aggregates (as ``kafkalab run`` leaves it) gets the DAG's Spark aggregation and validation
through one spark-submit (the aggregation validates in its own session, as the DAG param
``one_spark_session``), its drift records and a report page that shows its cells; its stale
outputs are cleared. The master comes from ``KAFKALAB_SPARK_MASTER`` as in the DAGs.

Without ``--one-session`` the validation is a job of its own, submitted by the same
``submit`` (run for real by ``test_spark_connect.py``'s fault run, whose kind always takes two
jobs); ``validate_metrics.py``'s own spark-submit runs in ``test_validate_metrics.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from kafkalab.paths import project_root
from kafkalab.store import LabData
from tools.fake_samples import write_cli_manifest, write_fake_samples

RUN = "20261122T030405Z-c1a99e"


def test_aggregate_gives_a_cli_run_its_cells_drift_and_report(tmp_path: Path) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    write_fake_samples(data, 1500, RUN, seed=5, scenarios=["confluent-kafka", "kafka-python"],
                       payloads=["1kb"], profiles=["durability"])
    write_cli_manifest(data, RUN)
    lab = LabData(data)
    env = {**os.environ, "KAFKALAB_HOME": str(home), "KAFKALAB_SPARK_MASTER": "local[2]"}
    env.pop("KAFKALAB_DATA_DIR", None)
    proc = subprocess.run([sys.executable, "-m", "kafkalab.cli", "aggregate", "--data-dir",
                           str(data), "--json", "--one-session"], capture_output=True,
                          text=True, env=env, cwd=project_root(), timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    doc = json.loads(proc.stdout)  # exactly one JSON document on stdout
    assert doc["run_id"] == RUN and doc["kind"] == "latency" and doc["master"] == "local[2]"
    assert [(j["job"], j["exit_code"], j["in_session"]) for j in doc["jobs"]] == [
        ("aggregate", 0, False), ("validate", 0, True)]
    assert doc["validation_success"] is True
    for job in doc["jobs"]:  # the DAG's job, on the master the switch named
        first = Path(job["log"]).read_text().splitlines()[0]
        assert "--master local[2]" in first and str(home / "logs") in job["log"]
    assert "spark-submit aggregate_metrics.py --run-id " + RUN in proc.stderr
    assert "spark-submit validate_metrics.py" not in proc.stderr  # one JVM start, not two

    agg = pd.read_parquet(lab.aggregates_dir / f"run_id={RUN}")
    assert sorted(agg["scenario"]) == ["confluent-kafka", "kafka-python"]
    assert (lab.validation(RUN) or {}).get("success") is True
    records = lab.drift(RUN)
    assert records is not None and doc["drift"]["series"] == len(records) > 0
    assert set(records["verdict"]) == {"insufficient_history"}  # the first run of its series
    page = Path(doc["report"]).read_text()
    assert doc["report"] == str(lab.report_page_dir(RUN) / "index.html")
    for scenario in ("confluent-kafka", "kafka-python"):
        assert f"<td>{scenario}</td>" in page or f">{scenario}<" in page
    assert (lab.manifest(RUN) or {}).get("stale_outputs") == []

    # the aggregated run is a good baseline and comparable with itself: nothing regressed
    cmp_ = subprocess.run([sys.executable, "-m", "kafkalab.cli", "compare", RUN, RUN,
                           "--data-dir", str(data), "--json"], capture_output=True, text=True,
                          env=env, cwd=project_root(), timeout=120, check=False)
    assert cmp_.returncode == 0, cmp_.stderr
    same = json.loads(cmp_.stdout)
    assert same["comparable"] is True and same["baseline_ok"] is True and same["regressed"] == 0
    assert same["run_a_facts"]["validation"] == "passed" and same["judged"] > 0
    assert sorted(s["label"].split()[0] for s in same["shared"]) == ["confluent-kafka",
                                                                    "kafka-python"]
