"""Drift of load cells: each cell of a load run is a series (client, payload, profile, acks,
consumers, rate, partitions, broker …); latency and delay p99s higher is worse, achieved and
received rates lower is worse, any loss after a loss-free baseline is a drift. Baselines
only from complete, validated (``validation/<run>-load.json``), unstale load runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kafkalab import alerts, drift
from kafkalab.drift.load import load_cells_history
from kafkalab.errors import ConfigError
from kafkalab.report.build import build_report
from kafkalab.store import LabData
from tests.unit.test_report_load import LOAD_RUNS, cell_id, write_load_run

SMALL: dict[str, Any] = {"consumers": (5,), "rates": (200.0,), "acks": ("1",), "pause": False,
                         "loss_at_top": 0.0}
"""The nightly's fan-out cell: 5 consumers × 200 msg/s, acks 1."""
CELL = cell_id(5, 200.0, "1")


def _patch_cells(lab: LabData, run_id: str, **values: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = lab.aggregates_dir / "load" / f"run_id={run_id}" / "load_cells.parquet"
    df = pq.read_table(path).to_pandas()
    for k, v in values.items():
        df[k] = v
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)


def _records(tmp_path: Path, run_id: str) -> pd.DataFrame:
    records, path = drift.run_drift(tmp_path, run_id)
    assert path == LabData(tmp_path).drift_path(run_id)
    return records


def _by_metric(records: pd.DataFrame) -> dict[str, dict[str, Any]]:
    return {str(r["metric"]): r for r in drift.records_to_dicts(records)}


def test_a_load_cell_is_a_series_of_its_own_with_its_spec_in_the_key(tmp_path: Path) -> None:
    for i, run in enumerate(LOAD_RUNS[:4]):
        write_load_run(tmp_path, run, i + 1, **SMALL)
    records = _records(tmp_path, LOAD_RUNS[3])
    got = _by_metric(records)
    assert set(got) == {"e2e_p99_ms", "service_e2e_p99_ms", "publish_delay_p99_ms",
                        "achieved_rate_msgs_per_s", "rx_rate_msgs_per_s_avg", "loss_pct"}
    rec = got["e2e_p99_ms"]
    # a plain producer's cell: the pause and the transaction parts empty
    assert rec["series_key"] == ("load|confluent-kafka|1kb|raw|1024|latency|1|5|200|1|assign|10||"
                                 "|||kafka09|0.9.0.1|1|e2e_p99_ms")
    assert rec["scenario"] == "load" and rec["consumers"] == 5 and rec["acks"] == "1"
    assert rec["rate_msgs_per_s"] == 200.0 and rec["partitions"] == 1
    assert rec["cell_id"] == CELL
    assert rec["baseline_runs"] == 3 and rec["verdict"] == "ok"
    assert got["achieved_rate_msgs_per_s"]["direction"] == "lower_is_worse"
    assert got["loss_pct"]["rule"] == "zero_baseline"


def test_slower_fewer_and_lossy_cells_drift(tmp_path: Path) -> None:
    for i, run in enumerate(LOAD_RUNS[:4]):
        write_load_run(tmp_path, run, i + 1, **SMALL)
    lab = LabData(tmp_path)
    _patch_cells(lab, LOAD_RUNS[3], e2e_p99_ms=60.0, e2e_p99_ms_ci_low=55.0,
                 e2e_p99_ms_ci_high=70.0, rx_rate_msgs_per_s_avg=120.0,
                 achieved_rate_msgs_per_s=199.0, loss_pct=0.4)
    got = _by_metric(_records(tmp_path, LOAD_RUNS[3]))
    assert got["e2e_p99_ms"]["verdict"] == "drift" and got["e2e_p99_ms"]["rule"] == "mad+ci"
    assert got["rx_rate_msgs_per_s_avg"]["verdict"] == "drift"  # lower is worse
    assert got["loss_pct"]["verdict"] == "drift"  # any loss after a loss-free baseline
    assert got["achieved_rate_msgs_per_s"]["verdict"] == "ok"  # 0.5 % lower: noise
    # a faster e2e p99 is an improvement, not a drift
    write_load_run(tmp_path, LOAD_RUNS[4], 5, scale=0.3, **SMALL)
    got = _by_metric(_records(tmp_path, LOAD_RUNS[4]))
    assert got["e2e_p99_ms"]["verdict"] == "improved"


