"""Bench part (k): the demo's phases read from its own printed lines."""

from __future__ import annotations

from tools.bench.demo import DEMO_BUDGET_HERE_S, phases

LINES = [
    "Kafka Latency Lab demo; Airflow's and the tools' logs: /x/demo.log",
    "Kafka 4.4.0: 1 broker(s) at 127.0.0.1:19292 (ready in 2 s)",
    "  [rest 1mb latency] done: 12 rows",
    "run 20261128T003818Z-1123cd: complete",
    "confluent-kafka: cold cluster: 5.81 s (delay 3000 ms); …",
    "run 20261129T010625Z-01a270: complete (docs/first-message.md: every case, 5 trials, "
    "both clients)",
    "Seed 000's run → Spark aggregation, Great Expectations, drift, report (…)",
    "  validation passed (1 Spark job(s), 14 s); report /x/index.html",
    "Start-up run 20261129T010625Z-01a270 → Spark, Great Expectations: validation passed; "
    "report /x/s.html",
    "  Airflow database ready in 2 s",
    "  2026-11-18  nightly-20261118T000000Z-7f811d  2/2 cells  complete, validated  18 s  "
    "drift: not judged yet (needs 3 earlier runs)",
    "  2026-11-19  nightly-20261119T000000Z-75c4fc  1/2 cells  FAILED (failed)  16 s  drift: "
    "no records",
    "demo done in 1 min 54 s",
]


def test_phases_come_from_the_demos_own_lines() -> None:
    stamped = [(float(i * 10), line) for i, line in enumerate(LINES)]
    p = phases(stamped)
    assert (p["cluster_s"], p["seed000_measure_s"], p["startup_measure_s"]) == (10.0, 20.0, 20.0)
    assert (p["seed000_aggregate_s"], p["startup_aggregate_s"]) == (20.0, 10.0)
    assert p["nights"] == [{"date": "2026-11-18", "wall_s": 18.0, "cells_ok": 2, "cells": 2},
                           {"date": "2026-11-19", "wall_s": 16.0, "cells_ok": 1, "cells": 2}]
    assert p["total_s"] == 114 and p["ok"] is True
    assert p["broker"] == "Kafka 4.4.0"
    assert DEMO_BUDGET_HERE_S == 90.0


def test_a_demo_that_stopped_early_has_no_total() -> None:
    p = phases([(1.0, "Kafka 4.4.0: 1 broker(s) at 127.0.0.1:19292 (ready in 2 s)")])
    assert p["seed000_measure_s"] is None and p["total_s"] is None and p["ok"] is False
    assert p["nights"] == []
