"""Validation at the door: bad input is refused when it is given, with a MixedIcebergError that
names the table and says what was expected and what was found; no table is left broken."""

from __future__ import annotations

import datetime as dt
import os
import re
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from mixed_iceberg import MixedCatalog, MixedIcebergError, MixedTable
from mixed_iceberg.exceptions import InvalidFilterError, InvalidScanError, InvalidSchemaError, PropertyError
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of


def _rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "cat": pa.array(["a" if i % 2 else "b" for i in ids], pa.string()),
            "qty": pa.array(ids, pa.int32()),
            "price": pa.array([float(i) for i in ids], pa.float64()),
        }
    )


def _loaded(catalog: MixedCatalog, name: str = "db.t", **properties: str) -> MixedTable:
    """A keyed table with BaseStore rows 1-4 and a ChangeStore commit (+I 5, -D 1)."""
    table = catalog.create_table(name, ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"], properties=properties)
    table.bulk_load(_rows([1, 2, 3, 4]))
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 5, "a", 5, 5.0), ("-D", 1, "a", 1, 1.0)]))
    return table


def _files(folder: Path) -> list[str]:
    return sorted(str(Path(d, f).relative_to(folder)) for d, _, names in os.walk(folder) for f in names)


# -- 1. reserved column names ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "column", ["_file_offset", "_change_action", "_transaction_id", "_tree_node", "_ingest_time", "_File_Offset", "__lsn"]
)
@pytest.mark.parametrize("primary_key", [["id"], None])
def test_reserved_column_name_is_refused_at_create(tmp_path: Path, column: str, primary_key: list[str] | None) -> None:
    catalog = local_catalog(tmp_path)
    schema = ORDERS_SCHEMA.append(pa.field(column, pa.int64()))
    with pytest.raises(InvalidSchemaError, match=rf"table db\.t: expected column names other than .*found \['{column}'\]"):
        catalog.create_table("db.t", schema, primary_key=primary_key)
    assert catalog.list_tables("db") == []


# -- 2. Iceberg keys parsed on every commit -------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("commit.manifest.min-count-to-merge", "x", "expected an integer"),
        ("commit.manifest.min-count-to-merge", "0", "expected a positive count"),
        ("commit.manifest-merge.enabled", "maybe", "expected true or false"),
        ("commit.manifest.target-size-bytes", "-1", "expected a positive byte count"),
        ("write.parquet.row-group-limit", "many", "expected an integer"),
        ("write.parquet.compression-codec", "zip", "expected one of zstd, gzip"),
        ("write.parquet.compression-codec", "UNCOMPRESSED", "expected one of zstd, gzip"),
        ("write.metadata.previous-versions-max", "none", "expected an integer"),
    ],
)
def test_bad_iceberg_commit_property_is_refused_at_create(tmp_path: Path, key: str, value: str, expected: str) -> None:
    catalog = local_catalog(tmp_path)
    with pytest.raises(PropertyError, match=rf"table db\.t: property '{re.escape(key)}': {expected}.*found '{value}'"):
        catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"], properties={key: value})
    assert catalog.list_tables("db") == []


def test_declared_iceberg_commit_properties_still_reach_the_commit(tmp_path: Path) -> None:
    properties = {"commit.manifest.min-count-to-merge": "2", "write.parquet.compression-codec": "SNAPPY"}
    table = _loaded(local_catalog(tmp_path), **properties)
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 6, "b", 6, 6.0)]))
    assert table.change_store is not None
    snapshot = table.change_store.current_snapshot()
    assert snapshot is not None
    assert len(snapshot.manifests(table.change_store.io)) == 1  # merged at 2, as Iceberg does


# -- 3. self-optimizing.filter --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("region = ", r"expected a predicate such as .*found 'region = ' \(syntax error at column \d+\)"),
        ("cat = = 'a'", r"expected a predicate such as .*found \"cat = = 'a'\""),
        ("region = 'eu'", r"expected columns of \['id', 'cat', 'qty', 'price'\], found \['region'\]"),
    ],
)
def test_bad_optimizing_filter_is_refused_at_create(tmp_path: Path, value: str, expected: str) -> None:
    catalog = local_catalog(tmp_path)
    with pytest.raises(PropertyError, match=rf"table db\.t: property 'self-optimizing\.filter'.*{expected}"):
        catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"], properties={"self-optimizing.filter": value})
    assert catalog.list_tables("db") == []


