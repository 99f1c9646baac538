"""Reading data files with position deletes (reader/file_reads.py) against pyiceberg's own reader,
and delete-file planning from cached manifest entries (store/manifests/live_files.py)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import AlwaysTrue, BooleanExpression, EqualTo, GreaterThanOrEqual
from pyiceberg.io.pyarrow import ArrowScan
from pyiceberg.table import FileScanTask
from pyiceberg.typedef import Record

from mixed_iceberg.exceptions import CorruptTableError
from mixed_iceberg.reader.file_reads import deleted_positions, read_data_files, read_positional
from mixed_iceberg.store.manifests.scan_tasks import plan_scan_tasks
from mixed_iceberg.store.write.data_file import write_data_file
from mixed_iceberg.store.write.position_deletes import referenced_data_file
from tests.support.iceberg_files import SCHEMA, commit, data_file, new_table, pos_deletes, sorted_rows

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
    table = new_table(tmp_path)
    first = data_file(table, [(i, "ab"[i % 2], "x", 10 + i) for i in range(8)])
    second = data_file(table, [(100 + i, "ab"[i % 2], "x", 20 + i) for i in range(5)])
    untouched = data_file(table, [(200, "b", "x", 30)])
    commit(table, add_data=[first, second, untouched])
    # one delete file spanning two data files, another for the first file again
    commit(table, add_deletes=[pos_deletes(table, [(first, 0), (first, 3), (second, 4)])])
    commit(table, add_deletes=[pos_deletes(table, [(first, 7), (first, 3)])])
    tasks = list(table.scan(row_filter=row_filter).plan_files())
    assert any(t.delete_files for t in tasks)
    projected = table.schema().select(*columns)
    ours = read_data_files(table, tasks, projected, row_filter)
    theirs = ArrowScan(table.metadata, table.io, projected, row_filter).to_table(tasks)
    assert ours.column_names == list(columns)
    assert sorted_rows(ours) == sorted_rows(theirs)
    assert ours.num_rows > 0


@pytest.mark.parametrize("row_filter", [AlwaysTrue(), GreaterThanOrEqual("value", 13), EqualTo("k", "b")])
def test_filtered_read_after_a_rename_maps_clean_and_masked_files_by_field_id(
    tmp_path: Path, row_filter: BooleanExpression
) -> None:
    table = new_table(tmp_path)
    masked = data_file(table, [(i, "ab"[i % 2], "x", 10 + i) for i in range(8)])
    clean = data_file(table, [(100 + i, "ab"[i % 2], "x", 10 + i) for i in range(6)])
    commit(table, add_data=[masked, clean])
    commit(table, add_deletes=[pos_deletes(table, [(masked, 1), (masked, 4)])])
    with table.update_schema() as update:
        update.rename_column("v", "value")  # the files still say "v"
    tasks = list(table.scan(row_filter=row_filter).plan_files())
    assert {bool(t.delete_files) for t in tasks} == {True, False}
    projected = table.schema().select("id", "value")
    ours = read_data_files(table, tasks, projected, row_filter)
    theirs = ArrowScan(table.metadata, table.io, projected, row_filter).to_table(tasks)
    assert ours.column_names == ["id", "value"]
    assert sorted_rows(ours) == sorted_rows(theirs)
    assert ours.num_rows > 0


def test_positional_read_counts_survivors_per_file_once_per_position(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    first = data_file(table, [(i, "a", "x", i) for i in range(6)])
    second = data_file(table, [(10 + i, "b", "x", i) for i in range(3)])
    commit(table, add_data=[first, second])
    # position 3 of the first file is deleted by two files: it must be subtracted once
    commit(table, add_deletes=[pos_deletes(table, [(first, 3), (first, 5)])])
    commit(table, add_deletes=[pos_deletes(table, [(first, 3), (second, 0)])])
    tasks = sorted(table.scan().plan_files(), key=lambda t: t.file.record_count, reverse=True)
    rows, counts = read_positional(table, tasks, table.schema())
    assert counts.tolist() == [4, 2]
    assert rows.column("id").to_pylist() == [0, 1, 2, 4, 11, 12]


def test_positional_read_maps_columns_by_field_id_after_a_rename(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    data = data_file(table, [(1, "a", "x", 10), (2, "b", "x", 20), (3, "c", "x", 30)])
    commit(table, add_data=[data])
    commit(table, add_deletes=[pos_deletes(table, [(data, 1)])])
    with table.update_schema() as update:
        update.rename_column("v", "value")  # the file still says "v"; its field id says "value"
    rows, counts = read_positional(table, list(table.scan().plan_files()), table.schema())
    assert counts.tolist() == [2]
    assert rows.column("value").to_pylist() == [10, 30]


def test_deleted_positions_match_the_delete_files_rows_for_targeted_and_shared_files(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    first = data_file(table, [(i, "a", "x", i) for i in range(6)])
    second = data_file(table, [(10 + i, "b", "x", i) for i in range(3)])
    targeted = pos_deletes(table, [(first, 1), (first, 4)])
    shared = pos_deletes(table, [(first, 2), (second, 0), (second, 2)])
    assert referenced_data_file(targeted) == first.file_path  # read for positions only
    assert referenced_data_file(shared) is None  # read with its file_path column
    expected: dict[str, set[int]] = {}
    for delete in (targeted, shared):
        for row in pq.read_table(delete.file_path.removeprefix("file://")).to_pylist():
            expected.setdefault(row["file_path"], set()).add(row["pos"])
    found = deleted_positions(table, [shared, targeted])
    assert {path: set(positions.tolist()) for path, positions in found.items()} == expected


def test_deleted_positions_refuse_a_targeted_file_whose_row_count_disagrees(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    data = data_file(table, [(i, "a", "x", i) for i in range(6)])
    delete = pos_deletes(table, [(data, 1), (data, 4)])
    # the file is replaced underneath its manifest entry by one with a row fewer
    local = delete.file_path.removeprefix("file://")
    pq.write_table(pq.read_table(local).slice(0, 1), local)
    with pytest.raises(CorruptTableError, match="hold 1 rows; their manifests say 2"):
        deleted_positions(table, [delete])


def test_masked_read_refuses_files_whose_row_count_disagrees_with_the_manifest(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    data = data_file(table, [(1, "a", "x", 1), (2, "b", "x", 2), (3, "a", "x", 3)])
    commit(table, add_data=[data])
    # the file is replaced underneath the manifest by one with a row fewer
    arrow = pa.Table.from_pylist([{"id": 1, "k": "a", "p": "x", "v": 1}, {"id": 2, "k": "b", "p": "x", "v": 2}])
    write_data_file(table.io, data.file_path, arrow, SCHEMA, spec_id=0, partition=Record(), properties={})
    commit(table, add_deletes=[pos_deletes(table, [(data, 0)])])
    with pytest.raises(CorruptTableError, match="hold 2 rows; their manifests say 3"):
        read_data_files(table, list(table.scan().plan_files()), table.schema(), AlwaysTrue())


@pytest.mark.parametrize("row_filter", [AlwaysTrue(), GreaterThanOrEqual("v", 13), EqualTo("p", "y")])
def test_cached_planning_attaches_the_same_deletes_as_pyiceberg(tmp_path: Path, row_filter: BooleanExpression) -> None:
    table = new_table(tmp_path, partitioned=True)
    x1 = data_file(table, [(1, "a", "x", 10), (2, "b", "x", 11)])
    y1 = data_file(table, [(3, "a", "y", 12), (4, "b", "y", 13)])
    commit(table, add_data=[x1, y1])
    commit(table, add_deletes=[pos_deletes(table, [(x1, 0)]), pos_deletes(table, [(y1, 1)])])
    x2 = data_file(table, [(5, "c", "x", 14)])  # newer than the deletes: none of them applies
    commit(table, add_data=[x2])
    commit(table, add_deletes=[pos_deletes(table, [(x1, 1), (x2, 0)])])

    def planned(tasks: list[FileScanTask]) -> dict[str, set[str]]:
        return {t.file.file_path: {d.file_path for d in t.delete_files} for t in tasks}

    ours = plan_scan_tasks(table, table.current_snapshot(), row_filter)
    theirs = list(table.scan(row_filter=row_filter).plan_files())
    assert planned(ours) == planned(theirs)
    assert any(t.delete_files for t in ours)
