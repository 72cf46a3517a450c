"""The scenarios of seed 000 behind one interface.

- ``catalog.py``: the one list of scenarios (names, clients, capabilities) and
  ``get_scenario``; cheap to import, safe at DAG-parse time;
- ``base.py``: the interface (:class:`~kafkalab.scenarios.base.Scenario`), the cell, and the
  closed loop's book-keeping (``Tracker``);
- ``kafka_client.py``: what the two Kafka client scenarios share;
- one module per scenario: ``rest.py`` (with ``http_server.py``), ``kafka_python.py``,
  ``confluent.py``, ``jvm_e2e.py``.
"""
