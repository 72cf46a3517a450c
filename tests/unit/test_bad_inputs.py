"""The bad-input tier (issue 26): the CLI fed ~100 distinct bad inputs at its edges — numbers,
types, names, YAML bombs, binary and unreadable files, path tricks, corrupt data directories,
secrets typed inline. For each: exit code 2 (a user error), one ``error`` line naming the
problem, no traceback, no secret echoed, and every file already measured byte for byte as it
was. The DAGs' params meet the same bounds through Airflow's own validation in
``tests/e2e/test_dag_integrity.py``.

Each input runs ``kafkalab.cli.main`` in this process (an exception that escaped it would
fail the test); a few run the real console script, to see what a user's terminal sees.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.cli import main
from kafkalab.store import LabData, atomic_write_json
from tools.fake_samples import write_cli_manifest, write_fake_samples

SECRET = "s3cr3t-P@ss!w0rd"
"""A password that must never appear in any output."""

BOMB = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
        + "".join(f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n"
                  for p, c in zip("abcdefgh", "bcdefghi", strict=True)))
"""A billion-laughs document of ~500 bytes (9^9 "lol"s once expanded)."""


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The bad files the inputs name."""
    d = tmp_path_factory.mktemp("bad-files")
    out: dict[str, str] = {"dir": str(d), "missing": str(d / "missing.yaml")}

    def put(name: str, data: str | bytes) -> None:
        p = d / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        out[name] = str(p)

    put("bomb.yaml", BOMB)
    put("binary.yaml", bytes(range(256)) * 4)
    put("big.yaml", b"k: " + b"x" * (1024 * 1024 + 10))
    put("list.yaml", "- just\n- a list\n")
    put("syntax.yaml", "a: [unclosed\n")
    put("afile", "not a directory")
    put("recursive.yaml", "a: &a [*a]\n")
    base = ("name: mine\nflavor: external\nprotocol: modern\nbootstrap_servers: 127.0.0.1:9\n"
            "broker_count: 1\n")
    put("inline-password.yaml", base + f"client_properties:\n  sasl.password: {SECRET}\n")
    put("inline-jaas.yaml", base + "client_properties:\n  sasl.jaas.config: >-\n    "
        f'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" '
        f'password="{SECRET}";\n')
    put("secret-env-value.yaml", base + f"secret_env:\n  sasl.password: '{SECRET}'\n")
    put("nested-property.yaml", base + "client_properties:\n  linger.ms: [1, 2]\n")
    put("profile-nested.yaml", "name: p\nproducer:\n  acks: [1, all]\n")
    return out


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding a measured, aggregated-looking run, drift acceptances and the
    alert state: what no bad input may touch."""
    data = tmp_path_factory.mktemp("bad-inputs-data")
    write_fake_samples(data, 300, run_id="20261120T000000Z-aaaaaa", seed=1)
    write_cli_manifest(data, "20261120T000000Z-aaaaaa")
    lab = LabData(data)
    atomic_write_json(lab.alert_state_path(), {"schema": 2, "series": {"k": {"level": 1}}})
    atomic_write_json(lab.drift_acceptances_path(), {"schema": 1, "acceptances": []})
    return data


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (lock files aside) with its sha256."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.endswith(".lock")}


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out + out.err


RUN = "20261120T000000Z-aaaaaa"
"""The measured run of :func:`measured`."""

# (id, argv with {placeholders} of ``files``, a fragment of the one error line)
BAD_INPUTS: list[tuple[str, list[str], str]] = [
    # ---- numbers
    ("run-messages-0", ["run", "--scenario", "rest", "--messages", "0"], "--messages must be at least 1"),
    ("run-messages-negative", ["run", "--scenario", "rest", "--messages", "-5"], "--messages must be at least 1"),
    ("run-messages-huge", ["run", "--scenario", "rest", "--messages", str(10**15)], "--messages must be at most 100000"),
    ("run-messages-text", ["run", "--scenario", "rest", "--messages", "abc"], "--messages"),
    ("run-messages-float", ["run", "--scenario", "rest", "--messages", "1.5"], "--messages"),
    ("run-messages-inf", ["run", "--scenario", "rest", "--messages", "inf"], "--messages"),
    ("run-warmup-negative", ["run", "--scenario", "rest", "--warmup", "-1"], "--warmup"),
    ("run-warmup-huge", ["run", "--scenario", "rest", "--warmup", str(10**9)], "--warmup"),
    ("run-http-port-text", ["run", "--scenario", "rest", "--http-port", "x"], "--http-port"),
    ("load-rate-zero", ["load", "--rate", "0"], "--rate"),
    ("load-rate-negative", ["load", "--rate", "-5"], "--rate"),
    ("load-rate-inf", ["load", "--rate", "inf"], "--rate: Input should be a finite number"),
    ("load-rate-nan", ["load", "--rate", "nan"], "--rate"),
    ("load-rate-1e308", ["load", "--rate", "1e308"], "--rate: Input should be less than or equal"),
    ("load-rate-text", ["load", "--rate", "fast"], "--rate"),
    ("load-rate-one-inf", ["load", "--rate", "100,inf"], "--rate"),
    ("load-duration-zero", ["load", "--duration", "0"], "--duration"),
    ("load-duration-inf", ["load", "--duration", "inf"], "--duration: Input should be a finite number"),
    ("load-duration-1e308", ["load", "--duration", "1e308"], "--duration"),
    ("load-duration-day", ["load", "--duration", "86400"], "--duration"),
    ("load-warmup-longer", ["load", "--duration", "5", "--warmup", "10"], "must be longer than the warm-up"),
    ("load-consumers-zero", ["load", "--consumers", "0"], "--consumers"),
    ("load-consumers-many", ["load", "--consumers", "1001"], "--consumers"),
    ("load-consumers-text", ["load", "--consumers", "a,b"], "--consumers"),
    ("load-consumers-empty", ["load", "--consumers", ","], "--consumers"),
    ("load-grid-too-long", ["load", "--consumers", ",".join(str(i) for i in range(1, 60))], "--consumers"),
    ("load-partitions-zero", ["load", "--partitions", "0"], "--partitions"),
    ("load-partitions-many", ["load", "--partitions", "65"], "--partitions"),
    ("load-drain-negative", ["load", "--drain", "-1"], "--drain"),
    ("load-drain-inf", ["load", "--drain", "inf"], "--drain"),
    ("load-pause-alone", ["load", "--pause-at", "3"], "--pause-at and --pause-for go together"),
    ("load-pause-after-end", ["load", "--pause-at", "30", "--pause-for", "1"], "after the end"),
    ("load-per-process-zero", ["load", "--consumers-per-process", "0"], "--consumers-per-process"),
    ("load-too-many-messages", ["load", "--rate", "900000", "--duration", "3000"], "more than one cell holds"),
    ("maxrate-start-inf", ["maxrate", "--start-rate", "inf"], "finite number"),
    ("maxrate-start-zero", ["maxrate", "--start-rate", "0"], "--start-rate must be positive"),
    ("faults-trials-zero", ["faults", "run", "--trials", "0"], "--trials"),
    ("faults-trials-51", ["faults", "run", "--trials", "51"], "--trials"),
    ("faults-trials-huge", ["faults", "run", "--trials", str(10**8)], "--trials"),
    ("faults-rate-inf", ["faults", "run", "--rate", "inf"], "--rate"),
    ("faults-rate-high", ["faults", "run", "--rate", "20001"], "--rate"),
    ("faults-duration-long", ["faults", "run", "--duration", "3601"], "--duration"),
    ("faults-max-in-flight-text", ["faults", "run", "--max-in-flight", "x"], "--max-in-flight"),
    ("faults-max-in-flight-9", ["faults", "run", "--max-in-flight", "9"], "--max-in-flight"),
    ("faults-consumers-one", ["faults", "run", "--fault", "kill-consumer", "--consumers", "1"], "--consumers"),
    ("faults-session-timeout-tiny", ["faults", "run", "--fault", "kill-consumer", "--session-timeout-ms", "5"], "session"),
    # ---- types and names
    ("run-scenario-unknown", ["run", "--scenario", "carrier-pigeon"], "carrier-pigeon"),
    ("run-payload-unknown", ["run", "--scenario", "rest", "--payload", "3gb"], "unknown payload '3gb'"),
    ("run-profile-unknown", ["run", "--profile", "nosuch"], "unknown profile 'nosuch'"),
    ("run-workload-unknown", ["run", "--workload", "nosuch"], "nosuch"),
    ("run-encoding-unknown", ["run", "--scenario", "rest", "--encoding", "rot13"], "--encoding"),
    ("run-consumer-mode-unknown", ["run", "--consumer-mode", "psychic"], "--consumer-mode"),
    ("load-acks-2", ["load", "--acks", "2"], "--acks"),
    ("load-payload-unknown", ["load", "--payload", "7mb"], "7mb"),
    ("load-client-unknown", ["load", "--client", "kafka-go"], "--client"),
    ("faults-fault-unknown", ["faults", "run", "--fault", "meteor"], "--fault: Input should be"),
    ("faults-profile-unknown", ["faults", "run", "--profile", "nosuch"], "nosuch"),
    ("faults-acks-3", ["faults", "run", "--acks", "3"], "--acks"),
    ("faults-commit-unknown", ["faults", "run", "--fault", "kill-consumer", "--commit", "never"], "--commit: Input should be"),
    ("faults-commit-broker-fault", ["faults", "run", "--commit", "after"], "--commit applies to the consumer faults"),
    ("cluster-up-brokers-2", ["cluster", "up", "--brokers", "2"], "--brokers"),
    ("broker-setting-no-value", ["cluster", "up", "--broker-setting", "num.partitions"],
     "--broker-setting"),
    ("broker-setting-lab-owned", ["cluster", "up", "--broker-setting", "node.id=3"],
     "node.id is set by the lab"),
    ("broker-setting-bad-name", ["cluster", "up", "--broker-setting", "Num Partitions=3"],
     "not a broker property name"),
    ("broker-setting-twice", ["cluster", "up", "--broker-setting", "num.partitions=3",
                              "--broker-setting", "num.partitions=4"], "given twice"),
    ("broker-setting-on-0.9", ["cluster", "up", "--flavor", "kafka09", "--broker-setting",
                               "num.partitions=3"], "takes no broker settings"),
    ("unknown-command", ["teleport"], "invalid choice"),
    # ---- YAML bombs, binary, unreadable, malformed files
    ("cluster-bomb", ["run", "--cluster", "{bomb.yaml}"], "YAML bomb"),
    ("profile-bomb", ["run", "--scenario", "rest", "--profile", "{bomb.yaml}"], "YAML bomb"),
    ("workload-bomb", ["run", "--workload", "{bomb.yaml}"], "YAML bomb"),
    ("load-workload-bomb", ["load", "--workload", "{bomb.yaml}"], "YAML bomb"),
    ("drift-config-bomb", ["drift", "--data-dir", "{data}", "--config", "{bomb.yaml}"], "YAML bomb"),
    ("recursive-alias", ["run", "--cluster", "{recursive.yaml}"], "refers to a node that contains it"),
    ("cluster-binary", ["run", "--cluster", "{binary.yaml}"], "not UTF-8 text"),
    ("profile-binary", ["run", "--scenario", "rest", "--profile", "{binary.yaml}"], "not UTF-8 text"),
    ("workload-binary", ["run", "--workload", "{binary.yaml}"], "not UTF-8 text"),
    ("compare-config-binary", ["compare", RUN, RUN, "--data-dir", "{data}", "--config", "{binary.yaml}"], "not UTF-8 text"),
    ("cluster-too-big", ["run", "--cluster", "{big.yaml}"], "larger than 1 MiB"),
    ("cluster-a-directory", ["run", "--cluster", "{dir}"], "a directory, not a file"),
    ("cluster-missing", ["run", "--cluster", "{missing}"], "no such file"),
    ("cluster-a-list", ["run", "--cluster", "{list.yaml}"], "list.yaml"),
    ("cluster-syntax", ["run", "--cluster", "{syntax.yaml}"], "malformed YAML"),
    ("cluster-nested-property", ["run", "--cluster", "{nested-property.yaml}"], "'linger.ms': expected a single value"),
    ("profile-nested-value", ["run", "--scenario", "rest", "--profile", "{profile-nested.yaml}"], "profile-nested.yaml"),
    ("topics-bomb", ["topics", "provision", "--cluster", "{bomb.yaml}"], "YAML bomb"),
    # ---- path tricks
    ("run-id-escape", ["run", "--scenario", "rest", "--run-id", "../escaped"], "is not a run id"),
    ("run-id-alert-state", ["run", "--scenario", "rest", "--run-id", "../alerts/state"], "is not a run id"),
    ("run-id-absolute", ["run", "--scenario", "rest", "--run-id", "/tmp/x"], "is not a run id"),
    ("run-id-empty", ["run", "--scenario", "rest", "--run-id", ""], "non-empty"),
    ("run-id-slash", ["run", "--scenario", "rest", "--run-id", "a/b"], "is not a run id"),
    ("run-id-hidden", ["run", "--scenario", "rest", "--run-id", ".hidden"], "is not a run id"),
    ("run-id-partition", ["run", "--scenario", "rest", "--run-id", "run_id=x"], "is not a run id"),
    ("run-id-too-long", ["run", "--scenario", "rest", "--run-id", "r" * 200], "at most 128"),
    ("run-id-dotdot-inside", ["run", "--scenario", "rest", "--run-id", "a..b"], "is not a run id"),
    ("load-run-id-escape", ["load", "--run-id", "../x"], "is not a run id"),
    ("faults-run-id-escape", ["faults", "run", "--run-id", "../x"], "is not a run id"),
    ("maxrate-run-id-escape", ["maxrate", "--run-id", "../x"], "is not a run id"),
    ("report-run-id-escape", ["report", "--data-dir", "{data}", "--run-id", "../x"], "is not a run id"),
    ("aggregate-run-id-escape", ["aggregate", "--data-dir", "{data}", "--run-id", ".."], "is not a run id"),
    ("drift-run-id-escape", ["drift", "--data-dir", "{data}", "--run-id", "../../etc"], "is not a run id"),
    ("compare-run-escape", ["compare", "../a", RUN, "--data-dir", "{data}"], "is not a run id"),
    # ---- data directories: a file, missing, runs that do not exist, corrupt ones
    ("runs-data-dir-file", ["runs", "--data-dir", "{afile}"], "is not a directory"),
    ("runs-data-dir-missing", ["runs", "--data-dir", "{dir}/nowhere"], "no such directory"),
    ("report-data-dir-file", ["report", "--data-dir", "{afile}"], "is not a directory"),
    ("export-data-dir-file", ["export", "prometheus", "--data-dir", "{afile}"], "is not a directory"),
    ("compare-data-dir-missing", ["compare", RUN, RUN, "--data-dir", "{dir}/nowhere"], "no such directory"),
    ("drift-data-dir-file", ["drift", "--data-dir", "{afile}"], "is not a directory"),
    ("run-data-dir-file", ["run", "--scenario", "rest", "--data-dir", "{afile}"], "is not a directory"),
    ("report-run-unknown", ["report", "--data-dir", "{data}", "--run-id", "nosuch"], "no run nosuch"),
    ("compare-runs-unknown", ["compare", "nosuch1", "nosuch2", "--data-dir", "{data}"], "nosuch1"),
    ("aggregate-run-unknown", ["aggregate", "--data-dir", "{data}", "--run-id", "nosuch"], "nosuch"),
    ("drift-run-unknown", ["drift", "--data-dir", "{data}", "--run-id", "nosuch"], "nosuch"),
    # ---- secrets typed inline (never echoed)
    ("inline-password", ["run", "--cluster", "{inline-password.yaml}"], "sasl.password"),
    ("inline-jaas", ["run", "--cluster", "{inline-jaas.yaml}"], "sasl.jaas.config"),
    ("secret-env-holds-a-password", ["run", "--cluster", "{secret-env-value.yaml}"], "not an environment variable name"),
    ("load-inline-password", ["load", "--cluster", "{inline-password.yaml}"], "sasl.password"),
    ("topics-inline-jaas", ["topics", "provision", "--cluster", "{inline-jaas.yaml}"], "sasl.jaas.config"),
]


def _argv(argv: list[str], files: dict[str, str], data: Path) -> list[str]:
    out = []
    for a in argv:
        for key, value in {**files, "data": str(data)}.items():
            a = a.replace("{" + key + "}", value)
        out.append(a)
    return out


@pytest.mark.parametrize(("argv", "fragment"), [pytest.param(a, f, id=i) for i, a, f in BAD_INPUTS])
def test_a_bad_input_is_one_line_exit_2_and_loses_nothing(
        argv: list[str], fragment: str, files: dict[str, str], measured: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(measured))
    monkeypatch.setenv("KAFKALAB_HOME", str(tmp_path / "lab"))  # no cluster up: nothing to reach
    monkeypatch.setenv("KAFKALAB_TEST_SECRET", SECRET)
    before = _snapshot(measured)
    code, text = _cli(_argv(argv, files, measured), capsys)
    lines = [line for line in text.splitlines() if line.strip()]
    assert code == 2, text
    assert len(lines) == 1 and "error" in lines[0], text
    assert fragment in lines[0], text
    assert "Traceback" not in text and SECRET not in text
    assert _snapshot(measured) == before


@pytest.fixture
def corrupt(tmp_path: Path) -> Path:
    """A data directory whose manifests, alert state and acceptances are damaged."""
    data = tmp_path / "corrupt"
    for sub in ("runs", "alerts", "drift"):
        (data / sub).mkdir(parents=True)
    (data / "runs" / "r1.json").write_text("{not json")
    (data / "runs" / "r2.json").write_text("[1, 2]")
    (data / "alerts" / "state.json").write_text("garbage")
    (data / "drift" / "acceptances.json").write_text("{bad")
    return data


@pytest.mark.parametrize("argv", [
    ["compare", "r1", "r2"], ["aggregate", "--run-id", "r1"], ["drift"],
    ["drift", "--run-id", "r1"], ["report", "--run-id", "r1"], ["report", "--run-id", "r2"],
], ids=lambda a: "-".join(a))
def test_a_corrupt_data_directory_is_one_error_and_stays_as_it_was(
        argv: list[str], corrupt: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _snapshot(corrupt)
    code, text = _cli([*argv, "--data-dir", str(corrupt)], capsys)
    errors = [line for line in text.splitlines() if line.startswith("kafkalab: error:")]
    assert code == 2 and len(errors) == 1, text
    assert "Traceback" not in text
    assert _snapshot(corrupt) == before


@pytest.mark.parametrize(("args", "fragment"), [
    (["run", "--cluster", "{inline-jaas.yaml}"], "sasl.jaas.config"),
    (["load", "--duration", "inf"], "--duration: Input should be a finite number"),
    (["run", "--scenario", "rest", "--run-id", "../escaped"], "is not a run id"),
], ids=["jaas", "inf", "escape"])
def test_the_console_script_shows_a_terminal_one_line(
        args: list[str], fragment: str, files: dict[str, str], measured: Path) -> None:
    """The real ``kafkalab`` entry point, as a user's shell runs it."""
    before = _snapshot(measured)
    env = {**os.environ, "KAFKALAB_DATA_DIR": str(measured), "KAFKALAB_TEST_SECRET": SECRET}
    out = subprocess.run([str(Path(sys.executable).with_name("kafkalab")),
                          *_argv(args, files, measured)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2
    assert out.stdout == "" and out.stderr.count("\n") == 1 and fragment in out.stderr
    assert SECRET not in out.stderr and "Traceback" not in out.stderr
    assert _snapshot(measured) == before
