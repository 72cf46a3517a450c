"""Start-up runs: where a new consumer's first-message delay goes (seed 000), on real Kafka.

One module per role: :mod:`~kafkalab.startup.spec` (the settings and the cases they make),
:mod:`~kafkalab.startup.probe` (one probe: consumers timed from their construction to their
first record), :mod:`~kafkalab.startup.engine` (the run: its own clusters, cold and warm
probes), :mod:`~kafkalab.startup.files` (``probes.parquet`` and ``run.json``); the figures per case,
the answer and the table are :mod:`kafkalab.startup_figures` (shared with the report). The
CLI is ``kafkalab startup run``; docs/first-message.md explains every figure.
"""
