"""``kafkalab cluster up|status|down``: the embedded cluster (:mod:`kafkalab.cluster.embedded`)."""

from __future__ import annotations

import argparse
from typing import Any

from kafkalab.cli.options import SubParsers, add_down_action, add_group, add_json_option
from kafkalab.cli.output import err, say, say_json, say_stopped


def _flavor_names() -> tuple[str, ...]:
    """``cluster up --flavor``'s choices, default first (the flavor registry's)."""
    from kafkalab.cluster.flavors import embedded_flavor_names

    return embedded_flavor_names()


def _flavor_help() -> str:
    """Each flavor ``cluster up`` starts, with its label (the default first)."""
    from kafkalab.cluster.flavors import embedded_flavor

    names = _flavor_names()
    return "; ".join(f"{n}: {embedded_flavor(n).label}" + (" (default)" if n == names[0] else "")
                     for n in names)


def _port_defaults(attribute: str) -> str:
    """Each embedded flavor's default of a port, as ``<flavor> <port>; ...``."""
    from kafkalab.cluster.flavors import embedded_flavor

    parts = []
    for n in _flavor_names():
        f = embedded_flavor(n)
        port = getattr(f, attribute)
        if port is not None:
            what = f" ({f.control_port_name})" if attribute == "default_control_port" else ""
            parts.append(f"{n} {port}{what}")
    return "; ".join(parts)


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``cluster`` and its actions."""
    csub = add_group(sub, "cluster", cmd_cluster, "cluster_command",
                     help="start, inspect or stop the embedded cluster",
                     description="The embedded cluster, of one of the flavors the lab starts: "
                     + _flavor_help() + ". Everything binds 127.0.0.1; state, data and logs "
                     "live under .lab/cluster/.")
    up = csub.add_parser("up", help="start the cluster (no-op when the same one is up)",
                         description="Start the flavor's processes (its coordination service, then the "
                         "brokers), wait until every broker "
                         "answers metadata, and write the cluster descriptor .lab/cluster.yaml "
                         "that every other command uses.")
    up.add_argument("--brokers", type=int, choices=(1, 3), default=1, help="number of brokers (default 1)")
    up.add_argument("--flavor", choices=_flavor_names(), default=_flavor_names()[0],
                    help=_flavor_help())
    up.add_argument("--base-port", type=int, default=None,
                    help="first broker port (default " + _port_defaults("default_base_port") + ")")
    up.add_argument("--control-port", "--zk-port", dest="control_port", type=int, default=None,
                    help="port of its coordination service (default "
                    + _port_defaults("default_control_port") + ")")
    up.add_argument("--sasl-ssl", action="store_true",
                    help="also a SASL_SSL listener on every broker: SCRAM-SHA-512 user "
                    "'kafkalab' over TLS with the lab's own CA; the password comes from "
                    "$KAFKALAB_SASL_PASSWORD; its descriptor is .lab/cluster-sasl-ssl.yaml "
                    "(kraft only)")
    up.add_argument("--sasl-ssl-port", type=int, default=None,
                    help="first SASL_SSL port (default " + _port_defaults("default_sasl_ssl_port")
                    + "; implies --sasl-ssl)")
    up.add_argument("--broker-setting", dest="broker_settings", action="append",
                    metavar="KEY=VALUE", default=None,
                    help="a broker property over Kafka's default, on every node (repeatable; "
                    "kraft only; not the node's identity, listeners, directories or quorum), "
                    "e.g. group.initial.rebalance.delay.ms=0")
    up.add_argument("--links", action="store_true",
                    help="route every node's client, replication and controller traffic (and a "
                    "second client plane, solo, for one client on links of its own) through "
                    "proxies the lab can slow down, throttle and cut (`cluster links`; kraft "
                    "only; Toxiproxy, built by make setup)")
    add_json_option(up, "print the cluster's public descriptor as one JSON document")
    _add_links_parser(csub)
    cst = csub.add_parser("status", help="show processes, ports, log files",
                          description="Show whether the embedded cluster is up, its processes "
                          "and where its logs are: a table, or --json. Exit 0 only when up.")
    add_json_option(cst, "print the status as one JSON document")
    add_down_action(csub, "Stop the brokers (controlled shutdown), then its coordination "
                    "service (ZooKeeper), by PID.", wipe_help="also delete the cluster's data")


def _add_links_parser(csub: Any) -> None:
    """``cluster links show|delay|limit|cut|heal``."""
    lk = csub.add_parser("links", help="show, degrade or heal the links of a cluster started "
                         "with --links",
                         description="The links of an embedded cluster started with `cluster up "
                         "--links`: one per client→node and per node→node pair on each plane "
                         "(client, replication, controller, and solo: the one client a load cell "
                         "or a consumer fault puts on links of its own). A fault acts on every "
                         "link between "
                         "two sides, both directions; `heal` removes every fault and waits until "
                         "every broker is back in the metadata and every ISR is full.")
    lk.add_argument("action", choices=("show", "delay", "limit", "cut", "heal"),
                    help="show the links; delay, limit or cut those between --between's sides; "
                    "heal every link and wait until the cluster is whole")
    lk.add_argument("--between", nargs=2, metavar=("SIDE_A", "SIDE_B"), default=None,
                    help="two sides, each comma-separated node ids or `clients` (e.g. 0 1,2)")
    lk.add_argument("--planes", default=None,
                    help="comma-separated planes among client, replication, controller, solo "
                    "(solo: the one client a load cell puts on a link of its own; default: "
                    "every plane the sides have)")
    lk.add_argument("--one-way-ms", type=float, default=0.0, help="delay: added each way")
    lk.add_argument("--jitter-ms", type=float, default=0.0, help="delay: ± this much")
    lk.add_argument("--rate-kbps", type=int, default=0, help="limit: KB/s each way")
    lk.add_argument("--wait-s", type=float, default=60.0,
                    help="heal: how long the cluster may take to be whole again (default 60)")
    add_json_option(lk, "print the links (or what was done) as one JSON document")


def _side(text: str) -> tuple[Any, ...]:
    from kafkalab.cluster.links.layout import CLIENTS
    from kafkalab.errors import ConfigError

    out: list[Any] = []
    for item in (t.strip() for t in text.split(",") if t.strip()):
        if item == CLIENTS:
            out.append(CLIENTS)
        elif item.isdigit():
            out.append(int(item))
        else:
            raise ConfigError(f"--between: {item[:40]!r} is neither a node id nor {CLIENTS!r}")
    return tuple(out)


def cmd_links(args: argparse.Namespace) -> int:
    """``cluster links``: exit 0 when done, 1 when a heal did not make the cluster whole."""
    from kafkalab.cluster.embedded import running_cluster
    from kafkalab.cluster.links import STALE_LINKS, LinkFault, Links, stale_links, wait_healed
    from kafkalab.cluster.links.layout import CLIENT_PLANES, CLIENTS, PLANES
    from kafkalab.errors import ClusterError, ConfigError

    running = running_cluster(None)
    if running is not None and stale_links(running.state):
        raise ClusterError(f"the embedded cluster is up, but {STALE_LINKS}")
    links = Links.of(running.state if running else None)
    if running is None or links is None:
        raise ClusterError("no embedded cluster with degradable links is up (start one with "
                           "`kafkalab cluster up --brokers 3 --links`)")
    if args.action == "show":
        rows = links.status()
        if args.json:
            say_json({"links": rows})
        else:
            for r in rows:
                say(f"{r['proxy']:<22} {r['listen']:<22} "
                    + ("missing" if not r["present"] else "disabled" if not r["enabled"]
                       else ", ".join(r["toxics"]) or "healthy"))
        return 0
    if args.action == "heal":
        links.heal()
        took = wait_healed(links, running.descriptor, args.wait_s)
        say_json({"healed": True, "whole_after_s": round(took, 3)}) if args.json else \
            say(f"links healed; the cluster was whole again after {took:.1f} s")
        return 0
    if not args.between:
        raise ConfigError(f"cluster links {args.action}: --between SIDE_A SIDE_B is required")
    a, b = _side(args.between[0]), _side(args.between[1])
    if CLIENTS in a:
        a, b = b, a
    planes = tuple(p.strip() for p in args.planes.split(",")) if args.planes else \
        (CLIENT_PLANES if CLIENTS in b else tuple(p for p in PLANES if p not in CLIENT_PLANES))
    fault = LinkFault(args.action, a, b, planes, args.one_way_ms,  # type: ignore[arg-type]
                      args.jitter_ms, args.rate_kbps)
    touched = links.apply(fault)
    say_json({"fault": fault.describe(), "proxies": touched}) if args.json else \
        say(f"{fault.describe()}: {len(touched)} link(s)")
    return 0


def _sasl_ssl_port(args: argparse.Namespace) -> int | None:
    """The SASL_SSL listener's first port ``cluster up`` asks for; None without one."""
    from kafkalab.cluster.flavors import embedded_flavor

    if args.sasl_ssl_port is not None:
        return int(args.sasl_ssl_port)
    if not args.sasl_ssl:
        return None
    port = embedded_flavor(args.flavor).default_sasl_ssl_port
    if port is None:
        from kafkalab.errors import ConfigError

        raise ConfigError(f"--sasl-ssl: the {args.flavor} flavor has no SASL_SSL listener "
                          "(the kraft flavor has)")
    return port


