"""The DAGs' trigger forms: their params, typed and enum-validated, built from the choices
of :mod:`kafkalab.airflow.params` (which the tasks re-validate against the lab's own lists).

Each builder returns ``{name: Param}`` for a DAG's ``params``: :func:`run_params` (a latency
run), :func:`load_params` (a load run), :func:`fault_params` (a fault run) and
:func:`startup_params` (a start-up run) and :func:`nightly_switch_params` (the nightly's
fan-out cell and fault trial). Cheap at DAG-parse
time: no file, network or database access.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import Param

from kafkalab.airflow.fault_tasks import NIGHTLY_FAULT_PARAM
from kafkalab.airflow.load_tasks import NIGHTLY_FANOUT_PARAM
from kafkalab.airflow.params import (
    ACKS_CHOICES,
    CHOICE_LABELS,
    COMMIT_CHOICES,
    CONSUMER_MODE_CHOICES,
    FAULT_CHOICES,
    GROUP_PROTOCOL_CHOICES,
    IDEMPOTENCE_CHOICES,
    LATENCY_CONSUMER_MODES,
    LOAD_CLIENT_CHOICES,
    PAYLOAD_CHOICES,
    PROFILE_CHOICES,
    REBALANCE_CHOICES,
    SCENARIO_CHOICES,
    SHARD_PLACEMENT_CHOICES,
    STARTUP_CLIENT_CHOICES,
    STARTUP_FLAVOR_CHOICES,
    WORKLOAD_CHOICES,
)
from kafkalab.airflow.tasks import ONE_SESSION_PARAM
from kafkalab.airflow.version_tasks import (
    NIGHTLY_MATRIX_PARAM,
    NIGHTLY_MATRIX_PORTS_PARAM,
    NIGHTLY_MATRIX_ROUNDS_PARAM,
)
from kafkalab.config.models import MAX_FIRST_MESSAGE_PROBES, MAX_MESSAGES, MAX_WARMUP_MESSAGES
from kafkalab.faults.spec import MAX_TRIALS
from kafkalab.load.spec import (
    MAX_CONSUMERS,
    MAX_DURATION_S,
    MAX_GRID_VALUES,
    MAX_RATE_MSGS_PER_S,
    MAX_TXN_MSGS,
)
from kafkalab.startup import spec as startup_spec
from kafkalab.versions.spec import DEFAULT_BASE_PORT as DEFAULT_MATRIX_BASE_PORT
from kafkalab.versions.spec import DEFAULT_CONTROL_PORT as DEFAULT_MATRIX_CONTROL_PORT
from kafkalab.versions.spec import MAX_ROUNDS


def _labels(name: str) -> dict[str, str]:
    """The form's ``values_display`` of the choice param ``name`` (readable labels; the
    value sent stays the name)."""
    return dict(CHOICE_LABELS[name])


def _multi_select(name: str, default: list[str], choices: tuple[str, ...], title: str,
                  description: str, min_items: int = 0) -> Param:
    """An array param of ``choices`` with readable labels, shown as a multi-select
    (``examples``), validated by ``items.enum``; at least ``min_items`` values."""
    at_least: dict[str, Any] = {"minItems": min_items} if min_items else {}
    return Param(list(default), type="array", title=title,
                 items={"type": "string", "enum": list(choices)}, examples=list(choices),
                 **at_least, uniqueItems=True, values_display=_labels(name),
                 description=description)


def _array_param(name: str, default: list[str], choices: tuple[str, ...], title: str,
                 what: str) -> Param:
    return _multi_select(name, default, choices, title,
                         f"{what}; leave empty to use the workload's.")


def _cluster_descriptor_param() -> Param:
    return Param(None, type=["null", "string"], title="Cluster descriptor",
                 description="path of a cluster descriptor YAML; empty: the "
                 "kafkalab_cluster connection's extra.descriptor_path, else "
                 ".lab/cluster.yaml")


def run_params(*, workload: str, scenarios: list[str], payloads: list[str], profiles: list[str],
               messages: int | None) -> dict[str, Param]:
    """The params (shown as the trigger form) of a latency run."""
    return {
        "workload": Param(workload, type="string", title="Workload",
                          enum=list(WORKLOAD_CHOICES), values_display=_labels("workload"),
                          description="a workload of include/workloads/ (the last ones are "
                          "former names); a YAML file of your own: `kafkalab run --workload "
                          "PATH`"),
        "scenarios": _array_param("scenarios", scenarios, SCENARIO_CHOICES, "Scenarios",
                                  "clients to compare"),
        "payloads": _array_param("payloads", payloads, PAYLOAD_CHOICES, "Payloads",
                                 "message sizes"),
        "profiles": _array_param("profiles", profiles, PROFILE_CHOICES, "Profiles",
                                 "client/topic tuning profiles (include/profiles)"),
        "messages": Param(messages, type=["null", "integer"] if messages is None else "integer",
                          minimum=1, maximum=MAX_MESSAGES, title="Messages per cell",
                          description="measured messages per cell, after warm-up"
                          + ("; empty: the workload's" if messages is None else "")),
        "warmup_messages": Param(None, type=["null", "integer"], minimum=0,
                                 maximum=MAX_WARMUP_MESSAGES, title="Warm-up messages per cell",
                                 description="messages each cell sends first and leaves out "
                                 "of every figure (the connection and the JIT warm up); "
                                 "empty: the workload's warmup_messages"),
        "first_message_probes": Param(None, type=["null", "integer"], minimum=0,
                                      maximum=MAX_FIRST_MESSAGE_PROBES,
                                      title="First-message probes per client cell",
                                      description="how many times each Kafka client cell "
                                      "starts a fresh consumer (subscribe and assign) and "
                                      "times its first record; each subscribe probe waits "
                                      "the broker's group.initial.rebalance.delay.ms; empty: "
                                      "the workload's first_message_probes"),
        "consumer_mode": Param(None, type=["null", "string"],
                               enum=[None, *LATENCY_CONSUMER_MODES],
                               title="Measuring consumer",
                               description="how the closed loop's consumer gets its "
                               "partition: subscribe (joins a new group: each cell waits the "
                               "broker's group.initial.rebalance.delay.ms before its first "
                               "message) or assign (by hand, no group); the first-message "
                               "probes time both either way; empty: the workload's "
                               "consumer_mode"),
        "cluster_descriptor": _cluster_descriptor_param(),
        ONE_SESSION_PARAM: _one_session_param("aggregate_metrics", "validate_metrics"),
    }


def _one_session_param(aggregation: str, validation: str) -> Param:
    return Param(False, type="boolean", title="One Spark session",
                 description=f"{aggregation} also validates the run in its own spark-submit "
                 f"(one JVM start instead of two); {validation} then judges that result")


def _number(value: Any, title: str, what: str, minimum: float = 0,
            nullable: bool = False, maximum: float | None = None) -> Param:
    bound: dict[str, Any] = {} if maximum is None else {"maximum": maximum}
    return Param(value, type=["null", "number"] if nullable else "number",
                 minimum=minimum, title=title, description=what, **bound)


CONSUMER_OR_NO_FAULT = ("none", "kill-consumer", "leave-consumer", "cut-consumer")
"""Faults a version matrix's fault trials leave out (its trials break brokers)."""


