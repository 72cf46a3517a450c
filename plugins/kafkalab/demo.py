"""``make demo`` (``kafkalab demo``): the first ten minutes of a newcomer, in one command.

What it prints, and nothing else (Airflow's own logs go to a file):

1. the embedded cluster, one line;
2. seed 000's comparison (``include/workloads/images-quick.yaml``): one line per cell, then
   the table and its two-line reading exactly as ``kafkalab run`` prints them
   (:func:`kafkalab.summary.format_run_summary`);
3. seed 000's question answered on Kafka 4.x: a small start-up run (:data:`DEMO_STARTUP`,
   ``kafkalab startup run`` on its own one-node cluster, started fresh and wiped): its cases'
   table and the answer line (:func:`kafkalab.startup_figures.answer_lines`);
4. the nightly DAG (``nightly_latency_regression``) through ``airflow dags test`` once per
   logical date (the dates one after the other, in one process), one line per date: date,
   lab run id, cells, status, wall time, drift verdicts. A date whose DAG run fails prints the failing task's log (its traceback) from
   the log file and the demo goes on with the next date;
5. a closing summary: where the samples, aggregates, validation results and report are, and
   the next commands to try.

Every Spark job of the demo (seed 000's aggregation, each night's) runs against one Spark
Connect server the demo starts (:class:`DemoSpark`, :mod:`kafkalab.spark.connect`): one
driver JVM, warm after the first job, instead of a spark-submit per job (~22 s a night ->
~7 s). ``--spark-submit`` turns it off.

The demo's nightly matrix (:data:`DEMO_NIGHTLY_CONF`) is smaller than the scheduled
nightly's (``include/workloads/nightly.yaml``) so that the demo stays short; it still runs
the real DAG through Spark and Great Expectations for every date. Drift verdicts need
``min_baseline_runs`` (3) earlier runs: the fourth date is the first one judged.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from kafkalab.airflow.run_ids import NIGHTLY_FANOUT_PREFIX, NIGHTLY_FAULTS_PREFIX, RUN_PREFIXES
from kafkalab.paths import airflow_home, default_data_dir, lab_dir
from kafkalab.startup.spec import DEFAULT_BASE_PORT, DEFAULT_CONTROL_PORT, StartupSpec
from kafkalab.store import LabData

if TYPE_CHECKING:
    from kafkalab.aggregate import AggregateOutcome
    from kafkalab.spark.connect import ConnectServer

Say = Callable[[str], None]

DEMO_DAG = "nightly_latency_regression"
DEMO_WORKLOAD = "images-quick"
DEMO_DATES: tuple[str, ...] = ("2026-11-18", "2026-11-19", "2026-11-20", "2026-11-21")
"""Four nights: the fourth has the three earlier runs a drift verdict needs."""

DEMO_NIGHTLY_CONF: dict[str, Any] = {
    "scenarios": ["rest", "confluent-kafka"],
    "payloads": ["1kb"],
    "profiles": ["latency"],
    "messages": 200,
    "first_message_probes": 0,
    "consumer_mode": "assign",
    "fanout_cell": False,
    "fault_trial": False,
    "one_spark_session": True,
}
"""The demo's nightly matrix: HTTP and a Kafka client at 1 KB (Kafka's own tool is in seed
000's part), 200 measured messages a cell (p50 and p99 defined), no first-message probe
(seed 000's part probes both modes; each subscribe probe waits the broker's 3 s initial
rebalance delay, ~3 s a night; the scheduled nightly takes three), a measuring consumer that
is assigned its partition (``consumer_mode``: no group to join, so the cell does not wait
that delay either), no fan-out cell (its load run and two Spark jobs add ~60 s a night: see
``kafkalab load``) and no fault trial (~100 s a night: see ``kafkalab faults run``);
``aggregate_metrics`` validates in its own Spark session (``one_spark_session``: one JVM
start a night instead of two), and ``validate_metrics`` judges its result."""

DEMO_STARTUP = StartupSpec(clients=("confluent-kafka",), delays_ms=(3000,),
                           protocols=("classic", "consumer"), members=(1,), trials=1)
"""The demo's start-up run: one consumer of confluent-kafka, the broker's default initial
rebalance delay (3000 ms), cold and warm, the classic and the KIP-848 protocol, and
``assign``; one probe each (2 cold, 3 warm: two fresh clusters, ~20 s). What each figure
means, and the full run: docs/first-message.md (``kafkalab startup run``)."""

LOG_DIR_NAME = "logs"
"""``<lab_dir>/logs/``: the demo's log files (``demo-<UTC time>.log``)."""

