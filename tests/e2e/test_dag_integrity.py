"""DAG integrity: the DagBag is parsed ONCE per session, with no database, no connections and
a data directory that does not exist; parsing must not touch the lab's files or the network.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kafkalab.airflow.pools import CLUSTER_TASKS, MEASURE_POOL
from kafkalab.errors import ConfigError
from kafkalab.paths import dags_dir, data_dir, include_dir, lab_dir, spark_jobs_dir
from kafkalab.spark.submit import spark_py_files

DAGS = dags_dir()
LAB_PATHS = (str(include_dir()), str(data_dir()), str(lab_dir()))
"""What the lab would read or write with this environment (none of it may be opened)."""
LATENCY_DAGS = ("latency_experiment", "nightly_latency_regression")
DAG_IDS = (*LATENCY_DAGS, "load_experiment", "resilience_experiment", "startup_experiment",
           "version_matrix")
CHAIN = ("name_run", "check_cluster", "prepare_run", "measure_cell", "close_run",
         "aggregate_metrics", "validate_metrics", "check_drift", "publish_report",
         "send_alerts", "verify_outcome")
LOAD_PART = ("start_load_run", "run_load_cell", "finish_load_run", "aggregate_load",
             "validate_load")
FAULT_PART = ("start_fault_run", "run_fault_trial", "finish_fault_run", "aggregate_faults",
              "validate_faults")
MATRIX_PART = ("run_matrix", "finish_matrix", "plan_aggregations", "aggregate_version_run",
               "plan_validations", "validate_version_run", "judge_versions")
TASKS = {
    "latency_experiment": CHAIN,
    "nightly_latency_regression": (*CHAIN, "export_metrics", "name_load_run",
                                   *LOAD_PART, "name_fault_run", *FAULT_PART,
                                   "name_matrix_run", *MATRIX_PART),
    "load_experiment": ("name_run", *LOAD_PART[:2], "plan_shards", "consume_load_shard",
                        *LOAD_PART[2:], "check_drift", "publish_report", "send_alerts",
                        "verify_outcome"),
    "resilience_experiment": ("name_run", *FAULT_PART, "publish_report", "send_alerts",
                              "verify_outcome"),
    "startup_experiment": ("name_run", "run_startup", "aggregate_startup", "validate_startup",
                           "publish_report", "verify_outcome"),
    "version_matrix": ("name_run", *MATRIX_PART, "verify_outcome"),
}
"""Every DAG's task ids, in definition order."""
IN_POOL = {
    "latency_experiment": {"prepare_run", "measure_cell"},
    "nightly_latency_regression": {"prepare_run", "measure_cell", "start_load_run",
                                   "run_load_cell", "start_fault_run", "run_fault_trial",
                                   "run_matrix"},
    "load_experiment": {"start_load_run", "run_load_cell"},
    "resilience_experiment": {"start_fault_run", "run_fault_trial"},
    "startup_experiment": {"run_startup"},
    "version_matrix": {"run_matrix"},
}
"""The cluster-loading tasks of each DAG (the measuring pool's)."""

_events: list[tuple[str, str]] = []
_recording = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _recording:
        return
    if event == "open":
        path, mode = str(args[0]), str(args[1] or "r")
        _events.append(("open-" + ("w" if any(c in mode for c in "wax+") else "r"), path))
    elif event in ("socket.connect", "socket.sendto", "urllib.Request", "subprocess.Popen"):
        _events.append((event, repr(args[:2])))


sys.addaudithook(_audit)  # audit hooks cannot be removed: it records only while parsing


@pytest.fixture(scope="session")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Parse dags/ once, recording every file open, socket and subprocess while parsing."""
    global _recording
    root = tmp_path_factory.mktemp("dagbag")
    missing_data = root / "no-such-data-dir"
    missing_home = root / "no-such-lab-home"
    env = {
        "AIRFLOW_HOME": str(root / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "True",
        "KAFKALAB_DATA_DIR": str(missing_data),
        "KAFKALAB_HOME": str(missing_home),
        "KAFKALAB_NIGHTLY_CRON": "30 2 * * *",
    }
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        from airflow.dag_processing.dagbag import BundleDagBag

        _events.clear()
        _recording = True
        try:
            bag = BundleDagBag(dag_folder=str(DAGS), bundle_path=DAGS)
        finally:
            _recording = False
        yield {"bag": bag, "events": list(_events), "data": missing_data, "home": missing_home}


def test_no_import_errors(parsed: dict[str, Any]) -> None:
    assert parsed["bag"].import_errors == {}


def test_dag_ids(parsed: dict[str, Any]) -> None:
    assert set(DAG_IDS) <= set(parsed["bag"].dag_ids)


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_tags_owner_retries_docs(parsed: dict[str, Any], dag_id: str) -> None:
    dag = parsed["bag"].dags[dag_id]
    assert "kafkalab" in dag.tags
    kind = {"load_experiment": "load", "resilience_experiment": "faults",
            "startup_experiment": "startup", "version_matrix": "versions"}.get(dag_id, "latency")
    assert kind in dag.tags
    assert dag.doc_md and "verify_outcome" in dag.doc_md
    for t in dag.tasks:
        assert t.owner == "kafkalab", t.task_id
    assert dag.default_args["retries"] >= 1
    assert isinstance(dag.default_args["retry_delay"], timedelta)
    assert tuple(t.task_id for t in dag.tasks) == TASKS[dag_id]


@pytest.mark.parametrize("dag_id", LATENCY_DAGS)
def test_chain_and_trigger_rules(parsed: dict[str, Any], dag_id: str) -> None:
    dag = parsed["bag"].dags[dag_id]
    up = {t.task_id: set(t.upstream_task_ids) for t in dag.tasks}
    assert up["check_cluster"] == {"name_run"}
    assert up["prepare_run"] >= {"name_run", "check_cluster"}
    assert up["measure_cell"] >= {"prepare_run"}
    assert up["close_run"] >= {"measure_cell"}
    assert up["aggregate_metrics"] >= {"close_run", "name_run"}  # run id through XCom
    assert up["validate_metrics"] >= {"aggregate_metrics"}
    assert up["check_drift"] >= {"validate_metrics"}
    assert up["publish_report"] >= {"check_drift"}
    assert up["send_alerts"] >= {"publish_report"}
    assert up["verify_outcome"] == set(TASKS[dag_id]) - {"verify_outcome"}
    rules = {t.task_id: getattr(t.trigger_rule, "value", t.trigger_rule) for t in dag.tasks}
    for tid in ("close_run", "check_drift", "publish_report", "send_alerts"):
        assert rules[tid] == "all_done", tid
    assert rules["verify_outcome"] == "one_failed"
    assert rules["aggregate_metrics"] == rules["validate_metrics"] == "all_success"


@pytest.mark.parametrize("dag_id", ["load_experiment", "nightly_latency_regression"])
def test_load_chain_and_trigger_rules(parsed: dict[str, Any], dag_id: str) -> None:
    """The load part: cells mapped after the run starts, closed all_done, Spark after every
    measurement; the nightly's fan-out run after its latency cells, judged with them."""
    dag = parsed["bag"].dags[dag_id]
    up = {t.task_id: set(t.upstream_task_ids) for t in dag.tasks}
    rules = {t.task_id: getattr(t.trigger_rule, "value", t.trigger_rule) for t in dag.tasks}
    naming = "name_run" if dag_id == "load_experiment" else "name_load_run"
    assert up["start_load_run"] == {naming}
    assert up["run_load_cell"] >= {"start_load_run", naming}
    assert up["finish_load_run"] >= {"run_load_cell"}
    assert up["aggregate_load"] >= {"finish_load_run", naming}
    assert up["validate_load"] >= {"aggregate_load"}
    assert up["check_drift"] >= {"validate_load"}
    assert rules["finish_load_run"] == "all_done"
    assert rules["aggregate_load"] == rules["validate_load"] == "all_success"
    assert rules["start_load_run"] == rules["run_load_cell"] == "all_success"
    assert up["verify_outcome"] == set(TASKS[dag_id]) - {"verify_outcome"}
    if dag_id == "nightly_latency_regression":
        assert up["export_metrics"] == {"publish_report"} and rules["export_metrics"] == "all_done"
        assert up["name_load_run"] == {"close_run"}  # after the latency cells
        assert up["aggregate_metrics"] >= {"close_run", "finish_load_run"}  # no Spark while
        # a load cell measures
    else:
        assert up["publish_report"] >= {"check_drift"} and up["send_alerts"] >= {"publish_report"}


