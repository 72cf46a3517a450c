"""``kafkalab canary``: a long-running probe of a real cluster, for on-call between the
nightlies (docs/canary.md).

One record per partition per interval into a topic of the canary's own that has a partition
led by every broker; a consumer reads every partition. Each record is judged by the lab's
definitions: produce availability (acked / attempted), consume availability (read within the
deadline / acked), lost, duplicated and late, and e2e latency from the record's *intended*
send time, so that a stalled producer shows. Everything is per partition and per the broker
that led the partition when the record was sent, live on a Prometheus endpoint.

Modules, from the bottom up:

* :mod:`~kafkalab.canary.spec`: the settings, validated once (:class:`CanarySpec`);
* :mod:`~kafkalab.canary.book`: the pure accounting of records (no I/O, no clock of its
  own): what each record became, and which measurements crossed a leader change;
* :mod:`~kafkalab.canary.metrics`: the Prometheus registry, the interval HdrHistogram log
  and ``summary.json``;
* :mod:`~kafkalab.canary.topic`: the canary topic, created or checked, a partition added for
  a broker that leads none;
* :mod:`~kafkalab.canary.engine`: the process: producer, consumer thread, schedule, signals.
"""
