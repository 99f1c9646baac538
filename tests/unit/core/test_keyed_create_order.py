"""A keyed table appears and disappears whole: its ChangeStore is created before its BaseStore
and dropped after it, so a reader never finds a BaseStore whose ChangeStore is missing; a
ChangeStore left behind by a create or drop cut short never blocks the name for good, and one
holding data is never purged silently."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pyiceberg.catalog import Catalog

from mixed_iceberg.catalog import mixed_catalog
from mixed_iceberg.exceptions import NoSuchTableError, TableExistsError
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of


def _record_creates(monkeypatch: pytest.MonkeyPatch, iceberg: Catalog, fail_on: str | None = None) -> list[str]:
    created: list[str] = []
    original = iceberg.create_table

    def create_table(identifier: str, *args: object, **kwargs: object) -> object:
        if identifier == fail_on:
            raise OSError(f"storage failed creating {identifier}")
        table = original(identifier, *args, **kwargs)  # type: ignore[arg-type]
        created.append(identifier)
        return table

    monkeypatch.setattr(iceberg, "create_table", create_table)
    return created


def test_the_change_store_exists_before_the_base_store_is_published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = local_catalog(tmp_path)
    created = _record_creates(monkeypatch, catalog.iceberg)
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    assert created == ["db.t_change_", "db.t"]


def test_a_failed_base_create_leaves_no_change_store_and_the_name_is_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = local_catalog(tmp_path)
    with monkeypatch.context() as patch:
        _record_creates(patch, catalog.iceberg, fail_on="db.t")
        with pytest.raises(OSError, match="storage failed"):
            catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    assert not catalog.iceberg.table_exists("db.t_change_")
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])


def _cut_short_create(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, age_s: float) -> mixed_catalog.MixedCatalog:
    """A catalog holding the ChangeStore of db.t as a create killed before its BaseStore left it."""
    catalog = local_catalog(tmp_path)
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    catalog.iceberg.drop_table("db.t")  # what a kill between the two creates leaves
    real = time.time
    monkeypatch.setattr(mixed_catalog.time, "time", lambda: real() + age_s)
    return catalog


def test_a_young_orphan_change_store_is_a_create_under_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = _cut_short_create(tmp_path, monkeypatch, age_s=0)
    with pytest.raises(TableExistsError, match="has not finished"):
        catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with pytest.raises(NoSuchTableError):  # no half table for readers
        catalog.load_table("db.t")


def test_an_old_empty_orphan_change_store_is_purged_by_the_next_create(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = _cut_short_create(tmp_path, monkeypatch, age_s=mixed_catalog.ORPHAN_AGE_S + 1)
    table = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with table.new_transaction(("w", 1)) as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    assert rows_of(catalog.load_table("db.t").scan().to_arrow()) == [(1, "a", 1, 1.0)]


def test_an_orphan_change_store_with_data_is_never_purged_silently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = local_catalog(tmp_path)
    table = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with table.new_transaction(("w", 1)) as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    catalog.iceberg.drop_table("db.t")  # a drop cut short after its BaseStore
    real = time.time
    monkeypatch.setattr(mixed_catalog.time, "time", lambda: real() + 10 * mixed_catalog.ORPHAN_AGE_S)
    with pytest.raises(TableExistsError, match=r"holding data .*drop_table\('db.t_change_'\)"):
        catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    catalog.drop_table("db.t_change_")  # as the message says: it goes alone
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])


def test_drop_removes_the_base_store_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    dropped: list[str] = []
    original = catalog.iceberg.drop_table

    def drop_table(identifier: str) -> None:
        dropped.append(identifier)
        if identifier == "db.t_change_":
            with pytest.raises(NoSuchTableError):  # the table is gone for readers already
                catalog.load_table("db.t")
        original(identifier)

    monkeypatch.setattr(catalog.iceberg, "drop_table", drop_table)
    catalog.drop_table("db.t")
    assert dropped == ["db.t", "db.t_change_"]


def test_a_change_store_of_a_live_table_is_not_dropped_alone(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with pytest.raises(NoSuchTableError, match=r"is the ChangeStore of db\.t; drop that table instead"):
        catalog.drop_table("db.t_change_")
    assert catalog.load_table("db.t").change_store is not None
