"""``kafkalab demo`` (what ``make demo`` runs) end to end, with a small matrix: its own
Kafka 4.x KRaft node (broker 30792, controller 30781), lab home (Airflow's DB and the demo's log)
and data dir; seed 000 with two scenarios × 1 KB × 5 messages, then the real nightly DAG
for one night, twice (``--dates 2026-11-18,2026-11-18``: what ``make demo`` run twice, or a
re-triggered night, does to the nightly; one scenario; the fan-out cell turned back on,
which the demo turns off; Spark and Great Expectations in one Spark session, as the demo
runs them). Every Spark job runs against the demo's Spark Connect server (its own port,
30702).

Asserts on what a newcomer reads: the table and its reading, one line per date, the closing
summary, and no Airflow log line on stdout (they are in the log file); and one lab run per
night (issue 29 §3): the second DAG run of the night re-opens the night's lab run and its
fan-out run, its rows replace the first's, and the report and drift see the night once.
~4-5 min.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from kafkalab.cluster.flavors.kafka09.distribution import NPM_TARBALL
from kafkalab.paths import lab_dir
from kafkalab.procs import port_free
from kafkalab.store import LabData
from tests.labs import prepare_lab

TARBALL = lab_dir() / "downloads" / NPM_TARBALL
CONTROLLER_PORT = 30781
BROKER_PORT = 30792
SPARK_CONNECT_PORT = 30702
STARTUP_PORTS = (30992, 30981)
"""The demo's start-up run's own cluster: broker, controller."""
AIRFLOW_LOG_LINE = re.compile(r"\[(debug|info|warning|error|critical)\s*\]|^\d{4}-\d\d-\d\dT\d\d:")

WORKLOAD = """\
name: demo-test
description: the demo test's seed 000, tiny
scenarios: [rest, confluent-kafka]
payloads: [1kb]
profiles: [latency]
encoding: base64
messages: 5
warmup_messages: 1
first_message_probes: 1
"""


@pytest.fixture(scope="module")
def demo_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A lab home of its own with a running 1-broker cluster; yields the lab dir."""
    from kafkalab.cluster.embedded import cluster_down, cluster_up

    if not TARBALL.is_file():
        pytest.fail(f"{TARBALL} missing: `make setup` downloads it")
    lab = tmp_path_factory.mktemp("demo-lab")
    (lab / "downloads").mkdir()
    shutil.copy2(TARBALL, lab / "downloads" / TARBALL.name)
    try:
        cluster_up("kraft", 1, lab_dir=prepare_lab(lab), base_port=BROKER_PORT,
                   control_port=CONTROLLER_PORT)
        yield lab
    finally:
        cluster_down(lab)