def version_params(*, versions: list[str], rounds: int, rate_msgs_per_s: float,
                   duration_s: float) -> dict[str, Param]:
    """The params (the trigger form) of a version matrix: the versions (the baseline first),
    the rounds, the one load cell every version runs and the first-message trials before it."""
    # free text: the pinned releases are files of the package, not read at DAG-parse time;
    # run_matrix refuses one no flavor runs, naming those it does
    return {
        "versions": Param(list(versions), type="array", title="Kafka versions",
                          items={"type": "string", "pattern": r"^\d+\.\d+\.\d+$"},
                          minItems=2, maxItems=6, uniqueItems=True,
                          description="the releases to compare, the baseline first (every "
                          "other is judged against it): a pinned Kafka 4.x release (4.1.2, "
                          "4.4.0) or 0.9.0.1, the legacy point"),
        "rounds": Param(rounds, type="integer", minimum=1, maximum=MAX_ROUNDS, title="Rounds",
                        description="fresh-cluster rounds per version, alternating the order "
                        "(the drift rule's baseline needs 3)"),
        "rate_msgs_per_s": _number(rate_msgs_per_s, "Rate (msg/s)", "the producer's target "
                                   "rate", maximum=MAX_RATE_MSGS_PER_S),
        "duration_s": _number(duration_s, "Duration (s)", "producing time per round, warm-up "
                              "included", maximum=MAX_DURATION_S),
        "warmup_s": _number(2.0, "Warm-up (s)", "first seconds of a round, excluded from every "
                            "figure", maximum=MAX_DURATION_S),
        "consumers": Param(1, type="integer", minimum=1, maximum=MAX_CONSUMERS,
                           title="Consumers"),
        "acks": Param(None, type=["null", "string"], enum=[None, *ACKS_CHOICES], title="Acks",
                      description="the producer's acks (empty: the profile's)"),
        "payload": Param("1kb", type="string", enum=list(PAYLOAD_CHOICES), title="Payload",
                         values_display=_labels("payload")),
        "profile": Param("default", type="string", enum=list(PROFILE_CHOICES), title="Profile",
                         values_display=_labels("profile")),
        "client": Param("confluent-kafka", type="string", enum=list(LOAD_CLIENT_CHOICES),
                        title="Client"),
        "startup_trials": Param(1, type="integer", minimum=0, maximum=10,
                                title="First-message trials",
                                description="trials of every start-up case each round, before "
                                "the load cell (0: no first-message delay in the matrix)"),
        "startup_protocols": Param(["classic", "consumer"], type="array",
                                   title="First-message group protocols",
                                   items={"type": "string", "enum": ["classic", "consumer"]},
                                   minItems=1, uniqueItems=True,
                                   description="group.protocol of the subscribe cases (consumer: "
                                   "KIP-848, where the broker and the client speak it)"),
        "max_rate": Param(False, type="boolean", title="Maximum rate",
                          description="also search the maximum sustainable rate each round, "
                          "after the cell on its cluster (kafkalab maxrate's search: minutes a "
                          "round)"),
        "max_rate_objective_ms": _number(100.0, "Maximum-rate objective (ms)", "a search step "
                                         "passes only with e2e p99 under this",
                                         maximum=60_000.0),
        "fault_trials": Param(0, type="integer", minimum=0, maximum=10, title="Fault trials",
                              description="broker-fault trials each round, last, on a fresh "
                              "3-broker cluster of the version (0: none)"),
        "fault": Param("sigkill-leader", type="string",
                       enum=[f for f in FAULT_CHOICES if f not in CONSUMER_OR_NO_FAULT],
                       title="Fault", description="the broker fault of those trials"),
        "fault_profile": Param("durability", type="string", enum=list(PROFILE_CHOICES),
                               title="Fault profile", values_display=_labels("profile")),
        "base_port": Param(DEFAULT_MATRIX_BASE_PORT, type="integer", minimum=1024,
                           maximum=65000, title="Broker port",
                           description="the matrix clusters' broker port (one runs at a time)"),
        "control_port": Param(DEFAULT_MATRIX_CONTROL_PORT, type="integer", minimum=1024,
                              maximum=65000, title="Controller port",
                              description="their KRaft controller (or ZooKeeper) port"),
    }


