"""Flavor ``external``: a cluster the lab did not start and never signals, reached through a
user's descriptor (docs/metrics-schema.md, "Cluster descriptor").

What it can do follows from the descriptor: its ``protocol`` (``legacy-0.9`` for a Kafka
0.9 broker, ``modern`` for anything newer) and its ``version`` (each feature needs the
release that brought it; :func:`kafkalab.cluster.features.kafka_features`).
"""

from __future__ import annotations

from kafkalab.cluster.flavors.base import Flavor

__all__ = ["FLAVOR", "External"]


class External(Flavor):
    """A user's cluster, described by a descriptor file; never started or stopped here."""

    name = "external"
    label = "a cluster of yours (external descriptor)"


FLAVOR = External()
"""The registry's entry (:data:`kafkalab.cluster.flavors.FLAVORS`)."""
