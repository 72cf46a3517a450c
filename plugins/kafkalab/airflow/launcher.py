"""A loopback-only local Airflow 3 for the lab (``make airflow`` / ``make airflow-down``).

``airflow standalone`` would bind its log servers to 0.0.0.0 (8793/8794, not configurable),
so the four components are started separately, bound to 127.0.0.1 where they listen:

* ``airflow api-server -H 127.0.0.1 -p 8080`` (UI, REST API, execution API);
* ``airflow scheduler --skip-serve-logs`` (LocalExecutor, or CeleryExecutor: see below);
* ``airflow triggerer --skip-serve-logs``;
* ``airflow dag-processor``.

The executor is LocalExecutor (the scheduler runs the tasks itself) unless ``up`` is given
``--executor celery`` (``make airflow EXECUTOR=celery``, or ``$KAFKALAB_AIRFLOW_EXECUTOR``):
then a private Redis (:mod:`kafkalab.airflow.redis_server`, ``127.0.0.1:16379`` or
``$KAFKALAB_REDIS_PORT``) is Celery's broker, Celery's results go to the metadata database,
and a fifth component runs the tasks: ``airflow celery worker --skip-serve-logs`` (its log
server would bind 0.0.0.0; the api-server reads the task logs from the shared
``<AIRFLOW_HOME>/logs`` instead, as on one machine it can). On a real deployment, workers
on other machines run the same command against a shared broker and metadata database
(docs/airflow.md); the lab's Redis and PostgreSQL listen on 127.0.0.1 only.

``up`` runs them on PostgreSQL: a private cluster under ``<AIRFLOW_HOME>/postgres``
(:mod:`kafkalab.airflow.postgres`, ``127.0.0.1:15432`` or ``$KAFKALAB_POSTGRES_PORT``),
started first and stopped last by ``down`` (Redis, when started, just before it). ``dags-test`` (``airflow dags test``, one
process, no scheduler) keeps SQLite (``<AIRFLOW_HOME>/airflow.db``): its runs are not in the
scheduler's database. The API port is 8080 or ``$KAFKALAB_AIRFLOW_PORT``.

``up`` and ``dags-test`` migrate the metadata DB and create the one-slot pool
:data:`kafkalab.airflow.pools.MEASURE_POOL` (:func:`prepare_db`), so two DAGs never load the
cluster at once.

State lives in :func:`kafkalab.paths.airflow_home` (``$AIRFLOW_HOME``, default
``<lab_dir>/airflow``): the databases, logs, one pid file and one log file per component,
``secrets.json`` (JWT / API secret shared by the components) and ``plugins/`` (Airflow's
plugins folder, holding only a link to the lab's one Airflow plugin,
``plugins/kafkalab_report_plugin.py``, made by :func:`install_plugins`: the report served by
the api-server at ``/kafkalab``; the ``kafkalab`` package is imported from ``PYTHONPATH``). The components run in
that folder, with the Python (and its ``bin/``) that runs this launcher. The UI login comes
from the simple auth manager: user ``admin``, password in
``simple_auth_manager_passwords.json.generated`` (mode 0600; :func:`airflow_up` prints the
file's path, never the password: its output ends up in terminals' scroll-back, make and CI
logs).

Usage: ``python -m kafkalab.airflow.launcher up [--executor local|celery]|down|status|env|``
``dags-test DAG_ID [DATE] [--conf JSON]``.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kafkalab import procs
from kafkalab.airflow import postgres, redis_server
from kafkalab.airflow.pools import MEASURE_POOL, SHARD_POOL, ensure_measure_pool
from kafkalab.errors import ClusterError, ConfigError
from kafkalab.paths import airflow_home, dags_dir, data_dir, plugins_dir
from kafkalab.progress import Progress
from kafkalab.store import atomic_write, atomic_write_json, read_json

HOST = procs.HOST
PORT = 8080
"""The API server's default port (UI, REST API, execution API)."""
PORT_ENV = "KAFKALAB_AIRFLOW_PORT"
"""Environment variable that overrides :data:`PORT`."""
COMPONENTS: dict[str, list[str]] = {
    "api-server": ["api-server", "-H", HOST],  # + ["-p", port]
    "scheduler": ["scheduler", "--skip-serve-logs"],
    "triggerer": ["triggerer", "--skip-serve-logs"],
    "dag-processor": ["dag-processor"],
}
"""The components ``up`` starts, in order, with their ``airflow`` arguments."""
CELERY_WORKER: dict[str, list[str]] = {
    "celery-worker": ["celery", "worker", "--skip-serve-logs", "--without-gossip",
                      "--without-mingle"],
}
"""The fifth component of ``up --executor celery`` (its concurrency:
``AIRFLOW__CELERY__WORKER_CONCURRENCY``, 4 here, as ``[core] parallelism``: a load cell
with shard placement ``tasks`` runs its producer and shard tasks at once)."""
ALL_COMPONENTS: dict[str, list[str]] = {**COMPONENTS, **CELERY_WORKER}
"""Every component ``up`` may start, in start order (``down`` stops them in reverse)."""
EXECUTORS: dict[str, str] = {"local": "LocalExecutor", "celery": "CeleryExecutor"}
"""``--executor`` choices and the Airflow executor each selects."""
EXECUTOR_ENV = "KAFKALAB_AIRFLOW_EXECUTOR"
"""Environment variable that picks ``up``'s executor when ``--executor`` is not given."""
ADMIN_USER = "admin"
SPARK_MASTER_ENV = "KAFKALAB_SPARK_MASTER"
"""The one switch for where the DAGs' Spark jobs run: a master URL (``local[*]``, the
default; ``spark://127.0.0.1:7077`` for ``kafkalab spark up``; ``yarn``; ``k8s://...``).
It becomes the ``spark_default`` connection unless ``AIRFLOW_CONN_SPARK_DEFAULT`` is set."""


