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
from tests.support.tables import ORDERS_SCHEMA, local_catalog


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
