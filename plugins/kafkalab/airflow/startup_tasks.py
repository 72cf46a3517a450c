"""The Airflow tasks of a start-up run (seed 000: where a new consumer's first-message delay
goes), as plain importable functions.

The ``startup_experiment`` DAG wires these (:mod:`kafkalab.airflow.chains.startup`); each
calls the start-up engine (:mod:`kafkalab.startup.engine`) and takes and returns JSON-able
values. Heavy imports stay inside the functions: importing this module while a DAG file is
parsed reads no file and starts nothing. The chain (see ``docs/airflow.md``)::

    name_run -> run_startup (pool kafkalab_measure) -> aggregate_startup (Spark + GX, all_done)
      -> validate_startup (its verdict) -> publish_report (all_done) -> verify_outcome

The probes run on the engine's own one-node cluster (``<lab>/startup``, on the worker that
runs ``run_startup``, started fresh and wiped), never on the cluster of the other runs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kafkalab.airflow.params import STARTUP_FLAVOR_CHOICES, whole_param
from kafkalab.airflow.tasks import judge_validation, verify_outcome
from kafkalab.errors import ConfigError, RunError
from kafkalab.kinds import STARTUP
from kafkalab.startup.spec import DEFAULT_BASE_PORT, DEFAULT_CONTROL_PORT, StartupSpec
from kafkalab.store import LabData
from kafkalab.values import jsonable

log = logging.getLogger(__name__)

def _listed(params: Mapping[str, Any], name: str) -> list[Any]:
    value = params.get(name)
    values = [] if value is None or value == "" else (
        list(value) if isinstance(value, list | tuple) else [value])
    if not values:
        raise ConfigError(f"param {name}: give at least one value")
    return values


def startup_spec(params: Mapping[str, Any]) -> StartupSpec:
    """The :class:`~kafkalab.startup.spec.StartupSpec` the DAG params ask for (the form's
    ``clients``, ``delays_ms``, ``protocols``, ``members``, ``trials``, ``timeout_s``).

    Raises:
        ConfigError: one line naming the param, e.g. ``param members: must be values in 1..8``.
    """
    clients = tuple(str(c) for c in _listed(params, "clients"))
    delays_ms = tuple(whole_param("delays_ms", d) for d in _listed(params, "delays_ms"))
    protocols = tuple(str(p) for p in _listed(params, "protocols"))
    members = tuple(whole_param("members", m) for m in _listed(params, "members"))
    trials = whole_param("trials", params.get("trials", 5))
    try:
        timeout_s = float(params.get("timeout_s") or 30.0)
    except (TypeError, ValueError):
        raise ConfigError(f"param timeout_s: expected seconds, got "
                          f"{params.get('timeout_s')!r}") from None
    try:
        return StartupSpec(clients=clients, delays_ms=delays_ms, protocols=protocols,
                           members=members, trials=trials, timeout_s=timeout_s)
    except ConfigError as exc:  # "startup: <field> <what>": the fields are the params' names
        name, _, what = str(exc).removeprefix("startup: ").partition(" ")
        raise ConfigError(f"param {name}: {what}") from None


def _port(params: Mapping[str, Any], name: str, default: int) -> int:
    value = params.get(name)
    port = default if value is None else whole_param(name, value)
    if not 1024 <= port <= 65000:
        raise ConfigError(f"param {name}: {port} is not a port in 1024..65000")
    return port


def run_startup(params: Mapping[str, Any], run_id: str, command: str | None = None,
                logical_date: str | None = None) -> dict[str, Any]:
    """Measure every case of the params' spec as the start-up run ``run_id``
    (:func:`kafkalab.startup.engine.execute_startup`, owner ``airflow``); returns
    ``{"run_id", "status", "failed_probes", "answer", "cases"}``.

    Raises:
        ConfigError: a bad param (one line naming it); nothing is started.
        ClusterError: the start-up cluster did not start (its ports taken, no Java, ...).
        RunError: some probes timed out or failed: what was measured is kept (the run is
            ``incomplete``; ``aggregate_startup`` and the report still run).
    """
    from kafkalab.startup.engine import StartupRequest, execute_startup

    spec = startup_spec(params)
    base_port = _port(params, "base_port", DEFAULT_BASE_PORT)
    control_port = _port(params, "control_port", DEFAULT_CONTROL_PORT)
    if base_port == control_port:
        raise ConfigError("params base_port and control_port: give two different ports")
    flavor = str(params.get("flavor") or STARTUP_FLAVOR_CHOICES[0])
    if flavor not in STARTUP_FLAVOR_CHOICES:
        raise ConfigError(f"param flavor: {flavor!r} is not one of "
                          f"{', '.join(STARTUP_FLAVOR_CHOICES)}")
    result = execute_startup(StartupRequest(
        spec=spec, data_dir=LabData().root, run_id=run_id, flavor=flavor, base_port=base_port,
        control_port=control_port, command=command or "airflow startup_experiment",
        owner_kind="airflow", logical_date=logical_date), progress=log.info)
    for line in result.answer:
        log.info("%s", line)
    out = {"run_id": result.run_id, "status": result.status,
           "failed_probes": result.failed_probes, "answer": result.answer,
           "cases": jsonable(result.cases)}
    if result.failed_probes:
        raise RunError(f"start-up run {run_id}: {result.failed_probes} probe member(s) timed "
                       f"out or failed (rows with their status in {result.run_dir}/"
                       "probes.parquet)")
    return out


def judge_startup_validation(run_id: str) -> dict[str, Any]:
    """The verdict of the validation ``aggregate_startup`` wrote in its Spark session
    (:func:`kafkalab.airflow.tasks.judge_validation`, suite ``startup``).

    Raises:
        RunError: it failed (naming failed expectations) or is missing.
    """
    return judge_validation(run_id, STARTUP)


def verify_startup_outcome(run_id: str) -> dict[str, Any]:
    """A start-up run's verdict from its files: manifest complete, validation passed.

    Raises:
        RunError: naming what is wrong.
    """
    return verify_outcome(run_id, STARTUP, what="start-up run")


__all__ = ["judge_startup_validation", "run_startup", "startup_spec",
           "verify_startup_outcome"]
