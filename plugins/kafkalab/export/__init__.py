"""Exports of the lab's results for other tools.

| module | role |
|---|---|
| :mod:`kafkalab.export.prometheus` | a Prometheus text file for node_exporter's textfile collector (``kafkalab export prometheus``, the nightly DAG) |

The metrics and their labels are documented in ``docs/prometheus.md``.
"""