def txn_params(*, broker_faults: bool = False) -> dict[str, Param]:
    """The transaction params of the load and the fault forms: ``txn_msgs`` (records per
    transaction, a cell each; 0 the plain producer) and ``txn_abort_every``."""
    which = " (broker faults)" if broker_faults else ""
    return {
        "txn_msgs": Param([], type="array", title=f"Records per transaction{which}",
                          items={"type": "integer", "minimum": 0, "maximum": MAX_TXN_MSGS},
                          maxItems=MAX_GRID_VALUES, uniqueItems=True,
                          description="the producer sends in transactions of this many records "
                          "and the consumers read read_committed, one cell each; 0: the plain "
                          "producer; empty: no transactions (needs acks=all)"),
        "txn_abort_every": Param(None, type=["null", "integer"], minimum=2, maximum=1000,
                                 title=f"Abort every k-th transaction{which}",
                                 description="abort every k-th transaction after its records "
                                 "are written: no read_committed reader may see them (empty: "
                                 "commit every one)"),
    }


def load_params(*, consumers: list[int], rates: list[float], duration_s: float,
                warmup_s: float) -> dict[str, Param]:
    """The params (the trigger form) of a load run: the grid consumers × rates × acks and
    the settings every cell shares."""
    return {
        "consumers": Param(list(consumers), type="array", title="Consumers",
                           items={"type": "integer", "minimum": 1, "maximum": MAX_CONSUMERS},
                           minItems=1, maxItems=MAX_GRID_VALUES, uniqueItems=True,
                           description="numbers of consumers, one cell each (× rates × acks); "
                           "every consumer receives every message"),
        "rates": Param(list(rates), type="array", title="Rates (msg/s)",
                       items={"type": "number", "exclusiveMinimum": 0,
                              "maximum": MAX_RATE_MSGS_PER_S},
                       minItems=1, maxItems=MAX_GRID_VALUES, uniqueItems=True,
                       description="target producer rates, one cell each"),
        "acks": _multi_select("acks", ["1"], ACKS_CHOICES, "Acks",
                              "producer acks, one cell each; empty: the profile's"),
        "duration_s": _number(duration_s, "Duration (s)", "producing time per cell, warm-up "
                              "included", maximum=MAX_DURATION_S),
        "warmup_s": _number(warmup_s, "Warm-up (s)", "first seconds of a cell, measured but "
                            "excluded from every figure", maximum=MAX_DURATION_S),
        "payload": Param("1kb", type="string", enum=list(PAYLOAD_CHOICES), title="Payload",
                         values_display=_labels("payload")),
        "profile": Param("default", type="string", enum=list(PROFILE_CHOICES), title="Profile",
                         values_display=_labels("profile"),
                         description="client/topic tuning (include/profiles)"),
        "client": Param("confluent-kafka", type="string", enum=list(LOAD_CLIENT_CHOICES),
                        title="Client"),
        "partitions": Param(1, type="integer", minimum=1, maximum=64, title="Partitions"),
        "consumer_mode": Param("assign", type="string", enum=list(CONSUMER_MODE_CHOICES),
                               title="Consumer mode", values_display=_labels("consumer_mode"),
                               description="assign: every partition, no group; group: one "
                               "consumer group per consumer"),
        "consumers_per_shard": Param(10, type="integer", minimum=1, maximum=200,
                                     title="Consumers per shard",
                                     description="consumers per consumer process (shard); a "
                                     "cell has ceil(consumers / this) shards"),
        "shard_placement": Param("subprocess", type="string",
                                 enum=list(SHARD_PLACEMENT_CHOICES), title="Shard placement",
                                 values_display=_labels("shard_placement"),
                                 description="subprocess: a cell's shards are processes of "
                                 "its task; tasks: each shard is a consume_load_shard task, "
                                 "spread over the workers (needs a running scheduler and a "
                                 "data directory shared by the workers)"),
        **txn_params(),
        "link_delay_ms": Param([], type="array", title="Replication link delays (ms, one way)",
                               items={"type": "integer", "minimum": 0, "maximum": 10_000},
                               maxItems=MAX_GRID_VALUES, uniqueItems=True,
                               description="one-way delay put on every replication link "
                               "between the nodes while a cell measures, one cell each (0: "
                               "the proxied links as they are): what a replica in another "
                               "zone costs. Needs a cluster started with `kafkalab cluster up "
                               "--brokers 3 --links` and a profile with replicas; empty: the "
                               "links are not touched"),
        "client_link_delay_ms": Param([], type="array",
                                      title="Clients' delay to the far nodes (ms, one way)",
                                      items={"type": "integer", "minimum": 0, "maximum": 10_000},
                                      maxItems=MAX_GRID_VALUES, uniqueItems=True,
                                      description="the clients sit beside one follower; their "
                                      "links to every other node get this delay, one cell each "
                                      "(a cluster with links; empty: untouched)"),
        "fetch_from": Param([], type="array", title="Consumers read from",
                            items={"type": "string", "enum": ["leader", "follower"]},
                            maxItems=2, uniqueItems=True,
                            description="leader and/or follower, one cell each: follower names "
                            "the near follower's rack (client.rack) so the consumers read from "
                            "it (KIP-392); needs the clients' delay; empty: the leader"),
        "thin_consumer": Param(None, type=["null", "integer"], minimum=0,
                               maximum=MAX_CONSUMERS - 1, title="Thin consumer",
                               description="HYDRA on a thin pipe: this consumer (0-based) "
                               "gets links of its own (a cluster started with --links), "
                               "limited and/or delayed below while the others keep the shared "
                               "links; empty: none"),
        "thin_link_kbps": Param(None, type=["null", "integer"], minimum=1, maximum=10_000_000,
                                title="Thin link bandwidth (KB/s)",
                                description="the thin consumer's link carries at most this "
                                "many KB/s each way; empty: no limit"),
        "thin_link_delay_ms": Param(None, type=["null", "integer"], minimum=1, maximum=10_000,
                                    title="Thin link delay (ms, one way)",
                                    description="the thin consumer's link is delayed this "
                                    "many whole ms one way; empty: no delay"),
        "pause_at_s": _number(None, "Pause at (s)", "consumers pause this many seconds after "
                              "the start (empty: no pause)", nullable=True,
                              maximum=MAX_DURATION_S),
        "pause_for_s": _number(None, "Pause for (s)", "how long the consumers stay paused",
                               nullable=True, maximum=MAX_DURATION_S),
        "cluster_descriptor": _cluster_descriptor_param(),
        ONE_SESSION_PARAM: _one_session_param("aggregate_load", "validate_load"),
    }


