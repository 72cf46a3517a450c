"""Clusters: how to reach one (the descriptor, the admin client), what it can do (its
flavor's features), and the embedded lab cluster.

| module | role |
|---|---|
| :mod:`~kafkalab.cluster.descriptor` | the descriptor model, client configurations from it |
| :mod:`~kafkalab.cluster.flavors` | the broker flavors (one class each), loading a descriptor |
| :mod:`~kafkalab.cluster.features` | what a cluster can do (capabilities, Kafka's tools) |
| :mod:`~kafkalab.cluster.admin` | the one way to reach a cluster's admin API |
| :mod:`~kafkalab.cluster.partitions` | partition leadership and the ISR (ZooKeeper or the Admin API) |
| :mod:`~kafkalab.cluster.embedded` | ``cluster up`` / ``status`` / ``down``, ``kill_broker``, a running cluster |
| :mod:`~kafkalab.cluster.state`, :mod:`~kafkalab.cluster.processes`, :mod:`~kafkalab.cluster.readiness` | its state file, processes, readiness |
| :mod:`~kafkalab.cluster.zookeeper`, :mod:`~kafkalab.cluster.zk_reader` | ZooKeeper: four-letter words, a read-only session |
| :mod:`~kafkalab.cluster.java` | the ``java`` every JVM the lab starts needs |
"""

from kafkalab.cluster.admin import admin_client, check_reachable
from kafkalab.cluster.descriptor import (
    ClusterDescriptor,
    jvm_classpath,
    kafka_python_config,
    librdkafka_config,
    public_view,
    save_descriptor,
)
from kafkalab.cluster.embedded import (
    cluster_down,
    cluster_status,
    cluster_up,
    kill_broker,
)
from kafkalab.cluster.flavors import flavor_of, get_flavor, load_descriptor
from kafkalab.cluster.java import ensure_java

__all__ = [
    "ClusterDescriptor",
    "admin_client",
    "check_reachable",
    "cluster_down",
    "cluster_status",
    "cluster_up",
    "ensure_java",
    "flavor_of",
    "get_flavor",
    "jvm_classpath",
    "kafka_python_config",
    "kill_broker",
    "librdkafka_config",
    "load_descriptor",
    "public_view",
    "save_descriptor",
]
