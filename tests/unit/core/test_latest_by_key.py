"""A primary key means one row per key: the latest change by (transaction id, file offset) wins.

Regression tests for the answers the library gave before (issue 14): both rows of a key
whenever a writer did not send a delete before re-inserting it.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa
import pytest

from mixed_iceberg import MixedCatalog
from mixed_iceberg.table import MixedTable
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

_names = itertools.count()


@pytest.fixture
def catalog(tmp_path: Path) -> MixedCatalog:
    return local_catalog(tmp_path / "c")


def _table(catalog: MixedCatalog, **properties: str) -> MixedTable:
    return catalog.create_table(f"db.t{next(_names)}", ORDERS_SCHEMA, primary_key=["id"], properties=properties)


def _commit(table: MixedTable, *rows: tuple[str, int, str | None, int | None, float | None]) -> None:
    with table.new_transaction() as txn:
        txn.write(changes(list(rows)))


def _base_rows(table: MixedTable) -> list[tuple[object, ...]]:
    return rows_of(table.refresh().base_store.scan().to_arrow())


@pytest.mark.parametrize("upsert", ["false", "true"])
def test_seed_example_insert_then_update_without_before_image_reads_the_update(catalog: MixedCatalog, upsert: str) -> None:
    table = _table(catalog, **{"write.upsert.enabled": upsert})
    _commit(table, ("+I", 7, "free", 1, 1.0), ("+U", 7, "pro", 1, 1.0))
    assert rows_of(table.scan().to_arrow()) == [(7, "pro", 1, 1.0)]


def test_two_inserts_of_one_key_keep_the_later(catalog: MixedCatalog) -> None:
    table = _table(catalog)
    _commit(table, ("+I", 1, "a", 1, 1.0), ("+I", 1, "b", 2, 2.0))
    _commit(table, ("+I", 2, "x", 1, 1.0))
    _commit(table, ("+I", 2, "y", 1, 1.0))
    assert rows_of(table.scan().to_arrow()) == [(1, "b", 2, 2.0), (2, "y", 1, 1.0)]


def test_insert_of_a_key_already_in_the_base_store_replaces_it(catalog: MixedCatalog) -> None:
    table = _table(catalog)
    table.bulk_load(changes([("+I", 1, "old", 1, 1.0), ("+I", 2, "keep", 2, 2.0)]).drop_columns(["_change_action"]))
    _commit(table, ("+I", 1, "new", 5, 5.0))
    assert rows_of(table.scan().to_arrow()) == [(1, "new", 5, 5.0), (2, "keep", 2, 2.0)]
    table.optimizing.run("minor")
    assert rows_of(table.scan().to_arrow()) == [(1, "new", 5, 5.0), (2, "keep", 2, 2.0)]
    assert _base_rows(table) == [(1, "new", 5, 5.0), (2, "keep", 2, 2.0)], "one live base row per key after minor"


def test_lone_update_before_deletes_the_key(catalog: MixedCatalog) -> None:
    table = _table(catalog)
    _commit(table, ("+I", 1, "a", 1, 1.0), ("+I", 2, "b", 1, 1.0))
    _commit(table, ("-U", 1, "a", 1, 1.0))
    assert rows_of(table.scan().to_arrow()) == [(2, "b", 1, 1.0)]


def test_bulk_load_with_repeated_keys_keeps_the_last_row_of_each(catalog: MixedCatalog) -> None:
    table = _table(catalog)
    rows = changes([("+I", 1, "a", 1, 1.0), ("+I", 1, "b", 2, 2.0), ("+I", 2, "c", 3, 3.0)])
    table.bulk_load(rows.drop_columns(["_change_action"]))
    assert rows_of(table.scan().to_arrow()) == [(1, "b", 2, 2.0), (2, "c", 3, 3.0)]
    table.optimizing.run("full")
    assert _base_rows(table) == [(1, "b", 2, 2.0), (2, "c", 3, 3.0)]


def test_bulk_load_into_a_table_with_rows_replaces_their_keys(catalog: MixedCatalog) -> None:
    table = _table(catalog)
    table.bulk_load(changes([("+I", 1, "a", 1, 1.0), ("+I", 2, "b", 2, 2.0)]).drop_columns(["_change_action"]))
    _commit(table, ("+I", 3, "c", 3, 3.0))
    table.bulk_load(changes([("+I", 1, "z", 9, 9.0), ("+I", 3, "y", 8, 8.0)]).drop_columns(["_change_action"]))
    expected = [(1, "z", 9, 9.0), (2, "b", 2, 2.0), (3, "y", 8, 8.0)]
    assert rows_of(table.scan().to_arrow()) == expected
    table.optimizing.run("full")
    assert _base_rows(table) == expected


def test_a_newer_row_that_fails_the_filter_hides_the_older_row_that_passes(catalog: MixedCatalog) -> None:
    table = _table(catalog)
    table.bulk_load(changes([("+I", 1, "a", 5, 1.0), ("+I", 2, "a", 5, 1.0)]).drop_columns(["_change_action"]))
    _commit(table, ("+I", 1, "a", 1, 1.0))  # qty drops below the filter's bound
    _commit(table, ("+I", 3, "a", 1, 1.0), ("+I", 3, "a", 7, 1.0))
    assert rows_of(table.scan(row_filter="qty > 3").to_arrow()) == [(2, "a", 5, 1.0), (3, "a", 7, 1.0)]
    assert rows_of(table.scan(row_filter="qty > 3", selected_fields=("id",)).to_arrow()) == [(2,), (3,)]


@pytest.mark.parametrize("kind", ["minor", "major", "full"])
def test_optimizing_leaves_one_live_base_row_per_key(catalog: MixedCatalog, kind: str) -> None:
    table = _table(catalog, **{"self-optimizing.target-size": "1024"})
    table.bulk_load(changes([("+I", k, "a", k, 1.0) for k in range(50)]).drop_columns(["_change_action"]))
    _commit(table, *[("+I", k, "b", k, 2.0) for k in range(0, 50, 3)])
    _commit(table, ("+U", 1, "c", 1, 3.0), ("-D", 2, None, None, None), ("+I", 99, "d", 9, 9.0))
    expected = rows_of(table.scan().to_arrow())
    assert len(expected) == 50
    table.optimizing.run(kind)
    assert rows_of(table.scan().to_arrow()) == expected
    assert _base_rows(table) == expected


def test_changes_label_a_new_key_insert_and_give_an_upsert_its_before_image(catalog: MixedCatalog) -> None:
    table = _table(catalog, **{"write.upsert.enabled": "true"})
    _commit(table, ("+I", 1, "a", 1, 1.0))
    first = table.refresh().change_store.current_snapshot()
    assert first is not None
    _commit(table, ("+I", 1, "b", 2, 2.0), ("-D", 5, None, None, None))
    cdc = table.changes().to_arrow()
    actions = [(r["_change_action"], r["id"], r["cat"]) for r in cdc.to_pylist()]
    assert actions == [("+I", 1, "a"), ("-U", 1, "a"), ("+U", 1, "b")], "a delete of an absent key emits nothing"
    since = table.changes(from_snapshot=first.snapshot_id).to_arrow()
    assert [(r["_change_action"], r["cat"]) for r in since.to_pylist()] == [("-U", "a"), ("+U", "b")]


def test_changes_before_images_start_from_bulk_loaded_rows(catalog: MixedCatalog) -> None:
    table = _table(catalog)
    table.bulk_load(changes([("+I", 1, "loaded", 1, 1.0)]).drop_columns(["_change_action"]))
    _commit(table, ("+U", 1, "new", 1, 1.0), ("-D", 1, "new", 1, 1.0))
    cdc = table.changes().to_arrow()  # from the empty table: the load is a change too
    assert [(r["_change_action"], r["cat"]) for r in cdc.to_pylist()] == [
        ("+I", "loaded"),
        ("-U", "loaded"),
        ("+U", "new"),
        ("-D", "new"),
    ]


def test_update_pairs_across_batches_of_one_transaction(catalog: MixedCatalog) -> None:
    table = _table(catalog)
    _commit(table, ("+I", 1, "a", 1, 1.0))
    with table.new_transaction() as txn:
        txn.write(changes([("-U", 1, "a", 1, 1.0)]))
        txn.write(changes([("+U", 1, "b", 1, 1.0)]))
    assert rows_of(table.scan().to_arrow()) == [(1, "b", 1, 1.0)]
    cdc = pa.Table.from_pylist(table.changes().to_arrow().to_pylist())
    assert cdc.column("_change_action").to_pylist() == ["+I", "-U", "+U"]


def test_key_moving_between_partitions_stays_one_row_through_optimizing(catalog: MixedCatalog) -> None:
    """Partitioned by a non-key column: an upsert moves a key, a key-only delete finds its row."""
    table = catalog.create_table("db.moving", ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"])
    table.bulk_load(changes([("+I", 1, "eu", 1, 1.0), ("+I", 2, "eu", 2, 2.0)]).drop_columns(["_change_action"]))
    _commit(table, ("+I", 1, "us", 5, 5.0), ("-D", 2, None, None, None))
    assert rows_of(table.scan().to_arrow()) == [(1, "us", 5, 5.0)]
    assert rows_of(table.scan(row_filter="cat = 'eu'").to_arrow()) == []
    table.optimizing.run("minor")
    assert rows_of(table.scan().to_arrow()) == [(1, "us", 5, 5.0)]
    assert _base_rows(table) == [(1, "us", 5, 5.0)]


def test_partition_filter_never_lets_a_merged_row_beat_newer_change_it_excludes(catalog: MixedCatalog) -> None:
    table = catalog.create_table(
        "db.filtered", ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"], properties={"self-optimizing.filter": "cat = 'a'"}
    )
    _commit(table, ("+I", 1, "a", 1, 1.0), ("+I", 1, "b", 2, 2.0), ("+I", 2, "a", 3, 3.0))  # key 1 moves to b
    table.optimizing.run("minor")
    assert rows_of(table.scan().to_arrow()) == [(1, "b", 2, 2.0), (2, "a", 3, 3.0)]
    assert _base_rows(table) == [(2, "a", 3, 3.0)], "only the filtered partition was merged"


def test_time_travel_after_expiry_raises_instead_of_answering_wrongly(catalog: MixedCatalog) -> None:
    """The ChangeStore keeps more history than the BaseStore (more commits): an as-of read whose
    BaseStore snapshot is gone raises, where it used to read the base as empty."""
    import time

    from mixed_iceberg.exceptions import SnapshotExpiredError
    from mixed_iceberg.optimizing.maintenance.facade import TableMaintenance

    table = _table(catalog, **{"snapshot.keep.min-count": "3"})
    table.bulk_load(changes([("+I", k, "a", k, 1.0) for k in range(10)]).drop_columns(["_change_action"]))
    snapshots = []
    for key in range(5):
        _commit(table, ("-D", key, None, None, None))
        snapshots.append(table.refresh().change_store.current_snapshot())
    assert len(table.scan(snapshot_id=snapshots[2].snapshot_id).to_arrow()) == 7  # type: ignore[union-attr]
    table.optimizing.run("full")
    for _ in range(2):
        table.bulk_load(table.scan().to_arrow(), overwrite=True)
    TableMaintenance(table.refreshed, clock=lambda: time.time() + 10**7).expire_snapshots()
    table.refresh()
    assert table.change_store is not None
    assert table.change_store.metadata.snapshot_by_id(snapshots[2].snapshot_id) is not None  # type: ignore[union-attr]
    with pytest.raises(SnapshotExpiredError, match="BaseStore snapshot of that time"):
        table.scan(snapshot_id=snapshots[2].snapshot_id).to_arrow()  # type: ignore[union-attr]
    assert len(table.scan().to_arrow()) == 5


@pytest.mark.parametrize(
    ("partition_by", "moves"), [(None, False), (["bucket(4, id)"], False), (["void(cat)"], False), (["cat"], True)]
)
def test_tables_partitioned_by_a_column_outside_the_key_are_merged_across_partitions(
    catalog: MixedCatalog, partition_by: list[str] | None, moves: bool
) -> None:
    from mixed_iceberg.optimizing.engine import crosses_partitions

    table = catalog.create_table(f"db.x{next(_names)}", ORDERS_SCHEMA, primary_key=["id"], partition_by=partition_by)
    assert crosses_partitions(table.handle) is moves


def test_a_base_row_newer_than_the_tail_hides_it_even_when_the_filter_drops_the_base_row(catalog: MixedCatalog) -> None:
    """Another engine (Amoro's Spark writer) may load a BaseStore file whose transaction id is
    above the unmerged change rows: its row is the key's latest, whatever the value filter."""
    from mixed_iceberg.schema import arrow_schema
    from mixed_iceberg.store.commit import commit_files
    from mixed_iceberg.store.write.layout import split_sized
    from mixed_iceberg.store.write.parallel import write_groups
    from mixed_iceberg.typedef import DataFileType

    table = _table(catalog)
    _commit(table, ("+I", 1, "old", 7, 1.0), ("+I", 2, "keep", 7, 1.0))
    base = table.refresh().base_store
    rows = changes([("+I", 1, "newer", 1, 1.0)]).drop_columns(["_change_action"]).cast(arrow_schema(table.schema()))
    writer = table.writer_identity()
    groups = split_sized(base, rows, table.primary_key, table.config.layout.base_buckets, table.config.layout.target_file_size)
    files = write_groups(base, groups, base.schema(), lambda g: writer.file_name(g.node, DataFileType.BASE_FILE, 99))
    commit_files(base, added=files, table_name=table.name)
    assert rows_of(table.scan().to_arrow()) == [(1, "newer", 1, 1.0), (2, "keep", 7, 1.0)]
    assert rows_of(table.scan(row_filter="qty > 3").to_arrow()) == [(2, "keep", 7, 1.0)], "the old version resurfaced"
