"""Delete files: writing position deletes, committing them with stage_rewrite, reading equality deletes.

Tables live in a real SQLite catalog under tmp_path. Equality-delete files are written here the
way another engine (Flink) would, since the library only reads them.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import ValidationException
from pyiceberg.expressions import AlwaysTrue, BooleanExpression, EqualTo, GreaterThanOrEqual
from pyiceberg.io.fileformat import FileFormatFactory
from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestContent, ManifestEntryStatus
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import FileScanTask, Table
from pyiceberg.table.delete_file_index import DeleteFileIndex
from pyiceberg.table.snapshots import Operation
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField, StringType

from mixed_iceberg.exceptions import CorruptTableError
from mixed_iceberg.reader.data_files import deleted_positions, read_data_files, read_positional
from mixed_iceberg.store.datafiles import write_data_file
from mixed_iceberg.store.delete_files import (
    FILE_PATH_FIELD_ID,
    POS_FIELD_ID,
    POSITION_DELETE_SCHEMA,
    referenced_data_file,
    stage_rewrite,
    write_position_deletes,
)
from mixed_iceberg.store.entries import LiveFile, live_files, plan_scan_tasks
from mixed_iceberg.store.equality_deletes import anti_join_null_safe, plan_equality_scan, scan_with_equality_deletes

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "k", StringType(), required=False),
    NestedField(3, "p", StringType(), required=False),
    NestedField(4, "v", LongType(), required=False),
)
Row = tuple[int | None, str | None, str, int]


# --- helpers: a table whose spec 0 is unpartitioned and, if partitioned, spec 1 is identity(p) ---


def _table(tmp_path: Path, *, partitioned: bool = False, format_version: int = 2) -> Table:
    tmp_path.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace_if_not_exists("db")
    table = catalog.create_table(f"db.t{uuid.uuid4().hex[:8]}", SCHEMA, properties={"format-version": str(format_version)})
    if partitioned:
        with table.update_spec() as update:
            update.add_identity("p")
    return table


def _data_file(table: Table, rows: list[Row]) -> DataFile:
    """One data file of the default spec; all rows must share the partition value ``p``."""
    spec = table.spec()
    partition = Record(rows[0][2]) if spec.fields else Record()
    arrow = pa.Table.from_pylist(
        [dict(zip(("id", "k", "p", "v"), r, strict=True)) for r in rows], schema=schema_to_pyarrow(SCHEMA)
    )
    path = f"{table.location()}/data/d-{uuid.uuid4().hex}.parquet"
    data_file = write_data_file(
        table.io, path, arrow, SCHEMA, spec_id=spec.spec_id, partition=partition, properties=table.properties
    )
    data_file.spec_id = spec.spec_id
    return data_file


def _eq_deletes(table: Table, keys: list[tuple[Any, ...]], ids: tuple[int, ...] = (1,), partition: str | None = None) -> DataFile:
    """An equality-delete file as Flink writes it: the key columns only. No partition = global."""
    key_schema = Schema(*(SCHEMA.find_field(i) for i in ids))
    names = [f.name for f in key_schema.fields]
    arrow = pa.Table.from_pylist([dict(zip(names, k, strict=True)) for k in keys], schema=schema_to_pyarrow(key_schema))
    path = f"{table.location()}/data/eq-{uuid.uuid4().hex}.parquet"
    output = table.io.new_output(path)
    writer = FileFormatFactory.get(FileFormat.PARQUET).create_writer(output, key_schema, table.properties)
    with writer:
        writer.write(arrow)
    data_file = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=Record(partition) if partition is not None else Record(),
        file_size_in_bytes=len(output),
        equality_ids=list(ids),
        sort_order_id=None,
        key_metadata=None,
        **writer.result().to_serialized_dict(),
    )
    data_file.spec_id = table.spec().spec_id if partition is not None else 0
    return data_file


def _pos_deletes(table: Table, targets: list[tuple[DataFile, int]]) -> DataFile:
    first = targets[0][0]
    return write_position_deletes(
        table.io,
        f"{table.location()}/data/pos-{uuid.uuid4().hex}.parquet",
        pa.array([f.file_path for f, _ in targets]),
        pa.array([pos for _, pos in targets]),
        spec_id=first.spec_id,
        partition=first.partition,
        properties=table.properties,
    )


def _commit(table: Table, **files: Any) -> int:
    with table.transaction() as txn:
        return stage_rewrite(txn, **files)


def _rows(arrow: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in arrow.to_pylist()), key=repr)


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


def test_position_delete_file_is_sorted_deduplicated_and_typed_per_spec(tmp_path: Path) -> None:
    table = _table(tmp_path)
    long_a, long_b = f"{table.location()}/data/{'a' * 40}.parquet", f"{table.location()}/data/{'b' * 40}.parquet"
    paths, positions = [long_b, long_a, long_b, long_a, long_a], [2, 9, 0, 9, 1]
    f = write_position_deletes(
        table.io, f"{table.location()}/data/pos.parquet", pa.array(paths), pa.array(positions, pa.int32()),
        spec_id=0, partition=Record(), properties=table.properties,
    )  # fmt: skip
    parquet = pq.read_table(f.file_path.removeprefix("file://"))
    assert parquet.to_pylist() == [
        {"file_path": long_a, "pos": 1},
        {"file_path": long_a, "pos": 9},
        {"file_path": long_b, "pos": 0},
        {"file_path": long_b, "pos": 2},
    ]
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
    table = _table(tmp_path)
    target, other = _data_file(table, ROWS_A), _data_file(table, ROWS_A)
    deletes = _pos_deletes(table, [(target, 1), (target, 3)])
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
    table = _table(tmp_path)
    with pytest.raises(ValueError, match=message):
        write_position_deletes(
            table.io, f"{table.location()}/data/x.parquet", pa.array(paths, pa.string()), pa.array(positions, pa.int64()),
            spec_id=0, partition=Record(), properties=table.properties,
        )  # fmt: skip


# --- stage_rewrite ---


def test_adding_position_deletes_commits_a_delete_snapshot_with_a_delete_manifest(tmp_path: Path) -> None:
    table = _table(tmp_path)
    data = _data_file(table, ROWS_A)
    _commit(table, add_data=[data])
    deletes = _pos_deletes(table, [(data, 0), (data, 4)])
    snapshot_id = _commit(table, add_deletes=[deletes], snapshot_properties={"writer": "w1"})
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
    table = _table(tmp_path)
    a, b = _data_file(table, ROWS_A), _data_file(table, ROWS_A[:2])
    _commit(table, add_data=[a, b])
    deletes = _pos_deletes(table, [(a, 0)])
    _commit(table, add_deletes=[deletes])
    compacted = _data_file(table, ROWS_A[1:])
    _commit(table, add_data=[compacted], remove_data=[a], remove_deletes=[deletes])
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
    table = _table(tmp_path)
    old_data, extra = _data_file(table, ROWS_A), _data_file(table, ROWS_A)
    old_deletes = _pos_deletes(table, [(old_data, 1)])
    _commit(table, add_data=[old_data, extra])
    _commit(table, add_deletes=[old_deletes])
    candidates = {
        "add_data": [_data_file(table, ROWS_B)],
        "remove_data": [extra],
        "add_deletes": [_pos_deletes(table, [(old_data, 2)])],
        "remove_deletes": [old_deletes],
    }
    _commit(table, **{name: candidates[name] for name in files})
    assert _summary(table)["operation"] == expected


def test_replace_operation_is_recorded_with_correct_totals(tmp_path: Path) -> None:
    table = _table(tmp_path)
    a, b = _data_file(table, ROWS_A[:3]), _data_file(table, ROWS_A[3:])
    _commit(table, add_data=[a, b])
    _commit(table, add_data=[_data_file(table, ROWS_A)], remove_data=[a, b], operation=Operation.REPLACE)
    summary = _summary(table)
    assert (summary["operation"], summary["total-data-files"], summary["total-records"]) == ("replace", "1", "6")


def test_data_and_equality_deletes_in_one_commit_count_as_overwrite(tmp_path: Path) -> None:
    table = _table(tmp_path)
    _commit(table, add_data=[_data_file(table, ROWS_A)])
    _commit(table, add_data=[_data_file(table, [(1, "x", "a", 99)])], add_deletes=[_eq_deletes(table, [(1,), (2,)])])
    summary = _summary(table)
    assert (summary["operation"], summary["total-equality-deletes"], summary["total-delete-files"]) == ("overwrite", "2", "1")
    assert _rows(scan_with_equality_deletes(table, selected_fields=("id", "v"))) == [(0, 0), (1, 99), (3, 30), (4, 40), (5, 50)]


def test_removing_a_file_that_is_not_live_fails_and_leaves_no_manifest(tmp_path: Path) -> None:
    table = _table(tmp_path)
    a = _data_file(table, ROWS_A)
    _commit(table, add_data=[a])
    metadata_dir = Path(table.location().removeprefix("file://")) / "metadata"
    before = set(metadata_dir.iterdir())
    txn = table.transaction()
    with pytest.raises(ValidationException, match="expected the files to remove to be live"):
        stage_rewrite(txn, add_data=[_data_file(table, ROWS_B)], remove_data=[a, _data_file(table, ROWS_B)])
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
    table = _table(tmp_path)
    data = _data_file(table, ROWS_A)
    files = {"data": [data], "pos": [_pos_deletes(table, [(data, 0)])]}
    resolved: dict[str, Any] = {key: files[value] if isinstance(value, str) else value for key, value in kwargs.items()}
    with pytest.raises(ValueError, match=message):
        stage_rewrite(table.transaction(), **resolved)


def test_an_empty_rewrite_is_an_append_that_carries_the_summary(tmp_path: Path) -> None:
    table = _table(tmp_path)
    _commit(table, add_data=[_data_file(table, ROWS_A)])
    _commit(table, snapshot_properties={"checkpoint": "7"})
    summary = _summary(table)
    assert (summary["operation"], summary["checkpoint"], summary["total-data-files"], summary["total-records"]) == (
        "append",
        "7",
        "1",
        "6",
    )
    assert len(table.scan().to_arrow()) == 6


def test_delete_files_need_format_version_2(tmp_path: Path) -> None:
    table = _table(tmp_path, format_version=1)
    data = _data_file(table, ROWS_A)
    with pytest.raises(ValueError, match="format version 2, found 1"):
        stage_rewrite(table.transaction(), add_deletes=[_pos_deletes(table, [(data, 0)])])


def test_pyiceberg_appends_afterwards_keep_the_delete_manifests(tmp_path: Path) -> None:
    table = _table(tmp_path)
    a = _data_file(table, ROWS_A)
    _commit(table, add_data=[a])
    _commit(table, add_deletes=[_pos_deletes(table, [(a, 0), (a, 1)])])
    table.append(
        pa.Table.from_pylist([{"id": 7, "k": "x", "p": "a", "v": 70}], schema=schema_to_pyarrow(SCHEMA, include_field_ids=False))
    )
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [2, 3, 4, 5, 7]
    assert (_summary(table)["total-delete-files"], _summary(table)["total-position-deletes"]) == ("1", "2")


# --- retries: the staged snapshot is rebuilt on the new head, or refused when it no longer fits ---


def test_retry_after_a_concurrent_append_rebuilds_the_snapshot_on_the_new_head(tmp_path: Path) -> None:
    table = _table(tmp_path)
    a = _data_file(table, ROWS_A)
    _commit(table, add_data=[a])
    txn = table.transaction()
    stage_rewrite(txn, add_deletes=[_pos_deletes(table, [(a, 5)])], snapshot_properties={"writer": "late"})
    concurrent = table.catalog.load_table(table.name())
    _commit(concurrent, add_data=[_data_file(concurrent, ROWS_B)])
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
    _commit(table.catalog.load_table(table.name()), **theirs)
    txn.commit_transaction()


def test_retry_fails_when_the_removed_file_was_removed_concurrently(tmp_path: Path) -> None:
    table = _table(tmp_path)
    a = _data_file(table, ROWS_A)
    _commit(table, add_data=[a])
    with pytest.raises(ValidationException, match="to be live"):
        _racing(table, {"add_data": [_data_file(table, ROWS_A)], "remove_data": [a]}, {"remove_data": [a]})


def test_retry_fails_when_deletes_landed_on_a_partition_being_rewritten(tmp_path: Path) -> None:
    table = _table(tmp_path, partitioned=True)
    a = _data_file(table, ROWS_A)
    _commit(table, add_data=[a])
    with pytest.raises(ValidationException, match=r"added .*pos-"):
        _racing(
            table, {"add_data": [_data_file(table, ROWS_A)], "remove_data": [a]}, {"add_deletes": [_pos_deletes(table, [(a, 0)])]}
        )


def test_retry_fails_when_a_global_equality_delete_landed_during_a_rewrite(tmp_path: Path) -> None:
    table = _table(tmp_path, partitioned=True)
    a = _data_file(table, ROWS_A)
    _commit(table, add_data=[a])
    with pytest.raises(ValidationException, match=r"added .*eq-"):
        _racing(
            table, {"add_data": [_data_file(table, ROWS_A)], "remove_data": [a]}, {"add_deletes": [_eq_deletes(table, [(1,)])]}
        )


def test_retry_fails_when_data_under_new_position_deletes_was_rewritten(tmp_path: Path) -> None:
    table = _table(tmp_path, partitioned=True)
    a, b = _data_file(table, ROWS_A), _data_file(table, ROWS_A)
    _commit(table, add_data=[a, b])
    with pytest.raises(ValidationException, match=r"deleted .*/d-"):
        _racing(
            table, {"add_deletes": [_pos_deletes(table, [(a, 0)])]}, {"add_data": [_data_file(table, ROWS_A)], "remove_data": [b]}
        )


def test_retry_succeeds_when_the_concurrent_change_is_in_another_partition(tmp_path: Path) -> None:
    table = _table(tmp_path, partitioned=True)
    a, b = _data_file(table, ROWS_A), _data_file(table, ROWS_B)
    _commit(table, add_data=[a, b])
    _racing(
        table, {"add_data": [_data_file(table, ROWS_A[1:])], "remove_data": [a]}, {"add_deletes": [_pos_deletes(table, [(b, 0)])]}
    )
    assert _rows(table.scan(selected_fields=("id", "p")).to_arrow()) == sorted(
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
    table = _table(tmp_path, partitioned=True)
    a, b = _data_file(table, [*ROWS_A, (None, "x", "a", -1)]), _data_file(table, [*ROWS_B, (None, "x", "b", -1)])
    _commit(table, add_data=[a, b])
    _commit(table, add_deletes=[_eq_deletes(table, [(0,)]), _eq_deletes(table, [(1,), (None,)], partition="a")])
    before_reinsert = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    _commit(table, add_data=[_data_file(table, [(1, "x", "a", 111)])], add_deletes=[_pos_deletes(table, [(b, 5)])])
    return table, before_reinsert


def test_scan_applies_sequence_numbers_partition_scope_nulls_and_position_deletes(tmp_path: Path) -> None:
    table, _ = _scenario(tmp_path)
    assert _rows(scan_with_equality_deletes(table, selected_fields=("id", "p", "v"))) == sorted(
        [
            *[(1, "a", 111), (2, "a", 20), (3, "a", 30), (4, "a", 40), (5, "a", 50)],
            *[(1, "b", 10), (2, "b", 20), (3, "b", 30), (4, "b", 40), (None, "b", -1)],
        ],
        key=repr,
    )


def test_scan_honours_filter_projection_without_key_and_time_travel(tmp_path: Path) -> None:
    table, before_reinsert = _scenario(tmp_path)
    assert _rows(scan_with_equality_deletes(table, "p = 'a'", ("v",))) == [(111,), (20,), (30,), (40,), (50,)]
    assert _rows(scan_with_equality_deletes(table, "v >= 40", ("v",), snapshot_id=before_reinsert)) == [
        (40,),
        (40,),
        (50,),
        (50,),
    ]
    empty = scan_with_equality_deletes(_table(tmp_path / "empty"), selected_fields=("id",))
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


# --- reading: position deletes applied by the reader's mask, against pyiceberg's own reader ---


@pytest.mark.parametrize(
    ("row_filter", "columns"),
    [
        (AlwaysTrue(), ("id", "k", "p", "v")),
        (GreaterThanOrEqual("v", 13), ("id", "k", "p", "v")),
        (EqualTo("k", "b"), ("id", "v")),  # the filter names a column the caller does not project
    ],
)
def test_masked_read_equals_pyiceberg_with_deletes_applied(
    tmp_path: Path, row_filter: BooleanExpression, columns: tuple[str, ...]
) -> None:
    table = _table(tmp_path)
    first = _data_file(table, [(i, "ab"[i % 2], "x", 10 + i) for i in range(8)])
    second = _data_file(table, [(100 + i, "ab"[i % 2], "x", 20 + i) for i in range(5)])
    untouched = _data_file(table, [(200, "b", "x", 30)])
    _commit(table, add_data=[first, second, untouched])
    # one delete file spanning two data files, another for the first file again
    _commit(table, add_deletes=[_pos_deletes(table, [(first, 0), (first, 3), (second, 4)])])
    _commit(table, add_deletes=[_pos_deletes(table, [(first, 7), (first, 3)])])
    tasks = list(table.scan(row_filter=row_filter).plan_files())
    assert any(t.delete_files for t in tasks)
    projected = table.schema().select(*columns)
    ours = read_data_files(table, tasks, projected, row_filter)
    theirs = ArrowScan(table.metadata, table.io, projected, row_filter).to_table(tasks)
    assert ours.column_names == list(columns)
    assert _rows(ours) == _rows(theirs)
    assert ours.num_rows > 0


@pytest.mark.parametrize("row_filter", [AlwaysTrue(), GreaterThanOrEqual("value", 13), EqualTo("k", "b")])
def test_filtered_read_after_a_rename_maps_clean_and_masked_files_by_field_id(
    tmp_path: Path, row_filter: BooleanExpression
) -> None:
    table = _table(tmp_path)
    masked = _data_file(table, [(i, "ab"[i % 2], "x", 10 + i) for i in range(8)])
    clean = _data_file(table, [(100 + i, "ab"[i % 2], "x", 10 + i) for i in range(6)])
    _commit(table, add_data=[masked, clean])
    _commit(table, add_deletes=[_pos_deletes(table, [(masked, 1), (masked, 4)])])
    with table.update_schema() as update:
        update.rename_column("v", "value")  # the files still say "v"
    tasks = list(table.scan(row_filter=row_filter).plan_files())
    assert {bool(t.delete_files) for t in tasks} == {True, False}
    projected = table.schema().select("id", "value")
    ours = read_data_files(table, tasks, projected, row_filter)
    theirs = ArrowScan(table.metadata, table.io, projected, row_filter).to_table(tasks)
    assert ours.column_names == ["id", "value"]
    assert _rows(ours) == _rows(theirs)
    assert ours.num_rows > 0


def test_positional_read_counts_survivors_per_file_once_per_position(tmp_path: Path) -> None:
    table = _table(tmp_path)
    first = _data_file(table, [(i, "a", "x", i) for i in range(6)])
    second = _data_file(table, [(10 + i, "b", "x", i) for i in range(3)])
    _commit(table, add_data=[first, second])
    # position 3 of the first file is deleted by two files: it must be subtracted once
    _commit(table, add_deletes=[_pos_deletes(table, [(first, 3), (first, 5)])])
    _commit(table, add_deletes=[_pos_deletes(table, [(first, 3), (second, 0)])])
    tasks = sorted(table.scan().plan_files(), key=lambda t: t.file.record_count, reverse=True)
    rows, counts = read_positional(table, tasks, table.schema())
    assert counts.tolist() == [4, 2]
    assert rows.column("id").to_pylist() == [0, 1, 2, 4, 11, 12]


def test_positional_read_maps_columns_by_field_id_after_a_rename(tmp_path: Path) -> None:
    table = _table(tmp_path)
    data = _data_file(table, [(1, "a", "x", 10), (2, "b", "x", 20), (3, "c", "x", 30)])
    _commit(table, add_data=[data])
    _commit(table, add_deletes=[_pos_deletes(table, [(data, 1)])])
    with table.update_schema() as update:
        update.rename_column("v", "value")  # the file still says "v"; its field id says "value"
    rows, counts = read_positional(table, list(table.scan().plan_files()), table.schema())
    assert counts.tolist() == [2]
    assert rows.column("value").to_pylist() == [10, 30]


def test_deleted_positions_match_the_delete_files_rows_for_targeted_and_shared_files(tmp_path: Path) -> None:
    table = _table(tmp_path)
    first = _data_file(table, [(i, "a", "x", i) for i in range(6)])
    second = _data_file(table, [(10 + i, "b", "x", i) for i in range(3)])
    targeted = _pos_deletes(table, [(first, 1), (first, 4)])
    shared = _pos_deletes(table, [(first, 2), (second, 0), (second, 2)])
    assert referenced_data_file(targeted) == first.file_path  # read for positions only
    assert referenced_data_file(shared) is None  # read with its file_path column
    expected: dict[str, set[int]] = {}
    for delete in (targeted, shared):
        for row in pq.read_table(delete.file_path.removeprefix("file://")).to_pylist():
            expected.setdefault(row["file_path"], set()).add(row["pos"])
    found = deleted_positions(table, [shared, targeted])
    assert {path: set(positions.tolist()) for path, positions in found.items()} == expected


def test_deleted_positions_refuse_a_targeted_file_whose_row_count_disagrees(tmp_path: Path) -> None:
    table = _table(tmp_path)
    data = _data_file(table, [(i, "a", "x", i) for i in range(6)])
    delete = _pos_deletes(table, [(data, 1), (data, 4)])
    # the file is replaced underneath its manifest entry by one with a row fewer
    local = delete.file_path.removeprefix("file://")
    pq.write_table(pq.read_table(local).slice(0, 1), local)
    with pytest.raises(CorruptTableError, match="hold 1 rows; their manifests say 2"):
        deleted_positions(table, [delete])


def test_masked_read_refuses_files_whose_row_count_disagrees_with_the_manifest(tmp_path: Path) -> None:
    table = _table(tmp_path)
    data = _data_file(table, [(1, "a", "x", 1), (2, "b", "x", 2), (3, "a", "x", 3)])
    _commit(table, add_data=[data])
    # the file is replaced underneath the manifest by one with a row fewer
    arrow = pa.Table.from_pylist([{"id": 1, "k": "a", "p": "x", "v": 1}, {"id": 2, "k": "b", "p": "x", "v": 2}])
    write_data_file(table.io, data.file_path, arrow, SCHEMA, spec_id=0, partition=Record(), properties={})
    _commit(table, add_deletes=[_pos_deletes(table, [(data, 0)])])
    with pytest.raises(CorruptTableError, match="hold 2 rows; their manifests say 3"):
        read_data_files(table, list(table.scan().plan_files()), table.schema(), AlwaysTrue())


@pytest.mark.parametrize("row_filter", [AlwaysTrue(), GreaterThanOrEqual("v", 13), EqualTo("p", "y")])
def test_cached_planning_attaches_the_same_deletes_as_pyiceberg(tmp_path: Path, row_filter: BooleanExpression) -> None:
    table = _table(tmp_path, partitioned=True)
    x1 = _data_file(table, [(1, "a", "x", 10), (2, "b", "x", 11)])
    y1 = _data_file(table, [(3, "a", "y", 12), (4, "b", "y", 13)])
    _commit(table, add_data=[x1, y1])
    _commit(table, add_deletes=[_pos_deletes(table, [(x1, 0)]), _pos_deletes(table, [(y1, 1)])])
    x2 = _data_file(table, [(5, "c", "x", 14)])  # newer than the deletes: none of them applies
    _commit(table, add_data=[x2])
    _commit(table, add_deletes=[_pos_deletes(table, [(x1, 1), (x2, 0)])])

    def planned(tasks: list[FileScanTask]) -> dict[str, set[str]]:
        return {t.file.file_path: {d.file_path for d in t.delete_files} for t in tasks}

    ours = plan_scan_tasks(table, table.current_snapshot(), row_filter)
    theirs = list(table.scan(row_filter=row_filter).plan_files())
    assert planned(ours) == planned(theirs)
    assert any(t.delete_files for t in ours)