def test_load_cells_are_mapped_one_at_a_time_with_readable_names(parsed: dict[str, Any]) -> None:
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    for dag_id in ("load_experiment", "nightly_latency_regression"):
        cell = parsed["bag"].dags[dag_id].get_task("run_load_cell")
        assert isinstance(cell, MappedOperator)
        assert cell.max_active_tis_per_dag == 1
        assert cell.map_index_template == "{{ cell_label }}"
        op = parsed["bag"].dags[dag_id].get_task("aggregate_load")
        assert op.application == str(spark_jobs_dir() / "aggregate_load.py")
        args = [a for a in op.application_args if isinstance(a, str)]
        assert args[:4] == ["--load", str(parsed["data"] / "load"), "--out",
                            str(parsed["data"] / "aggregates" / "load")]
        val = parsed["bag"].dags[dag_id].get_task("validate_load")
        assert val.application == str(spark_jobs_dir() / "validate_load.py")
        assert val.retries == 0 and val.stale_output == "validation"
        assert op.stale_output == "aggregates" and op.py_files == spark_py_files()


@pytest.mark.parametrize("dag_id", ["resilience_experiment", "nightly_latency_regression"])
def test_fault_chain_and_trigger_rules(parsed: dict[str, Any], dag_id: str) -> None:
    """The fault part: trials mapped after the run starts, closed all_done, Spark after every
    measurement; the nightly's fault run after its fan-out cell, judged with the others."""
    dag = parsed["bag"].dags[dag_id]
    up = {t.task_id: set(t.upstream_task_ids) for t in dag.tasks}
    rules = {t.task_id: getattr(t.trigger_rule, "value", t.trigger_rule) for t in dag.tasks}
    naming = "name_run" if dag_id == "resilience_experiment" else "name_fault_run"
    assert up["start_fault_run"] == {naming}
    assert up["run_fault_trial"] >= {"start_fault_run", naming}
    assert up["finish_fault_run"] >= {"run_fault_trial"}
    assert up["aggregate_faults"] >= {"finish_fault_run", naming}
    assert up["validate_faults"] >= {"aggregate_faults"}
    assert rules["finish_fault_run"] == "all_done"
    assert rules["aggregate_faults"] == rules["validate_faults"] == "all_success"
    assert rules["start_fault_run"] == rules["run_fault_trial"] == "all_success"
    assert up["verify_outcome"] == set(TASKS[dag_id]) - {"verify_outcome"}
    for tid in ("publish_report", "send_alerts"):
        assert rules[tid] == "all_done", tid
    if dag_id == "nightly_latency_regression":
        assert up["name_fault_run"] == {"finish_load_run"}  # after the fan-out cell
        # no Spark job while the fault trial measures
        assert up["aggregate_metrics"] >= {"finish_fault_run"}
        assert up["aggregate_load"] >= {"finish_fault_run"}
        assert up["check_drift"] >= {"validate_faults"}
    else:
        assert up["publish_report"] >= {"validate_faults"}
        assert up["send_alerts"] >= {"publish_report"}


