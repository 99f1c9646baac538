"""Orphan cleaning: only unreferenced files older than the safety window go, over both stores."""

from __future__ import annotations

import os
import shutil
import time
from datetime import timedelta
from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import DATA_FILE_TYPE, DataFile

from mixed_iceberg import MixedTable, TableFormat
from mixed_iceberg.exceptions import CommitStateUnknownError
from mixed_iceberg.optimizing.maintenance import TableMaintenance
from mixed_iceberg.optimizing.maintenance.reachability import References
from mixed_iceberg.store.commit import commit_files
from mixed_iceberg.store.manifests.live_files import live_files
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog
from tests.unit.maintenance.support import (
    FakeClock,
    assert_replay_is_noop,
    base_rows,
    keyed_table,
    merged_rows,
)

HOUR = 3600.0


def _files(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file() and "catalog.db" not in p.name}


def _referenced(table: MixedTable) -> set[str]:
    stores = [table.base_store] if table.change_store is None else [table.base_store, table.change_store]
    return {key for store in stores for key in References().store(store.refresh())}


def _failed_commit(table: MixedTable, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ChangeStore commit whose catalog call fails with an unknown outcome: its files stay behind."""

    def lost(*_: object) -> object:
        raise ConnectionResetError("catalog connection reset")

    txn = table.new_transaction(("ingest", 99))
    txn.write(changes([("+I", 5000, "a", 1, 1.0), ("+I", 5001, "b", 1, 1.0)]))
    monkeypatch.setattr(SqlCatalog, "commit_table", lost)
    with pytest.raises(CommitStateUnknownError, match="outcome unknown"):
        txn.commit()
    monkeypatch.undo()


def _move_base_file_into_change_folder(table: MixedTable) -> str:
    """Replace one base file by a copy under the ChangeStore's data folder (Amoro #1105)."""
    assert table.change_store is not None
    base = table.base_store
    original = live_files(base, base.current_snapshot())[0].data_file
    target = f"{table.change_store.location().removeprefix('file://')}/data/moved-{Path(original.file_path).name}"
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(original.file_path.removeprefix("file://"), target)
    args = {field.name: getattr(original, field.name) for field in DATA_FILE_TYPE[2].fields}
    moved = DataFile.from_args(**{**args, "file_path": f"file://{target}"})
    moved.spec_id = original.spec_id
    commit_files(base, added=[moved], deleted=[original])
    return target


def test_files_of_a_commit_that_did_not_land_are_removed_and_everything_referenced_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = keyed_table(tmp_path, commits=3)
    table.bulk_load(base_rows(12), overwrite=True)  # old base files stay referenced by the previous snapshot
    moved = _move_base_file_into_change_folder(table)
    existing = _files(tmp_path)
    _failed_commit(table, monkeypatch)
    leftovers = _files(tmp_path) - existing
    assert any(p.endswith(".parquet") for p in leftovers)
    assert any(p.endswith(".avro") for p in leftovers)  # its manifest and manifest list
    leftover_bytes = sum(os.path.getsize(p) for p in leftovers)
    young = tmp_path / "wh" / "db" / "orders" / "data" / "young-orphan.parquet"
    young.write_bytes(b"in flight")
    clock = FakeClock(2 * HOUR)
    os.utime(young, (clock() - 60, clock() - 60))
    before = merged_rows(table)

    result = TableMaintenance(table.refreshed, clock=clock).clean_orphan_files(older_than=timedelta(hours=1))

    assert result.files_deleted == len(leftovers)
    assert result.bytes_deleted == leftover_bytes
    assert not any(os.path.exists(p) for p in leftovers)
    assert young.exists()
    assert result.young_orphans_kept == 1
    assert os.path.exists(moved)
    assert _files(tmp_path) == existing | {str(young)}
    assert _referenced(table) <= _files(tmp_path)
    assert merged_rows(table) == before
    assert_replay_is_noop(table)


def test_safety_window_defaults_to_the_table_property(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = keyed_table(tmp_path, commits=1)
    _failed_commit(table, monkeypatch)
    files = _files(tmp_path)
    kept = TableMaintenance(table.refreshed, clock=FakeClock(47 * HOUR)).clean_orphan_files()  # window 2880 min = 48 h
    assert (kept.files_deleted, kept.young_orphans_kept) == (0, kept.orphans_found)
    assert kept.orphans_found > 0
    assert _files(tmp_path) == files
    gone = TableMaintenance(table.refreshed, clock=FakeClock(49 * HOUR)).clean_orphan_files()
    assert gone.files_deleted == kept.orphans_found


def test_dry_run_counts_without_deleting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = keyed_table(tmp_path, commits=1)
    _failed_commit(table, monkeypatch)
    files = _files(tmp_path)
    result = TableMaintenance(table.refreshed, clock=FakeClock(HOUR)).clean_orphan_files(timedelta(0), dry_run=True)
    assert result.orphans_found > 0
    assert result.files_deleted == 0
    assert _files(tmp_path) == files


def test_a_clean_table_has_no_orphans_and_every_file_is_referenced(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=4)
    table.bulk_load(table.scan().to_arrow(), overwrite=True)
    result = TableMaintenance(table.refreshed, clock=FakeClock(HOUR)).clean_orphan_files(timedelta(0))
    assert result.orphans_found == 0
    assert result.files_listed == result.files_referenced == len(_files(tmp_path))


def test_negative_window_is_rejected(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=0)
    with pytest.raises(ValueError, match="older_than expected a duration >= 0"):
        TableMaintenance(table.refreshed).clean_orphan_files(timedelta(minutes=-1))


@pytest.mark.parametrize("table_format", [TableFormat.MIXED_ICEBERG, TableFormat.ICEBERG], ids=["unkeyed", "iceberg"])
def test_unkeyed_and_plain_iceberg_tables_are_cleaned(tmp_path: Path, table_format: TableFormat) -> None:
    table = local_catalog(tmp_path).create_table("db.log", ORDERS_SCHEMA, table_format=table_format)
    table.base_store.append(base_rows(10).cast(ORDERS_SCHEMA))
    stray = Path(table.base_store.location().removeprefix("file://")) / "data" / "stray.parquet"
    stray.write_bytes(b"x" * 10)
    before = merged_rows(table)
    result = TableMaintenance(table.refreshed, clock=lambda: time.time() + HOUR).clean_orphan_files(timedelta(minutes=30))
    assert (result.files_deleted, result.bytes_deleted) == (1, 10)
    assert not stray.exists()
    assert merged_rows(table) == before