def test_good_optimizing_filter_limits_optimizing_to_its_partitions(tmp_path: Path) -> None:
    table = _loaded(local_catalog(tmp_path), **{"self-optimizing.filter": "cat = 'a'"})
    assert table.optimizing.run("full").committed
    assert table.change_store is not None
    left = {task.file.partition[0] for task in table.change_store.scan().plan_files()}
    assert left == {"a"} or left == set()  # the change files of partition b were not the filter's
    assert rows_of(table.scan().to_arrow()) == rows_of(_rows([2, 3, 4, 5]))


# -- 4. property changes --------------------------------------------------------------------------


def test_update_properties_changes_both_stores_and_refreshes(tmp_path: Path) -> None:
    table = _loaded(local_catalog(tmp_path), **{"self-optimizing.quota": "0.3"})
    table.update_properties({"write.upsert.enabled": "true", "self-optimizing.group": "fast"}, removals=["self-optimizing.quota"])
    assert table.config.layout.upsert
    assert table.change_store is not None
    for store in (table.base_store, table.change_store):
        assert store.properties["write.upsert.enabled"] == "true"
        assert store.properties["self-optimizing.group"] == "fast"
        assert "self-optimizing.quota" not in store.properties
    assert table.properties["mixed-format.primary-key-fields"] == "id"  # markers untouched
    assert rows_of(table.scan().to_arrow()) == rows_of(_rows([2, 3, 4, 5]))


def test_update_properties_on_an_unkeyed_table(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.u", ORDERS_SCHEMA)
    assert table.update_properties({"snapshot.keep.duration": "12h"}).properties["snapshot.keep.duration"] == "12h"


@pytest.mark.parametrize(
    ("updates", "removals", "expected"),
    [
        ({"commit.manifest.min-count-to-merge": "x"}, (), r"property 'commit\.manifest\.min-count-to-merge'.*found 'x'"),
        ({"base.file-index.hash-bucket": "3"}, (), "expected a power of two, found '3'"),
        ({"self-optimizing.filter": "region = "}, (), r"self-optimizing\.filter.*syntax error"),
        ({"self-optimizing.filter": "nope = 1"}, (), r"expected columns of .*found \['nope'\]"),
        ({"self-optimizing.grup": "x"}, (), "unknown property 'self-optimizing.grup'; did you mean 'self-optimizing.group'"),
        ({"mixed-format.primary-key-fields": "cat"}, (), "written by mixed-iceberg itself and cannot be set"),
        ({}, ["mixed-format.primary-key-fields"], "written by mixed-iceberg itself and cannot be removed"),
        ({}, ["table-format"], "written by mixed-iceberg itself and cannot be removed"),
        ({}, ["self-optimizing.grup"], "unknown property 'self-optimizing.grup'"),
        ({"format-version": "3"}, (), r"\['format-version'\] are fixed"),
        ({"self-optimizing.group": "a"}, ["self-optimizing.group"], r"found \['self-optimizing\.group'\] in both"),
        ({"write.upsert.enabled": True}, (), "expected a string value, found bool"),
        ({}, "self-optimizing.group", "expected an iterable of keys, found the string"),
    ],
)
def test_bad_property_change_is_refused_and_changes_nothing(
    tmp_path: Path, updates: dict[str, str], removals: list[str], expected: str
) -> None:
    table = _loaded(local_catalog(tmp_path), **{"self-optimizing.group": "g"})
    assert table.change_store is not None
    before = (dict(table.base_store.properties), dict(table.change_store.properties))
    metadata = (table.base_store.metadata_location, table.change_store.metadata_location)
    with pytest.raises(PropertyError, match=rf"table db\.t: .*{expected}"):
        table.update_properties({"self-optimizing.quota": "0.9", **updates}, removals)
    table.refresh()
    assert (dict(table.base_store.properties), dict(table.change_store.properties)) == before
    assert (table.base_store.metadata_location, table.change_store.metadata_location) == metadata
    assert table.optimizing.run("full").committed  # and the table still works


# -- 5. filters and keys --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row_filter", "expected"),
    [
        ("id <", r"expected a predicate such as \"id < 100 AND cat = 'a'\", found 'id <' \(syntax error at column 1\)"),
        ("nope = 1", r"expected columns of \['id', 'cat', 'qty', 'price'\], found \['nope'\]"),
        ("nope = 1 OR cat = 'a' OR other IS NULL", r"found \['nope', 'other'\]"),
        ("id = 'abc'", "expected values of the columns' types"),
    ],
)
def test_bad_row_filter_is_an_invalid_filter_error(tmp_path: Path, row_filter: str, expected: str) -> None:
    table = _loaded(local_catalog(tmp_path))
    with pytest.raises(InvalidFilterError, match=expected) as info:
        table.scan(row_filter=row_filter).to_arrow()
    assert isinstance(info.value, MixedIcebergError)


