"""The Airflow tasks of a version matrix (issue 27 §4: "does upgrading make us slower?"), as
plain importable functions.

The ``version_matrix`` DAG wires these (:mod:`kafkalab.airflow.chains.versions`); each calls
:mod:`kafkalab.versions` and takes and returns JSON-able values. Heavy imports stay inside
the functions: importing this module while a DAG file is parsed reads no file and starts
nothing. The chain (see ``docs/airflow.md``)::

    name_run -> run_matrix (pool kafkalab_measure) -> finish_matrix (all_done)
      -> plan_aggregations -> aggregate_version_run (Spark + GX in one session, one per run)
      -> judge_versions -> verify_outcome

The nightly carries the same part when its param ``version_matrix`` names versions
(:data:`NIGHTLY_MATRIX`: the workload, :data:`NIGHTLY_MATRIX_PARAM`).

The matrix's clusters (``<lab>/versions/<version>``, one at a time, fresh each round) run on
the worker that runs ``run_matrix``, never the cluster of the other runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkalab.errors import ConfigError, RunError
from kafkalab.store import LabData

PARAM_OF_FIELD: dict[str, str] = {
    "versions": "versions", "rounds": "rounds", "rate_msgs_per_s": "rate_msgs_per_s",
    "duration_s": "duration_s", "warmup_s": "warmup_s", "consumers": "consumers",
    "acks": "acks", "profile": "profile", "client": "client", "payload": "payload",
    "base_port": "base_port", "control_port": "control_port",
    "startup.trials": "startup_trials", "startup.protocols": "startup_protocols",
    "max_rate.enabled": "max_rate", "max_rate.objective_p99_ms": "max_rate_objective_ms",
    "faults.trials": "fault_trials", "faults.fault": "fault", "faults.profile": "fault_profile",
}
"""The form param that sets each field of the matrix or its cell (a part's field by its
dotted path)."""


NIGHTLY_MATRIX_PARAM = "version_matrix"
"""The nightly's param naming the versions of its version matrix (the baseline first; an
empty list, the default: no matrix)."""

NIGHTLY_MATRIX_ROUNDS_PARAM = "version_matrix_rounds"
"""The nightly's param: the rounds of its version matrix (default 3, what a verdict needs)."""

NIGHTLY_MATRIX_PORTS_PARAM = "version_matrix_ports"
"""The nightly's param: ``[broker port, controller port]`` of its matrix's clusters."""

NIGHTLY_MATRIX: dict[str, Any] = {"rate_msgs_per_s": 500.0, "duration_s": 12.0,
                                  "warmup_s": 2.0, "consumers": 1, "startup_trials": 1,
                                  "startup_protocols": ["classic", "consumer"]}
"""The nightly's version-matrix workload: one confluent-kafka producer at 500 msg/s, 1 KB,
one consumer, 12 s a round, and one first-message trial a round (the form's defaults of
``version_matrix``)."""


def nightly_matrix_versions(params: Mapping[str, Any]) -> list[str]:
    """The versions of the nightly's matrix (:data:`NIGHTLY_MATRIX_PARAM`; empty: none).

    Raises:
        ConfigError: the param is not a list of version strings.
    """
    value = params.get(NIGHTLY_MATRIX_PARAM) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"param {NIGHTLY_MATRIX_PARAM}: expected a list of Kafka versions, "
                          f"got {value!r}")
    return list(value)


def nightly_matrix_on(params: Mapping[str, Any]) -> bool:
    """Whether the nightly measures a version matrix (its param names versions)."""
    return bool(nightly_matrix_versions(params))


