"""End to end through Airflow's real scheduler: the stack ``make airflow`` starts
(PostgreSQL, api-server, scheduler with LocalExecutor, triggerer, dag-processor), then the
one ``make airflow EXECUTOR=celery`` starts (the same plus Redis and a Celery worker), runs
triggered through the REST API (``/auth/token``, ``/api/v2``), as on-call or a CI job would.

1. a one-node KRaft cluster (broker 31592, controller 31581), a webhook receiver, and the
   LocalExecutor stack on its own ports (API 31080, PostgreSQL 31432) in a temporary home
   under /tmp (as root, PostgreSQL runs as the ``postgres`` user, who cannot enter pytest's
   0700 tmp dirs);
2. run 1 (confluent-kafka, 1kb, 5 messages) must succeed through the scheduler, its mapped
   cells included, and leave samples, aggregates, validation and the report;
3. the stack is restarted with the Celery executor (Redis 31479) on the same database; run 2
   names a cluster whose broker is down: the Celery worker runs its tasks, it must fail at
   ``check_cluster`` with the clear message (read from the task's log through the API) and
   send the ``run_failed`` alert (the DAG's failure callback, run by the dag-processor);
4. on the Celery stack, a ``load_experiment`` run with shard placement ``tasks``: each
   consumer shard of its two cells is a ``consume_load_shard`` task of its own. It is
   triggered together with run 2 (another DAG, so neither waits for the other) and awaited
   by its own test;
5. ``down`` stops exactly what ``up`` started: every pid gone, every port free.

Run 1 also checks the report plugin on the real api-server (``/kafkalab/reports/…`` behind
Airflow's login: 401 without a token, the page with the REST API's Bearer JWT; the DAG
run page's ``/kafkalab/runs/<dag>/<run>`` redirect, the external views in
``/api/v2/plugins``) and that lab run ids and manifests carry the runs' logical dates.

The stack's tasks are retried after :data:`RETRY_DELAY_S` instead of their DAG's delay (a
cluster policy, :data:`LOCAL_SETTINGS`): run 2's two retried tasks waited a minute for
nothing. Runtime ~5-6 min (two start-ups, three Spark jobs, run 2 beside the shard run).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import requests
import yaml

from kafkalab import procs
from kafkalab.airflow import launcher
from kafkalab.airflow.run_ids import dag_lab_run_id
from kafkalab.cluster.flavors.kafka09.distribution import NPM_TARBALL
from kafkalab.paths import lab_dir
from kafkalab.store import LabData
from tests.labs import prepare_lab

TARBALL = lab_dir() / "downloads" / NPM_TARBALL
ZK_PORT, BROKER_PORT, DEAD_BROKER_PORT = 31581, 31592, 31599
API_PORT, PG_PORT, REDIS_PORT = 31080, 31432, 31479
API = f"http://127.0.0.1:{API_PORT}"
DAG = "latency_experiment"
SHARD_DAG = "load_experiment"
RUN_TIMEOUT_S = 600.0
POLL_S = 1.0
"""How often a run's state (and the alert receiver) is polled: each poll is one cheap API
call (or a list read), so a short interval costs nothing and ends each wait sooner."""
HTTP_TIMEOUT_S = 120.0
"""One API request's bound (a hang, not a speed check): the api-server is one worker, and on a
starved machine (twice slower, under the whole suite) a status request took over 30 s."""
RETRY_DELAY_S = 2
LOCAL_SETTINGS = f'''"""The test stack's cluster policy (Airflow's task_policy): each task's retry delay
is {RETRY_DELAY_S} s instead of its DAG's 30 s. Run 2 still fails, is retried and fails again
(its broker stays down); only the wait between its tries is shorter."""

from datetime import timedelta


def task_policy(task):
    task.retry_delay = timedelta(seconds={RETRY_DELAY_S})
'''
"""``airflow_local_settings.py`` on the stack's ``PYTHONPATH``: run 2 spent about a minute
waiting out the 30 s retry delays of ``check_cluster`` and ``close_run``."""


class _Receiver(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).received.append(json.loads(body or b"null"))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def stack() -> Iterator[dict[str, Any]]:
    """The cluster, the receiver and the scheduler stack; everything stopped afterwards."""
    from kafkalab.cluster.embedded import cluster_down, cluster_up

    if not TARBALL.is_file():
        pytest.fail(f"{TARBALL} missing: `make setup` downloads it")
    root = Path(tempfile.mkdtemp(prefix="kafkalab-scheduler-", dir="/tmp"))
    root.chmod(0o755)
    lab, home, data = root / "lab", root / "airflow", root / "data"
    (lab / "downloads").mkdir(parents=True)
    shutil.copy2(TARBALL, lab / "downloads" / TARBALL.name)
    policy = root / "policy"
    policy.mkdir()
    (policy / "airflow_local_settings.py").write_text(LOCAL_SETTINGS)
    _Receiver.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = {
        **os.environ,
        "KAFKALAB_AIRFLOW_PORT": str(API_PORT),
        "KAFKALAB_POSTGRES_PORT": str(PG_PORT),
        "KAFKALAB_REDIS_PORT": str(REDIS_PORT),
        "KAFKALAB_DATA_DIR": str(data),
        "AIRFLOW_CONN_KAFKALAB_ALERT_WEBHOOK": json.dumps({
            "conn_type": "http", "host": "127.0.0.1", "port": server.server_address[1],
            "schema": "http", "extra": {"endpoint": "/hooks/kafkalab", "format": "generic"}}),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "PYTHONPATH": os.pathsep.join(filter(None, (str(policy),
                                                    os.environ.get("PYTHONPATH")))),
    }
    stopped: list[dict[str, Any]] = []
    try:
        # a new group's first assignment without the 3 s wait: nothing here measures it
        cluster_up("kraft", 1, lab_dir=prepare_lab(lab), base_port=BROKER_PORT,
                   control_port=ZK_PORT,
                   broker_settings={"group.initial.rebalance.delay.ms": "0"})
        # the same cluster with its broker down: a descriptor whose broker does not answer
        dead = yaml.safe_load((lab / "cluster.yaml").read_text())
        dead["bootstrap_servers"] = f"127.0.0.1:{DEAD_BROKER_PORT}"
        (root / "down.yaml").write_text(yaml.safe_dump(dead))
        t0 = time.monotonic()
        status = launcher.airflow_up(home, base_env=base, executor="local")
        print(f"scheduler stack up in {time.monotonic() - t0:.1f} s")
        yield {"root": root, "lab": lab, "home": home, "data": data, "status": status,
               "received": _Receiver.received, "stopped": stopped, "base": base}
    finally:
        stopped.extend(launcher.airflow_down(home))
        cluster_down(lab)
        server.shutdown()
        server.server_close()
        shutil.rmtree(root, ignore_errors=True)


def _session(home: Path) -> requests.Session:
    """An API session with a JWT from ``/auth/token`` (the simple auth manager's admin)."""
    password = launcher.admin_password(home)
    resp = requests.post(f"{API}/auth/token",
                         json={"username": launcher.ADMIN_USER, "password": password}, timeout=HTTP_TIMEOUT_S)
    assert resp.status_code in (200, 201), resp.text
    s = requests.Session()
    s.headers["Authorization"] = f"Bearer {resp.json()['access_token']}"
    return s


def _trigger(s: requests.Session, logical_date: str, conf: dict[str, Any], dag: str = DAG) -> str:
    resp = s.post(f"{API}/api/v2/dags/{dag}/dagRuns",
                  json={"logical_date": logical_date, "conf": conf}, timeout=HTTP_TIMEOUT_S)
    assert resp.status_code == 200, resp.text
    return str(resp.json()["dag_run_id"])


def _wait(s: requests.Session, run_id: str, dag: str = DAG) -> dict[str, Any]:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        try:
            run = s.get(f"{API}/api/v2/dags/{dag}/dagRuns/{run_id}", timeout=HTTP_TIMEOUT_S).json()
        except requests.Timeout:  # a slow answer to one poll; the run's deadline still holds
            run = {"state": "unknown: the status request timed out"}
        if run["state"] in ("success", "failed"):
            return dict(run)
        assert time.monotonic() < deadline, f"run {run_id} still {run['state']}"
        time.sleep(POLL_S)


def _task_instances(s: requests.Session, run_id: str, dag: str = DAG) -> dict[tuple[str, int], str]:
    tis = s.get(f"{API}/api/v2/dags/{dag}/dagRuns/{run_id}/taskInstances", timeout=HTTP_TIMEOUT_S).json()
    return {(t["task_id"], t["map_index"]): t["state"] for t in tis["task_instances"]}


def _unpause(s: requests.Session, dag: str) -> None:
    """Wait until the dag-processor has parsed ``dag`` (paused at creation), unpause it."""
    deadline = time.monotonic() + 120
    while (resp := s.get(f"{API}/api/v2/dags/{dag}", timeout=HTTP_TIMEOUT_S)).status_code != 200:
        assert time.monotonic() < deadline, resp.text
        time.sleep(POLL_S)
    assert s.patch(f"{API}/api/v2/dags/{dag}", json={"is_paused": False},
                   timeout=HTTP_TIMEOUT_S).status_code == 200


def _conf(cluster: Path) -> dict[str, Any]:
    """Run 1's and run 2's conf: one tiny cell; aggregated and validated in one Spark job
    (``one_spark_session``, as ``make demo`` runs it: one spark-submit fewer; the two-job
    default is run by ``test_airflow_dags_test.py`` and ``validate_metrics``'s spark-submit
    by ``tests/spark/test_validate_metrics.py``)."""
    return {"workload": "seed000", "scenarios": ["confluent-kafka"], "payloads": ["1kb"],
            "profiles": ["latency"], "messages": 5, "cluster_descriptor": str(cluster),
            "one_spark_session": True}


def _shard_run(stack: dict[str, Any], s: requests.Session) -> str:
    """The Airflow run id of the ``load_experiment`` run with shard placement ``tasks`` (two
    cells of 2 consumers, one per shard), triggered on the first call."""
    if "shard_run" not in stack:
        _unpause(s, SHARD_DAG)
        conf = {"consumers": [2], "rates": [40, 60], "acks": ["1"], "duration_s": 4,
                "warmup_s": 1, "consumers_per_shard": 1, "shard_placement": "tasks",
                "cluster_descriptor": str(stack["lab"] / "cluster.yaml")}
        stack["shard_run"] = _trigger(s, "2026-11-22T00:00:00Z", conf, dag=SHARD_DAG)
    return str(stack["shard_run"])


def test_runs_through_the_scheduler_on_postgresql(stack: dict[str, Any]) -> None:
    status = stack["status"]
    assert status["status"] == "up", status
    assert status["postgres"]["answers"] and status["postgres"]["port"] == PG_PORT
    assert all((status["health"][k] or {}).get("status") == "healthy"
               for k in ("metadatabase", "scheduler", "triggerer", "dag_processor"))
    env = launcher.airflow_env(stack["home"], base={**os.environ,
                                                    "KAFKALAB_POSTGRES_PORT": str(PG_PORT)})
    assert "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN" not in env  # dags test keeps SQLite

    s = _session(stack["home"])
    _unpause(s, DAG)

    good = _trigger(s, "2026-11-20T00:00:00Z", _conf(stack["lab"] / "cluster.yaml"))
    assert not good.startswith("manual__2026-11-20")  # Airflow 3 names it by trigger time

    # ---- run 1 succeeds through the scheduler, mapped cells included
    run = _wait(s, good)
    states = _task_instances(s, good)
    assert run["state"] == "success", states
    assert states[("measure_cell", 0)] == "success"
    assert all(v in ("success", "skipped") for v in states.values()), states
    lab = LabData(stack["data"])
    (lab_run,) = lab.manifests()
    assert lab_run == dag_lab_run_id(DAG, good, "2026-11-20T00:00:00Z")  # the logical date
    assert lab_run.startswith("experiment-20261120T000000Z-")
    manifest = lab.manifest(lab_run)
    assert manifest is not None and manifest["status"] == "complete"
    assert manifest["logical_date"] == "2026-11-20T00:00:00+00:00"
    assert [c["scenario"] for c in manifest["cells"]] == ["confluent-kafka"]
    assert manifest.get("stale_outputs") == []
    assert list((lab.aggregates_dir / f"run_id={lab_run}").glob("*.parquet"))
    validation = lab.validation(lab_run)
    assert validation is not None and validation["success"] is True
    assert states[("validate_metrics", -1)] == "success"  # judged the in-session result
    assert (lab.report_page_dir(lab_run) / "index.html").is_file()

    # ---- the report inside Airflow: the plugin's app on the api-server, behind its login
    anonymous = requests.get(f"{API}/kafkalab/reports/{lab_run}/index.html", timeout=HTTP_TIMEOUT_S)
    assert anonymous.status_code == 401 and lab_run not in anonymous.text
    page = s.get(f"{API}/kafkalab/reports/{lab_run}/index.html", timeout=HTTP_TIMEOUT_S)  # Bearer JWT
    assert page.status_code == 200, page.text[:500]
    assert page.text == (lab.report_page_dir(lab_run) / "index.html").read_text()
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'self'" in page.headers["content-security-policy"]
    assert s.get(f"{API}/kafkalab/reports/index.html", timeout=HTTP_TIMEOUT_S).status_code == 200
    assert s.get(f"{API}/kafkalab/reports/no-such-run/index.html", timeout=HTTP_TIMEOUT_S).status_code == 404
    moved = s.get(f"{API}/kafkalab/runs/{DAG}/{good}", timeout=HTTP_TIMEOUT_S, allow_redirects=False)
    assert moved.status_code == 307, moved.text[:500]
    assert moved.headers["location"] == f"../../reports/{lab_run}/index.html"
    plugins = s.get(f"{API}/api/v2/plugins", timeout=HTTP_TIMEOUT_S).json()["plugins"]
    (plugin,) = [p for p in plugins if p["name"] == "kafkalab_report"]
    views = {v["destination"]: v for v in plugin["external_views"]}
    assert views["dag_run"]["href"] == "kafkalab/runs/{DAG_ID}/{RUN_ID}", views


def test_celery_runs_the_tasks_and_a_failing_run_alerts(stack: dict[str, Any]) -> None:
    """The same home restarted with ``--executor celery``: Redis and a Celery worker join;
    run 2 (broker down) is executed by the worker and fails at check_cluster, with the clear
    message and the alert. The next test's shard run is triggered beside it."""
    launcher.airflow_down(stack["home"], progress=lambda _: None)
    t0 = time.monotonic()
    launcher.airflow_up(stack["home"], base_env=stack["base"], executor="celery")
    print(f"celery stack up in {time.monotonic() - t0:.1f} s")
    with pytest.raises(RuntimeError, match="already runs with the celery executor"):
        launcher.airflow_up(stack["home"], base_env=stack["base"], executor="local")
    status = stack["status"] = launcher.airflow_status(stack["home"], stack["base"])
    assert status["status"] == "up" and status["executor"] == "celery", status
    assert status["redis"]["answers"] and status["redis"]["port"] == REDIS_PORT
    assert status["components"]["celery-worker"]["alive"]

    s = _session(stack["home"])
    bad = _trigger(s, "2026-11-21T00:00:00Z", _conf(stack["root"] / "down.yaml"))
    _shard_run(stack, s)  # beside run 2, on the same worker; awaited by the next test
    run = _wait(s, bad)
    states = _task_instances(s, bad)
    assert run["state"] == "failed", states
    assert states[("check_cluster", -1)] == "failed", states
    ti = s.get(f"{API}/api/v2/dags/{DAG}/dagRuns/{bad}/taskInstances/check_cluster",
               timeout=HTTP_TIMEOUT_S).json()
    assert ti["try_number"] == 2, ti  # retried once (the policy shortens only the delay)
    log = s.get(f"{API}/api/v2/dags/{DAG}/dagRuns/{bad}/taskInstances/check_cluster/logs/"
                f"{ti['try_number']}", params={"full_content": "true"}, timeout=HTTP_TIMEOUT_S)
    assert log.status_code == 200, log.text
    events = json.dumps(log.json()["content"])  # the exception is a structured field
    assert "ClusterError" in events and f"127.0.0.1:{DEAD_BROKER_PORT}" in events, events[-3000:]
    deadline = time.monotonic() + 120  # the dag-processor runs the failure callback
    lab_run = dag_lab_run_id(DAG, bad, "2026-11-21T00:00:00Z")
    while not (alerts := [b for b in stack["received"]
                          if b.get("kind") == "run_failed" and b.get("run_id") == lab_run]):
        assert time.monotonic() < deadline, stack["received"]
        time.sleep(POLL_S)
    alert = alerts[0]
    assert alert["dag_id"] == DAG and alert["severity"] == "error"
    # the first failure (the cause), not the last task Airflow hands the DAG callback
    assert alert["error"].startswith("task check_cluster failed first: ClusterError"), alert
    assert f"127.0.0.1:{DEAD_BROKER_PORT}" in alert["error"], alert
    # the worker, not the scheduler, ran the tasks: its log has received check_cluster
    worker_log = (stack["home"] / "celery-worker.log").read_text(errors="replace")
    assert "check_cluster" in worker_log, worker_log[-3000:]


def test_celery_runs_a_cells_consumer_shards_as_tasks_of_their_own(stack: dict[str, Any]) -> None:
    """load_experiment with shard placement "tasks" on the Celery stack: two cells (2
    consumers, one per shard) one at a time; each shard is a consume_load_shard task that
    waits (rescheduled) for its cell's plan, joins the start barrier and consumes, in a task
    process of its own; every consumer holds every acked message; Spark and GX pass.
    Triggered beside run 2 by the test before (or here, if that test did not get to it)."""
    s = _session(stack["home"])
    run_id = _shard_run(stack, s)  # triggered with run 2 by the test before
    run = _wait(s, run_id, dag=SHARD_DAG)
    states = _task_instances(s, run_id, dag=SHARD_DAG)
    assert run["state"] == "success", states
    assert {k: v for k, v in states.items() if k[0] == "consume_load_shard"} == {
        ("consume_load_shard", i): "success" for i in range(4)}, states
    assert states[("run_load_cell", 0)] == states[("run_load_cell", 1)] == "success"
    lab = LabData(stack["data"])
    lab_run = dag_lab_run_id(SHARD_DAG, run_id, "2026-11-22T00:00:00Z")
    manifest = lab.manifest(lab_run)
    assert manifest is not None and manifest["status"] == "complete", manifest
    cells = sorted(lab.root.glob(f"load/run_date=*/run_id={lab_run}/cell=*/cell.json"))
    assert len(cells) == 2
    for path in cells:
        meta = json.loads(path.read_text())
        assert meta["status"] == "complete" and meta["shard_placement"] == "tasks", meta
        assert meta["placement_token"] == run_id
        pids = {p["role"] + str(p["shard"]): p["pid"] for p in meta["processes"]}
        assert set(pids) == {"producerNone", "consumer-shard0", "consumer-shard1"}
        assert len(set(pids.values())) == 3  # three processes of three tasks
        assert not meta["cross_host_clock"]  # one host: the same monotonic clock
        assert all(r["clock"]["basis"] == "same_host" for r in meta["shards"])
        summary = meta["summary"]
        print(f"{meta['cell_id']}: shard tasks joined the barrier in {meta['barrier_wait_s']} s")
        assert meta["barrier_wait_s"] is not None
        assert summary["failing_clients"] == 0 and summary["loss_pct"] == 0, summary
        assert summary["expected_msgs"] > 0 and summary["consumers"] == 2
        assert [c["missing_msgs"] for c in summary["consumers_detail"]] == [0, 0], summary
    validation = lab.validation(lab_run, "load")
    assert validation is not None and validation["success"] is True
    worker_log = (stack["home"] / "celery-worker.log").read_text(errors="replace")
    assert "consume_load_shard" in worker_log, worker_log[-3000:]


def test_down_stops_exactly_what_up_started(stack: dict[str, Any]) -> None:
    """Runs last in the module: stops the stack itself and checks nothing is left."""
    status = stack["status"]
    pids = [c["pid"] for c in status["components"].values()]
    pids += [status["postgres"]["pid"], status["redis"]["pid"]]
    stopped = launcher.airflow_down(stack["home"])
    assert {r["component"] for r in stopped} == {*launcher.ALL_COMPONENTS, "redis", "postgres"}
    assert all(r["result"] in ("stopped", "killed (no exit after SIGTERM)") for r in stopped), stopped
    assert not any(procs.pid_alive(p) for p in pids)
    assert all(procs.wait_port_released(p, 10) for p in (API_PORT, PG_PORT, REDIS_PORT))
    assert launcher.airflow_down(stack["home"]) == []  # a second down finds nothing
