"""The checker: after healing, re-read every partition from offset 0 and judge every message
(ducktape's ProduceConsumeValidate, Jepsen's Kafka checks).

Per intended message (``verdicts.parquet``): the producer's outcome, how many copies the
re-read found, and one verdict:

| verdict | producer said | re-read found |
|---|---|---|
| ``ok`` | acked | ≥ 1 copy |
| ``acked_lost`` | acked | nothing |
| ``failed_but_present`` | failed | ≥ 1 copy |
| ``indeterminate_present`` | indeterminate or unsent | ≥ 1 copy |
| ``unseen`` | not acked | nothing |
| ``aborted`` | aborted (its transaction was) | nothing |
| ``aborted_visible`` | aborted | ≥ 1 copy: a ``read_committed`` reader saw an aborted record |

The re-read is ``read_committed``. A transactional trial also re-reads ``read_uncommitted``
(``uncommitted_read_count``): an aborted record found there was in the log, so the committed
reader's filter, not its absence, hid it (the summary's ``aborted_read_uncommitted``; the
deliberately aborted transactions were flushed first, so theirs should all be found: the
integration tests assert it, no GX check does, since an abort after a failed record may
leave records unwritten).

``duplicates`` counts the extra copies (``read_count − 1``); a message is ``reordered`` when
its first copy comes after a first copy with a higher seq in the same partition.

**Broker loss or reader loss.** An acked message the re-read did not find is looked up in
the brokers' own log segments with Kafka's ``kafka.tools.DumpLogSegments``: the tool prints
each record's offset and CRC, and the checker knows the exact bytes it sent (the value is
rebuilt from the stamp and the body, the key from ``sends.parquet``), hence each record's
CRC (message format v0: CRC32 over magic, attributes, key and value). A lost message no
broker log holds was lost by the brokers (truncated, or never replicated); one a log still
holds was missed by the reader.

Kafka 0.11 and later store record batches with one CRC a batch: there the trial's records
carry their seq in a header *key* (``kafkalab.seq.<seq>``, empty value), which
DumpLogSegments prints (``headerKeys: [...]``), and the lookup is by seq.
"""

from __future__ import annotations

import re
import struct
import subprocess
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from kafkalab.cluster.descriptor import ClusterDescriptor, jvm_classpath, librdkafka_config
from kafkalab.load.producer import SEQ_HEADER_PREFIX
from kafkalab.payloads import HEADER, HEADER_VERSION, MAGIC, read_stamp
from kafkalab.scenarios.base import now_ns

__all__ = ["ReRead", "dump_log_crcs", "dump_log_seqs", "judge", "locate_lost_seqs",
           "message_crc", "parse_dump", "parse_dump_seqs", "re_read"]

_DUMP_LINE = re.compile(r"^offset: (\d+) .*?crc: (\d+)")
_DUMP_SEQ = re.compile(r"^\| offset: (\d+) .*headerKeys: \[([^\]]*)\]")
"""A record line of DumpLogSegments on a v2 log (Kafka 0.11+): ``| offset: 3 CreateTime: …
headerKeys: [kafkalab.seq.3]``."""


class ReRead:
    """What a fresh consumer read from offset 0: ``(partition, offset, seq)`` in offset
    order per partition, and records that are not the trial's."""

    def __init__(self) -> None:
        self.partition: list[int] = []
        self.offset: list[int] = []
        self.seq: list[int] = []
        self.foreign = 0
        self.high_watermarks: dict[int, int] = {}
        self.complete = True
        self.error: str | None = None


