"""``clean-dangling-delete-files.enabled``: delete files that apply to no live data file go
(maintenance, and optimizing's drop of the equality deletes it made dangling), and stay when it
is false; reads are the same either way."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.manifest import DataFileContent

from mixed_iceberg.table import MixedTable
from mixed_iceberg.typedef import TableFormat
from tests.support.iceberg_files import Row, commit, data_file, eq_deletes, pos_deletes, sorted_rows
from tests.support.tables import local_catalog

#: The columns of tests.support.iceberg_files.SCHEMA, with the same field ids (1 to 4).
COLUMNS = pa.schema(
    [pa.field("id", pa.int64()), pa.field("k", pa.string()), pa.field("p", pa.string()), pa.field("v", pa.int64())]
)
ROWS: list[Row] = [(i, "x", "a", i * 10) for i in range(6)]


def _table(tmp_path: Path, enabled: str | None) -> MixedTable:
    properties = {} if enabled is None else {"clean-dangling-delete-files.enabled": enabled}
    return local_catalog(tmp_path).create_table("db.t", COLUMNS, table_format=TableFormat.ICEBERG, properties=properties)


def _delete_files(table: MixedTable) -> list[str]:
    files = table.refresh().base_store.inspect.files()
    content = files.column("content").to_pylist()
    return [
        path for path, kind in zip(files.column("file_path").to_pylist(), content, strict=True) if kind != DataFileContent.DATA
    ]


def _dangling_position_delete(table: MixedTable) -> str:
    """A position delete file of a data file that a rewrite then removed: it applies to nothing."""
    store = table.base_store
    first = data_file(store, ROWS)
    commit(store, add_data=[first])
    deletes = pos_deletes(store, [(first, 0)])
    commit(store, add_deletes=[deletes])
    commit(store, add_data=[data_file(store, ROWS[1:])], remove_data=[first])
    return deletes.file_path


@pytest.mark.parametrize("enabled", [None, "true"], ids=["default", "true"])
def test_maintenance_removes_position_deletes_whose_data_files_are_gone(tmp_path: Path, enabled: str | None) -> None:
    table = _table(tmp_path, enabled)
    dangling = _dangling_position_delete(table)
    before = sorted_rows(table.refresh().scan().to_arrow())
    assert _delete_files(table) == [dangling]
    result = table.maintenance.run()
    assert result.dangling_deletes is not None
    assert (result.dangling_deletes.files_deleted, result.dangling_deletes.commits) == (1, 1)
    assert _delete_files(table) == []
    assert sorted_rows(table.refresh().scan().to_arrow()) == before


def test_maintenance_keeps_dangling_deletes_when_disabled(tmp_path: Path) -> None:
    table = _table(tmp_path, "false")
    dangling = _dangling_position_delete(table)
    result = table.maintenance.run()
    assert result.dangling_deletes is None
    assert _delete_files(table) == [dangling]


def test_a_delete_file_that_still_applies_is_kept(tmp_path: Path) -> None:
    table = _table(tmp_path, None)
    store = table.base_store
    data = data_file(store, ROWS)
    commit(store, add_data=[data])
    live = pos_deletes(store, [(data, 0)])
    commit(store, add_deletes=[live, eq_deletes(store, [(3,)])])
    before = sorted_rows(table.refresh().scan().to_arrow())
    result = table.maintenance.clean_dangling_delete_files()
    assert (result.files_deleted, result.commits) == (0, 0)
    assert len(_delete_files(table)) == 2
    assert sorted_rows(table.refresh().scan().to_arrow()) == before


@pytest.mark.parametrize(("enabled", "kept"), [(None, 0), ("true", 0), ("false", 1)], ids=["default", "true", "false"])
def test_full_optimizing_drops_the_equality_deletes_it_made_dangling_only_when_enabled(
    tmp_path: Path, enabled: str | None, kept: int
) -> None:
    table = _table(tmp_path, enabled)
    store = table.base_store
    commit(store, add_data=[data_file(store, ROWS[:3])])
    commit(store, add_data=[data_file(store, ROWS[3:])])
    commit(store, add_deletes=[eq_deletes(store, [(1,), (4,)])])
    before = sorted_rows(table.refresh().scan().to_arrow())
    assert table.optimizing.run("full").committed
    assert len(_delete_files(table)) == kept
    assert sorted_rows(table.refresh().scan().to_arrow()) == before
