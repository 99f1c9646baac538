"""Delete files: writing position deletes, committing them with stage_rewrite, reading equality deletes.

Tables live in a real SQLite catalog under tmp_path. Equality-delete files are written here the
way another engine (Flink) would, since the library only reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.exceptions import ValidationException
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestContent, ManifestEntryStatus
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table import Table
from pyiceberg.table.delete_file_index import DeleteFileIndex
from pyiceberg.table.snapshots import Operation
from pyiceberg.typedef import Record

from mixed_iceberg.store.equality_deletes import anti_join_null_safe, plan_equality_scan, scan_with_equality_deletes
from mixed_iceberg.store.manifests.live_files import LiveFile, live_files
from mixed_iceberg.store.rewrite import stage_rewrite
from mixed_iceberg.store.write.position_deletes import (
    FILE_PATH_FIELD_ID,
    POS_FIELD_ID,
    POSITION_DELETE_SCHEMA,
    write_position_deletes,
    write_positions_by_file,
)
from tests.support.iceberg_files import SCHEMA, Row, commit, data_file, eq_deletes, new_table, pos_deletes, sorted_rows


def _summary(table: Table) -> dict[str, str]:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    assert snapshot.summary is not None
    return {"operation": snapshot.summary.operation.value, **snapshot.summary.additional_properties}


def _entries(table: Table) -> list[tuple[ManifestContent, ManifestEntryStatus, str, int | None]]:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return [
        (m.content, e.status, Path(e.data_file.file_path).name, e.sequence_number)
        for m in snapshot.manifests(table.io)
        for e in m.fetch_manifest_entry(table.io, discard_deleted=False)
    ]


ROWS_A: list[Row] = [(i, "x", "a", i * 10) for i in range(6)]
ROWS_B: list[Row] = [(i, "x", "b", i * 10) for i in range(6)]


# --- write_position_deletes ---


def _long_paths(table: Table) -> tuple[str, str]:
    """Two data-file paths longer than Iceberg's default truncate(16) string metrics."""
    return f"{table.location()}/data/{'a' * 40}.parquet", f"{table.location()}/data/{'b' * 40}.parquet"


def _rows_in_path_order(a: str, b: str) -> list[dict[str, object]]:
    """The rows both position-delete writers must produce for deletes of a:{1, 9} and b:{0, 2}."""
    return [{"file_path": a, "pos": 1}, {"file_path": a, "pos": 9}, {"file_path": b, "pos": 0}, {"file_path": b, "pos": 2}]


