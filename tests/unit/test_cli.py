"""The CLI: complete help, and one clear line plus a non-zero exit for every user error."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.cli import build_parser

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalab.cli", *args], capture_output=True,
                          text=True, cwd=REPO, env={**os.environ, **(env or {})}, timeout=120)


@pytest.mark.parametrize("argv", [[], ["cluster"], ["cluster", "up"], ["cluster", "status"],
                                  ["cluster", "down"], ["topics"], ["topics", "provision"], ["run"]])
def test_every_command_has_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([*argv, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: kafkalab")
    # every option and sub-command of the whole tree carries a help text
    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    assert choice.help, choice.dest
                for child in action.choices.values():
                    walk(child)
            else:
                assert action.help, action.dest

    walk(build_parser())


def test_run_help_lists_scenarios_payloads_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    out = capsys.readouterr().out
    for word in ("rest", "kafka-python", "confluent-kafka", "jvm-e2e", "10mb", "durability", "--messages"):
        assert word in out


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "--scenario", "grpc", "--payload", "1kb"], "unknown scenario 'grpc'"),
        (["run", "--scenario", "rest", "--profile", "warp", "--payload", "1kb"], "unknown profile 'warp'"),
        (["run", "--scenario", "rest", "--payload", "2mb"], "unknown payload '2mb'"),
        (["run", "--scenario", "rest", "--payload", "1kb", "--messages", "0"], "--messages must be at least 1"),
        (["run", "--workload", "no-such-workload"], "unknown workload 'no-such-workload'"),
        (["run", "--frobnicate"], "unrecognized arguments"),
        (["cluster", "up", "--brokers", "2"], "invalid choice"),
        (["spark", "connect", "--port", "80"], "--port 80 is not a port number in 1024..65535"),
    ],
)
def test_bad_input_is_one_line(args: list[str], expected: str, tmp_path: Path) -> None:
    proc = run_cli(*args, "--data-dir", str(tmp_path)) if args[0] == "run" and "--frobnicate" not in args else run_cli(*args)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "samples").exists()


def test_malformed_workload_yaml_names_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: w\npayloads: [1kb\n")
    proc = run_cli("run", "--workload", str(bad), "--data-dir", str(tmp_path))
    assert proc.returncode == 2
    assert "malformed YAML" in proc.stderr and str(bad) in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_invalid_workload_key_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: w\nmessages: many\n")
    proc = run_cli("run", "--workload", str(bad), "--data-dir", str(tmp_path))
    assert proc.returncode == 2 and "messages:" in proc.stderr


def test_cluster_not_up_is_one_line(tmp_path: Path) -> None:
    proc = run_cli("run", "--scenario", "confluent-kafka", "--payload", "1kb", "--data-dir", str(tmp_path),
                   env={"KAFKALAB_HOME": str(tmp_path / "empty-lab")})
    assert proc.returncode == 3
    assert "cluster not up" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["load", "--rate", "0"], "--rate: Input should be greater than 0"),
        (["load", "--rate", "-5"], "--rate: Input should be greater than 0"),
        (["load", "--rate", "fast"], "expected comma-separated numbers, got 'fast'"),
        (["load", "--duration", "2", "--warmup", "3"], "must be longer than the warm-up"),
        (["load", "--consumers", "300", "--rate", "3000"], "client budget"),
        (["load", "--consumers", "0"], "--consumers: Input should be greater than or equal to 1"),
        (["load", "--pause-at", "3"], "error: --pause-at and --pause-for go together"),
        (["load", "--payload", "3kb"], "unknown payload '3kb'"),
        (["load", "--workload", "nightly"], "not a load workload"),
        (["load", "--workload", "hydra-seed003"], "client budget"),
        (["maxrate", "--start-rate", "0"], "--start-rate must be positive"),
    ],
)
def test_bad_load_input_is_one_line_before_any_connection(args: list[str], expected: str,
                                                         tmp_path: Path) -> None:
    # The cluster descriptor points nowhere: every refusal happens before a connection.
    proc = run_cli(*args, "--data-dir", str(tmp_path), "--cluster", str(tmp_path / "none.yaml"),
                   env={"KAFKALAB_LOAD_BUDGET_DELIVERIES_PER_S": "60000"})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "load").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["aggregate"], "no runs in"),
        (["aggregate", "--run-id", "nope"], "unknown run 'nope'"),
        (["compare", "a", "b"], "unknown run 'a'"),
        (["compare", "a"], "the following arguments are required: RUN_B"),
        (["export", "prometheus", "--out", "metrics.txt"], "must end in .prom"),
    ],
)
def test_bad_aggregate_compare_export_input_is_one_line(args: list[str], expected: str,
                                                         tmp_path: Path) -> None:
    proc = run_cli(*args, "--data-dir", str(tmp_path), env={"KAFKALAB_HOME": str(tmp_path / "home")})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0] and "Traceback" not in proc.stderr and proc.stdout == ""


def _lab_with_runs(data_dir: Path, n: int = 4) -> list[str]:
    """``n`` complete, validated latency runs of one cell (aggregates only, no samples)."""
    import json

    import pandas as pd

    runs = [f"2026111{i}T010203Z-ab{i:04d}" for i in range(1, n + 1)]
    for i, rid in enumerate(runs):
        d = data_dir / "aggregates" / f"run_id={rid}"
        d.mkdir(parents=True)
        pd.DataFrame([{"scenario": "confluent-kafka", "client": "confluent-kafka",
                       "payload": "1kb", "payload_bytes": 1056, "payload_encoding": "raw",
                       "profile": "latency", "workload": "nightly", "cluster_flavor": "kafka09",
                       "broker_version": "0.9.0.1", "broker_count": 1, "planned_messages": 500,
                       "broker_is_emulator": False, "run_date": f"2026-11-1{i + 1}",
                       "sent_count": 500, "lost_count": 0,
                       "e2e_latency_ms_p50": 5.0 * (3 if i == n - 1 else 1)}]
                     ).to_parquet(d / "part-00000.parquet")
        (data_dir / "runs").mkdir(exist_ok=True)
        (data_dir / "runs" / f"{rid}.json").write_text(json.dumps({
            "run_id": rid, "status": "complete", "started_at": f"2026-11-1{i + 1}T01:02:03+00:00",
            "command": "kafkalab run", "stale_outputs": []}))
        (data_dir / "validation").mkdir(exist_ok=True)
        (data_dir / "validation" / f"{rid}.json").write_text(json.dumps({"success": True}))
    return runs


@pytest.mark.parametrize("argv", [
    ["runs"], ["report"], ["drift"], ["drift", "check"], ["export", "prometheus"],
    ["compare", "2026111{first}T010203Z-ab000{first}", "2026111{last}T010203Z-ab000{last}"],
    ["cluster", "status"], ["spark", "status"],
])
def test_json_is_one_document_on_stdout(argv: list[str], tmp_path: Path) -> None:
    import json

    data = tmp_path / "data"
    runs = _lab_with_runs(data)
    argv = [a.format(first=1, last=len(runs)) for a in argv]
    extra = [] if argv[0] in ("cluster", "spark") else ["--data-dir", str(data)]
    proc = run_cli(*argv, *extra, "--json", env={"KAFKALAB_HOME": str(tmp_path / "home")})
    doc = json.loads(proc.stdout)  # exactly one JSON document (json.loads refuses trailing data)
    assert isinstance(doc, dict) and "Traceback" not in proc.stderr
    if argv[0] == "runs":
        assert [r["run_id"] for r in doc["runs"]] == runs and doc["runs"][0]["state"] == "complete"
    elif argv[0] == "drift":
        assert doc["run_id"] == runs[-1] and doc["drifts"] == 1 and proc.returncode == 0
        assert any(r["is_drift"] and r["metric"] == "e2e_latency_ms_p50" for r in doc["records"])
    elif argv[0] == "compare":
        assert proc.returncode == 1 and doc["regressed"] == 1
    elif argv[0] == "report":
        assert Path(doc["report"]).is_file() and Path(doc["index"]).is_file()
    elif argv[0] in ("cluster", "spark"):
        assert proc.returncode == 1 and doc["status"] == "down"
    else:
        assert proc.returncode == 0, proc.stderr


def test_cluster_status_is_a_table_by_default(tmp_path: Path) -> None:
    proc = run_cli("cluster", "status", env={"KAFKALAB_HOME": str(tmp_path)})
    assert proc.returncode == 1
    assert proc.stdout.startswith("cluster: down (no processes recorded in ")
    assert "{" not in proc.stdout


def test_cluster_status_table_lists_each_process() -> None:
    from kafkalab.cli.cluster import format_cluster_status

    text = format_cluster_status({
        "status": "degraded", "flavor": "kraft", "brokers": 1, "started_at": "2026-11-22T01:00:00",
        "lab_dir": "/lab", "state_path": "/lab/cluster/state.json",
        "descriptor_path": "/lab/cluster.yaml", "stale": False, "kafka_version": "4.4.0",
        "mode": "KRaft", "quorum_leader": 0, "quorum_epoch": 3, "sasl_ssl": "127.0.0.1:19792",
        "processes": [{"role": "broker", "id": 0, "pid": 4242, "alive": False, "listening": False,
                       "address": "127.0.0.1:19292", "log": "/lab/cluster/logs/node0/stdout.log"}]})
    lines = text.splitlines()
    assert lines[0] == "cluster: degraded  kraft, 1 broker(s), started 2026-11-22T01:00:00"
    assert lines[1] == "Apache Kafka 4.4.0  KRaft, quorum leader: node 0 (epoch 3)"
    assert lines[2].split() == ["role", "id", "pid", "alive", "listening", "address", "log"]
    assert lines[3].split() == ["broker", "0", "4242", "NO", "NO", "127.0.0.1:19292",
                                "/lab/cluster/logs/node0/stdout.log"]
    assert lines[-3:] == ["SASL_SSL (SCRAM-SHA-512 over TLS): 127.0.0.1:19792",
                          "descriptor: /lab/cluster.yaml", "state: /lab/cluster/state.json"]


def test_aggregate_submits_the_dags_job_on_the_switchs_master(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalab.aggregate import newest_run, spark_master, spark_submit_command
    from kafkalab.spark.submit import spark_application, spark_job_args, spark_py_files
    from kafkalab.store import LabData

    monkeypatch.delenv("KAFKALAB_SPARK_MASTER", raising=False)
    assert spark_master() == "local[*]"
    assert spark_master({"KAFKALAB_SPARK_MASTER": "spark://127.0.0.1:7077"}) == "spark://127.0.0.1:7077"
    cmd = spark_submit_command("validate", "R1", tmp_path, "local[2]")
    assert cmd[0].endswith("spark-submit") and cmd[1:3] == ["--master", "local[2]"]
    app = cmd.index(spark_application("validate"))
    assert cmd[app + 1:] == [str(a) for a in spark_job_args("validate", "R1", tmp_path)]
    assert cmd[cmd.index("--py-files") + 1] == spark_py_files()
    runs = _lab_with_runs(tmp_path, 3)
    assert newest_run(LabData(tmp_path)) == runs[-1]


@pytest.mark.parametrize("named", [True, False])
def test_aggregate_refuses_a_run_still_being_measured(named: bool, tmp_path: Path) -> None:
    """A running run (its owner, this test's process, alive; written just now) is refused
    before any spark-submit: half its samples would clear its stale outputs."""
    import json
    import socket

    data, home = tmp_path / "data", tmp_path / "home"
    rid = "20261122T030405Z-0a0b0c"
    (data / "runs").mkdir(parents=True)
    manifest = {"schema_version": 2, "run_id": rid, "status": "running",
                "started_at": "2026-11-22T03:04:05+00:00", "command": "kafkalab run",
                "owner": {"kind": "cli", "host": socket.gethostname(), "pid": os.getpid()},
                "stale_outputs": ["aggregates"]}
    (data / "runs" / f"{rid}.json").write_text(json.dumps(manifest))
    proc = run_cli("aggregate", *(["--run-id", rid] if named else []), "--data-dir", str(data),
                   env={"KAFKALAB_HOME": str(home)})
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"kafkalab: error: run {rid} is still being measured by process {os.getpid()} on "
        f"{socket.gethostname()}: aggregate it once it has ended (`kafkalab runs` shows its "
        f"state): kafkalab aggregate --run-id {rid}"]
    assert not (home / "logs").exists()  # no job started
    assert json.loads((data / "runs" / f"{rid}.json").read_text())["stale_outputs"] == ["aggregates"]


def test_aggregate_takes_a_stale_or_ended_run(tmp_path: Path) -> None:
    """A run whose owner is gone (stale) or that ended is not refused: what it measured is
    all it will have."""
    import socket

    from kafkalab.aggregate import refuse_running
    from kafkalab.store import LabData

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    lab = LabData(tmp_path)
    for rid, status in (("20261122T030405Z-0a0b01", "running"),
                        ("20261122T030405Z-0a0b02", "incomplete")):
        doc = {"schema_version": 2, "run_id": rid, "status": status, "stale_outputs": [],
               "owner": {"kind": "cli", "host": socket.gethostname(),
                         "pid": int(gone.stdout)}}
        lab.write_manifest(doc)
        assert lab.run_state(rid) in ("stale", "incomplete")
        refuse_running(lab, rid, doc)  # no error


def test_sigterm_takes_the_ctrl_c_path_and_restores_the_handler(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A command SIGTERMed (a real signal to this process) ends as Ctrl-C does: its
    KeyboardInterrupt path runs (what it started is stopped, what it measured kept), one line,
    exit 143; the process's own SIGTERM handler is back afterwards."""
    import signal
    import time

    from kafkalab import cli
    from kafkalab.cli import runs

    cleaned: list[str] = []

    def killed_mid_command(_args: object) -> int:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # never reached: the signal interrupts here
            return 0
        except KeyboardInterrupt:
            cleaned.append("stopped what it started")
            raise

    monkeypatch.setattr(runs, "cmd_runs", killed_mid_command)
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["runs"]) == 143
    assert cleaned == ["stopped what it started"]
    assert "kafkalab: terminated (SIGTERM); what was measured is kept" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGTERM) is before
