"""Kafka Latency Lab: measure how fast and how safely Apache Kafka moves data."""

__version__ = "0.1.0"