@pytest.mark.parametrize("dag_id", ["version_matrix", "nightly_latency_regression"])
def test_version_matrix_chain_and_trigger_rules(parsed: dict[str, Any], dag_id: str) -> None:
    """The matrix part: measured, fenced all_done, one mapped Spark job per run (its kind's
    application in the kwargs), judged; the nightly's matrix after its fault trial, and no
    Spark job of the night before it is done."""
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    dag = parsed["bag"].dags[dag_id]
    up = {t.task_id: set(t.upstream_task_ids) for t in dag.tasks}
    rules = {t.task_id: getattr(t.trigger_rule, "value", t.trigger_rule) for t in dag.tasks}
    naming = "name_run" if dag_id == "version_matrix" else "name_matrix_run"
    assert up["run_matrix"] == {naming}
    assert up["finish_matrix"] == {"run_matrix", naming}
    assert up["plan_aggregations"] == {"finish_matrix", naming}
    assert up["aggregate_version_run"] == {"plan_aggregations"}
    assert up["plan_validations"] == {"aggregate_version_run", naming}
    assert up["validate_version_run"] == {"plan_validations"}
    assert up["judge_versions"] == {"validate_version_run", naming}
    assert rules["finish_matrix"] == "all_done"
    assert rules["run_matrix"] == "all_success"
    assert rules["judge_versions"] == "none_failed_min_one_success"
    assert dag.get_task("run_matrix").retries == 0
    agg = dag.get_task("aggregate_version_run")
    assert isinstance(agg, MappedOperator) and "application" not in agg.partial_kwargs
    assert up["verify_outcome"] == set(TASKS[dag_id]) - {"verify_outcome"}
    if dag_id == "nightly_latency_regression":
        assert up["name_matrix_run"] == {"finish_fault_run"}
        for spark in ("aggregate_metrics", "aggregate_load", "aggregate_faults"):
            assert up[spark] >= {"finish_matrix"}, spark
        assert dag.params["version_matrix"] == [] and dag.params["version_matrix_rounds"] == 3


def test_the_nightly_matrix_is_off_without_versions_and_its_workload_is_fixed(
        parsed: dict[str, Any], tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalab.airflow import version_tasks as vt

    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(tmp_path / "data"))
    assert vt.nightly_matrix_on({}) is False and vt.nightly_matrix_on({"version_matrix": []}) is False
    with pytest.raises(ConfigError, match="param version_matrix: expected a list"):
        vt.nightly_matrix_on({"version_matrix": "4.4.0"})
    params = vt.nightly_matrix_params({"version_matrix": ["4.1.2", "4.4.0"],
                                       "version_matrix_rounds": 1})
    spec = vt.matrix_spec(params)
    assert spec.versions == ["4.1.2", "4.4.0"] and spec.rounds == 1
    assert spec.cell.rate_msgs_per_s == 500 and spec.startup.trials == 1
    assert vt.matrix_spec(vt.nightly_matrix_params({"version_matrix": ["4.1.2", "4.4.0"]})
                          ).rounds == 3
    assert vt.matrix_spec(vt.nightly_matrix_params({"version_matrix": ["4.1.2", "4.4.0"],
                                                    "version_matrix_ports": [25693, 25694]})
                          ).base_port == 25693
    with pytest.raises(ConfigError, match="param version_matrix_ports: expected"):
        vt.nightly_matrix_params({"version_matrix": ["4.4.0"], "version_matrix_ports": [1]})
    # a part's field is named by its own param
    with pytest.raises(ConfigError, match="param fault_trials: "):
        vt.matrix_spec({"versions": ["4.1.2", "4.4.0"], "fault_trials": 11})
    with pytest.raises(ConfigError, match="param startup_trials: "):
        vt.matrix_spec({"versions": ["4.1.2", "4.4.0"], "startup_trials": 11})
    assert vt.matrix_spec({"versions": ["4.1.2", "4.4.0"], "fault_trials": 2}).faults.trials == 2
    # never started (turned off): nothing to aggregate, the fence says so
    assert vt.aggregation_jobs("nightly-versions-x") == []
    assert vt.finish_matrix("nightly-versions-x") == {"matrix_id": "nightly-versions-x",
                                                      "status": "not started"}
    # the watcher names a regression the verdict recorded
    from kafkalab.errors import RunError
    from kafkalab.store import LabData, atomic_write_json

    lab = LabData(tmp_path / "data")
    lab.matrices_dir.mkdir(parents=True)
    atomic_write_json(lab.matrix_path("m"), {"matrix_id": "m", "status": "complete",
                                             "steps": [], "runs": {}, "spec": {}})
    vt.verify_matrix_outcome("m")  # complete, not judged yet
    atomic_write_json(lab.matrix_verdict_path("m"), {"baseline": "4.1.2", "regressed": 1,
                      "series": [{"label": "first msg cold subscribe classic m1 delay 0",
                                  "metrics": [{"version": "4.4.0", "metric": "first_record_ms",
                                               "verdict": "regressed"}]}]})
    with pytest.raises(RunError, match=r"m: 1 metric\(s\) regressed against Kafka 4\.1\.2: "
                       r"Kafka 4\.4\.0 first msg cold subscribe classic m1 delay 0 first_rec"):
        vt.verify_matrix_outcome("m")
    # a load run validated in its aggregation's session exits 0 whatever GX said: the watcher
    # and judge_versions read its result (a fault run's validation is a task of its own)
    atomic_write_json(lab.matrix_path("v"), {
        "matrix_id": "v", "status": "complete", "spec": {}, "runs": {"4.4.0": "v-load"},
        "faults_runs": {"4.4.0": "v-faults"},
        "steps": [{"round": 1, "version": "4.4.0", "run_id": "v-load", "status": "complete",
                   "faults_run_id": "v-faults", "faults_status": "complete"}]})
    # the Spark jobs planned for it: the load run aggregated and validated in one session,
    # the fault run aggregated, then validated by a job of its own
    from kafkalab.spark.submit import spark_application, spark_job_args

    jobs = vt.aggregation_jobs("v")
    assert [(j["lab_run_id"], Path(j["application"]).name) for j in jobs] == [
        ("v-load", "aggregate_load.py"), ("v-faults", "aggregate_faults.py")]
    assert jobs[0]["application_args"] == [*spark_job_args("aggregate_load", "v-load", lab.root),
                                           "--validate-out", str(lab.validation_dir)]
    assert jobs[1]["application_args"] == spark_job_args("aggregate_faults", "v-faults",
                                                         lab.root)
    assert vt.validation_jobs("v") == [{
        "lab_run_id": "v-faults", "application": spark_application("validate_faults"),
        "application_args": spark_job_args("validate_faults", "v-faults", lab.root)}]
    with pytest.raises(RunError, match=r"version matrix v: run v-load: no validation result"):
        vt.verify_matrix_outcome("v")
    lab.validation_dir.mkdir(parents=True)
    atomic_write_json(lab.validation_path("v-load", "load"), {
        "success": False, "failed_expectations": [{"summary": "lost_msgs == 0"}]})
    assert vt.validation_problems("v") == [
        "run v-load: validation failed (1 expectations): lost_msgs == 0 (see "
        f"{lab.validation_path('v-load', 'load')})"]
    with pytest.raises(RunError, match=r"run v-load: validation failed \(1 expectations\)"):
        vt.verify_matrix_outcome("v")
    atomic_write_json(lab.validation_path("v-load", "load"), {"success": True})
    vt.verify_matrix_outcome("v")


