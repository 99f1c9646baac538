"""Maintenance on the real S3 server: listing, expiry, TTL, manifest rewriting and orphan cleaning
through the table's own FileIO, with pyiceberg and DuckDB reading the same rows afterwards."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from mixed_iceberg import MixedTable, load_catalog
from mixed_iceberg.exceptions import CommitStateUnknownError
from mixed_iceberg.optimizing.maintenance import TableMaintenance
from mixed_iceberg.optimizing.maintenance.orphans import FOLDERS
from mixed_iceberg.optimizing.maintenance.reachability import References
from mixed_iceberg.optimizing.maintenance.storage import Storage
from tests.support.duckdb_iceberg import read_iceberg
from tests.support.services import S3Endpoint
from tests.support.tables import ORDERS_SCHEMA, changes, rows_of

pytestmark = pytest.mark.integration

DAY = 86400.0


def _listed(table: MixedTable) -> set[str]:
    stores = [table.base_store, table.change_store]
    return {
        item.key
        for store in stores
        if store is not None
        for folder in FOLDERS
        for item in Storage(store.io).list_files(f"{store.location()}/{folder}")
    }


def _referenced(table: MixedTable) -> set[str]:
    return {
        key
        for store in (table.base_store, table.change_store)
        if store is not None
        for key in References().store(store.refresh())
    }


def _write(table: MixedTable, start: int, stop: int) -> None:
    for i in range(start, stop):
        with table.new_transaction(("ingest", i)) as txn:
            txn.write(
                changes([("-U", i, "abc"[i % 3], i, i / 2), ("+U", i, "abc"[i % 3], i + 100, 1.0), ("+I", 500 + i, "a", 1, 1.0)])
            )


def test_maintenance_on_real_s3_server(tmp_path: Path, s3_endpoint: S3Endpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = load_catalog(
        "s3",
        uri=f"sqlite:///{tmp_path}/s3cat.db",
        warehouse=f"s3://{s3_endpoint.bucket}/{uuid.uuid4().hex[:8]}",
        **{
            "s3.endpoint": s3_endpoint.url,
            "s3.access-key-id": s3_endpoint.access_key,
            "s3.secret-access-key": s3_endpoint.secret_key,
            "s3.region": s3_endpoint.region,
        },
    )
    table = catalog.create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"])
    table.bulk_load(changes([("+I", k, "abc"[k % 3], k, k / 2) for k in range(40)]).drop_columns(["_change_action"]))
    _write(table, 0, 6)
    table.bulk_load(table.scan().to_arrow(), overwrite=True)
    _write(table, 6, 9)

    def lost(*_: object) -> object:
        raise ConnectionResetError("catalog connection reset")

    txn = table.new_transaction(("ingest", 99))
    txn.write(changes([("+I", 9000, "a", 1, 1.0)]))
    monkeypatch.setattr(SqlCatalog, "commit_table", lost)
    with pytest.raises(CommitStateUnknownError, match="outcome unknown"):
        txn.commit()
    monkeypatch.undo()
    assert table.change_store is not None
    orphans = _listed(table) - _referenced(table)
    assert orphans, "the failed commit should have left files on S3"
    before = rows_of(table.scan().to_arrow())

    young = TableMaintenance(table.refreshed).clean_orphan_files(older_than=timedelta(hours=1))
    assert (young.files_deleted, young.young_orphans_kept) == (0, len(orphans))

    maintenance = TableMaintenance(table.refreshed, clock=lambda: time.time() + 8 * DAY)
    ttl = maintenance.expire_change_data()
    rewrite = maintenance.rewrite_manifests()
    expire = maintenance.expire_snapshots()
    cleaned = maintenance.clean_orphan_files(older_than=timedelta(minutes=30))

    assert ttl.files_deleted > 0
    assert ttl.unmerged_kept > 0
    assert rewrite.commits == 2
    assert expire.files_deleted > 0
    assert expire.bytes_deleted > 0
    assert cleaned.files_deleted == len(orphans)
    assert cleaned.bytes_deleted > 0
    assert _listed(table) == _referenced(table)
    assert rows_of(table.scan().to_arrow()) == before
    for store in (table.base_store, table.change_store):
        store.refresh()
        ours = rows_of(store.scan().to_arrow().select(ORDERS_SCHEMA.names))
        assert rows_of(read_iceberg(store.metadata_location, s3_endpoint).select(ORDERS_SCHEMA.names)) == ours
    with table.new_transaction(("ingest", 8)) as txn:
        txn.write(changes([("+I", 9001, "a", 1, 1.0)]))
    assert txn.outcome is not None
    assert txn.outcome.skipped
