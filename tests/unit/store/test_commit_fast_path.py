"""The lighter commit path: one catalog query per commit, history serialised once, same bytes.

These protect the small-commit latency work (issue 5): the catalog swaps against the metadata a
commit was built on and falls back to pyiceberg's path when that is stale, and metadata JSON is
spliced from kept fragments but must stay byte-for-byte what pyiceberg writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.serializers import FromInputFile
from pyiceberg.table import Table
from sqlalchemy import event

from mixed_iceberg._pyiceberg.sql_catalog import SqlCatalogWithCache
from mixed_iceberg.catalog.metadata_json import FragmentCache, metadata_json
from mixed_iceberg.table import MixedTable
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of


def _write(table: MixedTable, ids: range, writer: str = "w") -> None:
    for i in ids:
        with table.new_transaction((writer, i)) as txn:
            txn.write(changes([("+I", i, "a", i, float(i))]))


@pytest.fixture
def statements() -> Iterator[list[str]]:
    """Every SQL statement any engine runs while the test runs."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement.split()[0].upper())

    from sqlalchemy.engine import Engine

    event.listen(Engine, "before_cursor_execute", record)
    yield seen
    event.remove(Engine, "before_cursor_execute", record)


def test_a_change_commit_costs_one_select_and_one_update(tmp_path: Path, statements: list[str]) -> None:
    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])
    _write(table, range(2))
    statements.clear()
    _write(table, range(2, 3))
    # the refresh before the idempotency check, then the compare-and-set; no second load
    assert [s for s in statements if s in ("SELECT", "UPDATE", "INSERT", "DELETE")] == ["SELECT", "UPDATE"]


def test_a_stale_base_falls_back_to_pyiceberg_and_leaves_no_metadata_file(tmp_path: Path) -> None:
    ours = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])
    theirs = local_catalog(tmp_path).load_table("db.orders")
    _write(ours, range(2))
    store = ours.change_store
    assert store is not None
    stale = store.catalog.load_table(store.name())
    _write(theirs, range(2, 4), writer="them")
    # a plain property update built on stale metadata: the swap misses, pyiceberg's path
    # re-applies it on top of the current metadata (their snapshots stay)
    with stale.transaction() as txn:
        txn.set_properties({"note": "x"})
    current = store.catalog.load_table(store.name())
    assert current.properties["note"] == "x"
    assert len(current.metadata.snapshots) == 4
    on_disk = {p.name for p in Path(current.metadata_location.removeprefix("file://")).parent.glob("*.metadata.json")}
    logged = {Path(e.metadata_file).name for e in current.metadata.metadata_log}
    # every metadata file is the current one or in the log: the swap that missed left nothing
    assert on_disk <= logged | {Path(current.metadata_location).name}
    assert len(rows_of(local_catalog(tmp_path).load_table("db.orders").scan().to_arrow())) == 4


def test_metadata_files_are_byte_for_byte_pyiceberg_json(tmp_path: Path) -> None:
    # a short metadata log, so that it slides (drops its oldest entries) during the test
    props = {"write.metadata.previous-versions-max": "3"}
    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"], properties=props)
    _write(table, range(8))
    store = table.change_store
    assert store is not None
    store.refresh()
    assert len(store.metadata.metadata_log) == 3
    text = Path(store.metadata_location.removeprefix("file://")).read_text()
    assert text == store.metadata.model_dump_json(exclude_none=True)
    parsed = FromInputFile.table_metadata(store.io.new_input(store.metadata_location))
    assert parsed == store.metadata
    assert len(json.loads(text)["snapshots"]) == 8


def _change_store_after(tmp_path: Path, commits: int) -> tuple[MixedTable, Table]:
    """A keyed table after ``commits`` one-row commits, and its refreshed ChangeStore."""
    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])
    _write(table, range(commits))
    store = table.change_store
    assert store is not None
    store.refresh()
    return table, store


def test_history_is_serialised_once_per_entry(tmp_path: Path) -> None:
    table, store = _change_store_after(tmp_path, 5)
    cache = FragmentCache()
    first = metadata_json(store.metadata, cache)
    assert first == store.metadata.model_dump_json(exclude_none=True)
    misses = cache.misses
    assert misses == 5 + 5 + len(store.metadata.metadata_log)  # snapshots, snapshot log, metadata log
    _write(table, range(5, 6))
    store.refresh()
    assert metadata_json(store.metadata, cache) == store.metadata.model_dump_json(exclude_none=True)
    assert cache.misses - misses == 3  # one new snapshot, one snapshot-log and one metadata-log entry


def test_one_metadata_object_is_serialised_once_for_its_file_and_its_answer(tmp_path: Path) -> None:
    """serve writes a commit's metadata file and answers with the same JSON: the second call for
    the same (frozen) metadata object returns the text made for the first; an equal copy is
    serialised on its own and equal."""
    _, store = _change_store_after(tmp_path, 3)
    first = metadata_json(store.metadata)
    assert metadata_json(store.metadata) is first
    copy = store.metadata.model_copy()
    again = metadata_json(copy)
    assert again is not first
    assert again == first == store.metadata.model_dump_json(exclude_none=True)


def test_a_full_fragment_cache_drops_old_entries_and_still_serialises_exactly(tmp_path: Path) -> None:
    table, store = _change_store_after(tmp_path, 6)
    cache = FragmentCache(capacity=8)  # fewer than the history's entries
    for _ in range(3):
        assert metadata_json(store.metadata, cache) == store.metadata.model_dump_json(exclude_none=True)
        assert len(cache) <= 8
    _write(table, range(6, 8))
    store.refresh()
    assert metadata_json(store.metadata, cache) == store.metadata.model_dump_json(exclude_none=True)
    assert len(cache) <= 8


def test_property_named_like_a_history_field_still_serialises_exactly(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])
    store = table.change_store
    assert store is not None
    with store.transaction() as txn:
        txn.set_properties({'"snapshots":[]': '"snapshot-log":[]'})
    _write(table, range(2))
    store.refresh()
    assert metadata_json(store.metadata) == store.metadata.model_dump_json(exclude_none=True)
    assert isinstance(store.catalog, SqlCatalogWithCache)
    assert store.catalog.load_table(store.name()).properties['"snapshots":[]'] == '"snapshot-log":[]'


def test_base_store_statistics_are_spliced_exactly(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])
    rows = changes([("+I", i, "a", i, float(i)) for i in range(5)]).drop_columns(["_change_action"])
    table.bulk_load(rows)
    table.bulk_load(rows, overwrite=True)
    base = table.base_store
    base.refresh()
    assert len(base.metadata.statistics) >= 1  # the optimized sequence, as Amoro writes it
    cache = FragmentCache()
    assert metadata_json(base.metadata, cache) == base.metadata.model_dump_json(exclude_none=True)
    assert Path(base.metadata_location.removeprefix("file://")).read_text() == base.metadata.model_dump_json(exclude_none=True)


def test_create_table_transaction_takes_pyiceberg_path(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])  # creates the namespace
    iceberg = catalog.iceberg
    assert isinstance(iceberg, SqlCatalogWithCache)
    with iceberg.create_table_transaction("db.plain", ORDERS_SCHEMA) as txn:
        txn.set_properties({"k": "v"})
    created = iceberg.load_table("db.plain")
    assert created.properties["k"] == "v"
    folder = Path(created.metadata_location.removeprefix("file://")).parent
    assert [p.name for p in folder.glob("*.metadata.json")] == [Path(created.metadata_location).name]
