"""``kafkalab spark up|status|down``: a local Spark standalone cluster
(:mod:`kafkalab.spark.standalone`); ``kafkalab spark connect``: a Spark Connect server in the
foreground (:mod:`kafkalab.spark.connect`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kafkalab.cli.options import SubParsers, add_down_action, add_group, add_json_option
from kafkalab.cli.output import err, say, say_json


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``spark`` and its actions."""
    sksub = add_group(sub, "spark", cmd_spark, "spark_command",
                      help="a local Spark standalone cluster (up, status, down) or a Spark "
                      "Connect server (connect)",
                      description="A real Spark standalone cluster on this machine: one "
                      "master and workers from the installed PySpark's spark-class, bound "
                      "to 127.0.0.1; state, logs and work dirs under .lab/spark/ "
                      "(KAFKALAB_HOME). Send the lab's Spark jobs to it with the line `up` "
                      "prints: export KAFKALAB_SPARK_MASTER=spark://127.0.0.1:7077. Or one "
                      "warm driver for them: `kafkalab spark connect`. See docs/spark.md.")
    skup = sksub.add_parser("up", help="start master and workers (no-op when the same cluster is up)",
                            description="Start the master, then the workers, and wait until "
                            "the master lists every worker ALIVE. Prints `# ...` lines and the "
                            "export line on stdout, so `eval \"$(kafkalab spark up)\"` sets it. "
                            "Ports: master --port, its web UI --webui-port; worker i uses "
                            "--port + i and --webui-port + i.")
    skup.add_argument("--port", type=int, default=7077, help="master RPC port (default 7077; workers 7078, 7079, ...)")
    skup.add_argument("--webui-port", type=int, default=8180,
                      help="master web UI port (default 8180; workers' UIs 8181, 8182, ...)")
    skup.add_argument("--workers", type=int, default=2, help="number of workers (default 2)")
    skup.add_argument("--worker-cores", type=int, default=1, help="cores per worker (default 1)")
    skup.add_argument("--worker-memory", default="1g", help="memory per worker, e.g. 1g or 1536m (default 1g)")
    skup.add_argument("--timeout", type=float, default=120.0,
                      help="seconds to wait for every worker to register (default 120)")
    add_json_option(skup, "print the cluster's status as one JSON document (instead of the export line)")
    skst = sksub.add_parser("status", help="show master, workers, pids, cores, memory",
                            description="Whether the cluster is up (every daemon running and "
                            "every worker registered ALIVE), degraded or down; exit 0 only when up.")
    skst.add_argument("--json", action="store_true", help="print the status as JSON")
    skc = sksub.add_parser(
        "connect", help="run a Spark Connect server in the foreground until Ctrl-C or SIGTERM",
        description="One warm Spark driver for the lab's jobs (docs/spark.md): Spark's "
        "SparkConnectServer from the installed PySpark, local[2], on 127.0.0.1:PORT; its log "
        "under .lab/logs/. When it listens, prints `# ...` and the export line on stdout "
        "(export KAFKALAB_SPARK_MASTER=sc://localhost:PORT: `kafkalab aggregate` and the DAGs "
        "then run their jobs as its clients); on Ctrl-C or SIGTERM stops it and exits 0. For "
        "a terminal beside `make airflow`, or a service manager.")
    skc.add_argument("--port", type=int, default=None,
                     help="its port (default $KAFKALAB_SPARK_CONNECT_PORT or 15102)")
    add_down_action(sksub, "Stop the workers (with their executors) then the master, by PID, "
                    "and forget them.", wipe_help="also delete the workers' work dirs (executor logs)")