TAIL_LINES = 40
"""Lines of a failed date's log printed from its first task failure."""

_CELL_DONE = ("] done:", "] FAILED:", "] skipped:")


@dataclass(frozen=True)
class DemoPlan:
    """What one demo runs."""

    workload: str = DEMO_WORKLOAD
    dates: tuple[str, ...] = DEMO_DATES
    nightly_conf: Mapping[str, Any] = field(default_factory=lambda: dict(DEMO_NIGHTLY_CONF))
    seed000: bool = True
    startup: bool = True
    """Run :data:`DEMO_STARTUP` and print seed 000's answer (aggregated with seed 000's run)."""
    startup_ports: tuple[int, int] = (DEFAULT_BASE_PORT, DEFAULT_CONTROL_PORT)
    """The start-up cluster's broker and controller ports."""
    aggregate_seed000: bool = True
    """Aggregate, validate and judge seed 000's run with Spark (``kafkalab aggregate``), so
    its report page shows its cells; else the page says it has no aggregates."""
    nightly: bool = True
    log_path: Path | None = None
    """Default ``<lab_dir>/logs/demo-<UTC time>.log``."""
    airflow_home: Path | None = None
    """Default :func:`demo_airflow_home` of the data dir."""
    descriptor_path: Path | None = None
    """The cluster the demo measures; default the embedded one, started by the demo."""
    spark_connect: bool = True
    """Run every Spark job of the demo against one Spark Connect server the demo starts
    (:mod:`kafkalab.spark.connect`) after seed 000's measurement and stops at its end: one
    driver JVM for all of them instead of one spark-submit each. Off (``--spark-submit``),
    or when ``$KAFKALAB_SPARK_MASTER`` or ``$AIRFLOW_CONN_SPARK_DEFAULT`` names a Spark of
    the user's: each job is a spark-submit, as the scheduled nightly's are by default."""


@dataclass
class DateOutcome:
    """One nightly date of the demo."""

    date: str
    exit_code: int
    wall_s: float
    run_id: str | None
    status: str
    cells: int
    cells_ok: int
    drift: Counter[str]
    line: str


