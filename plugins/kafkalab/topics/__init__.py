"""Topics on the lab clusters: what a profile wants (:class:`TopicSpec`) and making the
cluster match it (idempotent).

| module | role |
|---|---|
| :mod:`~kafkalab.topics.model` | TopicSpec, ExistingTopic, the backend protocol |
| :mod:`~kafkalab.topics.api` | provision_topics, describe_topic, delete_topics |
| :mod:`~kafkalab.topics.legacy` | Kafka 0.9 (``legacy-0.9``): TopicCommand via ZooKeeper |
| :mod:`~kafkalab.topics.topic_command` | running TopicCommand and parsing its output |
| :mod:`~kafkalab.topics.modern` | modern clusters: the confluent-kafka AdminClient |
| :mod:`~kafkalab.topics.metadata` | topic metadata, waiting for partition leaders |
"""

from kafkalab.topics.api import delete_topics, describe_topic, provision_topics
from kafkalab.topics.model import TopicSpec

__all__ = ["TopicSpec", "delete_topics", "describe_topic", "provision_topics"]