def test_fault_trials_are_mapped_one_at_a_time_with_readable_names(
        parsed: dict[str, Any]) -> None:
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    for dag_id in ("resilience_experiment", "nightly_latency_regression"):
        dag = parsed["bag"].dags[dag_id]
        trial = dag.get_task("run_fault_trial")
        assert isinstance(trial, MappedOperator)
        assert trial.max_active_tis_per_dag == 1
        assert trial.map_index_template == "{{ trial_label }}"
        agg = dag.get_task("aggregate_faults")
        assert agg.application == str(spark_jobs_dir() / "aggregate_faults.py")
        args = [a for a in agg.application_args if isinstance(a, str)]
        assert args[:4] == ["--faults", str(parsed["data"] / "faults"), "--out",
                            str(parsed["data"] / "aggregates" / "faults")]
        val = dag.get_task("validate_faults")
        assert val.application == str(spark_jobs_dir() / "validate_faults.py")
        args = [a for a in val.application_args if isinstance(a, str)]
        assert args[:2] == ["--aggregates", str(parsed["data"] / "aggregates" / "faults")]
        assert args[-2:] == ["--out", str(parsed["data"] / "validation")]
        assert val.retries == 0 and agg.py_files == spark_py_files()
        assert agg._conn_id == "spark_default"


def test_fault_params_form(parsed: dict[str, Any]) -> None:
    import copy

    from airflow.sdk.exceptions import ParamValidationError

    from kafkalab.faults.spec import FAULTS

    dag = parsed["bag"].dags["resilience_experiment"]
    assert type(dag.timetable).__name__ == "NullTimetable"
    p = {k: dag.params.get_param(k) for k in dag.params}
    assert set(p) == {"profiles", "faults", "acks", "trials", "rate_msgs_per_s", "duration_s",
                      "commits", "consumers", "session_timeout_ms", "clients", "idempotence",
                      "static_membership", "rebalance", "txn_msgs", "txn_abort_every"}
    assert p["clients"].value == [] and p["idempotence"].value == []
    assert p["commits"].value == ["after"] and p["session_timeout_ms"].value is None
    assert p["trials"].value == 5
    assert p["faults"].schema["items"]["enum"] == list(FAULTS)
    assert "none" in p["faults"].value  # the no-fault control runs with the faults
    profiles = sorted(f.stem for f in (include_dir() / "profiles").glob("*.yaml"))
    assert sorted(p["profiles"].schema["items"]["enum"]) == profiles
    form = copy.deepcopy(dag.params)
    with pytest.raises(ParamValidationError, match="is not one of"):
        form["faults"] = ["sigkill"]
    with pytest.raises(ParamValidationError):
        form["trials"] = 0
    with pytest.raises(ParamValidationError):
        form["profiles"] = []
    with pytest.raises(ParamValidationError):
        form["rate_msgs_per_s"] = 0
    form["acks"] = ["1", "all"]
    with pytest.raises(ParamValidationError, match="is not one of"):
        form["commits"] = ["sometimes"]
    with pytest.raises(ParamValidationError):
        form["session_timeout_ms"] = 500
    form["commits"] = ["auto", "after", "before"]
    form["session_timeout_ms"] = 6000
    form["clients"] = ["confluent-kafka", "kafka-python"]
    form["idempotence"] = ["on", "off"]
    with pytest.raises(ParamValidationError, match="is not one of"):
        form["idempotence"] = ["maybe"]
    assert p["txn_msgs"].value == [] and p["txn_abort_every"].value is None
    form["txn_msgs"] = [0, 10]
    form["txn_abort_every"] = 3
    with pytest.raises(ParamValidationError):
        form["txn_msgs"] = [-1]
    with pytest.raises(ParamValidationError):
        form["txn_abort_every"] = 1
    nightly = parsed["bag"].dags["nightly_latency_regression"]
    switch = nightly.params.get_param("fault_trial")
    assert switch.value is True and switch.schema["type"] == "boolean"
    with pytest.raises(ParamValidationError):
        copy.deepcopy(nightly.params)["fault_trial"] = "no"


@pytest.mark.parametrize("started", [False, True])
def test_a_fault_spark_task_is_skipped_when_the_run_never_started(
        parsed: dict[str, Any], tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
        started: bool) -> None:
    """The nightly with its fault trial off has no fault run: aggregate_faults skips
    (spark-submit itself is replaced by a stand-in)."""
    import copy

    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.sdk.exceptions import AirflowSkipException

    from kafkalab.store import LabData

    lab = LabData(tmp_path / "data")
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(lab.root))
    submitted: list[str] = []
    monkeypatch.setattr(SparkSubmitOperator, "execute",
                        lambda self, context: submitted.append(self.task_id))
    if started:
        lab.write_manifest({"run_id": "nightly-faults-x", "kind": "faults",
                            "status": "complete", "trials": []})
    op = copy.copy(parsed["bag"].dags["nightly_latency_regression"].get_task("aggregate_faults"))
    op.lab_run_id = "nightly-faults-x"  # the XComArg, resolved
    if started:
        op.execute({})
        assert submitted == ["aggregate_faults"]
    else:
        with pytest.raises(AirflowSkipException, match="not started"):
            op.execute({})
        assert submitted == []


