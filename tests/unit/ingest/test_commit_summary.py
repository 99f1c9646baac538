"""What an ingest commit records for the client's progress report, read back as a CommitRecord."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser
from mixed_iceberg.ingest.progress import commit_record
from mixed_iceberg.ingest.writer import PartitionIngestor
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog


def test_a_commit_records_its_dead_letters_and_the_freshness_of_its_valid_event_times(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])
    now = int(time.time() * 1000)
    stamps = [now - 2000, now - 1000, 0, now + 86_400_000]  # the last two are not event times
    batch = [
        json.dumps({"before": None, "after": {"id": i, "qty": 1}, "op": "c", "ts_ms": ts}).encode() for i, ts in enumerate(stamps)
    ]
    batch.append(b"{broken")
    ingestor = PartitionIngestor(table, CdcParser(table.arrow_schema(), table.primary_key, CdcFormat.DEBEZIUM_JSON),
                                 job="j", topic="orders", partition=2)  # fmt: skip
    ingestor.open()
    ingestor.process(np.arange(len(batch)), pa.array(batch, pa.binary()))
    store = table.change_store
    assert store is not None
    store.refresh()
    snapshot = store.metadata.current_snapshot()
    assert snapshot is not None
    assert snapshot.summary is not None
    record = commit_record(snapshot.summary, snapshot.timestamp_ms, "orders")
    assert record is not None
    assert (record.partition, record.rows, record.dead_letters) == (2, 4, 1)
    assert record.freshness_p50_ms is not None
    assert record.freshness_p99_ms is not None
    # Only the two valid stamps: p50 between them, p99 near the older one (plus the commit's own time).
    assert 1000 <= record.freshness_p50_ms - (snapshot.timestamp_ms - now) <= 2000
    assert 1900 <= record.freshness_p99_ms - (snapshot.timestamp_ms - now) <= 2000
    assert ingestor.metrics.event_time_rejected == 2


def test_ingest_positions_are_each_partitions_newest_commit_by_job(tmp_path: Path) -> None:
    """What serve's metrics export (ingest_positions): per job, topic and partition, the next
    offset of its newest commit; other writers' commits are passed over."""
    from mixed_iceberg.ingest.progress import ingest_positions

    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])

    def ingest(job: str, partition: int, ids: range, first_offset: int) -> None:
        parser = CdcParser(table.arrow_schema(), table.primary_key, CdcFormat.DEBEZIUM_JSON)
        ingestor = PartitionIngestor(table, parser, job=job, topic="orders", partition=partition)
        ingestor.open()
        batch = [json.dumps({"before": None, "after": {"id": i, "qty": 1}, "op": "c", "ts_ms": 0}).encode() for i in ids]
        ingestor.process(np.arange(first_offset, first_offset + len(batch)), pa.array(batch, pa.binary()))

    ingest("a/b", 0, range(3), 0)  # a job name with a slash still parses
    ingest("a/b", 1, range(3, 5), 0)
    ingest("a/b", 0, range(5, 9), 3)
    with table.new_transaction(("someone", 1)) as txn:  # not an ingest commit
        txn.write(changes([("+I", 100, "x", 1, 1.0)]))
    ingest("other", 0, range(9, 10), 0)
    store = table.change_store
    assert store is not None
    store.refresh()
    found = [(p.job, p.topic, p.partition, p.next_offset, p.freshness_p99_ms) for p in ingest_positions(store.metadata)]
    assert found == [("a/b", "orders", 0, 7, None), ("a/b", "orders", 1, 2, None), ("other", "orders", 0, 1, None)]
    assert ingest_positions(None) == ()
