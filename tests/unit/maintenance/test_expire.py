"""Snapshot expiry: what stays (current, min-count, optimized sequence, newest per writer), what goes."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import SnapshotRef, SnapshotRefType
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.statistics import PartitionStatisticsFile
from pyiceberg.table.update import AssertTableUUID, SetPartitionStatisticsUpdate

from mixed_iceberg import TableFormat
from mixed_iceberg.basestore.optimized_sequence import read_optimized_sequence
from mixed_iceberg.optimizing.maintenance import TableMaintenance
from mixed_iceberg.optimizing.maintenance.expire import plan_expiry
from mixed_iceberg.optimizing.maintenance.reachability import References
from mixed_iceberg.store.commit import COMMIT_SEQUENCE, COMMIT_WRITER
from tests.support.tables import ORDERS_SCHEMA, local_catalog
from tests.unit.maintenance.support import (
    DAY,
    FakeClock,
    assert_replay_is_noop,
    base_rows,
    keyed_table,
    merged_rows,
    write_changes,
)

NOW = 10_000_000


def _metadata(tmp_path: Path, summaries: list[dict[str, str]], *, young: int = 0) -> TableMetadata:
    """A store whose chain holds one snapshot per summary (oldest first); the last ``young`` are new."""
    table = local_catalog(tmp_path).create_table("db.synthetic", ORDERS_SCHEMA, table_format=TableFormat.ICEBERG)
    snapshots = []
    for index, properties in enumerate(summaries):
        old = index < len(summaries) - young
        snapshots.append(
            Snapshot(
                snapshot_id=index + 1,
                parent_snapshot_id=index or None,
                sequence_number=index + 1,
                timestamp_ms=NOW - 1000 + index if old else NOW + index,
                manifest_list=f"/nowhere/snap-{index + 1}.avro",
                summary=Summary(Operation.APPEND, **properties),
            )
        )
    head = len(summaries)
    return table.base_store.metadata.model_copy(
        update={
            "snapshots": snapshots,
            "current_snapshot_id": head,
            "refs": {"main": SnapshotRef.model_validate({"snapshot-id": head, "type": SnapshotRefType.BRANCH})},
        }
    )


def _writer(name: str, sequence: int) -> dict[str, str]:
    return {COMMIT_WRITER: name, COMMIT_SEQUENCE: str(sequence)}


def test_current_snapshot_always_stays_even_when_everything_is_old(tmp_path: Path) -> None:
    plan = plan_expiry(_metadata(tmp_path, [{}] * 6), expire_before_ms=NOW, min_count=1)
    assert plan.keep == (6,)
    assert plan.expire == (1, 2, 3, 4, 5)


@pytest.mark.parametrize(("min_count", "kept"), [(1, (6,)), (3, (4, 5, 6)), (10, (1, 2, 3, 4, 5, 6))])
def test_min_count_newest_snapshots_stay(tmp_path: Path, min_count: int, kept: tuple[int, ...]) -> None:
    assert plan_expiry(_metadata(tmp_path, [{}] * 6), expire_before_ms=NOW, min_count=min_count).keep == kept


def test_snapshots_inside_the_keep_window_stay_with_the_one_current_when_it_began(tmp_path: Path) -> None:
    # 4 was current when the window began: a read as of any moment of the window needs it
    assert plan_expiry(_metadata(tmp_path, [{}] * 6, young=2), expire_before_ms=NOW, min_count=1).keep == (4, 5, 6)


def test_latest_optimized_sequence_snapshot_and_its_descendants_stay(tmp_path: Path) -> None:
    flag = {"optimized-sequence.exist": "true"}
    plan = plan_expiry(_metadata(tmp_path, [flag, {}, flag, {}, {}, {}]), expire_before_ms=NOW, min_count=1)
    assert plan.keep == (3, 4, 5, 6)  # the older flagged snapshot 1 is superseded by 3


def test_newest_snapshot_of_every_writer_stays_with_the_chain_to_it(tmp_path: Path) -> None:
    summaries = [_writer("a", 1), _writer("a", 2), _writer("b", 1), {}, _writer("b", 2), {}]
    plan = plan_expiry(_metadata(tmp_path, summaries), expire_before_ms=NOW, min_count=1)
    # a's newest is 2: the walk from the current snapshot must still reach it
    assert plan.keep == (2, 3, 4, 5, 6)
    assert plan.expire == (1,)


def test_tagged_and_branch_heads_stay(tmp_path: Path) -> None:
    metadata = _metadata(tmp_path, [{}] * 5)
    refs = {**metadata.refs, "audit": SnapshotRef.model_validate({"snapshot-id": 2, "type": SnapshotRefType.TAG})}
    plan = plan_expiry(metadata.model_copy(update={"refs": refs}), expire_before_ms=NOW, min_count=1)
    assert plan.keep == (2, 5)


def test_keyed_table_expiry_keeps_reads_and_replays_and_deletes_only_unreferenced_files(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=6)
    write_changes(table, range(6, 8), writer="other")
    before = merged_rows(table)
    clock = FakeClock(DAY)
    result = TableMaintenance(table.refreshed, clock=clock).expire_snapshots()
    assert table.change_store is not None
    change = table.change_store
    # writer "ingest" last committed 2 snapshots ago: the chain back to it stays
    assert [s.summary.get(COMMIT_WRITER) for s in change.metadata.snapshots if s.summary] == ["ingest", "other", "other"]
    assert len(table.base_store.metadata.snapshots) == 1
    assert result.snapshots_expired == 5
    assert result.snapshots_kept == 4
    assert result.files_deleted == 5  # manifest lists of the five expired snapshots; manifests stay shared
    assert merged_rows(table) == before
    assert_replay_is_noop(table)
    assert_replay_is_noop(table, "other")
    for store in (table.base_store, change):
        for location, _ in References().store(store).values():
            assert os.path.exists(location.removeprefix("file://")), f"{location} is referenced but was deleted"


def test_young_snapshots_are_not_expired_by_default(tmp_path: Path) -> None:
    table = keyed_table(tmp_path)
    result = TableMaintenance(table.refreshed).expire_snapshots()
    assert (result.snapshots_expired, result.files_deleted) == (0, 0)


def test_keep_min_count_property_is_honoured(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=0, properties={"snapshot.keep.min-count": "3"})
    for _ in range(5):
        table.bulk_load(base_rows(3), overwrite=True)  # a load into a table with rows goes to the ChangeStore
    TableMaintenance(table.refreshed, clock=FakeClock(DAY)).expire_snapshots()
    assert len(table.base_store.metadata.snapshots) == 3


def test_optimized_sequence_snapshot_survives_so_merge_on_read_still_hides_merged_changes(tmp_path: Path) -> None:
    table = keyed_table(tmp_path)
    table.bulk_load(table.scan().to_arrow(), overwrite=True)  # flagged: advances the optimized sequence
    flagged = table.base_store.current_snapshot()
    assert flagged is not None
    for key in range(5000, 5004):  # later base snapshots without the flag (another engine's appends of new keys)
        table.base_store.append(base_rows(1).set_column(0, "id", pa.array([key], pa.int64())).cast(ORDERS_SCHEMA))
    before = merged_rows(table)
    sequence = read_optimized_sequence(table.base_store, table.base_store.current_snapshot())
    TableMaintenance(table.refreshed, clock=FakeClock(DAY)).expire_snapshots()
    base = table.base_store
    assert base.metadata.snapshot_by_id(flagged.snapshot_id) is not None
    assert base.metadata.snapshots[0].snapshot_id == flagged.snapshot_id
    assert read_optimized_sequence(base, base.current_snapshot()) == sequence
    assert [s.snapshot_id for s in base.metadata.statistics] == [flagged.snapshot_id]
    assert merged_rows(table) == before


def test_files_removed_from_the_table_are_deleted_once_their_last_snapshot_expires(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=0)
    old_files = [f.removeprefix("file://") for f in table.base_store.inspect.files().column("file_path").to_pylist()]
    table.bulk_load(base_rows(10), overwrite=True)
    before = merged_rows(table)
    result = TableMaintenance(table.refreshed, clock=FakeClock(DAY)).expire_snapshots()
    assert result.files_deleted >= len(old_files)
    assert not any(os.path.exists(path) for path in old_files)
    assert merged_rows(table) == before


def test_delete_files_false_only_edits_metadata(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=0)
    old_files = [f.removeprefix("file://") for f in table.base_store.inspect.files().column("file_path").to_pylist()]
    table.bulk_load(base_rows(10), overwrite=True)
    result = TableMaintenance(table.refreshed, clock=FakeClock(DAY)).expire_snapshots(delete_files=False)
    assert result.snapshots_expired == 1
    assert result.files_deleted == 0
    assert all(os.path.exists(path) for path in old_files)


def test_partition_statistics_of_expired_snapshots_are_dropped(tmp_path: Path) -> None:
    table = keyed_table(tmp_path, commits=0, partitioned=False)
    base = table.base_store
    first = base.current_snapshot()
    assert first is not None
    stats = PartitionStatisticsFile(
        snapshot_id=first.snapshot_id, statistics_path=f"{base.location()}/x.parquet", file_size_in_bytes=1
    )
    base.catalog.commit_table(
        base, (AssertTableUUID(uuid=base.metadata.table_uuid),), (SetPartitionStatisticsUpdate(partition_statistics=stats),)
    )
    table.bulk_load(base_rows(3), overwrite=True)
    TableMaintenance(table.refreshed, clock=FakeClock(DAY)).expire_snapshots()
    assert base.metadata.snapshot_by_id(first.snapshot_id) is None
    assert base.metadata.partition_statistics == []


@pytest.mark.parametrize("table_format", [TableFormat.MIXED_ICEBERG, TableFormat.ICEBERG], ids=["unkeyed", "iceberg"])
def test_unkeyed_and_plain_iceberg_tables_expire_their_one_store(tmp_path: Path, table_format: TableFormat) -> None:
    table = local_catalog(tmp_path).create_table("db.log", ORDERS_SCHEMA, table_format=table_format)
    for start in range(0, 40, 10):
        table.base_store.append(base_rows(40).cast(ORDERS_SCHEMA).slice(start, 10))
    before = merged_rows(table)
    result = TableMaintenance(table.refreshed, clock=FakeClock(DAY)).expire_snapshots()
    assert (result.snapshots_expired, result.snapshots_kept) == (3, 1)
    assert merged_rows(table) == before
