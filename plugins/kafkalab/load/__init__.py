"""The load engine: open-loop fixed-rate producing, HYDRA fan-out to N consumers, consumer
lag over time, and the maximum sustainable rate (docs/load.md).

* :mod:`.spec` — what a cell measures, load workloads, the client budget;
* :mod:`.producer` — the open-loop producer and its per-message outcomes;
* :mod:`.shard` — a consumer process (start barrier, receipts, lag, drain);
* :mod:`.run` — a load run's life: validate, open, measure cell by cell, close;
* :mod:`.cell` — one cell: provision, start barrier, produce, drain, write its files;
* :mod:`.placement` — where a cell's consumer shards run, and how it waits for them;
* :mod:`.cpu` — the CPU a cell's processes, the local brokers and the host used;
* :mod:`.files` — the load samples dataset on disk;
* :mod:`.summary` — a cell's figures;
* :mod:`.maxrate` — the maximum sustainable rate search.
"""
