"""Commit-path metadata handling: parsed-metadata cache, copy-free updates, merged appends.

These protect the fixes that keep commit cost flat as snapshots accumulate (iceberg-python
#2673): they must not change what a commit writes, what another process sees, or leave files
that no snapshot references.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table.update import AssertRefSnapshotId, update_table_metadata

from mixed_iceberg._pyiceberg.patches import updated_metadata
from mixed_iceberg._pyiceberg.sql_catalog import MetadataCache, SqlCatalogWithCache
from mixed_iceberg.optimizing.maintenance import TableMaintenance
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of


def _write(table, ids: range, writer: str = "w") -> None:  # type: ignore[no-untyped-def]
    for i in ids:
        with table.new_transaction((writer, i)) as txn:
            txn.write(changes([("+I", i, "a", i, float(i))]))


def test_loading_a_known_metadata_file_does_not_parse_it_again(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])
    iceberg = catalog.iceberg
    assert isinstance(iceberg, SqlCatalogWithCache)
    first = iceberg.load_table("db.orders")
    misses = iceberg.metadata_cache.misses
    second = iceberg.load_table("db.orders")
    assert iceberg.metadata_cache.misses == misses
    assert second.metadata is first.metadata


def test_a_commit_by_another_catalog_is_seen_and_a_stale_commit_is_refused(tmp_path: Path) -> None:
    ours = local_catalog(tmp_path)
    table = ours.create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])
    theirs = local_catalog(tmp_path).load_table("db.orders")
    _write(theirs, range(3), writer="them")
    table.refresh()
    assert rows_of(table.scan().to_arrow()) == rows_of(theirs.scan().to_arrow())
    assert len(rows_of(table.scan().to_arrow())) == 3
    # A store object that missed their commits: its requirements are checked against the
    # database's current metadata, not against the (cached) metadata it was loaded with.
    stale = ours.iceberg.load_table(table.change_store.name())  # type: ignore[union-attr]
    _write(theirs, range(3, 4), writer="them")
    head = stale.metadata.current_snapshot_id
    with pytest.raises(CommitFailedException):
        ours.iceberg.commit_table(stale, (AssertRefSnapshotId(ref="main", snapshot_id=head),), ())
    _write(table, range(10, 11))  # our own transaction rebases on their commits and lands
    assert len(rows_of(local_catalog(tmp_path).load_table("db.orders").scan().to_arrow())) == 5


def test_copy_free_update_equals_pyiceberg_update(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])
    _write(table, range(2))
    store = table.change_store
    assert store is not None
    txn = store.transaction()
    txn.set_properties({"k": "v"})
    with txn.update_snapshot().fast_append():
        pass
    base = store.metadata
    ours = updated_metadata(base, txn._updates, "file:///previous.json")
    theirs = update_table_metadata(base, txn._updates, metadata_location="file:///previous.json")
    assert ours.model_dump(exclude={"last_updated_ms"}) == theirs.model_dump(exclude={"last_updated_ms"})
    assert updated_metadata(base, ()) is base


def test_appends_merge_manifests_and_leave_no_unreferenced_file(tmp_path: Path) -> None:
    properties = {"commit.manifest.min-count-to-merge": "4"}
    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"], properties=properties)
    store = table.change_store
    assert store is not None
    _write(table, range(13))
    store.refresh()
    snapshot = store.current_snapshot()
    assert snapshot is not None
    assert len(snapshot.manifests(store.io)) < 4  # 13 appends, one manifest each without merging
    assert [row[0] for row in rows_of(table.scan().to_arrow())] == list(range(13))
    # merged-away manifests are deleted by the commit itself, not left for orphan cleaning
    assert TableMaintenance(table.refreshed).clean_orphan_files(timedelta(0), dry_run=True).orphans_found == 0


def test_merging_can_be_turned_off_per_store(tmp_path: Path) -> None:
    properties = {"commit.manifest.min-count-to-merge": "4", "commit.manifest-merge.enabled": "false"}
    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"], properties=properties)
    _write(table, range(6))
    store = table.change_store
    assert store is not None
    snapshot = store.refresh().current_snapshot()
    assert snapshot is not None
    assert len(snapshot.manifests(store.io)) == 6


def test_cache_keeps_the_newest_entries() -> None:
    cache = MetadataCache(capacity=2)
    a, b, c = object(), object(), object()
    cache.put("a", a)  # type: ignore[arg-type]
    cache.put("b", b)  # type: ignore[arg-type]
    assert cache.get("a") is a  # a is now the newest
    cache.put("c", c)  # type: ignore[arg-type]
    assert cache.get("b") is None
    assert cache.get("a") is a
    assert cache.get("c") is c


def test_sqlite_catalog_runs_in_wal_mode_without_journal_fsync(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])
    iceberg = catalog.iceberg
    assert isinstance(iceberg, SqlCatalogWithCache)
    with iceberg.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
    # a second catalog on the same file (another process, say) reads what the first committed
    _write(catalog.load_table("db.orders"), range(2))
    assert len(rows_of(local_catalog(tmp_path).load_table("db.orders").scan().to_arrow())) == 2