def test_startup_chain_trigger_rules_and_form(parsed: dict[str, Any]) -> None:
    """startup_experiment: the run measured whole (never retried, in the measuring pool), one
    Spark job that aggregates and validates in its session, the report and the aggregation
    run after failed probes (all_done), the watcher after everything; the form is
    ``kafkalab startup run``'s defaults."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from kafkalab.startup.spec import DEFAULT_BASE_PORT, DEFAULT_CONTROL_PORT, StartupSpec

    dag = parsed["bag"].dags["startup_experiment"]
    up = {t.task_id: set(t.upstream_task_ids) for t in dag.tasks}
    assert up["run_startup"] == {"name_run"}
    assert up["aggregate_startup"] == {"run_startup", "name_run"}
    assert up["validate_startup"] == {"aggregate_startup", "name_run"}
    assert up["publish_report"] == {"validate_startup", "name_run"}
    assert up["verify_outcome"] == set(TASKS["startup_experiment"]) - {"verify_outcome"}
    rules = {t.task_id: getattr(t.trigger_rule, "value", t.trigger_rule) for t in dag.tasks}
    assert rules["aggregate_startup"] == rules["publish_report"] == "all_done"
    assert rules["validate_startup"] == "all_success"
    assert rules["verify_outcome"] == "one_failed"
    assert dag.get_task("run_startup").retries == 0
    agg = dag.get_task("aggregate_startup")
    assert isinstance(agg, SparkSubmitOperator)
    assert agg.application == str(spark_jobs_dir() / "aggregate_startup.py")
    args = [a for a in agg.application_args if isinstance(a, str)]
    assert args[-2:] == ["--validate-out", f"{parsed['data']}/validation"]
    form = {key: dag.params[key] for key in dag.params}
    spec = StartupSpec()
    assert form["clients"] == list(spec.clients) and form["protocols"] == list(spec.protocols)
    assert form["delays_ms"] == list(spec.delays_ms) and form["members"] == list(spec.members)
    assert (form["trials"], form["timeout_s"]) == (spec.trials, spec.timeout_s)
    assert (form["base_port"], form["control_port"]) == (DEFAULT_BASE_PORT, DEFAULT_CONTROL_PORT)
    assert form["flavor"] == "kraft"


def test_load_params_form(parsed: dict[str, Any]) -> None:
    import copy

    from airflow.sdk.exceptions import ParamValidationError

    from kafkalab.load.spec import LOAD_CLIENTS

    dag = parsed["bag"].dags["load_experiment"]
    assert type(dag.timetable).__name__ == "NullTimetable"
    p = {k: dag.params.get_param(k) for k in dag.params}
    assert set(p) == {"consumers", "rates", "acks", "duration_s", "warmup_s", "payload",
                      "profile", "client", "partitions", "consumer_mode", "pause_at_s",
                      "pause_for_s", "cluster_descriptor", "consumers_per_shard",
                      "shard_placement", "one_spark_session", "txn_msgs", "txn_abort_every",
                      "link_delay_ms", "client_link_delay_ms", "fetch_from", "thin_consumer",
                      "thin_link_kbps", "thin_link_delay_ms"}
    assert p["one_spark_session"].value is False
    assert p["link_delay_ms"].value == []  # the links are not touched unless asked
    assert p["shard_placement"].schema["enum"] == ["subprocess", "tasks"]
    assert p["shard_placement"].value == "subprocess"
    assert p["consumers"].schema["items"]["type"] == "integer"
    assert p["acks"].schema["items"]["enum"] == ["0", "1", "all"]
    assert p["client"].schema["enum"] == list(LOAD_CLIENTS)
    profiles = sorted(f.stem for f in (include_dir() / "profiles").glob("*.yaml"))
    assert sorted(p["profile"].schema["enum"]) == profiles
    assert "null" in p["pause_at_s"].schema["type"]
    form = copy.deepcopy(dag.params)
    with pytest.raises(ParamValidationError):
        form["rates"] = [0]
    with pytest.raises(ParamValidationError):
        form["consumers"] = []
    with pytest.raises(ParamValidationError, match="is not one of"):
        form["acks"] = ["2"]
    form["pause_at_s"], form["pause_for_s"] = 4, 3
    # bounds a trigger cannot pass (issue 26): Airflow's own param validation refuses them
    for key, value in (("rates", [1e9]), ("consumers", [1001]), ("duration_s", 86_400),
                       ("consumers", list(range(1, 60)))):
        with pytest.raises(ParamValidationError):
            form[key] = value


def test_latency_params_have_maxima(parsed: dict[str, Any]) -> None:
    from airflow.sdk.exceptions import ParamValidationError

    from kafkalab.config.models import MAX_MESSAGES

    form = parsed["bag"].dags["latency_experiment"].params
    for key, value in (("messages", 10**15), ("messages", MAX_MESSAGES + 1),
                       ("warmup_messages", 10**9), ("first_message_probes", 10**6)):
        with pytest.raises(ParamValidationError):
            form[key] = value
    form["messages"] = MAX_MESSAGES


def test_every_task_has_a_timeout_and_every_run_a_deadline(parsed: dict[str, Any]) -> None:
    """No task can hold the one-slot measuring pool forever (issue 26)."""
    from kafkalab.airflow.dag_args import DAG_RUN_TIMEOUT, TASK_TIMEOUT

    for dag_id, dag in parsed["bag"].dags.items():
        assert dag.dagrun_timeout == DAG_RUN_TIMEOUT, dag_id
        for t in dag.tasks:
            assert t.execution_timeout is not None, (dag_id, t.task_id)
            assert t.execution_timeout <= TASK_TIMEOUT, (dag_id, t.task_id)


@pytest.mark.parametrize("dag_id", LATENCY_DAGS)
def test_mapped_cells_and_spark_tasks(parsed: dict[str, Any], dag_id: str) -> None:
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    dag = parsed["bag"].dags[dag_id]
    cell = dag.get_task("measure_cell")
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    assert isinstance(cell, MappedOperator)
    assert cell.max_active_tis_per_dag == 1  # cells never measured in parallel
    assert cell.map_index_template == "{{ cell_label }}"  # "confluent-kafka · 1mb · latency"
    for tid, script in (("aggregate_metrics", "aggregate_metrics.py"),
                        ("validate_metrics", "validate_metrics.py")):
        op = dag.get_task(tid)
        assert isinstance(op, SparkSubmitOperator)
        assert op._conn_id == "spark_default"
        assert op.application == str(spark_jobs_dir() / script)
        assert op.py_files == spark_py_files()  # the shared session and the lab's store.py
        assert op.py_files.split(",")[0] == str(spark_jobs_dir() / "_session.py")
        assert op.conf["spark.ui.enabled"] == "false"
        assert op.conf["spark.driver.bindAddress"] == "127.0.0.1"
        args = [a for a in op.application_args if isinstance(a, str)]
        assert str(parsed["data"] / "samples") in args
    assert dag.get_task("validate_metrics").retries == 0
    assert dag.get_task("aggregate_metrics").stale_output == "aggregates"
    assert dag.get_task("validate_metrics").stale_output == "validation"


@pytest.mark.parametrize(("outcome", "stale_after"), [
    ("succeeds", []),
    ("writes its result, then fails", []),  # a failed validation is a fresh result
    ("fails before writing", ["validation"]),
])
def test_a_spark_task_clears_its_stale_output_once_recomputed(
        parsed: dict[str, Any], tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
        outcome: str, stale_after: list[str]) -> None:
    """validate_metrics removes ``validation`` from the run's stale outputs when the job
    succeeded or rewrote its result; spark-submit itself is replaced by a stand-in."""
    import copy

    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from kafkalab.store import LabData, atomic_write_json

    lab = LabData(tmp_path / "data")
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(lab.root))
    lab.write_manifest({"run_id": "r1", "status": "complete", "cells": [],
                        "stale_outputs": ["validation"]})

    def spark_job(self: Any, context: Any) -> None:
        if outcome != "fails before writing":
            atomic_write_json(lab.validation_path("r1"), {"run_id": "r1", "success": False})
        if outcome != "succeeds":
            raise RuntimeError("spark-submit exited 1")

    monkeypatch.setattr(SparkSubmitOperator, "execute", spark_job)
    op = copy.copy(parsed["bag"].dags["latency_experiment"].get_task("validate_metrics"))
    op.lab_run_id = "r1"  # the XComArg, resolved
    if outcome == "succeeds":
        op.execute({})
    else:
        with pytest.raises(RuntimeError):
            op.execute({})
    manifest = lab.manifest("r1")
    assert manifest is not None and manifest["stale_outputs"] == stale_after


class _FakeTI:
    """The ``ti`` of a task context: what ``xcom_pull`` returns for the aggregation task
    ``task_id``."""

    def __init__(self, upstream: Any, task_id: str = "aggregate_metrics") -> None:
        self.upstream = upstream
        self.task_id = task_id

    def xcom_pull(self, task_ids: str) -> Any:
        assert task_ids == self.task_id
        return self.upstream


@pytest.mark.parametrize("kind,aggregate_task,validate_task", [
    ("latency", "aggregate_metrics", "validate_metrics"),
    ("load", "aggregate_load", "validate_load"),  # the nightly's fan-out cell
])
@pytest.mark.parametrize("verdict", ["passed", "failed"])
def test_one_spark_session_aggregates_and_validates_in_one_job(
        parsed: dict[str, Any], tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
        verdict: str, kind: str, aggregate_task: str, validate_task: str) -> None:
    """Param one_spark_session: the aggregation gets ``--validate-out`` and says it
    validated; the validation task then starts no job and fails exactly when the validation
    failed. spark-submit itself is replaced by a stand-in that records its arguments."""
    import copy

    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from kafkalab.errors import RunError
    from kafkalab.kinds import run_kind
    from kafkalab.store import LabData, atomic_write_json

    lab = LabData(tmp_path / "data")
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(lab.root))
    lab.write_manifest({"run_id": "r1", "kind": kind, "status": "complete", "cells": [],
                        "stale_outputs": ["aggregates", "validation"]})
    submitted: list[list[str]] = []

    def spark_job(self: Any, context: Any) -> None:
        submitted.append(list(self.application_args))
        if "--validate-out" in self.application_args:
            atomic_write_json(lab.validation_path("r1", run_kind(kind)), {
                "run_id": "r1", "success": verdict == "passed",
                "suites": {"raw_samples": {"statistics": {"evaluated_expectations": 7}}},
                "failed_expectations": [] if verdict == "passed" else [{"summary": "lost > 0"}]})

    monkeypatch.setattr(SparkSubmitOperator, "execute", spark_job)
    dag = parsed["bag"].dags["nightly_latency_regression"]
    aggregate = copy.copy(dag.get_task(aggregate_task))
    validate = copy.copy(dag.get_task(validate_task))
    aggregate.lab_run_id = validate.lab_run_id = "r1"  # the XComArgs, resolved
    aggregate.application_args = ["--run-id", "r1"]
    params = {"one_spark_session": True}
    pushed = aggregate.execute({"params": params})
    # the data dir the DAG was parsed with, as every path argument of its Spark tasks
    assert submitted == [["--run-id", "r1", "--validate-out", f"{parsed['data']}/validation"]]
    assert pushed == {"validated_in_session": True}
    context = {"params": params, "ti": _FakeTI(pushed, aggregate_task)}
    if verdict == "passed":
        assert validate.execute(context) == {"run_id": "r1", "success": True, "expectations": 7}
    else:
        with pytest.raises(RunError, match=r"validation failed \(1 expectations\): lost > 0"):
            validate.execute(context)
    assert len(submitted) == 1  # the validation task started no Spark job
    manifest = lab.manifest("r1")
    assert manifest is not None and manifest["stale_outputs"] == []
    # without the XCom (an aggregation that did not validate), the task runs its own job
    validate.execute({"params": params, "ti": _FakeTI(None, aggregate_task)})
    assert len(submitted) == 2 and "--validate-out" not in submitted[1]


def test_the_nightly_skips_its_fan_out_cell_when_turned_off(
        parsed: dict[str, Any], tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Param fanout_cell false: start_load_run skips; aggregate_load skips itself (the load
    run has no manifest); with a started run it runs its job."""
    import copy

    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.sdk.exceptions import AirflowSkipException

    from kafkalab.airflow import load_tasks
    from kafkalab.store import LabData

    lab = LabData(tmp_path / "data")
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(lab.root))
    dag = parsed["bag"].dags["nightly_latency_regression"]
    assert dag.params["fanout_cell"] is True and dag.params["one_spark_session"] is False
    assert load_tasks.nightly_fanout_on({"fanout_cell": False}) is False
    with pytest.raises(ConfigError, match="param fanout_cell: expected true or false"):
        load_tasks.nightly_fanout_on({"fanout_cell": "off"})
    ran: list[str] = []
    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, ctx: ran.append("job"))
    aggregate_load = copy.copy(dag.get_task("aggregate_load"))
    aggregate_load.lab_run_id = "nightly-fanout-x"
    with pytest.raises(AirflowSkipException, match="was not started"):
        aggregate_load.execute({})
    assert ran == []
    lab.write_manifest({"run_id": "nightly-fanout-x", "kind": "load", "status": "complete",
                        "cells": [], "stale_outputs": []})
    aggregate_load.execute({})
    assert ran == ["job"]


