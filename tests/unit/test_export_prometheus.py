"""``kafkalab export prometheus``: the text file, parsed back with prometheus_client's parser."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kafkalab.export.prometheus import default_textfile_path, render, write_textfile
from tests.export_lab import (
    NIGHTLY,
    build_export_lab,
    ended,
    manifest,
    row,
    table,
    validation,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    """:func:`tests.export_lab.build_export_lab`: five nightly runs, a load run, a fault run."""
    return build_export_lab(tmp_path)


def _samples(text: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge", family.name
        out.setdefault(family.name, []).extend(family.samples)
    return out


def _value(samples: list[Any], **labels: str) -> float | None:
    hits = [s.value for s in samples if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(hits) <= 1, (labels, hits)
    return hits[0] if hits else None


def _ts(iso: str) -> float:
    return pd.Timestamp(iso).timestamp()


def test_the_file_parses_back_with_the_latest_figures(lab: Path) -> None:
    path = write_textfile(lab)
    assert path == default_textfile_path(lab) == lab / "metrics" / "kafkalab.prom"
    s = _samples(path.read_text())
    nightly = {"kind": "latency", "emulator": "false", "source": "dag"}
    # the newest latency run failed validation: the last success is the run before it
    assert _value(s["kafkalab_last_success_timestamp_seconds"], **nightly) == _ts(ended(3))
    assert _value(s["kafkalab_last_run_success"], **nightly) == 0.0
    assert _value(s["kafkalab_last_run_timestamp_seconds"], **nightly) == _ts(
        "2026-11-15T01:02:03+00:00")
    # the load run came from the CLI (no owner, no logical date), the fault run from a DAG
    assert _value(s["kafkalab_last_success_timestamp_seconds"], kind="load", source="cli",
                  emulator="false") == _ts("2026-11-16T02:01:00+00:00")
    assert _value(s["kafkalab_last_success_timestamp_seconds"], kind="faults") is None
    assert _value(s["kafkalab_last_run_success"], kind="faults", source="dag") == 0.0

    ck = {"scenario": "confluent-kafka", "payload": "1kb", "profile": "latency",
          "emulator": "false"}
    assert _value(s["kafkalab_latency_p50_ms"], **ck) == 10.0
    assert _value(s["kafkalab_latency_p99_ms"], **ck) == 30.0
    emu = {**ck, "emulator": "true"}
    assert _value(s["kafkalab_latency_p50_ms"], **emu) == 4.0
    assert _value(s["kafkalab_latency_p50_ms"], **emu) is not None
    assert [x.labels["cluster_flavor"] for x in s["kafkalab_latency_p50_ms"]
            if x.labels["emulator"] == "true"] == ["external"]
    # every series names the broker version it was measured on
    assert {x.labels["broker_version"] for x in s["kafkalab_latency_p50_ms"]} == {"0.9.0.1"}
    # kafka-python planned 500 messages for four nights, then 20: two series (the drift key
    # has the count), the 20-message run does not overwrite the 500-message series
    kp_key = "kafka-python|kafka-python|1kb|raw|1056|latency|nightly|kafka09|0.9.0.1|1|"
    assert sorted(x.labels["series"] for x in s["kafkalab_latency_p50_ms"]
                  if x.labels["scenario"] == "kafka-python") == [kp_key + "20", kp_key + "500"]
    kp = {"series": kp_key + "20", "emulator": "false"}
    # 20 messages: p99 undefined, so omitted (not 0); p50 and the loss are there
    assert _value(s["kafkalab_latency_p50_ms"], **kp) == 9.0
    assert _value(s["kafkalab_latency_p99_ms"], **kp) is None
    assert _value(s["kafkalab_messages_lost"], **kp) == 2.0
    assert _value(s["kafkalab_messages_sent"], **kp) == 20.0
    assert _value(s["kafkalab_series_run_timestamp_seconds"], **kp) == _ts(
        "2026-11-15T01:02:03+00:00")
    kp500 = {"series": kp_key + "500", "emulator": "false"}
    assert _value(s["kafkalab_latency_p99_ms"], **kp500) == 27.0
    assert _value(s["kafkalab_messages_sent"], **kp500) == 500.0
    assert _value(s["kafkalab_series_run_timestamp_seconds"], **kp500) == _ts(
        "2026-11-14T01:02:03+00:00")

    # drift: confluent-kafka's p50 doubled after 4 good runs
    assert _value(s["kafkalab_drift_active"], metric="e2e_latency_ms_p50", **ck) == 1.0
    assert _value(s["kafkalab_drift_change_ratio"], metric="e2e_latency_ms_p50",
                  **ck) == pytest.approx(1.0)
    # kafka-python: 500 then 20 planned messages, two series (the drift key has the count)
    assert [x.value for x in s["kafkalab_drift_active"]
            if x.labels["scenario"] == "kafka-python"
            and x.labels["metric"] == "e2e_latency_ms_p50"] == [0.0, 0.0]
    series = {x.labels["series"] for x in s["kafkalab_drift_active"] if x.value == 1.0}
    assert all(k.startswith("confluent-kafka|") and "|kafka09|" in k for k in series), series
    # a latency series' key is its drift series' key without the metric
    ck_series = [x.labels["series"] for x in s["kafkalab_latency_p50_ms"]
                 if all(x.labels[k] == v for k, v in ck.items())]
    assert [k + "|e2e_latency_ms_p50" for k in ck_series] == [
        x.labels["series"] for x in s["kafkalab_drift_active"]
        if x.labels["metric"] == "e2e_latency_ms_p50"
        and all(x.labels[k] == v for k, v in ck.items())]

    # the load cells: two series that differ only in duration (part of the load drift key)
    # a plain producer's cell: the pause and the transaction parts empty
    load_key = "load|confluent-kafka|1kb|raw||default|1|5|500|1|assign|{}|||||kafka09|0.9.0.1|1"
    assert sorted(x.labels["series"] for x in s["kafkalab_load_latency_p50_ms"]) == [
        load_key.format(10), load_key.format(30)]
    assert _value(s["kafkalab_load_latency_p50_ms"], series=load_key.format(30)) == 3.5
    assert {x.labels["broker_version"] for x in s["kafkalab_load_latency_p50_ms"]} == {"0.9.0.1"}
    # the 10 s cell: p99 censored (omitted), loss as a ratio
    load = {"client": "confluent-kafka", "acks": "1", "series": load_key.format(10)}
    assert _value(s["kafkalab_load_latency_p50_ms"], **load) == 2.5
    assert "kafkalab_load_latency_p99_ms" not in s or not s["kafkalab_load_latency_p99_ms"]
    assert _value(s["kafkalab_load_loss_ratio"], **load) == pytest.approx(0.015)
    assert _value(s["kafkalab_load_messages_missing"], **load) == 30.0
    # the fault cell
    fault = {"profile": "availability", "fault": "sigkill-leader", "acks": "1", "commit": ""}
    assert _value(s["kafkalab_fault_acked_lost_messages"], **fault) == 3.0
    assert _value(s["kafkalab_fault_trials_with_loss"], **fault) == 2.0
    assert _value(s["kafkalab_fault_unprocessed_messages"], **fault) is None


def test_an_emulator_run_or_a_cli_run_does_not_reset_the_last_good_nightly(lab: Path) -> None:
    # after the nightly's failed run, two runs that passed: one on the emulator (from a DAG),
    # one from the CLI on Kafka
    emu_run, cli_run = "20261116T050000Z-ff0001", "20261116T060000Z-ff0002"
    manifest(lab, emu_run, "2026-11-16T05:00:00+00:00", "2026-11-16T05:01:00+00:00",
              owner={"kind": "airflow"}, cluster={"is_emulator": True})
    manifest(lab, cli_run, "2026-11-16T06:00:00+00:00", "2026-11-16T06:01:00+00:00",
              owner={"kind": "cli"}, cluster={"is_emulator": False})
    for rid in (emu_run, cli_run):
        validation(lab, rid, True)
    s = _samples(render(lab).decode())
    nightly = {"kind": "latency", "emulator": "false", "source": "dag"}
    assert _value(s["kafkalab_last_success_timestamp_seconds"], **nightly) == _ts(ended(3))
    assert _value(s["kafkalab_last_run_success"], **nightly) == 0.0
    assert _value(s["kafkalab_last_success_timestamp_seconds"], kind="latency", emulator="true",
                  source="dag") == _ts("2026-11-16T05:01:00+00:00")
    assert _value(s["kafkalab_last_run_success"], kind="latency", emulator="false",
                  source="cli") == 1.0
    assert {x.labels["source"] for x in s["kafkalab_last_run_success"]} == {"dag", "cli"}


def test_a_back_filled_night_does_not_become_the_latest_figure(lab: Path) -> None:
    # started after every other run, but it measured the night of the 12th
    late, late_fault = "nightly-20261112T000000Z-bf", "nightly-20261112T000000Z-bf-faults"
    table(lab / "aggregates" / f"run_id={late}",
          [row(1, "confluent-kafka", "confluent-kafka", 50.0)])
    manifest(lab, late, "2026-11-20T01:00:00+00:00", "2026-11-20T01:09:00+00:00",
              logical_date="2026-11-12T00:00:00+00:00", **NIGHTLY)
    validation(lab, late, True)
    table(lab / "aggregates" / "faults" / f"run_id={late_fault}" / "fault_cells.parquet", [{
        "run_id": late_fault, "profile": "availability", "fault": "sigkill-leader", "acks": 1,
        "commit": None, "broker_is_emulator": False, "trials": 5, "trials_complete": 5,
        "trials_with_loss": 0, "acked_lost_sum": 0, "lost_unprocessed_sum": None}])
    manifest(lab, late_fault, "2026-11-20T02:00:00+00:00", "2026-11-20T02:05:00+00:00",
              kind="faults", logical_date="2026-11-12T00:00:00+00:00", **NIGHTLY)
    s = _samples(render(lab).decode())
    ck = {"scenario": "confluent-kafka", "emulator": "false"}
    assert _value(s["kafkalab_latency_p50_ms"], **ck) == 10.0  # the night of the 15th
    assert _value(s["kafkalab_series_run_timestamp_seconds"], **ck) == _ts(
        "2026-11-15T01:02:03+00:00")
    fault = {"profile": "availability", "fault": "sigkill-leader"}
    assert _value(s["kafkalab_fault_acked_lost_messages"], **fault) == 3.0  # the 16th's


def test_run_kind_and_source_follow_the_manifest() -> None:
    from kafkalab.export.prometheus import run_is_emulator, run_source
    from kafkalab.kinds import kind_name as run_kind

    assert run_kind({"kind": "faults"}) == "faults"
    assert run_kind({"kind": "load"}) == run_kind({"workload": {"kind": "load"}}) == "load"
    assert run_kind({"kind": "latency"}) == run_kind(None) == "latency"
    assert run_source({"owner": {"kind": "airflow"}}) == "dag"
    assert run_source({"owner": {"kind": "cli"}, "logical_date": "2026-11-18T00:00:00+00:00"}) \
        == "dag"
    assert run_source({"owner": {"kind": "cli"}, "logical_date": None}) == run_source(None) \
        == "cli"
    assert run_is_emulator({"cluster": {"is_emulator": True}})
    assert not run_is_emulator({"cluster": {"flavor": "none"}}) and not run_is_emulator(None)


def test_an_empty_data_dir_gives_a_valid_file_without_samples(tmp_path: Path) -> None:
    s = _samples(render(tmp_path).decode())
    assert "kafkalab_latency_p50_ms" in {f.name for f in
                                         text_string_to_metric_families(render(tmp_path).decode())}
    assert all(not v for v in s.values())


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalab.cli", *args], capture_output=True,
                          text=True, cwd=REPO, env=dict(os.environ), timeout=120, check=False)


def test_cli_writes_where_told_and_refuses_a_name_the_collector_ignores(lab: Path) -> None:
    out = lab / "textfile" / "lab.prom"
    proc = _cli("export", "prometheus", "--data-dir", str(lab), "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["path"] == str(out) and doc["samples"]["kafkalab_drift_active"] > 0
    assert _samples(out.read_text())["kafkalab_latency_p50_ms"]
    assert [p.name for p in out.parent.iterdir()] == ["lab.prom"]  # no temporary file left
    plain = _cli("export", "prometheus", "--data-dir", str(lab))
    assert plain.returncode == 0 and str(lab / "metrics" / "kafkalab.prom") in plain.stdout
    bad = _cli("export", "prometheus", "--data-dir", str(lab), "--out", str(lab / "x.txt"))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "must end in .prom" in bad.stderr and not (lab / "x.txt").exists()


def test_the_file_is_readable_by_node_exporter_another_user(lab: Path) -> None:
    path = write_textfile(lab)
    assert path.stat().st_mode & 0o777 == 0o644
    path.chmod(0o600)
    assert write_textfile(lab).stat().st_mode & 0o777 == 0o644  # rewritten: readable again


@pytest.mark.parametrize("out", ["/proc/kl.prom", "/proc/no-such-dir/kl.prom",
                                 "/dev/null/kl.prom"])
def test_cli_an_unwritable_out_is_one_line_and_exit_2(lab: Path, out: str) -> None:
    proc = _cli("export", "prometheus", "--data-dir", str(lab), "--out", out)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert f"--out {out}: cannot write: " in proc.stderr


def test_cli_an_out_in_a_missing_folder_creates_it_like_the_default(lab: Path) -> None:
    out = lab / "new" / "deeper" / "lab.prom"
    proc = _cli("export", "prometheus", "--data-dir", str(lab), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert _samples(out.read_text())["kafkalab_latency_p50_ms"]
    assert out.stat().st_mode & 0o777 == 0o644


def test_the_grafana_dashboard_queries_only_exported_metrics_and_labels(lab: Path) -> None:
    import re

    from kafkalab.paths import include_dir

    dash = json.loads((include_dir() / "grafana" / "kafkalab.json").read_text())
    families = {f.name: f for f in text_string_to_metric_families(render(lab).decode())}
    # the canary row queries the canary's own endpoint (tests/unit/test_canary_book.py,
    # tests/integration/test_canary.py); a row panel has no query
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])
             if "kafkalab_canary_" not in t["expr"]]
    exprs += [v["definition"] for v in dash["templating"]["list"] if v["type"] == "query"]
    used = {m for e in exprs for m in re.findall(r"kafkalab_[a-z0-9_]+", e)}
    assert used and used <= set(families), used - set(families)
    for e in exprs:  # every label a selector names is one of its metric's labels
        for metric, selector in re.findall(r"(kafkalab_[a-z0-9_]+)\{([^}]*)\}", e):
            labels = set(re.findall(r"(\w+)\s*=~?", selector))
            have = {k for s in families[metric].samples for k in s.labels}
            assert not families[metric].samples or labels <= have, (metric, labels - have)
    assert len({p["id"] for p in dash["panels"]}) == len(dash["panels"])
    targets = [t for p in dash["panels"] for t in p.get("targets", [])]
    # the nightly's health: only DAG runs on Kafka (an emulator or CLI run resets nothing)
    for t in targets:
        if re.search(r"kafkalab_last_(success|run)_", t["expr"]):
            assert 'emulator="false"' in t["expr"] and 'source="dag"' in t["expr"], t["expr"]
    # a line per series: its legend names the series key, so two series never share a name
    for t in targets:
        if re.match(r"kafkalab_(latency|load_latency|load_loss|messages)_", t["expr"]):
            assert "{{series}}" in t["legendFormat"], t