def _broker_settings(args: argparse.Namespace) -> dict[str, str] | None:
    """``--broker-setting KEY=VALUE`` options as a mapping; None without any.

    Raises:
        ConfigError: an option without ``=`` or a key given twice.
    """
    if not args.broker_settings:
        return None
    from kafkalab.errors import ConfigError

    out: dict[str, str] = {}
    for item in args.broker_settings:
        key, sep, value = str(item).partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--broker-setting {item[:60]!r}: expected KEY=VALUE")
        if key in out:
            raise ConfigError(f"--broker-setting: {key} is given twice")
        out[key] = value.strip()
    return out


def cmd_cluster(args: argparse.Namespace) -> int:
    """``cluster up`` (exit 0), ``cluster status`` (exit 0 only when up), ``cluster down``."""
    from kafkalab.cluster.embedded import cluster_down, cluster_status, cluster_up

    if args.cluster_command == "up":
        d = cluster_up(flavor=args.flavor, brokers=args.brokers, base_port=args.base_port,
                       control_port=args.control_port, progress=err,
                       sasl_ssl_port=_sasl_ssl_port(args),
                       broker_settings=_broker_settings(args), links=args.links)
        from kafkalab.paths import default_descriptor_path

        if args.json:
            from kafkalab.cluster.descriptor import public_view
            from kafkalab.values import jsonable

            say_json({"status": "up", "emulator": d.is_emulator,
                      "descriptor_path": str(default_descriptor_path()),
                      "cluster": jsonable(public_view(d))})
            return 0
        say(f"cluster up: {d.flavor} {d.version}, {d.broker_count} broker(s) at {d.bootstrap_servers}")
        if d.zookeeper:
            say(f"zookeeper: {d.zookeeper}")
        say(f"descriptor: {default_descriptor_path()}")
        from kafkalab.cluster.state import resolve_lab, secure_descriptor_path

        secure = secure_descriptor_path(resolve_lab(None))
        if secure.is_file():
            say(f"SASL_SSL descriptor: {secure} (export KAFKALAB_SASL_PASSWORD for its clients)")
        return 0
    if args.cluster_command == "links":
        return cmd_links(args)
    if args.cluster_command == "status":
        st = cluster_status()
        if args.json:
            say_json(st)
        else:
            say(format_cluster_status(st))
        return 0 if st.get("status") == "up" else 1
    stopped = cluster_down(wipe_data=args.wipe, progress=err)
    say_stopped(stopped, "cluster down", args.json)
    return 0