def fault_params(*, profiles: list[str], faults: list[str], trials: int,
                 rate_msgs_per_s: float, duration_s: float | None) -> dict[str, Param]:
    """The params (the trigger form) of a fault run: profiles × faults × acks × clients ×
    idempotence, each cell
    ``trials`` times, at one rate and duration (``duration_s`` None: empty in the form, the
    planner's default, as ``kafkalab faults run`` without ``--duration``)."""
    return {
        "profiles": _multi_select("profiles", profiles, PROFILE_CHOICES, "Profiles",
                                  "client/topic profiles (include/profiles), one cell each "
                                  "(× faults × acks)", min_items=1),
        "faults": _multi_select("faults", faults, FAULT_CHOICES, "Faults",
                                "faults to inject (none: the no-fault control), one cell "
                                "each; see docs/faults.md", min_items=1),
        "acks": _multi_select("acks", [], ACKS_CHOICES, "Acks",
                              "producer acks, one cell each; empty: the profile's"),
        "trials": Param(trials, type="integer", minimum=1, maximum=MAX_TRIALS,
                        title="Trials per cell",
                        description="trials of every profile × fault × acks cell (the report "
                        "shows median and max)"),
        "rate_msgs_per_s": Param(rate_msgs_per_s, type="number", exclusiveMinimum=0,
                                 maximum=20_000, title="Rate (msg/s)",
                                 description="the producer's fixed target rate"),
        "duration_s": Param(duration_s, type=["null", "number"] if duration_s is None else "number",
                            exclusiveMinimum=0, maximum=3600, title="Duration (s)",
                            description="producing time per trial, warm-up included; the fault "
                            "starts at 6 s and the trial must go on ≥ 4 s after the heal "
                            "(a kill-consumer ≥ 6 s after the session timeout, a cut-consumer "
                            "≥ 6 s after its heal); empty: 20 s, for a consumer fault at least "
                            "6 s past the session timeout (a cut's heal) and the rejoin"),
        "clients": _multi_select("clients", [], LOAD_CLIENT_CHOICES, "Clients",
                                 "the producer's (and a consumer fault's members') client, one "
                                 "cell each; empty: confluent-kafka"),
        "idempotence": _multi_select("idempotence", [], IDEMPOTENCE_CHOICES, "Idempotence",
                                     "the producer's enable.idempotence, one cell each; empty: "
                                     "the profile's (durability: on; the others: off)"),
        "commits": _multi_select("commits", ["after"], COMMIT_CHOICES,
                                 "Commit strategies (consumer faults)",
                                 "for the consumer faults (kill-, leave-, cut-consumer), one "
                                 "cell each: auto "
                                 "(the client's auto commit), after processing "
                                 "(at-least-once), before it (at-most-once); see "
                                 "docs/consumer-faults.md"),
        "static_membership": _multi_select(
            "static_membership", [], IDEMPOTENCE_CHOICES, "Static membership (consumer faults)",
            "on: each member has a group.instance.id (KIP-345) kept when it comes back, so a "
            "return within the session timeout causes no rebalance; off: dynamic; one cell "
            "each; empty: off"),
        "rebalance": _multi_select(
            "rebalance", [], REBALANCE_CHOICES, "Rebalance protocol (consumer faults)",
            "how the group rebalances, one cell each: eager (classic, range), cooperative "
            "(classic, cooperative-sticky), consumer (KIP-848, confluent-kafka only); the "
            "session timeout and heartbeat are the same under each; empty: the clients' "
            "default, eager"),
        **txn_params(broker_faults=True),
        "consumers": Param(3, type="integer", minimum=2, maximum=12,
                           title="Group members (consumer faults)",
                           description="members of the consumer group, one process each; the "
                           "topic gets two partitions per member"),
        "session_timeout_ms": Param(None, type=["null", "integer"], minimum=1000, maximum=30000,
                                    title="Session timeout ms (consumer faults)",
                                    description="the members' session.timeout.ms (empty: the "
                                    "profile's); a kill is noticed only when it runs out"),
    }


