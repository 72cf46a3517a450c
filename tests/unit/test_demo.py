"""The demo's own lines (kafkalab.demo): which progress lines it shows, how a date reads,
what a failure shows, and its bad input. The whole demo runs in tests/e2e/test_make_demo.py."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kafkalab.cli import main
from kafkalab.demo import (
    DEMO_NIGHTLY_CONF,
    cell_line,
    failure_excerpt,
    format_drift,
    parse_conf,
    summarize_date,
)
from kafkalab.store import LabData


def test_only_a_cells_last_line_and_notes_are_shown() -> None:
    assert cell_line("[rest 1mb latency] done: 13 rows")
    assert cell_line("[jvm-e2e 1mb latency] FAILED: java not found")
    assert cell_line("[kafka-python 1mb latency] skipped: not installed")
    assert cell_line("NOTE: redpanda 24.1 is an EMULATOR, not Apache Kafka")
    assert not cell_line("[rest 1mb latency] start")
    assert not cell_line("[confluent-kafka 1mb latency] 5/12 messages")
    assert not cell_line("topic klab-latency: exists")


@pytest.mark.parametrize(("counts", "line"), [
    ({"insufficient_history": 8}, "drift: not judged yet (needs 3 earlier runs)"),
    ({}, "drift: no records"),
    ({"ok": 6, "drift": 2, "undefined": 3}, "drift: 2 DRIFT, 6 ok, 3 not judged"),
    ({"ok": 4, "improved": 1}, "drift: 1 improved, 4 ok"),
])
def test_drift_verdicts_read_as_one_phrase(counts: dict[str, int], line: str) -> None:
    assert format_drift(Counter(counts)) == line


def test_a_failed_date_shows_its_first_task_failure_not_the_watcher() -> None:
    text = "\n".join(["[info] start", "[error] Task failed with exception",
                      "Traceback (most recent call last):", "ValueError: the real cause",
                      *(f"[info] {i}" for i in range(60)),
                      "[error] Task failed with exception", "RunError: an upstream task failed"])
    shown = failure_excerpt(text, lines=4)
    assert shown[0].endswith("Task failed with exception") and shown[2].endswith("real cause")
    # no failure marker: the last lines
    assert failure_excerpt("a\nb\nc", lines=2) == ["b", "c"]


def test_a_date_line_reads_the_runs_it_wrote(tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    rid, fan = "nightly-20261122T101010Z-abc123", "nightly-fanout-20261122T101010Z-abc123"
    lab.write_manifest({"run_id": rid, "status": "complete",
                        "cells": [{"status": "complete"}, {"status": "complete"},
                                  {"status": "failed"}]})
    lab.write_manifest({"run_id": fan, "status": "complete", "cells": [{"status": "complete"}]})
    (tmp_path / "validation").mkdir()
    (tmp_path / "validation" / f"{rid}.json").write_text('{"success": true}')
    for run, verdicts in ((rid, ["ok", "ok", "drift"]), (fan, ["ok"])):
        path = lab.drift_path(run)
        path.parent.mkdir(parents=True)
        pd.DataFrame({"verdict": verdicts}).to_parquet(path)
    out = summarize_date(lab, "2026-11-21", 0, 61.4, [fan, rid])
    assert out.run_id == rid and (out.cells, out.cells_ok) == (3, 2)
    assert out.line == (f"2026-11-21  {rid}  2/3 cells + fan-out 1  complete, validated  61 s  "
                        "drift: 1 DRIFT, 3 ok")
    failed = summarize_date(lab, "2026-11-22", 1, 5.0, [])
    assert failed.line.startswith("2026-11-22  -  0/0 cells  FAILED (not started)  5 s")


def test_each_night_is_read_as_it_ends_and_a_failed_one_shows_its_own_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run_nightly over the steps of one dags-test process (faked here; real in
    tests/e2e/test_make_demo.py): a line per date from the runs that date wrote, and for a
    failed date the first task failure after *its* marker, not an earlier date's."""
    from kafkalab.airflow import launcher
    from kafkalab.airflow.dags_test_dates import PREPARE_MARKER, date_marker
    from kafkalab.demo import DEMO_DAG, DemoPlan, run_nightly

    lab = LabData(tmp_path / "data")
    dates = ("2026-11-18", "2026-11-19")

    def fake(dag_id: str, dates_: Any, conf: Any, log: Any, **kwargs: Any) -> Any:
        assert dag_id == DEMO_DAG and tuple(dates_) == dates and conf["fanout_cell"] is False
        kwargs["meanwhile"]()  # as the real one: once the process is spawned, before a step
        log.write(f"{PREPARE_MARKER}\n")
        log.flush()
        yield launcher.TestStep("prepare", "prepare", 0, 1.2)
        log.write(f"{date_marker(DEMO_DAG, dates[0])}\n[error] Task failed with exception\n"
                  "ValueError: an earlier date's cause\n")
        lab.write_manifest({"run_id": "nightly-20261122T000001Z-aaaaaa", "status": "complete",
                            "cells": [{"status": "complete"}]})
        log.flush()
        yield launcher.TestStep("date", dates[0], 0, 30.0)
        log.write(f"{date_marker(DEMO_DAG, dates[1])}\n[error] Task failed with exception\n"
                  "ClusterError: the broker does not answer\n")
        log.flush()
        yield launcher.TestStep("date", dates[1], 1, 3.0)

    monkeypatch.setattr(launcher, "dags_test_dates", fake)
    said: list[str] = []
    with (tmp_path / "demo.log").open("w") as log:
        outcomes = run_nightly(DemoPlan(dates=dates, airflow_home=tmp_path / "home"), lab, log,
                               said.append, meanwhile=lambda: said.append("seed 000 aggregated"))
    assert [o.exit_code for o in outcomes] == [0, 1]
    # seed 000's aggregation (meanwhile) is said first, then the nightly's header
    assert said[0] == "seed 000 aggregated" and said[2].startswith("The nightly DAG")
    assert "  Airflow database ready in 1 s" in said
    assert any(line.startswith("  2026-11-18  nightly-20261122T000001Z-aaaaaa  1/1 cells  "
                               "complete") for line in said)
    assert any(line.startswith("  2026-11-19  -  0/0 cells  FAILED") for line in said)
    shown = [line for line in said if line.startswith("    | ")]
    assert shown[1] == "    | ClusterError: the broker does not answer"
    assert not [line for line in shown if "earlier date" in line]