def test_position_delete_file_is_sorted_deduplicated_and_typed_per_spec(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    long_a, long_b = _long_paths(table)
    paths, positions = [long_b, long_a, long_b, long_a, long_a], [2, 9, 0, 9, 1]
    f = write_position_deletes(
        table.io, f"{table.location()}/data/pos.parquet", pa.array(paths), pa.array(positions, pa.int32()),
        spec_id=0, partition=Record(), properties=table.properties,
    )  # fmt: skip
    parquet = pq.read_table(f.file_path.removeprefix("file://"))
    assert parquet.to_pylist() == _rows_in_path_order(long_a, long_b)
    assert [(fld.name, fld.nullable, fld.metadata[b"PARQUET:field_id"]) for fld in parquet.schema] == [
        ("file_path", False, b"2147483546"),
        ("pos", False, b"2147483545"),
    ]
    columns = pq.ParquetFile(f.file_path.removeprefix("file://")).schema
    assert [(c.physical_type, c.logical_type.type, c.max_definition_level) for c in columns] == [
        ("BYTE_ARRAY", "STRING", 0),  # required string
        ("INT64", "NONE", 0),  # required long
    ]
    assert (f.content, f.record_count, f.spec_id, f.partition) == (DataFileContent.POSITION_DELETES, 4, 0, Record())
    assert f.file_size_in_bytes == Path(f.file_path.removeprefix("file://")).stat().st_size
    # Exact (untruncated) bounds, so readers can prune by data file.
    assert f.lower_bounds[FILE_PATH_FIELD_ID] == long_a.encode()
    assert f.upper_bounds[FILE_PATH_FIELD_ID] == long_b.encode()
    assert int.from_bytes(f.lower_bounds[POS_FIELD_ID], "little") == 0
    assert int.from_bytes(f.upper_bounds[POS_FIELD_ID], "little") == 9
    assert POSITION_DELETE_SCHEMA.find_field("pos").required


def test_delete_file_for_one_data_file_is_indexed_by_that_file_only(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    target, other = data_file(table, ROWS_A), data_file(table, ROWS_A)
    deletes = pos_deletes(table, [(target, 1), (target, 3)])
    index = DeleteFileIndex()
    index.add_delete_file(_entry(deletes, 5))
    assert index.for_data_file(1, target) == {deletes}
    assert index.for_data_file(1, other) == set()


def _entry(data_file: DataFile, sequence_number: int) -> Any:
    from pyiceberg.manifest import ManifestEntry

    return ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, sequence_number=sequence_number, data_file=data_file)


@pytest.mark.parametrize(
    ("paths", "positions", "message"),
    [
        (["f"], [1, 2], "as many positions"),
        ([], [], "at least one"),
        (["f", None], [1, 2], "no null"),
        (["f", "f"], [1, None], "no null"),
    ],
)
def test_bad_position_delete_input_is_refused(
    tmp_path: Path, paths: list[str | None], positions: list[int | None], message: str
) -> None:
    table = new_table(tmp_path)
    with pytest.raises(ValueError, match=message):
        write_position_deletes(
            table.io, f"{table.location()}/data/x.parquet", pa.array(paths, pa.string()), pa.array(positions, pa.int64()),
            spec_id=0, partition=Record(), properties=table.properties,
        )  # fmt: skip


def test_positions_grouped_by_data_file_are_written_in_path_order(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    long_a, long_b = _long_paths(table)
    by_target = {long_b: np.array([0, 2]), long_a: np.array([1, 9]), "unused": np.empty(0, np.int64)}
    f = write_positions_by_file(
        table.io, f"{table.location()}/data/pos.parquet", by_target, spec_id=0, partition=Record(), properties=table.properties
    )
    parquet = pq.read_table(f.file_path.removeprefix("file://"))
    assert parquet.to_pylist() == _rows_in_path_order(long_a, long_b)
    columns = pq.ParquetFile(f.file_path.removeprefix("file://")).schema  # the same layout as write_position_deletes'
    assert [(c.physical_type, c.logical_type.type, c.max_definition_level) for c in columns] == [
        ("BYTE_ARRAY", "STRING", 0),
        ("INT64", "NONE", 0),
    ]
    assert (f.record_count, f.lower_bounds[FILE_PATH_FIELD_ID], f.upper_bounds[FILE_PATH_FIELD_ID]) == (
        4,
        long_a.encode(),
        long_b.encode(),
    )


@pytest.mark.parametrize(
    ("by_target", "message"),
    [
        ({}, "at least one"),
        ({"f": np.empty(0, np.int64)}, "at least one"),
        ({"f": np.array([3, 1])}, "ascending distinct"),
        ({"f": np.array([1, 1])}, "ascending distinct"),
    ],
)
def test_grouped_positions_that_are_empty_unsorted_or_repeated_are_refused(
    tmp_path: Path, by_target: dict[str, Any], message: str
) -> None:
    table = new_table(tmp_path)
    with pytest.raises(ValueError, match=message):
        write_positions_by_file(
            table.io, f"{table.location()}/data/x.parquet", by_target, spec_id=0, partition=Record(), properties=table.properties
        )
    assert not list(tmp_path.rglob("x.parquet"))


# --- stage_rewrite ---


def test_adding_position_deletes_commits_a_delete_snapshot_with_a_delete_manifest(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    data = data_file(table, ROWS_A)
    commit(table, add_data=[data])
    deletes = pos_deletes(table, [(data, 0), (data, 4)])
    snapshot_id = commit(table, add_deletes=[deletes], snapshot_properties={"writer": "w1"})
    assert table.current_snapshot().snapshot_id == snapshot_id  # type: ignore[union-attr]
    summary = _summary(table)
    assert (summary["operation"], summary["writer"]) == ("delete", "w1")
    assert (summary["total-data-files"], summary["total-delete-files"], summary["total-records"]) == ("1", "1", "6")
    assert (summary["added-position-deletes"], summary["total-position-deletes"]) == ("2", "2")
    assert _entries(table) == [
        (ManifestContent.DELETES, ManifestEntryStatus.ADDED, Path(deletes.file_path).name, 2),
        (ManifestContent.DATA, ManifestEntryStatus.ADDED, Path(data.file_path).name, 1),
    ]
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 5]


def test_rewrite_marks_removed_data_and_dangling_deletes_deleted_and_keeps_the_rest(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    a, b = data_file(table, ROWS_A), data_file(table, ROWS_A[:2])
    commit(table, add_data=[a, b])
    deletes = pos_deletes(table, [(a, 0)])
    commit(table, add_deletes=[deletes])
    compacted = data_file(table, ROWS_A[1:])
    commit(table, add_data=[compacted], remove_data=[a], remove_deletes=[deletes])
    summary = _summary(table)
    assert summary["operation"] == "overwrite"
    assert (summary["total-data-files"], summary["total-delete-files"], summary["total-position-deletes"]) == ("2", "0", "0")
    assert (summary["deleted-data-files"], summary["removed-delete-files"], summary["total-records"]) == ("1", "1", "7")
    entries = {(name, status): (content, seq) for content, status, name, seq in _entries(table)}
    assert entries[(Path(a.file_path).name, ManifestEntryStatus.DELETED)] == (ManifestContent.DATA, 1)
    assert entries[(Path(b.file_path).name, ManifestEntryStatus.EXISTING)] == (ManifestContent.DATA, 1)
    assert entries[(Path(deletes.file_path).name, ManifestEntryStatus.DELETED)] == (ManifestContent.DELETES, 2)
    assert entries[(Path(compacted.file_path).name, ManifestEntryStatus.ADDED)] == (ManifestContent.DATA, 3)
    assert len(table.scan().to_arrow()) == 7


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"add_data"}, "append"),
        ({"add_deletes"}, "delete"),
        ({"remove_data"}, "delete"),
        ({"add_deletes", "remove_deletes"}, "delete"),
        ({"remove_deletes"}, "overwrite"),
        ({"add_data", "remove_data"}, "overwrite"),
        ({"add_data", "add_deletes"}, "overwrite"),
    ],
)
def test_operation_is_inferred_from_what_changes(tmp_path: Path, files: set[str], expected: str) -> None:
    table = new_table(tmp_path)
    old_data, extra = data_file(table, ROWS_A), data_file(table, ROWS_A)
    old_deletes = pos_deletes(table, [(old_data, 1)])
    commit(table, add_data=[old_data, extra])
    commit(table, add_deletes=[old_deletes])
    candidates = {
        "add_data": [data_file(table, ROWS_B)],
        "remove_data": [extra],
        "add_deletes": [pos_deletes(table, [(old_data, 2)])],
        "remove_deletes": [old_deletes],
    }
    commit(table, **{name: candidates[name] for name in files})
    assert _summary(table)["operation"] == expected


