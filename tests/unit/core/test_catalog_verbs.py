"""Catalog and table verbs a pyiceberg user reaches for: namespaces, rename (both stores of a
keyed table), table_exists, changes() with a filter and fields, Iceberg's comment/owner properties."""

from __future__ import annotations

from pathlib import Path

import pytest

from mixed_iceberg.exceptions import (
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
