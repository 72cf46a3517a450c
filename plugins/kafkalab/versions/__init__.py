"""The broker-version matrix: "does upgrading make us slower?" (issue 27 §4).

One workload runs on every Kafka version asked for, alternating, each round on fresh
clusters (:mod:`kafkalab.versions.matrix`); the verdict compares every version with the
first, series by series: the change of the median over the rounds with its 95 % interval,
and the drift rule's verdict (:mod:`kafkalab.versions.verdict`). What a matrix asks for is
validated once, in :mod:`kafkalab.versions.spec`.
"""