def format_cluster_status(st: dict[str, Any]) -> str:
    """``kafkalab cluster status`` as a table: the overall state, then one row per process
    (role, id, pid, alive, listening, address, log)."""
    procs = st.get("processes") or []
    if not procs:
        return (f"cluster: {st.get('status')} (no processes recorded in {st.get('lab_dir')}; "
                "start it with: kafkalab cluster up)")
    flavor = st.get("flavor") or "?"
    lines = [f"cluster: {st.get('status')}  {flavor}, {st.get('brokers')} broker(s), "
             f"started {st.get('started_at') or '?'}"
             + ("  (stale state: processes gone; `kafkalab cluster up` cleans it)"
                if st.get("stale") else "")]
    if st.get("kafka_version"):
        kraft = (f"KRaft, quorum leader: node {st['quorum_leader']} (epoch {st['quorum_epoch']})"
                 if st.get("quorum_leader") is not None
                 else "KRaft, no quorum leader yet" if st.get("mode") == "KRaft" else None)
        lines.append(f"Apache Kafka {st['kafka_version']}" + (f"  {kraft}" if kraft else ""))
    head = ("role", "id", "pid", "alive", "listening", "address", "log")
    rows = [(str(p.get("role")), "" if p.get("id") is None else str(p.get("id")),
             str(p.get("pid")), "yes" if p.get("alive") else "NO",
             "yes" if p.get("listening") else "NO", str(p.get("address")), str(p.get("log") or ""))
            for p in procs]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        lines.append("  " + "  ".join(v.ljust(widths[i]) for i, v in enumerate(r)).rstrip())
    if st.get("sasl_ssl"):
        lines.append(f"SASL_SSL (SCRAM-SHA-512 over TLS): {st['sasl_ssl']}")
    if st.get("links"):
        lines.append(f"links: {st['links']} (kafkalab cluster links show)")
    if st.get("broker_settings"):
        lines.append("broker settings: " + ", ".join(f"{k}={v}" for k, v in
                                                     sorted(st["broker_settings"].items())))
    if st.get("descriptor_path"):
        lines.append(f"descriptor: {st['descriptor_path']}")
    lines.append(f"state: {st.get('state_path')}")
    return "\n".join(lines)


__all__ = ["add_parser", "cmd_cluster", "format_cluster_status"]