def test_load_baselines_only_from_good_runs(tmp_path: Path) -> None:
    write_load_run(tmp_path, LOAD_RUNS[0], 1, **SMALL)
    write_load_run(tmp_path, LOAD_RUNS[1], 2, validated=False, **SMALL)
    write_load_run(tmp_path, LOAD_RUNS[2], 3, state="incomplete", **SMALL)
    write_load_run(tmp_path, LOAD_RUNS[3], 4, **SMALL)
    lab = LabData(tmp_path)
    lab.validation_path(f"{LOAD_RUNS[3]}-load").unlink()  # never validated
    write_load_run(tmp_path, LOAD_RUNS[4], 5, **SMALL)
    hist = load_cells_history(tmp_path)
    good = hist.groupby("run_id")["run_validated"].first().to_dict()
    assert good == {LOAD_RUNS[0]: True, LOAD_RUNS[1]: False, LOAD_RUNS[2]: True,
                    LOAD_RUNS[3]: False, LOAD_RUNS[4]: True}
    rec = _by_metric(_records(tmp_path, LOAD_RUNS[4]))["e2e_p99_ms"]
    assert rec["baseline_runs"] == 1 and rec["verdict"] == "insufficient_history"


def test_emulator_and_other_cells_never_share_a_baseline(tmp_path: Path) -> None:
    for i, run in enumerate(LOAD_RUNS[:3]):
        write_load_run(tmp_path, run, i + 1, emulator=True, **SMALL)
    write_load_run(tmp_path, LOAD_RUNS[3], 4, **SMALL)
    rec = _by_metric(_records(tmp_path, LOAD_RUNS[3]))["e2e_p99_ms"]
    assert rec["baseline_runs"] == 0 and rec["broker_is_emulator"] is False
    other = {**SMALL, "consumers": (10,)}
    write_load_run(tmp_path, LOAD_RUNS[4], 5, **other)
    rec = _by_metric(_records(tmp_path, LOAD_RUNS[4]))["e2e_p99_ms"]
    assert rec["baseline_runs"] == 0 and rec["consumers"] == 10


def test_undefined_percentile_is_never_judged(tmp_path: Path) -> None:
    for i, run in enumerate(LOAD_RUNS[:4]):
        write_load_run(tmp_path, run, i + 1, **SMALL)
    _patch_cells(LabData(tmp_path), LOAD_RUNS[3], e2e_p99_ms=None, e2e_p99_ms_reason="n<100")
    rec = _by_metric(_records(tmp_path, LOAD_RUNS[3]))["e2e_p99_ms"]
    assert rec["verdict"] == "undefined" and rec["note"] == "e2e_p99_ms: n<100"


def test_latency_and_load_runs_are_judged_on_their_own_histories(tmp_path: Path) -> None:
    from tests.unit.test_report import RUN_IDS, write_lab_data

    write_lab_data(tmp_path, with_emulator=False)
    write_load_run(tmp_path, LOAD_RUNS[0], 8, **SMALL)  # the newest run
    records, _ = drift.run_drift(tmp_path)  # no run id: the newest, a load run
    assert set(records["scenario"]) == {"load"}
    latency, _ = drift.run_drift(tmp_path, RUN_IDS[-1])
    assert "load" not in set(latency["scenario"]) and len(latency)
    with pytest.raises(ConfigError, match="no aggregates"):
        drift.run_drift(tmp_path, "load-none", require_run=True)


def test_load_drift_flags_on_the_load_page_and_accepting_a_load_series(tmp_path: Path) -> None:
    for i, run in enumerate(LOAD_RUNS[:4]):
        write_load_run(tmp_path, run, i + 1, **SMALL)
        drift.run_drift(tmp_path, run)
    write_load_run(tmp_path, LOAD_RUNS[4], 5, scale=4.0, **SMALL)
    records = _records(tmp_path, LOAD_RUNS[4])
    flagged = records[records["is_drift"]]
    assert "e2e_p99_ms" in set(flagged["metric"])
    build_report(tmp_path)
    page = (LabData(tmp_path).report_page_dir(LOAD_RUNS[4]) / "index.html").read_text()
    assert 'class="drift-flags"' in page and "e2e_p99_ms" in page
    key = str(flagged[flagged["metric"] == "e2e_p99_ms"]["series_key"].iloc[0])
    made = alerts.accept_drift(tmp_path, key, note="new level")
    assert [a.series_key for a in made] == [key] and made[0].from_run_id == LOAD_RUNS[4]


def test_shipped_drift_yaml_judges_the_load_metrics_of_the_built_in_defaults() -> None:
    from kafkalab.drift import DriftConfig, load_drift_config

    shipped = load_drift_config()
    assert shipped.load_metrics == DriftConfig().load_metrics
    assert shipped.rule("loss_pct").min_absolute_change == 0
    assert shipped.rule("rx_rate_msgs_per_s_avg").direction == "lower_is_worse"