def re_read(d: ClusterDescriptor, topic: str, partitions: int, nonce: bytes,
            timeout_s: float = 60.0, isolation: str = "read_committed") -> ReRead:
    """Read ``topic`` from offset 0 up to each partition's high watermark with a fresh
    consumer (no group, no commit) of ``isolation`` level. The end of a partition is its
    end-of-partition event at the high watermark, or its last record: a ``read_committed``
    reader is handed no transaction marker and no aborted record, yet its position passes
    them."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    cfg: dict[str, Any] = dict(librdkafka_config(d))
    cfg.update({"group.id": "kafkalab-fault-checker", "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "enable.partition.eof": True,
                "isolation.level": isolation, "log_level": 3})
    c = Consumer(cfg)
    out = ReRead()
    try:
        todo = {}
        for p in range(partitions):
            _lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=15, cached=False)
            out.high_watermarks[p] = int(hi)
            if hi > 0:
                todo[p] = int(hi)
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in todo])
        deadline = now_ns() + int(timeout_s * 1e9)
        while todo and now_ns() < deadline:
            for m in c.consume(1000, 0.5):
                err = m.error()
                p, off = int(m.partition() or 0), int(m.offset() or 0)
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        if off >= todo.get(p, 0):
                            todo.pop(p, None)
                        continue
                    out.error = str(err)
                    continue
                st = read_stamp(m.value())
                if st is None or st[2][:4] != nonce[:4]:
                    out.foreign += 1
                else:
                    out.partition.append(p)
                    out.offset.append(off)
                    out.seq.append(int(st[0]))
                if off + 1 >= todo.get(p, 1 << 62):
                    todo.pop(p, None)
        out.complete = not todo
        if todo:
            out.error = out.error or f"the re-read did not reach the end of partition(s) {sorted(todo)}"
    finally:
        c.close()
    return out


def judge(outcome: np.ndarray, partition: np.ndarray, acked_offset: np.ndarray,
          is_warmup: np.ndarray, read: ReRead,
          uncommitted: ReRead | None = None) -> dict[str, np.ndarray]:
    """The verdict columns for ``n`` intended messages (``outcome`` as names; ``read`` the
    ``read_committed`` re-read, ``uncommitted`` a transactional trial's ``read_uncommitted``
    one)."""
    n = len(outcome)
    read_count = np.zeros(n, dtype=np.int32)
    first_off = np.full(n, -1, dtype=np.int64)
    reordered = np.zeros(n, dtype=bool)
    max_seq: dict[int, int] = {}
    for p, off, seq in zip(read.partition, read.offset, read.seq, strict=True):
        if not 0 <= seq < n:
            continue
        read_count[seq] += 1
        if read_count[seq] == 1:
            first_off[seq] = off
            if seq < max_seq.get(p, -1):
                reordered[seq] = True
            max_seq[p] = max(max_seq.get(p, -1), seq)
    present = read_count > 0
    acked = outcome == "acked"
    failed = outcome == "failed"
    aborted = outcome == "aborted"
    verdict = np.where(acked & present, "ok",
              np.where(acked, "acked_lost",
              np.where(aborted & present, "aborted_visible",
              np.where(aborted, "aborted",
              np.where(present & failed, "failed_but_present",
              np.where(present, "indeterminate_present", "unseen")))))).astype(object)
    uncommitted_count: list[int | None] = [None] * n
    if uncommitted is not None:
        counts = np.bincount(np.asarray([s for s in uncommitted.seq if 0 <= s < n],
                                        dtype=np.int64), minlength=n)
        uncommitted_count = [int(c) for c in counts]
    return {"seq": np.arange(n, dtype=np.int64), "is_warmup": is_warmup, "outcome": outcome,
            "partition": partition, "acked_offset": acked_offset, "read_count": read_count,
            "first_read_offset": first_off, "reordered": reordered, "verdict": verdict,
            "uncommitted_read_count": np.asarray(uncommitted_count, dtype=object)}


def message_crc(key: bytes | None, value: bytes | None) -> int:
    """CRC32 of a v0 message (magic 0, attributes 0) as Kafka 0.9 stores it."""
    def blob(b: bytes | None) -> bytes:
        return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b

    return zlib.crc32(b"\x00\x00" + blob(key) + blob(value)) & 0xFFFFFFFF


def sent_value(body: bytes, seq: int, intended_ts_ns: int, nonce: bytes, base64_body: bool) -> bytes:
    """The exact value the open-loop producer sent for ``seq`` (:func:`kafkalab.payloads.stamp`)."""
    return HEADER.pack(MAGIC, HEADER_VERSION, 1 if base64_body else 0, seq, intended_ts_ns,
                       nonce) + body


def parse_dump(text: str) -> dict[int, int]:
    """``{offset: crc}`` from ``DumpLogSegments`` output (one line per record)."""
    out: dict[int, int] = {}
    for line in text.splitlines():
        m = _DUMP_LINE.match(line.strip())
        if m:
            out[int(m.group(1))] = int(m.group(2))
    return out


def dump_log_crcs(kafka_home: Path, java: str, partition_dirs: Iterable[Path], tool: str,
                  timeout_s: float = 120.0) -> dict[int, int]:
    """``{offset: crc}`` of every record in the ``.log`` segments of ``partition_dirs`` (one
    broker's replica of a partition), read with Kafka's own DumpLogSegments (``tool``: its
    class in that distribution, :attr:`kafkalab.cluster.features.KafkaTools.dump_log_segments`)."""
    return parse_dump(_dump(kafka_home, java, partition_dirs, tool, timeout_s))


def _dump(kafka_home: Path, java: str, partition_dirs: Iterable[Path], tool: str,
          timeout_s: float) -> str:
    """DumpLogSegments' output (one line per record) over the ``.log`` segments of
    ``partition_dirs``; "" when there are none."""
    files = sorted(str(f) for d in partition_dirs for f in Path(d).glob("*.log"))
    if not files:
        return ""
    cmd = [java, "-Xmx256m", "-cp", jvm_classpath(kafka_home), tool,
           "--deep-iteration", "--files", ",".join(files)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"DumpLogSegments exited {r.returncode}: {r.stderr.strip()[-300:]}")
    return r.stdout


def parse_dump_seqs(text: str, prefix: str = SEQ_HEADER_PREFIX) -> dict[int, int]:
    """``{offset: seq}`` of the records whose header keys name a seq (``<prefix><seq>``), from
    DumpLogSegments output on a v2 log."""
    out: dict[int, int] = {}
    for line in text.splitlines():
        m = _DUMP_SEQ.match(line.strip())
        if not m:
            continue
        for key in m.group(2).split(","):
            key = key.strip()
            if key.startswith(prefix) and key[len(prefix):].isdigit():
                out[int(m.group(1))] = int(key[len(prefix):])
    return out


def dump_log_seqs(kafka_home: Path, java: str, partition_dirs: Iterable[Path], tool: str,
                  timeout_s: float = 120.0) -> set[int]:
    """The seqs (header ``kafkalab.seq.<seq>``) of every record in the ``.log`` segments of
    ``partition_dirs`` (one broker's replicas), read with Kafka's own DumpLogSegments."""
    return set(parse_dump_seqs(_dump(kafka_home, java, partition_dirs, tool, timeout_s)).values())


def locate_lost_seqs(seqs: list[int], broker_seqs: dict[int, set[int]]) -> dict[int, str]:
    """For each seq, the ids of the brokers whose logs hold a record tagged with it,
    comma-separated ("" = none)."""
    return {s: ",".join(str(b) for b in sorted(broker_seqs) if s in broker_seqs[b]) for s in seqs}


def locate_lost(lost: list[dict[str, Any]], broker_logs: dict[int, dict[int, int]]) -> dict[int, str]:
    """For each lost message (``seq``, ``crc``), the ids of the brokers whose logs hold a record
    with its CRC, comma-separated ("" = none)."""
    crcs_by_broker = {b: set(m.values()) for b, m in broker_logs.items()}
    return {int(m["seq"]): ",".join(str(b) for b in sorted(crcs_by_broker)
                                    if m["crc"] in crcs_by_broker[b])
            for m in lost}
