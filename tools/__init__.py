"""Development tools of the Kafka Latency Lab, kept apart from the runtime package.

Run from the repository root (the root must be on ``sys.path``):

* ``python -m tools.setup_assets``: the Kafka 0.9.0.1 distribution and the payload images
  (part of ``make setup``);
* ``python -m tools.bench``: the lab's speed checks (``make bench``);
* :mod:`tools.fake_samples`: fake raw-sample rows for the Spark tests and the Spark bench.

They import ``kafkalab`` like any user of the library; nothing in ``kafkalab`` imports them.
"""
