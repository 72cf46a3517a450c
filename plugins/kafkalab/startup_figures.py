"""A start-up run's figures per case, its answer to seed 000 in one line per client, and its
table (from the rows of ``probes.parquet``, as dicts, or the cases of its ``startup_cases``
aggregate): shared by the engine (:mod:`kafkalab.startup`), which prints them, and the report,
which draws them, so it sits below both.

Each figure is a median over the case's members that reached the mark (``n`` of them), with
the smallest and largest value beside it: a case has a few probes, too few for any other
percentile (:data:`kafkalab.stats.MIN_SAMPLES`). A probe that timed out or failed is counted
in ``failed`` and never enters a median.

The parts of a first record's delay, each a difference of two marks of the same member, so
that they add up to ``first_record_ms``. librdkafka's metadata mark is sampled from its
statistics and may be missing; then ``client_start_ms`` and the part after it are null rather
than folded into one another:

* ``client_start_ms``: start → the client knows the cluster (librdkafka: its first Metadata
  response arrived; kafka-python: its constructor returned, having connected);
* ``join_ms``: that → partitions assigned (``subscribe``: finding the group coordinator,
  the classic protocol's JoinGroup and SyncGroup with the broker's initial rebalance delay, or
  KIP-848's heartbeats);
* ``fetch_ms``: assigned (``assign``: the client started) → first record (offsets looked up,
  first fetch).

Beside them, on a cold cluster, two marks of the broker's side (ms after the member's start):
``offsets_topic_ready_ms`` (``__consumer_offsets`` created and led) and
``coordinator_ready_ms`` (the group's coordinator answers for it: its partition loaded).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkalab.stats import median_or_none

__all__ = ["FIGURES", "KAFKA_DEFAULT_INITIAL_REBALANCE_DELAY_MS", "LEGEND", "answer_lines",
           "format_table", "summarize"]

KAFKA_DEFAULT_INITIAL_REBALANCE_DELAY_MS = 3000
"""Kafka's default ``group.initial.rebalance.delay.ms`` (its sample configs set 0)."""

LEGEND = ("first = first record; start = the client knows the cluster (librdkafka: its first "
          "Metadata answer; kafka-python: its constructor done); join = to partitions assigned; "
          "fetch = to the first record; led / ready = cold cluster: __consumer_offsets led / the "
          "group's coordinator answering")
"""What each column of :func:`format_table` means, for the lines that print it."""

FIGURES: tuple[str, ...] = ("first_record_ms", "client_start_ms", "join_ms", "fetch_ms",
                            "offsets_topic_ready_ms", "coordinator_ready_ms")
"""The figures of a case, each a median over its members (ms)."""


def _parts(row: Mapping[str, Any]) -> dict[str, float | None]:
    ready = row.get("metadata_ms") if row.get("client") == "confluent-kafka" else row.get(
        "created_ms")
    subscribe = row.get("join") == "subscribe"
    fetch_from = row.get("assigned_ms") if subscribe else ready
    first = row.get("first_record_ms")
    return {
        "first_record_ms": first,
        "client_start_ms": ready,
        "join_ms": (None if not subscribe or ready is None or row.get("assigned_ms") is None
                    else float(row["assigned_ms"]) - float(ready)),
        "fetch_ms": None if first is None or fetch_from is None else float(first) - float(fetch_from),
        "offsets_topic_ready_ms": row.get("offsets_topic_ready_ms"),
        "coordinator_ready_ms": row.get("coordinator_ready_ms"),
    }


_CASE_FIELDS = ("case_key", "client", "join", "group_protocol", "members", "cluster_state",
                "initial_rebalance_delay_ms", "kafka_version")