def test_every_cluster_task_of_every_dag_is_in_the_one_measuring_pool(
        parsed: dict[str, Any]) -> None:
    """Two DAGs never load the cluster at once: provisioning and measuring tasks of every DAG
    share one pool (one slot, made by the launcher); nothing else takes its slot."""
    bag = parsed["bag"]
    in_pool = {(dag_id, t.task_id) for dag_id in bag.dag_ids for t in bag.dags[dag_id].tasks
               if t.pool == MEASURE_POOL}
    assert in_pool == {(dag_id, tid) for dag_id in DAG_IDS for tid in IN_POOL[dag_id]}
    assert set().union(*IN_POOL.values()) == set(CLUSTER_TASKS)
    for dag_id in DAG_IDS:
        dag = bag.dags[dag_id]
        for tid in IN_POOL[dag_id]:
            assert dag.get_task(tid).pool_slots == 1, (dag_id, tid)
        assert {t.pool for t in dag.tasks if t.task_id not in CLUSTER_TASKS
                and t.task_id != "consume_load_shard"} == {"default_pool"}


def test_consumer_shard_tasks_wait_in_their_own_pool_beside_the_cell(
        parsed: dict[str, Any]) -> None:
    """load_experiment's shard tasks (shard placement "tasks"): mapped over plan_shards, a
    deferring operator (a waiting shard holds no slot) in the shard pool, since they run
    beside the cell's producer, which holds the measuring pool's one slot; never retried (a
    shard cannot rejoin a barrier it missed); not upstream of finish_load_run (which closes
    the run a waiting shard task watches), but judged by verify_outcome."""
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    from kafkalab.airflow.pools import SHARD_POOL
    from kafkalab.airflow.shards import ConsumeLoadShardOperator

    dag = parsed["bag"].dags["load_experiment"]
    up = {t.task_id: set(t.upstream_task_ids) for t in dag.tasks}
    shard = dag.get_task("consume_load_shard")
    assert isinstance(shard, MappedOperator)
    assert shard.pool == SHARD_POOL and shard.pool_slots == 1
    assert shard.operator_class is ConsumeLoadShardOperator
    assert shard.map_index_template == "{{ shard_label }}"
    assert shard.partial_kwargs.get("retries") == 0
    assert up["plan_shards"] == {"start_load_run"}
    assert up["consume_load_shard"] == {"plan_shards", "name_run"}
    assert "consume_load_shard" not in up["finish_load_run"]
    assert "consume_load_shard" in up["verify_outcome"]
    nightly = parsed["bag"].dags["nightly_latency_regression"]
    assert "consume_load_shard" not in nightly.task_ids  # a fixed workload, subprocess shards