def startup_params(*, clients: list[str], delays_ms: list[int], protocols: list[str],
                   members: list[int], trials: int) -> dict[str, Param]:
    """The params (the trigger form) of a start-up run: what ``kafkalab startup run`` takes
    (:class:`kafkalab.startup.spec.StartupSpec`), and the start-up cluster's two ports."""
    def ints(default: list[int], title: str, maximum: int, description: str) -> Param:
        return Param(list(default), type="array", title=title, minItems=1, uniqueItems=True,
                     items={"type": "integer", "minimum": 0, "maximum": maximum},
                     description=description)

    def port(default: int, title: str, what: str) -> Param:
        return Param(default, type="integer", minimum=1024, maximum=65000, title=title,
                     description=f"{what} of the start-up cluster (its own, started fresh and "
                     "wiped by the run on the worker that runs run_startup); change it when "
                     "the default is taken there")

    return {
        "clients": _multi_select("clients", clients, STARTUP_CLIENT_CHOICES, "Clients",
                                 "the consumers timed, every case each", min_items=1),
        "delays_ms": ints(delays_ms, "Broker rebalance delays (ms)", startup_spec.MAX_DELAY_MS,
                          "the broker's group.initial.rebalance.delay.ms, a cluster each "
                          "(Kafka's default 3000; its sample configs set 0)"),
        "protocols": _multi_select("protocols", protocols, GROUP_PROTOCOL_CHOICES,
                                   "Group protocols", "group.protocol of the subscribe cases "
                                   "(kafka-python has no consumer protocol: listed as not "
                                   "measured)", min_items=1),
        "members": Param(list(members), type="array", title="Members", minItems=1,
                         uniqueItems=True,
                         items={"type": "integer", "minimum": 1,
                                "maximum": startup_spec.MAX_MEMBERS},
                         description="consumers of one new group started at once, a case each"),
        "trials": Param(trials, type="integer", minimum=1, maximum=startup_spec.MAX_TRIALS,
                        title="Trials per case", description="probes of every case (a cold "
                        "probe starts a fresh cluster: ~10 s each)"),
        "timeout_s": Param(30.0, type="number", minimum=1, maximum=600, title="Probe timeout (s)",
                           description="how long a consumer waits for its first record "
                           "before its probe counts as timed out"),
        "flavor": Param(STARTUP_FLAVOR_CHOICES[0], type="string",
                        enum=list(STARTUP_FLAVOR_CHOICES), title="Broker",
                        values_display=_labels("flavor"),
                        description="the broker of the run's own cluster: Kafka 4.x (KRaft), "
                        "or Kafka 0.9.0.1 for contrast (no initial rebalance delay: delays "
                        "[0] only; no consumer protocol: listed as not measured)"),
        "base_port": port(startup_spec.DEFAULT_BASE_PORT, "Broker port", "the broker port"),
        "control_port": port(startup_spec.DEFAULT_CONTROL_PORT, "Controller port",
                             "the KRaft controller port"),
    }


