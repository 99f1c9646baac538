"""Manifest rewriting: a REPLACE snapshot with fewer manifests, the same live files, the same rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import ManifestContent, ManifestFile
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation

from mixed_iceberg import MixedTable
from mixed_iceberg.optimizing.maintenance import TableMaintenance
from mixed_iceberg.optimizing.maintenance.manifests import pack_manifests
from mixed_iceberg.store.manifests.live_files import live_files
from tests.support.duckdb_iceberg import read_iceberg
from tests.support.tables import ORDERS_SCHEMA, local_catalog, rows_of
from tests.unit.maintenance.support import (
    FakeClock,
    assert_replay_is_noop,
    keyed_table,
    merged_rows,
    write_changes,
)


def _stores(table: MixedTable) -> list[Table]:
    assert table.change_store is not None
    return [table.base_store, table.change_store]


def _manifest_count(store: Table) -> int:
    snapshot = store.refresh().current_snapshot()
    return 0 if snapshot is None else len(snapshot.manifests(store.io))


def _live(store: Table) -> list[tuple[str, int, int]]:
    return sorted((f.data_file.file_path, f.sequence_number, f.snapshot_id) for f in live_files(store, store.current_snapshot()))


def _readers(store: Table) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    store.refresh()
    ours = rows_of(store.scan().to_arrow().select(ORDERS_SCHEMA.names))
    duck = rows_of(read_iceberg(store.metadata_location).select(ORDERS_SCHEMA.names))
    return ours, duck


def test_rewrite_merges_manifests_and_every_reader_sees_the_same_rows(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=8)
    for start in range(1000, 1006, 2):  # three more BaseStore snapshots (another engine's appends of new keys)
        rows = table.scan().to_arrow().slice(0, 2)
        table.base_store.append(rows.set_column(0, "id", pa.array([start, start + 1], pa.int64())).cast(ORDERS_SCHEMA))
    before_rows = merged_rows(table)
    before = {id(s): (_manifest_count(s), _live(s), _readers(s), s.current_snapshot().summary) for s in _stores(table)}  # type: ignore[union-attr]
    result = TableMaintenance(table.refreshed).rewrite_manifests()
    assert result.commits == 2
    assert result.manifests_before == 8 + 4
    assert result.manifests_after == 2
    for store in _stores(table):
        count, live, (ours, duck), summary = before[id(store)]
        assert _manifest_count(store) == 1 < count
        assert _live(store) == live  # same files, same data sequence numbers and adding snapshots
        assert _readers(store) == (ours, duck)
        assert ours == duck
        current = store.current_snapshot()
        assert current is not None
        assert current.summary is not None
        assert current.summary.operation == Operation.REPLACE
        for key in ("total-data-files", "total-records", "total-files-size"):
            assert current.summary[key] == summary[key]  # type: ignore[index]
    assert merged_rows(table) == before_rows
    assert_replay_is_noop(table)


def test_nothing_to_merge_writes_no_snapshot(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=1)
    snapshots = [len(s.metadata.snapshots) for s in _stores(table)]
    result = TableMaintenance(table.refreshed).rewrite_manifests()
    assert (result.commits, result.manifests_written) == (0, 0)
    assert [len(s.refresh().metadata.snapshots) for s in _stores(table)] == snapshots


def test_target_size_bounds_merged_manifests(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=6, partitioned=False)
    change = table.change_store
    assert change is not None
    current = change.current_snapshot()
    assert current is not None
    size = max(m.manifest_length for m in current.manifests(change.io))
    change.transaction().set_properties({"commit.manifest.target-size-bytes": str(2 * size)}).commit_transaction()
    table.base_store.transaction().set_properties({"commit.manifest.target-size-bytes": str(2 * size)}).commit_transaction()
    before = merged_rows(table)
    TableMaintenance(table.refreshed).rewrite_manifests()
    assert 2 <= _manifest_count(change) <= 4
    assert merged_rows(table) == before


def test_entries_of_deleted_files_are_dropped(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=3)
    table.bulk_load(table.scan().to_arrow(), overwrite=True)
    maintenance = TableMaintenance(table.refreshed, clock=FakeClock(8 * 86400))
    maintenance.expire_change_data()  # an overwrite: manifests now carry DELETED entries
    change = table.refresh().change_store
    assert change is not None
    assert any((m.deleted_files_count or 0) > 0 for m in change.current_snapshot().manifests(change.io))  # type: ignore[union-attr]
    before = merged_rows(table)
    maintenance.rewrite_manifests()
    manifests = change.refresh().current_snapshot().manifests(change.io)  # type: ignore[union-attr]
    assert all((m.deleted_files_count or 0) == 0 for m in manifests)
    assert merged_rows(table) == before


def test_run_rewrites_only_past_the_min_count(tmp_path: Path) -> None:
    # Appends merge manifests themselves at the same count: off here, so they pile up for run().
    properties = {"commit.manifest.min-count-to-merge": "5", "commit.manifest-merge.enabled": "false"}
    table = keyed_table(tmp_path, commits=4, properties=properties)
    assert TableMaintenance(table.refreshed).run().manifests.commits == 0  # type: ignore[union-attr]
    write_changes(table, range(4, 6))
    assert TableMaintenance(table.refreshed).run().manifests.commits == 1  # type: ignore[union-attr]


def test_a_commit_racing_the_rewrite_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = keyed_table(tmp_path, commits=4)
    other = local_catalog(tmp_path).load_table("db.orders")
    real_commit = SqlCatalog.commit_table
    calls = {"n": 0}

    def racing(self: SqlCatalog, *args: object) -> object:
        calls["n"] += 1
        if calls["n"] == 1:  # the rewrite's first attempt: another writer lands just before it
            write_changes(other, range(100, 101), writer="racer")
        return real_commit(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(SqlCatalog, "commit_table", racing)
    change = table.change_store
    assert change is not None
    before = _manifest_count(change)
    TableMaintenance(table.refreshed).rewrite_manifests()
    monkeypatch.undo()
    assert calls["n"] >= 3  # the racer, the failed attempt, the retry
    assert _manifest_count(change) == 1 < before
    assert merged_rows(table) == merged_rows(other.refresh())
    assert 1100 in {row[0] for row in merged_rows(table)}
    assert_replay_is_noop(table, "racer")


def _manifest(content: ManifestContent, spec_id: int, length: int, name: str) -> ManifestFile:
    return ManifestFile.from_args(
        manifest_path=f"/m/{name}.avro",
        manifest_length=length,
        partition_spec_id=spec_id,
        content=content,
        added_snapshot_id=1,
    )


def test_packing_never_mixes_data_and_delete_manifests_or_specs() -> None:
    data, deletes = ManifestContent.DATA, ManifestContent.DELETES
    manifests = [
        _manifest(data, 0, 10, "d1"),
        _manifest(deletes, 0, 10, "x1"),
        _manifest(data, 0, 10, "d2"),
        _manifest(data, 1, 10, "s1"),
        _manifest(deletes, 0, 10, "x2"),
        _manifest(data, 0, 95, "big"),
        _manifest(data, 0, 10, "d3"),
    ]
    bins = [[m.manifest_path.split("/")[-1].removesuffix(".avro") for m in group] for group in pack_manifests(manifests, 100)]
    assert bins == [["d1", "d2"], ["big"], ["d3"], ["x1", "x2"], ["s1"]]


def test_position_delete_manifests_from_optimizing_are_merged_apart_from_data_manifests(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=3, properties={"self-optimizing.target-size": "1024"})
    table.optimizing.run("minor")
    write_changes(table, range(3, 6))
    table.optimizing.run("minor")
    base = table.base_store
    kinds = [m.content for m in base.refresh().current_snapshot().manifests(base.io)]  # type: ignore[union-attr]
    assert kinds.count(ManifestContent.DELETES) >= 2, "expected delete manifests from two minor runs"
    before_rows = merged_rows(table)
    before_live = _live(base)
    ours, duck = _readers(base)
    assert ours == duck
    maintenance = TableMaintenance(table.refreshed, clock=FakeClock(8 * 86400))
    maintenance.rewrite_manifests()
    manifests = base.refresh().current_snapshot().manifests(base.io)  # type: ignore[union-attr]
    assert sorted(m.content for m in manifests) == [ManifestContent.DATA, ManifestContent.DELETES]
    assert _live(base) == before_live
    assert _readers(base) == (ours, duck)
    assert merged_rows(table) == before_rows
    maintenance.run()
    maintenance.clean_orphan_files()
    assert merged_rows(table) == before_rows
    assert _readers(base) == (ours, duck)
    assert_replay_is_noop(table)