def test_outlets_are_assets(parsed: dict[str, Any]) -> None:
    dag = parsed["bag"].dags["nightly_latency_regression"]
    uris = {tid: [a.uri for a in dag.get_task(tid).outlets]
            for tid in ("close_run", "aggregate_metrics", "publish_report")}
    data = parsed["data"].as_uri()
    assert uris == {"close_run": [f"{data}/samples"], "aggregate_metrics": [f"{data}/aggregates"],
                    "publish_report": [f"{data}/reports"]}


def test_nightly_schedule(parsed: dict[str, Any]) -> None:
    from kafkalab.airflow.callbacks import on_failure_alert

    dag = parsed["bag"].dags["nightly_latency_regression"]
    assert "expression='30 2 * * *'" in repr(dag.timetable)  # from KAFKALAB_NIGHTLY_CRON
    assert dag.catchup is False
    assert dag.max_active_runs == 1
    assert dag.default_args["retries"] == 1
    callbacks = dag.on_failure_callback
    callbacks = callbacks if isinstance(callbacks, list) else [callbacks]
    assert on_failure_alert in callbacks
    assert dag.params["workload"] == "nightly"  # the matrix comes from nightly.yaml at run time


def test_experiment_params_form(parsed: dict[str, Any]) -> None:
    from kafkalab.catalog import SCENARIOS
    from kafkalab.payloads import payload_names

    dag = parsed["bag"].dags["latency_experiment"]
    assert type(dag.timetable).__name__ == "NullTimetable"  # schedule=None: UI/API only
    p = {k: dag.params.get_param(k) for k in dag.params}
    assert set(p) == {"workload", "scenarios", "payloads", "profiles", "messages",
                      "warmup_messages", "first_message_probes", "consumer_mode",
                      "cluster_descriptor", "one_spark_session"}
    assert p["first_message_probes"].value is None
    assert p["consumer_mode"].value is None
    assert p["consumer_mode"].schema["enum"] == [None, "subscribe", "assign"]
    assert p["first_message_probes"].schema["minimum"] == 0
    assert p["one_spark_session"].value is False
    assert p["one_spark_session"].schema["type"] == "boolean"
    assert p["workload"].value == "images-http-vs-kafka"
    # a dropdown of include/workloads/ (latency ones, then former names), readable labels
    assert "nightly" in p["workload"].schema["enum"] and "seed000" in p["workload"].schema["enum"]
    assert "hydra-local" not in p["workload"].schema["enum"]  # a load workload
    assert set(p["workload"].schema["values_display"]) == set(p["workload"].schema["enum"])
    assert p["scenarios"].schema["values_display"]["rest"] == "HTTP (rest)"
    assert p["warmup_messages"].value is None and p["warmup_messages"].schema["minimum"] == 0
    assert p["scenarios"].schema["type"] == "array"
    assert p["scenarios"].schema["items"]["enum"] == list(SCENARIOS)
    assert p["payloads"].schema["items"]["enum"] == list(payload_names())
    profiles = sorted(f.stem for f in (include_dir() / "profiles").glob("*.yaml"))
    assert sorted(p["profiles"].schema["items"]["enum"]) == profiles
    assert p["messages"].schema["type"] == "integer" and p["messages"].schema["minimum"] == 1
    assert "null" in p["cluster_descriptor"].schema["type"]
    # the form refuses bad values
    import copy

    from airflow.sdk.exceptions import ParamValidationError

    form = copy.deepcopy(dag.params)
    with pytest.raises(ParamValidationError, match="less than the minimum"):
        form["messages"] = 0
    with pytest.raises(ParamValidationError, match="is not one of"):
        form["scenarios"] = ["carrier-pigeon"]
    form["scenarios"] = []  # empty: the workload's scenarios
    with pytest.raises(ParamValidationError, match="is not one of"):
        form["workload"] = "no-such-workload"
    form["workload"] = "seed000"  # a former name, as older triggers send it
    form["warmup_messages"] = 0
    with pytest.raises(ParamValidationError):
        form["warmup_messages"] = -1
    form["cluster_descriptor"] = "/tmp/cluster.yaml"