def nightly_switch_params() -> dict[str, Param]:
    """The nightly's switches for its fan-out cell and its fault trial (both on by default;
    ``make demo`` turns both off), and the versions of its version matrix (none by default)."""
    return {
        NIGHTLY_FANOUT_PARAM: Param(
            True, type="boolean", title="Fan-out cell",
            description="one load cell (5 consumers × 200 msg/s × 10 s, "
            "include/workloads/nightly-fanout.yaml) as a load run of its own "
            "(nightly-fanout-<time>); false: not run"),
        NIGHTLY_FAULT_PARAM: Param(
            True, type="boolean", title="Fault trial",
            description="one SIGKILL-leader trial of the durability profile on the 3-broker "
            "fault cluster, as a fault run of its own (nightly-faults-<time>); false: not run"),
        NIGHTLY_MATRIX_PARAM: Param(
            [], type="array", title="Version matrix",
            items={"type": "string", "pattern": r"^\d+\.\d+\.\d+$"}, maxItems=6,
            uniqueItems=True,
            description="Kafka versions to compare after the night's runs, the baseline first "
            "(e.g. 4.1.2, 4.4.0; 0.9.0.1 the legacy point): one load cell and one first-message "
            "trial a round on fresh clusters (nightly-versions-<time>), judged against the "
            "first; a regression fails the night. Empty: no matrix"),
        NIGHTLY_MATRIX_ROUNDS_PARAM: Param(
            3, type="integer", minimum=1, maximum=MAX_ROUNDS, title="Version matrix rounds",
            description="rounds per version (the drift rule's baseline needs 3)"),
        NIGHTLY_MATRIX_PORTS_PARAM: Param(
            [DEFAULT_MATRIX_BASE_PORT, DEFAULT_MATRIX_CONTROL_PORT], type="array",
            title="Version matrix ports", minItems=2, maxItems=2,
            items={"type": "integer", "minimum": 1024, "maximum": 65000},
            description="[broker port, controller port] of the matrix's clusters (one runs at "
            "a time)"),
    }


__all__ = ["fault_params", "load_params", "nightly_switch_params", "run_params",
           "startup_params"]
