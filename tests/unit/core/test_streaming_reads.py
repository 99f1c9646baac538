"""The scan's streaming and engine-facing API: ``to_arrow_batch_reader()``, ``limit``, ``count()``,
``to_pandas()``, ``to_polars()``, ``to_duckdb()`` and merge tasks run in other processes."""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

from mixed_iceberg import MixedTable, TableFormat
from mixed_iceberg.exceptions import InvalidScanError
from mixed_iceberg.reader.tasks import MergeTask, execute_task
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

ROWS = 2_000


def _keyed(tmp_path: Path, properties: dict[str, str] | None = None, partition_by: list[str] | None = None) -> MixedTable:
    """2000 keys bulk loaded into 4 base buckets, then updates and deletes in 8 change buckets."""
    table = local_catalog(tmp_path).create_table(
        "db.t",
        ORDERS_SCHEMA,
        primary_key=["id"],
        partition_by=partition_by,
        properties={"base.file-index.hash-bucket": "4", "change.file-index.hash-bucket": "8", **(properties or {})},
    )
    table.bulk_load(
        changes([("+I", i, "a" if i % 2 else "b", i % 50, 1.0) for i in range(ROWS)]).drop_columns(["_change_action"])
    )
    with table.new_transaction(("t", 1)) as txn:
        txn.write(
            changes(
                [("+U", i, "c", 99, 2.0) for i in range(0, ROWS, 10)] + [("-D", i, None, None, None) for i in range(5, ROWS, 10)]
            )
        )
    return table


def test_batch_reader_streams_one_tree_node_at_a_time_and_equals_to_arrow(tmp_path: Path) -> None:
    table = _keyed(tmp_path)
    scan = table.scan()
    groups = scan.file_groups()
    assert len(groups) == 4  # the base buckets' nodes; each holds its two change nodes
    assert all(len(g.change_paths) == 2 and g.base_paths for g in groups)
    reader = scan.to_arrow_batch_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema == table.arrow_schema()
    batches = list(reader)
    assert max(b.num_rows for b in batches) < ROWS // 2  # no batch holds the table
    assert rows_of(pa.Table.from_batches(batches)) == rows_of(scan.to_arrow())
    assert scan.count() == ROWS - ROWS // 10


@pytest.mark.parametrize(
    "properties",
    [{}, {"merge-engine": "partial-update"}, {"merge-engine": "aggregation", "fields.qty.aggregate-function": "sum"}],
    ids=["deduplicate", "partial-update", "aggregation"],
)
@pytest.mark.parametrize("partition_by", [None, ["cat"]], ids=["unpartitioned", "partitioned-by-moving-cat"])
def test_batch_reader_equals_to_arrow_under_every_merge_engine(
    tmp_path: Path, properties: dict[str, str], partition_by: list[str] | None
) -> None:
    table = _keyed(tmp_path, properties, partition_by)
    for scan in (table.scan(), table.scan(row_filter="qty > 40", selected_fields=("id", "qty"))):
        assert rows_of(scan.to_arrow_batch_reader().read_all()) == rows_of(scan.to_arrow())
        assert scan.count() == scan.to_arrow().num_rows


@pytest.mark.parametrize("table_format", [TableFormat.MIXED_ICEBERG, TableFormat.ICEBERG])
def test_unkeyed_tables_stream_file_by_file(tmp_path: Path, table_format: TableFormat) -> None:
    table = local_catalog(tmp_path).create_table("db.u", ORDERS_SCHEMA, table_format=table_format)
    for start in (0, 100, 200):
        table.base_store.append(
            changes([("+I", i, "a", i, 1.0) for i in range(start, start + 100)])
            .drop_columns(["_change_action"])
            .cast(table.arrow_schema())
        )
    scan = table.refresh().scan(row_filter="qty >= 50")
    assert len(scan.file_groups()) == 3
    assert rows_of(scan.to_arrow_batch_reader().read_all()) == rows_of(scan.to_arrow())
    assert scan.count() == 250


def test_limit_returns_that_many_merged_rows_and_stops_early(tmp_path: Path) -> None:
    table = _keyed(tmp_path)
    merged = set(rows_of(table.scan().to_arrow()))
    for limit in (0, 1, 700, 10_000):
        rows = table.scan(limit=limit).to_arrow()
        assert rows.num_rows == min(limit, len(merged))
        assert set(rows_of(rows)) <= merged  # latest rows only, never an older version
    assert table.scan(limit=5).count() == 5
    with pytest.raises(InvalidScanError, match="limit expected >= 0, found -1"):
        table.scan(limit=-1)


def test_time_travel_streams_the_old_state(tmp_path: Path) -> None:
    table = _keyed(tmp_path)
    first = table.change_store.current_snapshot()  # type: ignore[union-attr]
    assert first is not None
    with table.new_transaction(("t", 2)) as txn:
        txn.write(changes([("-D", i, None, None, None) for i in range(ROWS)]))
    assert table.scan().count() == 0
    old = table.scan(snapshot_id=first.snapshot_id)
    assert rows_of(old.to_arrow_batch_reader().read_all()) == rows_of(old.to_arrow())
    assert old.count() == ROWS - ROWS // 10


def test_to_pandas_polars_and_duckdb_hold_the_merged_rows(tmp_path: Path) -> None:
    import duckdb

    table = _keyed(tmp_path)
    scan = table.scan(row_filter="qty = 99", selected_fields=("id", "qty"))
    expected = rows_of(scan.to_arrow())
    frame = scan.to_pandas()
    assert sorted(zip(frame["id"], frame["qty"], strict=True)) == expected
    polars = pytest.importorskip("polars")
    assert isinstance(scan.to_polars(), polars.DataFrame)
    assert sorted(scan.to_polars().rows()) == expected
    connection = duckdb.connect()
    assert scan.to_duckdb("orders", connection=connection) is connection
    assert sorted(connection.execute("select id, qty from orders").fetchall()) == expected
    assert scan.to_duckdb("o2").execute("select count(*) from o2").fetchone() == (len(expected),)


def test_missing_optional_engine_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _keyed(tmp_path)
    monkeypatch.setitem(sys.modules, "polars", None)  # import polars raises ModuleNotFoundError
    with pytest.raises(ModuleNotFoundError, match=r"polars is not installed.*mixed-iceberg\[polars\]"):
        table.scan().to_polars()


def test_merge_tasks_run_in_other_processes_and_union_to_the_scan(tmp_path: Path) -> None:
    table = _keyed(tmp_path)
    scan = table.scan(row_filter="id < 1500 and qty > 10", selected_fields=("id", "cat", "qty"))
    tasks = scan.plan_tasks()
    assert len(tasks) == 4
    assert all(isinstance(t, MergeTask) for t in tasks)
    assert all(t.row_filter == "id < 1500 and qty > 10" and t.base_files and t.change_files for t in tasks)
    with table.new_transaction(("t", 2)) as txn:  # committed after planning: tasks do not see it
        txn.write(changes([("-D", i, None, None, None) for i in range(ROWS)]))
    with ProcessPoolExecutor(max_workers=2) as pool:
        parts = list(pool.map(execute_task, tasks))
    assert sum(p.num_rows for p in parts) == scan.to_arrow().num_rows
    assert rows_of(pa.concat_tables(parts)) == rows_of(scan.to_arrow())