def _spark_connect_conn(url: str) -> str:
    """The provider's ``spark_connect`` connection for ``sc://host[:port][/;k=v;…]``:
    ``user_id`` -> login, ``token`` -> password, ``use_ssl`` -> extra (as the provider's
    hook joins them again)."""
    from urllib.parse import unquote, urlparse

    address, _, params = url.partition(";")
    parsed = urlparse(address)
    conn: dict[str, object] = {"conn_type": "spark_connect", "host": parsed.hostname or ""}
    if parsed.port:
        conn["port"] = parsed.port
    extra: dict[str, object] = {}
    for key, _, value in (p.partition("=") for p in params.split(";") if p):
        if key == "user_id":
            conn["login"] = unquote(value)
        elif key == "token":
            conn["password"] = unquote(value)
        elif key == "use_ssl":
            extra["use_ssl"] = value.lower() == "true"
    if extra:
        conn["extra"] = extra
    return json.dumps(conn)


def spark_conn(master: str | None) -> str:
    """The ``spark_default`` connection (Airflow's JSON form) for a Spark master URL.

    ``spark://host:port`` is split into host and port (the provider joins them again);
    ``sc://host:port`` (a Spark Connect server: :mod:`kafkalab.spark.connect`) becomes the
    provider's ``spark_connect`` type; anything else (``local[*]``, ``yarn``,
    ``k8s://https://...``) is the host as given.
    """
    url = (master or "").strip() or "local[*]"
    if url.startswith("sc://"):
        return _spark_connect_conn(url)
    if url.startswith("spark://"):
        hostport = url[len("spark://"):]
        host, sep, port = hostport.rpartition(":")
        if sep and port.isdigit() and "," not in hostport:
            return json.dumps({"conn_type": "spark", "host": f"spark://{host}",
                               "port": int(port)})
    return json.dumps({"conn_type": "spark", "host": url})
PASSWORD_FILE = "simple_auth_manager_passwords.json.generated"


def api_port(env: Mapping[str, str] | None = None) -> int:
    """``$KAFKALAB_AIRFLOW_PORT`` of ``env`` (default ``os.environ``) or :data:`PORT`.

    Raises:
        ConfigError: the variable is not a port number.
    """
    return procs.env_port(PORT_ENV, PORT, env)


