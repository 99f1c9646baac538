"""Catalog and table verbs a pyiceberg user reaches for: namespaces, rename (both stores of a
keyed table), table_exists, changes() with a filter and fields, Iceberg's comment/owner properties,
tuple identifiers, drop (files kept) and purge (files deleted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mixed_iceberg.exceptions import (
    InvalidIdentifierError,
    NamespaceExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    PropertyError,
    TableExistsError,
)
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of


def test_namespaces_are_created_listed_and_dropped(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_namespace("sales", {"owner": "team-a"})
    assert "sales" in catalog.list_namespaces()
    with pytest.raises(NamespaceExistsError, match="'sales' already exists"):
        catalog.create_namespace("sales")
    catalog.create_table("sales.t", ORDERS_SCHEMA, primary_key=["id"])
    with pytest.raises(NamespaceNotEmptyError, match=r"found \['sales.t'\]"):
        catalog.drop_namespace("sales")
    catalog.drop_table("sales.t")
    catalog.drop_namespace("sales")
    assert "sales" not in catalog.list_namespaces()
    with pytest.raises(NoSuchNamespaceError):
        catalog.drop_namespace("sales")


def test_rename_moves_both_stores_and_keeps_the_rows(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    table = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with table.new_transaction(("w", 1)) as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0), ("+I", 2, "b", 2, 2.0)]))
    before = rows_of(table.scan().to_arrow())
    renamed = catalog.rename_table("db.t", "other.orders")
    assert renamed.change_store is not None
    assert ".".join(renamed.change_store.name()) == "other.orders_change_"
    assert not catalog.table_exists("db.t")
    assert not catalog.table_exists("db.t_change_")
    assert catalog.list_tables("other") == ["other.orders"]
    assert rows_of(catalog.load_table("other.orders").scan().to_arrow()) == before
    with renamed.new_transaction(("w", 2)) as txn:  # still writable through its new name
        txn.write(changes([("-D", 1, None, None, None)]))
    assert rows_of(catalog.load_table("other.orders").scan().to_arrow()) == before[1:]
    with pytest.raises(NoSuchTableError):
        catalog.rename_table("db.t", "db.u")
    catalog.create_table("db.taken", ORDERS_SCHEMA)
    with pytest.raises(TableExistsError):
        catalog.rename_table("other.orders", "db.taken")


def test_changes_filter_and_selected_fields(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with table.new_transaction(("w", 1)) as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0), ("+I", 2, "b", 2, 2.0), ("+I", 3, "c", 50, 3.0)]))
    with table.new_transaction(("w", 2)) as txn:
        txn.write(changes([("-U", 2, "b", 2, 2.0), ("+U", 2, "b", 60, 2.0), ("-D", 3, "c", 50, 3.0)]))
    everything = table.changes().to_arrow()
    cdc = table.changes(row_filter="id >= 2 and qty >= 50", selected_fields=("id", "qty")).to_arrow()
    assert cdc.column_names == ["id", "qty", "_change_action", "_transaction_id", "_file_offset"]
    expected = [r for r in everything.to_pylist() if r["id"] >= 2 and r["qty"] >= 50]
    assert [(r["_change_action"], r["id"], r["qty"]) for r in cdc.to_pylist()] == [
        (r["_change_action"], r["id"], r["qty"]) for r in expected
    ]
    assert [r["_change_action"] for r in cdc.to_pylist()] == ["+I", "+U", "-D"]


def test_iceberg_comment_and_owner_properties_are_accepted(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    table = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"], properties={"comment": "orders", "owner": "ana"})
    assert (table.properties["comment"], table.properties["owner"]) == ("orders", "ana")
    table.update_properties({"comment": "all orders"})
    assert catalog.load_table("db.t").properties["comment"] == "all orders"
    with pytest.raises(PropertyError):
        catalog.create_table("db.u", ORDERS_SCHEMA, properties={"comments": "typo"})


def test_every_catalog_verb_accepts_a_tuple_identifier_as_pyiceberg_does(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_namespace(("db",))
    table = catalog.create_table(("db", "k"), ORDERS_SCHEMA, primary_key=["id"])
    assert table.name == "db.k"
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    assert catalog.load_table(("db", "k")).scan().to_arrow().num_rows == 1
    assert catalog.table_exists(("db", "k"))
    assert catalog.list_tables(("db",)) == ["db.k"]
    assert catalog.list_namespaces() == ["db"]
    assert catalog.change_identifier(("db", "k")) == "db.k_change_"
    renamed = catalog.rename_table(("db", "k"), ("db", "k2"))
    assert renamed.name == "db.k2"
    catalog.drop_table(("db", "k2"))
    catalog.create_table(("db", "p"), ORDERS_SCHEMA)
    catalog.purge_table(("db", "p"))
    assert catalog.list_tables(("db",)) == []
    catalog.drop_namespace(("db",))
    with pytest.raises(InvalidIdentifierError):
        catalog.load_table(("db.x", "k"))  # a part with a dot would name another table once joined


def test_a_table_object_from_before_a_rename_says_the_table_was_renamed_or_dropped(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    stale = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with stale.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    catalog.rename_table("db.t", "db.u")
    with pytest.raises(
        NoSuchTableError, match=r"db\.t: expected it in its catalog under that name, found none \(renamed or dropped"
    ):
        stale.scan().to_arrow()
    with pytest.raises(NoSuchTableError, match="renamed or dropped"), stale.new_transaction() as txn:
        txn.write(changes([("+I", 2, "a", 2, 2.0)]))
    assert catalog.load_table("db.u").scan().to_arrow().num_rows == 1


def test_drop_keeps_the_files_and_purge_deletes_them(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    for name in ("db.kept", "db.purged"):
        table = catalog.create_table(name, ORDERS_SCHEMA, primary_key=["id"])
        with table.new_transaction() as txn:
            txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    catalog.drop_table("db.kept")
    catalog.purge_table("db.purged")
    assert catalog.list_tables("db") == []
    warehouse = tmp_path / "wh" / "db"
    assert any(p.is_file() for p in (warehouse / "kept").rglob("*")), "drop without purge keeps the files, as Iceberg's drop does"
    assert any(p.is_file() for p in (warehouse / "kept_change_").rglob("*"))
    assert not (warehouse / "purged").exists()
    assert not (warehouse / "purged_change_").exists()
    with pytest.raises(NoSuchTableError):
        catalog.purge_table("db.purged")