def test_a_night_run_again_reads_the_lab_run_it_re_opened(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``make demo`` run twice: the night's lab run exists before its DAG run (one lab run per
    night) and is re-opened, not new; the date's line still names it."""
    import os

    from kafkalab.airflow import launcher
    from kafkalab.airflow.dags_test_dates import PREPARE_MARKER
    from kafkalab.demo import DemoPlan, run_nightly

    lab = LabData(tmp_path / "data")
    night = "nightly-20261118T000000Z"
    lab.write_manifest({"run_id": night, "status": "complete", "cells": []})
    os.utime(lab.manifest_path(night), ns=(0, 0))  # written long before this demo
    lab.write_manifest({"run_id": "nightly-fanout-20261117T000000Z", "status": "complete"})

    def fake(dag_id: str, dates_: Any, conf: Any, log: Any, **kwargs: Any) -> Any:
        log.write(f"{PREPARE_MARKER}\n")
        yield launcher.TestStep("prepare", "prepare", 0, 1.0)
        lab.write_manifest({"run_id": night, "status": "complete", "reopened_at": ["now"],
                            "cells": [{"status": "complete"}]})
        yield launcher.TestStep("date", "2026-11-18", 0, 20.0)

    monkeypatch.setattr(launcher, "dags_test_dates", fake)
    said: list[str] = []
    with (tmp_path / "demo.log").open("w") as log:
        outcomes = run_nightly(DemoPlan(dates=("2026-11-18",), airflow_home=tmp_path / "home"),
                               lab, log, said.append)
    assert [o.run_id for o in outcomes] == [night]
    assert any(line.startswith(f"  2026-11-18  {night}  1/1 cells  complete") for line in said)


def test_nightly_conf_is_laid_over_the_demos() -> None:
    conf = parse_conf('{"messages": 20, "payloads": ["1mb"]}')
    assert conf["messages"] == 20 and conf["payloads"] == ["1mb"]
    assert conf["scenarios"] == DEMO_NIGHTLY_CONF["scenarios"] and conf["fault_trial"] is False


@pytest.mark.parametrize(("argv", "message"), [
    (["demo", "--nightly-conf", "{messages: 20"], "--nightly-conf is not valid JSON"),
    (["demo", "--nightly-conf", "[1]"], "--nightly-conf must be a JSON object"),
    (["demo", "--dates", "yesterday"], "--dates: 'yesterday' is not a date"),
])
def test_bad_demo_options_get_one_line_and_exit_2(argv: list[str], message: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and err[0].startswith("kafkalab: error:")


def test_a_spark_connect_server_that_cannot_start_is_one_line_and_spark_submit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import socket

    from kafkalab.demo import DemoPlan, DemoSpark

    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path))
    monkeypatch.delenv("KAFKALAB_SPARK_MASTER", raising=False)
    monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)
    said: list[str] = []
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("KAFKALAB_SPARK_CONNECT_PORT", str(port))
        spark = DemoSpark(DemoPlan(), io.StringIO(), said.append)
        assert spark.master_url() is None and spark.nightly_env() == {}
    assert len(said) == 1 and said[0].startswith(
        f"Spark Connect server not started (port {port} on 127.0.0.1 is already in use")
    assert said[0].endswith("each Spark job of the demo is a spark-submit instead")


def test_a_spark_of_the_users_wins_over_the_demos_server(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from kafkalab.demo import DemoPlan, DemoSpark

    monkeypatch.setenv("KAFKALAB_SPARK_MASTER", "spark://127.0.0.1:7077")
    assert DemoSpark(DemoPlan(), io.StringIO(), print).master_url() is None
    monkeypatch.delenv("KAFKALAB_SPARK_MASTER")
    assert DemoSpark(DemoPlan(spark_connect=False), io.StringIO(), print).master_url() is None