def test_parse_did_no_io(parsed: dict[str, Any]) -> None:
    """Parsing neither created the data dir nor opened lab files, sockets or subprocesses."""
    assert not parsed["data"].exists()
    assert not parsed["home"].exists()
    events = parsed["events"]
    lab_paths = (str(parsed["data"]), str(parsed["home"]), *LAB_PATHS)
    touched = [e for e in events if e[0].startswith("open") and e[1].startswith(lab_paths)]
    assert touched == [], touched
    net = [e for e in events if not e[0].startswith("open")]
    assert net == [], net
    airflow_home = os.environ.get("AIRFLOW_HOME", "")
    writes = [p for kind, p in events if kind == "open-w"
              and not p.endswith((".pyc", ".tmp")) and "__pycache__" not in p
              and not (airflow_home and p.startswith(airflow_home))]
    assert writes == [], writes


def test_every_dag_announces_a_failed_run(parsed: dict[str, Any]) -> None:
    """A run that fails posts a run_failed alert, whoever triggered it."""
    from kafkalab.airflow.callbacks import on_failure_alert

    for dag_id, dag in parsed["bag"].dags.items():
        callbacks = dag.on_failure_callback
        callbacks = callbacks if isinstance(callbacks, list) else [callbacks]
        assert on_failure_alert in callbacks, dag_id


def test_every_task_records_its_own_failure(parsed: dict[str, Any]) -> None:
    """So the run_failed alert can name the first failed task, not the last (callbacks)."""
    from kafkalab.airflow.callbacks import record_task_failure

    for dag_id, dag in parsed["bag"].dags.items():
        for t in dag.tasks:
            callbacks = t.on_failure_callback
            callbacks = callbacks if isinstance(callbacks, list) else [callbacks]
            assert record_task_failure in callbacks, (dag_id, t.task_id)


BAD_PARAMS: list[tuple[str, str, Any]] = [
    ("latency_experiment", "messages", 0), ("latency_experiment", "messages", 10**15),
    ("latency_experiment", "messages", "many"), ("latency_experiment", "messages", 1.5),
    ("latency_experiment", "warmup_messages", -1), ("latency_experiment", "warmup_messages", 10**9),
    ("latency_experiment", "first_message_probes", 10**6),
    ("latency_experiment", "scenarios", ["carrier-pigeon"]),
    ("latency_experiment", "payloads", ["3gb"]), ("latency_experiment", "profiles", ["nosuch"]),
    ("latency_experiment", "workload", "/etc/passwd"),
    ("latency_experiment", "consumer_mode", "psychic"),
    ("latency_experiment", "cluster_descriptor", 7),
    ("nightly_latency_regression", "messages", 10**15),
    ("nightly_latency_regression", "fanout_cell", "yes"),
    ("nightly_latency_regression", "version_matrix", ["4.4"]),
    ("nightly_latency_regression", "version_matrix", "4.4.0"),
    ("nightly_latency_regression", "version_matrix_rounds", 0),
    ("nightly_latency_regression", "version_matrix_ports", [19892]),
    ("version_matrix", "startup_trials", 11), ("version_matrix", "startup_protocols", ["eager"]),
    ("version_matrix", "fault_trials", 11), ("version_matrix", "fault", "kill-consumer"),
    ("version_matrix", "fault_profile", "nosuch"), ("version_matrix", "max_rate", "yes"),
    ("load_experiment", "consumers", [0]), ("load_experiment", "consumers", [1001]),
    ("load_experiment", "consumers", list(range(1, 60))), ("load_experiment", "consumers", []),
    ("load_experiment", "rates", [0]), ("load_experiment", "rates", [1e9]),
    ("load_experiment", "rates", ["fast"]), ("load_experiment", "duration_s", 86_400),
    ("load_experiment", "duration_s", -1), ("load_experiment", "warmup_s", 10**6),
    ("load_experiment", "pause_at_s", 10**6), ("load_experiment", "partitions", 65),
    ("load_experiment", "consumers_per_shard", 0), ("load_experiment", "payload", "7mb"),
    ("load_experiment", "shard_placement", "everywhere"), ("load_experiment", "acks", ["2"]),
    ("resilience_experiment", "trials", 51), ("resilience_experiment", "trials", 0),
    ("resilience_experiment", "rate_msgs_per_s", 20_001),
    ("resilience_experiment", "duration_s", 3601), ("resilience_experiment", "faults", ["meteor"]),
    ("resilience_experiment", "consumers", 13), ("resilience_experiment", "session_timeout_ms", 1),
    ("startup_experiment", "clients", ["kafka-go"]), ("startup_experiment", "clients", []),
    ("startup_experiment", "protocols", ["eager"]), ("startup_experiment", "members", [0]),
    ("startup_experiment", "members", [9]), ("startup_experiment", "delays_ms", [-1]),
    ("startup_experiment", "delays_ms", [60_001]), ("startup_experiment", "trials", 101),
    ("startup_experiment", "timeout_s", 0), ("startup_experiment", "base_port", 80),
    ("startup_experiment", "flavor", "redpanda"),
]
"""Bad values for the DAGs' forms (issue 26's bad-input tier, on the Airflow side): each is
refused by Airflow's own param validation when the run is triggered."""


@pytest.mark.parametrize(("dag_id", "key", "value"), BAD_PARAMS,
                         ids=[f"{d}-{k}-{i}" for i, (d, k, _) in enumerate(BAD_PARAMS)])
def test_a_bad_param_is_refused_by_airflows_validation(parsed: dict[str, Any], dag_id: str,
                                                       key: str, value: Any) -> None:
    import copy

    from airflow.sdk.exceptions import ParamValidationError

    form = copy.deepcopy(parsed["bag"].dags[dag_id].params)
    with pytest.raises(ParamValidationError):
        form[key] = value
