"""Clusters: the descriptor (how to reach one) and the embedded lab cluster (kafka09 / noida)."""

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
    restart_broker,
)

__all__ = [
    "ClusterDescriptor",
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
    "restart_broker",
    "save_descriptor",
]