def nightly_matrix_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The params of the nightly's matrix: :data:`NIGHTLY_MATRIX`, its versions, rounds and
    ports.

    Raises:
        ConfigError: ports that are not two integers.
    """
    rounds = params.get(NIGHTLY_MATRIX_ROUNDS_PARAM)
    out = {**NIGHTLY_MATRIX, "versions": nightly_matrix_versions(params),
           "rounds": 3 if rounds is None or rounds == "" else rounds}
    ports = params.get(NIGHTLY_MATRIX_PORTS_PARAM)
    if ports:
        if (not isinstance(ports, list) or len(ports) != 2
                or not all(isinstance(p, int) for p in ports)):
            raise ConfigError(f"param {NIGHTLY_MATRIX_PORTS_PARAM}: expected [broker port, "
                              f"controller port], got {ports!r}")
        out["base_port"], out["control_port"] = ports
    return out


def matrix_started(matrix_id: str) -> bool:
    """Whether matrix ``matrix_id`` was started (its matrix file exists)."""
    return LabData().matrix_path(matrix_id).exists()


def matrix_spec(params: Mapping[str, Any]) -> Any:
    """The :class:`~kafkalab.versions.spec.MatrixSpec` the DAG params ask for.

    Raises:
        ConfigError: one line naming the param (``param versions: ...``).
    """
    from pydantic import ValidationError

    from kafkalab.load.spec import LoadCellSpec
    from kafkalab.versions.spec import (
        DEFAULT_BASE_PORT,
        DEFAULT_CONTROL_PORT,
        MatrixSpec,
    )
    from kafkalab.yamlio import describe_validation_error

    def cell_arg(name: str, default: Any) -> Any:
        value = params.get(name)
        return default if value is None or value == "" else value

    try:
        cell = LoadCellSpec(
            rate_msgs_per_s=cell_arg("rate_msgs_per_s", 500.0),
            duration_s=cell_arg("duration_s", 12.0), warmup_s=cell_arg("warmup_s", 2.0),
            consumers=cell_arg("consumers", 1), acks=params.get("acks") or None,
            profile=cell_arg("profile", "default"), client=cell_arg("client", "confluent-kafka"),
            payload=cell_arg("payload", "1kb"))
        return MatrixSpec.model_validate({
            "versions": [str(v) for v in params.get("versions") or []],
            "rounds": cell_arg("rounds", 3), "cell": cell,
            "startup": {"trials": cell_arg("startup_trials", 1),
                        "protocols": cell_arg("startup_protocols", ["classic", "consumer"])},
            "max_rate": {"enabled": cell_arg("max_rate", False),
                         "objective_p99_ms": cell_arg("max_rate_objective_ms", 100.0)},
            "faults": {"trials": cell_arg("fault_trials", 0),
                       "fault": cell_arg("fault", "sigkill-leader"),
                       "profile": cell_arg("fault_profile", "durability")},
            "base_port": cell_arg("base_port", DEFAULT_BASE_PORT),
            "control_port": cell_arg("control_port", DEFAULT_CONTROL_PORT)})
    except ValidationError as exc:
        field, _, message = describe_validation_error(exc).partition(": ")
        name = field.split(".")[-1]
        param = PARAM_OF_FIELD.get(field) or PARAM_OF_FIELD.get(name, name)
        raise ConfigError(f"param {param}: {message}") from None


def run_version_matrix(params: Mapping[str, Any], matrix_id: str, command: str | None = None,
                       logical_date: str | None = None) -> dict[str, Any]:
    """Measure the matrix (the task ``run_matrix``); returns ``{matrix_id, status, runs}``.

    Raises:
        ConfigError: a param the matrix refuses (nothing started).
        RunError: no step of the matrix completed.
    """
    from kafkalab.versions.matrix import MatrixRequest, check_versions, run_matrix

    spec = matrix_spec(params)
    check_versions(spec)
    doc = run_matrix(MatrixRequest(spec=spec, data_dir=LabData().root, matrix_id=matrix_id,
                                   command=command or "airflow version_matrix",
                                   owner_kind="airflow", logical_date=logical_date))
    if doc["status"] == "failed":
        raise RunError(f"version matrix {matrix_id}: no step completed ("
                       + "; ".join(str(s.get("error")) for s in doc["steps"][:2]) + ")")
    return {"matrix_id": matrix_id, "status": doc["status"], "runs": doc["runs"]}


def aggregation_jobs(matrix_id: str) -> list[dict[str, Any]]:
    """One Spark job per run of the matrix with a measured round (each version's load run,
    start-up run and fault run: the mapped ``aggregate_version_run``'s kwargs,
    ``lab_run_id``, its kind's ``application`` and ``application_args``; a kind that
    validates in its aggregation's session does so); none when the matrix was never
    started."""
    from kafkalab.spark import submit as spark_submit
    from kafkalab.versions.matrix import measured_runs, read_matrix

    lab = LabData()
    if not matrix_started(matrix_id):  # turned off in the nightly, or refused at its start
        return []
    jobs = []
    for run_id, kind in measured_runs(read_matrix(lab.root, matrix_id)):
        args = spark_submit.spark_job_args(kind.aggregate_job, run_id, lab.root)
        if kind.validates_in_session:
            args = [*args, *spark_submit.one_session_args(lab.root)]
        jobs.append({"lab_run_id": run_id,
                     "application": spark_submit.spark_application(kind.aggregate_job),
                     "application_args": args})
    return jobs


def validation_jobs(matrix_id: str) -> list[dict[str, Any]]:
    """The validation job of each run of the matrix whose kind does not validate in its
    aggregation's session (a version's fault run: the ``faults`` suite), as the mapped
    ``validate_version_run``'s kwargs; none when there is no such run."""
    from kafkalab.spark import submit as spark_submit
    from kafkalab.versions.matrix import measured_runs, read_matrix

    lab = LabData()
    if not matrix_started(matrix_id):
        return []
    return [{"lab_run_id": run_id,
             "application": spark_submit.spark_application(kind.validate_job),
             "application_args": spark_submit.spark_job_args(kind.validate_job, run_id,
                                                             lab.root)}
            for run_id, kind in measured_runs(read_matrix(lab.root, matrix_id))
            if not kind.validates_in_session]


