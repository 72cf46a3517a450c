"""The drift step of a run: load the history (latency or load cells), judge one run, store
its records."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from kafkalab.drift.acceptances import load_acceptances
from kafkalab.drift.config import load_drift_config_or_default
from kafkalab.drift.detect import detect_drift
from kafkalab.drift.history import (
    load_history,
    load_prior_records,
    newest_started,
    run_order,
    write_drift,
)
from kafkalab.drift.load import load_cells_history
from kafkalab.drift.records import empty_records
from kafkalab.errors import ConfigError
from kafkalab.kinds import LATENCY, LOAD, RunKind, kind_of_run
from kafkalab.store import LabData


def run_drift(
    data_dir: str | os.PathLike[str],
    run_id: str | None = None,
    config_path: str | os.PathLike[str] | None = None,
    *,
    require_run: bool = False,
) -> tuple[pd.DataFrame, Path | None]:
    """Load the history, judge ``run_id`` (default the run that started last,
    :func:`~kafkalab.drift.history.newest_started`) and write its records.

    A load run (manifest ``kind: load``, or aggregates under ``aggregates/load/``) is judged
    on the load cells' history with the ``load_metrics`` rules
    (:func:`kafkalab.drift.load.load_cells_history`); any other run on the latency history
    with the ``metrics`` rules. The judgement uses the stored drift records of the earlier
    runs (their flags keep them out of the baselines) and the accepted levels
    (``drift/acceptances.json``). Clearing ``drift`` from the run's ``stale_outputs`` is the
    caller's (the Airflow task knows whether the inputs were fresh). ``config_path``
    defaults to :func:`kafkalab.paths.drift_config_path` (built-in rules when that file does
    not exist).

    Returns the records and the written path (None when there is no history at all). A
    ``run_id`` without aggregates gets an empty record file, unless ``require_run``.

    Raises:
        ConfigError: a bad drift config, an unreadable acceptances file, or (with
            ``require_run``) a ``run_id`` that has no aggregates.
    """
    config = load_drift_config_or_default(config_path)
    acceptances = load_acceptances(data_dir)
    lab = LabData(data_dir)
    manifests = lab.manifests()
    latency = load_history(data_dir, manifests)
    load = load_cells_history(data_dir, manifests)
    rid = run_id or newest_started(latency, load)
    histories = {LATENCY.name: latency, LOAD.name: load}

    def left(kind: RunKind) -> bool:
        h = histories.get(kind.name)
        return h is not None and not h.empty and rid in set(h["run_id"].astype(str))

    kind = kind_of_run(manifests.get(rid), left) if rid is not None else LATENCY
    if not kind.drift_judged:
        if require_run:
            raise ConfigError(f"run {rid} is a {kind.name} run: drift judges "
                              f"{' and '.join(histories)} runs")
        return empty_records(), None
    history = histories[kind.name]
    order = run_order(history)
    if require_run and rid not in order:
        where = lab.kind_aggregates_dir(kind)
        raise ConfigError(f"run {run_id!r} has no aggregates in {where}")
    if rid is None or (latency.empty and load.empty):
        return empty_records(), None
    earlier = order[: order.index(rid)] if rid in order else []
    records = detect_drift(history, config, rid, prior=load_prior_records(data_dir, earlier),
                           acceptances=acceptances, kind=kind.name)
    return records, write_drift(records, data_dir, rid)


__all__ = ["run_drift"]