@pytest.mark.parametrize(
    ("key_type", "found"),
    [
        (pa.float64(), "double"),
        (pa.float32(), "float"),
        (pa.uuid(), "uuid"),
        (pa.struct([pa.field("a", pa.int32())]), "struct"),
        (pa.list_(pa.int32()), "list"),
        (pa.map_(pa.string(), pa.int32()), "map"),
    ],
)
def test_key_type_that_cannot_be_a_key_is_refused_at_create(tmp_path: Path, key_type: pa.DataType, found: str) -> None:
    catalog = local_catalog(tmp_path)
    schema = pa.schema([pa.field("k", key_type, nullable=False), pa.field("v", pa.int64())])
    with pytest.raises(
        InvalidSchemaError, match=rf"table db\.t: primary key column 'k': expected one of the key types .*found {found}"
    ):
        catalog.create_table("db.t", schema, primary_key=["k"])
    assert catalog.list_tables("db") == []


@pytest.mark.parametrize(
    ("key_type", "values"),
    [
        (pa.bool_(), [True, False]),
        (pa.int32(), [1, 2]),
        (pa.binary(), [b"a", b"b"]),
        (pa.binary(4), [b"aaaa", b"bbbb"]),
        (pa.decimal128(10, 2), [Decimal("1.10"), Decimal("2.20")]),
        (pa.date32(), [dt.date(2026, 1, 1), dt.date(2026, 1, 2)]),
        (pa.time64("us"), [dt.time(1), dt.time(2)]),
        (pa.timestamp("us"), [dt.datetime(2026, 1, 1), dt.datetime(2026, 1, 2)]),
        (pa.timestamp("us", tz="UTC"), [dt.datetime(2026, 1, 1, tzinfo=dt.UTC), dt.datetime(2026, 1, 2, tzinfo=dt.UTC)]),
        (pa.string(), ["a", "b"]),
    ],
)
def test_allowed_key_types_write_merge_and_optimize(tmp_path: Path, key_type: pa.DataType, values: list[object]) -> None:
    table = local_catalog(tmp_path).create_table(
        "db.t", pa.schema([pa.field("k", key_type, nullable=False), pa.field("v", pa.int64())]), primary_key=["k"]
    )
    keys = pa.array(values, key_type)
    table.bulk_load(pa.table({"k": keys, "v": pa.array([1, 2], pa.int64())}))
    with table.new_transaction() as txn:
        txn.write(
            pa.table({"k": keys.take([0, 0, 1]), "v": pa.array([1, 10, 2], pa.int64()), "_change_action": ["-U", "+U", "-D"]})
        )
    assert table.scan().to_arrow().column("v").to_pylist() == [10]
    table.optimizing.run("full")
    assert table.scan().to_arrow().column("v").to_pylist() == [10]


# -- 6. case-insensitive filters ------------------------------------------------------------------


@pytest.mark.parametrize(("row_filter", "ids"), [("ID = 5", [5]), ("CAT = 'a' AND Qty > 2", [3, 5]), ("Id IN (1, 2)", [2])])
def test_case_insensitive_filter_reads_base_and_change_rows(tmp_path: Path, row_filter: str, ids: list[int]) -> None:
    table = _loaded(local_catalog(tmp_path))
    found = table.scan(row_filter=row_filter, case_sensitive=False).to_arrow()
    assert sorted(found.column("id").to_pylist()) == ids
    assert rows_of(found) == rows_of(table.scan(row_filter=row_filter.lower()).to_arrow())
    with pytest.raises(InvalidFilterError, match="expected columns of"):
        table.scan(row_filter=row_filter).to_arrow()