def _component_args(name: str, port: int) -> list[str]:
    return [*ALL_COMPONENTS[name], *(["-p", str(port)] if name == "api-server" else [])]


def executor_choice(executor: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """``executor``, else ``$KAFKALAB_AIRFLOW_EXECUTOR`` of ``env`` (default ``os.environ``),
    else ``local``; one of :data:`EXECUTORS`.

    Raises:
        ConfigError: not one of :data:`EXECUTORS`.
    """
    env = os.environ if env is None else env
    name = (executor or env.get(EXECUTOR_ENV) or "local").strip().lower()
    if name not in EXECUTORS:
        raise ConfigError(f"executor {name!r} is not one of {', '.join(EXECUTORS)} "
                          f"(--executor / EXECUTOR= / ${EXECUTOR_ENV})")
    return name


def components(executor: str) -> dict[str, list[str]]:
    """The components ``up`` starts for ``executor`` (:data:`COMPONENTS`, plus the Celery
    worker for ``celery``)."""
    return dict(ALL_COMPONENTS) if executor == "celery" else dict(COMPONENTS)


def redis_dir(home: Path | str | None = None) -> Path:
    """Where ``up --executor celery`` keeps its Redis: ``<AIRFLOW_HOME>/redis``."""
    return _home(home) / "redis"


def pg_dir(home: Path | str | None = None) -> Path:
    """Where ``up`` keeps its PostgreSQL cluster: ``<AIRFLOW_HOME>/postgres``."""
    return _home(home) / "postgres"


def _home(home: Path | str | None) -> Path:
    return Path(home).expanduser().absolute() if home is not None else airflow_home()


def _secrets(home: Path) -> dict[str, str]:
    """JWT and API secrets shared by all components (created once, mode 0600)."""
    path = home / "secrets.json"
    try:
        data = read_json(path)
    except (OSError, ValueError):
        data = None
    if isinstance(data, dict) and data.get("jwt_secret") and data.get("secret_key"):
        return {str(k): str(v) for k, v in data.items()}
    fresh = {"jwt_secret": secrets.token_urlsafe(32), "secret_key": secrets.token_urlsafe(32)}
    atomic_write_json(path, fresh)  # a temporary file of mode 0600, renamed
    return fresh


def airflow_env(home: Path | str | None = None, base: Mapping[str, str] | None = None,
                with_secrets: bool = True, db_url: str | None = None,
                celery_broker_url: str | None = None) -> dict[str, str]:
    """The environment every Airflow process of the lab runs with.

    Args:
        home: ``AIRFLOW_HOME`` (default :func:`kafkalab.paths.airflow_home`).
        base: environment to start from (default ``os.environ``); ``KAFKALAB_DATA_DIR`` and
            ``AIRFLOW_CONN_*`` already in it are kept.
        with_secrets: add the shared JWT/API secrets (creates ``<home>/secrets.json``).
        db_url: the metadata DB (``sql_alchemy_conn``); default SQLite in ``home``.
        celery_broker_url: CeleryExecutor with this broker (Redis) instead of
            LocalExecutor; Celery's results go to ``db_url`` (Airflow's default).
    """
    af_home = _home(home)
    env = dict(os.environ if base is None else base)
    port = api_port(env)
    python = sys.executable
    bin_dir = str(Path(python).parent)  # the venv's bin/: airflow, spark-submit
    path_parts = [bin_dir] + [p for p in env.get("PATH", "").split(os.pathsep)
                              if p and p != bin_dir]
    plugins = str(plugins_dir())
    env.update({
        "AIRFLOW_HOME": str(af_home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags_dir()),
        # kafkalab is a library on PYTHONPATH. Airflow's plugin loader executes every .py
        # file under its plugins folder as a top-level module named by its stem
        # (plugins/kafkalab/airflow/tasks.py would be imported as a module `tasks`), so it is given a folder of its own, holding only links to the lab's
        # plugin files (install_plugins).
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(af_home / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "4",
        # Airflow 3 has no SequentialExecutor; LocalExecutor (on PostgreSQL for `up`; on
        # SQLite for `dags test`) unless a Celery broker is given. Two cores: keep the
        # parallelism small.
        "AIRFLOW__CORE__EXECUTOR": EXECUTORS["celery" if celery_broker_url else "local"],
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://{HOST}:{port}/execution/",
        "AIRFLOW__API__HOST": HOST,
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": f"http://{HOST}:{port}",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
        # The lab's DAG files are static (nothing is read at parse time), and a file whose
        # mtime changed is re-parsed within about a second whatever this interval
        # (file_parsing_sort_mode modified_time, the default; checked by touching one).
        # Airflow's 30 s re-parsed the four unchanged files every 30 s: an idle stack took
        # 5.3 CPU s a 30 s, with 600 2.2 (2026-11-28; docs/airflow.md).
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",
        "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
        "PATH": os.pathsep.join(path_parts),
        "SPARK_LOCAL_IP": HOST,
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        "GX_ANALYTICS_ENABLED": "false",
        "PYTHONPATH": os.pathsep.join(
            [plugins] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                         if p and p != plugins]),
    })
    env.setdefault("AIRFLOW_CONN_SPARK_DEFAULT", spark_conn(env.get(SPARK_MASTER_ENV)))
    if db_url:
        env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = db_url
    if celery_broker_url:
        env["AIRFLOW__CELERY__BROKER_URL"] = celery_broker_url
        env.setdefault("AIRFLOW__CELERY__WORKER_CONCURRENCY", "4")
    env.setdefault("KAFKALAB_DATA_DIR", str(data_dir()))
    if with_secrets:
        s = _secrets(af_home)
        env.setdefault("AIRFLOW__API_AUTH__JWT_SECRET", s["jwt_secret"])
        env.setdefault("AIRFLOW__API__SECRET_KEY", s["secret_key"])
    for leaked in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET"):
        env.pop(leaked, None)
    return env


def _airflow_bin(env: Mapping[str, str]) -> str:
    for p in env.get("PATH", "").split(os.pathsep):
        cand = Path(p) / "airflow"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return "airflow"


def db_migrate(env: Mapping[str, str], timeout_s: float = 300,
               output: IO[str] | None = None) -> None:
    """``airflow db migrate`` (idempotent, ~2 s on SQLite). ``output``: a file that gets its
    output (stdout and stderr; default: stdout discarded, stderr to the terminal)."""
    subprocess.run([_airflow_bin(env), "db", "migrate"], env=dict(env), check=True,
                   stdout=output if output is not None else subprocess.DEVNULL,
                   stderr=subprocess.STDOUT if output is not None else None, timeout=timeout_s)


def prepare_db(env: Mapping[str, str], timeout_s: float = 300,
               output: IO[str] | None = None) -> None:
    """Migrate the metadata DB and create the measuring pool (:data:`MEASURE_POOL`, one slot).

    Idempotent; what ``up`` and ``dags-test`` run before anything else (~5 s on SQLite).
    ``output``: see :func:`db_migrate`.
    """
    db_migrate(env, timeout_s=timeout_s, output=output)
    ensure_measure_pool(env, _airflow_bin(env), timeout_s=timeout_s)


PLUGIN_FILES: tuple[str, ...] = ("kafkalab_report_plugin.py",)
"""The lab's Airflow plugins: files of :func:`kafkalab.paths.plugins_dir` that
:func:`install_plugins` links into Airflow's plugins folder."""


def install_plugins(home: Path | str | None = None) -> list[Path]:
    """Link each of :data:`PLUGIN_FILES` into ``<AIRFLOW_HOME>/plugins/`` (Airflow's plugins
    folder here; a link, so an edited plugin is the one the next api-server start loads).
    Idempotent; a stale link or copy is replaced. Returns the links."""
    folder = _home(home) / "plugins"
    folder.mkdir(parents=True, exist_ok=True)
    links = []
    for name in PLUGIN_FILES:
        source, link = plugins_dir() / name, folder / name
        if not (link.is_symlink() and link.resolve() == source.resolve()):
            link.unlink(missing_ok=True)
            link.symlink_to(source)
        links.append(link)
    return links


def _pid_file(home: Path, name: str) -> Path:
    return home / f"{name}.pid"


def _read_pid(home: Path, name: str) -> int | None:
    try:
        return int(_pid_file(home, name).read_text().strip())
    except (OSError, ValueError):
        return None


def _runs(home: Path, name: str) -> bool:
    """Whether the component ``name`` started in ``home`` still runs (its pid file's process,
    recognised by its command line: Celery retitles its worker ``[celeryd: …] (celery
    worker …)``, without the word airflow)."""
    return procs.runs(_read_pid(home, name), "celery" if name == "celery-worker" else "airflow")


def health(timeout_s: float = 2.0, port: int | None = None) -> dict[str, Any] | None:
    """The api-server's ``/api/v2/monitor/health`` document, or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port or api_port()}/api/v2/monitor/health",
                                    timeout=timeout_s) as resp:
            data = json.loads(resp.read().decode("utf-8"))
            return data if isinstance(data, dict) else None
    except (OSError, ValueError, urllib.error.URLError):
        return None


def admin_password(home: Path) -> str | None:
    """The admin password of the simple auth manager (from its generated password file)."""
    try:
        data = read_json(home / PASSWORD_FILE)
    except (OSError, ValueError):
        return None
    return str(data.get(ADMIN_USER)) if isinstance(data, dict) and data.get(ADMIN_USER) else None


def _ensure_password(home: Path) -> str:
    """Create the password file (mode 0600) with a random admin password unless one exists
    (then made mode 0600 if it was wider: Airflow writes it 0644)."""
    existing = admin_password(home)
    if existing:
        path = home / PASSWORD_FILE
        if path.stat().st_mode & 0o077:
            os.chmod(path, 0o600)
        return existing
    pw = secrets.token_urlsafe(12)
    atomic_write_json(home / PASSWORD_FILE, {ADMIN_USER: pw})
    return pw


def airflow_status(home: Path | str | None = None,
                   base_env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Which components run (by pid file), the PostgreSQL (and Redis with Celery), and
    whether the API answers. The executor is ``celery`` when a Celery worker was started.
    ``base_env``: where the ports are read (default ``os.environ``)."""
    af_home = _home(home)
    port = api_port(base_env)
    executor = "celery" if _read_pid(af_home, "celery-worker") else "local"
    comps = {}
    for name in components(executor):
        pid = _read_pid(af_home, name)
        comps[name] = {"pid": pid, "alive": _runs(af_home, name),
                       "log": str(af_home / f"{name}.log")}
    pg = postgres.pg_status(pg_dir(af_home), postgres.pg_port(base_env))
    h = health(port=port)
    alive = [c["alive"] for c in comps.values()] + [pg["alive"]]
    status: dict[str, Any] = {
        "url": f"http://{HOST}:{port}", "airflow_home": str(af_home), "executor": executor,
        "components": comps, "postgres": pg, "health": h}
    if executor == "celery":
        status["redis"] = redis_server.redis_status(redis_dir(af_home),
                                                    redis_server.redis_port(base_env))
        alive.append(status["redis"]["alive"])
    up = all(alive) and h is not None
    return {"status": "up" if up else ("partial" if any(alive) else "down"), **status}


def airflow_up(home: Path | str | None = None, timeout_s: float = 180.0,
               progress: Progress = print,
               base_env: Mapping[str, str] | None = None,
               executor: str | None = None) -> dict[str, Any]:
    """Start the lab's PostgreSQL, migrate the DB, create the measuring pool, start the four
    components (each once), wait for health, print where the login is
    (:func:`login_lines`).

    ``base_env``: the environment to start from (default ``os.environ``; see
    :func:`airflow_env`), e.g. a test's own ports and data dir. ``executor``: ``local``
    (LocalExecutor) or ``celery`` (Redis started after PostgreSQL, and a Celery worker as a
    fifth component); default :func:`executor_choice`. Switching executors needs a ``down``
    first: running components are not restarted.

    Raises:
        ClusterError: PostgreSQL or Redis missing or not starting.
        ConfigError: an unknown executor, or a bad port variable.
        RuntimeError: a component exited, the API is not healthy within ``timeout_s``, or
            components of the other executor are running.
    """
    af_home = _home(home)
    af_home.mkdir(parents=True, exist_ok=True)
    base = dict(os.environ if base_env is None else base_env)
    port = api_port(base)
    executor = executor_choice(executor, base)
    running = "celery" if _runs(af_home, "celery-worker") else (
        "local" if _runs(af_home, "scheduler") else None)
    if running not in (None, executor):
        raise RuntimeError(f"Airflow already runs with the {running} executor in {af_home}: "
                           f"`make airflow-down` first, then up with {executor}")
    pg = postgres.pg_up(pg_dir(af_home), port=postgres.pg_port(base), progress=progress)
    db_url = postgres.sqlalchemy_url(pg_dir(af_home), int(pg["port"]))
    broker = None
    if executor == "celery":
        rd = redis_server.redis_up(redis_dir(af_home), port=redis_server.redis_port(base),
                                   progress=progress)
        broker = redis_server.broker_url(redis_dir(af_home), int(rd["port"]))
    env = airflow_env(af_home, base=base, db_url=db_url, celery_broker_url=broker)
    progress(f"airflow home {af_home}; migrating the database (PostgreSQL "
             f"{HOST}:{pg['port']}), pools {MEASURE_POOL} and {SHARD_POOL} …")
    prepare_db(env)
    install_plugins(af_home)  # the report at /kafkalab on the api-server
    _ensure_password(af_home)
    airflow = _airflow_bin(env)
    wanted = components(executor)
    for name in wanted:
        pid = _read_pid(af_home, name)
        if _runs(af_home, name):
            progress(f"{name}: already running (pid {pid})")
            continue
        log_file = af_home / f"{name}.log"
        new_pid = procs.spawn([airflow, *_component_args(name, port)], log_file, cwd=af_home,
                              env=env)
        atomic_write(_pid_file(af_home, name), f"{new_pid}\n")
        progress(f"{name}: started pid {new_pid}, log {log_file}")
    deadline = time.monotonic() + timeout_s
    h = None
    while time.monotonic() < deadline:
        h = health(port=port)
        if h is not None and all(
                (h.get(k) or {}).get("status") == "healthy"
                for k in ("metadatabase", "scheduler")):
            break
        dead = [n for n in wanted if not _runs(af_home, n)]
        if dead:
            raise RuntimeError(f"airflow {', '.join(dead)} exited; see {af_home}/{dead[0]}.log")
        time.sleep(2)
    else:
        raise RuntimeError(f"airflow api-server not healthy within {timeout_s:.0f} s: {h}; "
                           f"see {af_home}/api-server.log")
    for line in login_lines(af_home, port, executor):
        progress(line)
    return airflow_status(af_home, base)


def login_lines(af_home: Path, port: int, executor: str) -> list[str]:
    """What :func:`airflow_up` prints once Airflow is healthy: the UI's address, the login
    user and the path of the password file (mode 0600), never the password itself."""
    return [f"Airflow UI: http://{HOST}:{port}  login: {ADMIN_USER}, password in "
            f"{af_home / PASSWORD_FILE} (mode 0600)  (executor: {EXECUTORS[executor]})"]


def airflow_down(home: Path | str | None = None, timeout_s: float = 30.0,
                 progress: Progress = print) -> list[dict[str, Any]]:
    """Stop exactly the processes :func:`airflow_up` started (the components' process
    groups, then Redis if it was started, then the PostgreSQL), by pid."""
    af_home = _home(home)
    stopped: list[dict[str, Any]] = []
    for name in reversed(list(ALL_COMPONENTS)):
        pid = _read_pid(af_home, name)
        if not pid:
            continue
        result = "not running"
        if _runs(af_home, name):
            # Each component was started in its own session: its group holds its workers.
            result = procs.stop(pid, timeout_s=timeout_s, group=True)
        _pid_file(af_home, name).unlink(missing_ok=True)
        stopped.append({"component": name, "pid": pid, "result": result})
        progress(f"{name}: pid {pid} {result}")
    rd = redis_server.redis_down(redis_dir(af_home), progress=progress)
    if rd is not None:
        stopped.append(rd)
    pg = postgres.pg_down(pg_dir(af_home), progress=progress)
    if pg is not None:
        stopped.append(pg)
    return stopped


def dags_test_args(dag_id: str, logical_date: str | None = None,
                   conf: Mapping[str, Any] | None = None,
                   mark_success_pattern: str | None = None) -> list[str]:
    """The arguments of ``airflow`` that :func:`dags_test` runs: ``dags test DAG_ID [DATE]
    [-c JSON] [--mark-success-pattern REGEX]``."""
    args = ["dags", "test", dag_id]
    if logical_date:
        args.append(logical_date)
    if conf:
        args += ["-c", json.dumps(dict(conf))]
    if mark_success_pattern:
        args += ["--mark-success-pattern", mark_success_pattern]
    return args


def dags_test(dag_id: str, logical_date: str | None = None, conf: Mapping[str, Any] | None = None,
              home: Path | str | None = None, extra_env: Mapping[str, str] | None = None,
              timeout_s: float = 1800, migrate: bool = True,
              mark_success_pattern: str | None = None, output: IO[str] | None = None) -> int:
    """Run ``airflow dags test DAG_ID [DATE] [-c JSON]`` in a subprocess with the lab's env.

    ``home``: ``AIRFLOW_HOME`` (default :func:`kafkalab.paths.airflow_home`); ``extra_env``
    is laid over the lab's environment. ``migrate``: run :func:`prepare_db` first (DB
    migration and the measuring pool). ``mark_success_pattern``: regex of task ids marked
    successful without running them. ``output``: a file that gets Airflow's output (stdout
    and stderr: every task's log); default the terminal. Returns the exit code (non-zero
    when the DAG run failed).
    """
    env = airflow_env(home)
    if extra_env:
        env.update(extra_env)
    Path(env["AIRFLOW_HOME"]).mkdir(parents=True, exist_ok=True)
    if migrate:
        prepare_db(env, output=output)
    cmd = [_airflow_bin(env), *dags_test_args(dag_id, logical_date, conf, mark_success_pattern)]
    print("+", shlex.join(cmd), file=output if output is not None else sys.stdout, flush=True)
    return subprocess.run(cmd, env=env, timeout=timeout_s, stdout=output,
                          stderr=subprocess.STDOUT if output is not None else None).returncode


@dataclass(frozen=True)
class TestStep:
    """One finished step of :func:`dags_test_dates`."""

    step: str
    """``prepare`` (DB migration and pools) or ``date`` (one ``dags test``)."""
    name: str
    """The logical date (``prepare`` for the prepare step)."""
    exit_code: int
    """0: it succeeded; 1: it failed; -1: the process never reported it (it died or was
    killed at its deadline)."""
    wall_s: float


def _open_gate(proc: subprocess.Popen[str], meanwhile: Callable[[], None]) -> None:
    """Run ``meanwhile``, then tell the gated child to start its dates (a child already
    gone is reported by its missing steps). Kills the child if ``meanwhile`` raises."""
    assert proc.stdin is not None
    try:
        meanwhile()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    try:
        proc.stdin.write("go\n")
        proc.stdin.close()
    except OSError:
        pass


def dags_test_dates(dag_id: str, dates: Sequence[str], conf: Mapping[str, Any] | None,
                    output: IO[str], home: Path | str | None = None,
                    extra_env: Mapping[str, str] | None = None, prepare: bool = True,
                    timeout_s_per_date: float = 1800,
                    meanwhile: Callable[[], None] | None = None) -> Iterator[TestStep]:
    """``airflow dags test DAG_ID DATE`` for each of ``dates``, in one process
    (:mod:`kafkalab.airflow.dags_test_dates`), yielding each step as it ends: first the
    ``prepare`` step (``prepare``: what :func:`prepare_db` does, in that process), then one
    per date. Airflow's output goes to ``output`` (a file).

    ``meanwhile``: the caller's work to do while the process starts, prepares and warms up
    (its ``--gate``), called once the process is spawned; the first date starts when it
    returns. It must not measure anything: the process uses the CPU meanwhile.

    A step the process never reported (it died, or the whole run outlived
    ``timeout_s_per_date`` × the dates and was killed) is yielded with exit code -1.
    """
    env = airflow_env(home)
    if extra_env:
        env.update(extra_env)
    Path(env["AIRFLOW_HOME"]).mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "kafkalab.airflow.dags_test_dates", dag_id,
           "--dates", ",".join(dates)]
    if conf:
        cmd += ["--conf", json.dumps(dict(conf))]
    if prepare:
        cmd.append("--prepare")
    if meanwhile is not None:
        cmd.append("--gate")
    print("+", shlex.join(cmd), file=output, flush=True)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=output, text=True,
                            stdin=subprocess.PIPE if meanwhile is not None else None)
    if meanwhile is not None:
        _open_gate(proc, meanwhile)
    reported: set[tuple[str, str]] = set()
    try:
        with procs.kill_after(timeout_s_per_date * max(1, len(dates)), proc.kill):
            assert proc.stdout is not None
            for line in proc.stdout:
                try:
                    data = json.loads(line)
                    step = TestStep(str(data["step"]), str(data["name"]),
                                    int(data["exit_code"]), float(data["wall_s"]))
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    continue
                reported.add((step.step, step.name))
                yield step
            proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    expected = ([("prepare", "prepare")] if prepare else []) + [("date", d) for d in dates]
    for kind, name in expected:
        if (kind, name) not in reported:
            yield TestStep(kind, name, -1, 0.0)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kafkalab.airflow.launcher up|down|status|env|dags-test``."""
    p = argparse.ArgumentParser(prog="python -m kafkalab.airflow.launcher",
                                description="Loopback-only local Airflow for the lab.")
    sub = p.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start the lab's PostgreSQL, migrate the DB, create the "
                        "measuring pool, start api-server, scheduler, triggerer, dag-processor")
    up.add_argument("--executor", choices=sorted(EXECUTORS), default=None,
                    help=f"local: LocalExecutor (default, or ${EXECUTOR_ENV}); celery: "
                    "CeleryExecutor with a private Redis and a Celery worker")
    sub.add_parser("down", help="stop exactly the processes `up` started (Redis, then "
                   "PostgreSQL last)")
    sub.add_parser("status", help="components, PostgreSQL, pids, health")
    sub.add_parser("env", help="print the environment as shell exports")
    t = sub.add_parser("dags-test", help="airflow dags test with the lab's environment")
    t.add_argument("dag_id")
    t.add_argument("logical_date", nargs="?")
    t.add_argument("--conf", default=None, help="DAG run conf as JSON")
    args = p.parse_args(argv)
    try:
        return _run(args)
    except ConfigError as exc:  # e.g. a bad port variable or KAFKALAB_AIRFLOW_EXECUTOR
        print(f"airflow {args.cmd}: error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    """Carry out the parsed command of :func:`main`."""
    if args.cmd == "up":
        try:
            airflow_up(executor=args.executor)
        except (RuntimeError, subprocess.CalledProcessError, ClusterError, ConfigError) as exc:
            print(f"airflow up: error: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.cmd == "down":
        if not airflow_down():
            print("airflow down: nothing was running")
        return 0
    if args.cmd == "status":
        st = airflow_status()
        print(json.dumps(st, indent=2))
        return 0 if st["status"] == "up" else 1
    if args.cmd == "env":
        env = airflow_env(with_secrets=False)
        for k in sorted(env):
            if k.startswith(("AIRFLOW", "KAFKALAB", "SPARK", "PYSPARK", "GX_")) or k in ("PATH", "PYTHONPATH"):
                print(f"export {k}={shlex.quote(env[k])}")
        return 0
    try:
        conf = json.loads(args.conf) if args.conf else None
    except json.JSONDecodeError as exc:
        print(f"dags-test: error: --conf is not valid JSON ({exc.msg} at column {exc.colno})", file=sys.stderr)
        return 2
    return dags_test(args.dag_id, args.logical_date, conf)


if __name__ == "__main__":
    sys.exit(main())