def validation_problems(matrix_id: str) -> list[str]:
    """The failed, missing or unreadable validations of the matrix's runs that were validated
    in their aggregation's Spark session (a version's load and start-up runs): that job exits
    0 whatever its expectations said, so nothing else fails on them. A fault run's validation
    is its own task (``validate_version_run``), which fails by itself. Empty when the matrix
    was never started."""
    from kafkalab.airflow.tasks import judge_validation
    from kafkalab.versions.matrix import measured_runs, read_matrix

    if not matrix_started(matrix_id):
        return []
    problems = []
    for run_id, kind in measured_runs(read_matrix(LabData().root, matrix_id)):
        if kind.validates_in_session:
            try:
                judge_validation(run_id, kind)
            except RunError as exc:
                problems.append(str(exc))
    return problems


def judge_versions(matrix_id: str) -> dict[str, Any]:
    """The verdict (the task ``judge_versions``): every version against the baseline, written
    beside the matrix file, and the report's overview rebuilt to show it.

    Raises:
        RunError: a version regressed (naming the series and metrics), or a run of the matrix
            failed its validation (:func:`validation_problems`), so the DAG run fails and
            on-call sees it.
    """
    from kafkalab.report.build import build_report
    from kafkalab.versions.verdict import matrix_verdict, write_verdict

    if not matrix_started(matrix_id):  # the nightly's matrix turned off
        from airflow.sdk.exceptions import AirflowSkipException

        raise AirflowSkipException(f"version matrix {matrix_id} was not started")
    v = matrix_verdict(LabData().root, matrix_id)
    write_verdict(LabData().root, v)
    build_report(LabData().root, run_id=v.runs[v.baseline])  # the overview shows the matrix
    worse = [f"Kafka {m.version} {s.label} {m.metric} "
             + (f"{m.change_pct:+.1f}%" if m.change_pct is not None
                else f"{m.b_value} -> {m.v_value}")  # a zero baseline has no relative change
             for s in v.series for m in s.metrics if m.verdict == "regressed"]
    problems = validation_problems(matrix_id)
    if worse:
        problems.insert(0, f"{len(worse)} metric(s) regressed against Kafka {v.baseline}: "
                        + "; ".join(worse[:5]))
    if problems:
        raise RunError(f"version matrix {matrix_id}: " + " | ".join(problems))
    return {"matrix_id": matrix_id, "baseline": v.baseline, "judged": v.judged,
            "regressed": v.regressed, "rounds": v.rounds}


def verify_matrix_outcome(matrix_id: str) -> None:
    """Fail naming what is wrong with the matrix in its files (the watcher's check).

    Raises:
        RunError: no matrix file, a matrix that is not complete (its failed steps named), a
            run that failed its validation (:func:`validation_problems`), or a verdict in
            which a version regressed (the metrics named).
    """
    from kafkalab.store import read_json
    from kafkalab.versions.matrix import read_matrix, step_complete

    try:
        doc = read_matrix(LabData().root, matrix_id)
    except ConfigError as exc:
        raise RunError(str(exc)) from None
    if doc.get("status") != "complete":
        failed = [f"round {s['round']} Kafka {s['version']}: "
                  f"{s.get('error') or s.get('startup_error') or s['status']}"
                  for s in doc.get("steps") or [] if not step_complete(s)]
        raise RunError(f"version matrix {matrix_id} is {doc.get('status')}"
                       + (": " + "; ".join(failed[:4]) if failed else ""))
    problems = validation_problems(matrix_id)
    verdict = read_json(LabData().matrix_verdict_path(matrix_id))
    if isinstance(verdict, dict) and verdict.get("regressed"):
        worse = [f"Kafka {m['version']} {s['label']} {m['metric']}"
                 for s in verdict.get("series") or [] for m in s.get("metrics") or []
                 if m.get("verdict") == "regressed"]
        problems.insert(0, f"{verdict['regressed']} metric(s) regressed against Kafka "
                        f"{verdict.get('baseline')}: " + "; ".join(worse[:5]))
    if problems:
        raise RunError(f"version matrix {matrix_id}: " + " | ".join(problems))


def finish_matrix(matrix_id: str) -> dict[str, Any]:
    """The matrix's state after ``run_matrix``, whatever became of it (the task
    ``finish_matrix``, ``all_done``: the fence the nightly's Spark jobs wait for): ``{matrix_id,
    status}``, ``status`` ``not started`` when it never was (turned off, or refused)."""
    from kafkalab.versions.matrix import read_matrix

    if not matrix_started(matrix_id):
        return {"matrix_id": matrix_id, "status": "not started"}
    return {"matrix_id": matrix_id, "status": read_matrix(LabData().root, matrix_id)["status"]}


__all__ = ["NIGHTLY_MATRIX", "NIGHTLY_MATRIX_PARAM", "NIGHTLY_MATRIX_PORTS_PARAM",
           "NIGHTLY_MATRIX_ROUNDS_PARAM",
           "PARAM_OF_FIELD", "aggregation_jobs", "finish_matrix", "judge_versions",
           "matrix_spec", "matrix_started", "nightly_matrix_on", "nightly_matrix_params",
           "nightly_matrix_versions", "run_version_matrix", "validation_jobs",
           "validation_problems",
           "verify_matrix_outcome"]