def cmd_spark(args: argparse.Namespace) -> int:
    """``kafkalab spark up|status|down``: see :mod:`kafkalab.spark.standalone`."""
    if args.spark_command == "up":
        return _up(args)
    if args.spark_command == "status":
        return _status(args)
    if args.spark_command == "connect":
        return _connect(args)
    from kafkalab.spark import spark_down

    stopped = spark_down(wipe=args.wipe, progress=err)
    if args.json:
        say_json({"stopped": stopped})
        return 0
    if not stopped:
        say("spark down: nothing was running")
    for proc in stopped:
        name = "master" if proc["role"] == "master" else f"worker {proc['id']}"
        say(f"{name} pid {proc['pid']}: {proc['action']}")
    return 0


def _up(args: argparse.Namespace) -> int:
    """``spark up``: the `# ...` lines and the export line (or ``--json``)."""
    from kafkalab.spark import StandaloneSpec, export_line, spark_up

    spec = StandaloneSpec(master_port=args.port, webui_port=args.webui_port,
                          workers=args.workers, worker_cores=args.worker_cores,
                          worker_memory=args.worker_memory)
    st = spark_up(spec, timeout_s=args.timeout, progress=err)
    if args.json:
        say_json(st)
        return 0
    workers = st["workers"]
    say(f"# spark standalone up: master {st['master_url']} (web UI {st['webui_url']}), "
        f"{len(workers)} worker(s) × {spec.worker_cores} core(s), {spec.worker_memory}")
    say(f"# logs: {Path(st['master']['log']).parent}; stop: kafkalab spark down")
    say(export_line(st["master_url"]))
    return 0


def _connect(args: argparse.Namespace) -> int:
    """``spark connect``: start a server, print where it is, wait for Ctrl-C or SIGTERM, stop
    it. Exit 0 when stopped that way, 1 when the server exited by itself."""
    import signal
    import threading

    from kafkalab import procs
    from kafkalab.errors import ConfigError
    from kafkalab.paths import lab_dir
    from kafkalab.spark import connect

    port = args.port if args.port is not None else connect.server_port()
    if not 1024 <= port <= 65535:
        raise ConfigError(f"--port {port} is not a port number in 1024..65535")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = connect.start_server(port, lab_dir() / "logs" / f"spark-connect-{port}.log",
                                  lab_dir() / "spark-connect", progress=err)
    try:
        say(f"# Spark Connect server on {server.url} (pid {server.pid}, log {server.log}); "
            "stop: Ctrl-C or SIGTERM")
        say(f"export KAFKALAB_SPARK_MASTER={server.url}")
        while not stop.wait(1.0):
            if not procs.pid_alive(server.pid):
                err(f"spark connect: the server exited: {procs.failure_line(server.log)} "
                    f"(log {server.log})")
                return 1
    except KeyboardInterrupt:
        pass
    finally:
        connect.stop_server(server)
    err(f"spark connect: stopped the server on {server.url}")
    return 0


def _status(args: argparse.Namespace) -> int:
    """``spark status``: one line per daemon (or ``--json``); exit 0 only when up."""
    from kafkalab.spark import spark_status

    st = spark_status()
    if args.json:
        say_json(st)
    elif st["master"] is None:
        say(f"spark standalone: down (no state in {st['state_path']})")
    else:
        say(f"spark standalone: {st['status']}  master {st['master_url']}  "
            f"web UI {st['webui_url']}")
        m = st["master"]
        say(f"  master    pid {m['pid']:<7} {'alive' if m['alive'] else 'gone':<5}  "
            f"{m['status'] or 'not answering'}  log {m['log']}")
        for w in st["workers"]:
            used = (f"{w['cores']} core(s) ({w['cores_used']} used), {w['memory_mb']} MiB "
                    f"({w['memory_used_mb']} used)" if w["cores"] is not None else "")
            say(f"  worker {w['id']:<2} pid {w['pid']:<7} {'alive' if w['alive'] else 'gone':<5}  "
                f"{w['registered'] or 'not registered'}  127.0.0.1:{w['port']}  {used}")
        if st["apps"] is not None:
            say(f"  apps: {len(st['apps']['active'])} running, {st['apps']['completed']} completed")
    return 0 if st["status"] == "up" else 1


__all__ = ["add_parser", "cmd_spark"]