def test_replace_operation_is_recorded_with_correct_totals(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    a, b = data_file(table, ROWS_A[:3]), data_file(table, ROWS_A[3:])
    commit(table, add_data=[a, b])
    commit(table, add_data=[data_file(table, ROWS_A)], remove_data=[a, b], operation=Operation.REPLACE)
    summary = _summary(table)
    assert (summary["operation"], summary["total-data-files"], summary["total-records"]) == ("replace", "1", "6")


def test_data_and_equality_deletes_in_one_commit_count_as_overwrite(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    commit(table, add_data=[data_file(table, ROWS_A)])
    commit(table, add_data=[data_file(table, [(1, "x", "a", 99)])], add_deletes=[eq_deletes(table, [(1,), (2,)])])
    summary = _summary(table)
    assert (summary["operation"], summary["total-equality-deletes"], summary["total-delete-files"]) == ("overwrite", "2", "1")
    assert sorted_rows(scan_with_equality_deletes(table, selected_fields=("id", "v"))) == [
        (0, 0),
        (1, 99),
        (3, 30),
        (4, 40),
        (5, 50),
    ]


def test_removing_a_file_that_is_not_live_fails_and_leaves_no_manifest(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    a = data_file(table, ROWS_A)
    commit(table, add_data=[a])
    metadata_dir = Path(table.location().removeprefix("file://")) / "metadata"
    before = set(metadata_dir.iterdir())
    txn = table.transaction()
    with pytest.raises(ValidationException, match="expected the files to remove to be live"):
        stage_rewrite(txn, add_data=[data_file(table, ROWS_B)], remove_data=[a, data_file(table, ROWS_B)])
    assert set(metadata_dir.iterdir()) == before
    assert txn._snapshot_producers == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"add_data": "pos"}, "add_data: expected data files"),
        ({"add_deletes": "data"}, "add_deletes: expected delete files"),
        ({"remove_deletes": "data"}, "remove_deletes: expected delete files"),
        ({"add_data": "data", "remove_data": "data"}, "each file once"),
        ({"remove_data": "data", "operation": Operation.APPEND}, "operation append cannot"),
        ({"add_data": "data", "operation": Operation.DELETE}, "operation delete cannot"),
    ],
)
def test_inconsistent_requests_are_refused(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    table = new_table(tmp_path)
    data = data_file(table, ROWS_A)
    files = {"data": [data], "pos": [pos_deletes(table, [(data, 0)])]}
    resolved: dict[str, Any] = {key: files[value] if isinstance(value, str) else value for key, value in kwargs.items()}
    with pytest.raises(ValueError, match=message):
        stage_rewrite(table.transaction(), **resolved)


def test_an_empty_rewrite_is_an_append_that_carries_the_summary(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    commit(table, add_data=[data_file(table, ROWS_A)])
    commit(table, snapshot_properties={"checkpoint": "7"})
    summary = _summary(table)
    assert (summary["operation"], summary["checkpoint"], summary["total-data-files"], summary["total-records"]) == (
        "append",
        "7",
        "1",
        "6",
    )
    assert len(table.scan().to_arrow()) == 6


def test_delete_files_need_format_version_2(tmp_path: Path) -> None:
    table = new_table(tmp_path, format_version=1)
    data = data_file(table, ROWS_A)
    with pytest.raises(ValueError, match="format version 2, found 1"):
        stage_rewrite(table.transaction(), add_deletes=[pos_deletes(table, [(data, 0)])])


def test_pyiceberg_appends_afterwards_keep_the_delete_manifests(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    a = data_file(table, ROWS_A)
    commit(table, add_data=[a])
    commit(table, add_deletes=[pos_deletes(table, [(a, 0), (a, 1)])])
    table.append(
        pa.Table.from_pylist([{"id": 7, "k": "x", "p": "a", "v": 70}], schema=schema_to_pyarrow(SCHEMA, include_field_ids=False))
    )
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [2, 3, 4, 5, 7]
    assert (_summary(table)["total-delete-files"], _summary(table)["total-position-deletes"]) == ("1", "2")


# --- retries: the staged snapshot is rebuilt on the new head, or refused when it no longer fits ---


def test_retry_after_a_concurrent_append_rebuilds_the_snapshot_on_the_new_head(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    a = data_file(table, ROWS_A)
    commit(table, add_data=[a])
    txn = table.transaction()
    stage_rewrite(txn, add_deletes=[pos_deletes(table, [(a, 5)])], snapshot_properties={"writer": "late"})
    concurrent = table.catalog.load_table(table.name())
    commit(concurrent, add_data=[data_file(concurrent, ROWS_B)])
    txn.commit_transaction()  # CommitFailed on the first attempt, then rebuilt and committed
    snapshot = table.current_snapshot()
    assert snapshot is not None
    assert snapshot.parent_snapshot_id == concurrent.current_snapshot().snapshot_id  # type: ignore[union-attr]
    summary = _summary(table)
    assert (summary["writer"], summary["total-data-files"], summary["total-records"], summary["total-position-deletes"]) == (
        "late",
        "2",
        "12",
        "1",
    )
    assert len(table.scan().to_arrow()) == 11


def _racing(table: Table, mine: dict[str, Any], theirs: dict[str, Any]) -> None:
    txn = table.transaction()
    stage_rewrite(txn, **mine)
    commit(table.catalog.load_table(table.name()), **theirs)
    txn.commit_transaction()


def test_retry_fails_when_the_removed_file_was_removed_concurrently(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    a = data_file(table, ROWS_A)
    commit(table, add_data=[a])
    with pytest.raises(ValidationException, match="to be live"):
        _racing(table, {"add_data": [data_file(table, ROWS_A)], "remove_data": [a]}, {"remove_data": [a]})


def test_retry_fails_when_deletes_landed_on_a_partition_being_rewritten(tmp_path: Path) -> None:
    table = new_table(tmp_path, partitioned=True)
    a = data_file(table, ROWS_A)
    commit(table, add_data=[a])
    with pytest.raises(ValidationException, match=r"added .*pos-"):
        _racing(
            table, {"add_data": [data_file(table, ROWS_A)], "remove_data": [a]}, {"add_deletes": [pos_deletes(table, [(a, 0)])]}
        )


def test_retry_fails_when_a_global_equality_delete_landed_during_a_rewrite(tmp_path: Path) -> None:
    table = new_table(tmp_path, partitioned=True)
    a = data_file(table, ROWS_A)
    commit(table, add_data=[a])
    with pytest.raises(ValidationException, match=r"added .*eq-"):
        _racing(table, {"add_data": [data_file(table, ROWS_A)], "remove_data": [a]}, {"add_deletes": [eq_deletes(table, [(1,)])]})


def test_retry_fails_when_data_under_new_position_deletes_was_rewritten(tmp_path: Path) -> None:
    table = new_table(tmp_path, partitioned=True)
    a, b = data_file(table, ROWS_A), data_file(table, ROWS_A)
    commit(table, add_data=[a, b])
    with pytest.raises(ValidationException, match=r"deleted .*/d-"):
        _racing(
            table, {"add_deletes": [pos_deletes(table, [(a, 0)])]}, {"add_data": [data_file(table, ROWS_A)], "remove_data": [b]}
        )


def test_retry_succeeds_when_the_concurrent_change_is_in_another_partition(tmp_path: Path) -> None:
    table = new_table(tmp_path, partitioned=True)
    a, b = data_file(table, ROWS_A), data_file(table, ROWS_B)
    commit(table, add_data=[a, b])
    _racing(
        table, {"add_data": [data_file(table, ROWS_A[1:])], "remove_data": [a]}, {"add_deletes": [pos_deletes(table, [(b, 0)])]}
    )
    assert sorted_rows(table.scan(selected_fields=("id", "p")).to_arrow()) == sorted(
        [(i, "a") for i in range(1, 6)] + [(i, "b") for i in range(1, 6)], key=repr
    )


# --- equality deletes: planning, the null-safe anti-join, and scans ---


def _live(data_file: DataFile, seq: int) -> LiveFile:
    return LiveFile(data_file, seq, seq)


def _meta_file(content: DataFileContent, spec_id: int, partition: Record, name: str) -> DataFile:
    f = DataFile.from_args(
        content=content, file_path=name, file_format=FileFormat.PARQUET, partition=partition, record_count=1,
        file_size_in_bytes=1, equality_ids=[1] if content == DataFileContent.EQUALITY_DELETES else None,
    )  # fmt: skip
    f.spec_id = spec_id
    return f


def test_plan_applies_equality_deletes_to_strictly_older_data_in_the_same_partition_or_globally() -> None:
    specs = {0: PartitionSpec(spec_id=0), 1: _table_spec()}
    data = [
        _live(_meta_file(DataFileContent.DATA, 1, Record("a"), "a1"), 1),
        _live(_meta_file(DataFileContent.DATA, 1, Record("a"), "a3"), 3),
        _live(_meta_file(DataFileContent.DATA, 1, Record("a"), "a5"), 5),
        _live(_meta_file(DataFileContent.DATA, 1, Record("b"), "b1"), 1),
        _live(_meta_file(DataFileContent.DATA, 1, Record("b"), "b9"), 9),
    ]
    deletes = [
        _live(_meta_file(DataFileContent.EQUALITY_DELETES, 1, Record("a"), "eq-a3"), 3),
        _live(_meta_file(DataFileContent.EQUALITY_DELETES, 0, Record(), "eq-global2"), 2),
        _live(_meta_file(DataFileContent.POSITION_DELETES, 1, Record("a"), "pos-a3"), 3),
    ]
    plan = {
        tuple(t.file.file_path for t in g.tasks): (
            tuple(sorted(f.file_path for f in g.equality_deletes)),
            tuple(sorted(f.file_path for t in g.tasks for f in t.delete_files)),
        )
        for g in plan_equality_scan(specs, data, deletes)
    }
    assert plan == {
        ("a1",): (("eq-a3", "eq-global2"), ("pos-a3",)),
        # a3 has eq-a3's sequence number (not strictly older): with the newer files, no join.
        ("a3", "a5", "b9"): ((), ("pos-a3",)),
        ("b1",): (("eq-global2",), ()),
    }


def _table_spec() -> PartitionSpec:
    from pyiceberg.partitioning import PartitionField
    from pyiceberg.transforms import IdentityTransform

    return PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "p"), spec_id=1)


@pytest.mark.parametrize(
    ("rows", "deleted", "columns", "kept"),
    [
        ({"a": [1, None, 3]}, {"a": [None]}, ["a"], [0, 2]),
        ({"a": [1, None, 3]}, {"a": [3]}, ["a"], [0, 1]),
        ({"a": [1, 1, None, None], "b": ["x", None, "x", None]}, {"a": [1, None], "b": [None, "x"]}, ["a", "b"], [0, 3]),
        ({"a": pa.array([None, None], pa.int64())}, {"a": pa.array([None], pa.int64())}, ["a"], []),
        ({"a": [5, 4, 3, 2, 1]}, {"a": pa.array([], pa.int64())}, ["a"], [0, 1, 2, 3, 4]),
        ({"a": [5, 4, 3, 2, 1]}, {"a": pa.array([4, 2], pa.int32())}, ["a"], [0, 2, 4]),
    ],
)
def test_anti_join_treats_null_as_equal_to_null_and_keeps_row_order(
    rows: dict[str, Any], deleted: dict[str, Any], columns: list[str], kept: list[int]
) -> None:
    table = pa.table({**rows, "payload": pa.array([[i] for i in range(len(next(iter(rows.values()))))])})
    result = anti_join_null_safe(table, pa.table(deleted), columns)
    assert result.column("payload").to_pylist() == [[i] for i in kept]


def _scenario(tmp_path: Path) -> tuple[Table, int]:
    """Partition a and b; a global delete of id 0; in a: delete ids 1 and null, then re-insert 1."""
    table = new_table(tmp_path, partitioned=True)
    a, b = data_file(table, [*ROWS_A, (None, "x", "a", -1)]), data_file(table, [*ROWS_B, (None, "x", "b", -1)])
    commit(table, add_data=[a, b])
    commit(table, add_deletes=[eq_deletes(table, [(0,)]), eq_deletes(table, [(1,), (None,)], partition="a")])
    before_reinsert = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    commit(table, add_data=[data_file(table, [(1, "x", "a", 111)])], add_deletes=[pos_deletes(table, [(b, 5)])])
    return table, before_reinsert


def test_scan_applies_sequence_numbers_partition_scope_nulls_and_position_deletes(tmp_path: Path) -> None:
    table, _ = _scenario(tmp_path)
    assert sorted_rows(scan_with_equality_deletes(table, selected_fields=("id", "p", "v"))) == sorted(
        [
            *[(1, "a", 111), (2, "a", 20), (3, "a", 30), (4, "a", 40), (5, "a", 50)],
            *[(1, "b", 10), (2, "b", 20), (3, "b", 30), (4, "b", 40), (None, "b", -1)],
        ],
        key=repr,
    )


def test_scan_honours_filter_projection_without_key_and_time_travel(tmp_path: Path) -> None:
    table, before_reinsert = _scenario(tmp_path)
    assert sorted_rows(scan_with_equality_deletes(table, "p = 'a'", ("v",))) == [(111,), (20,), (30,), (40,), (50,)]
    assert sorted_rows(scan_with_equality_deletes(table, "v >= 40", ("v",), snapshot_id=before_reinsert)) == [
        (40,),
        (40,),
        (50,),
        (50,),
    ]
    empty = scan_with_equality_deletes(new_table(tmp_path / "empty"), selected_fields=("id",))
    assert (empty.num_rows, empty.column_names) == (0, ["id"])


def test_pyiceberg_itself_still_refuses_equality_deletes(tmp_path: Path) -> None:
    # If this starts failing, pyiceberg reads equality deletes and equality_deletes.py can go.
    table, _ = _scenario(tmp_path)
    with pytest.raises(ValueError, match="does not yet support equality deletes"):
        table.scan().to_arrow()


def test_live_files_carry_the_sequence_numbers_the_planner_needs(tmp_path: Path) -> None:
    table, _ = _scenario(tmp_path)
    seqs = sorted((f.data_file.content.name, f.sequence_number) for f in live_files(table, table.current_snapshot()))
    assert seqs == [
        ("DATA", 1),
        ("DATA", 1),
        ("DATA", 3),
        ("EQUALITY_DELETES", 2),
        ("EQUALITY_DELETES", 2),
        ("POSITION_DELETES", 3),
    ]


def test_live_files_above_a_sequence_skip_older_files_without_opening_their_manifests(tmp_path: Path) -> None:
    from mixed_iceberg.store.manifests import live_files as module

    table, _ = _scenario(tmp_path)
    snapshot = table.current_snapshot()
    assert snapshot is not None
    older = [m for m in snapshot.manifests(table.io) if (m.sequence_number or 0) <= 2]
    assert older  # the scenario's first two commits wrote manifests of their own
    module._CACHE.clear()
    module._FLAT.clear()
    for manifest in older:  # a manifest read now would fail
        Path(manifest.manifest_path.removeprefix("file://")).unlink()
    seqs = sorted((f.data_file.content.name, f.sequence_number) for f in live_files(table, snapshot, above_sequence=2))
    assert seqs == [("DATA", 3), ("POSITION_DELETES", 3)]
    assert [f.sequence_number for f in live_files(table, snapshot, "p = 'a'", above_sequence=2)] == [3]
