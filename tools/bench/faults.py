"""Part (g) of ``make bench``: consumer faults and ordering under a leader failover (seed 002).

* **(g1) the consumer group**: for each client, ``kill-consumer`` and ``leave-consumer`` ×
  commit ``after``, ``before``, ``auto``: the rebalance pause (death → the successor's first
  record), what was processed twice or never, and what the offsets at the death predicted.
  One group of 3 members, 6 partitions, 200 msg/s, session timeout 6 s, heartbeat 2 s, auto
  commit every 5 s (the clients' default); then kill-consumer/after with session timeouts of 3 s
  and 12 s (heartbeat a third), the setting that drives a kill's pause.
* **(g2) ordering**: ``sigkill-leader`` under the durability profile (retries 1) with
  ``max.in.flight.requests.per.connection`` 1 and 5, per client, ``order_trials`` each, 2
  partitions at 1,000 msg/s: reordered and duplicated messages counted by the checker.

These are measurements of Kafka's behaviour, not of the lab's speed: the figures to compare
are the ratios (kill vs leave; 1 vs 5 in flight), one run each.

Both run on a 3-node fault cluster of the part's own (:data:`kafkalab.cluster.flavors.
FAULT_CLUSTER`, in ``<work>/cluster``, brokers on ports 32492-32494, controllers from 26981),
started here and stopped, data wiped, whatever happens: never the user's fault cluster in
``<lab>/faults`` nor its ports. The result names that cluster's flavor and Kafka version
(``cluster``), as every bench figure must.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kafkalab.cluster import cluster_down, cluster_up
from kafkalab.cluster.flavors import FAULT_CLUSTER
from kafkalab.faults.engine import FaultRequest, execute_faults
from kafkalab.faults.inject import FAULT_BROKERS
from kafkalab.faults.spec import FaultTrialSpec
from tools.bench import cluster_facts

BENCH_FAULTS_BASE_PORT = 32492
"""The part's fault cluster's first broker port (three brokers: 32492-32494)."""
BENCH_FAULTS_CONTROL_PORT = 26981
"""The part's fault cluster's first controller port."""

KEYS_GROUP = ("trial_id", "status", "client", "commit", "fault", "session_timeout_ms",
              "heartbeat_interval_ms", "processed_records", "redelivered", "expected_redelivered",
              "lost_unprocessed", "expected_lost", "rebalance_pause_ms", "successor_assigned_ms",
              "survivors_pause_ms", "offsets_explain", "reread_agrees", "verdict")
KEYS_ORDER = ("trial_id", "status", "client", "max_in_flight", "retries", "acked", "acked_lost",
              "duplicates", "reordered", "unavailable_ms", "errors_by_type", "verdict")


def _progress(line: str) -> None:
    print(line, file=sys.stderr)


def bench_faults(work: Path, clients: tuple[str, ...] = ("confluent-kafka", "kafka-python"),
                 order_trials: int = 2) -> dict[str, Any]:
    """Run (g1) and (g2) on the part's own fault cluster (started, then stopped and wiped);
    return the cluster's flavor and version and the trials' figures."""
    group = [FaultTrialSpec(profile="default", fault=fault, commit=commit, client=client,
                            consumers=3, partitions=6, rate_msgs_per_s=200, duration_s=18,
                            warmup_s=1, fault_at_s=4, session_timeout_ms=6000,
                            heartbeat_interval_ms=2000)
             for client in clients for fault in ("kill-consumer", "leave-consumer")
             for commit in ("after", "before", "auto")]
    # the session timeout drives a kill's pause: 3 s and 12 s beside the 6 s above
    group += [FaultTrialSpec(profile="default", fault="kill-consumer", commit="after",
                             consumers=3, partitions=6, rate_msgs_per_s=200, duration_s=24,
                             warmup_s=1, fault_at_s=4, session_timeout_ms=session,
                             heartbeat_interval_ms=session // 3, trial=2 + k)
              for k, session in enumerate((3000, 12000))]
    order = [FaultTrialSpec(profile="durability", fault="sigkill-leader", max_in_flight=mif,
                            trial=k, rate_msgs_per_s=1000, duration_s=16, warmup_s=1,
                            fault_at_s=4, partitions=2, client=client)
             for client in clients for mif in (1, 5) for k in range(1, order_trials + 1)]
    lab = work / "cluster"
    d = cluster_up(FAULT_CLUSTER.name, FAULT_BROKERS, lab, base_port=BENCH_FAULTS_BASE_PORT,
                   control_port=BENCH_FAULTS_CONTROL_PORT, progress=_progress)
    try:
        g = execute_faults(FaultRequest(trials=group, data_dir=work, cluster_lab=lab,
                                        command="make bench (g1)"), _progress)
        o = execute_faults(FaultRequest(trials=order, data_dir=work, cluster_lab=lab,
                                        command="make bench (g2)"), _progress)
    finally:
        cluster_down(lab, wipe_data=True, progress=_progress)
    return {"cluster": cluster_facts(d),
            "group": {"run_id": g.run_id, "status": g.status,
                      "trials": [{k: t.get(k) for k in KEYS_GROUP} for t in g.trials]},
            "ordering": {"run_id": o.run_id, "status": o.status,
                         "trials": [{k: t.get(k) for k in KEYS_ORDER} for t in o.trials]}}


def print_faults(result: dict[str, Any]) -> None:
    c = result["cluster"]
    print(f"\n(g1) consumer faults on {c['flavor']} {c['version']} ({c['brokers']} brokers): "
          "pause (ms), redelivered / lost (expected from the offsets)")
    for t in result["group"]["trials"]:
        print(f"  {t['client']!s:<15} {t['fault']!s:<15} {t['commit']!s:<6} session "
              f"{t['session_timeout_ms']!s:>5}  pause "
              f"{t['rebalance_pause_ms']!s:>9}  redelivered {t['redelivered']!s:>4} "
              f"({t['expected_redelivered']})  lost {t['lost_unprocessed']!s:>4} "
              f"({t['expected_lost']})  {t['verdict']}")
    print("\n(g2) sigkill-leader, durability: reordered / duplicates by max.in.flight")
    for t in result["ordering"]["trials"]:
        print(f"  {t['client']!s:<15} in-flight {t['max_in_flight']}  acked {t['acked']}  lost {t['acked_lost']}  "
              f"dup {t['duplicates']}  reordered {t['reordered']}  unavailable "
              f"{t['unavailable_ms']} ms  {t['verdict']}")
