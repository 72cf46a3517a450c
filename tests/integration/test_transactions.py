"""Transactions on a real Kafka 4.x KRaft node, both clients (no mocks): a load cell whose
producer sends in transactions of 10 records and aborts every third one after writing it.
The read_committed consumers never receive an aborted record, the cell's outcomes say which
records were aborted, exactly the aborted transactions' records, and the checker's two
re-reads find them in the log (read_uncommitted) and not past the filter (read_committed)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkalab.cluster.flavors import load_descriptor
from kafkalab.load import files
from kafkalab.load.shard import plan_path
from kafkalab.load.spec import LoadCellSpec
from tests.integration.loadkit import cell_dir, one_cell, receipts

PROFILE = """\
name: txn-one-node
goal: durability
description: the durability producer (idempotent, acks=all) on one node
producer: {batch_size_bytes: 16384, linger_ms: 0, compression: none, acks: all, retries: 1,
           max_in_flight: 1, buffer_memory_bytes: 33554432}
producer_properties: {enable.idempotence: true}
consumer: {fetch_min_bytes: 1, fetch_max_wait_ms: 100, enable_auto_commit: false,
           session_timeout_ms: 10000}
topic: {replication_factor: 1, min_insync_replicas: 1, unclean_leader_election_enable: false,
        max_message_bytes: 16777216}
"""
TXN, ABORT_EVERY = 10, 3


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_aborted_transactions_never_reach_a_read_committed_consumer(
        desc: Path, tmp_path: Path, client: str) -> None:
    from kafkalab.faults.checker import re_read

    profile = tmp_path / "txn-one-node.yaml"
    profile.write_text(PROFILE)
    spec = LoadCellSpec(client=client, profile=str(profile), rate_msgs_per_s=200,
                        duration_s=4, warmup_s=1, txn_msgs=TXN, txn_abort_every=ABORT_EVERY)
    s = one_cell(tmp_path, desc, spec, f"txn-{client}")
    assert s["status"] == "complete", s
    cell = cell_dir(tmp_path, f"txn-{client}")
    scheduled = pq.read_table(files.sends_path(cell)).to_pandas().sort_values("seq")
    # a producer behind its schedule (kafka-python, a commit every 10 records, on a busy
    # two-core machine) stops at the send deadline: the rest of the schedule is unsent, a
    # suffix, counted as such (the summary's unsent_msgs), never lost or aborted
    unsent = scheduled["outcome"] == "unsent"
    sends = scheduled[~unsent]
    assert not unsent.any() or scheduled.loc[unsent, "seq"].min() > sends["seq"].max()
    assert s["unsent_msgs"] == int(unsent.sum())
    assert set(sends["outcome"]) == {"acked", "aborted"}, sends["error"].dropna().unique()
    # exactly the records of every third transaction were aborted
    txn_no = sends["seq"] // TXN + 1
    assert ((sends["outcome"] == "aborted") == (txn_no % ABORT_EVERY == 0)).all()
    assert (sends["txn_end"] == sends["outcome"].map({"acked": "committed",
                                                       "aborted": "aborted"})).all()
    aborted = set(sends.loc[sends["outcome"] == "aborted", "seq"])
    acked = set(sends.loc[sends["outcome"] == "acked", "seq"])
    # an acked record's ack is its transaction's commit, after its last record was sent
    last_send = sends.groupby(txn_no)["send_ts_ns"].transform("max")
    ok = sends["outcome"] == "acked"
    assert (sends.loc[ok, "ack_ts_ns"] >= last_send[ok]).all()
    assert s["aborted_msgs"] > 0 and s["missing_msgs"] == 0 and s["duplicates"] == 0
    got = set(receipts(cell)["seq"])
    assert not got & aborted and got == acked
    # in the log all along: the read_uncommitted re-read finds every aborted record, the
    # read_committed one none
    meta = json.loads(files.cell_json_path(cell).read_text())
    nonce = bytes.fromhex(json.loads(plan_path(cell).read_text())["nonce"])
    d = load_descriptor(desc)
    committed = re_read(d, meta["topic"], 1, nonce)
    uncommitted = re_read(d, meta["topic"], 1, nonce, isolation="read_uncommitted")
    assert committed.complete and uncommitted.complete
    seen_committed, seen_uncommitted = set(committed.seq), set(uncommitted.seq)
    assert not seen_committed & aborted and acked <= seen_committed
    assert aborted <= seen_uncommitted
