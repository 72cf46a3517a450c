"""Broker faults: durability and availability under a killed, stopped or frozen broker
(seeds 002 and 004). How it works and every definition: docs/faults.md.

| module | role |
|---|---|
| :mod:`~kafkalab.faults.spec` | one trial: profile, fault, rate, timeline (validated once) |
| :mod:`~kafkalab.faults.inject` | the 3-broker fault cluster, the target, breaking and healing |
| :mod:`~kafkalab.faults.monitor` | leader/ISR timeline every 100 ms (read where the cluster's flavor says: :mod:`kafkalab.cluster.partitions`) |
| :mod:`~kafkalab.faults.checker` | re-read from offset 0, verdicts, DumpLogSegments lookup |
| :mod:`~kafkalab.faults.summary` | counts and the availability window |
| :mod:`~kafkalab.faults.engine` | runs: start, trial, finish |
| :mod:`~kafkalab.faults.files` | the fault samples on disk |
"""