def test_case_insensitive_scans_select_fields_whatever_their_case(tmp_path: Path) -> None:
    table = _loaded(local_catalog(tmp_path))
    found = table.scan(selected_fields=("ID", "Qty"), case_sensitive=False).to_arrow()
    assert found.column_names == ["id", "qty"]
    assert rows_of(found) == rows_of(table.scan(selected_fields=("id", "qty")).to_arrow())
    cdc = table.changes(selected_fields=("CAT",), case_sensitive=False).to_arrow()
    assert cdc.column_names == ["cat", "_change_action", "_transaction_id", "_file_offset"]
    with pytest.raises(InvalidScanError, match="selected fields"):
        table.scan(selected_fields=("ID",)).to_arrow()


# -- 7. purge and fresh locations -----------------------------------------------------------------


def test_purge_deletes_every_file_of_an_optimized_table_and_the_name_starts_afresh(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    table = _loaded(catalog)
    table.optimizing.run("full")
    warehouse = tmp_path / "wh" / "db"
    assert any(name.endswith(".puffin") for name in _files(warehouse / "t")), "optimizing wrote no statistics file"
    assert table.change_store is not None
    assert (table.base_store.location(), table.change_store.location()) == (
        f"file://{warehouse}/t",
        f"file://{warehouse}/t_change_",
    )
    catalog.drop_table("db.t", purge=True)
    assert _files(warehouse) == []
    assert not (warehouse / "t").exists()
    assert not (warehouse / "t_change_").exists()
    again = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    assert again.base_store.location() == f"file://{warehouse}/t"  # Amoro's layout, the folder being free
    assert again.scan().to_arrow().num_rows == 0


def test_table_created_where_a_dropped_one_left_files_gets_a_fresh_folder(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    _loaded(catalog).optimizing.run("full")
    warehouse = tmp_path / "wh" / "db"
    left = _files(warehouse)
    catalog.drop_table("db.t")  # no purge: the files stay
    again = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    assert again.change_store is not None
    for store, folder in ((again.base_store, "t"), (again.change_store, "t_change_")):
        assert re.fullmatch(rf"file://{re.escape(str(warehouse))}/{folder}-[0-9a-f]{{32}}", store.location()), store.location()
    again.bulk_load(_rows([7]))
    assert rows_of(again.scan().to_arrow()) == rows_of(_rows([7]))
    assert set(left) <= set(_files(warehouse))  # the old files untouched, none shared
    catalog.drop_table("db.t", purge=True)
    assert _files(warehouse) == left


def test_uuid_value_column_writes_merges_and_optimizes(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table(
        "db.t", pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("u", pa.uuid())]), primary_key=["k"]
    )
    uuids = [uuid.UUID(int=i) for i in range(6)]

    def column(ids: list[int]) -> pa.Array:
        return pa.ExtensionArray.from_storage(pa.uuid(), pa.array([uuids[i].bytes for i in ids], pa.binary(16)))

    table.bulk_load(pa.table({"k": pa.array([1, 2], pa.int64()), "u": column([1, 2])}))
    with table.new_transaction() as txn:
        txn.write(pa.table({"k": pa.array([1, 1, 2], pa.int64()), "u": column([1, 5, 2]), "_change_action": ["-U", "+U", "-D"]}))
    assert table.scan().to_arrow().to_pylist() == [{"k": 1, "u": uuids[5]}]
    table.optimizing.run("full")
    assert table.scan().to_arrow().to_pylist() == [{"k": 1, "u": uuids[5]}]


def test_failed_change_store_create_leaves_no_base_store_or_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = local_catalog(tmp_path)
    create = catalog.iceberg.create_table

    def fail_on_change_store(identifier: str, *args: object, **kwargs: object) -> object:
        if identifier.endswith("_change_"):
            raise OSError("disk full")
        return create(identifier, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(catalog.iceberg, "create_table", fail_on_change_store)
    with pytest.raises(OSError, match="disk full"):
        catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    monkeypatch.undo()
    assert catalog.list_tables("db") == []
    assert _files(tmp_path / "wh") == []
    assert catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"]).base_store.location().endswith("/wh/db/t")
