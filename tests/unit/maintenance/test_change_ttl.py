"""Change-data TTL: only old change files already merged into base go (never unmerged ones, Amoro #967)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from pyiceberg.table import Transaction

from mixed_iceberg import MixedTable
from mixed_iceberg.basestore.optimized_sequence import read_optimized_sequence, stage_optimized_sequence, summary_flags
from mixed_iceberg.exceptions import NotKeyedTableError
from mixed_iceberg.optimizing.maintenance import TableMaintenance
from mixed_iceberg.optimizing.maintenance import change_ttl as change_ttl_module
from mixed_iceberg.store.commit import commit_files
from mixed_iceberg.store.manifests.live_files import live_files
from mixed_iceberg.store.write.layout import partition_path
from tests.support.tables import ORDERS_SCHEMA, local_catalog
from tests.unit.maintenance.support import DAY, FakeClock, assert_replay_is_noop, keyed_table, merged_rows, write_changes


def _change_files(table: MixedTable) -> list[tuple[str, int]]:
    change = table.refresh().change_store
    assert change is not None
    return [(f.data_file.file_path, f.sequence_number) for f in live_files(change, change.current_snapshot())]


def _merge_into_base(table: MixedTable) -> int:
    """Bulk overwrite with the merged rows: advances every partition's optimized sequence."""
    table.bulk_load(table.scan().to_arrow(), overwrite=True)
    return max(read_optimized_sequence(table.base_store, table.base_store.current_snapshot()).values())


def test_old_merged_change_files_are_deleted_and_unmerged_ones_kept(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=5)
    optimized = _merge_into_base(table)
    write_changes(table, range(5, 7))  # after the merge: unmerged, must survive any TTL
    files = _change_files(table)
    unmerged = [path for path, seq in files if seq > optimized]
    before = merged_rows(table)
    result = TableMaintenance(table.refreshed, clock=FakeClock(8 * DAY)).expire_change_data()
    remaining = _change_files(table)
    assert sorted(path for path, _ in remaining) == sorted(unmerged)
    assert result.files_deleted == len(files) - len(unmerged)
    assert result.unmerged_kept == len(unmerged)
    assert result.records_deleted == 20
    assert result.commits == 1
    assert result.bytes_deleted > 0
    assert merged_rows(table) == before
    assert_replay_is_noop(table)


def test_unmerged_change_files_are_never_deleted_however_old(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=4)
    files = _change_files(table)
    before = merged_rows(table)
    result = TableMaintenance(table.refreshed, clock=FakeClock(365 * DAY)).expire_change_data()
    assert (result.files_deleted, result.unmerged_kept, result.commits) == (0, len(files), 0)
    assert _change_files(table) == files
    assert merged_rows(table) == before


def test_merged_change_files_younger_than_the_ttl_stay(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=3)
    _merge_into_base(table)
    files = _change_files(table)
    result = TableMaintenance(table.refreshed, clock=FakeClock(6 * DAY)).expire_change_data()  # TTL is 7 days
    assert result.files_deleted == 0
    assert _change_files(table) == files


def test_ttl_property_sets_the_age(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=3, properties={"change.data.ttl.minutes": "60"})
    _merge_into_base(table)
    assert TableMaintenance(table.refreshed, clock=FakeClock(3600 + 60)).expire_change_data().files_deleted > 0


def test_only_partitions_whose_optimized_sequence_covers_the_file_lose_it(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=6)
    change = table.change_store
    assert change is not None
    current = change.current_snapshot()
    assert current is not None
    sequence = current.sequence_number or 0

    def stage(txn: Transaction, snapshot_id: int) -> None:
        stage_optimized_sequence(txn, snapshot_id, {"cat=a": sequence}, {"cat=a": 0})

    commit_files(table.base_store, added=[], summary=summary_flags(), stage=stage)
    before = merged_rows(table)
    result = TableMaintenance(table.refreshed, clock=FakeClock(8 * DAY)).expire_change_data()
    left = {partition_path(change, f.data_file) for f in live_files(change.refresh(), change.current_snapshot())}
    assert "cat=a" not in left
    assert left == {"cat=b", "cat=c"}
    assert result.unmerged_kept > 0
    assert merged_rows(table) == before


def test_deletion_commits_in_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(change_ttl_module, "BATCH_SIZE", 3)
    table = keyed_table(tmp_path, commits=4)
    _merge_into_base(table)
    count = len(_change_files(table))
    snapshots = len(table.change_store.metadata.snapshots)  # type: ignore[union-attr]
    result = TableMaintenance(table.refreshed, clock=FakeClock(8 * DAY)).expire_change_data()
    assert result.files_deleted == count
    assert result.commits == math.ceil(count / 3)
    assert len(table.refresh().change_store.metadata.snapshots) == snapshots + result.commits  # type: ignore[union-attr]
    assert _change_files(table) == []


def test_files_stay_on_storage_until_snapshot_expiry_drops_their_last_reference(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=3)
    _merge_into_base(table)
    paths = [path.removeprefix("file://") for path, _ in _change_files(table)]
    maintenance = TableMaintenance(table.refreshed, clock=FakeClock(8 * DAY))
    maintenance.expire_change_data()
    assert all(os.path.exists(p) for p in paths)  # older snapshots still reference them
    maintenance.expire_snapshots()
    # the writer's newest snapshot (kept for replays) still lists them until it writes again
    assert all(os.path.exists(p) for p in paths)
    write_changes(table, range(3, 4))
    maintenance.expire_snapshots()
    assert not any(os.path.exists(p) for p in paths)
    assert_replay_is_noop(table)


def test_unkeyed_tables_have_no_change_data(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.log", ORDERS_SCHEMA)
    with pytest.raises(NotKeyedTableError, match=r"db\.log: change-data TTL needs a keyed table"):
        TableMaintenance(table.refreshed).expire_change_data()