def default_log_path() -> Path:
    """``<lab_dir>/logs/demo-<UTC time>.log`` (no I/O)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return lab_dir() / LOG_DIR_NAME / f"demo-{stamp}.log"


def demo_airflow_home(data_root: Path) -> Path:
    """The ``AIRFLOW_HOME`` the demo's ``dags test`` runs use for the data dir ``data_root``
    (resolves paths, creates nothing): :func:`kafkalab.paths.airflow_home` for the lab's
    default data dir (:func:`kafkalab.paths.default_data_dir`), else one home per data dir,
    ``<lab_dir>/airflow-demo-<hash>``, a data dir named by ``$KAFKALAB_DATA_DIR`` included
    (that one once shared the default home, and a demo there after a demo in the default
    data dir failed every task that writes an asset).

    The DAGs' assets carry the data dir in their URIs, and an asset name may have only one
    active URI per Airflow database. Only the scheduler re-activates an asset whose URI
    changed, and ``dags test`` runs none: a second data dir in the same home would fail every
    task that writes an asset (``AirflowInactiveAssetInInletOrOutletException``).
    """
    root = data_root.resolve()
    if root == default_data_dir().resolve():
        return airflow_home()
    digest = hashlib.sha256(str(root).encode("utf-8")).hexdigest()[:10]
    return lab_dir() / f"airflow-demo-{digest}"


def cell_line(msg: str) -> bool:
    """Whether a runner progress line is a cell's last line (done, failed, skipped) or a
    note the user must see; the rest goes to the log only."""
    return any(m in msg for m in _CELL_DONE) or msg.startswith("NOTE")


def drift_counts(lab: LabData, run_ids: Sequence[str]) -> Counter[str]:
    """The drift verdicts of ``run_ids`` (``ok``, ``drift``, ``improved``,
    ``insufficient_history``, ``undefined``, ``busy_host``): one per judged series and metric."""
    counts: Counter[str] = Counter()
    for run_id in run_ids:
        records = lab.drift(run_id)
        if records is None or records.empty:
            continue
        counts.update(str(v) for v in records["verdict"])
    return counts


def format_drift(counts: Counter[str]) -> str:
    """``drift: 2 DRIFT, 14 ok, 1 improved`` or ``drift: not judged yet (needs 3 earlier
    runs)``; undefined and too-young series are counted apart, and so are those measured on
    a busy host (``busy_host``)."""
    judged = {k: counts[k] for k in ("drift", "improved", "ok") if counts.get(k)}
    busy = f"{counts['busy_host']} measured on a busy host, not judged" \
        if counts.get("busy_host") else ""
    if not judged:
        if busy:
            return f"drift: {busy}"
        if counts.get("insufficient_history"):
            return "drift: not judged yet (needs 3 earlier runs)"
        return "drift: no records"
    parts = [f"{n} {'DRIFT' if k == 'drift' else k}" for k, n in judged.items()]
    other = counts.get("insufficient_history", 0) + counts.get("undefined", 0)
    if other:
        parts.append(f"{other} not judged")
    if busy:
        parts.append(busy)
    return "drift: " + ", ".join(parts)


def manifest_stamps(lab: LabData) -> dict[str, int]:
    """Every run's manifest and when it was last written (ns): the runs a night wrote are
    those whose stamp changed, new ones or re-opened ones (a demo run twice re-opens each
    night's lab run: one lab run per night, :mod:`kafkalab.airflow.run_ids`)."""
    out: dict[str, int] = {}
    for run_id in lab.manifests():
        try:
            out[run_id] = lab.manifest_path(run_id).stat().st_mtime_ns
        except OSError:
            continue
    return out


def _main_run(new_runs: Sequence[str]) -> str | None:
    prefix = RUN_PREFIXES[DEMO_DAG] + "-"
    side = (NIGHTLY_FANOUT_PREFIX + "-", NIGHTLY_FAULTS_PREFIX + "-")
    main = [r for r in new_runs if r.startswith(prefix) and not r.startswith(side)]
    return sorted(main)[-1] if main else None


def summarize_date(lab: LabData, date: str, exit_code: int, wall_s: float,
                   new_runs: Sequence[str]) -> DateOutcome:
    """The one line of a nightly date, from what its DAG run wrote (manifests, validation,
    drift records); ``new_runs``: the runs it started or re-opened."""
    run_id = _main_run(new_runs)
    manifest = lab.manifest(run_id) if run_id else None
    cells = list((manifest or {}).get("cells") or [])
    ok = sum(1 for c in cells if c.get("status") == "complete")
    status = str((manifest or {}).get("status") or "not started")
    validation = lab.validation(run_id) if run_id else None
    if exit_code != 0:
        status = f"FAILED ({status})"
    elif validation is not None and not validation.get("success"):
        status = f"{status}, validation failed"
    elif validation is not None:
        status = f"{status}, validated"
    fanout = [r for r in new_runs if r.startswith(NIGHTLY_FANOUT_PREFIX + "-")]
    counts = drift_counts(lab, ([run_id] if run_id else []) + fanout)
    extra = f" + fan-out {len(fanout)}" if fanout else ""
    line = (f"{date}  {run_id or '-'}  {ok}/{len(cells)} cells{extra}  {status}  "
            f"{wall_s:.0f} s  {format_drift(counts)}")
    return DateOutcome(date=date, exit_code=exit_code, wall_s=wall_s, run_id=run_id,
                       status=status, cells=len(cells), cells_ok=ok, drift=counts, line=line)


def failure_excerpt(text: str, lines: int = TAIL_LINES) -> list[str]:
    """The part of a ``dags test`` output worth showing when it failed: ``lines`` lines from
    its first ``Task failed with exception`` (the traceback that follows it; the watcher
    task ``verify_outcome`` fails last by design), else its last lines."""
    all_lines = text.splitlines()
    marks = [i for i, line in enumerate(all_lines) if "Task failed with exception" in line]
    start = marks[0] if marks else max(0, len(all_lines) - lines)
    return all_lines[start:start + lines]


def next_steps() -> list[tuple[str, str]]:
    """The commands to try after the demo, each with why."""
    k = ".venv/bin/kafkalab"
    return [
        ("make airflow", "the Airflow UI (http://127.0.0.1:8080, its own database): trigger "
         "latency_experiment with your own matrix, unpause the nightly"),
        (f"{k} run --workload images-http-vs-kafka --messages 120", "seed 000 with enough "
         "messages for p99 (the demo's 10 define only p50)"),
        (f"{k} load --consumers 1,5 --rate 200,1000", "HYDRA (seed 003): one producer at a "
         "fixed rate fanning out to N consumers; loss, lag"),
        (f"{k} maxrate", "the highest rate the cluster sustains within a latency bound"),
        (f"{k} faults run --fault sigkill-leader --trials 1", "kill the partition leader "
         "under load: acked messages lost, time without acks"),
        (f"{k} startup run", "seed 000's question in full: every start-up case, both "
         "clients, 5 trials (~10 min)"),
        (f"{k} runs", "every run in the data dir and its state"),
    ]


def closing_summary(lab: LabData, log_path: Path, say: Say) -> None:
    """Where everything is, and what to try next."""
    say("")
    say("Where things are:")
    say(f"  raw samples      {lab.samples_dir}/   (docs/metrics-schema.md)")
    say(f"  aggregates       {lab.aggregates_dir}/   (docs/aggregates-schema.md; Spark)")
    say(f"  validation       {lab.validation_dir}/   (Great Expectations results, Data Docs in docs/)")
    say(f"  report           {lab.report_index_path()}")
    say(f"                   open it in a browser: file://{lab.report_index_path()}")
    say(f"  Airflow's logs   {log_path}")
    say("")
    say("Next:")
    steps = next_steps()
    width = max(len(cmd) for cmd, _ in steps)
    for cmd, why in steps:
        say(f"  {cmd:<{width}}  {why}")


def _write(log: IO[str], text: str) -> None:
    """One line of the demo's own in the log, time-stamped as Airflow's lines are."""
    log.write(f"{datetime.now(UTC).isoformat(timespec='milliseconds')} {text}\n")
    log.flush()


def run_seed000(plan: DemoPlan, lab: LabData, log: IO[str], say: Say) -> tuple[int, str]:
    """Seed 000's comparison: a line per cell, then the table as ``kafkalab run`` prints it.
    Returns its exit code (0, or 4 when a cell failed, as ``kafkalab run``) and its run id;
    :func:`aggregate_seed000` aggregates it."""
    from kafkalab.runner import build_run_request, execute
    from kafkalab.summary import format_run_summary

    say("")
    say(f"Seed 000: HTTP vs Kafka clients vs Kafka's own tool ({plan.workload})")

    def progress(msg: str) -> None:
        _write(log, msg)
        if cell_line(msg):
            say(f"  {msg}")

    req = build_run_request(plan.workload, data_dir=lab.root, descriptor_path=plan.descriptor_path)
    result = execute(req, progress=progress)
    say("")
    say(format_run_summary(result.cells))
    say(f"run {result.run_id}: {result.status}")
    return (0 if result.status == "complete" else 4), result.run_id


def run_startup_part(plan: DemoPlan, lab: LabData, log: IO[str], say: Say
                     ) -> tuple[int, str | None]:
    """Seed 000's question on Kafka 4.x (:data:`DEMO_STARTUP`): the cases' table and the answer
    as ``kafkalab startup run`` prints them. Returns its exit code (0; 4 when a probe timed
    out or failed, or the run could not measure) and its run id (None when it never
    started)."""
    from kafkalab.errors import LabError
    from kafkalab.startup.engine import StartupRequest, execute_startup
    from kafkalab.startup_figures import LEGEND, format_table

    spec = DEMO_STARTUP
    say("")
    say("Seed 000's question on Kafka 4.x: where does a new consumer's first second go? "
        "(kafkalab startup run --client confluent-kafka --delay-ms 3000 --members 1 "
        "--trials 1; its own one-node cluster)")
    base_port, control_port = plan.startup_ports
    try:
        result = execute_startup(StartupRequest(
            spec=spec, data_dir=lab.root, base_port=base_port, control_port=control_port,
            command="kafkalab demo (start-up part)"), progress=lambda m: _write(log, m))
    except LabError as exc:
        say(f"  not measured: {exc}")
        return 4, None
    say("")
    say(format_table(result.cases))
    say(f"(ms after the consumer's start, one probe each: {LEGEND})")
    for line in result.answer:
        say(line)
    say(f"run {result.run_id}: {result.status} (docs/first-message.md: every case, 5 trials, "
        "both clients)")
    return (0 if result.failed_probes == 0 else 4), result.run_id


class DemoSpark:
    """Where the demo's Spark jobs run (:meth:`master_url`): the lab's default (each job a
    spark-submit), or a Spark Connect server started on first use, after seed 000's
    measurement (no JVM starts while the demo measures), and stopped by :meth:`close`. A
    server that cannot start (its port taken, ...) is one line, and the jobs are
    spark-submits."""

    def __init__(self, plan: DemoPlan, log: IO[str], say: Say) -> None:
        from kafkalab.airflow.launcher import SPARK_MASTER_ENV

        self._log, self._say = log, say
        users = [v for v in (SPARK_MASTER_ENV, "AIRFLOW_CONN_SPARK_DEFAULT")
                 if os.environ.get(v, "").strip()]
        self.use_connect = plan.spark_connect and not users
        self._server: ConnectServer | None = None

    def master_url(self) -> str | None:
        """The master the demo's jobs use: the Spark Connect server's URL (started now if it
        is not running yet), or ``None`` for the lab's default.

        Raises:
            ClusterError: the server could not start (port in use, ...).
        """
        if not self.use_connect:
            return None
        if self._server is None:
            from kafkalab.errors import LabError
            from kafkalab.spark import connect, job_host

            t0 = time.monotonic()
            job_host.prestart()  # the jobs' imports while the driver starts
            try:
                self._server = connect.start_server(
                    connect.server_port(), lab_dir() / LOG_DIR_NAME / "demo-spark-connect.log",
                    lab_dir() / "spark-connect", progress=lambda m: _write(self._log, m))
            except LabError as exc:
                self._say(f"Spark Connect server not started ({exc}): each Spark job of the "
                          "demo is a spark-submit instead")
                self.use_connect = False
                return None
            self._say(f"Spark Connect server at {self._server.url}: one Spark driver for "
                      f"every job of the demo (ready in {time.monotonic() - t0:.0f} s)")
        return str(self._server.url)

    def nightly_env(self) -> dict[str, str]:
        """What the ``dags test`` process needs to send its Spark tasks to the server."""
        url = self.master_url()
        if url is None:
            return {}
        from kafkalab.airflow.launcher import SPARK_MASTER_ENV, spark_conn

        return {SPARK_MASTER_ENV: url, "AIRFLOW_CONN_SPARK_DEFAULT": spark_conn(url)}

    def close(self) -> None:
        """Stop the server if one was started."""
        if self._server is not None:
            from kafkalab.spark import connect

            connect.stop_server(self._server)
            self._server = None


def _aggregate(run_id: str, lab: LabData, log: IO[str], master: str | None
               ) -> AggregateOutcome | str:
    """``kafkalab aggregate --one-session`` of ``run_id`` (the jobs' output to the demo's
    log): its outcome, or why it was not aggregated."""
    from kafkalab.aggregate import aggregate_run
    from kafkalab.errors import LabError

    try:
        return aggregate_run(lab.root, run_id, master=master,
                             progress=lambda m: _write(log, m), one_session=True)
    except LabError as exc:
        return str(exc)


def aggregate_startup(run_id: str, lab: LabData, log: IO[str], say: Say,
                      master: str | None = None) -> int:
    """The start-up run through Spark and Great Expectations (``kafkalab aggregate
    --one-session``) and its report page. Returns 0, 1 when validation failed, 4 when a job
    failed or refused the run."""
    outcome = _aggregate(run_id, lab, log, master)
    if isinstance(outcome, str):
        say(f"Start-up run {run_id} not aggregated: {outcome}")
        return 4
    say(f"Start-up run {run_id} → Spark, Great Expectations: validation "
        f"{'passed' if outcome.validation_success else 'FAILED'}; report {outcome.report}")
    return 0 if outcome.validation_success else 1


def aggregate_seed000(run_id: str, lab: LabData, log: IO[str], say: Say,
                      master: str | None = None) -> int:
    """Seed 000's run through Spark, Great Expectations, drift and the report, as
    ``kafkalab aggregate`` does (:func:`kafkalab.aggregate.aggregate_run`; the jobs' output
    goes to the demo's log). Returns 0, 1 when validation failed, 4 when a job failed or
    refused the run."""
    say(f"Seed 000's run → Spark aggregation, Great Expectations, drift, report "
        f"(kafkalab aggregate --one-session --run-id {run_id})")
    if master is not None:
        say(f"  (KAFKALAB_SPARK_MASTER={master})")
    outcome = _aggregate(run_id, lab, log, master)
    if isinstance(outcome, str):
        say(f"  not aggregated: {outcome}")
        return 4
    took_s = sum(j.seconds for j in outcome.jobs)
    say(f"  validation {'passed' if outcome.validation_success else 'FAILED'} "
        f"({sum(not j.in_session for j in outcome.jobs)} Spark job(s), {took_s:.0f} s); "
        f"report {outcome.report}")
    return 0 if outcome.validation_success else 1


def run_nightly(plan: DemoPlan, lab: LabData, log: IO[str], say: Say,
                spark: DemoSpark | None = None,
                meanwhile: Callable[[], None] | None = None) -> list[DateOutcome]:
    """The nightly DAG once per date, a line per date as each ends; Airflow's output goes
    to ``log``. The DB migration and the dates run one after the other in one process
    (:func:`kafkalab.airflow.launcher.dags_test_dates`), its Spark tasks on ``spark``'s
    master. ``meanwhile`` runs while that process starts, prepares the DB and warms up (seed
    000's aggregation: nothing that measures); the first date starts after it."""
    from kafkalab.airflow.dags_test_dates import PREPARE_MARKER, date_marker
    from kafkalab.airflow.launcher import dags_test_dates

    conf = dict(plan.nightly_conf)
    if plan.descriptor_path is not None:
        conf["cluster_descriptor"] = str(plan.descriptor_path)
    nights = f"{len(plan.dates)} night{'s' if len(plan.dates) != 1 else ''}"

    def before_dates() -> None:
        if meanwhile is not None:
            meanwhile()
        say("")
        say(f"The nightly DAG ({DEMO_DAG}) for {nights}: "
            f"{', '.join(conf.get('scenarios') or [])} × "
            f"{', '.join(conf.get('payloads') or [])}, {conf.get('messages')} messages a "
            "cell, then Spark + Great Expectations, drift, report")

    extra_env = {"KAFKALAB_DATA_DIR": str(lab.root),
                 **(spark.nightly_env() if spark is not None else {})}
    home = plan.airflow_home or demo_airflow_home(lab.root)
    outcomes: list[DateOutcome] = []
    seen = manifest_stamps(lab)
    for step in dags_test_dates(DEMO_DAG, plan.dates, conf, log, home=home,
                                extra_env=extra_env, meanwhile=before_dates):
        log.flush()
        text = ""
        if step.exit_code != 0:
            text = Path(log.name).read_text(errors="replace")
        if step.step == "prepare":
            if step.exit_code == 0:
                say(f"  Airflow database ready in {step.wall_s:.0f} s")
                continue
            say(f"  the Airflow database could not be prepared (exit {step.exit_code}):")
            start = text.rfind(PREPARE_MARKER)
            for line in failure_excerpt(text[max(start, 0):]):
                say(f"    | {line}")
            continue
        now = manifest_stamps(lab)
        written = sorted(rid for rid, stamp in now.items() if seen.get(rid) != stamp)
        outcome = summarize_date(lab, step.name, step.exit_code, step.wall_s, written)
        seen = now
        outcomes.append(outcome)
        say(f"  {outcome.line}")
        if step.exit_code != 0:
            start = text.rfind(date_marker(DEMO_DAG, step.name))
            say(f"    the DAG run failed (exit {step.exit_code}); its failing task's log:")
            for line in failure_excerpt(text[max(start, 0):]):
                say(f"    | {line}")
    return outcomes


def run_demo(plan: DemoPlan, say: Say = print, lab: LabData | None = None) -> int:
    """Run the demo; returns the exit code (0 when every part succeeded). ``lab``: the data
    directory (default :func:`kafkalab.paths.data_dir`)."""
    from kafkalab.cluster.descriptor import EMULATOR_LABEL
    from kafkalab.cluster.embedded import cluster_up
    from kafkalab.report.build import build_report

    lab = lab if lab is not None else LabData()
    started = time.monotonic()
    log_path = plan.log_path or default_log_path()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    rc = 0
    with log_path.open("w", encoding="utf-8") as log:
        say(f"Kafka Latency Lab demo; Airflow's and the tools' logs: {log_path}")
        if plan.descriptor_path is None:
            t0 = time.monotonic()
            d = cluster_up(progress=lambda m: _write(log, m))
            label = f" ({EMULATOR_LABEL})" if d.is_emulator else ""
            say(f"Kafka {d.version}{label}: {d.broker_count} broker(s) at {d.bootstrap_servers} "
                f"(ready in {time.monotonic() - t0:.0f} s)")
        spark = DemoSpark(plan, log, say)
        try:
            seed_run: str | None = None
            startup_run: str | None = None
            if plan.seed000:
                seed_rc, seed_run = run_seed000(plan, lab, log, say)
                rc = max(rc, seed_rc)
            if plan.startup:
                startup_rc, startup_run = run_startup_part(plan, lab, log, say)
                rc = max(rc, startup_rc)
            aggregated: list[int] = []

            def aggregate() -> None:
                if seed_run is not None and plan.aggregate_seed000:
                    aggregated.append(aggregate_seed000(seed_run, lab, log, say,
                                                        spark.master_url()))
                if startup_run is not None and plan.aggregate_seed000:
                    aggregated.append(aggregate_startup(startup_run, lab, log, say,
                                                        spark.master_url()))

            if plan.nightly:
                # seed 000's aggregation runs while the nightly's Airflow process starts
                outcomes = run_nightly(plan, lab, log, say, spark, meanwhile=aggregate)
                if any(o.exit_code != 0 for o in outcomes):
                    rc = max(rc, 1)
            else:
                aggregate()
                build_report(lab.root)  # the seed-000 run's page (else the nightly builds it)
            rc = max([rc, *aggregated])
        finally:
            spark.close()
    closing_summary(lab, log_path, say)
    took_s = time.monotonic() - started
    say("")
    say(f"demo {'done' if rc == 0 else 'FAILED'} in {int(took_s // 60)} min {took_s % 60:.0f} s")
    return rc


def parse_conf(text: str | None) -> dict[str, Any]:
    """``--nightly-conf`` JSON laid over :data:`DEMO_NIGHTLY_CONF`.

    Raises:
        ValueError: not a JSON object (the message names the problem).
    """
    conf = dict(DEMO_NIGHTLY_CONF)
    if not text:
        return conf
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--nightly-conf is not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(value, dict):
        raise ValueError("--nightly-conf must be a JSON object, e.g. '{\"messages\": 100}'")
    conf.update(value)
    return conf


__all__ = [
    "DEMO_DATES",
    "DEMO_NIGHTLY_CONF",
    "DEMO_STARTUP",
    "DEMO_WORKLOAD",
    "DateOutcome",
    "DemoPlan",
    "cell_line",
    "closing_summary",
    "default_log_path",
    "demo_airflow_home",
    "drift_counts",
    "failure_excerpt",
    "format_drift",
    "manifest_stamps",
    "next_steps",
    "parse_conf",
    "run_demo",
    "run_startup_part",
    "summarize_date",
]
