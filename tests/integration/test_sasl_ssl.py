"""The path a user takes to a secured cluster of their own, on a real broker: one KRaft node
started with a SASL_SSL listener (SCRAM-SHA-512 over TLS, the lab's own CA; broker 26692,
controller 26792, SASL_SSL 26892), reached only through the ``external`` descriptor
``cluster up --sasl-ssl`` wrote, whose ``secret_env`` names the password's variable.

``kafkalab run`` and ``kafkalab load`` measure through it with both clients; the password is
then looked for in every file of the lab and data dirs (Parquet decoded), the report's
pages, and the command line of every process seen while they ran. A wrong password and an
untrusted CA each fail in one line.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.cluster import cluster_down, cluster_up
from kafkalab.cluster.flavors.kraft.security import PASSWORD_ENV, SASL_USER
from kafkalab.cluster.state import secure_descriptor_path
from kafkalab.cluster.tls import _generate
from kafkalab.store import LabData
from tests.labs import prepare_lab

pytestmark = pytest.mark.integration

BASE_PORT = 26692
CONTROLLER_PORT = 26792
SASL_SSL_PORT = 26892
KAFKALAB = str(Path(sys.executable).parent / "kafkalab")


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path | str]]:
    """A running 1-node KRaft cluster with a SASL_SSL listener; its lab, descriptor and the
    password (never a literal the code could contain)."""
    lab = prepare_lab(tmp_path_factory.mktemp("sasl-lab"))
    password = "pw-" + secrets.token_urlsafe(18)
    before = os.environ.get(PASSWORD_ENV)
    os.environ[PASSWORD_ENV] = password
    try:
        cluster_up("kraft", 1, lab_dir=lab, base_port=BASE_PORT, control_port=CONTROLLER_PORT,
                   sasl_ssl_port=SASL_SSL_PORT)
        yield {"lab": lab, "descriptor": secure_descriptor_path(lab), "password": password}
    finally:
        cluster_down(lab)
        if before is None:
            os.environ.pop(PASSWORD_ENV, None)
        else:
            os.environ[PASSWORD_ENV] = before


def _env(lab: Path, data: Path, password: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALAB_")}
    env.update(KAFKALAB_HOME=str(lab), KAFKALAB_DATA_DIR=str(data), **{PASSWORD_ENV: password})
    return env


class CmdlineWatch:
    """Reads every process's command line every 20 ms while it runs; remembers those that
    hold ``needle``."""

    def __init__(self, needle: str) -> None:
        self.needle = needle.encode()
        self.hits: list[str] = []
        self.seen = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            for d in Path("/proc").iterdir():
                if not d.name.isdigit():
                    continue
                try:
                    raw = (d / "cmdline").read_bytes()
                except OSError:
                    continue
                self.seen += 1
                if self.needle in raw:
                    self.hits.append(raw.replace(b"\0", b" ").decode(errors="replace")[:200])

    def __enter__(self) -> CmdlineWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _files_holding(root: Path, password: str) -> list[str]:
    """Files under ``root`` whose bytes, or whose decoded Parquet rows, hold ``password``."""
    import pyarrow.parquet as pq

    found = []
    for p in root.rglob("*"):
        if not p.is_file() or p.is_symlink() or "kafka4" in p.parts:
            continue
        if password.encode() in p.read_bytes():
            found.append(str(p))
        elif p.suffix == ".parquet":
            table = pq.read_table(p)
            if password in table.to_pandas().astype(str).to_csv():
                found.append(f"{p} (decoded)")
    return found


def test_run_and_load_measure_through_sasl_ssl_with_both_clients_and_the_password_stays_secret(
        secured: dict[str, Path | str], tmp_path: Path) -> None:
    lab, descriptor, password = Path(secured["lab"]), str(secured["descriptor"]), str(secured["password"])
    text = Path(descriptor).read_text()
    assert "SASL_SSL" in text and PASSWORD_ENV in text and password not in text
    data = tmp_path / "data"
    env = _env(lab, data, password)
    with CmdlineWatch(password) as watch:
        run = subprocess.run(
            [KAFKALAB, "run", "--cluster", descriptor, "--workload", "images-quick",
             "--scenario", "confluent-kafka,kafka-python,jvm-e2e", "--payload", "1kb",
             "--profile", "latency", "--messages", "10", "--warmup", "1", "--json"],
            env=env, capture_output=True, text=True, timeout=600)
        loads = [subprocess.run(
            [KAFKALAB, "load", "--cluster", descriptor, "--client", client, "--consumers", "1",
             "--rate", "20", "--duration", "3", "--warmup", "1", "--drain", "10", "--json"],
            env=env, capture_output=True, text=True, timeout=600)
            for client in ("confluent-kafka", "kafka-python")]
        report = subprocess.run([KAFKALAB, "report"], env=env, capture_output=True, text=True,
                                timeout=300)
    for proc in (run, *loads, report):
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert password not in proc.stdout + proc.stderr
    assert watch.seen > 0 and watch.hits == []

    manifests = LabData(data).manifests()
    assert len(manifests) == 3
    for run_id, manifest in manifests.items():
        assert manifest["status"] == "complete", run_id
        assert manifest["broker_settings"], run_id  # read through the SASL_SSL listener
        cluster = manifest["cluster"]
        assert cluster["client_properties"]["security.protocol"] == "SASL_SSL"
        assert cluster["client_properties"]["sasl.username"] == SASL_USER
        assert cluster["secret_env"] == {"sasl.password": PASSWORD_ENV}
    closed = [m for m in manifests.values() if m.get("kind") != "load"]
    statuses = {c["scenario"]: c["status"] for c in closed[0]["cells"]}
    # Kafka's own tool would need the password in its properties file: it says so and skips
    assert statuses == {"confluent-kafka": "complete", "kafka-python": "complete",
                        "jvm-e2e": "skipped"}
    assert list((data / "reports").rglob("*.html"))
    assert _files_holding(data, password) == []
    assert _files_holding(lab, password) == []


def _one_line_failure(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("kafkalab: error:")]
    assert len(errors) == 1, proc.stderr[-2000:]
    return errors[0]


def test_a_wrong_password_and_an_untrusted_ca_each_fail_in_one_line(
        secured: dict[str, Path | str], tmp_path: Path) -> None:
    lab, descriptor, password = Path(secured["lab"]), Path(secured["descriptor"]), str(secured["password"])
    data = tmp_path / "data"
    cmd = [KAFKALAB, "run", "--workload", "images-quick", "--scenario", "confluent-kafka",
           "--payload", "1kb", "--messages", "5"]
    wrong = "not-" + password
    proc = subprocess.run([*cmd, "--cluster", str(descriptor)], env=_env(lab, data, wrong),
                          capture_output=True, text=True, timeout=120)
    line = _one_line_failure(proc)
    assert f"refused user {SASL_USER!r}" in line and PASSWORD_ENV in line
    assert wrong not in proc.stdout + proc.stderr

    other_ca = tmp_path / "other-ca.pem"
    other_ca.write_bytes(_generate("127.0.0.1", "unused")[0])
    untrusted = tmp_path / "untrusted.yaml"
    untrusted.write_text(descriptor.read_text().replace(
        str(lab / "cluster" / "tls" / "ca.pem"), str(other_ca)))
    proc = subprocess.run([*cmd, "--cluster", str(untrusted)], env=_env(lab, data, password),
                          capture_output=True, text=True, timeout=120)
    line = _one_line_failure(proc)
    assert "TLS handshake" in line and "certificate verify failed" in line and str(other_ca) in line
    assert not (data / "runs").exists() or not any((data / "runs").glob("*.json"))
