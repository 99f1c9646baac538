"""The ingest path (CDC parsing, PartitionIngestor) on partitioned tables, created from the job's config."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("confluent_kafka", reason="the kafka extra: mixed_iceberg.ingest.runtime imports the Kafka backend")

from mixed_iceberg import MixedTable
from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser
from mixed_iceberg.ingest.config import load_ingest_config
from mixed_iceberg.ingest.runtime import load_table
from mixed_iceberg.ingest.writer import PartitionIngestor
from tests.support.tables import ORDERS_SCHEMA, local_catalog

SHIPPED = Path(__file__).resolve().parents[3] / "conf" / "ingest.yaml"


def debezium_events(n: int, keys: int, seed: int) -> tuple[list[bytes], dict[int, int]]:
    """Debezium JSON with full before images; an update may move its key to another qty partition."""
    rng = random.Random(seed)
    live: dict[int, int] = {}
    out = []
    for _ in range(n):
        key = rng.randrange(keys)
        if key in live and rng.random() < 0.2:
            out.append({"before": {"id": key, "qty": live.pop(key)}, "after": None, "op": "d"})
        elif key in live:
            qty = rng.randrange(-20, 60)
            out.append({"before": {"id": key, "qty": live[key]}, "after": {"id": key, "qty": qty}, "op": "u"})
            live[key] = qty
        else:
            live[key] = rng.randrange(-20, 60)
            out.append({"before": None, "after": {"id": key, "qty": live[key]}, "op": "c"})
    return [json.dumps(e).encode() for e in out], live


def merged(table: MixedTable) -> dict[int, int]:
    return {r["id"]: r["qty"] for r in table.scan(selected_fields=("id", "qty")).to_arrow().to_pylist()}


@pytest.mark.parametrize("partition_by", [["truncate(10, qty)"], ["bucket(3, id)", "truncate(25, qty)"]])
def test_ingested_cdc_on_a_partitioned_table_reads_as_the_source(tmp_path: Path, partition_by: list[str]) -> None:
    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"], partition_by=partition_by)
    messages, final = debezium_events(2000, 150, seed=len(partition_by))
    parser = CdcParser(table.arrow_schema(), table.primary_key, CdcFormat.DEBEZIUM_JSON)
    ingestor = PartitionIngestor(table, parser, job="j", topic="src", partition=0)
    assert ingestor.open() is None
    for lo in range(0, len(messages), 250):  # one ChangeStore commit per batch
        hi = min(len(messages), lo + 250)
        ingestor.process(np.arange(lo, hi), pa.array(messages[lo:hi], pa.binary()))
    assert merged(table) == final
    table.optimizing.run("full")
    assert merged(table) == final
    # every base file holds one qty partition
    for path, partition in zip(*table.base_store.inspect.files().select(["file_path", "partition"]).columns, strict=True):
        assert f"qty_trunc={partition.as_py()['qty_trunc']}/" in path.as_py()


def test_the_job_creates_a_partitioned_table_from_its_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIXED_ICEBERG_WAREHOUSE_DIR", str(tmp_path))
    config = load_ingest_config(SHIPPED, {"table": "db.parted", "create-table.partition-by": ["bucket(4, id)", "customer"]})
    table = load_table(config, create=True)
    assert [f.name for f in table.base_store.spec().fields] == ["id_bucket", "customer"]
    assert load_table(load_ingest_config(SHIPPED, {"table": "db.plain"}), create=True).base_store.spec().is_unpartitioned()
