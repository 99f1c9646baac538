"""Small files read one by one give exactly what the dataset scan gives.

Change files and fresh fragments (a few thousand rows each) are read with one
``ParquetFile.read`` per file, not a pyarrow dataset scan (cheaper per file); the optimizer
and the merged reader rely on the same rows, order, types and per-file index either way,
nulls included for a column a file was written without.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.types import LongType

from mixed_iceberg import MixedTable
from mixed_iceberg.reader.change_files import read_change_files
from mixed_iceberg.reader.small_files import SMALL_FILE_ROWS, SMALL_READ_ROWS, are_small, read_small_files
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog


def test_per_file_reads_match_the_dataset_scan_with_missing_columns_and_casts(tmp_path: Path) -> None:
    old = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "cat": ["a", "b", None]})
    new = pa.table({"cat": ["c"], "id": pa.array([4], pa.int64()), "score": pa.array([40], pa.int32())})
    pq.write_table(old, tmp_path / "old.parquet")
    pq.write_table(new, tmp_path / "new.parquet")
    target = pa.schema([pa.field("id", pa.int64()), pa.field("score", pa.int64()), pa.field("cat", pa.string())])
    paths = [str(tmp_path / "old.parquet"), str(tmp_path / "new.parquet")]

    rows, counts = read_small_files(pafs.LocalFileSystem(), paths, target)

    expected = ds.dataset(paths, schema=target, format="parquet").to_table(columns=target.names)
    assert rows.schema == target
    assert rows.equals(expected)
    assert rows.column("score").to_pylist() == [None, None, None, 40]
    assert counts.tolist() == [3, 1]


def test_no_file_gives_an_empty_table_of_the_target_schema() -> None:
    target = pa.schema([pa.field("id", pa.int64())])
    rows, counts = read_small_files(pafs.LocalFileSystem(), [], target)
    assert rows.schema == target
    assert rows.num_rows == 0
    assert counts.tolist() == []


def test_files_count_as_small_by_their_mean_and_total_row_counts() -> None:
    assert are_small([SMALL_FILE_ROWS, SMALL_FILE_ROWS])
    assert are_small([1, 2 * SMALL_FILE_ROWS - 1])
    assert not are_small([SMALL_FILE_ROWS + 1])
    many = SMALL_READ_ROWS // 1000
    assert are_small([1000] * many)
    assert not are_small([1000] * (many + 1))  # many small files: the dataset's threads read them faster
    assert not are_small([])


def test_change_files_read_the_same_either_way_across_a_schema_change(tmp_path: Path) -> None:
    table: MixedTable = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])
    with table.new_transaction() as txn:
        txn.write(changes([("+I", i, "a", i, float(i)) for i in range(40)] + [("-D", 3, "a", 3, 3.0)]))
    with table.update_schema() as update:
        update.add_column("score", LongType())
    with table.new_transaction() as txn:
        data = changes([("+I", 100 + i, "b", i, 1.0) for i in range(5)])
        txn.write(data.append_column("score", pa.array(range(5), pa.int64())))
    store = table.change_store
    assert store is not None
    files = sorted((task.file for task in store.scan().plan_files()), key=lambda f: f.file_path)
    paths = [f.file_path for f in files]
    counts = [f.record_count for f in files]
    schema = table.schema()
    assert are_small(counts)

    for columns in (schema.column_names, ["id"]):
        fast, fast_index = read_change_files(store.io, schema, paths, columns, AlwaysTrue(), store.metadata.schemas, counts)
        scanned, scanned_index = read_change_files(store.io, schema, paths, columns, AlwaysTrue(), store.metadata.schemas)
        assert fast.equals(scanned)
        np.testing.assert_array_equal(fast_index, scanned_index)
    assert sorted(fast.column("id").to_pylist()) == sorted([*range(40), 3, *range(100, 105)])
