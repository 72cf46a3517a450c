"""``kafkalab topics provision``: create or align the topics of a workload's profiles."""

from __future__ import annotations

import argparse
from typing import Any

from kafkalab.cli.options import (
    SubParsers,
    add_cluster_option,
    add_group,
    add_json_option,
    csv_list,
)
from kafkalab.cli.output import err, say, say_json
from kafkalab.config.loader import DEFAULT_WORKLOAD


def add_parser(sub: SubParsers[Any]) -> None:
    """Add ``topics`` and its action ``provision``."""
    tsub = add_group(sub, "topics", cmd_topics, "topics_command",
                     help="provision topics for a workload and profiles",
                     description="Topic administration.")
    prov = tsub.add_parser("provision", help="create or align topics (idempotent)",
                           description="Create the topic of each (workload, profile) pair with the "
                           "profile's partitions, replication factor and topic configs; existing "
                           "topics are altered where Kafka allows it. Kafka 0.9 goes through "
                           "ZooKeeper with Kafka's own TopicCommand.")
    prov.add_argument("--workload", default=DEFAULT_WORKLOAD, help=f"workload name or YAML path (default {DEFAULT_WORKLOAD})")
    prov.add_argument("--profile", type=csv_list, default=None, help="profile name(s), comma-separated (default: the workload's)")
    add_json_option(prov, "print each topic's outcome in one JSON document")
    add_cluster_option(prov)


def cmd_topics(args: argparse.Namespace) -> int:
    """Provision the topics; one line (or one JSON entry) per topic."""
    from kafkalab.cluster.flavors import load_descriptor
    from kafkalab.config import load_profile, load_workload
    from kafkalab.paths import default_descriptor_path
    from kafkalab.runner import topic_specs
    from kafkalab.topics import provision_topics

    w = load_workload(args.workload)
    profiles = [load_profile(n) for n in (args.profile or w.profiles)]
    d = load_descriptor(args.cluster or default_descriptor_path())
    outcomes = list(provision_topics(d, topic_specs(w, profiles), progress=err))
    if args.json:
        say_json({"topics": outcomes})
        return 0
    for outcome in outcomes:
        say(f"{outcome['topic']}: {outcome['action']}" + (f" ({outcome['detail']})" if outcome.get("detail") else ""))
    return 0


__all__ = ["add_parser", "cmd_topics"]