def summarize(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One dict per case, in the order the cases were first measured: the case's fields,
    ``probes`` (rows), ``failed`` (timed out or failed), and per figure its median, min, max
    and ``n`` (``<figure>``, ``<figure>_min``, ``<figure>_max``, ``<figure>_n``)."""
    cases: dict[str, dict[str, Any]] = {}
    values: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        key = str(row["case_key"])
        if key not in cases:
            cases[key] = {f: row.get(f) for f in _CASE_FIELDS} | {"probes": 0, "failed": 0}
            values[key] = {f: [] for f in FIGURES}
        cases[key]["probes"] += 1
        if row.get("status") != "ok":
            cases[key]["failed"] += 1
            continue
        for figure, value in _parts(row).items():
            if value is not None:
                values[key][figure].append(float(value))
    for key, case in cases.items():
        for figure in FIGURES:
            got = sorted(values[key][figure])
            case[figure] = median_or_none(got)
            case[f"{figure}_min"] = got[0] if got else None
            case[f"{figure}_max"] = got[-1] if got else None
            case[f"{figure}_n"] = len(got)
    return list(cases.values())


def _pick(cases: list[dict[str, Any]], **want: Any) -> dict[str, Any] | None:
    for case in cases:
        if all(case.get(k) == v for k, v in want.items()) and case.get("first_record_ms") is not None:
            return case
    return None


def _s(ms: float | None) -> str:
    return "n/a" if ms is None else (f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms")


def answer_lines(cases: list[dict[str, Any]], default_delay_ms: int) -> list[str]:
    """Seed 000's answer, one line per client that was measured: the cold cluster's first
    record and the offsets topic's share of it; on a warm cluster the classic protocol with
    the broker's default delay (``default_delay_ms``: 0 for a broker without the setting, before
    Kafka 0.11), the consumer protocol, and ``assign``. A part not measured in this run reads
    ``n/a``."""
    lines = []
    for client in dict.fromkeys(str(c["client"]) for c in cases):
        delay = default_delay_ms
        cold = _pick(cases, client=client, cluster_state="cold", group_protocol="classic",
                     initial_rebalance_delay_ms=delay) or _pick(
            cases, client=client, cluster_state="cold", group_protocol="classic")
        warm = _pick(cases, client=client, cluster_state="warm", group_protocol="classic",
                     members=1, initial_rebalance_delay_ms=delay)
        kip848 = _pick(cases, client=client, cluster_state="warm", group_protocol="consumer",
                       members=1)
        assign = _pick(cases, client=client, cluster_state="warm", join="assign")
        cold_text = "n/a" if cold is None else (
            f"{_s(cold['first_record_ms'])} (delay {cold['initial_rebalance_delay_ms']} ms); "
            f"__consumer_offsets led after {_s(cold['offsets_topic_ready_ms'])}, its group "
            f"coordinator ready after {_s(cold['coordinator_ready_ms'])}")
        classic = (f"classic with the default delay ({delay} ms)" if delay else
                   "classic (the broker has no initial rebalance delay)")
        lines.append(
            f"{client}: cold cluster: {cold_text}; warm: {classic} "
            f"{_s(None if warm is None else warm['first_record_ms'])}, consumer "
            f"protocol {_s(None if kip848 is None else kip848['first_record_ms'])}, assign "
            f"{_s(None if assign is None else assign['first_record_ms'])}")
    return lines


def format_table(cases: list[dict[str, Any]]) -> str:
    """The cases as a text table (medians in ms; ``-``: not measured or not exposed)."""
    head = ("state", "delay", "client", "join", "protocol", "m", "n", "fail", "first",
            "start", "join", "fetch", "led", "ready")
    rows: list[tuple[str, ...]] = [head]
    def ms(c: dict[str, Any], name: str) -> str:
        v = c.get(name)
        return "-" if v is None else f"{v:.0f}"

    for c in cases:
        rows.append((str(c["cluster_state"]), str(c["initial_rebalance_delay_ms"]),
                     str(c["client"]), str(c["join"]), str(c["group_protocol"]),
                     str(c["members"]), str(c["probes"]), str(c["failed"]),
                     *(ms(c, name) for name in FIGURES)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(v.rjust(w) if i >= 5 else v.ljust(w)
                               for i, (v, w) in enumerate(zip(r, widths, strict=True)))
                     for r in rows)
