"""Clusters: the descriptor (how to reach one), the admin client (the one way to reach its
admin API) and the embedded lab cluster (kafka09 / noida)."""

from kafkalab.cluster.admin import admin_client, check_reachable
from kafkalab.cluster.descriptor import (
    ClusterDescriptor,
    jvm_classpath,
    kafka_python_config,
    librdkafka_config,
    load_descriptor,
    public_view,
    save_descriptor,
)
from kafkalab.cluster.distribution import ensure_java, ensure_kafka_distribution
from kafkalab.cluster.embedded import (
    cluster_down,
    cluster_status,
    cluster_up,
    kill_broker,
)

__all__ = [
    "ClusterDescriptor",
    "admin_client",
    "check_reachable",
    "cluster_down",
    "cluster_status",
    "cluster_up",
    "ensure_java",
    "ensure_kafka_distribution",
    "jvm_classpath",
    "kafka_python_config",
    "kill_broker",
    "librdkafka_config",
    "load_descriptor",
    "public_view",
    "save_descriptor",
]