def test_the_demo_tells_a_newcomer_what_they_saw(demo_lab: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    workload = tmp_path / "demo-test.yaml"
    workload.write_text(WORKLOAD)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "KAFKALAB_"))}
    env.update(KAFKALAB_HOME=str(demo_lab), KAFKALAB_DATA_DIR=str(data),
               KAFKALAB_SPARK_CONNECT_PORT=str(SPARK_CONNECT_PORT))
    cmd = [str(Path(sys.executable).parent / "kafkalab"), "demo", "--workload", str(workload),
           "--dates", "2026-11-18,2026-11-18",  # the same night twice
           "--nightly-conf", json.dumps({"scenarios": ["confluent-kafka"], "messages": 5,
                                         "fanout_cell": True}),
           "--cluster", str(demo_lab / "cluster.yaml"),
           "--startup-ports", ",".join(map(str, STARTUP_PORTS))]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    out = proc.stdout
    print(out)
    print(proc.stderr[-4000:], file=sys.stderr)
    assert proc.returncode == 0, "kafkalab demo failed; see its output above"
    lines = out.splitlines()

    # the log file is named first; Airflow's logs are in it, not on stdout
    log_path = Path(lines[0].rsplit(": ", 1)[1])
    assert log_path.parent == demo_lab / "logs" and log_path.is_file()
    log_text = log_path.read_text()
    assert "[DAG TEST]" in log_text
    # the demo's one Spark session a night: validate_metrics judged aggregate_metrics's result
    assert "validated in aggregate_metrics's Spark session" in log_text
    # every Spark job ran against the demo's one Spark Connect server (none was submitted),
    # the load run's jobs too; the server is gone after the demo
    url = f"sc://localhost:{SPARK_CONNECT_PORT}"
    assert f"Spark Connect server at {url}: one Spark driver" in out
    assert "Spark-Submit cmd" not in log_text
    for script in ("aggregate_metrics.py", "aggregate_load.py"):
        assert re.search(rf"Spark Connect {re.escape(url)}/?: \S*{script}", log_text), script
    assert port_free(SPARK_CONNECT_PORT)
    assert not [line for line in lines if AIRFLOW_LOG_LINE.search(line)]
    assert not [line for line in lines if "Traceback" in line]

    # seed 000: one line per cell, the table, its reading
    assert sum(1 for line in lines if "] done:" in line) == 2
    head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["scenario", "payload"])
    assert {lines[head + 2].split()[0], lines[head + 3].split()[0]} == {"rest", "confluent-kafka"}
    assert any(line.startswith("Fastest by e2e p50 per size: 1kb ") for line in lines)
    assert any(line.startswith("First record after the consumer starts") for line in lines)
    # ... then through Spark and GX (kafkalab aggregate), so its report page has its cells
    (seed_run,) = [line.split()[1].rstrip(":") for line in lines
                   if line.startswith("run ") and line.endswith(": complete")]
    assert any(line.startswith("  validation passed (1 Spark job(s)") for line in lines)
    seed_lab = LabData(data)
    assert seed_lab.validation(seed_run)["success"] is True
    seed_page = (seed_lab.report_page_dir(seed_run) / "index.html").read_text()
    assert "No aggregates for this run" not in seed_page

    # seed 000's question on Kafka 4.x: the start-up run's cases and the answer, aggregated
    head = next(i for i, line in enumerate(lines) if line.split()[:3] == ["state", "delay",
                                                                          "client"])
    assert [lines[head + k].split()[:5] for k in range(1, 6)] == [
        ["cold", "3000", "confluent-kafka", "subscribe", "classic"],
        ["cold", "3000", "confluent-kafka", "subscribe", "consumer"],
        ["warm", "3000", "confluent-kafka", "subscribe", "classic"],
        ["warm", "3000", "confluent-kafka", "subscribe", "consumer"],
        ["warm", "3000", "confluent-kafka", "assign", "none"]]
    (answer,) = [line for line in lines if line.startswith("confluent-kafka: cold cluster: ")]
    assert "warm: classic with the default delay (3000 ms) " in answer and "n/a" not in answer
    (startup_run,) = [line.split()[1].rstrip(":") for line in lines
                      if re.match(r"run \S+: complete \(docs/first-message\.md", line)]
    assert LabData(data).manifest(startup_run)["kind"] == "startup"
    assert LabData(data).validation(startup_run, "startup")["success"] is True
    assert any(line.startswith(f"Start-up run {startup_run} → Spark") for line in lines)
    assert port_free(STARTUP_PORTS[0]) and port_free(STARTUP_PORTS[1])  # its cluster stopped

    # the nightly: one line per DAG run, read from what it wrote; both runs of the night
    # name the night's one lab run (one lab run per night)
    date_lines = [line for line in lines if line.startswith("  2026-11-18  ")]
    assert len(date_lines) == 2, date_lines
    for date_line in date_lines:
        m = re.fullmatch(r"  2026-11-18  (nightly-\S+)  1/1 cells \+ fan-out 1  complete, "
                         r"validated  \d+ s  drift: .*not judged.*", date_line)
        assert m and m[1] == "nightly-20261118T000000Z", date_line
    assert date_lines[0].endswith("not judged yet (needs 3 earlier runs)") or \
        "busy host" in date_lines[0], date_lines[0]  # issue 29 §4: a cell on a busy host
    lab = LabData(data)
    night = "nightly-20261118T000000Z"
    assert lab.manifest(night) is not None and lab.validation(night)["success"] is True
    _one_run_per_night(lab, night)

    # the closing summary: where things are, what to try next
    tail = "\n".join(lines[lines.index("Where things are:"):])
    assert str(lab.report_index_path()) in tail and lab.report_index_path().is_file()
    assert f"{log_path}" in tail
    for command in ("make airflow", "kafkalab load", "kafkalab maxrate", "kafkalab faults run"):
        assert command in tail, command
    assert re.fullmatch(r"demo done in \d+ min \d+ s", lines[-1]), lines[-1]


def _one_run_per_night(lab: LabData, night: str) -> None:
    """The night run twice is one lab run (and one fan-out run), re-opened by the second DAG
    run, whose rows replaced the first's; its derived outputs were recomputed; the report
    lists it once."""
    import pyarrow.parquet as pq

    runs = sorted(r for r in lab.manifests() if "20261118" in r)
    assert runs == [night, night.replace("nightly-", "nightly-fanout-")], runs
    for run_id in runs:
        manifest = lab.manifest(run_id)
        assert manifest is not None and manifest["status"] == "complete", run_id
        assert len(manifest["reopened_at"]) == 1, run_id  # by the second DAG run
        assert manifest["stale_outputs"] == [], run_id  # re-aggregated, validated, reported
        assert manifest["logical_date"] == "2026-11-18T00:00:00+00:00"
    manifest = lab.manifest(night)
    assert manifest is not None and len(manifest["cells"]) == 1
    (samples,) = lab.run_sample_files(night)  # one file for the one cell: replaced, not added
    rows = pq.read_table(samples, columns=["wall_ts_ns"]).column("wall_ts_ns").to_pylist()
    assert len(rows) == 5 + 10  # the conf's messages and the nightly workload's warm-up
    reopened = datetime.fromisoformat(manifest["reopened_at"][0])
    assert min(rows) >= reopened.timestamp() * 1e9  # the second DAG run's rows
    assert manifest["cells"][0]["measured_at"] > manifest["reopened_at"][0]
    from kafkalab.report.data import load_report_data

    assert load_report_data(lab).order.count(night) == 1  # drift's and the report's history
    index = lab.report_index_path().read_text()
    assert index.count(f">{night}</a></td>") == 1, "the report's runs table lists it once"
