"""The Airflow tasks of a fault run (broker faults: durability and availability), as plain
importable functions.

The ``resilience_experiment`` DAG and the nightly's fault trial wire these
(:mod:`kafkalab.airflow.chains.faults`); each calls the fault engine
(:mod:`kafkalab.faults.engine`) and takes and returns JSON-able values. Heavy imports stay inside the functions: importing this module
while a DAG file is parsed reads no file and starts nothing. The chain (see
``docs/airflow.md``)::

    name_run -> start_fault_run -> run_fault_trial x trials (mapped, pool kafkalab_measure)
      -> finish_fault_run (all_done) -> aggregate_faults (Spark) -> validate_faults (Spark + GX)
      -> publish_report -> send_alerts -> verify_outcome

The trials run on the engine's own 3-broker fault cluster (``<lab>/faults``, started or
reused by ``start_fault_run``), never on the cluster of the latency and load runs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafkalab.airflow.tasks import outcome_problems, run_started
from kafkalab.errors import ConfigError, RunError
from kafkalab.faults.spec import MAX_TRIALS
from kafkalab.kinds import FAULTS
from kafkalab.store import LabData
from kafkalab.values import jsonable

if TYPE_CHECKING:
    from kafkalab.faults.engine import FaultRequest
    from kafkalab.faults.spec import FaultPlan, FaultTrialSpec

log = logging.getLogger(__name__)

PARAM_OF_FIELD: dict[str, str] = {
    "profile": "profiles", "fault": "faults", "acks": "acks", "trial": "trials",
    "rate_msgs_per_s": "rate_msgs_per_s", "duration_s": "duration_s", "commit": "commits",
    "consumers": "consumers", "session_timeout_ms": "session_timeout_ms",
    "client": "clients", "idempotence": "idempotence",
    "static_membership": "static_membership", "rebalance": "rebalance",
    "txn_msgs": "txn_msgs", "txn_abort_every": "txn_abort_every",
}
"""The form param that sets each :class:`~kafkalab.faults.spec.FaultTrialSpec` field (a bad
value is reported under the param's name)."""

NIGHTLY_FAULT: dict[str, Any] = {
    "profiles": ["durability"], "faults": ["sigkill-leader"], "acks": [], "trials": 1,
}
"""The nightly's fault trial: one SIGKILL of the partition leader under the durability
profile (rate, duration, warm-up and fault time: the engine's defaults)."""

NIGHTLY_FAULT_PARAM = "fault_trial"
"""The nightly's boolean param that turns its fault trial on (default) or off."""


def _listed(params: Mapping[str, Any], key: str) -> list[Any]:
    value = params.get(key)
    if value is None or value == "":
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _trials_count(params: Mapping[str, Any]) -> int:
    value = params.get("trials", 1)
    if value is None:
        return 1
    from kafkalab.airflow.params import whole_param

    n = whole_param("trials", value)
    if not 1 <= n <= MAX_TRIALS:
        raise ConfigError(f"param trials: must be between 1 and {MAX_TRIALS}, got {n}")
    return n


def _switch(value: Any, param: str = "idempotence") -> bool:
    if value in ("on", True):
        return True
    if value in ("off", False):
        return False
    raise ConfigError(f"param {param}: {value!r} is not on or off")


def fault_plan(params: Mapping[str, Any]) -> FaultPlan:
    """The trials DAG params ask for (:class:`~kafkalab.faults.spec.FaultPlan`): every
    ``profiles`` × ``faults`` (× ``commits`` for a consumer fault) × ``acks`` cell (``acks``
    empty: the profile's), ``trials`` times; ``rate_msgs_per_s`` and ``duration_s`` (null:
    the planner's defaults), ``consumers`` and ``session_timeout_ms`` shared.

    Raises:
        ConfigError: one line naming the param, e.g. ``param faults: unknown fault 'x' ...``.
    """
    from pydantic import ValidationError

    from kafkalab.airflow.params import PROFILE_CHOICES
    from kafkalab.faults.spec import FAULTS, FaultPlan
    from kafkalab.yamlio import describe_validation_error

    profiles, faults = _listed(params, "profiles"), _listed(params, "faults")
    if not profiles or not faults:
        raise ConfigError("params profiles and faults: give at least one value each")
    for key, values, known in (("profiles", profiles, PROFILE_CHOICES),
                               ("faults", faults, FAULTS)):
        unknown = [v for v in values if v not in known]
        if unknown:
            raise ConfigError(f"param {key}: unknown {key[:-1]} {unknown[0]!r} (known: "
                              f"{', '.join(known)})")
    for key in ("profiles", "faults", "acks", "commits", "clients", "idempotence",
                "static_membership", "rebalance", "txn_msgs"):
        values = _listed(params, key)
        if len(set(map(str, values))) != len(values):
            raise ConfigError(f"param {key}: {values} repeats a value")
    try:
        return FaultPlan(profiles=profiles, faults=faults,
                         acks=[str(a) for a in _listed(params, "acks")],
                         commits=[str(c) for c in _listed(params, "commits")],
                         clients=[str(c) for c in _listed(params, "clients")],
                         idempotence=[_switch(v) for v in _listed(params, "idempotence")],
                         static_membership=[_switch(v, "static_membership")
                                            for v in _listed(params, "static_membership")],
                         rebalance=[str(r) for r in _listed(params, "rebalance")],
                         txn_msgs=_listed(params, "txn_msgs"),
                         txn_abort_every=params.get("txn_abort_every"),
                         trials=_trials_count(params),
                         **{k: params.get(k) for k in ("rate_msgs_per_s", "duration_s",
                                                       "consumers", "session_timeout_ms")})
    except ValidationError as exc:
        field, _, message = describe_validation_error(exc).partition(": ")
        name = field.split(".")[0]
        raise ConfigError(f"param {name}: {message}") from None


def fault_trials(params: Mapping[str, Any]) -> list[FaultTrialSpec]:
    """The trials of a fault run asked for by DAG params (:func:`fault_plan`), planned by
    :func:`kafkalab.faults.spec.plan_trials` as ``kafkalab faults run`` plans them: trial by
    trial — every cell's trial 1, then every cell's trial 2 … — so a slow drift of the
    machine spreads over the cells instead of landing on the last one. Validated by the
    engine's model (:class:`~kafkalab.faults.spec.FaultTrialSpec`).

    Raises:
        ConfigError: one line naming the param, e.g. ``param faults: unknown fault 'x' ...``.
    """
    from kafkalab.faults.spec import plan_trials
    from kafkalab.load.spec import PlanRefused

    try:
        return plan_trials(fault_plan(params))
    except PlanRefused as exc:
        raise ConfigError(_spec_error(exc.error, trial_label(exc.cell))) from None


def _spec_error(exc: Any, label: str) -> str:
    """One line for the first error of a trial's validation, under the param that set the
    field (``param rate_msgs_per_s: ...``; a check across fields: ``params: ...``)."""
    err = exc.errors()[0]
    loc = err.get("loc") or ()
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    where = f"param {PARAM_OF_FIELD.get(str(loc[0]), str(loc[0]))}" if loc else "params"
    return f"{where}: {msg} (trial {label})"


def trial_label(spec: Mapping[str, Any]) -> str:
    """The readable name of a mapped trial (its ``map_index_template``):
    ``durability sigkill-leader #1``, ``default kill-follower acks all #3``,
    ``durability kill-consumer commit after #2``, ``durability sigkill-leader kafka-python
    in-flight 5 idempotence off #1``, ``durability sigkill-leader txn 10 #1`` (the client when
    not confluent-kafka, and max in flight, idempotence and the transaction size when the form
    sets them)."""
    acks, commit = spec.get("acks"), spec.get("commit")
    client, mif, idem = spec.get("client"), spec.get("max_in_flight"), spec.get("idempotence")
    return (f"{spec.get('profile')} {spec.get('fault')}"
            + (f" commit {commit}" if commit is not None else "")
            + (f" acks {acks}" if acks is not None else "")
            + (f" {client}" if client not in (None, "confluent-kafka") else "")
            + (f" in-flight {mif}" if mif is not None else "")
            + (f" idempotence {'on' if idem else 'off'}" if idem is not None else "")
            + (f" txn {spec.get('txn_msgs')}" if spec.get("txn_msgs") is not None else "")
            + f" #{spec.get('trial')}")


def build_fault_request(params: Mapping[str, Any], run_id: str, command: str | None = None,
                        logical_date: str | None = None) -> FaultRequest:
    """A :class:`~kafkalab.faults.engine.FaultRequest` for the trials of ``params`` (owner
    kind ``airflow``), in the lab's data dir; the fault cluster is the engine's default
    (``<lab>/faults``); ``logical_date``: the DAG run's (ISO 8601 UTC), recorded in the
    manifest."""
    from kafkalab.faults.engine import FaultRequest

    return FaultRequest(trials=fault_trials(params), data_dir=LabData().root, run_id=run_id,
                        command=command or f"airflow task (kafkalab.airflow.fault_tasks) {run_id}",
                        owner_kind="airflow", logical_date=logical_date)


def start_faults(params: Mapping[str, Any], run_id: str, command: str | None = None,
                 logical_date: str | None = None) -> list[dict[str, Any]]:
    """Validate the trials, start (or reuse) the 3-broker fault cluster and write the
    manifest (``running``, kind ``faults``, the DAG run's ``logical_date``). Returns the
    trials to map:
    ``[{"spec": {...}, "label": "durability sigkill-leader #1"}]``.

    Raises:
        ConfigError: a bad param (one line, before anything starts).
        LabError: the engine refused the run (e.g. a profile whose replication factor
            exceeds the brokers) or the fault cluster did not come up.
    """
    from kafkalab.faults.engine import start_fault_run

    req = build_fault_request(params, run_id, command, logical_date)
    started = start_fault_run(req, progress=log.info)
    trials = [{"spec": dict(jsonable(s)), "label": trial_label(s)} for s in started["trials"]]
    log.info("fault run %s started: %d trial(s)", run_id, len(trials))
    return trials


def run_trial(run_id: str, trial: Mapping[str, Any]) -> dict[str, Any]:
    """Run one trial of a started fault run: the fixed-rate producer, the fault, the heal,
    the re-read and the checker. Returns the trial's summary (as ``kafkalab faults run
    --json``).

    A trial that *found* loss (verdict ``loss``) or did not recover succeeds here: that is a
    result, judged by ``validate_faults`` (durability ⇒ no acked message lost), never
    retried away.

    Raises:
        RunError: the trial itself failed or was interrupted (what it wrote is kept; the run
            will be incomplete).
    """
    from kafkalab.faults.engine import run_fault_trial

    summary = run_fault_trial(LabData().root, run_id, dict(trial["spec"]), progress=log.info)
    out = dict(jsonable(summary))
    log.info("trial %s: %s, verdict %s; acked %s of %s, acked_lost %s, duplicates %s, "
             "unavailable %s ms, new leader after %s ms, full ISR after %s ms",
             out.get("trial_id"), out.get("status"), out.get("verdict"), out.get("acked"),
             out.get("intended"), out.get("acked_lost"), out.get("duplicates"),
             out.get("unavailable_ms"), out.get("leader_elected_ms"), out.get("isr_full_ms"))
    if out.get("status") not in (None, "complete"):
        raise RunError(f"trial {out.get('trial_id')} {out.get('status')}: {out.get('error')}")
    if out.get("verdict") not in (None, "ok"):
        log.warning("trial %s: verdict %s (a finding, judged by validate_faults)",
                    out.get("trial_id"), out.get("verdict"))
    return out


def fault_run_started(run_id: str) -> bool:
    """Whether ``run_id`` was started (its manifest exists): a nightly whose fault trial is
    turned off, or whose ``start_fault_run`` failed, has none."""
    return run_started(run_id)


def close_faults(run_id: str) -> dict[str, Any]:
    """Merge the trials' summaries into the manifest: complete, incomplete or failed.

    Returns ``{"run_id", "status", "trials"}``; ``status: "not started"`` (nothing raised)
    when the run was never started (turned off, or a failed ``start_fault_run`` that
    already fails the DAG run), so the tasks after it are not held up.
    """
    from kafkalab.faults.engine import finish_fault_run

    lab = LabData()
    if not fault_run_started(run_id):
        log.warning("fault run %s was never started: nothing to close", run_id)
        return {"run_id": run_id, "status": "not started", "trials": []}
    done = finish_fault_run(lab.root, run_id)
    log.info("fault run %s: %s", run_id, done.get("status"))
    return dict(jsonable(done))


def _failed_checks(validation: Mapping[str, Any]) -> list[str]:
    """Short names of a validation's failed expectations (at most five)."""
    names = []
    for f in validation.get("failed_expectations") or []:
        if isinstance(f, Mapping):
            text = f.get("summary") or f.get("check") or f.get("expectation")
            names.append(str(text) if text else "an expectation")
    return names[:5]


def verify_fault_outcome(run_id: str) -> dict[str, Any]:
    """A fault run's verdict from its files: manifest complete and the fault validation
    passed (under the durability profile, no acked message lost).

    Raises:
        RunError: naming what is wrong (the failed checks of the validation included).
    """
    status, validation, problems = outcome_problems(run_id, FAULTS)
    if validation is not None and not validation.get("success"):
        dur = validation.get("durability")
        if isinstance(dur, Mapping) and dur.get("success") is False:
            lost_in = ", ".join(str(t.get("trial_id")) for t in dur.get("trials") or []
                                if isinstance(t, Mapping))
            problems.append(f"DURABILITY BROKEN: {dur.get('acked_lost')} acked message(s) "
                            "lost under the durability profile"
                            + (f" ({lost_in})" if lost_in else ""))
        checks = _failed_checks(validation)
        problems.append("validation failed" + (f" ({'; '.join(checks)})" if checks else "")
                        + f" (see {LabData().validation_path(run_id, FAULTS)})")
    if problems:
        raise RunError(f"fault run {run_id}: " + "; ".join(problems))
    return {"run_id": run_id, "status": status, "validation_success": True}


def send_fault_alerts(run_id: str, dag_id: str | None = None) -> dict[str, Any]:
    """Announce a failed fault validation of ``run_id`` on the ``kafkalab_alert_webhook``
    Connection (:func:`kafkalab.alerts.alert_on_fault_validation`): severity ``critical``, the
    highest, when acked messages were lost under the durability profile (the trials and
    their losses listed), else ``error`` with the failed checks.

    A validation that passed, or none yet, sends nothing (a missing one already fails the
    DAG run's outcome). No Connection: logged, not a failure.

    Returns:
        ``{"run_id", "sent", "severity", "reason", "failed_checks", "acked_lost"}``.

    Raises:
        AlertError: delivery failed (message without the URL).
    """
    from kafkalab.airflow.connections import AlertWebhookConnection
    from kafkalab.alerts import alert_on_fault_validation
    from kafkalab.alerts.webhook import ALERT_CONN_ID

    lab = LabData()
    hook = AlertWebhookConnection(ALERT_CONN_ID).settings()
    if hook is None:
        log.info("no alert webhook configured (Connection %r)", ALERT_CONN_ID)
    out = alert_on_fault_validation(
        lab.root, run_id, hook, report_url=hook.report_url(run_id) if hook else None,
        dag_id=dag_id)
    log.info("fault alerts for %s: %s", run_id, out)
    return dict(jsonable(out))


def nightly_fault_on(params: Mapping[str, Any]) -> bool:
    """Whether the nightly's fault trial runs: its :data:`NIGHTLY_FAULT_PARAM` (default on).

    Raises:
        ConfigError: the param is not a boolean.
    """
    from kafkalab.airflow.params import bool_param

    return bool_param(params, NIGHTLY_FAULT_PARAM, True)


__all__ = [
    "MAX_TRIALS",
    "NIGHTLY_FAULT",
    "NIGHTLY_FAULT_PARAM",
    "PARAM_OF_FIELD",
    "build_fault_request",
    "close_faults",
    "fault_plan",
    "fault_run_started",
    "fault_trials",
    "nightly_fault_on",
    "run_trial",
    "send_fault_alerts",
    "start_faults",
    "trial_label",
    "verify_fault_outcome",
]
